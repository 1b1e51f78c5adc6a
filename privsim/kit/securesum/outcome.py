"""What a secure-sum protocol hands back: a released sum over an included set, or an abort."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["AbortReason", "SumOutcome"]


class AbortReason(enum.StrEnum):
    TOO_MANY_DROPOUTS = "too_many_dropouts"
    AGREEMENT_INCOMPLETE = "agreement_incomplete"
    SUMS_MISSING = "sums_missing"
    NODES_DISAGREE = "nodes_disagree"
    NO_CONTRIBUTIONS = "no_contributions"
    TOO_FEW_NODES = "too_few_nodes"


@dataclass(frozen=True, slots=True, kw_only=True)
class SumOutcome:
    """The output party's result: ``released`` is Σ_{i ∈ included} (z_i + η_i) (+ central
    noise for a trusted aggregator), or ``None`` with a typed ``abort`` reason."""

    released: npt.NDArray[np.float64] | None
    included: npt.NDArray[np.bool_] | None
    abort: AbortReason | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.abort is None

    @classmethod
    def aborted(cls, reason: AbortReason, detail: str) -> SumOutcome:
        return cls(released=None, included=None, abort=reason, detail=detail)
