"""Synthetic client data for the embedded scenarios (no download needed).

Client i's vector is computed from its own position in the counter-based stream
``("data", "synthetic")``, so any subset of clients can be generated on demand, in any
chunking, with identical values — large populations are never materialised.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from privsim.sim.keystream import KeyStream

__all__ = ["SyntheticVectors", "clip_l2"]

F64 = npt.NDArray[np.float64]
#: Clients per chunk when summing: fixed, so every sum is computed in the same order.
SUM_CHUNK_ELEMENTS = 1 << 20


def clip_l2(x: F64, bound: float, *, in_place: bool = False) -> F64:
    """Scale each row of ``x`` down to L2 norm at most ``bound`` (rows inside are unchanged);
    ``in_place`` scales ``x`` itself."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    factor = np.minimum(1.0, bound / np.maximum(norms, np.finfo(np.float64).tiny))
    if in_place:
        x *= factor
        return x
    return np.asarray(x * factor)


class SyntheticVectors:
    """N clients' d-dimensional vectors: ``mean + scale * noise`` per coordinate (noise
    standard normal, or uniform on [-sqrt(3), sqrt(3)] — same variance — for cheap
    generation at scale), clipped by each client to L2 norm ``clip_norm``."""

    def __init__(
        self,
        n: int,
        dimension: int,
        *,
        mean: float,
        scale: float,
        clip_norm: float,
        stream: KeyStream,
        distribution: Literal["gaussian", "uniform"] = "gaussian",
    ) -> None:
        self.n, self.dimension = n, dimension
        self.mean, self.scale, self.clip_norm = mean, scale, clip_norm
        self.distribution = distribution
        self._stream = stream
        # Sums already computed, by mask: a run asks for the same ones several times
        # (the released sum's error, the coalition's view), each a pass over N·d values.
        self._sums: dict[bytes, F64] = {}

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_sums"] = {}  # a worker process computes rows, never these sums
        return state

    def rows(self, clients: npt.ArrayLike) -> F64:
        """The clipped vectors of ``clients`` (indices), shape ``(len(clients), d)``."""
        idx = np.atleast_1d(np.asarray(clients, dtype=np.int64))
        if self.distribution == "gaussian":
            base = self._stream.normal(idx, self.dimension)
        else:
            base = self._stream.uniform(idx, 0, self.dimension)
            # (u·2 − 1)·√3, in place: the same operations in the same order, no temporaries.
            base *= 2.0
            base -= 1.0
            base *= np.sqrt(3.0)
        base *= self.scale
        base += self.mean  # mean + scale·base (IEEE addition and product commute exactly)
        return clip_l2(base, self.clip_norm, in_place=True)

    def sum(self, mask: npt.NDArray[np.bool_] | None = None) -> F64:
        """Σ z_i over the clients in ``mask`` (all if None), in fixed chunks."""
        key = b"all" if mask is None else np.packbits(np.asarray(mask, dtype=bool)).tobytes()
        known = self._sums.get(key)
        if known is None:
            if len(self._sums) >= 4:
                self._sums.pop(next(iter(self._sums)))
            known = self._sums[key] = self._sum(mask)
        return known.copy()

    def _sum(self, mask: npt.NDArray[np.bool_] | None) -> F64:
        idx = np.arange(self.n) if mask is None else np.flatnonzero(mask)
        total = np.zeros(self.dimension)
        step = max(1, SUM_CHUNK_ELEMENTS // self.dimension)
        for lo in range(0, idx.size, step):
            total += self.rows(idx[lo : lo + step]).sum(axis=0)
        return total
