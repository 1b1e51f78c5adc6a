"""The RACE sketch (Coleman & Shrivastava 2021, §2.4, Algorithms 1–2): an R × W array of
counts, row r counting the records by bucket l_r(x) mod W.

Streaming: :meth:`RaceSketch.add` hashes a batch with one matrix product and adds the
counts of all R rows with one ``bincount`` over flattened indices r·W + bucket; batches
are cut to ``CHUNK_CELLS`` hashes, so memory is O(R·W + chunk) whatever N. Sketches of
the same functions merge by adding their arrays (the sketch of the union). Queries read
one cell per row (O(R) per query, independent of W): the mean of the R cells (Theorem 2.5:
each row is an unbiased estimate of f_D(q) = Σ k(x, q)) or the median of means over
groups (Lemma 3.3); the optional normalisation divides by N̂ = (Σ cells)/R, computed once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from privsim.protocols.race.lsh import LshFamily

__all__ = ["CHUNK_MAX", "CHUNK_MIN", "QUERY_CHUNK_CELLS", "RaceSketch"]

F64 = npt.NDArray[np.float64]
#: Hash values computed at once when adding (rows × points per chunk): about twice the
#: sketch's cells, between 2^18 and 2^21. Smaller chunks pay the per-chunk bincount
#: (which allocates R·W counts); larger ones pay page faults on fresh buffers.
CHUNK_MIN, CHUNK_MAX = 1 << 18, 1 << 21
#: Hash values per chunk when querying (keeps the working set in cache).
QUERY_CHUNK_CELLS = 1 << 16


@dataclass(slots=True)
class RaceSketch:
    """Counts (R × W) of the records added so far, under ``family``'s R functions."""

    family: LshFamily
    width: int
    counts: npt.NDArray[np.float64] = field(init=False)
    _total: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"the sketch width W must be >= 1, got {self.width}")
        self.counts = np.zeros((self.family.rows, self.width), dtype=np.float64)

    @property
    def rows(self) -> int:
        return self.family.rows

    def buckets(self, x: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """(n, R) cell columns l_r(x) mod W."""
        return self.family.buckets(x, self.width)

    def add(self, x: npt.ArrayLike) -> RaceSketch:
        """Count a batch of records (any size: it is streamed in chunks)."""
        points = np.atleast_2d(np.asarray(x, dtype=np.float64))
        cells_per_chunk = min(CHUNK_MAX, max(CHUNK_MIN, 2 * self.rows * self.width))
        step = max(1, cells_per_chunk // self.rows)
        offsets = np.arange(self.rows, dtype=np.int64) * self.width
        flat = self.counts.reshape(-1)
        for lo in range(0, points.shape[0], step):
            cells = self.buckets(points[lo : lo + step])
            cells += offsets
            flat += np.bincount(cells.reshape(-1), minlength=flat.size)
        self._total = None
        return self

    def merge(self, other: RaceSketch) -> RaceSketch:
        """The sketch of the union (same functions and width required)."""
        if other.width != self.width or other.family is not self.family:
            raise ValueError("only sketches built with the same LSH functions and width merge")
        out = RaceSketch(self.family, self.width)
        out.counts = self.counts + other.counts
        return out

    @property
    def total(self) -> float:
        """N̂ = (Σ cells)/R (each record adds one count per row)."""
        if self._total is None:
            self._total = float(self.counts.sum()) / self.rows
        return self._total

    def _row_chunks(self, q: npt.ArrayLike) -> Iterator[F64]:
        """(chunk, R) row estimates for successive chunks of the queries."""
        queries = np.atleast_2d(np.asarray(q, dtype=np.float64))
        offsets = np.arange(self.rows, dtype=np.int64)[:, None] * self.width
        flat = self.counts.reshape(-1)
        step = max(1, QUERY_CHUNK_CELLS // self.rows)
        for lo in range(0, queries.shape[0], step):
            # Row-major gathers: all queries of the chunk in row 0, then row 1, …, so
            # consecutive reads stay within one row's W cells (a cache-friendly order).
            cells = np.ascontiguousarray(self.buckets(queries[lo : lo + step]).T)
            cells += offsets
            yield np.take(flat, cells, mode="clip").T

    def row_estimates(self, q: npt.ArrayLike) -> F64:
        """(m, R): the cell each row assigns to each query."""
        return np.concatenate(list(self._row_chunks(q)), axis=0)

    def query(self, q: npt.ArrayLike, *, groups: int = 1, normalise: bool = False) -> F64:
        """Estimates of f_D(q) for a batch: the mean of the R rows (``groups = 1``) or the
        median of ``groups`` group means (Lemma 3.3); divided by N̂ if ``normalise``.
        Streamed in chunks: memory is O(chunk), whatever the number of queries."""
        parts = []
        usable = (self.rows // groups) * groups if groups > 1 else self.rows
        for est in self._row_chunks(q):
            if groups <= 1:
                parts.append(est.mean(axis=1))
            else:
                means = est[:, :usable].reshape(est.shape[0], groups, -1).mean(axis=2)
                parts.append(np.median(means, axis=1))
        value = np.concatenate(parts) if parts else np.zeros(0)
        return value / self.total if normalise else value
