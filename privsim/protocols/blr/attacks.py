"""Record reconstruction from BLR's released sufficient statistics (Heikkilä et al.
2017, §3.2): a coalition that knows every other client's record subtracts their
statistics from the release and reads the target's x xᵀ and x y off what is left.

x̂ = √λ₁·u₁ from the leading eigenpair of the symmetric part of the remaining x xᵀ,
ŷ = ⟨x y, x̂⟩/‖x̂‖². The statistics are unchanged by (x, y) → (−x, −y), so the record
is recovered up to that sign (:func:`reconstruction_error` takes the better one). With
no noise the reconstruction is exact; with Gaussian noise of σ = z(ε, δ)·Δ₂ its error
grows as ε falls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.protocols.blr.maths import client_statistics, unpack_statistics

__all__ = ["ATTACKS", "reconstruct_record", "reconstruction_error"]

F64 = npt.NDArray[np.float64]


def reconstruct_record(released: F64, known_x: F64, known_y: F64) -> tuple[F64, float]:
    """The target's (x̂, ŷ) from the released statistics and every other record."""
    d = np.atleast_2d(known_x).shape[1]
    rest = np.asarray(released, dtype=np.float64) - client_statistics(known_x, known_y).sum(axis=0)
    xx, xy = unpack_statistics(rest, d)
    w, v = np.linalg.eigh(0.5 * (xx + xx.T))
    x = np.sqrt(max(float(w[-1]), 0.0)) * v[:, -1]
    norm = float(x @ x)
    y = float(xy @ x) / norm if norm > 0 else 0.0
    return np.asarray(x, dtype=np.float64), y


def reconstruction_error(x_hat: F64, y_hat: float, x: F64, y: float) -> float:
    """‖(x̂, ŷ) − (x, y)‖₂, up to the global sign the statistics cannot tell."""
    est = np.append(x_hat, y_hat)
    true = np.append(np.asarray(x, dtype=np.float64), y)
    return float(min(np.linalg.norm(est - true), np.linalg.norm(est + true)))


#: The attacks a BLR coalition can run, by name.
ATTACKS: dict[str, Callable[..., Any]] = {"record_reconstruction": reconstruct_record}
