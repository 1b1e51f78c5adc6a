"""The one-run empirical ε from canaries (Andrew et al., ICLR 2024): the canaries' pure
functions; the Gaussian pair's ε against independent computations (numerical
integration, the Gaussian mechanism's closed form); the estimate on a synthetic
training run against the analytic ε of that run; and the ``empirical`` section as the
report, the study rows and the HTML page show it."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn.canaries import (
    CROWDING_LIMIT,
    EPSILON_CEILING,
    EPSILON_TOLERANCE,
    METHOD,
    canary_cosines,
    canary_crowding,
    canary_directions,
    canary_names,
    canary_rate,
    canary_updates,
    empirical_epsilon,
    gaussian_hockey_stick,
    gaussian_pair_epsilon,
    sample_canaries,
)
from privsim.protocols.fedlearn.config import MAX_CANARIES, TrainingConfig
from privsim.protocols.fedlearn.report import EMPIRICAL_COLUMN, flatten, report_lines
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

# -- the pure functions --------------------------------------------------------------


def test_canaries_are_named_apart_from_the_clients():
    assert canary_names(3) == ("canary-0", "canary-1", "canary-2")
    assert canary_names(0) == ()


def test_directions_are_unit_rows_drawn_from_the_generator():
    first = canary_directions(5, 300, np.random.default_rng(7))
    again = canary_directions(5, 300, np.random.default_rng(7))
    assert first.shape == (5, 300)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(first, again)  # a pure function of the stream
    assert not first.flags.writeable
    assert canary_directions(0, 10, np.random.default_rng(1)).shape == (0, 10)
    with pytest.raises(ValueError):
        canary_directions(2, 0, np.random.default_rng(1))


def test_a_direction_never_inserted_has_the_null_cosines():
    """Cosines of independent uniform directions with a fixed vector: mean 0, variance
    exactly 1/d (checked to 4 standard errors of a variance over 4000 draws)."""
    d, k = 400, 4000
    directions = canary_directions(k, d, np.random.default_rng(3))
    fixed = np.random.default_rng(4).standard_normal(d)
    cosines = canary_cosines(directions, fixed)
    assert cosines is not None
    assert abs(cosines.mean()) < 4 / math.sqrt(k * d)
    assert cosines.var() * d == pytest.approx(1.0, abs=4 * math.sqrt(2 / k))


def test_the_picked_canaries_send_their_direction_at_the_clipping_norm():
    directions = canary_directions(4, 6, np.random.default_rng(2))
    picked = np.array([True, False, True, False])
    rows = canary_updates(directions, picked, 2.5)
    np.testing.assert_allclose(rows, 2.5 * directions[[0, 2]])
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 2.5)
    np.testing.assert_allclose(canary_updates(directions, [3, 1], 1.0), directions[[3, 1]])
    assert canary_updates(directions, np.zeros(4, bool), 1.0).shape == (0, 6)


def test_canaries_are_picked_at_a_clients_rate():
    poisson = TrainingConfig(sampling="poisson", rate=0.2)
    fixed = TrainingConfig(sampling="fixed", cohort=30)
    assert canary_rate(poisson, 1000) == pytest.approx(0.2)
    assert canary_rate(fixed, 120) == pytest.approx(30 / 120)  # m/N, each client's chance
    picked = sample_canaries(20_000, 0.25, np.random.default_rng(5))
    assert picked.dtype == bool and picked.shape == (20_000,)
    assert picked.mean() == pytest.approx(0.25, abs=4 * math.sqrt(0.25 * 0.75 / 20_000))
    assert not sample_canaries(10, 0.0, np.random.default_rng(5)).any()
    assert sample_canaries(10, 1.0, np.random.default_rng(5)).all()


@pytest.mark.parametrize(
    ("value", "ok"),
    [(0, True), (250, True), (MAX_CANARIES, True), (-1, False), (MAX_CANARIES + 1, False)],
)
def test_the_number_of_canaries_is_validated(value: int, ok: bool):
    if ok:
        assert TrainingConfig(canaries=value).canaries == value
        return
    with pytest.raises(FieldError) as found:
        TrainingConfig(canaries=value)
    assert found.value.field == "training.canaries" and "Fix:" in str(found.value)


# -- the Gaussian pair's ε against independent computations -----------------------------


def _quad_hockey_stick(eps: float, mp: float, sp: float, mq: float, sq: float) -> float:
    """H_ε(P‖Q) = ∫ max(p − e^ε·q, 0) by adaptive quadrature over ±14 standard
    deviations (the rest weighs < 1e-40), with no knowledge of where p = e^ε·q."""
    lo, hi = min(mp - 14 * sp, mq - 14 * sq), max(mp + 14 * sp, mq + 14 * sq)
    scale = math.exp(eps)

    def gap(x: float) -> float:
        return max(float(stats.norm.pdf(x, mp, sp) - scale * stats.norm.pdf(x, mq, sq)), 0.0)

    points = np.linspace(lo, hi, 41)[1:-1]
    value, _ = integrate.quad(gap, lo, hi, points=points, limit=2000, epsabs=1e-15, epsrel=1e-12)
    return float(value)


#: (mean cosine μ, its sd s, the model's size d, δ): both s < 1/√d and s > 1/√d.
PAIRS = [
    (0.01, 0.008, 10_000, 1e-5),
    (0.02, 0.012, 10_000, 1e-6),
    (0.05, 0.035, 1_000, 1e-5),
    (-0.004, 0.0021, 40_000, 1e-8),
]


@pytest.mark.parametrize(("mu", "s", "d", "delta"), PAIRS)
def test_the_hockey_stick_is_the_integral_it_stands_for(mu: float, s: float, d: int, delta: float):
    null = 1 / math.sqrt(d)
    for eps in (0.0, 0.7, 4.0):
        for p, q in (((mu, s), (0.0, null)), ((0.0, null), (mu, s))):
            closed = float(gaussian_hockey_stick(eps, *p, *q))
            # quad's own error, with the kinks where p = e^ε·q, is about 1e-12
            assert closed == pytest.approx(_quad_hockey_stick(eps, *p, *q), abs=1e-10)


def _mp_hockey_stick(eps: float, mp_: float, sp: float, mq: float, sq: float) -> Any:
    """H_ε(P‖Q) at 40 digits: mpmath's quadrature of p − e^ε·q over the pieces where it
    is positive, split at the real roots of log p − log q = ε (a quadratic)."""
    import mpmath

    with mpmath.workdps(40):
        mp_, sp, mq, sq, e = (mpmath.mpf(v) for v in (mp_, sp, mq, sq, eps))
        a = 1 / (2 * sq**2) - 1 / (2 * sp**2)
        b = mp_ / sp**2 - mq / sq**2
        c = mpmath.log(sq / sp) - mp_**2 / (2 * sp**2) + mq**2 / (2 * sq**2) - e
        disc = b * b - 4 * a * c
        if a == 0:
            roots = [-c / b]
        elif disc > 0:
            roots = sorted([(-b - mpmath.sqrt(disc)) / (2 * a), (-b + mpmath.sqrt(disc)) / (2 * a)])
        else:
            roots = []
        scale = mpmath.exp(e)

        def gap(x: Any) -> Any:
            return mpmath.npdf(x, mp_, sp) - scale * mpmath.npdf(x, mq, sq)

        total = mpmath.mpf(0)
        for lo, hi in itertools.pairwise([-mpmath.inf, *roots, mpmath.inf]):
            if mpmath.isinf(lo) and mpmath.isinf(hi):
                probe = mpmath.mpf(0)
            elif mpmath.isinf(lo):
                probe = hi - 1
            elif mpmath.isinf(hi):
                probe = lo + 1
            else:
                probe = (lo + hi) / 2
            if gap(probe) > 0:
                total += mpmath.quad(gap, [lo, hi])
        return total


@pytest.mark.parametrize(("mu", "s", "d", "delta"), PAIRS[:2])
def test_the_hockey_stick_agrees_with_a_40_digit_oracle(mu: float, s: float, d: int, delta: float):
    null = 1 / math.sqrt(d)
    for eps in (0.3, 2.0):
        for p, q in (((mu, s), (0.0, null)), ((0.0, null), (mu, s))):
            closed = float(gaussian_hockey_stick(eps, *p, *q))
            assert closed == pytest.approx(float(_mp_hockey_stick(eps, *p, *q)), abs=1e-15)


@pytest.mark.parametrize(("mu", "s", "d", "delta"), PAIRS)
def test_the_pair_epsilon_is_where_the_integral_reaches_delta(
    mu: float, s: float, d: int, delta: float
):
    """ε of N(0, 1/d) against N(μ, s²), found on the standardised pair: the larger
    divergence, integrated numerically, is δ at ε and above δ just below it."""
    null = 1 / math.sqrt(d)
    eps = float(gaussian_pair_epsilon(mu / null, s / null, delta))
    assert 0 < eps < math.inf

    def reached(e: float) -> float:
        return max(_quad_hockey_stick(e, mu, s, 0.0, null), _quad_hockey_stick(e, 0.0, null, mu, s))

    assert reached(eps) == pytest.approx(delta, rel=1e-6)
    assert reached(eps * (1 - 1e-4)) > delta


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-8])
def test_equal_variances_give_the_gaussian_mechanisms_epsilon(mu: float, delta: float):
    """N(0, 1) against N(μ, 1) is the Gaussian mechanism at sensitivity/σ = μ, whose
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) (Balle & Wang 2018), solved by brentq."""

    def profile(e: float) -> float:
        return float(
            stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2)
        )

    exact = optimize.brentq(lambda e: profile(e) - delta, 0.0, 200.0, xtol=1e-13)
    got = float(gaussian_pair_epsilon(mu, 1.0, delta))
    assert exact <= got <= exact + 2 * EPSILON_TOLERANCE


def test_the_pair_epsilon_is_vectorised():
    means = np.array([[0.0, 0.5, 1.5], [-2.0, 3.0, 0.1]])
    sds = np.array([[1.0, 0.7, 1.3], [1.0, 2.0, 1.0]])
    together = gaussian_pair_epsilon(means, sds, 1e-5)
    apart = np.array(
        [[float(gaussian_pair_epsilon(m, s, 1e-5)) for m, s in zip(rm, rs, strict=True)]
         for rm, rs in zip(means, sds, strict=True)]
    )  # fmt: skip
    assert together.shape == (2, 3)
    np.testing.assert_allclose(together, apart, atol=2 * EPSILON_TOLERANCE)
    assert together[0, 0] == 0.0  # identical distributions
    assert gaussian_pair_epsilon(60.0, 40.0, 1e-5) == math.inf  # canaries dominate the model


@settings(max_examples=60, deadline=None)
@given(
    mean=st.floats(-5, 5),
    sd=st.floats(0.3, 3.0),
    delta=st.sampled_from([1e-3, 1e-5, 1e-7, 1e-9]),
)
def test_the_pair_epsilon_is_the_least_epsilon_meeting_delta(mean: float, sd: float, delta: float):
    """ε ≥ 0; the pair meets δ at ε in both directions and misses it a little below ε
    (∞: it misses it still at the ceiling — a small sd far from the null's, e.g. mean 5,
    sd 0.31, δ = 1e-7, is beyond ε = 500); a mirrored mean gives the same ε."""
    eps = float(gaussian_pair_epsilon(mean, sd, delta))

    def reached(e: float) -> float:
        forward = gaussian_hockey_stick(e, mean, sd, 0.0, 1.0)
        backward = gaussian_hockey_stick(e, 0.0, 1.0, mean, sd)
        return float(max(forward, backward))

    assert eps >= 0
    if eps == math.inf:
        assert reached(EPSILON_CEILING) > delta
        return
    assert reached(eps) <= delta
    if eps > 1e-6:
        assert reached(eps - 1e-6) > delta
    assert float(gaussian_pair_epsilon(-mean, sd, delta)) == pytest.approx(eps, abs=1e-7)


@settings(max_examples=40, deadline=None)
@given(mean=st.floats(0, 6), step=st.floats(0.01, 1))
def test_equal_variance_epsilon_grows_with_the_shift(mean: float, step: float):
    low, high = gaussian_pair_epsilon([mean, mean + step], 1.0, 1e-5)
    assert high >= low - EPSILON_TOLERANCE


# -- the estimate on a synthetic training run ----------------------------------------


def _synthetic_run(
    k: int, d: int, rounds: int, z: float, q: float, seed: int
) -> tuple[dict[str, Any], np.ndarray]:
    """A model change made as training makes it, the clients left out: each round the
    canaries picked at rate q send C·c_k, and the round's sum gets Gaussian noise of
    multiplier z (σ = z·C on every coordinate); Δ is the sum over the rounds."""
    clip = 1.0
    rng = np.random.default_rng(seed)
    directions = canary_directions(k, d, rng)
    change = np.zeros(d)
    counts = np.zeros(k, dtype=np.int64)
    for _ in range(rounds):
        picked = sample_canaries(k, q, rng)
        counts += picked
        change += canary_updates(directions, picked, clip).sum(axis=0)
        change += rng.normal(0.0, z * clip, size=d)
    return empirical_epsilon(directions, change, 1e-5, included=counts), counts


def _standardised_moments(rounds: int, z: float, q: float) -> tuple[float, float, float]:
    """Mean, sd and kurtosis of √d·cos_k for large d. ⟨c_k, Δ⟩/C = n_k + √R·z·ξ (n_k ~
    Binomial(R, q) the canary's rounds, ξ ~ N(0, 1); the other canaries add R²(K−1)/d
    of variance) and ‖Δ‖/C ≈ z·√(R·d), so √d·cos_k ≈ n_k/(z√R) + ξ: mean q√R/z,
    variance 1 + q(1−q)/z²."""
    v = q * (1 - q)
    var_b = v / z**2
    fourth_b = rounds * v * (1 + 3 * (rounds - 2) * v) / (z**4 * rounds**2)
    var = 1 + var_b
    return q * math.sqrt(rounds) / z, math.sqrt(var), (fourth_b + 6 * var_b + 3) / var**2


#: (rounds R, noise multiplier z, rate q): every round (the Gaussian mechanism of the
#: final model, μ = √R/z), sampled rounds, and canaries never picked (the null).
SETTINGS = [(4, 1.5, 1.0), (10, 1.0, 0.3), (4, 1.5, 0.0)]


@pytest.mark.parametrize(("rounds", "z", "q"), SETTINGS)
def test_the_estimate_recovers_the_analytic_epsilon_within_the_canaries_spread(
    rounds: int, z: float, q: float
):
    """The estimate is ε of N(0, 1) against N(μ̂√d, (ŝ√d)²); in the limit it is ε of
    the standardised moments of the setting (:func:`_standardised_moments`) — with
    q = 1 the analytic ε of the Gaussian mechanism of the final model, Δ = R·C·c_k +
    N(0, R·z²·C²), sensitivity over σ = √R/z; with q = 0 the null, ε = 0.

    The tolerance comes from K. Over K canaries the fitted mean has standard error s/√K
    and the fitted sd s·√((κ − 1)/(4K)) (κ the kurtosis: 3, so 1/(2K), for Gaussian
    cosines); both must be within 4 standard errors of the limit, and the estimate
    within the range of ε over that box of (mean, sd) — a range, as ε is not monotone
    in the sd (it is least near sd = 1). The canaries' own weight in ‖Δ‖ shrinks every
    cosine by 1/√(1 + q·R·K/(z²·d)), 0.9% and less here, and the box spans that too.
    K = 250 in d = 25,000 keeps the run to 50 MB and a second; the range is wide
    (ε's sensitivity to the fitted sd is what the paper's 1000 canaries pay for)."""
    k, d = 250, 25_000
    section, counts = _synthetic_run(k, d, rounds, z, q, seed=11)
    mean, sd, kurtosis = _standardised_moments(rounds, z, q)
    se_mean, se_sd = sd / math.sqrt(k), sd * math.sqrt((kurtosis - 1) / (4 * k))
    fitted_mean = section["mean_cosine"] * math.sqrt(d)
    fitted_sd = section["sd_cosine"] * math.sqrt(d)
    shrink = 1 / math.sqrt(1 + q * rounds * k / (z**2 * d))
    assert mean * shrink - 4 * se_mean <= fitted_mean <= mean + 4 * se_mean
    assert abs(fitted_sd - sd) <= 4 * se_sd
    means = np.linspace(mean * shrink - 4 * se_mean, mean + 4 * se_mean, 41)
    sds = np.linspace(sd - 4 * se_sd, sd + 4 * se_sd, 41)
    box = gaussian_pair_epsilon(means[:, None], sds[None, :], 1e-5)
    analytic = float(gaussian_pair_epsilon(mean, sd, 1e-5))
    assert box.min() <= analytic <= box.max()
    if q == 0:  # nothing inserted: no estimate, but the fit is the null's
        assert section["epsilon"] is None and section["canary_rounds"] == 0
        assert float(gaussian_pair_epsilon(fitted_mean, fitted_sd, 1e-5)) <= box.max()
        return
    assert box.min() <= section["epsilon"] <= box.max()
    assert section["canary_rounds"] == counts.sum() > 0
    assert section["canaries"] == k and section["null_sd"] == pytest.approx(1 / math.sqrt(d))
    crowding = canary_crowding(counts, 1.0, z, rounds, d)
    if q == 1:  # every canary in every round: Σ n_k² = K·R², so ρ = R·K/(z²·d)
        assert crowding == pytest.approx(rounds * k / (z**2 * d))
    assert 1 / math.sqrt(1 + crowding) == pytest.approx(shrink, rel=0.01)


def test_crowding_is_the_canaries_energy_over_the_noises():
    assert canary_crowding([2, 0, 1], 2.0, 0.5, 4, 100) == pytest.approx(4 * 5 / (4 * 0.25 * 100))
    assert canary_crowding([1, 1], 1.0, 0.0, 3, 10) == math.inf  # no noise: nothing hides them
    assert canary_crowding([0, 0], 1.0, 0.0, 3, 10) == 0.0
    assert math.isnan(canary_crowding([0, 0], 1.0, 1.0, 0, 10))  # no released round
    directions = canary_directions(3, 50, np.random.default_rng(9))
    change = np.random.default_rng(10).standard_normal(50) + 5 * directions.sum(axis=0)
    calm = empirical_epsilon(directions, change, 1e-5, included=[1, 1, 1], crowding=0.01)
    assert calm["crowding"] == 0.01 and calm["caveat"] is None
    crowded = empirical_epsilon(
        directions, change, 1e-5, included=[1, 1, 1], crowding=10 * CROWDING_LIMIT
    )
    assert crowded["epsilon"] == calm["epsilon"]  # the estimate stands, with its caveat
    assert "crowded canaries" in crowded["caveat"] and "d = 50" in crowded["caveat"]


def test_an_estimate_needs_two_released_canaries_and_a_moving_model():
    directions = canary_directions(3, 50, np.random.default_rng(9))
    change = np.random.default_rng(10).standard_normal(50)
    one = empirical_epsilon(directions, change, 1e-5, included=[0, 2, 0])
    assert one["epsilon"] is None and "1 of 3 canaries" in one["reason"]
    assert one["canary_rounds"] == 2 and one["mean_cosine"] is not None
    still = empirical_epsilon(directions, np.zeros(50), 1e-5, included=[1, 1, 1])
    assert still["epsilon"] is None and "did not move" in still["reason"]
    ok = empirical_epsilon(
        directions, change + 5 * directions.sum(axis=0), 1e-5, included=[1, 1, 1]
    )
    assert ok["epsilon"] is not None and ok["epsilon"] > 0 and ok["reason"] is None
    assert set(ok) == {
        "epsilon", "canaries", "canaries_included", "canary_rounds", "mean_cosine",
        "sd_cosine", "null_sd", "delta", "method", "reason", "crowding", "caveat",
    }  # fmt: skip
    assert ok["method"] == METHOD and ok["delta"] == 1e-5
    with pytest.raises(ValueError):
        empirical_epsilon(directions, change, 1e-5, included=[1, 1])


# -- the section in the report, the study rows and the HTML page ------------------------


def _section(epsilon: float | None) -> dict[str, Any]:
    return {
        "epsilon": epsilon,
        "canaries": 200,
        "canaries_included": 180 if epsilon is not None else 1,
        "canary_rounds": 412 if epsilon is not None else 1,
        "mean_cosine": 0.031,
        "sd_cosine": 0.02,
        "null_sd": 0.0125,
        "delta": 1e-5,
        "method": METHOD,
        "reason": None if epsilon is not None else "1 of 200 canaries reached a released round",
        "crowding": 0.02,
        "caveat": None,
    }


def _result(empirical: dict[str, Any] | None, claimed: float = 5.0) -> dict[str, Any]:
    """A released fedlearn result as a result file holds it (the parts the report, the
    study worker and the page read)."""
    own: dict[str, Any] = {
        "algorithm": "dp_fedavg",
        "aggregation": "dca",
        "rounds_planned": 4,
        "rounds_run": 4,
        "stopped": None,
        "noise": {
            "noise_multiplier": 1.1,
            "calibrated": True,
            "sigma": 1.1,
            "planned_cohort": 20.0,
        },
        "curves": [],
    }
    if empirical is not None:
        own["empirical"] = empirical
    return {
        "protocol": "fedlearn",
        "status": "released",
        "abort": None,
        "privacy": {
            "target_epsilon": 8.0,
            "target_delta": 1e-5,
            "achieved_epsilon": claimed,
            "delta": 1e-5,
            "guarantee_met": True,
            "non_private": False,
        },
        "accuracy": {
            "test_accuracy": 0.8,
            "test_loss": 0.5,
            "best_test_accuracy": 0.81,
            "initial_test_accuracy": 0.3,
            "rounds_released": 4,
        },
        "timing": {"wall_seconds": 1.0},
        "fedlearn": own,
        "scenario": Scenario.from_dict(EXAMPLE).to_dict(),
    }


def test_the_report_sets_the_empirical_epsilon_beside_the_claimed():
    lines = report_lines(_result(_section(2.75), claimed=5.0))
    [at] = [i for i, line in enumerate(lines) if line.startswith("Empirical")]
    assert "ε ≈ 2.75 at δ = 1e-05 beside the claimed 5" in lines[at]
    assert "200 canaries (180 in a release, 412 canary-rounds)" in lines[at + 1]
    unavailable = report_lines(_result(_section(None)))
    assert any(
        line.startswith("Empirical   ε unavailable: 1 of 200 canaries") for line in unavailable
    )
    assert not any(line.startswith("Empirical") for line in report_lines(_result(None)))
    doubtful = {**_section(2.75), "caveat": "crowded canaries: …"}
    assert "            caveat: crowded canaries: …" in report_lines(_result(doubtful))


def test_the_empirical_epsilon_flattens_into_its_study_column():
    from privsim.studies.worker import flatten_result

    row = flatten_result(_result(_section(2.75)))
    assert row["fedlearn"]["empirical_epsilon"] == 2.75
    assert row["fedlearn"]["canaries"] == 200 and row["fedlearn"]["canary_rounds"] == 412
    assert row["fedlearn"]["canary_crowding"] == 0.02
    assert row["privacy"]["achieved_epsilon"] == 5.0  # the claim, beside it
    frame = pd.json_normalize([row], sep=".")
    assert EMPIRICAL_COLUMN in frame and "privacy.achieved_epsilon" in frame
    assert flatten(_result(_section(None)))["fedlearn"]["empirical_epsilon"] is None
    assert flatten(_result(None)) == {}


def _rows() -> pd.DataFrame:
    """Study rows of two cells × three replications, as the store loads them."""
    from privsim.studies.worker import flatten_result

    rows = []
    for cell, aggregation in enumerate(("dca", "trusted")):
        for rep in range(3):
            estimate = None if (cell, rep) == (1, 2) else 1.5 + cell + 0.25 * rep
            row = flatten_result(_result(_section(estimate), claimed=4.0 + cell + 0.1 * rep))
            row.update(
                row_id=f"c{cell}-r{rep}",
                cell=f"c{cell}",
                replication=rep,
                seed=rep,
                grid={"training.aggregation": aggregation},
            )
            rows.append(row)
    return pd.json_normalize(rows, sep=".")


def test_the_study_summary_and_the_html_page_show_the_empirical_epsilon():
    from privsim.analysis.html import render_html
    from privsim.analysis.html_figures import protocol_figures
    from privsim.analysis.summary import metrics_of, summarise
    from privsim.protocols.fedlearn.figures import EMPIRICAL_TITLE

    frame = _rows()
    metrics = list(metrics_of(frame))
    assert metrics.index(EMPIRICAL_COLUMN) == metrics.index("privacy.achieved_epsilon") + 1
    summary = summarise(frame)
    medians = summary[summary["metric"] == EMPIRICAL_COLUMN].set_index("grid.training.aggregation")[
        "median"
    ]
    assert medians["dca"] == pytest.approx(1.75) and medians["trusted"] == pytest.approx(2.625)
    page = render_html(frame, results_dir="results/fedlearn")
    assert f'data-table="{EMPIRICAL_COLUMN}"' in page  # its summary table
    assert "empirical ε from canaries" in page
    [drawn] = [f for f in protocol_figures(frame) if f.title.startswith(EMPIRICAL_TITLE)]
    assert "1 replications without a finite estimate left out" in drawn.title
    assert drawn.points == 5 and drawn.html in page  # a point per estimate, on the page


def test_rows_without_canaries_draw_no_empirical_figure():
    from types import SimpleNamespace

    from privsim.protocols.fedlearn.figures import empirical_figure

    frame = _rows().drop(columns=[EMPIRICAL_COLUMN])
    kit = SimpleNamespace(frame=frame, curves=None, describe=lambda c, v: str(v))
    assert empirical_figure(kit) is None
    kit.frame = _rows()
    found = empirical_figure(kit)
    assert found is not None
    _, figure = found
    points = [t for t in figure["data"] if t["mode"] == "markers"]
    assert sum(len(t["x"]) for t in points) == 5  # the row without an estimate left out
    assert figure["data"][-1]["name"] == "empirical = claimed"
