"""Integer noise in shares: each client's share of the distributed discrete Gaussian or
Skellam noise, scaled for N − T − 1 honest clients as in Theorem 1 of Heikkilä et al.
(NeurIPS 2017).

Theorem 1 asks that any N − T − 1 honest contributions together carry the noise a
trusted aggregator would add, so each client adds variance σ²_total / (N − T − 1):
a discrete Gaussian share N_Z(0, σ_i²) with σ_i² = σ²_total/(N − T − 1) (Kairouz, Liu
& Steinke, ICML 2021), or a Skellam share Sk(μ_i, μ_i) with 2μ_i = σ²_total/(N − T − 1)
(Agarwal, Kairouz & Liu, NeurIPS 2021). A sum of h Skellam shares is exactly
Sk(hμ_i, hμ_i); a sum of discrete Gaussians is not a discrete Gaussian, which the
accountant's τ term pays for (:mod:`privsim.kit.intnoise.accounting`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from privsim.kit.intnoise.samplers import Size, sample_discrete_gaussian, sample_skellam

__all__ = [
    "DEFAULT_BETA",
    "IntegerNoise",
    "NoiseKind",
    "client_noise",
    "client_parameter",
    "share_variance",
]

NoiseKind = Literal["discrete_gaussian", "skellam"]
KINDS: tuple[NoiseKind, ...] = ("discrete_gaussian", "skellam")

#: Kairouz, Liu & Steinke (2021) use β = e^{−1/2} for conditional randomised rounding.
DEFAULT_BETA = math.exp(-0.5)


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegerNoise:
    """An integer noise mechanism on scaled, clipped, randomly rounded vectors.

    ``kind``: ``discrete_gaussian`` (KLS 2021) or ``skellam`` (AKL 2021). ``scale`` is
    s = 1/γ, integer steps per unit of the real input (a larger s rounds more finely
    and needs more modulus bits). ``beta`` is the conditional-rounding failure bound
    β of KLS 2021 (conditional randomised rounding): a rounded vector is redrawn while its norm exceeds the
    inflated bound, which holds with probability ≥ 1 − β per draw; β = 0 means plain
    randomised rounding, with the deterministic bound c·s + √d.
    """

    kind: NoiseKind
    scale: float = 1.0
    beta: float = DEFAULT_BETA

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"integer noise kind is one of {KINDS}, got {self.kind!r}")
        if not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"scale must be a finite number > 0, got {self.scale}")
        if not 0 <= self.beta < 1:
            raise ValueError(f"beta must be in [0, 1), got {self.beta}")


def _kind(kind: NoiseKind | IntegerNoise) -> NoiseKind:
    name = kind.kind if isinstance(kind, IntegerNoise) else kind
    if name not in KINDS:
        raise ValueError(f"integer noise kind is one of {KINDS}, got {name!r}")
    return name


def share_variance(total_variance: float, honest_clients: int) -> float:
    """Theorem 1 (Heikkilä et al. 2017): each client's variance σ²_total / (N − T − 1),
    with ``honest_clients`` = N − T − 1 ≥ 1."""
    if honest_clients < 1:
        raise ValueError(f"need N - T - 1 >= 1 honest clients, got {honest_clients}")
    if not (total_variance >= 0 and math.isfinite(total_variance)):
        raise ValueError(f"total_variance must be a finite number >= 0, got {total_variance}")
    return total_variance / honest_clients


def client_parameter(
    kind: NoiseKind | IntegerNoise, total_variance: float, honest_clients: int
) -> float:
    """The sampler's parameter for one client's share: σ_i = sqrt(v) for the discrete
    Gaussian, μ_i = v/2 for Skellam (Var Sk(μ, μ) = 2μ), with v = :func:`share_variance`."""
    v = share_variance(total_variance, honest_clients)
    return math.sqrt(v) if _kind(kind) == "discrete_gaussian" else v / 2.0


def client_noise(
    rng: np.random.Generator,
    kind: NoiseKind | IntegerNoise,
    total_variance: float,
    honest_clients: int,
    size: Size,
) -> npt.NDArray[np.int64]:
    """One client's integer noise share, of variance σ²_total / (N − T − 1) per entry
    (``honest_clients`` = N − T − 1), drawn from ``rng``."""
    parameter = client_parameter(kind, total_variance, honest_clients)
    if _kind(kind) == "discrete_gaussian":
        return sample_discrete_gaussian(rng, parameter, size)
    return sample_skellam(rng, parameter, size)
