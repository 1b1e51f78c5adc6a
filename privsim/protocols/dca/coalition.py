"""What a coalition learns: analyses of the pooled view (:class:`CoalitionView`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum.maths import decode_fixed, reconstruct
from privsim.kit.securesum.messages import Share
from privsim.sim.coalition import CoalitionView

__all__ = ["reconstructed_dca_inputs"]


def reconstructed_dca_inputs(
    view: CoalitionView, nodes: Sequence[str], fraction_bits: int
) -> dict[str, npt.NDArray[np.float64]]:
    """Clients whose DCA shares the coalition holds for *every* compute node, with the
    value z_i + η_i it reconstructs by adding them. With fewer than all M shares of a
    client the coalition holds uniformly random vectors and recovers nothing."""
    shares: dict[str, dict[str, npt.NDArray[np.uint64]]] = defaultdict(dict)
    for seen in view.messages_of(Share):
        if seen.dst in nodes:
            assert isinstance(seen.message, Share)
            shares[seen.src][seen.dst] = seen.message.values
    out = {}
    for client, by_node in shares.items():
        if len(by_node) == len(nodes):
            out[client] = decode_fixed(reconstruct(np.stack(list(by_node.values()))), fraction_bits)
    return out
