"""Training rounds through SecAgg or SecAgg+ with integer noise (Kairouz, Liu & Steinke
2021, "The distributed discrete Gaussian mechanism for federated learning with secure
aggregation"; Agarwal, Kairouz & Liu 2021 for Skellam).

Each client scales its clipped update by s, rounds it, adds its integer noise share and
sums mod 2^b. The modulus bits b are the budget (``training.modulus_bits``); the scale
is the largest s = 2^f whose planned sum fits b bits with the wrap-around probability
below :data:`WRAP_PROBABILITY` — fewer bits force a coarser scale, whose rounding error
(√d per client, in the sensitivity Δ₂ = C·s + √d) then costs accuracy and privacy, which
is the papers' finding. Each client's share parameter (σ_i, or μ_i for Skellam) is the
smallest whose R rounds, each the papers' bound at the planned m − T − 1 honest shares
under Poisson sampling at q (Zhu & Wang 2019's subsampled RDP), compose to the target ε;
or the one a given noise multiplier z sets (total variance (z·C·s)² over the honest
shares).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import dp_accounting

from privsim.kit.intnoise.accounting import IntegerAccount, account, smallest_meeting
from privsim.kit.intnoise.dca import IntegerSetup
from privsim.kit.intnoise.modulus import (
    MAX_BITS,
    ModulusPlan,
    ModulusTooSmallError,
    plan_modulus,
)
from privsim.kit.intnoise.noise import IntegerNoise, NoiseKind, client_parameter
from privsim.kit.intnoise.rounding import Sensitivity, integer_sensitivity
from privsim.kit.secagg.noise import Noise
from privsim.scenarios.errors import FieldError
from privsim.sim.integer_bounds import DDG_MIN_SIGMA, IntegerShares
from privsim.sim.ledger import epsilon_of

__all__ = ["WRAP_PROBABILITY", "IntegerPlan", "check_clip_range", "integer_plan"]

#: Largest accepted probability that any coordinate of a round's sum wraps around.
WRAP_PROBABILITY = 1e-9
#: Scales s = 2^f tried, f from 0 to this.
MAX_FRACTION_BITS = 40
#: The planner's relative precision on the share parameter (erring towards more noise).
PARAMETER_TOLERANCE = 1e-3


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegerPlan:
    """The integer noise of every round: the scale 2^``fraction_bits``, the modulus
    ``bits``, each share's ``parameter``, the ``honest`` shares it is planned for, the
    sensitivity and the account of one round, and the modulus plan."""

    kind: NoiseKind
    fraction_bits: int
    beta: float
    bits: int
    parameter: float
    honest: int
    sensitivity: Sensitivity
    account: IntegerAccount
    modulus: ModulusPlan

    def noise(self) -> Noise:
        """The kit's noise plan for a SecAgg round."""
        return Noise(
            kind=self.kind, parameter=self.parameter, account=self.account, modulus=self.modulus
        )

    def setup(self, clip: float) -> IntegerSetup:
        """DCA's integer mechanism for a round (inputs clipped to ``clip``, scaled by
        2^f and conditionally rounded with β)."""
        return IntegerSetup(
            mechanism=IntegerNoise(
                kind=self.kind, scale=float(1 << self.fraction_bits), beta=self.beta
            ),
            parameter=self.parameter,
            account=self.account,
            modulus=self.modulus,
            bits=self.bits,
            clip=clip,
        )


def _rounds_epsilon(
    shares: IntegerShares, honest: int, rate: float, rounds: int, delta: float
) -> float:
    inner = shares.event(honest)
    event = inner if rate >= 1 else dp_accounting.PoissonSampledDpEvent(rate, inner)
    return epsilon_of([dp_accounting.SelfComposedDpEvent(event, rounds)], delta)


def _shares(
    kind: NoiseKind, parameter: float, sens: Sensitivity, d: int, delta: float
) -> IntegerShares:
    return IntegerShares(
        kind=kind, parameter=parameter, l1=sens.l1, l2=sens.l2, dimension=d, delta=delta
    )


def _calibrated(
    kind: NoiseKind,
    sens: Sensitivity,
    d: int,
    *,
    honest: int,
    rate: float,
    rounds: int,
    epsilon: float,
    delta: float,
) -> float:
    """The smallest share parameter (to :data:`PARAMETER_TOLERANCE`, erring up) whose
    rounds compose to at most ``epsilon`` (:func:`~privsim.kit.intnoise.accounting.
    smallest_meeting`: ε falls as the parameter grows)."""

    def meets(p: float) -> bool:
        return (
            _rounds_epsilon(_shares(kind, p, sens, d, delta), honest, rate, rounds, delta)
            <= epsilon
        )

    floor = DDG_MIN_SIGMA if kind == "discrete_gaussian" else 1e-6
    start = sens.l2 if kind == "discrete_gaussian" else sens.l2**2
    try:
        return smallest_meeting(
            meets, floor, relative_tolerance=PARAMETER_TOLERANCE, start=start, ceiling=1e12
        )
    except ValueError:
        raise FieldError(
            "privacy.epsilon",
            f"no integer noise meets ε = {epsilon:g} over {rounds} rounds",
            "raise privacy.epsilon or lower training.rounds",
        ) from None


def check_clip_range(clip: float, cohort_max: int) -> None:
    """Even unscaled (s = 1), the clipped sum of up to ``cohort_max`` clients must fit the
    widest modulus, 2^64: a larger C is beyond any ``training.modulus_bits`` and would
    overflow the planner's floats (C·s, squared) before any bound said so. A FieldError
    naming ``training.clip_norm`` (a narrower modulus too small for the sum is named by
    :func:`integer_plan`, with the bits it needs)."""
    reach = 2.0 ** (MAX_BITS - 1) - 1
    if not cohort_max * (clip + 1.0) <= reach:
        raise FieldError(
            "training.clip_norm",
            f"{clip:g}: a sum of {cohort_max} clients clipped to it can reach "
            f"{cohort_max * (clip + 1.0):.3g} even unscaled, beyond the range ±{reach:.3g} of "
            f"the widest modulus ({MAX_BITS} bits)",
            f"set training.clip_norm below {reach / cohort_max - 1.0:.3g} (the updates' "
            "norms are clipped to it)",
        )


@functools.lru_cache(maxsize=64)
def integer_plan(
    kind: NoiseKind,
    *,
    bits: int,
    clip: float,
    dimension: int,
    cohort_max: int,
    honest: int,
    rate: float,
    rounds: int,
    epsilon: float,
    delta: float,
    multiplier: float | None,
    beta: float = 0.0,
) -> IntegerPlan:
    """The largest scale 2^f (f ≤ :data:`MAX_FRACTION_BITS`) whose sum of up to
    ``cohort_max`` clients fits ``bits``, with its share parameter: calibrated to
    (ε, δ) over the rounds, or set by ``multiplier``. ``beta``: the rounding's β (0:
    plain rounding, as SecAgg's clients round; DCA's round conditionally). A FieldError naming
    ``training.modulus_bits`` when not even s = 1 fits."""

    def at(f: int) -> IntegerPlan:
        scale = float(1 << f)
        sens = integer_sensitivity(clip, scale, dimension, beta)
        if multiplier is None:
            parameter = _calibrated(
                kind,
                sens,
                dimension,
                honest=honest,
                rate=rate,
                rounds=rounds,
                epsilon=epsilon,
                delta=delta,
            )
        else:
            parameter = client_parameter(kind, (multiplier * clip * scale) ** 2, honest)
        modulus = plan_modulus(
            cohort_max, dimension, clip, scale, parameter, kind, WRAP_PROBABILITY
        )
        return IntegerPlan(
            kind=kind,
            fraction_bits=f,
            beta=beta,
            bits=bits,
            parameter=parameter,
            honest=honest,
            sensitivity=sens,
            account=account(
                kind,
                parameter,
                honest_clients=honest,
                sensitivity=sens,
                dimension=dimension,
                delta=delta,
            ),
            modulus=modulus,
        )

    check_clip_range(clip, cohort_max)

    def fits(f: int) -> IntegerPlan | None:
        """The plan at 2^f, None when its sum needs more than ``bits`` (or than a 64-bit
        word holds, or its floats overflow: a scale far too large)."""
        try:
            found = at(f)
        except (ModulusTooSmallError, OverflowError):
            return None
        return found if found.modulus.bits <= bits else None

    best = None
    lo, hi = 0, MAX_FRACTION_BITS  # the modulus needed grows with the scale: bisect on f
    while lo <= hi:
        f = (lo + hi) // 2
        found = fits(f)
        if found is not None:
            best, lo = found, f + 1
        else:
            hi = f - 1
    if best is None:
        try:
            need = at(0).modulus.bits
        except (ModulusTooSmallError, OverflowError):
            field = "training.noise_multiplier" if multiplier is not None else "privacy.epsilon"
            raise FieldError(
                field,
                f"a sum of {cohort_max} clients with this noise exceeds a 64-bit modulus "
                f"even unscaled (z = {multiplier!r}, C = {clip:g})",
                "lower training.noise_multiplier"
                if multiplier is not None
                else "raise privacy.epsilon (less noise) or lower training.rounds",
            ) from None
        raise FieldError(
            "training.modulus_bits",
            f"{bits} bits cannot hold a sum of {cohort_max} clients with their noise even "
            f"unscaled (it needs {need} bits for a wrap-around probability below "
            f"{WRAP_PROBABILITY:g})",
            f"set training.modulus_bits = {need} or more",
        )
    return best
