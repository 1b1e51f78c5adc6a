"""Iterative private learning end to end: the rounds run on the bus through each
aggregation, the ledger reports the ε the realised coalition and dropouts delivered,
the training stops at the round that would overspend, and bad input is a named error.

The runs are small (a few rounds of a synthetic population) and seeded: every figure
asserted below is either exact (a count, an ε recomputed from the same events) or a
comparison whose margin is explained beside it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import dp_accounting
import numpy as np
import pytest

from privsim.api import run
from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn.accounting import RoundShape, calibrate_multiplier
from privsim.protocols.fedlearn.cohort import Availability
from privsim.protocols.fedlearn.config import AvailabilityConfig
from privsim.protocols.fedlearn.run import train
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import epsilon_of
from privsim.sim.sampling import Sampling


def _scenario(**changes: Any) -> Scenario:
    return scenario_from_dict(set_fields(EXAMPLE, changes))


def _result(**changes: Any) -> dict[str, Any]:
    return run(_scenario(**changes)).to_dict()


@pytest.mark.parametrize("aggregation", ["dca", "trusted", "local"])
def test_every_aggregation_trains_and_meets_its_budget(aggregation: str) -> None:
    """Over real AES-GCM channels (the default encryption), three rounds of 20 picked
    clients each: every update reaches the sum, and ε grows round by round."""
    result = _result(
        **{
            "training.aggregation": aggregation,
            "training.rounds": 3,
            "network.encryption": "aes-gcm",
        }
    )
    assert result["status"] == "released"
    curves = result["fedlearn"]["curves"]
    assert [r["round"] for r in curves] == [1, 2, 3]
    assert all(r["picked"] == 20 and r["included"] == 20 for r in curves)
    assert result["privacy"]["guarantee_met"] is True
    eps = [r["epsilon"] for r in curves]
    assert eps == sorted(eps) and eps[-1] == result["privacy"]["achieved_epsilon"]
    # every picked client downloaded the model: 20 downloads per round at least
    assert result["communication"]["by_kind"]["Download"] == 60


def test_learning_beats_the_untrained_model_without_noise_pressure() -> None:
    """With little noise (z = 0.15 given, well inside a budget of ε = 1000) five rounds
    of FedAvg on scikit-learn's digits (100 clients, cohorts of 20) raise the test
    accuracy far above the untrained model's (about 1/10 for 10 classes; 0.74–0.76 at
    seeds 1–4 when this was written, 0.8 after 30 rounds): the margin 0.4 is many times
    the test set's binomial sd (√(0.25/360) ≈ 0.026).

    z is given rather than calibrated to ε = 1000 (z ≈ 0.065 over ten rounds): the
    planner has tests of its own (below), and the accounting of a sampled round costs
    about 1/z² (the span of its privacy loss), so the smaller z and ten rounds took
    minutes to account for what the same learning shows here."""
    result = _result(
        **{
            "training.rounds": 5,
            "training.aggregation": "trusted",
            "training.noise_multiplier": 0.15,
            "privacy.epsilon": 1000.0,
            "dataset.source": "digits",
            "population.clients": 100,
        }
    )
    acc = result["accuracy"]
    assert acc["test_accuracy"] > acc["initial_test_accuracy"] + 0.4


@pytest.mark.parametrize(
    ("rate", "rounds", "target"),
    [(0.05, 50, 2.0), (6e-4, 5, 4.0), (0.2, 20, 0.5), (0.01, 400, 1.0)],
)
def test_the_planner_meets_the_target_tightly(rate: float, rounds: int, target: float) -> None:
    """The calibrated z meets ε on the ledger's own composition, and 0.1% less noise
    would not: the second pass stops at a relative width of 1e-4. The cases span the
    first (coarse) pass's root falling within 1e-4 of the ledger's (few rounds) and
    further off (400 rounds: the coarse ε is larger by up to R·10⁻³), where the
    second pass widens its bracket."""
    q = Sampling.poisson(rate, "server")
    z = calibrate_multiplier(target, 1e-5, rounds, RoundShape(sampling=q))

    def eps(mult: float) -> float:
        event = dp_accounting.SelfComposedDpEvent(
            q.wrap(dp_accounting.GaussianDpEvent(mult)), rounds
        )
        return epsilon_of([event], 1e-5)

    assert eps(z) <= target < eps(z * 0.999)


def test_the_planner_recovers_the_tff_tutorial_noise() -> None:
    """TensorFlow Federated's DP tutorial: q = 120/3383, z = 1.2, 100 rounds, δ = 1e-5
    is ε ≈ 1.7075 by PLD. Asking the planner for that ε gives z back within the PLD's
    discretisation (0.5%)."""
    q = Sampling.poisson(120 / 3383, "server")
    event = dp_accounting.SelfComposedDpEvent(q.wrap(dp_accounting.GaussianDpEvent(1.2)), 100)
    target = epsilon_of([event], 1e-5)
    assert target == pytest.approx(1.7075, rel=0.01)
    assert calibrate_multiplier(target, 1e-5, 100, RoundShape(sampling=q)) == pytest.approx(
        1.2, rel=0.005
    )


def test_a_colluding_server_loses_the_amplification() -> None:
    """The server picks the cohort: colluding, it knows who was sampled, so each round
    counts unamplified — R Gaussians of multiplier z compose to one of z/√R."""
    honest = _result()
    broken = _result(**{"threat.colluding_servers": ["server"]})
    z = honest["fedlearn"]["noise"]["noise_multiplier"]
    rounds = EXAMPLE["training"]["rounds"]
    unamplified = epsilon_of([dp_accounting.GaussianDpEvent(z)] * rounds, 1e-5)
    assert broken["privacy"]["achieved_epsilon"] == pytest.approx(unamplified, rel=1e-9)
    assert broken["privacy"]["achieved_epsilon"] > honest["privacy"]["achieved_epsilon"]


def test_dropouts_after_sampling_cost_privacy_by_the_realised_noise() -> None:
    """Availability 0.7 with DCA and no tolerance: each round is the sampled Gaussian of
    √(H − 1)·σ_i/Δ for the H clients that reached the sum, so the run's ε is exactly
    the composition of those; it exceeds the plan, and the training says so (or stops
    at the round that would overspend)."""
    changes = {
        "availability.model": "bernoulli",
        "availability.probability": 0.7,
        "privacy.on_overspend": "warn",
        "dca.tolerated": 1,
        "dca.on_excess_dropout": "release",
    }
    scenario = _scenario(**changes)
    with pytest.warns(UserWarning):
        t = train(scenario)
    plan = t.plan.noise
    delta_l2 = plan.sigma / plan.multiplier  # σ = z·Δ
    sampling = Sampling.fixed(60, 20, "server")
    events = [
        sampling.wrap(
            dp_accounting.GaussianDpEvent(math.sqrt(r.included - 1) * plan.share_std / delta_l2)
        )
        for r in t.records
    ]
    expected = epsilon_of(events, 1e-5)
    assert t.ledger.guarantee(t.coalition).epsilon == pytest.approx(expected, rel=1e-9)
    assert all(r.online < r.picked for r in t.records)  # 0.7 of 20: P(all 20 online) = 8e-4


def test_the_refuse_policy_stops_training_at_the_overspending_round() -> None:
    """With the default ``refuse``, heavy dropouts (half the cohort offline, T = 1)
    leave so little noise that a later round's charge would pass the budget: training
    stops there, having run fewer rounds than planned, and says which round."""
    scenario = _scenario(
        **{
            "availability.model": "bernoulli",
            "availability.probability": 0.5,
            "dca.tolerated": 1,
            "dca.on_excess_dropout": "release",
            "training.rounds": 6,
        }
    )
    t = train(scenario)
    assert t.stopped is not None and t.stopped.startswith(f"round {len(t.records) + 1} ")
    assert len(t.records) < 6
    assert "over the budget" in t.stopped
    # a charge is checked as planned; the last accepted round may still settle with
    # fewer shares than planned, and the run then reports its realised ε honestly
    g = t.ledger.guarantee(t.coalition)
    assert g.met == (g.epsilon <= scenario.privacy.epsilon * (1 + 1e-6))


def test_a_large_population_costs_only_its_cohort() -> None:
    """10⁶ registered clients, cohorts of 30: a round makes agents for the cohort, the
    server and the nodes only (the data is generated for the picked clients alone).
    z is given (the planner's search at q = 3·10⁻⁵ took most of the test's time, and
    what a round costs in parties does not depend on its noise)."""
    result = _result(
        **{
            "population.clients": 1_000_000,
            "training.cohort": 30,
            "training.rounds": 2,
            "training.noise_multiplier": 1.0,
        }
    )
    assert [r["picked"] for r in result["fedlearn"]["curves"]] == [30, 30]
    assert result["parties"]["total"] == 1_000_000
    # the clients that were ever parties of a round's world: the two cohorts, no more
    assert result["communication"]["roles"]["client"]["parties"] == 60


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"training.rate": 0.0, "training.sampling": "poisson"}, "training.rate"),
        ({"training.rate": 1.5, "training.sampling": "poisson"}, "training.rate"),
        ({"training.cohort": 61}, "training.cohort"),
        ({"training.deadline": 0.0}, "training.deadline"),
        (
            {
                "training.deadline": 0.5,
                "network.link.latency": {"model": "constant", "value": 1.0},
            },
            "training.deadline",
        ),
        ({"model.name": "logistic"}, "model.name"),
        ({"training.sampling": "poisson"}, "privacy.neighbour"),
        ({"threat.colluding_servers": ["curator"]}, "threat.colluding_servers"),
        ({"dataset.source": "csv"}, "dataset.path"),
        ({"training.noise_multiplier": 5e-324}, "training.noise_multiplier"),
        ({"training.noise_multiplier": 1e-300}, "training.noise_multiplier"),
        ({"training.noise_multiplier": 1e300}, "training.noise_multiplier"),
        ({"training.server_lr": 1e300}, "training.server_lr"),
        ({"training.corruption": 0.5}, "training.corruption"),
        ({"threat.poisoning": {"share": 1.5}}, "threat.poisoning.share"),
        ({"threat.poisoning": {"share": 0.1, "kind": "flip"}}, "threat.poisoning.kind"),
        ({"threat.poisoning": {"share": 0.1, "fator": 3}}, "threat.poisoning.fator"),
        ({"training.client_lr": 1e5}, "training.client_lr"),
        ({"threat.target": "client-60", "threat.attack": "membership"}, "threat.target"),
        ({"threat.target": "client-3"}, "threat.target"),
        (
            {
                "threat.target": "client-3",
                "threat.attack": "membership",
                "threat.colluding_clients": ["client-3"],
            },
            "threat.target",
        ),
    ],
)
def test_bad_input_is_a_named_error(changes: dict[str, Any], field: str) -> None:
    from privsim.registry import get

    with pytest.raises((FieldError, ScenarioError)) as found:
        scenario = _scenario(**changes)
        get("fedlearn").check(scenario)
    assert found.value.field == field
    assert "Fix:" in str(found.value)


def test_a_trace_naming_unknown_clients_is_a_named_error(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\nclient-3,0,3600\nclient-999,0,10\n")
    scenario = _scenario(**{"availability.model": "trace", "availability.trace": str(trace)})
    with pytest.raises(FieldError, match="client-999") as found:
        train(scenario)
    assert found.value.field == "availability.trace"


def test_a_trace_decides_who_is_online(tmp_path: Path) -> None:
    """Clients 0–29 are online in the first half of each 1200 s day, the rest never;
    rounds start every 600 s: rounds 1 and 3 fall in the second half (nobody online:
    the curator releases its noise alone), round 2 and 4 in the first."""
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\n" + "".join(f"{i},0,600\n" for i in range(30)))
    t = train(
        _scenario(
            **{
                "availability.model": "trace",
                "availability.trace": str(trace),
                "availability.period": 1200.0,
                "training.aggregation": "trusted",
            }
        )
    )
    online = [r.online for r in t.records]
    assert online[0] == online[2] == 0
    assert online[1] > 0 and online[3] > 0
    assert t.records[0].status == "released" and t.records[0].included == 0
    assert t.records[1].included == t.records[1].online


def _availability(trace: Path, period: float, round_seconds: float = 600.0) -> Availability:
    config = AvailabilityConfig(
        model="trace", trace=str(trace), period=period, round_seconds=round_seconds
    )
    return Availability.of(config, 10)


def test_a_window_past_the_period_wraps_around_to_the_next(tmp_path: Path) -> None:
    """A day of 86,400 s, rounds every 700 s: client 0 is online 86,000–87,400 s, that is
    from 86,000 s to the day's end and then 0–1,000 s of the next day; client 1 never.
    Round r starts at 700·r mod 86,400: round 1 (700 s) is inside the wrapped part,
    round 2 (1,400 s) is not, and round 123 (86,100 s) is inside the first part."""
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\nclient-0,86000,87400\n")
    availability = _availability(trace, 86_400.0, 700.0)
    clients = np.array([0, 1])
    rng = np.random.default_rng(0)
    assert availability.online(clients, 1, rng).tolist() == [True, False]
    assert availability.online(clients, 2, rng).tolist() == [False, False]
    assert availability.online(clients, 123, rng).tolist() == [True, False]


@pytest.mark.parametrize(
    ("rows", "named"),
    [
        ("client-0,90000,90100\n", "does not start within the period"),
        ("client-0,0,90000\n", "longer than it"),
        ("client-0," + "1" * 200_000 + ",5\n", "not a CSV privsim can read"),
    ],
)
def test_a_trace_privsim_cannot_use_is_a_named_error(tmp_path: Path, rows: str, named: str) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\n" + rows)
    with pytest.raises(FieldError, match=named) as found:
        _availability(trace, 86_400.0)
    assert found.value.field == "availability.trace"


SECURE = {
    "training.sampling": "poisson",
    "training.rate": 0.3,
    "privacy.neighbour": "add_remove",
    "training.rounds": 3,
}


@pytest.mark.parametrize("aggregation", ["secagg_plus", "secagg"])
def test_rounds_without_noise_through_secagg_report_no_guarantee(aggregation: str) -> None:
    """z = 0 through SecAgg(+): the integer bound is infinite, so every round is charged
    as non-private and the run reports ε = ∞ (allowed by the scenario), not an error."""
    result = _result(
        **SECURE,
        **{
            "training.aggregation": aggregation,
            "training.noise_multiplier": 0.0,
            "privacy.on_overspend": "allow",
        },
    )
    assert result["status"] == "released"
    assert float(result["privacy"]["achieved_epsilon"]) == math.inf  # JSON writes "inf"
    assert result["privacy"]["guarantee_met"] is False


@pytest.mark.parametrize("aggregation", ["secagg_plus", "secagg"])
def test_rounds_through_secagg_add_integer_noise_accounted_by_its_bound(aggregation: str) -> None:
    """Through SecAgg(+) with the distributed discrete Gaussian: every round's event is
    the papers' integer bound at the honest shares that reached the sum, amplified by
    Poisson sampling while the server is honest; the run meets its budget."""
    result = _result(**SECURE, **{"training.aggregation": aggregation})
    assert result["status"] == "released"
    assert result["privacy"]["guarantee_met"] is True
    events = result["privacy"]["events"]
    assert len(events) == 3
    for event in events:
        assert event["realised"].startswith("PoissonSampledDpEvent")
        assert "IntegerNoiseDpEvent" in event["realised"]
        assert "while server is honest" in event["amplification"]
        assert event["trust_kind"] == "server_threshold"
    curves = result["fedlearn"]["curves"]
    assert all(c["included"] == c["picked"] for c in curves)  # nobody dropped


def test_a_modulus_too_narrow_for_any_scale_is_a_named_error() -> None:
    with pytest.raises(FieldError) as found:
        train(
            _scenario(
                **SECURE, **{"training.aggregation": "secagg_plus", "training.modulus_bits": 4}
            )
        )
    assert found.value.field == "training.modulus_bits"


def test_fewer_modulus_bits_force_a_coarser_scale() -> None:
    """The scale is the largest 2^f whose sum fits the modulus: 12 bits leave a coarser
    scale than 32, and the same ε target."""
    from privsim.protocols.fedlearn.accounting import integer_of

    wide = integer_of(_scenario(**SECURE, **{"training.aggregation": "secagg_plus"}), 33)
    narrow = integer_of(
        _scenario(**SECURE, **{"training.aggregation": "secagg_plus", "training.modulus_bits": 12}),
        33,
    )
    assert narrow.fraction_bits < wide.fraction_bits
    assert narrow.modulus.bits <= 12 < wide.modulus.bits


def test_secagg_needs_poisson_sampling() -> None:
    with pytest.raises((FieldError, ScenarioError)) as found:
        _scenario(**{"training.aggregation": "secagg_plus"})
    assert found.value.field == "training.sampling"


@pytest.mark.parametrize("noise", ["discrete_gaussian", "skellam"])
def test_dca_rounds_with_integer_noise_compose_by_the_papers_bound(noise: str) -> None:
    """DCA with integer noise mod 2^b: each round's event is the papers' bound at the
    honest included shares, amplified by Poisson sampling; the nodes' trust as for
    Gaussian shares."""
    result = _result(**SECURE, **{"training.aggregation": "dca", "dca.noise": noise})
    assert result["status"] == "released"
    assert result["privacy"]["guarantee_met"] is True
    for event in result["privacy"]["events"]:
        assert f"kind='{noise}'" in event["realised"]
        assert event["realised"].startswith("PoissonSampledDpEvent")
        assert event["trusted_parties"] == ["compute-0", "compute-1", "compute-2"]


@pytest.mark.parametrize("noise", ["discrete_gaussian", "skellam"])
def test_integer_sums_decode_to_what_the_gaussian_path_sums(noise: str) -> None:
    """With negligible noise (z = 10⁻³, run under ``warn``) the same cohorts and updates
    summed mod 2^b with integer noise, and decoded at the planner's scale, train the same
    model as DCA's fixed-point path: the final test loss agrees to 10⁻³ relative. The
    rounding error is at most 1/(2s) per coordinate and client at a scale s ≥ 2^10
    (about 10⁻⁴ of the loss when this was written); a wrong scale or a wrapped sum
    would move it by orders of magnitude."""
    tiny = {
        **SECURE,
        "training.rounds": 4,
        "training.noise_multiplier": 1e-3,
        "privacy.on_overspend": "warn",
        "dca.tolerated": 1,
        "training.aggregation": "dca",
    }
    with pytest.warns(UserWarning):
        fixed = _result(**tiny)
    with pytest.warns(UserWarning):
        integer = _result(**tiny, **{"dca.noise": noise})
    assert integer["status"] == fixed["status"] == "released"
    assert integer["accuracy"]["test_loss"] == pytest.approx(
        fixed["accuracy"]["test_loss"], rel=1e-3
    )
    assert math.isfinite(integer["privacy"]["achieved_epsilon"])  # huge, by RDP, not ∞


@pytest.mark.parametrize(
    ("aggregation", "servers", "clients"),
    [
        ("secagg_plus", ["server"], 60),  # the server with every share holder
        ("trusted", ["server"], 0),  # the curator
        ("dca", ["compute-0", "compute-1", "compute-2"], 0),  # every compute node
    ],
)
def test_a_coalition_of_the_trusted_parties_leaves_no_guarantee(
    aggregation: str, servers: list[str], clients: int
) -> None:
    """The parties a round trusts, colluding: every released round is non-private, so
    the run reports ε = ∞ and the guarantee not met; the ε so far is ∞ from round 1."""
    changes: dict[str, Any] = {
        "training.aggregation": aggregation,
        "threat.colluding_servers": servers,
        "threat.colluding_clients": clients,
    }
    if aggregation == "secagg_plus":
        changes |= {k: v for k, v in SECURE.items() if k != "training.rounds"}
        changes["dca.tolerated"] = 2  # T set: the planner would size it for 60 colluders
    result = _result(**changes, **{"training.rounds": 2})
    assert result["privacy"]["achieved_epsilon"] == "inf"
    assert result["privacy"]["guarantee_met"] is False
    assert all(e["broken"] for e in result["privacy"]["events"])
    assert all(c["epsilon"] == "inf" for c in result["fedlearn"]["curves"])


def test_secagg_plans_for_the_corruption_given_not_the_realised_coalition() -> None:
    """``training.corruption`` fixes γ of (k, t) (Bell et al. 2020) apart from the
    coalition: 29 colluders of 60 clients planned as γ = 0.05 get the (k, t) of a
    population whose coalition is 3 of 60 (γ = 0.05), not the larger t that their
    realised share, γ ≈ 0.48, chooses."""
    from privsim.protocols.fedlearn.federated import check_learner
    from privsim.protocols.fedlearn.plan import plan_training
    from privsim.protocols.fedlearn.rounds import plan_secure_round
    from privsim.sim.streams import Streams

    names = tuple(f"client-{i}" for i in range(30))

    def threshold(**changes: Any) -> int:
        scenario = _scenario(**SECURE, **{"training.aggregation": "secagg_plus"}, **changes)
        integer = plan_training(scenario, check_learner(scenario) or 1).integer
        assert integer is not None
        plan = plan_secure_round(scenario, Streams(1), names, integer, 1)
        assert plan is not None
        return plan.threshold

    planned = threshold(**{"threat.colluding_clients": 3})  # 3/60 = 0.05
    sybils = threshold(**{"threat.colluding_clients": 29, "training.corruption": 0.05})
    realised = threshold(**{"threat.colluding_clients": 29})
    assert sybils == planned < realised
