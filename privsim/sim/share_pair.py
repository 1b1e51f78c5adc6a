"""A Poisson-sampled release whose noise includes the protected party's own share: its
exact privacy loss, as a dominating pair the ledger composes by PLD.

In distributed DP each sampled party adds a noise share, so the release's noise grows
with the cohort. Under add/remove-one neighbours a party that is not in the data set is
never sampled and adds no share: with the others' H − 1 honest shares of standard
deviation σ_i the release is

    in  (target sampled, prob. q):  N(u, s₁²·I_d),  s₁² = H·σ_i²,
    out (otherwise):                N(0, s₀²·I_d),  s₀² = (H − 1)·σ_i²,

with u the target's clipped update, ‖u‖ ≤ Δ. The neighbouring pair is therefore

    P = q·N(u, s₁² I) + (1 − q)·N(0, s₀² I)   against   Q = N(0, s₀² I),

in both directions (P against Q: the target removed; Q against P: added). Crediting
H − 1 shares on both sides, as a plain ``PoissonSampledDpEvent`` around a Gaussian of
multiplier s₀ would, misses that the variance itself differs: on every one of the d
coordinates, not only along u (the release of a model update has one coordinate per
parameter). In units of Δ (u = e₁ by rotation invariance; the pair's hockey-stick
divergence grows with ‖u‖, checked in ``tests/sim/test_share_pair.py``), the log
likelihood ratio of the ``in`` component to Q at x is

    g(x) = A(x₁) + κ·r²,   r² = Σ_{j ≥ 2} x_j²,   κ = 1/(2s₀²) − 1/(2s₁²) ≥ 0,
    A(x₁) = κ·x₁² + x₁/s₁² − 1/(2s₁²) − d·ln(s₁/s₀),

and the pair's privacy loss is L = ln(q·e^g + 1 − q) under P (remove) and −L under Q
(add). g is a sum of a function of x₁ and a multiple of r², independent under each
component (x₁ ~ N(0, s₀²) or N(1, s₁²); r²/s² ~ χ²_{d−1}), so its distribution is the
convolution of two one-dimensional histograms. Each histogram is pessimistic in its
direction: a cell's mass sits at the largest g of the cell for the remove direction
(the loss L grows with g) and at the smallest for the add direction (−L falls with g),
A being convex so that its extremes over a cell are at an end or its vertex; mass
beyond the grid goes to an infinite loss. The loss is then rounded up to the PLD's
interval, as dp-accounting's pessimistic PLDs are; every step can only raise the
hockey-stick divergence, so the PLD dominates the pair (Zhu, Dong & Wang 2022, Def. 7
and Thm. 10: the composition of dominating pairs dominates the composition).

With s₁ = s₀ the variance term vanishes and the event is the ordinary
Poisson-sampled Gaussian; the ledger then builds that instead.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import attr
import dp_accounting
import numpy as np
import numpy.typing as npt
from dp_accounting.pld import pld_pmf
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
from scipy import signal, special, stats

__all__ = [
    "SampledSharesGaussianDpEvent",
    "hockey_stick",
    "shares_pair_pld",
]

F64 = npt.NDArray[np.float64]

#: Standard deviations of x₁ covered on each side of its mean (Φ(−11) ≈ 2·10⁻²⁸: the
#: mass beyond, sent to an infinite loss, is far below any δ).
TAIL_SIGMAS = 11.0
#: Tail probability of χ²_{d−1} beyond the grid on each side (sent to an infinite loss).
CHI2_TAIL = 1e-24
#: Fewest and most cells of a histogram: as many as make a cell's span of g two steps
#: of the g-grid (one PLD interval), within these (more cells: a tighter figure, more work).
MIN_CELLS, MAX_CELLS = 2_000, 100_000
#: The g-grid's step, as a share of the PLD interval (a finer step, tighter figures).
G_STEP_SHARE = 0.5
#: Most points of the g-grid: a pair whose g spans more (a large mismatch of variance
#: over many coordinates, where ε is large anyway) takes a coarser step.
MAX_G_POINTS = 4_000_000


def _positive(_: Any, attribute: attr.Attribute[float], value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value!r}")


def _rate(_: Any, attribute: attr.Attribute[float], value: float) -> None:
    if not 0 < value <= 1:
        raise ValueError(f"{attribute.name} must be in (0, 1], got {value!r}")


def _dimension(_: Any, attribute: attr.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, got {value!r}")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class SampledSharesGaussianDpEvent(dp_accounting.DpEvent):
    """A release on a Poisson sample at rate ``sampling_probability`` whose Gaussian
    noise includes the target's own share when it is sampled: N(u, (``multiplier_in``·Δ)²)
    with the target in, N(0, (``multiplier_out``·Δ)²) without, on each of ``dimension``
    coordinates (add/remove-one neighbours; module docstring). q = 1: the sampler's
    choice is known, and the pair is the two Gaussians alone."""

    sampling_probability: float = attr.ib(validator=_rate)
    multiplier_in: float = attr.ib(validator=_positive)
    multiplier_out: float = attr.ib(validator=_positive)
    dimension: int = attr.ib(default=1, validator=_dimension)

    def __attrs_post_init__(self) -> None:
        if self.multiplier_in < self.multiplier_out:
            raise ValueError(
                "the release with the target's share has at least the noise of the one "
                f"without: multiplier_in = {self.multiplier_in} < multiplier_out = "
                f"{self.multiplier_out}"
            )


def _a_of(x: F64, kappa: float, s1: float, offset: float) -> F64:
    return np.asarray(kappa * x * x + x / s1**2 - 0.5 / s1**2 + offset)


def _cells(span: float, step: float) -> int:
    """Cells for a histogram whose values span ``span``: one step of g each, within
    :data:`MIN_CELLS` and :data:`MAX_CELLS`."""
    return int(min(max(math.ceil(span / (2.0 * step)), MIN_CELLS), MAX_CELLS))


def _x_histograms(
    mean: float, sd: float, kappa: float, s1: float, offset: float, step: float
) -> tuple[F64, F64, F64, float]:
    """Cells of x₁ ~ N(mean, sd²): (masses, A's largest on each cell, A's smallest,
    mass beyond the grid on both sides)."""
    lo, hi = mean - TAIL_SIGMAS * sd, mean + TAIL_SIGMAS * sd
    span = float(np.ptp(_a_of(np.array([lo, mean, hi]), kappa, s1, offset)))
    edges = np.linspace(lo, hi, _cells(span, step) + 1)
    z = (edges - mean) / sd
    cdf, sf = special.ndtr(z), special.ndtr(-z)
    half = edges <= mean  # differences of the smaller tail: no cancellation
    mass = np.where(half[1:], np.diff(cdf), -np.diff(sf))
    ends = _a_of(edges, kappa, s1, offset)
    top = np.maximum(ends[:-1], ends[1:])  # A is convex: its largest is at an end
    bottom = np.minimum(ends[:-1], ends[1:])
    if kappa > 0:  # ... and its smallest at the vertex where that lies in the cell
        vertex = -1.0 / (2.0 * kappa * s1**2)
        inside = (edges[:-1] < vertex) & (vertex < edges[1:])
        bottom = np.where(inside, _a_of(np.asarray(vertex), kappa, s1, offset), bottom)
    outside = float(cdf[0] + sf[-1])
    return np.maximum(mass, 0.0), top, bottom, outside


def _r_histograms(scale: float, kappa: float, dof: int, step: float) -> tuple[F64, F64, F64, float]:
    """Cells of κ·r², r²/scale² ~ χ²_dof: (masses, largest, smallest, mass beyond)."""
    lo, hi = stats.chi2.ppf(CHI2_TAIL, dof), stats.chi2.isf(CHI2_TAIL, dof)
    edges = np.linspace(lo, hi, _cells(kappa * scale**2 * (hi - lo), step) + 1)
    cdf, sf = special.chdtr(dof, edges), special.chdtrc(dof, edges)
    median = float(stats.chi2.median(dof))
    mass = np.where(edges[1:] <= median, np.diff(cdf), -np.diff(sf))
    values = kappa * scale**2 * edges
    return np.maximum(mass, 0.0), values[1:], values[:-1], float(cdf[0] + sf[-1])


def _on_grid(values: F64, mass: F64, step: float, up: bool) -> tuple[int, F64]:
    """A histogram of ``values`` (weights ``mass``) on the grid k·step, each value
    rounded up (``up``) or down to a grid point: (index of the first bin, weights)."""
    index = np.ceil(values / step) if up else np.floor(values / step)
    first = int(index.min())
    counts = np.asarray(np.bincount((index - first).astype(np.int64), weights=mass), np.float64)
    return first, counts


def _g_distribution(
    event: SampledSharesGaussianDpEvent, component: str, up: bool, step: float
) -> tuple[int, F64, float]:
    """The distribution of g under the ``in`` or ``out`` component, on the grid k·step,
    rounded up or down: (first index, weights, mass beyond the grids)."""
    s1, s0, d = event.multiplier_in, event.multiplier_out, event.dimension
    kappa = 0.5 / s0**2 - 0.5 / s1**2
    offset = -d * math.log(s1 / s0)
    mean, sd = (1.0, s1) if component == "in" else (0.0, s0)
    mass_x, top_x, bottom_x, lost_x = _x_histograms(mean, sd, kappa, s1, offset, step)
    first_x, hist_x = _on_grid(top_x if up else bottom_x, mass_x, step, up)
    if d == 1 or kappa == 0:
        return first_x, hist_x, lost_x
    mass_r, top_r, bottom_r, lost_r = _r_histograms(sd, kappa, d - 1, step)
    first_r, hist_r = _on_grid(top_r if up else bottom_r, mass_r, step, up)
    both = np.maximum(signal.fftconvolve(hist_x, hist_r), 0.0)
    lost = 1.0 - (1.0 - lost_x) * (1.0 - lost_r)
    return first_x + first_r, both, lost


def _g_span(event: SampledSharesGaussianDpEvent) -> float:
    """A bound on the span of g over the grids of both components."""
    s1, s0, d = event.multiplier_in, event.multiplier_out, event.dimension
    kappa = 0.5 / s0**2 - 0.5 / s1**2
    x = TAIL_SIGMAS * max(s0, s1) + 1.0
    span = 2.0 * (kappa * x * x + x / s1**2)
    if d > 1 and kappa > 0:
        hi = stats.chi2.isf(CHI2_TAIL, d - 1)
        span += kappa * max(s0, s1) ** 2 * hi
    return float(span)


def _loss(g: F64, q: float) -> F64:
    """L = ln(q·e^g + 1 − q), stably."""
    if q >= 1:
        return g
    return np.asarray(np.logaddexp(math.log(q) + g, math.log1p(-q)))


#: Mass trimmed from either end of a pmf (moved to a higher loss, or to an infinite one):
#: below dp-accounting's own truncation of a composition's tails (10⁻¹⁵), so that its
#: truncation, a Python loop over the tail, stops at once.
TRIM_MASS = 1e-16


def _pmf(losses: F64, weights: F64, interval: float, infinity: float) -> pld_pmf.PLDPmf:
    """A pessimistic PLD pmf: each loss rounded up to the interval's grid; the ends'
    negligible mass (:data:`TRIM_MASS` each) moved up: the low end's to the first bin
    kept, the high end's to an infinite loss."""
    index = np.ceil(losses / interval).astype(np.int64)
    first = int(index.min())
    summed = np.bincount(index - first, weights=weights)
    low = int(np.searchsorted(np.cumsum(summed), TRIM_MASS, side="right"))
    high = summed.size - int(np.searchsorted(np.cumsum(summed[::-1]), TRIM_MASS, side="right"))
    low = min(low, max(high - 1, 0))
    kept = summed[low:high].copy()
    kept[0] += summed[:low].sum()
    infinity += float(summed[high:].sum())
    return pld_pmf.DensePLDPmf(
        interval, first + low, kept, min(infinity, 1.0), pessimistic_estimate=True
    )


@functools.lru_cache(maxsize=256)
def shares_pair_pld(
    event: SampledSharesGaussianDpEvent, interval: float
) -> PrivacyLossDistribution:
    """The PLD of one :class:`SampledSharesGaussianDpEvent` at the discretisation
    ``interval``, dominating the pair in both directions (module docstring). Cached:
    rounds with the same honest count share it."""
    q = event.sampling_probability
    step = max(interval * G_STEP_SHARE, _g_span(event) / MAX_G_POINTS)
    # remove: loss L under P = q·in + (1 − q)·out, g rounded up
    first_in, in_up, lost_in = _g_distribution(event, "in", True, step)
    first_out, out_up, lost_out = _g_distribution(event, "out", True, step)
    first = min(first_in, first_out)
    size = max(first_in + in_up.size, first_out + out_up.size) - first
    mixed = np.zeros(size)
    mixed[first_in - first : first_in - first + in_up.size] += q * in_up
    if q < 1:
        mixed[first_out - first : first_out - first + out_up.size] += (1.0 - q) * out_up
    g = np.asarray((first + np.arange(size)) * step, dtype=np.float64)
    remove = _pmf(_loss(g, q), mixed, interval, q * lost_in + (1.0 - q) * lost_out)
    # add: loss −L under Q = out, g rounded down; mass below the grid has g = −∞, where
    # −L = −ln(1 − q) (finite for q < 1), above it the grid's top (rounded down)
    first_q, out_down, lost_q = _g_distribution(event, "out", False, step)
    g_q = np.asarray((first_q + np.arange(out_down.size)) * step, dtype=np.float64)
    losses = -_loss(g_q, q)
    infinity = 0.0
    if q < 1:
        losses = np.append(losses, -math.log1p(-q))
        out_down = np.append(out_down, lost_q)
    else:
        infinity = lost_q
    add = _pmf(losses, out_down, interval, infinity)
    return PrivacyLossDistribution(remove, add)


def hockey_stick(
    epsilon: float,
    q: float,
    s_in: float,
    s_out: float,
    dimension: int,
    *,
    mean: float = 1.0,
    direction: str = "remove",
) -> float:
    """δ(ε) of the pair computed apart from the PLD, by one-dimensional quadrature
    (the test's exact reference): for fixed x₁ the loss grows with r², so
    {L > ε} = {r² > ρ(x₁)} and δ is an integral over x₁ of χ² tails. ``mean``: ‖u‖/Δ.
    ``direction``: "remove" is sup over sets of P − e^ε·Q, "add" of Q − e^ε·P."""
    from scipy import integrate

    kappa = 0.5 / s_out**2 - 0.5 / s_in**2
    offset = -dimension * math.log(s_in / s_out)
    dof = dimension - 1

    def g_x(x: float) -> float:
        return -((x - mean) ** 2) / (2 * s_in**2) + x * x / (2 * s_out**2) + offset

    def tail(x: float, scale: float, threshold_g: float, above: bool) -> float:
        # P(κ·r² > threshold_g − g_x(x)) with r² = scale²·χ²_dof (or ≤, when not above)
        if dof == 0 or kappa == 0:
            hit = g_x(x) > threshold_g
            return float(hit if above else not hit)
        rho = (threshold_g - g_x(x)) / (kappa * scale**2)
        if above:
            return float(stats.chi2.sf(max(rho, 0.0), dof)) if rho > 0 else 1.0
        return float(stats.chi2.cdf(rho, dof)) if rho > 0 else 0.0

    if direction == "remove":  # L > ε ⇔ g > G := ln((e^ε − 1 + q)/q)
        if math.expm1(epsilon) + q <= 0:
            return 1.0
        big_g = math.log((math.expm1(epsilon) + q) / q)

        def integrand(x: float) -> float:
            p_in = stats.norm.pdf(x, mean, s_in) * tail(x, s_in, big_g, True)
            p_out = stats.norm.pdf(x, 0.0, s_out) * tail(x, s_out, big_g, True)
            return q * p_in + (1 - q) * p_out - math.exp(epsilon) * p_out

    else:  # Q − e^ε·P > 0 ⇔ −L > ε ⇔ g < G' := ln((e^{−ε} − 1 + q)/q)
        inner = math.exp(-epsilon) - 1.0 + q
        if inner <= 0:
            return 0.0
        big_g = math.log(inner / q)

        def integrand(x: float) -> float:
            p_in = stats.norm.pdf(x, mean, s_in) * tail(x, s_in, big_g, False)
            p_out = stats.norm.pdf(x, 0.0, s_out) * tail(x, s_out, big_g, False)
            return p_out - math.exp(epsilon) * (q * p_in + (1 - q) * p_out)

    width = TAIL_SIGMAS * max(s_in, s_out)
    points = sorted({-width, 0.0, mean, width})
    total = 0.0
    for a, b in itertools.pairwise(points):
        value, _ = integrate.quad(integrand, a, b, limit=400, epsabs=1e-14, epsrel=1e-10)
        total += value
    return max(total, 0.0)
