"""Pure maths of DP Bayesian linear regression (Heikkilä et al. 2017, §3.2.1, Algorithm 2).

Model: y | x, β ~ N(xᵀβ, 1/λ), β ~ N(0, I/λ₀). It depends on the data only through the
sufficient statistics Σ x_i x_iᵀ and Σ x_i y_i, whose unique entries a client packs into
one vector (:func:`client_statistics`) for one DCA secure sum.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = [
    "client_moments",
    "client_statistics",
    "marginal_std",
    "moment_sensitivity",
    "posterior",
    "predict",
    "project",
    "repair_precision",
    "statistics_sensitivity",
    "unpack_statistics",
]

F64 = npt.NDArray[np.float64]


def project(values: F64, bounds: F64) -> F64:
    """Algorithm 2, steps 1 and 3: clip each coordinate to [−b_j, b_j]."""
    b = np.asarray(bounds, dtype=np.float64)
    return np.clip(values, -b, b)


def client_statistics(x: F64, y: F64) -> F64:
    """Rows (x_i, y_i) -> the unique entries of x_i x_iᵀ (upper triangle, row-major, diagonal
    included) followed by x_i y_i: ``d(d+1)/2 + d`` numbers per client."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    iu = np.triu_indices(x.shape[1])
    outer = x[:, iu[0]] * x[:, iu[1]]
    return np.concatenate([outer, x * y[:, None]], axis=1)


def unpack_statistics(z: F64, d: int) -> tuple[F64, F64]:
    """Inverse of summing :func:`client_statistics`: (Σ x xᵀ as a symmetric d×d, Σ x y)."""
    iu = np.triu_indices(d)
    k = iu[0].size
    xx = np.zeros((d, d))
    xx[iu] = z[:k]
    xx = xx + np.triu(xx, 1).T
    return xx, np.asarray(z[k : k + d], dtype=np.float64)


def statistics_sensitivity(x_bounds: F64, y_bound: float, neighbour: str = "replace_one") -> float:
    """L2 sensitivity of Σ client_statistics when |x_j| ≤ c_j, |y| ≤ c_y.

    Replace-one: each entry moves by at most its range: x_j² ∈ [0, c_j²] by ≤ c_j²;
    x_j x_k (j < k) ∈ [−c_j c_k, c_j c_k] by ≤ 2 c_j c_k; x_j y by ≤ 2 c_j c_y. The L2
    norm of those maxima bounds the L2 change (each coordinate at its extreme).
    Add/remove: the change is one record's vector, whose entries are at most c_j²,
    c_j c_k and c_j c_y in absolute value.
    """
    c = np.asarray(x_bounds, dtype=np.float64)
    d = c.size
    iu = np.triu_indices(d)
    spread = 2.0 if neighbour == "replace_one" else 1.0
    outer = np.where(iu[0] == iu[1], c[iu[0]] ** 2, spread * c[iu[0]] * c[iu[1]])
    cross = spread * c * y_bound
    return math.sqrt(float(np.sum(outer**2) + np.sum(cross**2)))


def client_moments(x: F64, y: F64) -> F64:
    """Algorithm 2, step 2: each client's squared values (x_i1², …, x_id², y_i²), whose sum
    over clients gives the marginal second moments (the data are centred)."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64).reshape(-1, 1)
    return np.concatenate([x, y], axis=1) ** 2


def moment_sensitivity(bounds: F64) -> float:
    """L2 sensitivity of Σ client_moments when |v_j| ≤ c_j: every v_j² lies in [0, c_j²],
    so one record moves entry j by at most c_j² (either neighbour relation): Δ = sqrt(Σ c_j⁴)."""
    c = np.asarray(bounds, dtype=np.float64)
    return math.sqrt(float(np.sum(c**4)))


def marginal_std(sum_of_squares: F64, n: int, floor: float) -> F64:
    """σ̂_j = sqrt(S_j / n) from the released sums of squares of centred data; a
    non-positive estimate (noise larger than the signal) becomes sqrt(``floor``)."""
    variance = np.asarray(sum_of_squares, dtype=np.float64) / max(n, 1)
    return np.sqrt(np.where(variance > 0, variance, floor))


def repair_precision(matrix: F64) -> F64:
    """Make a noisy symmetric Σ x xᵀ positive semi-definite by taking the absolute value of
    its eigenvalues (as the authors' code does): the eigenvectors are kept, negative
    curvature introduced by the noise is mirrored. Works on a stack (..., d, d)."""
    sym = 0.5 * (matrix + np.swapaxes(matrix, -1, -2))
    w, v = np.linalg.eigh(sym)
    return np.asarray((v * np.abs(w)[..., None, :]) @ np.swapaxes(v, -1, -2), dtype=np.float64)


def posterior(
    xx: F64, xy: F64, *, prior_precision: float = 1.0, noise_precision: float = 1.0
) -> tuple[F64, F64]:
    """Posterior N(μ, Λ⁻¹) of β: Λ = λ₀ I + λ Σ x xᵀ, μ = λ Λ⁻¹ Σ x y. Works on stacks:
    xx (..., d, d) with xy (..., d)."""
    d = xy.shape[-1]
    precision = prior_precision * np.eye(d) + noise_precision * xx
    solved = np.linalg.solve(precision, xy[..., None])[..., 0]
    mean = np.asarray(noise_precision * solved, dtype=np.float64)
    return mean, precision


def predict(x: F64, mean: F64) -> F64:
    """Predictive mean x*ᵀμ."""
    return np.asarray(x, dtype=np.float64) @ mean
