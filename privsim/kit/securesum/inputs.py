"""The clients' private material in DCA, computable for any subset of clients.

Client i's vector z_i, its noise η_i and its share randomness r_{i,k} all come from
client i's position in named counter-based streams, so the per-message path (one client
at a time) and the batched path (thousands at once, in chunks) compute the very same
values, and no population-sized array is ever held.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum.maths import complete_shares, encode_fixed
from privsim.sim.keystream import KeyStream

__all__ = ["ClientData", "ClientInputs", "ClientMessages", "ShareSource"]

F64 = npt.NDArray[np.float64]


class ClientData(Protocol):
    """Rows of client data on demand (e.g. :class:`~privsim.data.synthetic.SyntheticVectors`)."""

    n: int
    dimension: int

    def rows(self, clients: npt.ArrayLike) -> F64: ...

    def sum(self, mask: npt.NDArray[np.bool_] | None = None) -> F64: ...


@dataclass(frozen=True, slots=True)
class ClientMessages:
    """For a chunk of clients: data ``z`` (n, d), noise ``eta`` (n, d), and ``shares``
    (n, M, d): ``shares[i, k]`` is the message of client ``clients[i]`` to node k."""

    clients: npt.NDArray[np.int64]
    z: F64
    eta: F64
    shares: npt.NDArray[np.uint64]


class ShareSource(Protocol):
    """What a DCA client needs: its data, noise and shares, for a chunk of clients
    (:class:`ClientInputs`, or a protocol's own, e.g. RACE's sketch shares)."""

    def messages(self, clients: npt.ArrayLike) -> ClientMessages: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientInputs:
    """How every client computes its DCA messages (Algorithm 1, steps 1–2)."""

    data: ClientData
    noise: KeyStream
    randomness: KeyStream
    noise_std: float
    fraction_bits: int
    n_nodes: int

    def messages(self, clients: npt.ArrayLike) -> ClientMessages:
        """η_i ~ N(0, σ²_client I), x_i = encode(z_i + η_i), and the M additive shares."""
        idx = np.atleast_1d(np.asarray(clients, dtype=np.int64))
        d = self.data.dimension
        z = self.data.rows(idx)
        eta = self.noise.normal(idx, d)
        eta *= self.noise_std
        x = encode_fixed(z + eta, self.fraction_bits)
        m = self.n_nodes
        shares = np.empty((idx.size, m, d), dtype=np.uint64)
        self.randomness.words_into(idx, 0, shares.reshape(idx.size, m * d)[:, : (m - 1) * d])
        complete_shares(x, shares)
        return ClientMessages(clients=idx, z=z, eta=eta, shares=shares)
