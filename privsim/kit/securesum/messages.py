"""DCA messages, one per step of Algorithm 1 and of the fault-tolerance agreement (§3.1.3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.sim.messages import Message, message

__all__ = ["DCA_KINDS", "DcaKinds", "NodeAbort", "NodeSum", "ReceivedSet", "SeedShare", "Share"]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Share(Message):
    """Client i -> compute node k: one additive share m_{i,k} in Z_{2^64}^d (step 2)."""

    values: npt.NDArray[np.uint64]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class SeedShare(Message):
    """Client i -> compute node k ≥ 1 with seed-compressed shares: the 32-byte seed s_{i,k}
    from which the node expands its share m_{i,k} = G(s_{i,k}) ∈ Z_{2^64}^d."""

    seed: bytes


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class ReceivedSet(Message):
    """Compute node -> every other node: the clients whose share it received (bit-packed)."""

    clients: npt.NDArray[np.uint8]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSum(Message):
    """Compute node k -> aggregator: q_k = Σ_{i ∈ agreed} m_{i,k}, with the agreed set (step 3)."""

    values: npt.NDArray[np.uint64]
    included: npt.NDArray[np.uint8]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class NodeAbort(Message):
    """Compute node -> aggregator: the node will not release a sum, and why."""

    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class DcaKinds:
    """The message classes one DCA round uses. A protocol that runs several secure sums
    in one world gives each round its own sibling subclasses, so a late message of one
    round can never be taken by the next (receives match by class)."""

    def state_key(self, what: str) -> str:
        """Key of a client's declared private state (``"input"``, ``"noise"``) this round."""
        return f"{self.name}.{what}" if self.name else what

    share: type[Share] = Share
    #: Prefix of the private state a colluding client declares in this round ("" for none).
    name: str = ""
    received_set: type[ReceivedSet] = ReceivedSet
    node_sum: type[NodeSum] = NodeSum
    node_abort: type[NodeAbort] = NodeAbort
    seed_share: type[SeedShare] = SeedShare


#: The single-round message set.
DCA_KINDS = DcaKinds()
