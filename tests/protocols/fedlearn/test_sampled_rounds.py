"""A sampled round is one mechanism whatever its cohort, and each is charged the pair it
really is: empty cohorts, the target's own noise share under Poisson sampling, the
curve of ε against the final figure, and the modes that cannot be accounted. Every ε
asserted is recomputed here from the events the rounds must be (by the ledger's own
composition of events built apart), so the checks are exact, not within a tolerance."""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import pytest

from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn.run import train
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import ScenarioError
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import epsilon_of
from privsim.sim.share_pair import SampledSharesGaussianDpEvent

POISSON = {
    "training.sampling": "poisson",
    "privacy.neighbour": "add_remove",
    "privacy.on_overspend": "allow",
    "training.noise_multiplier": 1.0,
}


def _scenario(**changes: Any) -> Scenario:
    return scenario_from_dict(set_fields(EXAMPLE, {**POISSON, **changes}))


def test_an_empty_cohort_still_releases_the_curators_noise_and_is_charged() -> None:
    """30 clients at q = 0.05 over 40 rounds: some cohorts are empty (P = 0.95³⁰ ≈ 0.21
    each). Whether a cohort is empty depends on whether the target was sampled, so each
    such round releases the curator's noise alone and is charged the sampled Gaussian:
    the run's ε is exactly 40 sampled rounds."""
    scenario = _scenario(
        **{
            "population.clients": 30,
            "training.rate": 0.05,
            "training.rounds": 40,
            "training.aggregation": "trusted",
        }
    )
    t = train(scenario)
    empty = [r for r in t.records if r.picked == 0]
    assert empty and all(r.status == "released" and r.included == 0 for r in empty)
    assert all(e.status == "released" for e in t.ledger.entries)
    rounds = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(1.0)), 40
    )
    assert t.ledger.guarantee(t.coalition).epsilon == pytest.approx(
        epsilon_of([rounds], 1e-5), rel=1e-12
    )


def test_dca_under_poisson_sampling_is_charged_the_exact_pair_of_its_shares() -> None:
    """Each DCA round with H honest shares is N(u, H·σ_i²) with the target sampled and
    N(0, (H − 1)·σ_i²) without, on all d coordinates: the ledger composes exactly those
    pairs, which cost more than crediting H − 1 shares on both sides."""
    scenario = _scenario(
        **{
            "population.clients": 100,
            "training.rate": 0.2,
            "training.rounds": 3,
            "training.aggregation": "dca",
            "dca.tolerated": 2,
        }
    )
    t = train(scenario)
    s_i = t.plan.noise.share_std / t.plan.delta_l2
    d = t.plan.dimension
    assert d == 33  # 10 features and 3 classes: 3·10 + 3
    pairs = [
        SampledSharesGaussianDpEvent(
            0.2, math.sqrt(r.included) * s_i, math.sqrt(r.included - 1) * s_i, d
        )
        for r in t.records
    ]
    found = t.ledger.guarantee(t.coalition).epsilon
    assert found == pytest.approx(epsilon_of(pairs, 1e-5), rel=1e-12)
    same_both_sides = [
        dp_accounting.PoissonSampledDpEvent(
            0.2, dp_accounting.GaussianDpEvent(math.sqrt(r.included - 1) * s_i)
        )
        for r in t.records
    ]
    assert found > epsilon_of(same_both_sides, 1e-5)
    # the planner calibrates on the same pair: leaving z out meets the target
    planned = train(
        scenario_from_dict(
            set_fields(
                EXAMPLE,
                {
                    **POISSON,
                    **{
                        "population.clients": 100,
                        "training.rate": 0.2,
                        "training.rounds": 3,
                        "training.aggregation": "dca",
                        "dca.tolerated": 2,
                        "training.noise_multiplier": None,
                        "privacy.epsilon": 4.0,
                    },
                },
            )
        )
    )
    assert planned.plan.noise.calibrated
    plan = planned.plan
    s_i = plan.noise.share_std / plan.delta_l2
    # its z: three rounds of the pair at the planned honest shares (the target's own
    # included) compose to ε = 4 within the planner's tolerance (z to 1e-4, erring up)
    at_plan = SampledSharesGaussianDpEvent(
        0.2, math.sqrt(plan.needed) * s_i, math.sqrt(plan.needed - 1) * s_i, d
    )
    assert 4.0 * (1 - 1e-3) <= epsilon_of([at_plan] * 3, 1e-5) <= 4.0
    # the run is charged the exact pair of the shares each round realised, as above
    realised = [
        SampledSharesGaussianDpEvent(
            0.2, math.sqrt(r.included) * s_i, math.sqrt(r.included - 1) * s_i, d
        )
        for r in planned.records
    ]
    guarantee = planned.ledger.guarantee(planned.coalition)
    assert guarantee.epsilon == pytest.approx(epsilon_of(realised, 1e-5), rel=1e-12)


def test_the_curve_never_exceeds_the_result_and_ends_on_it() -> None:
    scenario = _scenario(
        **{
            "population.clients": 60,
            "training.rate": 0.2,
            "training.rounds": 6,
            "training.aggregation": "dca",
            "dca.tolerated": 2,
        }
    )
    t = train(scenario)
    final = t.ledger.guarantee(t.coalition).epsilon
    curve = [r.epsilon for r in t.records]
    assert curve == sorted(curve)
    assert curve[-1] == final and max(curve) <= final


def test_noise_on_the_mean_under_poisson_sampling_is_refused_by_name() -> None:
    """Flower's central DP (z·k/m, k counting the target) under Poisson sampling: the
    noise's variance reveals whether the target was sampled; refused when the scenario
    is read, naming the field and the fix."""
    with pytest.raises(ScenarioError) as found:
        _scenario(**{"training.aggregation": "trusted", "training.central_noise": "mean"})
    assert found.value.field == "training.central_noise"
    assert 'central_noise = "sum"' in str(found.value)


def test_a_secagg_round_the_target_could_have_made_run_is_not_private() -> None:
    """SecAgg needs two picked clients. With one picked, the target's presence would
    make the round run, so the skip reveals its sampling: that round is charged as not
    private (∞), never skipped silently; with none picked both sides skip."""
    scenario = _scenario(
        **{
            "population.clients": 12,
            "training.rate": 0.3,
            "training.rounds": 20,
            "dca.tolerated": 1,
            "training.aggregation": "secagg",
            "training.noise_multiplier": 2.0,
            "dataset.synthetic_features": 3,
        }
    )
    t = train(scenario)
    one = [r for r in t.records if r.picked == 1]
    none = [r for r in t.records if r.picked == 0]
    assert one, "seeded: at least one round picks a single client"
    labels = {e.label for e in t.ledger.entries}
    assert all(f"round-{r.round}" in labels for r in one)
    assert all(f"round-{r.round}" not in labels for r in none)
    assert math.isinf(t.ledger.guarantee(t.coalition).epsilon)


def test_integer_noise_on_a_poisson_sample_carries_its_caveat() -> None:
    """The own-share omission that the integer bounds still make is said in the result
    and its report, not left silent."""
    from privsim.api import run
    from privsim.protocols.fedlearn.report import report_lines
    from privsim.protocols.fedlearn.run import INTEGER_POISSON_CAVEAT

    scenario = _scenario(
        **{
            "population.clients": 40,
            "training.rate": 0.3,
            "training.rounds": 2,
            "training.aggregation": "secagg_plus",
            "training.noise_multiplier": 2.0,
        }
    )
    result = run(scenario).to_dict()
    assert result["privacy"]["details"]["caveat"] == INTEGER_POISSON_CAVEAT
    assert f"Caveat      {INTEGER_POISSON_CAVEAT}" in report_lines(result)
    trusted = run(_scenario(**{"training.rounds": 1, "training.aggregation": "trusted"}))
    assert "caveat" not in trusted.to_dict()["privacy"]["details"]
