"""The scale for a bit budget: the finest rounding s = 1/γ whose calibrated integer noise
and modulus plan fit in 2^b (the inverse of :func:`~privsim.kit.intnoise.modulus.plan_modulus`,
as Kairouz, Liu & Steinke 2021 choose γ for a given bit width).

A larger s rounds more finely (less rounding inflation of the sensitivity, so less
noise relative to the signal) but needs more bits; the planned width grows with s, so
the largest s that fits is found by bisection on log₂ s.
"""

from __future__ import annotations

from dataclasses import dataclass

from privsim.kit.intnoise.accounting import calibrate
from privsim.kit.intnoise.modulus import MAX_BITS, ModulusPlan, ModulusTooSmallError, plan_modulus
from privsim.kit.intnoise.noise import NoiseKind
from privsim.kit.intnoise.rounding import integer_sensitivity

__all__ = ["ScalePlan", "plan_scale"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalePlan:
    """The largest ``scale`` fitting ``bits``, its per-client noise ``parameter`` and the
    modulus plan it gives (``modulus.bits`` ≤ ``bits``)."""

    scale: float
    parameter: float
    modulus: ModulusPlan


def plan_scale(
    *,
    bits: int,
    clients: int,
    honest_clients: int,
    dimension: int,
    clip: float,
    kind: NoiseKind,
    epsilon: float,
    delta: float,
    beta: float,
    wrap_probability: float,
    replace_one: bool = False,
) -> ScalePlan:
    """The largest s (to 0.1 % in log₂ s) such that the noise calibrated for (ε, δ) and
    N − T − 1 = ``honest_clients`` and the planned modulus fit in ``bits``; raises
    :class:`ModulusTooSmallError` if even s = 2^−20 does not fit."""
    if not 2 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in [2, 64], got {bits}")

    def plan_at(log_scale: float) -> tuple[float, ModulusPlan] | None:
        scale = 2.0**log_scale
        sensitivity = integer_sensitivity(clip, scale, dimension, beta, replace_one=replace_one)
        parameter = calibrate(
            kind,
            epsilon,
            delta=delta,
            honest_clients=honest_clients,
            sensitivity=sensitivity,
            dimension=dimension,
        )
        try:
            plan = plan_modulus(clients, dimension, clip, scale, parameter, kind, wrap_probability)
        except ModulusTooSmallError:
            return None
        return (parameter, plan) if plan.bits <= bits else None

    lo, hi = -20.0, 62.0
    best = plan_at(lo)
    if best is None:
        raise ModulusTooSmallError(
            f"{bits} bits cannot hold the sum of {clients} clients at any scale >= 2^-20"
        )
    while hi - lo > 1e-3:
        mid = 0.5 * (lo + hi)
        found = plan_at(mid)
        if found is None:
            hi = mid
        else:
            lo, best = mid, found
    return ScalePlan(scale=2.0**lo, parameter=best[0], modulus=best[1])
