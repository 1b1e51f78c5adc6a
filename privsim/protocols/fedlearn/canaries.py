"""A one-run empirical ε from canary clients (Andrew, Kairouz, Oh, Oprea, McMahan &
Suriyakumar, ICLR 2024, "One-shot empirical privacy estimation for federated learning").

K canary clients join the population. Canary k holds a fixed direction c_k drawn
uniformly from the unit sphere of R^d (d the model's parameter count); it is sampled
into a round like any client and, when picked, sends C·c_k (C the clipping norm): a
clipped update of full norm, always online, with no data behind it. After training,
with Δ = w_R − w_0 the change of the model over the run,

    cos_k = ⟨c_k, Δ⟩ / ‖Δ‖                                       (c_k has norm 1)

measures how much of canary k the final model holds. A direction that was never
inserted is independent of Δ, and its cosine has mean 0 and variance exactly 1/d (for
large d, N(0, 1/d)): the null. Fitting N(μ̂, ŝ²) to the K observed cosines (sample mean
and standard deviation), the estimate is the ε at the run's δ of the pair

    N(0, 1/d)  against  N(μ̂, ŝ²),

the larger of both directions (:func:`gaussian_pair_epsilon`). For the Gaussian
mechanism it recovers the mechanism's ε as d and K grow (the paper proves this); on real
training it estimates the privacy of the final model alone against an adversary who
knows every canary's direction — an estimate, not a bound, to read beside the ε the
ledger claims for every round's release.

Pure functions on arrays and a ``numpy.random.Generator``; the run draws the
directions and each round's picked canaries from their own named streams.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr

from privsim.protocols.fedlearn.cohort import planned_cohort
from privsim.protocols.fedlearn.config import TrainingConfig

__all__ = [
    "CANARY_PREFIX",
    "CROWDING_LIMIT",
    "EPSILON_CEILING",
    "EPSILON_TOLERANCE",
    "METHOD",
    "canary_cosines",
    "canary_crowding",
    "canary_directions",
    "canary_names",
    "canary_rate",
    "canary_updates",
    "empirical_epsilon",
    "gaussian_hockey_stick",
    "gaussian_pair_epsilon",
    "sample_canaries",
]

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

#: Canary k's party id is ``canary-k``: never a client's (``client-i``), so a canary is
#: never in the coalition, the availability trace or the accuracy.
CANARY_PREFIX = "canary"
#: The ``method`` of the ``empirical`` section: canary cosines with the final model,
#: fitted by a Gaussian (Andrew et al. 2024, the estimate from the final model only).
METHOD = "canary_cosine_final_model"
#: Above this crowding ρ (:func:`canary_crowding`) the section carries a caveat: the
#: canaries' cosines shrink by 1/√(1 + ρ) > 5% and each canary's cosine carries the
#: others' (the fit no longer has the paper's high-dimensional shape).
CROWDING_LIMIT = 0.1
#: ε is found to within this (absolute) above the exact root of δ(ε) = δ.
EPSILON_TOLERANCE = 1e-9
#: Past this ε the pair is reported as ∞ (no protection measured): e^ε overflows a
#: double near 709, and an estimate this large says the same thing as ∞.
EPSILON_CEILING = 500.0


def canary_names(k: int) -> tuple[str, ...]:
    """``canary-0`` … ``canary-(k−1)``: the canaries' party ids."""
    return tuple(f"{CANARY_PREFIX}-{i}" for i in range(k))


def canary_directions(k: int, d: int, rng: np.random.Generator) -> F64:
    """K directions, uniform on the unit sphere of R^d, as the rows of a (k, d) array:
    each row a standard normal vector over its norm (the normal law is isotropic, so its
    direction is uniform). Read-only: the run holds them for the whole training."""
    if k < 0 or d < 1:
        raise ValueError(f"need k >= 0 canaries in d >= 1 dimensions, got k={k}, d={d}")
    rows = rng.standard_normal((k, d))
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    while k and not norms.all():  # a zero vector has no direction (d = 1 only, p ≈ 0)
        redo = np.flatnonzero(norms[:, 0] == 0)
        rows[redo] = rng.standard_normal((redo.size, d))
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out = rows / norms if k else rows
    out.flags.writeable = False
    return out


def canary_rate(training: TrainingConfig, population: int) -> float:
    """The chance a canary is picked in a round: a real client's. Poisson sampling: q;
    a fixed cohort of m from N: m/N (each client's inclusion probability, independent
    across rounds, so a canary's count of rounds has a client's law, Binomial(R, m/N)).
    The canaries are drawn apart from the clients, so the clients' cohort, its size m
    and its accounting stay as they are."""
    return min(1.0, planned_cohort(training, population) / population)


def sample_canaries(k: int, rate: float, rng: np.random.Generator) -> Bools:
    """A round's picked canaries: each independently with probability ``rate`` (one
    uniform per canary, from the round's own canary stream)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must be in [0, 1], got {rate!r}")
    return np.asarray(rng.random(k) < rate, dtype=bool)


def canary_updates(directions: F64, picked: npt.ArrayLike, clip_norm: float) -> F64:
    """The picked canaries' clipped updates C·c_k, one row each in canary order: the
    rows a round appends to its cohort's updates. ``picked``: a boolean mask over the
    canaries (or their indices)."""
    chosen = np.asarray(picked)
    rows = directions[chosen] if chosen.dtype == bool else directions[chosen.astype(np.int64)]
    return np.asarray(clip_norm * rows, dtype=np.float64)


def canary_cosines(directions: F64, delta_params: F64) -> F64 | None:
    """cos_k = ⟨c_k, Δ⟩/‖Δ‖ for every canary (the rows of ``directions`` have norm 1);
    None when Δ = 0 (the model never moved: no cosine is defined)."""
    delta = np.asarray(delta_params, dtype=np.float64).ravel()
    if directions.ndim != 2 or directions.shape[1] != delta.size:
        raise ValueError(
            f"directions of shape {directions.shape} do not match a change of {delta.size} "
            "parameters"
        )
    norm = float(np.linalg.norm(delta))
    if not (norm > 0 and math.isfinite(norm)):
        return None
    return np.asarray(directions @ (delta / norm), dtype=np.float64)


def canary_crowding(
    included: npt.ArrayLike, clip_norm: float, noise_std: float, rounds: int, d: int
) -> float:
    """ρ = C²·Σ_k n_k² / (R·σ²·d): the energy the canaries put into the sum of the
    rounds' releases over that of the noise (n_k canary k's released rounds, R the
    released rounds, σ the noise's standard deviation on a round's sum, d parameters).
    A canary adds n_k·C·c_k, the noise N(0, R·σ²·I_d), so ‖Δ‖² ∝ R·σ²·d·(1 + ρ): every
    cosine shrinks by 1/√(1 + ρ), and each canary's cosine carries the others' through
    ⟨c_k, c_j⟩ ~ N(0, 1/d), of the same relative size. The estimate has the paper's
    shape while ρ ≪ 1 (:data:`CROWDING_LIMIT`): many canaries in a small model, or
    little noise, break it. ∞ without noise; NaN with no released round."""
    counts = np.asarray(included, dtype=np.float64)
    energy = clip_norm**2 * float((counts**2).sum())
    noise = rounds * noise_std**2 * d
    if rounds <= 0:
        return math.nan
    if noise <= 0:
        return math.inf if energy > 0 else 0.0
    return energy / noise


def _mass_inside(lo: F64, hi: F64, mean: F64, sd: F64) -> F64:
    """P(lo < X < hi) for X ~ N(mean, sd²), from the tail it lies in (no cancellation
    of two numbers near 1 when the interval is far out)."""
    zlo, zhi = (lo - mean) / sd, (hi - mean) / sd
    upper = ndtr(-zlo) - ndtr(-zhi)
    lower = ndtr(zhi) - ndtr(zlo)
    return np.asarray(np.maximum(np.where(zlo > 0, upper, lower), 0.0), dtype=np.float64)


def _mass_outside(lo: F64, hi: F64, mean: F64, sd: F64) -> F64:
    """P(X < lo or X > hi) for X ~ N(mean, sd²), lo ≤ hi: both tails added."""
    return np.asarray(ndtr((lo - mean) / sd) + ndtr(-(hi - mean) / sd), dtype=np.float64)


def gaussian_hockey_stick(
    epsilon: npt.ArrayLike,
    mean_p: npt.ArrayLike,
    sd_p: npt.ArrayLike,
    mean_q: npt.ArrayLike,
    sd_q: npt.ArrayLike,
) -> F64:
    """The hockey-stick divergence H_ε(P‖Q) = sup_S P(S) − e^ε·Q(S) of P = N(μ_p, s_p²)
    from Q = N(μ_q, s_q²), in closed form, broadcast over its arguments.

    The supremum is reached on A = {x : L(x) > ε}, with the privacy loss

        L(x) = log p(x)/q(x) = log(s_q/s_p) − (x − μ_p)²/(2s_p²) + (x − μ_q)²/(2s_q²),

    a quadratic a·x² + b·x + c' with a = 1/(2s_q²) − 1/(2s_p²), b = μ_p/s_p² − μ_q/s_q²,
    c' = log(s_q/s_p) − μ_p²/(2s_p²) + μ_q²/(2s_q²). So A is one interval between the
    roots of L(x) = ε (a < 0), the outside of that interval (a > 0), or a half-line
    (a = 0, equal variances), and H_ε = P(A) − e^ε·Q(A) is a handful of normal CDFs.
    The roots are taken by the cancellation-free form (q = −(b + sign(b)·√disc)/2,
    roots q/a and c/q), which tends to the half-line as a → 0."""
    eps, mp, sp, mq, sq = (
        np.asarray(v, dtype=np.float64)
        for v in np.broadcast_arrays(epsilon, mean_p, sd_p, mean_q, sd_q)
    )
    if not ((sp > 0).all() and (sq > 0).all()):
        raise ValueError("the standard deviations must be > 0")
    a = 0.5 / sq**2 - 0.5 / sp**2
    b = mp / sp**2 - mq / sq**2
    c = np.log(sq / sp) - 0.5 * (mp / sp) ** 2 + 0.5 * (mq / sq) ** 2 - eps
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        disc = b * b - 4.0 * a * c
        root = np.sqrt(np.maximum(disc, 0.0))
        half = -0.5 * (b + np.where(b >= 0, 1.0, -1.0) * root)
        r_a = np.where(a != 0, half / a, np.inf)
        r_c = np.where(half != 0, c / half, 0.0)
        r1, r2 = np.minimum(r_a, r_c), np.maximum(r_a, r_c)
        line = -c / np.where(b != 0, b, 1.0)  # a = 0: the half-line's end
    # A as an interval (lo, hi), or the outside of one. Two roots: between them (a < 0)
    # or outside them (a > 0); none: A is empty (a < 0) or everything (a > 0: the
    # outside of (0, 0)); a = 0: a half-line, or everything or nothing (b = 0).
    roots = (a != 0) & (disc > 0)
    rising, falling = (a == 0) & (b > 0), (a == 0) & (b < 0)
    outside = (a > 0) | ((a == 0) & (b == 0) & (c > 0))
    lo = np.where(roots, r1, np.where(rising, line, np.where(falling, -np.inf, 0.0)))
    hi = np.where(roots, r2, np.where(rising, np.inf, np.where(falling, line, 0.0)))

    def mass(mean: F64, sd: F64) -> F64:
        return np.where(outside, _mass_outside(lo, hi, mean, sd), _mass_inside(lo, hi, mean, sd))

    p_mass, q_mass = mass(mp, sp), mass(mq, sq)
    with np.errstate(divide="ignore", over="ignore"):
        scaled = np.exp(eps + np.log(q_mass))  # e^ε·Q(A) without inf·0
    return np.asarray(np.maximum(p_mass - scaled, 0.0), dtype=np.float64)


def _pair_delta(epsilon: F64, mean: F64, sd: F64) -> F64:
    """δ(ε) of the pair N(0, 1) and N(mean, sd²): the larger hockey stick of the two
    directions."""
    forward = gaussian_hockey_stick(epsilon, mean, sd, 0.0, 1.0)
    backward = gaussian_hockey_stick(epsilon, 0.0, 1.0, mean, sd)
    return np.maximum(forward, backward)


def gaussian_pair_epsilon(
    mean: npt.ArrayLike,
    sd: npt.ArrayLike,
    delta: float,
    *,
    tol: float = EPSILON_TOLERANCE,
    ceiling: float = EPSILON_CEILING,
) -> F64:
    """The ε at ``delta`` of the pair N(0, 1) against N(mean, sd²) (standardised: the
    pair N(0, σ₀²) against N(μ, s²) has the ε of N(0, 1) against N(μ/σ₀, (s/σ₀)²), as
    ε is unchanged by the same affine map applied to both), broadcast over ``mean`` and
    ``sd``:

        ε(δ) = min{ε ≥ 0 : H_ε(P‖Q) ≤ δ and H_ε(Q‖P) ≤ δ},  P = N(mean, sd²), Q = N(0, 1),

    with H_ε in closed form (:func:`gaussian_hockey_stick`). H_ε is non-increasing in ε,
    so ε is bracketed by doubling from 1 and then bisected, all entries at once, until
    the bracket is narrower than ``tol``: the value returned is within ``tol`` above the
    root of the computed δ(ε) = δ (0 where the pair is already within δ at ε = 0; ∞
    past ``ceiling``). The computed δ(ε) is exact up to rounding, about 1e-16 absolute
    (it agrees with ``scipy.integrate.quad`` of max(p − e^ε·q, 0) to that), which moves
    the root by about 1e-16/|dδ/dε|: against roots found from ``quad``, 1e-9 for
    ε ≤ 20 (δ = 1e-5, 1e-6) and 3e-8 at ε ≈ 99 (δ = 1e-8) — far below the spread of
    the estimate itself.
    With sd = 1 it is the Gaussian mechanism's ε at sensitivity/σ = |mean| (Balle &
    Wang 2018): δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    m, s = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(mean, sd))
    if not (np.isfinite(m).all() and np.isfinite(s).all() and (s > 0).all()):
        raise ValueError("the means must be finite and the standard deviations finite and > 0")
    lo = np.zeros_like(m)
    hi = np.ones_like(m)
    above = _pair_delta(hi, m, s) > delta
    while above.any():  # doubling: at most log2(ceiling) steps
        lo = np.where(above, hi, lo)
        hi = np.where(above, 2.0 * hi, hi)
        above &= hi < ceiling
        above &= _pair_delta(hi, m, s) > delta
    unbounded = _pair_delta(np.minimum(hi, ceiling), m, s) > delta
    steps = max(0, math.ceil(math.log2(max(float((hi - lo).max(initial=0.0)), tol) / tol)))
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        over = _pair_delta(mid, m, s) > delta
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    within = _pair_delta(np.zeros_like(m), m, s) <= delta
    out = np.where(within, 0.0, np.where(unbounded, np.inf, hi))
    return np.asarray(out, dtype=np.float64)


def _unavailable(section: dict[str, Any], reason: str) -> dict[str, Any]:
    return {**section, "epsilon": None, "reason": reason}


def empirical_epsilon(
    directions: F64,
    delta_params: F64,
    delta: float,
    *,
    included: npt.ArrayLike,
    crowding: float | None = None,
) -> dict[str, Any]:
    """The ``empirical`` section of a run with canaries: the ε at the run's ``delta`` of
    N(0, 1/d) against N(μ̂, ŝ²), fitted to the cosines of the canaries' ``directions``
    (K, d) with the model's change ``delta_params`` = w_R − w_0 (see the module).

    ``included``: per canary, the number of released rounds whose sum held its update
    (its canary-rounds). Every canary's cosine enters the fit, those never picked too:
    a canary's participation is as random as a client's, and the estimate is of a
    client in the population, not of one known to have taken part. The estimate is
    None, with the ``reason``, when fewer than two canaries ever reached a release, when
    the model did not move, or when the cosines do not vary.

    ``crowding``: ρ of :func:`canary_crowding`, when the run knows it; above
    :data:`CROWDING_LIMIT` the estimate stands with a ``caveat``.

    Keys: ``epsilon`` (float, ∞ past :data:`EPSILON_CEILING`, or None), ``canaries``
    (K), ``canaries_included`` (canaries in at least one release), ``canary_rounds``
    (canary-rounds released), ``mean_cosine`` μ̂ and ``sd_cosine`` ŝ (ddof 1),
    ``null_sd`` 1/√d, ``delta``, ``method`` (:data:`METHOD`), ``reason`` (None when
    estimated), ``crowding`` (ρ or None) and ``caveat`` (None, or why to doubt it)."""
    k, d = directions.shape
    counts = np.asarray(included, dtype=np.int64)
    if counts.shape != (k,):
        raise ValueError(f"included needs one count per canary ({k}), got shape {counts.shape}")
    section: dict[str, Any] = {
        "epsilon": None,
        "canaries": int(k),
        "canaries_included": int((counts > 0).sum()),
        "canary_rounds": int(counts.sum()),
        "mean_cosine": None,
        "sd_cosine": None,
        "null_sd": 1.0 / math.sqrt(d),
        "delta": float(delta),
        "method": METHOD,
        "reason": None,
        "crowding": None if crowding is None else float(crowding),
        "caveat": None,
    }
    if crowding is not None and crowding > CROWDING_LIMIT:
        section["caveat"] = (
            f"crowded canaries: they put ρ = {crowding:.3g} of the noise's energy into the "
            f"model's change (> {CROWDING_LIMIT:g}), so their cosines shrink by "
            f"{1 - 1 / math.sqrt(1 + crowding):.0%} and carry each other's; use fewer "
            f"canaries (ρ grows as K/d, d = {d} parameters here)"
        )
    cosines = canary_cosines(directions, delta_params) if k else None
    if cosines is not None and k >= 2:
        section["mean_cosine"] = float(cosines.mean())
        section["sd_cosine"] = float(cosines.std(ddof=1))
    if section["canaries_included"] < 2:
        return _unavailable(
            section,
            f"{section['canaries_included']} of {k} canaries reached a released round: "
            "at least 2 are needed to fit the cosines (add canaries, rounds or a higher rate)",
        )
    if cosines is None:
        return _unavailable(section, "the model did not move (Δ = 0): no cosine is defined")
    if not section["sd_cosine"] > 0:
        return _unavailable(section, "the canaries' cosines do not vary: no Gaussian fits them")
    scale = math.sqrt(d)  # standardise by the null's sd 1/√d
    eps = gaussian_pair_epsilon(section["mean_cosine"] * scale, section["sd_cosine"] * scale, delta)
    section["epsilon"] = float(eps)
    return section
