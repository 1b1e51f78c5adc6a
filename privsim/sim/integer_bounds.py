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

Poisson subsampling (Zhu & Wang, ICML 2019, Theorem 6): a mechanism whose curve is
ε(α) at every integer α ≥ 2, run on a Poisson sample at rate q (add/remove-one
neighbours), is (α, ε′(α))-RDP for integer α ≥ 2 with

    ε′(α) ≤ 1/(α − 1)·log[ (1 − q)^{α−1}(αq − q + 1) + C(α,2)q²(1 − q)^{α−2}e^{ε(2)}
                          + 3·Σ_{j=3}^{α} C(α,j) q^j (1 − q)^{α−j} e^{(j−1)ε(j)} ]

(:func:`poisson_subsampled_rdp`), evaluated up to :data:`SUBSAMPLED_MAX_ORDER` and
between integer orders by :func:`interpolate_rdp`.

RDP to (ε, δ) (Canonne, Kamath & Steinke 2020; Balle et al. 2020):
ε = min_α ε(α) + ln(1/δ)/(α − 1) + ln(1 − 1/α) − ln(α)/(α − 1) over :data:`ORDERS`.
The ledger records a release as :class:`IntegerNoiseDpEvent`: the
bound's inputs, for composition (releases compose by summing their curves,
:meth:`IntegerShares.rdp`), and the Gaussian whose exact (ε, δ) at the bound's δ is the
bound (:func:`equivalent_gaussian`), what the release alone costs.

Why here: the ledger (``privsim.sim``) must not import the protocol kit, yet it has to
re-evaluate these bounds at the realised number of honest shares. So the formulas live
in this module of plain numbers, the kit's accountant (:mod:`privsim.kit.intnoise`)
calls the same functions to calibrate and to plan, and the event carries only the
inputs (:class:`IntegerShares`, a frozen dataclass of numbers): picklable for sweeps,
comparable, and evaluated by one code path, so a release with the planned number of
honest shares gets exactly the planned event. The event class lives here too, beside its
bound, so that this module imports nothing of the package: :mod:`privsim.sim.events`,
which gives every event's privacy loss, builds on it (Zhu & Wang's bound included) and
re-exports the class.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import attr
import dp_accounting
import numpy as np
import numpy.typing as npt

__all__ = [
    "COMPOSITION_ORDERS",
    "DDG_MIN_SIGMA",
    "ORDERS",
    "SUBSAMPLED_MAX_ORDER",
    "IntegerKind",
    "IntegerNoiseDpEvent",
    "IntegerShares",
    "ddg_rdp",
    "ddg_tau",
    "equivalent_gaussian",
    "integer_epsilon",
    "integer_rdp",
    "interpolate_rdp",
    "log_binomials",
    "poisson_subsampled_rdp",
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

#: Largest integer order at which a subsampled curve is computed: the bounds are sums
#: over j ≤ α (O(α²) terms for every order to α). Above it a subsampled release keeps
#: its unsampled curve, which sampling never exceeds (Rényi divergence is jointly
#: quasi-convex, van Erven & Harremoës 2014, Thm. 13, and the sampled pair is a mixture
#: of the unsampled one with a pair of equal distributions). The integer orders of
#: :data:`ORDERS` go to 256 one by one, so this covers all of them.
SUBSAMPLED_MAX_ORDER = 256


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
        :class:`IntegerNoiseDpEvent` carrying this bound and the
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


@attr.s(frozen=True, slots=True, auto_attribs=True)
class IntegerNoiseDpEvent(dp_accounting.GaussianDpEvent):
    """One release of integer noise: ``shares`` honest shares of the mechanism ``bound``
    describes (:class:`IntegerShares`). Composed by the
    papers' RDP curve (:meth:`IntegerShares.rdp`), never as a Gaussian.

    ``noise_multiplier`` is the Gaussian whose exact (ε, δ) at the bound's δ is the
    bound's: what this release alone costs, for a reader of the record. The class
    subclasses ``GaussianDpEvent`` only so that code reading that multiplier keeps
    working; the ledger recognises it before any Gaussian. Handed to dp-accounting's
    own accountants it would compose as that Gaussian, which lies under the bound when
    releases compose: compose it with the ledger."""

    bound: IntegerShares
    shares: int


# --- amplification by sampling ---------------------------------------------------------


@functools.lru_cache(maxsize=8)
def log_binomials(n: int) -> F64:
    """The (n + 1) × (n + 1) table log C(a, j) for 0 ≤ j ≤ a ≤ n (−∞ for j > a), from
    log-factorials (cumulative sums of log k), exact to float rounding. Cached, and
    read-only."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])
    a = np.arange(n + 1)[:, None]
    j = np.arange(n + 1)[None, :]
    inside = j <= a
    table = np.full((n + 1, n + 1), -math.inf)
    diff = np.where(inside, a - j, 0)
    table[inside] = (log_fact[a] - log_fact[np.minimum(j, n)] - log_fact[diff])[inside]
    table.flags.writeable = False
    return table


def interpolate_rdp(grid: npt.ArrayLike, rdp_on_grid: npt.ArrayLike, orders: npt.ArrayLike) -> F64:
    """ε(α) at ``orders`` from a curve known at the integer orders ``grid`` (increasing,
    each ≥ 2): exact on the grid; between two grid points (and between 1 and the
    first) the cumulant (α − 1)·ε(α) interpolated linearly, with (α − 1)·ε(α) = 0 at
    α = 1; ∞ above the grid. An upper bound wherever the grid values are: the cumulant
    log E_Q[(P/Q)^α] is convex in α (Hölder), so it lies under its chords (Wang, Balle &
    Kasiviswanathan 2019, Corollary 10, the interpolation dp-accounting also uses)."""
    g = np.asarray(grid, dtype=np.float64)
    r = np.asarray(rdp_on_grid, dtype=np.float64)
    a = np.asarray(orders, dtype=np.float64)
    if g.ndim != 1 or g.shape != r.shape or g.size == 0 or not np.all(np.diff(g) > 0):
        raise ValueError("grid must be increasing integer orders, one value each")
    if g[0] < 2 or np.any(g != np.round(g)):
        raise ValueError(f"grid orders must be integers >= 2, got {g}")
    if np.any(a <= 1):
        raise ValueError("Rényi orders must be > 1")
    xs = np.concatenate([[1.0], g])
    cgf = np.concatenate([[0.0], (g - 1.0) * r])
    hi = np.clip(np.searchsorted(xs, a, side="left"), 1, xs.size - 1)
    lo = hi - 1
    t = (a - xs[lo]) / (xs[hi] - xs[lo])
    with np.errstate(invalid="ignore"):  # 0·∞ in the branch np.where discards
        chord = np.where(t >= 1.0, cgf[hi], (1.0 - t) * cgf[lo] + t * cgf[hi])
    out = chord / (a - 1.0)
    return np.asarray(np.where(a > g[-1], math.inf, out), dtype=np.float64)


def poisson_subsampled_rdp(
    base_rdp_at_integers: npt.ArrayLike, q: float, orders: npt.ArrayLike
) -> F64:
    """ε′(α) at ``orders`` of a mechanism run on a Poisson sample at rate ``q``
    (add/remove-one neighbours), from its own curve ``base_rdp_at_integers`` = ε(2),
    ε(3), …, ε(K): Zhu & Wang (ICML 2019), Theorem 6, for integer 2 ≤ α ≤ K,

        ε′(α) ≤ 1/(α − 1)·log[ (1 − q)^{α−1}(αq − q + 1) + C(α,2)q²(1 − q)^{α−2}e^{ε(2)}
                              + 3·Σ_{j=3}^{α} C(α,j) q^j (1 − q)^{α−j} e^{(j−1)ε(j)} ],

    summed in log space (no term overflows), and never above ε(α) itself (sampling does
    not raise a Rényi divergence, :data:`SUBSAMPLED_MAX_ORDER`). Orders between the
    integers by :func:`interpolate_rdp`; ∞ above K (the caller takes the unsampled
    curve there). At q = 1 it is the base curve."""
    base = np.asarray(base_rdp_at_integers, dtype=np.float64)
    if base.ndim != 1 or base.size == 0:
        raise ValueError("base_rdp_at_integers must hold ε(2), ε(3), … (at least ε(2))")
    if not 0 < q <= 1:  # also refuses NaN
        raise ValueError(f"q must be in (0, 1], got {q}")
    top = base.size + 1
    grid = np.arange(2, top + 1, dtype=np.float64)
    if q < 1:
        bound = np.minimum(_zhu_wang(base, q), base)
    else:
        bound = base
    return interpolate_rdp(grid, bound, orders)


def _zhu_wang(base: F64, q: float) -> F64:
    """The bound of :func:`poisson_subsampled_rdp` at α = 2 … 1 + len(base), 0 < q < 1:
    row α of a matrix of log terms (j = 3 … α; −∞ beyond α), reduced by log-sum-exp."""
    top = base.size + 1
    alpha = np.arange(2, top + 1, dtype=np.float64)
    log_q, log_p = math.log(q), math.log1p(-q)
    first = (alpha - 1.0) * log_p + np.log1p(q * (alpha - 1.0))  # (1−q)^{α−1}(αq − q + 1)
    log_c = log_binomials(top)
    ai = alpha.astype(int)
    second = log_c[ai, 2] + 2.0 * log_q + (alpha - 2.0) * log_p + base[0]
    terms = np.stack([first, second], axis=1)
    if top >= 3:
        j = np.arange(3, top + 1)
        jf = j.astype(np.float64)
        with np.errstate(invalid="ignore"):  # (α − j)·log(1 − q) for j > α: masked below
            rest = (
                math.log(3.0)
                + log_c[ai][:, j]
                + jf[None, :] * log_q
                + (alpha[:, None] - jf[None, :]) * log_p
                + (jf - 1.0)[None, :] * base[j - 2][None, :]
            )
        rest = np.where(j[None, :] <= ai[:, None], rest, -math.inf)
        terms = np.concatenate([terms, rest], axis=1)
    return np.asarray(np.logaddexp.reduce(terms, axis=1) / (alpha - 1.0), dtype=np.float64)
