"""The shared hash h1: random Fourier features (Rahimi & Recht 2008; Sarpatwar et al.
2019, Algorithm 1).

For the RBF kernel k(x, y) = exp(−γ‖x − y‖²) the spectral density is N(0, 2γI), so with
Ω's d rows drawn from it and b ~ U[0, 2π]^d, h1(x) = √(2/d)·cos(Ωx + b) satisfies
E[h1(x)ᵀh1(y)] = k(x, y), each coordinate in [−√(2/d), √(2/d)].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["FourierHash", "rbf_kernel"]

F64 = npt.NDArray[np.float64]


def rbf_kernel(x: F64, y: F64, gamma: float) -> F64:
    """The Gram matrix k(x_i, y_j) = exp(−γ‖x_i − y_j‖²)."""
    sq = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T
    return np.asarray(np.exp(-gamma * np.maximum(sq, 0.0)), dtype=np.float64)


@dataclass(frozen=True, slots=True, kw_only=True)
class FourierHash:
    """h1, drawn once per run and shared by every party (Algorithm 1, lines 3–5)."""

    omega: F64  # d × n, rows ~ N(0, 2γI)
    offset: F64  # d, ~ U[0, 2π]

    @classmethod
    def draw(cls, n: int, d: int, gamma: float, rng: np.random.Generator) -> FourierHash:
        omega = rng.normal(0.0, np.sqrt(2.0 * gamma), size=(d, n))
        offset = rng.uniform(0.0, 2.0 * np.pi, size=d)
        return cls(omega=omega, offset=offset)

    @property
    def dimension(self) -> int:
        return int(self.omega.shape[0])

    def __call__(self, x: F64) -> F64:
        """h1 of each row of ``x`` (m × n → m × d): √(2/d)·cos(Ωx + b)."""
        d = self.dimension
        return np.asarray(
            np.sqrt(2.0 / d) * np.cos(np.atleast_2d(x) @ self.omega.T + self.offset),
            dtype=np.float64,
        )
