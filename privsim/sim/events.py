"""DP events that dp-accounting has no class for, each saying what shape of mechanism it
is, and the privacy loss of every leaf event the ledger composes: its privacy loss
distribution (:func:`leaf_pld`), its Rényi-DP curve (:func:`leaf_rdp`) and its pure ε
(:func:`leaf_pure_epsilon`). The ledger composes by these and never by a stand-in that
lies under the mechanism's privacy loss.

Every pure ε-DP mechanism is not the same under composition: at one ε, Laplace's privacy
profile lies under the worst-case pair of an ε-DP mechanism (randomized response on two
outcomes, Kairouz, Oh & Viswanath 2015, Thm. 3.4), so composing an ε-DP mechanism of
unknown shape *as Laplace* understates the composed ε. Hence:

- :class:`GenericPureDpEvent`: any ε-DP mechanism (randomized response, coins whose
  probabilities are within e^ε of each other, a mechanism of unknown shape). Composes as
  the worst-case (ε, 0) pair.
- :class:`BoundedRangeDpEvent`: the exponential mechanism with an ε-bounded-range score
  (McSherry & Talwar 2007; Durfee & Rogers 2019), ε²/8-zCDP (Cesar & Rogers 2021).
- :class:`ApproximateDpEvent`: any (ε, δ)-DP mechanism of unknown shape. Composes as the
  worst-case (ε, δ) pair.
- :class:`IntegerNoiseDpEvent`: one release of integer noise summed from honest shares
  (distributed discrete Gaussian or Skellam), composed by the papers' Rényi-DP curve.
  It is defined beside its bound in :mod:`privsim.sim.integer_bounds` (a module of
  plain numbers that this one builds on) and re-exported here.

Sampled releases are dp-accounting's own wrappers, made by
:class:`~privsim.sim.sampling.Sampling`:

- ``PoissonSampledDpEvent(q, e)`` (add/remove-one neighbours) around a Gaussian or
  Laplace event: the PLD dp-accounting's accountant builds (:func:`_sampled_pld`),
  and the RDP curve of the binomial expansion (Gaussian, :func:`poisson_gaussian_rdp`)
  or of Zhu & Wang's general bound (Laplace); around integer noise, Zhu & Wang's bound
  on the papers' curve (:func:`~privsim.sim.integer_bounds.poisson_subsampled_rdp`),
  which has no PLD;
- ``SampledWithoutReplacementDpEvent(n, m, e)`` (replace-one neighbours) around a
  Gaussian: the dominating pair of Zhu, Dong & Wang's two-part bound (2022, Prop. 30),
  built from the remove direction of the Poisson-sampled Gaussian's PLD at q = m/n and
  mirrored (:mod:`privsim.sim.wor_pld`: dp-accounting's Poisson PLD as it stands, which
  composes each direction with itself, is not a bound here), and dp-accounting's RDP
  curve (Wang, Balle & Kasiviswanathan 2019, Theorem 27) as a cross-check.

Any other wrapped event is refused (:func:`check_sampled`). The inner event's multiplier
is σ over the sensitivity under the sampling's own relation.

The classes are attrs-frozen like dp-accounting's own events, so they nest inside its
``ComposedDpEvent`` and ``SelfComposedDpEvent``.

Why a dominating pair composes soundly: a pair (P, Q) whose hockey-stick divergence is at
least a mechanism's at every e^ε′ dominates it, and the composition of dominating pairs
dominates the (adaptive) composition of the mechanisms (Zhu, Dong & Wang 2022, Thm. 10);
the PLD of the composed pairs is what dp-accounting evaluates.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any, Literal, TypeAlias

import attr
import dp_accounting
import numpy as np
import numpy.typing as npt
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_module
from dp_accounting.pld.common import DifferentialPrivacyParameters
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution as PLD
from dp_accounting.rdp import rdp_privacy_accountant as rdp_module

from privsim.sim import pld_loops, pld_tails, sampled_pld, wor_pld
from privsim.sim.integer_bounds import (
    SUBSAMPLED_MAX_ORDER,
    IntegerNoiseDpEvent,
    interpolate_rdp,
    log_binomials,
    poisson_subsampled_rdp,
)
from privsim.sim.share_pair import SampledSharesGaussianDpEvent, shares_pair_pld

pld_tails.install()
pld_loops.install()

__all__ = [
    "MAX_PLD_EPSILON",
    "MAX_PLD_INTERVAL",
    "PLD_INTERVAL",
    "SAMPLED_FINE_LEAVES",
    "WOR_INTEGER_ORDERS",
    "ApproximateDpEvent",
    "BoundedRangeDpEvent",
    "GenericPureDpEvent",
    "IntegerNoiseDpEvent",
    "Neighbour",
    "bounded_range_rdp",
    "check_sampled",
    "composes_by_rdp",
    "generic_pld",
    "generic_pure_rdp",
    "is_no_op",
    "is_non_private",
    "is_sampled",
    "laplace_rdp",
    "leaf_pld",
    "leaf_pure_epsilon",
    "leaf_rdp",
    "pld_interval",
    "poisson_gaussian_rdp",
    "randomized_response_epsilon",
    "sampled_pld_interval",
    "sampling_probability",
]

F64 = npt.NDArray[np.float64]
#: The neighbouring relation of a scenario (``privacy.neighbour``).
Neighbour = Literal["replace_one", "add_remove"]

#: dp-accounting's discretisation of the privacy loss (its accountant's default).
PLD_INTERVAL = 1e-4
#: Largest ε of a pair that the PLD can hold (e^ε overflows a float beyond ~709); a
#: composition that holds a larger one is reported as ε = ∞ (never below the truth).
MAX_PLD_EPSILON = 700.0
#: Distinct Poisson-sampled leaves a composition builds at :data:`PLD_INTERVAL`. Building
#: one such PLD takes about 0.3 s at that interval (dp-accounting evaluates the sampled
#: privacy loss point by point: 70 s for 200 leaves), and rounds whose dropouts differ
#: are distinct leaves; with more of them the interval grows with their number
#: (:func:`pld_interval`), so a composition builds at most about as many points as eight
#: fine leaves. 200 distinct rounds (q = 120/3383, z = 1.2·√0.6 … 1.2) at 6.4·10⁻³: about
#: 1.5 s unloaded, ε 3.0360 against 3.0324 at 10⁻⁴ (+0.12%). The discretisation is
#: pessimistic, so every interval gives an upper bound; only its tightness changes.
SAMPLED_FINE_LEAVES = 4
#: The coarsest interval :func:`pld_interval` picks (the 200 rounds above: ε +0.3% at
#: 10⁻²); beyond about 400 distinct sampled leaves the work grows linearly.
MAX_PLD_INTERVAL = 1e-2

#: Counts up to which a pair's PLD is composed with itself one round at a time:
#: dp-accounting's ``self_compose`` first bounds the result's support by Chernoff
#: bounds at 40 orders (as costly as a few compositions); both are valid bounds.
SMALL_COUNT = 4

#: A release on a random sample (dp-accounting's two wrappers the ledger accounts).
Sampled: TypeAlias = (
    dp_accounting.PoissonSampledDpEvent | dp_accounting.SampledWithoutReplacementDpEvent
)


def _epsilon_check(_: Any, attribute: attr.Attribute[float], value: float) -> None:
    if not value >= 0:  # also refuses NaN
        raise ValueError(f"{attribute.name} must be >= 0 (inf: non-private), got {value}")


def _delta_check(_: Any, attribute: attr.Attribute[float], value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value}")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class GenericPureDpEvent(dp_accounting.DpEvent):
    """An ε-DP mechanism of no known shape: composes as the worst-case (ε, 0) pair."""

    epsilon: float = attr.ib(validator=_epsilon_check)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class BoundedRangeDpEvent(dp_accounting.DpEvent):
    """The exponential mechanism at ε (its score's range bounded by ε): ε-DP, and
    ε-bounded-range, which composes more tightly than a generic ε-DP mechanism."""

    epsilon: float = attr.ib(validator=_epsilon_check)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ApproximateDpEvent(dp_accounting.DpEvent):
    """An (ε, δ)-DP mechanism of no known shape: composes as the worst-case (ε, δ) pair."""

    epsilon: float = attr.ib(validator=_epsilon_check)
    delta: float = attr.ib(validator=_delta_check)


def randomized_response_epsilon(event: dp_accounting.RandomizedResponseDpEvent) -> float:
    """ε = ln(1 + (1 − p)·k/p) of k-ary randomized response with noise parameter p: the
    largest ratio (1 − p + p/k)/(p/k) of the probabilities of one output under two
    inputs (∞ for p = 0, 0 for k = 1 or p = 1)."""
    p, k = event.noise_parameter, event.num_buckets
    if not 0 <= p <= 1 or k < 1:
        raise ValueError(f"randomized response needs p in [0, 1] and k >= 1, got {p}, {k}")
    if k == 1:
        return 0.0
    return math.inf if p == 0 else math.log1p((1.0 - p) * k / p)


def leaf_pure_epsilon(leaf: dp_accounting.DpEvent) -> float | None:
    """ε of a pure ε-DP leaf (Laplace with noise multiplier b/Δ: ε = Δ/b; a generic or
    bounded-range ε; an (ε, 0) event; randomized response), or None."""
    if isinstance(leaf, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(leaf, dp_accounting.LaplaceDpEvent):
        return math.inf if leaf.noise_multiplier <= 0 else 1.0 / leaf.noise_multiplier
    if isinstance(leaf, GenericPureDpEvent | BoundedRangeDpEvent):
        return float(leaf.epsilon)
    if isinstance(leaf, ApproximateDpEvent):
        return float(leaf.epsilon) if leaf.delta == 0 else None
    if isinstance(leaf, dp_accounting.RandomizedResponseDpEvent):
        return randomized_response_epsilon(leaf)
    return None


def is_non_private(leaf: dp_accounting.DpEvent) -> bool:
    """A leaf that protects nobody: non-private, no noise, an infinite ε or δ = 1, or a
    sample (of rate > 0) that such a leaf is run on (whoever is sampled is exposed)."""
    if isinstance(leaf, Sampled):
        return sampling_probability(leaf) > 0 and is_non_private(leaf.event)
    if isinstance(leaf, dp_accounting.NonPrivateDpEvent):
        return True
    if isinstance(leaf, dp_accounting.GaussianDpEvent):  # and integer noise
        return not leaf.noise_multiplier > 0
    if isinstance(leaf, ApproximateDpEvent) and leaf.delta >= 1:
        return True
    pure = leaf_pure_epsilon(leaf)
    return pure is not None and math.isinf(pure)


def is_no_op(leaf: dp_accounting.DpEvent) -> bool:
    """A leaf that costs nothing: no-op, ε = 0 pure, infinite noise, or a sample that
    is empty (rate 0) or that such a leaf is run on."""
    if isinstance(leaf, Sampled):
        return sampling_probability(leaf) == 0 or is_no_op(leaf.event)
    if isinstance(leaf, dp_accounting.NoOpDpEvent):
        return True
    if type(leaf) is dp_accounting.GaussianDpEvent:
        return math.isinf(leaf.noise_multiplier)
    if isinstance(leaf, ApproximateDpEvent):
        return leaf.epsilon == 0 and leaf.delta == 0
    return leaf_pure_epsilon(leaf) == 0.0


# --- sampled releases ------------------------------------------------------------------


def is_sampled(leaf: dp_accounting.DpEvent) -> bool:
    """A release on a random sample: Poisson, or a fixed size without replacement."""
    return isinstance(leaf, Sampled)


def sampling_probability(leaf: Sampled) -> float:
    """q of a sampled release: the Poisson rate, or m/n without replacement."""
    if isinstance(leaf, dp_accounting.PoissonSampledDpEvent):
        return float(leaf.sampling_probability)
    if leaf.source_dataset_size <= 0:
        raise ValueError(f"{leaf!r}: the population must be >= 1")
    return leaf.sample_size / leaf.source_dataset_size


def check_sampled(leaf: Sampled) -> None:
    """Refuse (TypeError) a sampled release the ledger cannot account: Poisson sampling
    around anything but a Gaussian, Laplace or integer-noise event; sampling without
    replacement around anything but a Gaussian; a rate outside [0, 1]."""
    q = sampling_probability(leaf)
    if not 0 <= q <= 1:
        raise ValueError(f"{leaf!r}: the sampling probability must be in [0, 1], got {q}")
    inner = leaf.event
    if isinstance(leaf, dp_accounting.PoissonSampledDpEvent):
        if isinstance(inner, dp_accounting.GaussianDpEvent | dp_accounting.LaplaceDpEvent):
            return  # Gaussian, integer noise (a Gaussian subclass) and Laplace
        raise TypeError(
            f"cannot account {leaf!r}: Poisson sampling is accounted around a Gaussian, "
            "Laplace or integer-noise event only; charge the release unsampled (no "
            "amplification) or as ApproximateDpEvent(ε, δ)"
        )
    if type(inner) is not dp_accounting.GaussianDpEvent:
        raise TypeError(
            f"cannot account {leaf!r}: sampling without replacement is accounted around a "
            "Gaussian event only; charge the release unsampled (no amplification), or "
            "sample by Poisson"
        )


def composes_by_rdp(leaf: dp_accounting.DpEvent) -> bool:
    """A leaf with an RDP curve and no PLD: integer noise, sampled or not. (A Gaussian
    sampled without replacement has both: :func:`leaf_pld`.)"""
    if isinstance(leaf, dp_accounting.PoissonSampledDpEvent):
        leaf = leaf.event
    return isinstance(leaf, IntegerNoiseDpEvent)


def pld_interval(leaves: Iterable[tuple[dp_accounting.DpEvent, int]]) -> float:
    """The discretisation interval of a composition's PLD: :data:`PLD_INTERVAL` for up to
    :data:`SAMPLED_FINE_LEAVES` distinct sampled leaves (Poisson, a sample of the target's
    own share, or without replacement: each built from a sampled PLD), doubled each time
    their number doubles beyond that (so a ledger's successive charges keep one interval
    for long, and its cached leaves with it), at most :data:`MAX_PLD_INTERVAL`."""
    sampled = sum(
        1 for leaf, _ in leaves if isinstance(leaf, Sampled | SampledSharesGaussianDpEvent)
    )
    return sampled_pld_interval(sampled)


def sampled_pld_interval(sampled: int) -> float:
    """:func:`pld_interval` for ``sampled`` distinct sampled leaves."""
    if sampled <= SAMPLED_FINE_LEAVES:
        return PLD_INTERVAL
    doublings = math.ceil(math.log2(sampled / SAMPLED_FINE_LEAVES))
    return min(PLD_INTERVAL * 2.0**doublings, MAX_PLD_INTERVAL)


def poisson_gaussian_rdp(q: float, noise_multiplier: float, max_order: int) -> F64:
    """ε(α) for α = 2 … ``max_order`` of the Gaussian of multiplier z on a Poisson sample
    at rate q (add/remove-one): the binomial expansion of Mironov, Talwar & Zhang (2019,
    Sec. 3.3) for integer α, exact,

        A_α = Σ_{k=0}^{α} C(α, k)·(1 − q)^{α−k}·q^k·exp((k² − k)/(2z²)),  ε(α) = log A_α/(α − 1),

    summed in log space (all terms positive: no cancellation). dp-accounting computes
    the same sum order by order in Python; this is one array operation."""
    alpha = np.arange(2, max_order + 1, dtype=np.float64)
    if q >= 1:
        return np.asarray(alpha / (2.0 * noise_multiplier**2), dtype=np.float64)
    k = np.arange(max_order + 1, dtype=np.float64)
    log_c = log_binomials(max_order)[2:]
    with np.errstate(invalid="ignore"):  # (α − k)·log(1 − q) for k > α: masked below
        terms = (
            log_c
            + (alpha[:, None] - k[None, :]) * math.log1p(-q)
            + k[None, :] * math.log(q)
            + ((k * k - k) / (2.0 * noise_multiplier**2))[None, :]
        )
    terms = np.where(k[None, :] <= alpha[:, None], terms, -math.inf)
    return np.asarray(np.logaddexp.reduce(terms, axis=1) / (alpha - 1.0), dtype=np.float64)


#: Integer orders at which dp-accounting's bound for sampling without replacement is
#: evaluated: its own default integer orders to 256 (each order costs O(α²) Python
#: steps: all 255 integers take 4 s per event, these 0.15 s); the orders between them by
#: the cumulant's chords (:func:`~privsim.sim.integer_bounds.interpolate_rdp`), which is
#: also how dp-accounting fills its fractional orders.
WOR_INTEGER_ORDERS: tuple[int, ...] = (*range(2, 65), 128, 256)


def wor_gaussian_rdp(q: float, noise_multiplier: float, orders: F64) -> F64:
    """dp-accounting's ``_compute_rdp_sample_wor_gaussian`` (Wang, Balle &
    Kasiviswanathan 2019, Theorem 27) at integer orders 2 … 256, bit for bit, with the
    forward differences of exp(cgf) computed once for the largest order
    (:func:`~privsim.sim.pld_loops.forward_diffs`, a pass at a time) and read by every
    order: dp-accounting recomputes them per order, O(α²) Python steps each, from the
    same values by the same steps (the differences at 0 up to order α read only the
    first α + 2 values), so each order's prefix is the same. Any other order or q
    outside (0, 1): the library's own function."""
    grid = np.asarray(orders, dtype=np.float64)
    if (
        not 0 < q < 1
        or grid.size == 0
        or np.any((grid != np.floor(grid)) | (grid < 2) | (grid > 256))
    ):
        return np.asarray(
            rdp_module._compute_rdp_sample_wor_gaussian(q, noise_multiplier, grid), dtype=np.float64
        )
    sigma = noise_multiplier

    def cgf(x: float) -> float:
        return x * 1.0 * (x + 1) / (2.0 * sigma**2)

    def func(x: float) -> float:
        return 1.0 * x / (2.0 * sigma**2)

    deltas, _ = pld_loops.forward_diffs(cgf, int(grid.max()))
    log_f2m1 = func(2.0) + math.log1p(-np.exp(-func(2.0)))
    out = []
    for order in grid:
        alpha = int(order)
        log_a: float = 0
        for i in range(2, alpha + 1):
            if i == 2:
                s = (
                    2 * np.log(q)
                    + rdp_module._log_comb(alpha, 2)
                    + np.minimum(np.log(4) + log_f2m1, func(2.0) + np.log(2))
                )
            else:
                delta_lo = deltas[int(2 * np.floor(i / 2.0)) - 1]
                delta_hi = deltas[int(2 * np.ceil(i / 2.0)) - 1]
                s = np.log(4) + 0.5 * (delta_lo + delta_hi)
                s = np.minimum(s, np.log(2) + cgf(i - 1))
                s += i * np.log(q) + rdp_module._log_comb(alpha, i)
            log_a = rdp_module._log_add(log_a, s)
        out.append(float(log_a) / (order - 1))
    return np.array(out, dtype=np.float64)


@functools.lru_cache(maxsize=1024)
def _sampled_curve(leaf: Sampled) -> tuple[F64, F64]:
    """(integer orders, ε(α) there) of a sampled leaf with 0 < q < 1, cached per leaf (a
    ledger asks again per charge and per coalition). Never above the unsampled curve."""
    q, inner = sampling_probability(leaf), leaf.event
    if isinstance(leaf, dp_accounting.SampledWithoutReplacementDpEvent):
        grid = np.asarray(WOR_INTEGER_ORDERS, dtype=np.float64)
        z = inner.noise_multiplier
        values = wor_gaussian_rdp(q, z, grid)
        values = np.minimum(np.asarray(values, dtype=np.float64), grid / (2.0 * z**2))
    elif type(inner) is dp_accounting.GaussianDpEvent:
        grid = np.arange(2, SUBSAMPLED_MAX_ORDER + 1, dtype=np.float64)
        z = inner.noise_multiplier
        values = np.minimum(poisson_gaussian_rdp(q, z, SUBSAMPLED_MAX_ORDER), grid / (2.0 * z**2))
    else:  # integer noise or Laplace: Zhu & Wang's general bound on its own curve
        grid = np.arange(2, SUBSAMPLED_MAX_ORDER + 1, dtype=np.float64)
        base = leaf_rdp(inner, grid, "add_remove")
        if base is None:  # pragma: no cover - check_sampled admits only curves
            raise TypeError(f"{leaf!r}: the sampled event has no RDP curve")
        values = poisson_subsampled_rdp(base, q, grid)
    grid.flags.writeable = False
    values.flags.writeable = False
    return grid, values


def _sampled_rdp(leaf: Sampled, orders: F64) -> F64:
    """D_α over ``orders`` of a sampled leaf: its curve at the integer orders of
    :func:`_sampled_curve`, between them by the cumulant's chords, and the unsampled
    curve where that is smaller or above the largest integer order (sampling never
    raises a Rényi divergence)."""
    check_sampled(leaf)
    base = leaf_rdp(leaf.event, orders, "add_remove")
    if base is None:  # pragma: no cover - check_sampled admits only curves
        raise TypeError(f"{leaf!r}: the sampled event has no RDP curve")
    if sampling_probability(leaf) >= 1:
        return base
    grid, values = _sampled_curve(leaf)
    return np.asarray(np.minimum(interpolate_rdp(grid, values, orders), base), dtype=np.float64)


# --- privacy loss distributions --------------------------------------------------------


def generic_pld(epsilon: float, delta: float = 0.0, interval: float = PLD_INTERVAL) -> PLD:
    """The worst-case pair of every (ε, δ)-DP mechanism (Kairouz, Oh & Viswanath 2015,
    Thm. 3.4): privacy loss ∞ w.p. δ, ±ε w.p. (1 − δ)/(1 + e^∓ε)."""
    return pld_module.from_privacy_parameters(
        DifferentialPrivacyParameters(epsilon, delta), value_discretization_interval=interval
    )


def _randomized_response_pld(
    event: dp_accounting.RandomizedResponseDpEvent, neighbour: Neighbour, interval: float
) -> PLD:
    """Replace-one: the exact pair (RR(x), RR(x′)). Add/remove-one: the generic (ε, 0)
    pair at ε = ln(1 + (1 − p)k/p). A removed record must still leave a report, or the
    number of reports gives it away; reading it as RR of a placeholder input, fixed or
    random (dp-accounting's REPLACE_SPECIAL), the placeholder's report is a mixture of
    RR(v) over inputs v, so every ratio RR(x)(o)/Σ_v w_v·RR(v)(o) lies within
    [e^−ε, e^ε]: the pair is ε-DP, and the generic pair dominates it."""
    if neighbour == "replace_one":
        return pld_module.from_randomized_response(
            noise_parameter=event.noise_parameter,
            num_buckets=event.num_buckets,
            value_discretization_interval=interval,
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        )
    return generic_pld(randomized_response_epsilon(event), interval=interval)


def _accountant_pld(leaf: dp_accounting.DpEvent, count: int, interval: float = PLD_INTERVAL) -> PLD:
    """Another dp-accounting event (discrete Laplace, ...): the PLD its
    own accountant builds (add/remove-one; sensitivity folded into the event), read from
    the accountant, which has no public accessor for it."""
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    accountant.compose(leaf, count)
    pld: PLD | None = getattr(accountant, "_pld", None)
    if pld is None:  # pragma: no cover - a dp-accounting release without the attribute
        raise TypeError(f"cannot compose {leaf!r}: record it as ApproximateDpEvent(ε, δ)")
    return pld


def _sampled_pld(leaf: dp_accounting.PoissonSampledDpEvent, count: int, interval: float) -> PLD:
    """``count`` compositions of a Poisson-sampled Gaussian or Laplace leaf: the PLD
    dp-accounting's accountant builds for it (:func:`_sampled_base_pld`), self-composed
    by ``count`` in one step, as the accountant does, except that a count of 1 skips the
    self-composition: the accountant's ``self_compose(1)`` alone costs about as much as
    the construction (its truncation bounds are computed point by point), and only
    moves tail mass of 10⁻¹⁵ to ∞ (ε differs by 2·10⁻¹¹ relative; both are upper
    bounds, the construction being pessimistic)."""
    base = _sampled_base_pld(leaf, interval)
    return base if count == 1 else base.self_compose(count)


def _sampled_base_pld(leaf: dp_accounting.PoissonSampledDpEvent, interval: float) -> PLD:
    """One Poisson-sampled Gaussian or Laplace leaf's PLD as dp-accounting's accountant
    builds it: ``from_gaussian_mechanism`` or ``from_laplace_mechanism`` with
    ``sampling_prob`` = q (add/remove-one). Cached (:data:`_fine_plds`,
    :data:`_coarse_plds`): building is the slow step, and a ledger asks for the same
    rounds per charge and per coalition, with counts that grow (the self-composition is
    cheap: 0.04 s for 100 rounds at 10⁻⁴)."""
    cache = _fine_plds if interval < 1e-3 else _coarse_plds
    return cache(leaf, interval)


#: dp-accounting's Gaussian PLD spans the privacy loss over ±this many standard
#: deviations (its tail truncation at 1e-15, rounded up).
GAUSSIAN_TAIL_SIGMAS = 9.0


def check_gaussian_span(noise_multiplier: float) -> None:
    """The privacy loss of a Gaussian of multiplier m spans about 2t/m + 1/m² over ±t
    standard deviations: past 2·:data:`MAX_PLD_EPSILON` (m below about 0.03) the PLD's
    grid would take gigabytes, and every ε it could give is beyond a PLD's anyway, so an
    OverflowError (the caller's ∞, or its RDP figure where it has one)."""
    m, t = noise_multiplier, GAUSSIAN_TAIL_SIGMAS
    if not m > 0 or 2 * t / m + 1 / m**2 > 2 * MAX_PLD_EPSILON:
        raise OverflowError(f"a Gaussian of multiplier {m:g} is beyond a PLD")


def _build_sampled_pld(leaf: dp_accounting.PoissonSampledDpEvent, interval: float) -> PLD:
    """The construction behind :func:`_sampled_base_pld`, uncached: dp-accounting's
    ``from_laplace_mechanism`` / ``from_gaussian_mechanism`` with ``sampling_prob`` = q,
    evaluated on the whole grid at once (:mod:`privsim.sim.sampled_pld`: the same PLD to
    rounding, milliseconds instead of about a second at 10⁻⁴)."""
    q, inner = leaf.sampling_probability, leaf.event
    if isinstance(inner, dp_accounting.LaplaceDpEvent):
        return sampled_pld.sampled_laplace_pld(inner.noise_multiplier, q, interval)
    check_gaussian_span(inner.noise_multiplier)
    return sampled_pld.sampled_gaussian_pld(inner.noise_multiplier, q, interval)


#: Cached sampled PLDs finer than 10⁻³: about 1.2 MB each at 10⁻⁴ (8·10⁴ points per
#: direction), so few are kept.
_fine_plds = functools.lru_cache(maxsize=32)(_build_sampled_pld)
#: Cached sampled PLDs at 10⁻³ and coarser (:func:`pld_interval` picks 1.6·10⁻³ or
#: coarser there: at most about 0.08 MB each): enough for the distinct rounds of a long
#: training run.
_coarse_plds = functools.lru_cache(maxsize=512)(_build_sampled_pld)


def _wor_pld(
    leaf: dp_accounting.SampledWithoutReplacementDpEvent, count: int, interval: float
) -> PLD:
    """``count`` compositions of a Gaussian on m of n drawn without replacement
    (replace-one): the dominating pair of Zhu, Dong & Wang's two-part bound
    (:func:`~privsim.sim.wor_pld.replace_one_pld`), cached per (m/n, z, interval),
    self-composed by ``count``; a sample of everyone (m = n) is the Gaussian itself."""
    q, inner = sampling_probability(leaf), leaf.event
    if q >= 1:
        return leaf_pld(inner, count, "replace_one", interval)
    cache = _fine_wor_plds if interval < 1e-3 else _coarse_wor_plds
    base = cache(q, inner.noise_multiplier, interval)
    return base if count == 1 else base.self_compose(count)


def _build_wor_pld(q: float, noise_multiplier: float, interval: float) -> PLD:
    """The construction behind :func:`_wor_pld`, uncached: the remove direction of the
    Poisson-sampled Gaussian's PLD at rate q (:func:`_sampled_base_pld`, which is cached
    and fast, so both are built once), mirrored into the symmetric dominating pair."""
    inner = dp_accounting.GaussianDpEvent(noise_multiplier)
    poisson = _sampled_base_pld(dp_accounting.PoissonSampledDpEvent(q, inner), interval)
    return wor_pld.replace_one_pld(poisson)


#: Cached pairs for sampling without replacement, as :data:`_fine_plds` and
#: :data:`_coarse_plds` are: one symmetric pmf over twice the remove direction's loss
#: range, so about as large as a Poisson PLD's two directions (0.9 MB at q = 53/2000,
#: z = 1.1, 10⁻⁴; 2.4 MB at q = 0.01, z = 0.55).
_fine_wor_plds = functools.lru_cache(maxsize=16)(_build_wor_pld)
_coarse_wor_plds = functools.lru_cache(maxsize=512)(_build_wor_pld)


def leaf_pld(
    leaf: dp_accounting.DpEvent,
    count: int,
    neighbour: Neighbour,
    interval: float = PLD_INTERVAL,
) -> PLD:
    """The PLD of ``count`` compositions of a private, non-trivial ``leaf``:

    - Gaussian (σ/Δ = m): the Gaussian of multiplier m/√count (exact, Dong, Roth & Su
      2019, Cor. 3.3);
    - Laplace: its own pair, self-composed;
    - generic pure ε and (ε, δ): the worst-case pair (:func:`generic_pld`);
    - bounded range ε: the Laplace pair at ε (b/Δ = 1/ε). An ε-BR pair has privacy loss
      in [−tε, (1 − t)ε] for some t ∈ [0, 1] (Durfee & Rogers 2019), and by convexity
      the two-point pair at the ends is its worst case; Laplace's profile
      1 − e^{(ε′ − ε)/2} lies above the sup over t of those pairs' (checked for ε from
      0.01 to 3 in tests/sim/test_ledger_composition.py, and from 10⁻⁴ to 50 when this
      was written: at ε′ = 0, tanh(ε/4) against 1 − e^{−ε/2}), so it dominates. The ledger
      takes the smaller of this and the RDP composition with ε²/8-zCDP (:func:`leaf_rdp`);
    - randomized response: :func:`_randomized_response_pld`;
    - Poisson-sampled Gaussian or Laplace: the PLD dp-accounting's accountant builds
      (add/remove-one), self-composed by ``count`` in one step, cached per leaf
      (:func:`_sampled_pld`);
    - Gaussian sampled without replacement (replace-one): the symmetric dominating pair
      of Zhu, Dong & Wang's bound (2022, Prop. 30), mirrored from the remove direction
      of the Poisson-sampled Gaussian at q = m/n (:func:`_wor_pld`,
      :mod:`privsim.sim.wor_pld`), self-composed; the ledger takes the smaller of its
      composition and the RDP one;
    - a Poisson-sampled release with the target's own noise share
      (:class:`~privsim.sim.share_pair.SampledSharesGaussianDpEvent`): its exact pair's
      pessimistic PLD (:func:`~privsim.sim.share_pair.shares_pair_pld`), composed with
      itself round by round up to :data:`SMALL_COUNT`;
    - any other dp-accounting event: its own accountant's PLD.

    ``interval``: the discretisation, :data:`PLD_INTERVAL` unless the composition holds
    many sampled leaves (:func:`pld_interval`). Integer noise, sampled or not, has no PLD
    here (TypeError): it composes by RDP.
    """
    if isinstance(leaf, SampledSharesGaussianDpEvent):
        check_gaussian_span(leaf.multiplier_out)
        base = shares_pair_pld(leaf, interval)
        if count > SMALL_COUNT:
            return base.self_compose(count)
        composed = base
        for _ in range(count - 1):  # a few rounds: cheaper than self_compose's bounds
            composed = composed.compose(base)
        return composed
    pure = leaf_pure_epsilon(leaf)
    if pure is not None and pure > MAX_PLD_EPSILON:
        raise OverflowError(f"{leaf!r}: ε = {pure:g} is beyond a PLD")
    if composes_by_rdp(leaf):
        raise TypeError(f"{leaf!r} composes by its RDP curve, not by a PLD")
    if isinstance(leaf, dp_accounting.SampledWithoutReplacementDpEvent):
        check_sampled(leaf)
        return _wor_pld(leaf, count, interval)
    if isinstance(leaf, dp_accounting.PoissonSampledDpEvent):
        check_sampled(leaf)
        return _sampled_pld(leaf, count, interval)
    if isinstance(leaf, dp_accounting.GaussianDpEvent):
        check_gaussian_span(leaf.noise_multiplier / math.sqrt(count))
        return pld_module.from_gaussian_mechanism(
            standard_deviation=leaf.noise_multiplier / math.sqrt(count),
            value_discretization_interval=interval,
        )
    if isinstance(leaf, dp_accounting.LaplaceDpEvent):
        base = pld_module.from_laplace_mechanism(
            leaf.noise_multiplier, value_discretization_interval=interval
        )
    elif isinstance(leaf, GenericPureDpEvent):
        base = generic_pld(leaf.epsilon, interval=interval)
    elif isinstance(leaf, ApproximateDpEvent):
        base = generic_pld(leaf.epsilon, leaf.delta, interval)
    elif isinstance(leaf, BoundedRangeDpEvent):
        base = pld_module.from_laplace_mechanism(
            1.0 / leaf.epsilon, value_discretization_interval=interval
        )
    elif isinstance(leaf, dp_accounting.RandomizedResponseDpEvent):
        base = _randomized_response_pld(leaf, neighbour, interval)
    else:
        return _accountant_pld(leaf, count, interval)
    return base.self_compose(count)


# --- Rényi DP ----------------------------------------------------------------------------


def generic_pure_rdp(orders: npt.ArrayLike, epsilon: float) -> F64:
    """D_α of the worst-case ε-DP pair, binary randomized response (Mironov 2017, Table II):
    (1/(α − 1))·ln[(e^{αε} + e^{(1−α)ε})/(1 + e^ε)]. Every ε-DP pair is a post-processing
    of it (its trade-off function lies above; Blackwell's theorem, Dong, Roth & Su 2019,
    Thm. 2.10), so by the
    data-processing inequality its D_α bounds every ε-DP mechanism's at every α."""
    a = np.asarray(orders, dtype=np.float64)
    top = np.logaddexp(a * epsilon, (1.0 - a) * epsilon) - np.logaddexp(0.0, epsilon)
    return np.asarray(np.minimum(top / (a - 1.0), epsilon), dtype=np.float64)


def bounded_range_rdp(orders: npt.ArrayLike, epsilon: float) -> F64:
    """D_α ≤ min(α·ε²/8, D_α of the generic ε-DP pair): an ε-bounded-range mechanism is
    ε²/8-zCDP (Cesar & Rogers 2021) and ε-DP; both bound it at every α."""
    a = np.asarray(orders, dtype=np.float64)
    return np.asarray(np.minimum(a * epsilon**2 / 8.0, generic_pure_rdp(a, epsilon)))


def laplace_rdp(orders: npt.ArrayLike, noise_multiplier: float) -> F64:
    """D_α of the Laplace mechanism with b/Δ = λ (Mironov 2017, Table II):
    (1/(α − 1))·ln[α/(2α − 1)·e^{(α−1)/λ} + (α − 1)/(2α − 1)·e^{−α/λ}]."""
    a = np.asarray(orders, dtype=np.float64)
    lam = noise_multiplier
    top = np.logaddexp(
        np.log(a / (2.0 * a - 1.0)) + (a - 1.0) / lam,
        np.log((a - 1.0) / (2.0 * a - 1.0)) - a / lam,
    )
    return np.asarray(np.minimum(top / (a - 1.0), 1.0 / lam), dtype=np.float64)


def _randomized_response_rdp(
    orders: F64, event: dp_accounting.RandomizedResponseDpEvent, neighbour: Neighbour
) -> F64:
    """Replace-one: D_α of the exact k-ary pair, with a = 1 − p + p/k, b = p/k:
    (1/(α − 1))·ln[a^α·b^{1−α} + b^α·a^{1−α} + (k − 2)·b]. Add/remove-one: the generic
    pair's at ε = ln(1 + (1 − p)k/p) (see :func:`_randomized_response_pld`)."""
    epsilon = randomized_response_epsilon(event)
    if neighbour != "replace_one":
        return generic_pure_rdp(orders, epsilon)
    p, k = event.noise_parameter, event.num_buckets
    la, lb = math.log1p(-p + p / k), math.log(p / k)
    terms = np.logaddexp(orders * la + (1.0 - orders) * lb, orders * lb + (1.0 - orders) * la)
    if k > 2:
        terms = np.logaddexp(terms, math.log(k - 2) + lb)
    return np.asarray(np.minimum(terms / (orders - 1.0), epsilon), dtype=np.float64)


def leaf_rdp(
    leaf: dp_accounting.DpEvent, orders: npt.ArrayLike, neighbour: Neighbour
) -> F64 | None:
    """D_α over ``orders`` of one private, non-trivial ``leaf``, or None when no finite
    RDP curve describes it (an (ε, δ > 0) event, another dp-accounting event):

    - integer noise: the papers' curve (:meth:`~privsim.sim.integer_bounds.IntegerShares.rdp`);
    - Gaussian: α/(2m²) (Mironov 2017, Table II); Laplace: :func:`laplace_rdp`;
    - generic pure ε, (ε, 0): :func:`generic_pure_rdp`; bounded range: :func:`bounded_range_rdp`;
    - randomized response: :func:`_randomized_response_rdp`;
    - sampled releases (:func:`_sampled_rdp`): Poisson-sampled Gaussian by the exact
      binomial expansion (:func:`poisson_gaussian_rdp`), Poisson-sampled integer noise
      or Laplace by Zhu & Wang's bound on its curve
      (:func:`~privsim.sim.integer_bounds.poisson_subsampled_rdp`), a Gaussian sampled
      without replacement by dp-accounting's bound (Wang, Balle & Kasiviswanathan
      2019, Theorem 27), each at integer orders to 256 and interpolated between them;
      any other sampled event is refused (TypeError, :func:`check_sampled`).
    """
    a = np.asarray(orders, dtype=np.float64)
    if isinstance(leaf, Sampled):
        return _sampled_rdp(leaf, a)
    if isinstance(leaf, IntegerNoiseDpEvent):
        return leaf.bound.rdp(leaf.shares, a)
    if isinstance(leaf, dp_accounting.GaussianDpEvent):
        return np.asarray(a / (2.0 * leaf.noise_multiplier**2), dtype=np.float64)
    if isinstance(leaf, dp_accounting.LaplaceDpEvent):
        return laplace_rdp(a, leaf.noise_multiplier)
    if isinstance(leaf, BoundedRangeDpEvent):
        return bounded_range_rdp(a, leaf.epsilon)
    if isinstance(leaf, dp_accounting.RandomizedResponseDpEvent):
        return _randomized_response_rdp(a, leaf, neighbour)
    pure = leaf_pure_epsilon(leaf)
    if pure is not None and isinstance(leaf, GenericPureDpEvent | ApproximateDpEvent):
        return generic_pure_rdp(a, pure)
    return None
