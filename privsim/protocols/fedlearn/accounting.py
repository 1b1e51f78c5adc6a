"""The privacy of iterative training: one ledger event per round, amplified by the
server's sampling while the server is honest, realised from the noise that actually
reached the sum; and the planner that calibrates the noise multiplier z.

Per round, with Δ the L2 sensitivity of the sum of clipped updates (C for add/remove-one
neighbours, 2C for replace-one) and z the planned multiplier (σ = z·Δ on the sum):

- ``dca``: each picked client adds a share of standard deviation σ_i = z·Δ/√(m − T − 1)
  (Heikkilä et al. 2017, Theorem 1, with m the planned cohort and T tolerated dropped or
  colluding clients); with H honest shares in the release the event is the Gaussian of
  multiplier √(H − 1)·σ_i/Δ (the ledger's :class:`~privsim.sim.ledger.NoiseShares`),
  holding while not every compute node colludes;
- ``trusted``: the curator adds N(0, σ²) to the sum (``central_noise = "sum"``: z
  whatever drops out) or noise of standard deviation z·Δ/m to the mean over the included
  k clients, which is z·Δ·k/m on the sum (``"mean"``, Flower's central DP: the realised
  multiplier is z·k/m), holding while the curator is honest;
- ``local``: each client adds N(0, σ²) itself; the server sees every noisy update, so
  no amplification by sampling is credited against it.

Each round's Gaussian is wrapped in the sampling event (Poisson: dp-accounting's
``PoissonSampledDpEvent(q, ·)``; a fixed cohort: ``SampledWithoutReplacementDpEvent``),
which holds only while the sample stays hidden: a colluding server (the sampler), or
with DCA a colluding compute node (each sees who sent it a share), gets the unamplified
event. DCA's shares under Poisson sampling are the exception: the target's own share is
in the release only when it is sampled, so a round is the exact pair of
:class:`~privsim.sim.share_pair.SampledSharesGaussianDpEvent` (:class:`RoundShape`).
The ledger composes the rounds (PLD, or RDP where dp-accounting has no PLD for the
event). :mod:`.plan` builds all of this once per run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dp_accounting

from privsim.kit.securesum.config import DcaConfig
from privsim.protocols.fedlearn.cohort import planned_cohort
from privsim.protocols.fedlearn.config import TrainingConfig
from privsim.protocols.fedlearn.integer import IntegerPlan, integer_plan
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger, coarse_epsilon_of, epsilon_of
from privsim.sim.sampling import Sampling
from privsim.sim.share_pair import SampledSharesGaussianDpEvent

__all__ = [
    "SERVER",
    "NoisePlan",
    "RoundShape",
    "calibrate_multiplier",
    "check_neighbour",
    "noise_plan",
    "round_label",
    "round_shape",
    "sampling_of",
    "sensitivity",
]

#: The model trainer: it samples the cohort and receives the noisy sum.
SERVER = "server"
#: Smallest and largest multiplier the planner searches.
Z_RANGE = (1e-3, 1e4)
#: The planner's relative precision on z (the answer errs on the side of more noise).
Z_TOLERANCE = 1e-4


def _training(scenario: Scenario) -> TrainingConfig:
    return scenario.table("training", TrainingConfig)


def sensitivity(scenario: Scenario) -> float:
    """Δ of the sum of updates clipped to C: C (add/remove-one), 2C (replace-one)."""
    c = _training(scenario).clip_norm
    return 2.0 * c if scenario.privacy.neighbour == "replace_one" else c


SECURE = ("secagg", "secagg_plus")


def integer_noise(scenario: Scenario) -> bool:
    """Whether the rounds add integer noise: through SecAgg(+), or through DCA with
    ``dca.noise`` set to an integer kind."""
    training = _training(scenario)
    if training.aggregation in SECURE:
        return True
    return (
        training.aggregation == "dca" and scenario.table("dca", DcaConfig).noise_kind != "gaussian"
    )


def check_neighbour(scenario: Scenario) -> None:
    """Poisson sampling is amplified for add/remove-one neighbours, a fixed-size cohort
    for replace-one (the relations dp-accounting's sampled events are defined for);
    integer noise through SecAgg is accounted under Poisson sampling only (Zhu & Wang's
    subsampled RDP; no bound here covers a fixed-size cohort)."""
    training, neighbour = _training(scenario), scenario.privacy.neighbour
    if integer_noise(scenario) and training.sampling != "poisson":
        raise FieldError(
            "training.sampling",
            f"rounds through {training.aggregation!r} with integer noise are accounted under "
            "Poisson sampling (Zhu & Wang's subsampled RDP); no bound here covers a "
            "fixed-size cohort",
            'set training.sampling = "poisson" (and privacy.neighbour = "add_remove"), with '
            f"training.rate = {training.cohort / scenario.population.clients:.4g} for the "
            f"expected cohort of {training.cohort}",
        )
    want = "add_remove" if training.sampling == "poisson" else "replace_one"
    words = {"add_remove": "add/remove-one", "replace_one": "replace-one"}
    if training.aggregation != "local" and neighbour != want:
        same = (
            f", with training.rate = {training.cohort / scenario.population.clients:.4g} for "
            f"the expected cohort of {training.cohort}"
            if want == "replace_one"
            else ""
        )
        raise FieldError(
            "privacy.neighbour",
            f"{training.sampling!r} sampling is accounted for {words[want]} neighbours, "
            f"not {words[neighbour]}",
            f'set privacy.neighbour = "{want}"'
            + (
                ', or training.sampling = "fixed"'
                if want == "add_remove"
                else ', or training.sampling = "poisson"' + same
            ),
        )


def sampling_of(scenario: Scenario, observers: Sequence[str] = ()) -> Sampling | None:
    """The sampling whose amplification a round is credited with (none for local DP),
    drawn by the server and seen by ``observers`` (DCA's compute nodes)."""
    training, n = _training(scenario), scenario.population.clients
    if training.aggregation == "local":
        return None
    if training.sampling == "poisson":
        return Sampling.poisson(training.rate, SERVER, observers)
    return Sampling.fixed(n, training.cohort, SERVER, observers)


def tolerated(scenario: Scenario) -> int:
    """T of the DCA noise scaling: ``dca.tolerated`` if set, else the expected dropped
    and colluding members of a planned cohort, ⌈m·(p_drop + colluders/N)⌉, plus, with
    Poisson sampling, two standard deviations of the cohort's size, 2·√(N·q·(1 − q)):
    a cohort that comes out smaller than planned carries fewer noise shares."""
    cfg = scenario.table("dca", DcaConfig)
    if cfg.tolerated:
        return cfg.tolerated
    training, n = _training(scenario), scenario.population.clients
    colluders = scenario.threat.colluding_clients
    share = (colluders if isinstance(colluders, int) else len(colluders)) / n
    expected = planned_cohort(training, n) * (training.expected_dropout + share)
    if training.sampling == "poisson":
        expected += 2.0 * math.sqrt(n * training.rate * (1.0 - training.rate))
    return math.ceil(expected - 1e-9)


@dataclass(frozen=True, slots=True, kw_only=True)
class NoisePlan:
    """The noise of every round: multiplier z (planned or given), σ = z·Δ on the sum,
    each DCA share's σ_i, T, the planned cohort m and whether the planner chose z."""

    multiplier: float
    sigma: float
    share_std: float
    tolerated: int
    cohort: float
    calibrated: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundShape:
    """How one round's planned DP event depends on the noise multiplier z: the
    Gaussian of multiplier ``factor``·z (``factor`` = 1 − p_drop for central noise on
    the mean: the realised multiplier the planner expects) under ``sampling``; or, for
    DCA's shares on a Poisson sample, the pair of multipliers s_out = ``out_factor``·z
    (the m − T − 1 other honest shares the plan counts on: √((needed − 1)/(m − T − 1))
    with m real) and s_in = ``share_ratio``·s_out (the target's own share added:
    √(needed/(needed − 1))) on ``dimension`` coordinates."""

    sampling: Sampling | None
    factor: float = 1.0
    share_ratio: float | None = None
    out_factor: float = 1.0
    dimension: int = 1

    def event(self, multiplier: float) -> dp_accounting.DpEvent:
        """The planned round at noise multiplier z = ``multiplier``."""
        if self.share_ratio is not None and self.sampling is not None:
            out = multiplier * self.out_factor
            return SampledSharesGaussianDpEvent(
                self.sampling.q, out * self.share_ratio, out, self.dimension
            )
        gaussian = dp_accounting.GaussianDpEvent(multiplier * self.factor)
        return self.sampling.wrap(gaussian) if self.sampling is not None else gaussian


def round_shape(
    scenario: Scenario,
    sampling: Sampling | None,
    cohort: float,
    tolerated_count: int,
    needed: int,
    dimension: int,
) -> RoundShape:
    """The :class:`RoundShape` of the scenario's rounds (``needed``: the planned honest
    shares of DCA, the target's own included)."""
    training = _training(scenario)
    if training.aggregation == "trusted" and training.central_noise == "mean":
        return RoundShape(sampling=sampling, factor=1.0 - training.expected_dropout)
    others = cohort - tolerated_count - 1  # m − T − 1, the plan's credited shares
    if (
        training.aggregation == "dca"
        and training.sampling == "poisson"
        and not integer_noise(scenario)
        and needed >= 2
        and others > 0
    ):
        return RoundShape(
            sampling=sampling,
            share_ratio=math.sqrt(needed / (needed - 1)),
            out_factor=math.sqrt((needed - 1) / others),
            dimension=dimension,
        )
    return RoundShape(sampling=sampling)


def _rounds_epsilon(multiplier: float, rounds: int, shape: RoundShape, delta: float) -> float:
    event = dp_accounting.SelfComposedDpEvent(shape.event(multiplier), rounds)
    return epsilon_of([event], delta)


def _coarse_rounds_epsilon(
    multiplier: float, rounds: int, shape: RoundShape, delta: float
) -> float:
    event = dp_accounting.SelfComposedDpEvent(shape.event(multiplier), rounds)
    return coarse_epsilon_of([event], delta, COARSE_INTERVAL)


#: The discretisation of the planner's first pass (:func:`calibrate_multiplier`): ten
#: times the ledger's finest, so each composition costs about a tenth.
COARSE_INTERVAL = 1e-3
#: The first pass's relative precision on z: its root is within about this of the
#: ledger's (the coarse ε exceeds the fine one by about R·10⁻³ absolute).
COARSE_TOLERANCE = 1e-3


@functools.lru_cache(maxsize=256)
def calibrate_multiplier(epsilon: float, delta: float, rounds: int, shape: RoundShape) -> float:
    """The smallest z (to a relative :data:`Z_TOLERANCE`, erring up) whose ``rounds``
    rounds, each ``shape.event(z)``, compose to at most ε at δ. Without sampling the
    composition is one Gaussian of multiplier factor·z/√R (Dong, Roth & Su 2019,
    Cor. 3.3), calibrated exactly. Otherwise, a root of g(u) = ln ε(e^u) − ln ε_target
    (ε falls as z grows) in two passes: first on a PLD ten times coarser than the
    ledger's (:data:`COARSE_INTERVAL`, to :data:`COARSE_TOLERANCE`), from a bracket
    found by doubling from z = 1; then on the ledger's own composition, from a bracket
    around the first pass's root that widens until it holds the root. Each pass runs
    the Illinois variant of regula falsi (g is nearly linear in u, so a handful of
    compositions suffice); the second pass usually needs two of the ledger's costly
    compositions, where one pass alone took seven to nine."""
    if shape.sampling is None:
        return gaussian_sigma(epsilon, delta, 1.0, "exact") * math.sqrt(rounds) / shape.factor

    def g_of(found: float) -> float:
        return math.log(found) - math.log(epsilon) if found > 0 else -math.inf

    def coarse(u: float) -> float:
        return g_of(_coarse_rounds_epsilon(math.exp(u), rounds, shape, delta))

    def fine(u: float) -> float:
        return g_of(_rounds_epsilon(math.exp(u), rounds, shape, delta))

    lo_z, hi_z = Z_RANGE
    u_lo = u_hi = 0.0
    g_lo = g_hi = coarse(0.0)
    while g_hi > 0:  # too little noise: double until the target is met
        u_lo, g_lo = u_hi, g_hi
        u_hi += math.log(2.0)
        if math.exp(u_hi) > hi_z:
            if fine(math.log(hi_z)) > 0:
                raise _unmet(epsilon, rounds)
            u_hi, g_hi = math.log(hi_z), -math.inf
            break
        g_hi = coarse(u_hi)
    while g_lo <= 0 and math.exp(u_lo) > lo_z:  # met already: halve until it is not
        u_hi, g_hi = u_lo, g_lo
        u_lo -= math.log(2.0)
        g_lo = coarse(u_lo)
    if g_lo <= 0 and fine(u_lo) <= 0:
        return math.exp(u_lo)
    if g_lo > 0:
        u_lo, u_hi = _illinois(coarse, u_lo, g_lo, u_hi, g_hi, COARSE_TOLERANCE)
    # The ledger's own composition, around the first pass's root u_hi: the coarse ε is
    # the larger, so its root is usually within Z_TOLERANCE above the ledger's.
    step = math.log1p(Z_TOLERANCE)
    root = u_hi
    g_root = fine(root)
    if g_root <= 0:  # met: widen downwards until it is not
        u_hi, g_hi = root, g_root
        u_lo = root - step
        g_lo = fine(u_lo)
        while g_lo <= 0:
            if math.exp(u_lo) <= lo_z:
                return math.exp(u_lo)
            step *= 8.0
            u_hi, g_hi = u_lo, g_lo
            u_lo = max(root - step, math.log(lo_z))
            g_lo = fine(u_lo)
    else:  # not met: widen upwards until it is
        u_lo, g_lo = root, g_root
        u_hi = root + step
        g_hi = fine(u_hi)
        while g_hi > 0:
            if math.exp(u_hi) >= hi_z:
                raise _unmet(epsilon, rounds)
            step *= 8.0
            u_lo, g_lo = u_hi, g_hi
            u_hi = min(root + step, math.log(hi_z))
            g_hi = fine(u_hi)
    return math.exp(_illinois(fine, u_lo, g_lo, u_hi, g_hi, Z_TOLERANCE)[1])


def _unmet(epsilon: float, rounds: int) -> FieldError:
    return FieldError(
        "privacy.epsilon",
        f"no noise multiplier up to {Z_RANGE[1]:g} meets ε = {epsilon:g} over {rounds} rounds",
        "raise privacy.epsilon or lower training.rounds",
    )


def _illinois(
    g: Callable[[float], float], u_lo: float, g_lo: float, u_hi: float, g_hi: float, tol: float
) -> tuple[float, float]:
    """Shrink a bracket [u_lo, u_hi] of a decreasing g (g(u_lo) > 0 ≥ g(u_hi)) to a
    relative width of ``tol`` in e^u by the Illinois variant of regula falsi (bisection
    while g(u_hi) is −∞); the bracket's ends."""
    side = 0
    while u_hi - u_lo > math.log1p(tol):
        u = (
            (u_lo * g_hi - u_hi * g_lo) / (g_hi - g_lo)
            if math.isfinite(g_hi)
            else 0.5 * (u_lo + u_hi)
        )
        u = min(max(u, u_lo + 0.01 * (u_hi - u_lo)), u_hi - 0.01 * (u_hi - u_lo))
        found = g(u)
        if found <= 0:
            u_hi, g_hi = u, found
            if side == -1:
                g_lo /= 2.0
            side = -1
        else:
            u_lo, g_lo = u, found
            if side == 1:
                g_hi /= 2.0
            side = 1
    return u_lo, u_hi


def noise_plan(scenario: Scenario, shape: RoundShape) -> NoisePlan:
    """The scenario's noise: z as given, or calibrated to ``privacy.epsilon`` over R
    rounds of ``shape`` at the planned T (the smallest z meeting the target)."""
    training, n = _training(scenario), scenario.population.clients
    m = planned_cohort(training, n)
    t = tolerated(scenario) if training.aggregation == "dca" else 0
    delta_l2 = sensitivity(scenario)
    honest_shares = m - t - 1
    if training.aggregation == "dca" and honest_shares < 1:
        raise FieldError(
            "dca.tolerated",
            f"a planned cohort of {m:g} with T = {t} leaves m − T − 1 = {honest_shares:g} "
            "honest noise shares (Theorem 1 needs m > T + 1)",
            "pick larger cohorts (training.rate or training.cohort) or lower dca.tolerated "
            "and training.expected_dropout",
        )
    calibrated = training.noise_multiplier is None
    if calibrated:
        z = calibrate_multiplier(
            scenario.privacy.epsilon, scenario.privacy.delta, training.rounds, shape
        )
    else:
        assert training.noise_multiplier is not None
        z = training.noise_multiplier
    sigma = z * delta_l2
    share = sigma / math.sqrt(honest_shares) if training.aggregation == "dca" else sigma
    return NoisePlan(
        multiplier=z, sigma=sigma, share_std=share, tolerated=t, cohort=m, calibrated=calibrated
    )


def secure_noise(scenario: Scenario, integer: IntegerPlan) -> NoisePlan:
    """The integer noise of SecAgg rounds in the terms of :class:`NoisePlan` (in units of
    the updates): each share's standard deviation (σ_i, or √(2μ_i) for Skellam) over the
    scale, the sum's over m − T − 1 shares, and the multiplier that is over Δ₂ (the
    rounded updates' sensitivity, which includes the rounding's √d)."""
    training, n = _training(scenario), scenario.population.clients
    scale = float(1 << integer.fraction_bits)
    per_share = (
        integer.parameter
        if integer.kind == "discrete_gaussian"
        else math.sqrt(2.0 * integer.parameter)
    )
    total = per_share * math.sqrt(integer.honest)
    return NoisePlan(
        multiplier=total / integer.sensitivity.l2,
        sigma=total / scale,
        share_std=per_share / scale,
        tolerated=tolerated(scenario),
        cohort=planned_cohort(training, n),
        calibrated=training.noise_multiplier is None,
    )


def round_label(r: int) -> str:
    """The ledger label of round r (counted from 1)."""
    return f"round-{r}"


def integer_of(scenario: Scenario, dimension: int) -> IntegerPlan:
    """The integer noise of SecAgg rounds on updates of ``dimension`` (:mod:`.integer`):
    planned for m − T − 1 honest shares of a cohort of up to m + 6√m clients."""
    training, n = _training(scenario), scenario.population.clients
    m = planned_cohort(training, n)
    honest = math.floor(m) - tolerated(scenario) - 1
    if honest < 1:
        raise FieldError(
            "training.rate",
            f"a planned cohort of {m:g} with T = {tolerated(scenario)} leaves no honest noise "
            "share (the integer noise needs m − T − 1 >= 1)",
            "pick larger cohorts or lower training.expected_dropout / dca.tolerated",
        )
    p = scenario.privacy
    dca = scenario.table("dca", DcaConfig)
    through_dca = training.aggregation == "dca"
    return integer_plan(
        dca.noise_kind if through_dca else training.integer_noise,  # type: ignore[arg-type]
        bits=training.modulus_bits,
        clip=training.clip_norm,
        dimension=dimension,
        cohort_max=math.ceil(m + 6.0 * math.sqrt(max(m, 1.0))),
        honest=honest,
        rate=training.rate,
        rounds=training.rounds,
        epsilon=p.epsilon,
        delta=p.delta,
        multiplier=training.noise_multiplier,
        beta=dca.beta if through_dca else 0.0,
    )


def ledger_of(scenario: Scenario) -> PrivacyLedger:
    """An empty ledger with the scenario's budget."""
    p = scenario.privacy
    return PrivacyLedger(p.epsilon, p.delta, on_overspend=p.on_overspend, neighbour=p.neighbour)
