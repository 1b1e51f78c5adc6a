"""The ``[race]`` table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from privsim.scenarios.errors import FieldError, require_positive

__all__ = ["RaceConfig"]


#: LSH bandwidths accepted (the points are in [0, 255]³).
BANDWIDTH_RANGE = (1e-6, 1e12)
#: Records of the registered ``skin`` data set.
SKIN_RECORDS = 245_057


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceConfig:
    """Distributed private RACE sketching (protocol ``"race"``, Coleman & Shrivastava
    2021): ``owners`` (K) data owners each sketch a shard of ``dataset`` (``"skin"`` from
    the registry, or ``"synthetic"``: ``synthetic_records`` points in [0, 255]³) with
    ``rows`` × ``width`` counts under shared L2 LSH functions of ``bandwidth``; the merged
    sketch is released by ``mode`` ``"local"`` (each owner adds Laplace), ``"dca"``
    (secure sum with distributed ``noise``: ``"laplace"`` as Gamma differences, pure ε, or
    ``"gaussian"``, (ε, δ)) or ``"curator"`` (a trusted curator adds Laplace). Accuracy:
    mean relative error of the normalised query on ``queries`` held-out points."""

    mode: Literal["local", "dca", "curator"] = "dca"
    """How the merged sketch is released: ``local`` (each owner adds Laplace), ``dca`` (a secure
    sum with distributed noise) or ``curator`` (a trusted curator adds Laplace)."""
    noise: Literal["laplace", "gaussian"] = "laplace"
    """``mode = "dca"``: ``laplace`` (Gamma differences, pure ε) or ``gaussian`` ((ε, δ))."""
    dataset: Literal["skin", "synthetic"] = "synthetic"
    """``synthetic`` (points in [0, 255]³) or ``skin`` (registry)."""
    synthetic_records: int = 50_000
    """``dataset = "synthetic"``: the points drawn."""
    owners: int = 10
    """K, the data owners, each sketching a shard."""
    rows: int = 80
    """R, the sketch's rows (hash functions)."""
    width: int = 1000
    """W, the counts per row."""
    bandwidth: float = 5.0
    """The bandwidth of the p-stable L2 LSH functions."""
    queries: int = 500
    """Held-out points queried to measure the mean relative error."""
    timeout: float = 2.0
    """Simulated seconds the collector waits for the owners' sketches."""

    def __post_init__(self) -> None:
        for name in ("owners", "rows", "width", "queries", "synthetic_records"):
            if getattr(self, name) < 1:
                raise FieldError(
                    f"race.{name}", f"must be >= 1, got {getattr(self, name)}", "give 1 or more"
                )
        require_positive("race.bandwidth", self.bandwidth)
        if not BANDWIDTH_RANGE[0] <= self.bandwidth <= BANDWIDTH_RANGE[1]:
            raise FieldError(
                "race.bandwidth",
                f"{self.bandwidth:g} is outside [{BANDWIDTH_RANGE[0]:g}, {BANDWIDTH_RANGE[1]:g}]: "
                "the hashes of points in [0, 255]³ would overflow or all coincide",
                "give an LSH bandwidth in the data's units, e.g. 5.0",
            )
        require_positive("race.timeout", self.timeout)
        records = self.synthetic_records if self.dataset == "synthetic" else SKIN_RECORDS
        field = "race.synthetic_records" if self.dataset == "synthetic" else "race.queries"
        if records < self.queries + self.owners:
            raise FieldError(
                field,
                f"{records} records cannot give race.queries = {self.queries} held-out "
                f"queries and a record to each of race.owners = {self.owners} owners",
                f"give at least {self.queries + self.owners} records, or fewer queries",
            )
