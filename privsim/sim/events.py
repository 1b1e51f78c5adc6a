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

The classes are attrs-frozen like dp-accounting's own events, so they nest inside its
``ComposedDpEvent`` and ``SelfComposedDpEvent``.

Why a dominating pair composes soundly: a pair (P, Q) whose hockey-stick divergence is at
least a mechanism's at every e^ε′ dominates it, and the composition of dominating pairs
dominates the (adaptive) composition of the mechanisms (Zhu, Dong & Wang 2022, Thm. 10);
the PLD of the composed pairs is what dp-accounting evaluates.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import attr
import dp_accounting
import numpy as np
import numpy.typing as npt
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_module
from dp_accounting.pld.common import DifferentialPrivacyParameters
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution as PLD

if TYPE_CHECKING:
    from privsim.sim.integer_bounds import IntegerShares

__all__ = [
    "MAX_PLD_EPSILON",
    "PLD_INTERVAL",
    "ApproximateDpEvent",
    "BoundedRangeDpEvent",
    "GenericPureDpEvent",
    "IntegerNoiseDpEvent",
    "Neighbour",
    "bounded_range_rdp",
    "generic_pld",
    "generic_pure_rdp",
    "is_no_op",
    "is_non_private",
    "laplace_rdp",
    "leaf_pld",
    "leaf_pure_epsilon",
    "leaf_rdp",
    "randomized_response_epsilon",
]

F64 = npt.NDArray[np.float64]
#: The neighbouring relation of a scenario (``privacy.neighbour``).
Neighbour = Literal["replace_one", "add_remove"]

#: dp-accounting's discretisation of the privacy loss (its accountant's default).
PLD_INTERVAL = 1e-4
#: Largest ε of a pair that the PLD can hold (e^ε overflows a float beyond ~709); a
#: composition that holds a larger one is reported as ε = ∞ (never below the truth).
MAX_PLD_EPSILON = 700.0


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


@attr.s(frozen=True, slots=True, auto_attribs=True)
class IntegerNoiseDpEvent(dp_accounting.GaussianDpEvent):
    """One release of integer noise: ``shares`` honest shares of the mechanism ``bound``
    describes (:class:`~privsim.sim.integer_bounds.IntegerShares`). Composed by the
    papers' RDP curve (:meth:`IntegerShares.rdp`), never as a Gaussian.

    ``noise_multiplier`` is the Gaussian whose exact (ε, δ) at the bound's δ is the
    bound's: what this release alone costs, for a reader of the record. The class
    subclasses ``GaussianDpEvent`` only so that code reading that multiplier keeps
    working; the ledger recognises it before any Gaussian. Handed to dp-accounting's
    own accountants it would compose as that Gaussian, which lies under the bound when
    releases compose: compose it with the ledger."""

    bound: IntegerShares
    shares: int


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
    """A leaf that protects nobody: non-private, no noise, an infinite ε or δ = 1."""
    if isinstance(leaf, dp_accounting.NonPrivateDpEvent):
        return True
    if isinstance(leaf, dp_accounting.GaussianDpEvent):  # and integer noise
        return not leaf.noise_multiplier > 0
    if isinstance(leaf, ApproximateDpEvent) and leaf.delta >= 1:
        return True
    pure = leaf_pure_epsilon(leaf)
    return pure is not None and math.isinf(pure)


def is_no_op(leaf: dp_accounting.DpEvent) -> bool:
    """A leaf that costs nothing: no-op, ε = 0 pure, or infinite noise."""
    if isinstance(leaf, dp_accounting.NoOpDpEvent):
        return True
    if type(leaf) is dp_accounting.GaussianDpEvent:
        return math.isinf(leaf.noise_multiplier)
    if isinstance(leaf, ApproximateDpEvent):
        return leaf.epsilon == 0 and leaf.delta == 0
    return leaf_pure_epsilon(leaf) == 0.0


# --- privacy loss distributions --------------------------------------------------------


def generic_pld(epsilon: float, delta: float = 0.0) -> PLD:
    """The worst-case pair of every (ε, δ)-DP mechanism (Kairouz, Oh & Viswanath 2015,
    Thm. 3.4): privacy loss ∞ w.p. δ, ±ε w.p. (1 − δ)/(1 + e^∓ε)."""
    return pld_module.from_privacy_parameters(
        DifferentialPrivacyParameters(epsilon, delta), value_discretization_interval=PLD_INTERVAL
    )


def _randomized_response_pld(
    event: dp_accounting.RandomizedResponseDpEvent, neighbour: Neighbour
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
            value_discretization_interval=PLD_INTERVAL,
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        )
    return generic_pld(randomized_response_epsilon(event))


def _accountant_pld(leaf: dp_accounting.DpEvent, count: int) -> PLD:
    """Another dp-accounting event (sampled Gaussian, discrete Laplace, ...): the PLD its
    own accountant builds (add/remove-one; sensitivity folded into the event), read from
    the accountant, which has no public accessor for it."""
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=PLD_INTERVAL)
    accountant.compose(leaf, count)
    pld: PLD | None = getattr(accountant, "_pld", None)
    if pld is None:  # pragma: no cover - a dp-accounting release without the attribute
        raise TypeError(f"cannot compose {leaf!r}: record it as ApproximateDpEvent(ε, δ)")
    return pld


def leaf_pld(leaf: dp_accounting.DpEvent, count: int, neighbour: Neighbour) -> PLD:
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
    - any other dp-accounting event: its own accountant's PLD.
    """
    pure = leaf_pure_epsilon(leaf)
    if pure is not None and pure > MAX_PLD_EPSILON:
        raise OverflowError(f"{leaf!r}: ε = {pure:g} is beyond a PLD")
    if isinstance(leaf, IntegerNoiseDpEvent):
        raise TypeError("integer noise composes by its RDP curve, not by a PLD")
    if isinstance(leaf, dp_accounting.GaussianDpEvent):
        return pld_module.from_gaussian_mechanism(
            standard_deviation=leaf.noise_multiplier / math.sqrt(count),
            value_discretization_interval=PLD_INTERVAL,
        )
    if isinstance(leaf, dp_accounting.LaplaceDpEvent):
        base = pld_module.from_laplace_mechanism(
            leaf.noise_multiplier, value_discretization_interval=PLD_INTERVAL
        )
    elif isinstance(leaf, GenericPureDpEvent):
        base = generic_pld(leaf.epsilon)
    elif isinstance(leaf, ApproximateDpEvent):
        base = generic_pld(leaf.epsilon, leaf.delta)
    elif isinstance(leaf, BoundedRangeDpEvent):
        base = pld_module.from_laplace_mechanism(
            1.0 / leaf.epsilon, value_discretization_interval=PLD_INTERVAL
        )
    elif isinstance(leaf, dp_accounting.RandomizedResponseDpEvent):
        base = _randomized_response_pld(leaf, neighbour)
    else:
        return _accountant_pld(leaf, count)
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
    - randomized response: :func:`_randomized_response_rdp`.
    """
    a = np.asarray(orders, dtype=np.float64)
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
