"""The summarisation objective J (Sarpatwar et al. 2019, eq. 3), MMD², and the owners'
bids.

J(D_s) = (2/(m|D_s|))·Σ_{i∈D_v, j∈D_s} k(y_i, x_j) − (1/|D_s|²)·Σ_{i,j∈D_s} k(x_i, x_j)
       = (1/m²)·Σ_{i,j∈D_v} k(y_i, y_j) − MMD²(D_v, D_s)   (eq. 1).

With a feature map φ (h1) and the means g̃ = mean φ(D_v), g = mean φ(D_s) over n = |D_s|
points, the gain of adding y is (2/(n+1))·[g̃ᵀφ(y) − (n/(n+1))·gᵀφ(y) − ‖φ(y)‖²/(2(n+1))]
plus terms free of y; the bracket is the bid (Algorithm 3, step 6). The paper's bid drops
the last term, k(y, y) = 1 for the RBF kernel; we keep ‖h1(y)‖² (≈ 1 ± O(1/√d)) so the
bid is the exact gain of J under the hashed kernel, and greedy on bids is greedy on J.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from privsim.protocols.summarization.rff import rbf_kernel

__all__ = ["bid_scores", "mmd2", "objective"]

F64 = npt.NDArray[np.float64]


def mmd2(x: F64, y: F64, gamma: float) -> float:
    """Eq. (1): the (biased) sample MMD² between the rows of x and of y, RBF kernel."""
    kxx = rbf_kernel(x, x, gamma).mean()
    kyy = rbf_kernel(y, y, gamma).mean()
    kxy = rbf_kernel(x, y, gamma).mean()
    return float(kxx + kyy - 2.0 * kxy)


def objective(summary_features: F64, validation_features: F64) -> float:
    """J(D_s) (eq. 3) under the linear kernel of the given features (h1 vectors)."""
    n, m = summary_features.shape[0], validation_features.shape[0]
    cross = float(validation_features.sum(0) @ summary_features.sum(0))
    within = float(summary_features.sum(0) @ summary_features.sum(0))
    return 2.0 * cross / (m * n) - within / (n * n)


def bid_scores(features: F64, norms: F64, g_tilde: F64, g: F64, n: int) -> F64:
    """Every candidate's bid, one matrix product: φ·(g̃ − (n/(n+1))·g) − ‖φ‖²/(2(n+1))."""
    direction = g_tilde - (n / (n + 1.0)) * g
    return np.asarray(features @ direction - norms / (2.0 * (n + 1.0)), dtype=np.float64)
