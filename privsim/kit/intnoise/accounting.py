"""Privacy of integer noise summed in shares, as Rényi DP converted to (ε, δ).

Distributed discrete Gaussian (Kairouz, Liu & Steinke, ICML 2021, Theorem 1 with the
RDP form of its Proposition 14): n honest clients each add N_Z(0, σ²) per coordinate,
σ ≥ 1/2. For an integer sensitivity with ‖Δ‖₁ ≤ Δ₁, ‖Δ‖₂ ≤ Δ₂, put
a₂ = Δ₂/(√n·σ), a₁ = Δ₁/(√n·σ) and τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)); the sum is
(α, ε(α))-RDP for every α > 1 with

    ε(α) = min{ α·a₂²/2 + τ·d,  α·(a₂² + 2·a₁·τ + τ²·d)/2,  α·(a₂ + τ·√d)²/2 },

the last two being the ½ε²-concentrated-DP bound of Theorem 1. τ measures how far a
sum of discrete Gaussians is from one discrete Gaussian; as σ grows τ → 0 and ε(α)
becomes α·a₂²/2, the continuous Gaussian's.

Skellam (Agarwal, Kairouz & Liu, NeurIPS 2021, Theorem 3.5 / Corollary 3.6): the summed
noise is Sk(μ/2, μ/2) with per-coordinate variance μ (h honest shares of Poisson mean
μ_i: μ = 2·h·μ_i); for integer α > 1

    ε(α) = α·Δ₂²/(2μ) + min{ ((2α − 1)·Δ₂² + 6·Δ₁)/(4μ²),  3·Δ₁/(2μ) }.

Conversion to (ε, δ) (Canonne, Kamath & Steinke 2020, for concentrated DP; Balle et
al. 2020, for Rényi DP): ε = min_α ε(α) + ln(1/δ)/(α − 1) + ln(1 − 1/α) − ln(α)/(α − 1), over the
integer orders :data:`ORDERS` (the papers evaluate integer orders).

The ledger composes dp-accounting events: a release is charged as the Gaussian event
whose exact (ε, δ) at the ledger's δ equals this bound (:func:`equivalent_gaussian`).
That is exact for the single release the ledger reports at its δ; composing it with
other Gaussian events in closed form treats the bound as a Gaussian, an approximation.

The formulas themselves live in :mod:`privsim.sim.integer_bounds` (numbers only), so
that the ledger can re-evaluate them at the number of honest shares that actually
reached a release (:meth:`IntegerAccount.noise_shares`); this module wraps them with
the kit's :class:`~privsim.kit.intnoise.rounding.Sensitivity` and calibrates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.intnoise.noise import NoiseKind
from privsim.kit.intnoise.rounding import Sensitivity
from privsim.sim import integer_bounds as bounds
from privsim.sim.integer_bounds import (
    DDG_MIN_SIGMA,
    ORDERS,
    IntegerShares,
    ddg_tau,
    equivalent_gaussian,
    rdp_to_epsilon,
)
from privsim.sim.ledger import NoiseShares

__all__ = [
    "DDG_MIN_SIGMA",
    "ORDERS",
    "IntegerAccount",
    "account",
    "calibrate",
    "ddg_rdp",
    "ddg_tau",
    "epsilon",
    "equivalent_gaussian",
    "gaussian_rdp",
    "rdp_to_epsilon",
    "skellam_rdp",
    "smallest_meeting",
]

F64 = npt.NDArray[np.float64]


def ddg_rdp(
    orders: npt.ArrayLike, *, sigma: float, clients: int, sensitivity: Sensitivity, dimension: int
) -> F64:
    """ε(α) of the sum of ``clients`` discrete Gaussians N_Z(0, σ²) (KLS 2021, Theorem 1 /
    Prop. 14); infinite below σ = 1/2, where the theorem does not apply."""
    return bounds.ddg_rdp(
        orders,
        sigma=sigma,
        clients=clients,
        l1=sensitivity.l1,
        l2=sensitivity.l2,
        dimension=dimension,
    )


def skellam_rdp(orders: npt.ArrayLike, *, variance: float, sensitivity: Sensitivity) -> F64:
    """ε(α) of the Skellam mechanism with per-coordinate noise variance μ = ``variance``
    (AKL 2021, Theorem 3.5 / Corollary 3.6)."""
    return bounds.skellam_rdp(orders, variance=variance, l1=sensitivity.l1, l2=sensitivity.l2)


def gaussian_rdp(orders: npt.ArrayLike, noise_multiplier: float) -> F64:
    """ε(α) = α/(2m²) of the continuous Gaussian mechanism with σ/Δ = m (Mironov 2017)."""
    a = np.asarray(orders, dtype=np.float64)
    return np.asarray(a / (2.0 * noise_multiplier**2), dtype=np.float64)


def _check_honest(honest_clients: int) -> None:
    if honest_clients < 1:
        raise ValueError(f"need N - T - 1 >= 1 honest clients, got {honest_clients}")


def epsilon(
    kind: NoiseKind,
    parameter: float,
    *,
    honest_clients: int,
    sensitivity: Sensitivity,
    dimension: int,
    delta: float,
) -> float:
    """ε at δ of one release whose noise is ``honest_clients`` shares of parameter
    σ_i (discrete Gaussian) or μ_i (Skellam, Poisson mean of each side)."""
    return _bound(kind, parameter, honest_clients, sensitivity, dimension, delta)[0]


def _bound(
    kind: NoiseKind,
    parameter: float,
    honest_clients: int,
    sensitivity: Sensitivity,
    dimension: int,
    delta: float,
) -> tuple[float, float]:
    """The papers' bound (ε, its best order) for ``honest_clients`` shares."""
    _check_honest(honest_clients)
    return bounds.integer_epsilon(
        kind,
        parameter,
        honest_clients,
        l1=sensitivity.l1,
        l2=sensitivity.l2,
        dimension=dimension,
        delta=delta,
    )


def calibrate(
    kind: NoiseKind,
    target_epsilon: float,
    *,
    delta: float,
    honest_clients: int,
    sensitivity: Sensitivity,
    dimension: int,
    relative_tolerance: float = 1e-9,
) -> float:
    """The smallest per-client parameter (σ_i or μ_i) whose release meets (ε, δ), by
    bisection on a log scale (ε decreases as the noise grows). The returned value meets
    the target; one ``relative_tolerance`` below it does not."""
    if not (target_epsilon > 0 and math.isfinite(target_epsilon)):
        raise ValueError(f"target epsilon must be finite and > 0, got {target_epsilon}")

    def meets(p: float) -> bool:
        return (
            epsilon(
                kind,
                p,
                honest_clients=honest_clients,
                sensitivity=sensitivity,
                dimension=dimension,
                delta=delta,
            )
            <= target_epsilon
        )

    lo = DDG_MIN_SIGMA if kind == "discrete_gaussian" else 1e-6
    return smallest_meeting(meets, lo, relative_tolerance=relative_tolerance)


def smallest_meeting(
    meets: Callable[[float], bool],
    floor: float,
    *,
    relative_tolerance: float,
    start: float = 1.0,
    ceiling: float = 1e300,
) -> float:
    """The smallest noise parameter p ≥ ``floor`` with ``meets(p)``, for a ``meets`` that
    holds from some p on (ε falls as the noise grows): ``floor`` if it meets, else a
    bracket by doubling from max(2·floor, ``start``), then bisection on a log scale to
    ``relative_tolerance``; the answer meets, one tolerance below it does not. A
    ValueError past ``ceiling``."""
    lo = floor
    if meets(lo):
        return lo
    hi = max(2.0 * lo, start)
    while not meets(hi):
        lo, hi = hi, hi * 2.0
        if hi > ceiling:
            raise ValueError("no noise level meets the target epsilon")
    while hi / lo - 1.0 > relative_tolerance:
        mid = math.sqrt(lo * hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegerAccount:
    """One integer-noise release as accounted: the mechanism, the per-client parameter,
    the honest count N − T − 1 it is credited with, its sensitivity and (ε, δ)."""

    kind: NoiseKind
    parameter: float
    honest_clients: int
    sensitivity: Sensitivity
    dimension: int
    delta: float
    epsilon: float
    order: float

    @property
    def event(self) -> dp_accounting.DpEvent:
        """The ledger's event for this release (:func:`equivalent_gaussian`); a release
        whose bound is infinite (no noise) is non-private."""
        if not math.isfinite(self.epsilon):
            return dp_accounting.NonPrivateDpEvent()
        return equivalent_gaussian(self.epsilon, self.delta)

    @property
    def bound(self) -> IntegerShares:
        """The bound's inputs as plain numbers, for the ledger to re-evaluate."""
        return IntegerShares(
            kind=self.kind,
            parameter=self.parameter,
            l1=self.sensitivity.l1,
            l2=self.sensitivity.l2,
            dimension=self.dimension,
            delta=self.delta,
        )

    def noise_shares(self, contributors: Sequence[str], *, uncredited: int = 1) -> NoiseShares:
        """How the release is charged to the ledger (with :attr:`event`): noise in shares
        from ``contributors``, credited with this bound at H − ``uncredited`` honest
        shares when H honest contributors' shares reach the release (the target's own is
        not credited, as in Theorem 1 of Heikkilä et al. 2017); H = N − T gives exactly
        :attr:`event`."""
        return NoiseShares(
            contributors=tuple(contributors),
            kind="integer",
            uncredited=uncredited,
            needed=self.honest_clients + uncredited,
            integer=self.bound,
        )


def account(
    kind: NoiseKind,
    parameter: float,
    *,
    honest_clients: int,
    sensitivity: Sensitivity,
    dimension: int,
    delta: float,
) -> IntegerAccount:
    """The :class:`IntegerAccount` of one release."""
    eps, order = _bound(kind, parameter, honest_clients, sensitivity, dimension, delta)
    return IntegerAccount(
        kind=kind,
        parameter=parameter,
        honest_clients=honest_clients,
        sensitivity=sensitivity,
        dimension=dimension,
        delta=delta,
        epsilon=eps,
        order=order,
    )
