"""Rényi-DP bounds of integer noise summed from n honest shares, and their (ε, δ): the
formulas the ledger evaluates for the shares that actually reached a release.

Distributed discrete Gaussian (Kairouz, Liu & Steinke, ICML 2021, Theorem 1 with the
RDP form of its Proposition 14): n honest shares N_Z(0, σ²) per coordinate, σ ≥ 1/2,
integer sensitivities ‖Δ‖₁ ≤ Δ₁, ‖Δ‖₂ ≤ Δ₂; with a₂ = Δ₂/(√n·σ), a₁ = Δ₁/(√n·σ) and
τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)), the sum is (α, ε(α))-RDP with

    ε(α) = min{ α·a₂²/2 + τ·d,  α·(a₂² + 2·a₁·τ + τ²·d)/2,  α·(a₂ + τ·√d)²/2 }.

Skellam (Agarwal, Kairouz & Liu, NeurIPS 2021, Theorem 3.5 / Corollary 3.6): n honest
shares Sk(μ_i, μ_i) sum to noise of variance μ = 2·n·μ_i, and for integer α > 1

    ε(α) = α·Δ₂²/(2μ) + min{ ((2α − 1)·Δ₂² + 6·Δ₁)/(4μ²),  3·Δ₁/(2μ) }.

RDP to (ε, δ) (Canonne, Kamath & Steinke 2020; Balle et al. 2020):
ε = min_α ε(α) + ln(1/δ)/(α − 1) + ln(1 − 1/α) − ln(α)/(α − 1) over :data:`ORDERS`.
The ledger records a release as :class:`~privsim.sim.events.IntegerNoiseDpEvent`: the
bound's inputs, for composition (releases compose by summing their curves,
:meth:`IntegerShares.rdp`), and the Gaussian whose exact (ε, δ) at the bound's δ is the
bound (:func:`equivalent_gaussian`), what the release alone costs.

Why here: the ledger (``privsim.sim``) must not import the protocol kit, yet it has to
re-evaluate these bounds at the realised number of honest shares. So the formulas live
in this module of plain numbers, the kit's accountant (:mod:`privsim.kit.intnoise`)
calls the same functions to calibrate and to plan, and the event carries only the
inputs (:class:`IntegerShares`, a frozen dataclass of numbers): picklable for sweeps,
comparable, and evaluated by one code path, so a release with the planned number of
honest shares gets exactly the planned event.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.sim.events import IntegerNoiseDpEvent

__all__ = [
    "COMPOSITION_ORDERS",
    "DDG_MIN_SIGMA",
    "ORDERS",
    "IntegerKind",
    "IntegerShares",
    "ddg_rdp",
    "ddg_tau",
    "equivalent_gaussian",
    "integer_epsilon",
    "integer_rdp",
    "rdp_to_epsilon",
    "skellam_rdp",
]

F64 = npt.NDArray[np.float64]
IntegerKind = Literal["discrete_gaussian", "skellam"]

#: Integer Rényi orders: every order to 256, then geometrically to 10⁶.
ORDERS: F64 = np.unique(
    np.concatenate([np.arange(2, 257), np.round(np.geomspace(256, 1e6, 120))])
).astype(np.float64)
ORDERS.flags.writeable = False

#: Orders at which compositions are evaluated: :data:`ORDERS` and the fractional orders
#: 1.1, 1.2, …, 10.9 of dp-accounting's default RDP orders, where many releases find their
#: best order. A single release keeps :data:`ORDERS`, the grid the kit calibrates on.
COMPOSITION_ORDERS: F64 = np.unique(
    np.concatenate([ORDERS, 1.0 + np.arange(1, 100) / 10.0])
).astype(np.float64)
COMPOSITION_ORDERS.flags.writeable = False

#: Smallest per-share σ Theorem 1 of KLS 2021 covers.
DDG_MIN_SIGMA = 0.5


def rdp_to_epsilon(rdp: npt.ArrayLike, orders: npt.ArrayLike, delta: float) -> tuple[float, float]:
    """(ε, best α): ε = min_α rdp(α) + ln(1/δ)/(α−1) + ln(1−1/α) − ln(α)/(α−1)
    (Canonne, Kamath & Steinke 2020; Balle et al. 2020), floored at 0."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    r = np.asarray(rdp, dtype=np.float64)
    a = np.asarray(orders, dtype=np.float64)
    eps = r + math.log(1.0 / delta) / (a - 1.0) + np.log1p(-1.0 / a) - np.log(a) / (a - 1.0)
    if not np.any(np.isfinite(eps)):
        return math.inf, math.nan
    i = int(np.nanargmin(eps))
    return max(float(eps[i]), 0.0), float(a[i])


def ddg_tau(sigma: float, clients: int) -> float:
    """τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)) (KLS 2021, Theorem 1)."""
    if clients < 1:
        raise ValueError(f"need at least one client, got {clients}")
    k = np.arange(1, clients, dtype=np.float64)
    return float(10.0 * np.exp(-2.0 * math.pi**2 * sigma**2 * k / (k + 1.0)).sum())


def ddg_rdp(
    orders: npt.ArrayLike, *, sigma: float, clients: int, l1: float, l2: float, dimension: int
) -> F64:
    """ε(α) of the sum of ``clients`` discrete Gaussians N_Z(0, σ²) (KLS 2021, Theorem 1 /
    Prop. 14); infinite below σ = 1/2, where the theorem does not apply."""
    a = np.asarray(orders, dtype=np.float64)
    if sigma < DDG_MIN_SIGMA:
        return np.full(a.shape, math.inf)
    tau = ddg_tau(sigma, clients)
    root = math.sqrt(clients) * sigma
    a2, a1 = l2 / root, l1 / root
    d = float(dimension)
    t1 = a * a2**2 / 2.0 + tau * d
    t2 = a * (a2**2 + 2.0 * a1 * tau + tau**2 * d) / 2.0
    t3 = a * (a2 + tau * math.sqrt(d)) ** 2 / 2.0
    return np.asarray(np.minimum(np.minimum(t1, t2), t3), dtype=np.float64)


def skellam_rdp(orders: npt.ArrayLike, *, variance: float, l1: float, l2: float) -> F64:
    """ε(α) of the Skellam mechanism with per-coordinate noise variance μ = ``variance``
    (AKL 2021, Theorem 3.5 / Corollary 3.6)."""
    a = np.asarray(orders, dtype=np.float64)
    if not variance > 0:
        return np.full(a.shape, math.inf)
    mu = variance
    extra = np.minimum(((2.0 * a - 1.0) * l2**2 + 6.0 * l1) / (4.0 * mu**2), 3.0 * l1 / (2.0 * mu))
    return np.asarray(a * l2**2 / (2.0 * mu) + extra, dtype=np.float64)


def integer_rdp(
    kind: str, parameter: float, shares: int, *, l1: float, l2: float, dimension: int
) -> F64:
    """ε(α) over :data:`ORDERS` of ``shares`` honest shares of parameter σ_i (discrete
    Gaussian) or μ_i (Skellam, the Poisson mean of each side: μ = 2·shares·μ_i)."""
    if shares < 1:
        raise ValueError(f"need at least one honest share, got {shares}")
    if kind == "discrete_gaussian":
        return ddg_rdp(ORDERS, sigma=parameter, clients=shares, l1=l1, l2=l2, dimension=dimension)
    if kind == "skellam":
        return skellam_rdp(ORDERS, variance=2.0 * shares * parameter, l1=l1, l2=l2)
    raise ValueError(f"unknown integer noise kind {kind!r}")


def integer_epsilon(
    kind: str,
    parameter: float,
    shares: int,
    *,
    l1: float,
    l2: float,
    dimension: int,
    delta: float,
) -> tuple[float, float]:
    """(ε, best α) at δ of a release whose noise is ``shares`` honest shares."""
    rdp = integer_rdp(kind, parameter, shares, l1=l1, l2=l2, dimension=dimension)
    return rdp_to_epsilon(rdp, ORDERS, delta)


@functools.lru_cache(maxsize=4096)
def _gaussian_multiplier(epsilon: float, delta: float) -> float:
    return float(dp_accounting.get_sigma_gaussian(epsilon, delta))


def equivalent_gaussian(target_epsilon: float, delta: float) -> dp_accounting.GaussianDpEvent:
    """The Gaussian event whose exact (ε, δ) (analytic Gaussian mechanism) at ``delta`` is
    ``target_epsilon``: how a bound computed here is recorded in the ledger."""
    if not math.isfinite(target_epsilon):
        raise ValueError("an infinite epsilon has no Gaussian equivalent")
    return dp_accounting.GaussianDpEvent(_gaussian_multiplier(float(target_epsilon), delta))


@functools.lru_cache(maxsize=4096)
def _bound(
    kind: str, parameter: float, shares: int, l1: float, l2: float, dimension: int, delta: float
) -> float:
    eps, _ = integer_epsilon(
        kind, parameter, shares, l1=l1, l2=l2, dimension=dimension, delta=delta
    )
    return eps


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegerShares:
    """The inputs of an integer-noise bound, as plain numbers: the mechanism ``kind``,
    each share's ``parameter`` (σ_i, or μ_i for Skellam), the integer sensitivities
    ``l1`` = Δ₁ and ``l2`` = Δ₂, the ``dimension`` d and the ``delta`` at which the
    bound is converted to its Gaussian event (the ledger's δ)."""

    kind: IntegerKind
    parameter: float
    l1: float
    l2: float
    dimension: int
    delta: float

    def __post_init__(self) -> None:
        if self.kind not in ("discrete_gaussian", "skellam"):
            raise ValueError(
                f"integer noise is 'discrete_gaussian' or 'skellam', got {self.kind!r}"
            )
        if not (self.parameter >= 0 and math.isfinite(self.parameter)):
            raise ValueError(f"parameter must be finite and >= 0, got {self.parameter}")
        if not (self.l1 > 0 and self.l2 > 0 and math.isfinite(self.l1 + self.l2)):
            raise ValueError(f"sensitivities must be finite and > 0, got {self.l1}, {self.l2}")
        if self.dimension < 1:
            raise ValueError(f"dimension must be >= 1, got {self.dimension}")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")

    def epsilon(self, shares: int) -> float:
        """ε at :attr:`delta` of the sum of ``shares`` ≥ 1 honest shares (cached: a
        pure function of numbers)."""
        return _bound(
            self.kind,
            float(self.parameter),
            int(shares),
            float(self.l1),
            float(self.l2),
            int(self.dimension),
            float(self.delta),
        )

    def rdp(self, shares: int, orders: npt.ArrayLike = ORDERS) -> F64:
        """ε(α) of ``shares`` ≥ 1 honest shares at real ``orders`` α > 1. The discrete
        Gaussian's bound holds at every α > 1 (KLS 2021, Theorem 1 is a concentrated-DP
        statement, Prop. 14 its RDP form); Skellam's only at integer α (AKL 2021,
        Theorem 3.5), so there it is taken at ⌈α⌉: Rényi divergence does not decrease
        with the order (van Erven & Harremoës 2014, Thm. 3), so D_α ≤ D_⌈α⌉ ≤ ε(⌈α⌉)."""
        if shares < 1:
            raise ValueError(f"need at least one honest share, got {shares}")
        a = np.asarray(orders, dtype=np.float64)
        if self.kind == "discrete_gaussian":
            return ddg_rdp(
                a,
                sigma=self.parameter,
                clients=shares,
                l1=self.l1,
                l2=self.l2,
                dimension=self.dimension,
            )
        variance = 2.0 * shares * self.parameter
        return skellam_rdp(np.ceil(a), variance=variance, l1=self.l1, l2=self.l2)

    def event(self, shares: int) -> dp_accounting.DpEvent:
        """The ledger's event for ``shares`` honest shares: an
        :class:`~privsim.sim.events.IntegerNoiseDpEvent` carrying this bound and the
        Gaussian of the same (ε, δ) (an infinite multiplier where the bound alone is
        ε = 0, the conversion's floor); non-private when no share is credited or the
        bound is infinite."""
        if shares < 1:
            return dp_accounting.NonPrivateDpEvent()
        eps = self.epsilon(shares)
        if not math.isfinite(eps):
            return dp_accounting.NonPrivateDpEvent()
        # the conversion's floor (ε = 0): alone it costs nothing, composed it may
        multiplier = equivalent_gaussian(eps, self.delta).noise_multiplier if eps > 0 else math.inf
        # mypy cannot see the field IntegerNoiseDpEvent inherits from dp-accounting's class
        return IntegerNoiseDpEvent(  # type: ignore[call-arg]
            noise_multiplier=multiplier, bound=self, shares=int(shares)
        )
