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

from privsim.kit import shamir
from privsim.kit.securesum.maths import complete_shares, encode_fixed
from privsim.kit.securesum.seeded import SEED_WORDS, seeded_shares
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
    (n, M, d): ``shares[i, k]`` is what client ``clients[i]`` gives node k to add (with
    seed-compressed shares, the expansion of the seed ``seeds[i, k − 1]`` for k ≥ 1)."""

    clients: npt.NDArray[np.int64]
    z: F64
    eta: F64
    shares: npt.NDArray[np.uint64]
    seeds: npt.NDArray[np.uint64] | None = None


class ShareSource(Protocol):
    """What a DCA client needs: its data, noise and shares, for a chunk of clients
    (:class:`ClientInputs`, or a protocol's own, e.g. RACE's sketch shares)."""

    def messages(self, clients: npt.ArrayLike) -> ClientMessages: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientInputs:
    """How every client computes its DCA messages (Algorithm 1, steps 1–2).

    ``share_mode``: ``full`` additive shares, ``seeded`` (M − 1 shares as seeds, see
    :mod:`~privsim.kit.securesum.seeded`) or ``shamir`` (``threshold``-of-M Shamir shares
    of the input as a residue mod p = 2^61 − 1, see :mod:`privsim.kit.shamir`)."""

    data: ClientData
    noise: KeyStream
    randomness: KeyStream
    noise_std: float
    fraction_bits: int
    n_nodes: int
    share_mode: str = "full"
    threshold: int = 0

    def messages(self, clients: npt.ArrayLike) -> ClientMessages:
        """η_i ~ N(0, σ²_client I), x_i = encode(z_i + η_i), and the M additive shares."""
        idx = np.atleast_1d(np.asarray(clients, dtype=np.int64))
        z, eta, x = self.encoded(idx)
        shares, seeds = self.split(idx, x)
        return ClientMessages(clients=idx, z=z, eta=eta, shares=shares, seeds=seeds)

    def node_sums(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """Σ over clients ``idx`` of each node's full additive share, (M, d), without
        making the shares: with R_k = Σ_i r_{i,k} and X = Σ_i x_i, node 0 gets X + R_1,
        node k gets R_{k+1}, node M − 1 gets −Σ_k R_k (:func:`complete_shares`'s
        messages summed; addition in Z_{2^64} is order-free, so the same words)."""
        _, _, x = self.encoded(idx)
        m, d = self.n_nodes, x.shape[1]
        sums = np.empty((m, d), dtype=np.uint64)
        if m == 1:
            np.sum(x, axis=0, dtype=np.uint64, out=sums[0])
            return sums
        r = np.empty((idx.size, (m - 1) * d), dtype=np.uint64)
        self.randomness.words_into(idx, 0, r)
        np.sum(r.reshape(idx.size, m - 1, d), axis=0, dtype=np.uint64, out=sums[: m - 1])
        np.sum(sums[: m - 1], axis=0, dtype=np.uint64, out=sums[m - 1])
        np.subtract(np.uint64(0), sums[m - 1], out=sums[m - 1])
        sums[0] += np.sum(x, axis=0, dtype=np.uint64)
        return sums

    def encoded(self, idx: npt.NDArray[np.int64]) -> tuple[F64, F64, npt.NDArray[np.uint64]]:
        """Clients ``idx``'s data z_i, noise η_i and the encoded input x_i to be shared."""
        z = self.data.rows(idx)
        eta = self.noise.normal(idx, self.data.dimension)
        eta *= self.noise_std
        x = encode_fixed(z + eta, self.fraction_bits)
        return z, eta, x

    def share_seeds(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """With seed-compressed shares, each client's M − 1 seeds, shape (n, M − 1, 4)."""
        m = self.n_nodes
        seeds = self.randomness.words(idx, 0, SEED_WORDS * (m - 1))
        return seeds.reshape(idx.size, m - 1, SEED_WORDS)

    def split(
        self, idx: npt.NDArray[np.int64], x: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64] | None]:
        """The M shares of each encoded input (rows of ``x``, clients ``idx``), from the
        clients' share randomness; with seeded shares also the seeds (n, M − 1, 4)."""
        m, d = self.n_nodes, x.shape[1]
        shares = np.empty((idx.size, m, d), dtype=np.uint64)
        if self.share_mode == "seeded":
            seeds = self.share_seeds(idx)
            seeded_shares(x, seeds, shares)
            return shares, seeds
        if self.share_mode == "shamir":
            # f_i(X) = x_i + Σ_{j=1}^{t−1} a_{i,j} X^j with a_{i,j} from the client's stream;
            # node k holds f_i(k + 1).
            t = self.threshold
            words = self.randomness.words(idx, 0, (t - 1) * d).reshape(idx.size, t - 1, d)
            coeffs = shamir.residues_from_words(words).transpose(1, 0, 2)
            secret = shamir.encode_signed(x.view(np.int64))
            shares[:] = shamir.evaluate(secret, coeffs, m).transpose(1, 0, 2)
            return shares, None
        self.randomness.words_into(idx, 0, shares.reshape(idx.size, m * d)[:, : (m - 1) * d])
        complete_shares(x, shares)
        return shares, None
