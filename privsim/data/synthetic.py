"""Synthetic client data for the embedded scenarios (no download needed)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["clip_l2", "gaussian_vectors"]


def clip_l2(x: npt.NDArray[np.float64], bound: float) -> npt.NDArray[np.float64]:
    """Scale each row of ``x`` down to L2 norm at most ``bound`` (rows inside are unchanged)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    factor = np.minimum(1.0, bound / np.maximum(norms, np.finfo(np.float64).tiny))
    return x * factor


def gaussian_vectors(
    n: int, dimension: int, *, mean: float, scale: float, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """``n`` vectors with independent N(mean, scale²) coordinates."""
    return mean + scale * rng.standard_normal((n, dimension))
