"""Messages of (DP) block coordinate descent: the remainder passed round-robin, the
coefficient blocks exchanged at publication, and the control notices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.sim.messages import Message, message

__all__ = ["Coefficients", "Finish", "Remainder", "StopNotice"]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Remainder(Message):
    """The part v of the label not yet explained (N floats), after ``step`` of ``iteration``."""

    values: npt.NDArray[np.float64]
    iteration: int
    step: int


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Finish(Message):
    """Label owner -> every party: learning is over after ``iterations``; publish."""

    iterations: int


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class StopNotice(Message):
    """A party -> every party: the run is aborted (``reason``), nothing is published."""

    reason: str


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Coefficients(Message):
    """A party's published block β_j (Algorithm 2, lines 30–32)."""

    values: npt.NDArray[np.float64]
