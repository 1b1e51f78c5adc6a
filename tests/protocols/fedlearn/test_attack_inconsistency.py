"""Model inconsistency (Pasquini, Francati & Ateniese, CCS 2022) against SecAgg+ and DCA,
and the model-hash check that stops it.

Every run is small (60 clients, an MLP of 8 hidden units on 10 features and 3 classes:
P = 8·10 + 8 + 3·8 + 3 = 115 parameters, of which the attack scores the 112 outside the
output bias) and seeded. Tolerances are derived beside their assertions."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from privsim.kit.result import Communication
from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn.accounting import SERVER
from privsim.protocols.fedlearn.attacks import RECOVERED, Finding, RoundView
from privsim.protocols.fedlearn.attacks.inconsistency import (
    check_attack,
    crafted_model,
    quantisation_bound,
)
from privsim.protocols.fedlearn.behaviours import DIGEST_BYTES, model_digest
from privsim.protocols.fedlearn.cohort import sample_cohort
from privsim.protocols.fedlearn.config import TrainingConfig
from privsim.protocols.fedlearn.data import CohortData
from privsim.protocols.fedlearn.federated import learner_of
from privsim.protocols.fedlearn.models import MLP, local_updates
from privsim.protocols.fedlearn.plan import plan_training
from privsim.protocols.fedlearn.rounds import CohortUpdates, plan_secure_round, simulate_round
from privsim.protocols.fedlearn.run import train
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.schema import Scenario
from privsim.sim.streams import Streams
from tests.protocols.fedlearn.test_attack_passive import attack_run

TARGET = "client-3"
HIDDEN = 8


def _scenario(aggregation: str, **changes: Any) -> Scenario:
    """Two rounds of DP-FedAvg on an MLP with no noise (z = 0, run under
    ``on_overspend = "allow"``); SecAgg+ under Poisson sampling at 0.3 (about 18 of 60
    clients) with a 64-bit modulus, so the scale 2^f is large; DCA with a cohort of 20."""
    base: dict[str, Any] = {
        "model.name": "mlp",
        "model.hidden": HIDDEN,
        "training.rounds": 2,
        "training.noise_multiplier": 0.0,
        "training.aggregation": aggregation,
        "privacy.epsilon": 1e4,
        "privacy.on_overspend": "allow",
        "threat.attack": "model_inconsistency",
        "threat.colluding_servers": [SERVER],
        "threat.target": TARGET,
    }
    if aggregation.startswith("secagg"):
        base |= {
            "training.sampling": "poisson",
            "training.rate": 0.3,
            "privacy.neighbour": "add_remove",
            "training.modulus_bits": 64,
        }
    return scenario_from_dict(set_fields(EXAMPLE, base | changes))


def _targeted(aggregation: str, changes: dict[str, Any], seed: int) -> Scenario:
    """:func:`_scenario` with ``threat.target`` the first client picked in every round
    of the run of ``seed``: ``train`` draws each cohort from the round's own streams,
    whatever the target, so the cohorts are computed here by the same calls (client-7
    at seed 1, client-11 at seed 4). The target is no longer forced into the cohort
    (as a copy of the loop did with client-3): every bound below is derived from the
    round's own view, so the assertions hold as they were."""
    scenario = _scenario(aggregation, **changes)
    training = scenario.table("training", TrainingConfig)
    n, streams = scenario.population.clients, Streams(seed)
    every = set(range(n))
    for r in range(1, training.rounds + 1):
        rs = Streams(streams.seed_sequence("round", r))
        every &= set(sample_cohort(training, n, rs.generator("cohort")).tolist())
    assert every, "no client is picked in every round: pick another seed"
    return _scenario(aggregation, **changes, **{"threat.target": f"client-{min(every)}"})


def _attacked(
    aggregation: str, changes: dict[str, Any] | None = None, seed: int = 1
) -> tuple[dict[str, Any], list[Finding], list[RoundView]]:
    """``train`` on :func:`_targeted`'s scenario with its attack observed
    (:func:`attack_run`): the target is in every round, so there is one view, and one
    finding, a round (availability ``always``: every picked client is online; ``train``
    computes each client's update from the model the server sent it)."""
    report, findings, views = attack_run(_targeted(aggregation, changes or {}, seed), seed)
    assert report["name"] == "model_inconsistency"
    assert all(report["target"] in view.names for view in views)
    return report, findings, views


def _bound(view: RoundView, target: str) -> float:
    """√|S|·2^−f / ‖u_S‖: the target rounds each scored coordinate once, by at most 2^−f
    (nearest rounding: 2^−f−1; DCA's stochastic rounding: under 2^−f); the other
    clients' inputs there are exact zeros, encoded exactly."""
    i = view.names.index(target)
    crafted = crafted_model(_model(), view.params)
    f = view.secure.fraction_bits if view.secure is not None else 32  # dca.fraction_bits
    return quantisation_bound(view.updates[i][crafted.scored], f)


def _model() -> MLP:
    """The scenarios' model: 10 features, 3 classes (EXAMPLE's synthetic data)."""
    return MLP(10, HIDDEN, 3)


# -- the crafted model ------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_crafted_mlp_zeroes_every_update_but_the_output_bias(activation: str) -> None:
    """Several local epochs with L2 from the crafted model: every coordinate but b₂ is
    exactly 0 (dead units give exact zeros, no rounding), and b₂ moves."""
    rng = np.random.default_rng(5)
    model = MLP(10, HIDDEN, 3, activation=activation, l2=0.1)  # type: ignore[arg-type]
    crafted = crafted_model(model, model.init(rng))
    assert crafted.params is not None
    k, b = 4, 12
    X = rng.normal(size=(k, b, 10)) * 5.0
    y = rng.integers(0, 3, size=(k, b))
    data = CohortData(
        clients=np.arange(k, dtype=np.int64),
        X=X,
        y=y,
        mask=np.ones((k, b), dtype=bool),
        counts=np.full(k, b, dtype=np.int64),
    )
    out = local_updates(model, crafted.params, data, epochs=3, batch_size=4, lr=0.5, rng=rng)
    assert np.all(out[:, crafted.scored] == 0.0)
    assert np.all(np.abs(out[:, ~crafted.scored]).sum(axis=1) > 0)
    assert int((~crafted.scored).sum()) == 3


def test_no_crafted_model_for_linear_models() -> None:
    """Softmax regression: no model zeroes an update without the labels; every
    coordinate is scored and the others get the round's model."""
    from privsim.protocols.fedlearn.models import SoftmaxRegression

    crafted = crafted_model(SoftmaxRegression(10, 3), np.zeros(33))
    assert crafted.params is None and bool(crafted.scored.all())


# -- recovery -----------------------------------------------------------------------------------


@pytest.mark.parametrize("aggregation", ["secagg_plus", "dca"])
def test_recovers_the_target_update_without_noise(aggregation: str) -> None:
    """z = 0: the opened sum on the scored coordinates is the target's update up to its
    own fixed-point rounding (f = 40 bits with SecAgg+'s 64-bit modulus at this size,
    dca.fraction_bits = 32 for DCA), i.e. within √112·2^−f/‖u_S‖ ≪ 10⁻⁶."""
    report, findings, views = _attacked(aggregation)
    assert len(findings) == 2
    for finding, view in zip(findings, views, strict=True):
        bound = _bound(view, report["target"])
        assert bound < RECOVERED
        assert finding.error <= bound
    assert report["success"] == 1.0
    assert report["rounds_recovered"] == [1, 2]
    assert report["scored_coordinates"] == 112 and report["excluded_coordinates"] == 3


def test_dca_recovery_through_the_run() -> None:
    """The named target (client-3) with every client picked: ``train``'s attack section
    alone (no recording) recovers both rounds."""
    scenario = _scenario("dca", **{"training.cohort": 60})  # everyone: the target too
    attack = train(scenario, 1).attack
    assert attack is not None
    assert attack["success"] == 1.0 and attack["client_rounds_targeted"] == 2
    assert attack["max_error"] <= attack["quantisation_bound"] < RECOVERED


def test_noise_stays_in_the_estimate() -> None:
    """DCA with z = 1: each of the k clients adds a share of sd σ_s, so the estimate's
    error on the |S| = 112 scored coordinates is ‖η_S‖ with η ~ N(0, kσ_s²): ‖η_S‖ /
    (σ_s√(k|S|)) is a χ_{|S|}/√|S| variable, of sd about 1/√(2|S|) = 0.067; five sd
    (0.34) bound it. The attack is then never a recovery."""
    report, findings, views = _attacked(
        "dca", {"training.noise_multiplier": 1.0, "privacy.on_overspend": "refuse"}
    )
    assert report["success"] == 0.0
    for finding, view in zip(findings, views, strict=True):
        i = view.names.index(report["target"])
        crafted = crafted_model(_model(), view.params)
        truth = view.updates[i][crafted.scored]
        k = int(view.online.sum())
        expected = view.plan.noise.share_std * math.sqrt(k * truth.size)
        ratio = finding.error * float(np.linalg.norm(truth)) / expected
        assert abs(ratio - 1.0) < 5.0 / math.sqrt(2 * truth.size)


# -- the model check -----------------------------------------------------------------------------


@pytest.mark.parametrize("aggregation", ["secagg_plus", "dca"])
def test_model_check_stops_the_attack(aggregation: str) -> None:
    """With the clients comparing digests the target (and every client next to it)
    withholds: its update is in no release, nothing is recovered. SecAgg+ (here a
    Harary graph of degree 2) still releases the sum of the clients outside the
    target's closed neighbourhood; DCA's clients all compare with one another, so
    every one of them withholds and the round aborts."""
    report, findings, views = _attacked(aggregation, {"training.model_check": True})
    assert report["success"] == 0.0
    assert report["rounds_withheld"] == [1, 2]
    for finding, view in zip(findings, views, strict=True):
        included = view.run.included()
        assert included is None or report["target"] not in included
        assert finding.error >= 1.0  # the scored release is 0 there (or there is none)
        if view.secure is not None:
            assert included is not None and not view.secure.graph.complete
            assert len(included) == int(view.online.sum()) - 1 - view.secure.graph.degree
        else:
            assert included is None


@pytest.mark.parametrize("aggregation", ["secagg_plus", "dca", "trusted"])
def test_model_check_costs_at_least_the_digests(aggregation: str) -> None:
    """An honest round with and without the check: the check adds one ModelDigest per
    (client, peer) pair and at least DIGEST_BYTES per digest, and changes nothing else
    (the same release, bit for bit)."""
    changes: dict[str, Any] = {"threat.attack": None, "threat.target": None}
    if aggregation == "trusted":
        changes |= {"threat.colluding_servers": []}
    comms, released = [], []
    for check in (False, True):
        scenario = _scenario(aggregation, **changes, **{"training.model_check": check})
        streams = Streams(2)
        learner = learner_of(scenario, streams)
        params = learner.init()
        plan = plan_training(scenario, params.size)
        rs = Streams(streams.seed_sequence("round", 1))
        cohort = sample_cohort(plan.training, scenario.population.clients, rs.generator("cohort"))
        names = tuple(f"client-{i}" for i in cohort.tolist())
        online = np.ones(len(names), dtype=bool)
        secure = (
            plan_secure_round(scenario, rs, names, plan.integer, 1)
            if plan.secure and plan.integer is not None
            else None
        )
        updates = learner.updates(params, cohort, online, rs.generator("local"))
        run = simulate_round(
            scenario,
            rs,
            names=names,
            online=online,
            updates=CohortUpdates(updates),
            params=params,
            plan=plan,
            coalition=frozenset(),
            secure=secure,
        )
        comms.append(sum_bytes(run.worlds))
        released.append(run.outcome.released)
        if check:
            degree = len(names) - 1 if secure is None else secure.graph.degree
            digests = len(names) * degree
    (plain_bytes, plain_kinds), (checked_bytes, checked_kinds) = comms
    assert checked_kinds.get("ModelDigest", 0) == digests
    assert plain_kinds.get("ModelDigest", 0) == 0
    assert checked_bytes - plain_bytes >= digests * DIGEST_BYTES
    assert released[0] is not None and released[1] is not None
    if aggregation == "trusted":
        # the curator adds the updates in arrival order, which the digests shift: each
        # coordinate's k-term float sum then differs by at most (k − 1)·2^−52·Σ|u_ij|,
        # Σ|u_ij| ≤ k·C with C = 1
        k = len(names)
        np.testing.assert_allclose(released[0], released[1], rtol=0, atol=k * k * 2.0**-52)
    else:  # integer sums mod 2^b: exactly the same whatever the order
        assert np.array_equal(released[0], released[1])


def sum_bytes(worlds: Any) -> tuple[int, dict[str, int]]:
    """Bytes on the wire and messages by kind over a round's worlds."""
    total, kinds = 0, dict[str, int]()
    for w in worlds:
        comm = Communication.of_world(w)
        total += comm.bytes
        for kind, count in comm.by_kind.items():
            kinds[kind] = kinds.get(kind, 0) + count
    return total, kinds


def test_digest_is_sha256_of_the_float64_bytes() -> None:
    import hashlib

    v = np.array([0.5, -1.0, 3.25])
    assert model_digest(v) == hashlib.sha256(v.astype("<f8").tobytes()).digest()
    assert len(model_digest(v)) == DIGEST_BYTES
    assert model_digest(v) != model_digest(np.nextafter(v, np.inf))  # one ulp apart


# -- errors and reproducibility ------------------------------------------------------------------


def test_refused_without_the_server_in_the_coalition() -> None:
    with pytest.raises(ScenarioError) as info:
        _scenario("secagg_plus", **{"threat.colluding_servers": []})
    assert info.value.field == "threat.attack"
    assert "colluding_servers" in str(info.value)


def test_refused_where_the_server_sees_each_update() -> None:
    for aggregation in ("trusted", "local"):
        with pytest.raises(ScenarioError) as info:
            _scenario(aggregation)
        assert info.value.field == "threat.attack"
        assert "secagg_plus" in str(info.value)


def test_check_attack_names_the_field() -> None:
    """``check_attack`` itself raises a FieldError naming ``threat.attack`` (the loader
    turns it into the ScenarioError above)."""
    valid = _scenario("dca")
    stand_in = SimpleNamespace(threat=SimpleNamespace(colluding_servers=()), table=valid.table)
    with pytest.raises(FieldError) as info:
        check_attack(stand_in)  # type: ignore[arg-type]
    assert info.value.field == "threat.attack"


def test_check_attack_accepts_secure_aggregations() -> None:
    for aggregation in ("secagg_plus", "dca"):
        check_attack(_scenario(aggregation))


def test_same_seed_same_result() -> None:
    first, found, _ = _attacked("secagg_plus", seed=4)
    again, found_again, _ = _attacked("secagg_plus", seed=4)
    assert first == again and found == found_again
