"""The passive attacks on training: record reconstruction from the updates each
coalition reads, and loss-threshold membership inference on the released model.

Single-record clients: scikit-learn's digits (1438 training records after the 20% test
split) over 1438 clients, IID, gives every client exactly one record, so a client's
DP-SGD update is one record's clipped gradient and the reconstruction is exact up to
what the aggregation adds. Every tolerance below is derived beside its assertion."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from privsim.api import run
from privsim.kit.secagg import round as secagg
from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn import run as fedlearn_run
from privsim.protocols.fedlearn.attacks import AttackContext, Finding, RoundView, TrainingAttack
from privsim.protocols.fedlearn.attacks.membership import loss_threshold
from privsim.protocols.fedlearn.attacks.reconstruction import (
    check_attack,
    exposed,
    record_from_update,
)
from privsim.protocols.fedlearn.attacks.registry import build_attack
from privsim.protocols.fedlearn.cohort import sample_cohort
from privsim.protocols.fedlearn.federated import learner_of
from privsim.protocols.fedlearn.models import SoftmaxRegression, clip_rows
from privsim.protocols.fedlearn.plan import plan_training
from privsim.protocols.fedlearn.rounds import plan_secure_round
from privsim.protocols.fedlearn.run import train
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.schema import Scenario
from privsim.sim.streams import Streams

#: digits' training records after the 20% stratified test split: one per client.
SINGLE_RECORD_CLIENTS = 1438
NODES = ["compute-0", "compute-1", "compute-2"]

#: A round's colluding clients, chosen from its picked clients and SecAgg plan.
Pick = Callable[[tuple[str, ...], secagg.RoundPlan], list[str]]


def _scenario(**changes: Any) -> Scenario:
    """Two rounds of DP-SGD at z = 0 (run under ``on_overspend = "allow"``: the ledger
    charges a non-private round) with the reconstruction attack."""
    base: dict[str, Any] = {
        "dataset.source": "digits",
        "population.clients": SINGLE_RECORD_CLIENTS,
        "training.algorithm": "dp_sgd",
        "training.cohort": 10,
        "training.rounds": 2,
        "training.noise_multiplier": 0.0,
        "privacy.epsilon": 1e4,
        "privacy.on_overspend": "allow",
        "threat.attack": "reconstruction",
    }
    return scenario_from_dict(set_fields(EXAMPLE, base | changes))


def _secure(aggregation: str, **changes: Any) -> Scenario:
    """SecAgg(+) rounds of about 43 clients (Poisson at 3%) with a 64-bit modulus (so
    the scale is 2^40), security_bits = 5 and (k, t) planned for 50 colluding clients
    in the population (``training.corruption`` = 50/N, whatever coalition a test then
    names): the planner's t is a handful, so that t − 1 and t holders of one client are
    both coalitions a test can name (:func:`_picked_run`)."""
    base = {
        "training.aggregation": aggregation,
        "training.sampling": "poisson",
        "training.rate": 0.03,
        "privacy.neighbour": "add_remove",
        "training.modulus_bits": 64,
        "training.security_bits": 5,
        "training.corruption": 50 / SINGLE_RECORD_CLIENTS,
        "training.rounds": 1,
        "threat.colluding_clients": 50,
        "threat.colluding_servers": ["server"],
    }
    return _scenario(**(base | changes))


class _Recording:
    """The run's attack, unchanged, keeping each round's view and findings."""

    def __init__(self, attack: TrainingAttack) -> None:
        self.attack = attack
        self.findings: list[Finding] = []
        self.views: list[RoundView] = []

    def __getattr__(self, name: str) -> Any:  # name, prepare, report (openable if any)
        return getattr(self.attack, name)

    def observe(self, view: RoundView) -> list[Finding]:
        found = self.attack.observe(view)
        self.views.append(view)
        self.findings.extend(found)
        return found


def attack_run(
    scenario: Scenario, seed: int = 1
) -> tuple[dict[str, Any], list[Finding], list[RoundView]]:
    """:func:`privsim.protocols.fedlearn.run.train` with its attack observed: the
    training's ``attack`` report, every finding, and each round's view. The name
    ``build_attack`` that run.py imported is patched to wrap the real attack in a
    :class:`_Recording` (patching the registry's would not reach it). Also used by
    test_attack_inconsistency.py."""
    built: list[_Recording] = []

    def recording(ctx: AttackContext) -> TrainingAttack | None:
        attack = build_attack(ctx)
        if attack is None:
            return None
        built.append(_Recording(attack))
        return built[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fedlearn_run, "build_attack", recording)
        report = train(scenario, seed).attack
    assert report is not None and len(built) == 1
    return report, built[0].findings, built[0].views


def _round_one(scenario: Scenario, seed: int) -> tuple[tuple[str, ...], secagg.RoundPlan]:
    """Round 1's picked clients and SecAgg plan, by the calls ``train`` makes."""
    streams = Streams(seed)
    plan = plan_training(scenario, learner_of(scenario, streams).start.size)
    rs = Streams(streams.seed_sequence("round", 1))
    cohort = sample_cohort(plan.training, scenario.population.clients, rs.generator("cohort"))
    names = tuple(f"client-{i}" for i in cohort.tolist())
    assert plan.integer is not None
    secure = plan_secure_round(scenario, rs, names, plan.integer, 1)
    assert secure is not None
    return names, secure


def _picked_run(
    scenario: Scenario, pick: Pick, seed: int = 1
) -> tuple[dict[str, Any], list[Finding], list[RoundView]]:
    """:func:`attack_run` with ``threat.colluding_clients`` the clients ``pick`` chooses
    from round 1 as ``train`` will draw it (its cohort and graph come from the round's
    streams, and ``training.corruption`` keeps (k, t) whatever the coalition): the run's
    round 1 is checked to be that round, with that coalition."""
    names, planned = _round_one(scenario, seed)
    chosen = pick(names, planned)
    named = scenario_from_dict(set_fields(scenario.to_dict(), {"threat.colluding_clients": chosen}))
    report, findings, views = attack_run(named, seed)
    view = views[0]
    assert view.names == names and view.secure is not None
    graph = view.secure.graph
    assert view.secure.params == planned.params and graph.half == planned.graph.half
    assert np.array_equal(graph.order, planned.graph.order)
    assert np.array_equal(graph.matrix, planned.graph.matrix)
    assert view.coalition == frozenset(["server", *chosen])
    return report, findings, views


def _first_order(view: RoundView, client: str, coordinate_sd: float) -> float:
    """The relative error of the reconstructed record when each coordinate of the read
    update carries an independent error of sd s: x̂ − x ≈ (e_W[c] − x·e_b[c])/u_b[c],
    whose norm has mean square s²(d + ‖x‖²)/u_b[c]², over ‖x‖."""
    i = view.names.index(client)
    model = SoftmaxRegression(64, 10)
    u_b = view.updates[i][model.n_classes * model.n_features :]
    x = view.records[client][0][0]
    norm = float(np.linalg.norm(x))
    return coordinate_sd * math.sqrt(x.size + norm**2) / (float(np.max(np.abs(u_b))) * norm)


def _update_errors(view: RoundView) -> dict[str, float]:
    """‖û_i − u_i‖ of each update the coalition read."""
    got = exposed(view).values
    return {
        c: float(np.linalg.norm(got[c] - view.updates[i]))
        for i, c in enumerate(view.names)
        if c in got
    }


# -- the equation ---------------------------------------------------------------------------


@pytest.mark.parametrize("l2", [0.0, 0.05])
def test_a_single_record_gradient_gives_the_record_back(l2: float) -> None:
    """At a random θ (W ≠ 0: with λ > 0 the L2 term and the clip factor are solved for
    together), the clipped −gradient of one record returns it to rounding (1e-9)."""
    rng = np.random.default_rng(3)
    model = SoftmaxRegression(6, 4, l2=l2)
    params = rng.normal(size=model.n_params)
    x, y = rng.normal(size=(1, 1, 6)), np.array([[2]])
    _, grad = model.batch_loss_grad(params[None], x, y, np.ones((1, 1), dtype=bool))
    update = clip_rows(-grad, 0.1)[0][0]
    estimate = record_from_update(model, update, params)
    assert estimate is not None
    assert np.linalg.norm(estimate - x[0, 0]) / np.linalg.norm(x[0, 0]) < 1e-9


def test_the_attack_needs_a_linear_model() -> None:
    """A scenario naming the attack on an MLP is refused on load, naming model.name."""
    with pytest.raises(ScenarioError, match=r"model\.name"):
        _scenario(**{"model.name": "mlp"})
    with pytest.raises(FieldError, match="linear"):
        check_attack(_scenario(**{"threat.attack": "membership", "model.name": "mlp"}))


# -- trusted and local ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("algorithm", "l2"), [("dp_sgd", 0.0), ("dp_sgd", 0.01), ("dp_fedavg", 0.0)]
)
def test_a_colluding_curator_recovers_every_single_record_client(algorithm: str, l2: float) -> None:
    """``trusted`` with the server colluding, at z = 1: the curator reads each update
    before it adds its noise, so every record comes back (DP-FedAvg: one local step on
    the one record, batch 1). The error is float rounding (measured ~1e-16), far under
    RECOVERED."""
    report, findings, _ = attack_run(
        _scenario(
            **{
                "training.aggregation": "trusted",
                "training.algorithm": algorithm,
                "training.local_batch": 1,
                "training.noise_multiplier": 1.0,
                "model.l2": l2,
                "threat.colluding_servers": ["server"],
            }
        )
    )
    assert report["success"] == 1.0
    assert report["rounds_recovered"] == [1, 2]
    assert report["client_rounds_targeted"] == 20 == len(findings)
    assert max(f.error for f in findings) < 1e-9
    assert report["seen"] == ["updates"]


def test_a_run_reports_the_attack_beside_its_epsilon() -> None:
    """Through :func:`privsim.api.run`: the result's ``attack`` section is the attack's
    report (the figures :func:`attack_run` reads from ``train``), beside an ε of ∞ for a
    coalition that holds the curator (z = 0, run under ``on_overspend = "allow"``)."""
    result = run(
        _scenario(
            **{
                "training.aggregation": "trusted",
                "threat.colluding_servers": ["server"],
                "privacy.on_overspend": "allow",
            }
        )
    ).to_dict()
    attack = result["attack"]
    assert attack["name"] == "reconstruction" and attack["success"] == 1.0
    assert attack["rounds_recovered"] == [1, 2] and attack["client_rounds_targeted"] == 20
    assert result["privacy"]["achieved_epsilon"] in (math.inf, "inf")  # JSON's spelling
    from privsim.protocols.fedlearn.report import report_lines

    shown = [line for line in report_lines(result) if line.startswith("Attack")]
    assert shown == [
        "Attack      reconstruction: success 1 over 20 targeted client-rounds, "
        f"2 rounds recovered, median error {attack['median_error']:.3g}"
    ]


def test_an_honest_curator_shows_the_coalition_nothing() -> None:
    report, findings, _ = attack_run(_scenario(**{"training.aggregation": "trusted"}))
    assert report["success"] == 0.0 and report["rounds_recovered"] == []
    assert all(math.isinf(f.error) for f in findings)


def test_local_noise_hides_the_record() -> None:
    """``local`` at z = 1: the server reads u_i + η_i, η_i ~ N(0, σ²I) over P = 650
    coordinates, ‖u_i‖ ≤ C; so the update's relative error is at least ‖η_i‖/C ≈
    σ√P/C (χ_P/√P is within 10% of 1 at P = 650, sd 0.03). The ratio x̂ = û_W[c]/û_b[c]
    of two noise-dominated numbers is nowhere near the record: none recovered."""
    report, _, views = attack_run(
        _scenario(
            **{
                "training.aggregation": "local",
                "training.noise_multiplier": 1.0,
                "threat.colluding_servers": ["server"],
            }
        )
    )
    plan = views[0].plan
    floor = 0.9 * plan.noise.sigma * math.sqrt(plan.dimension) / plan.training.clip_norm
    for view in views:
        for client, error in _update_errors(view).items():
            i = view.names.index(client)
            assert error / np.linalg.norm(view.updates[i]) >= floor
    assert report["success"] == 0.0 and report["rounds_recovered"] == []
    assert report["median_error"] > 0.1
    assert report["seen"] == ["noisy updates"]


# -- SecAgg(+) ------------------------------------------------------------------------------


def _holders(extra: int) -> Pick:
    """t + ``extra`` graph neighbours of the round's first client (with the server,
    which ``_secure`` names)."""

    def pick(names: tuple[str, ...], secure: secagg.RoundPlan) -> list[str]:
        neighbours = secure.graph.neighbours(0)
        t = secure.threshold
        assert 2 <= t <= neighbours.size  # t holders other than the target exist
        return [names[i] for i in neighbours[: t + extra].tolist()]

    return pick


def test_secagg_plus_t_holders_unmask_their_neighbour() -> None:
    """SecAgg+ with the server and t holders of client 0's shares (its graph
    neighbours): they open its ShareKeys ciphertexts, interpolate b_u and s_u^SK, strip
    the masks from y_u and decode it. Without noise the only error is the rounding to
    2^−f per coordinate (f = 40 here): |e_j| ≤ 2^−(f+1), so ‖x̂ − x‖/‖x‖ ≤
    2^−(f+1)(√d + ‖x‖)/((|u_b[c]| − 2^−(f+1))‖x‖), about 1e-12 — recovered."""
    report, findings, views = _picked_run(_secure("secagg_plus"), _holders(0))
    view = views[0]
    assert view.secure is not None and not view.secure.graph.complete
    target = view.names[0]
    got = {f.client: f.error for f in findings}
    half = 2.0 ** -(view.secure.fraction_bits + 1)
    i = 0
    x = view.records[target][0][0]
    u_b = np.max(np.abs(view.updates[i][640:]))
    bound = half * (math.sqrt(x.size) + np.linalg.norm(x)) / ((u_b - half) * np.linalg.norm(x))
    assert got[target] <= bound < 1e-6
    assert 1 in report["rounds_recovered"]
    t = view.secure.threshold
    assert report["seen"] == [f"masked inputs, and shares of {t} holders (t = {t})"]


def test_secagg_plus_t_minus_one_holders_learn_nothing() -> None:
    """The same round with t − 1 of them: no client has t colluding holders, so no
    mask comes off (Bonawitz et al. 2017, Theorem 6.3)."""
    report, findings, _ = _picked_run(_secure("secagg_plus"), _holders(-1))
    assert findings and all(math.isinf(f.error) for f in findings)
    assert report["success"] == 0.0 and report["rounds_recovered"] == []


def test_secagg_t_clients_unmask_everyone_up_to_the_noise_share() -> None:
    """SecAgg (every client holds every share) with the server and t clients, at
    z = 10⁻⁴: each honest x_u is unmasked and decodes to u + (rounding + η_u)/2^f, each
    coordinate's error of sd s = √(σ_i² + 1/12)/2^f (σ_i the discrete Gaussian share's
    parameter, 1/12 the rounding's variance). So ‖û − u‖/(s√P) ~ χ_P/√P, within
    [0.85, 1.15] (5 sd at P = 650); the record's error over its first-order figure
    (:func:`_first_order`: the norm of a Gaussian vector of covariance
    s²(I + xxᵀ)/u_b[c]² over its root mean square, whose median lies between 0.67, all
    of it along x, and 1, isotropic; digits' ‖x‖² is about 45 against d = 64) has median
    in [0.3, 1.3] over the 36 honest clients and never exceeds 5
    (Laurent–Massart: probability below 1e-4 per client). σ_i is read from the round:
    the integer noise is planned for m − T − 1 honest shares, T counting the named
    coalition (here t clients, not the 50 of (k, t)), so it differs from a run naming 50
    colluders; the bounds above hold for any σ_i."""

    def pick(names: tuple[str, ...], secure: secagg.RoundPlan) -> list[str]:
        assert secure.graph.complete
        return list(names[: secure.threshold])

    report, findings, views = _picked_run(
        _secure("secagg", **{"training.noise_multiplier": 1e-4}), pick
    )
    view = views[0]
    assert view.secure is not None and view.secure.noise is not None
    sd = math.sqrt(view.secure.noise.parameter**2 + 1 / 12) / 2.0**view.secure.fraction_bits
    errors = _update_errors(view)
    honest = {f.client for f in findings}
    assert set(errors) >= honest and honest
    ratios = [errors[c] / (sd * math.sqrt(view.plan.dimension)) for c in honest]
    assert 0.85 <= min(ratios) and max(ratios) <= 1.15
    relative = [f.error / _first_order(view, f.client, sd) for f in findings]
    assert 0.3 <= float(np.median(relative)) <= 1.3
    assert max(relative) < 5.0
    assert report["success"] == 0.0  # the noise share, ~1e-4 relative, is above 1e-6


# -- DCA ------------------------------------------------------------------------------------


def test_dca_every_node_reads_update_plus_noise_share() -> None:
    """DCA with all three compute nodes colluding, at z = 0.01: summing a client's
    shares gives u_i + η_i, η_i ~ N(0, σ_i² I) its noise share (fixed-point rounding
    2^−33 is negligible), so ‖û − u‖/(σ_i√P) lies in [0.85, 1.15] and the record's
    error over its first-order figure has median in [0.3, 1.3] and maximum under 5
    (as for SecAgg above, over 20 client-rounds)."""
    report, findings, views = attack_run(
        _scenario(
            **{
                "training.aggregation": "dca",
                "training.noise_multiplier": 0.01,
                "threat.colluding_servers": NODES,
            }
        )
    )
    sd = views[0].plan.noise.share_std
    relative = []
    for view in views:
        errors = _update_errors(view)
        for f in findings:
            if f.round == view.round:
                ratio = errors[f.client] / (sd * math.sqrt(view.plan.dimension))
                assert 0.85 <= ratio <= 1.15
                relative.append(f.error / _first_order(view, f.client, sd))
    assert len(relative) == 20
    assert 0.3 <= float(np.median(relative)) <= 1.3 and max(relative) < 5.0
    assert report["seen"] == ["shares of 3 of 3 compute nodes"]


def test_dca_without_noise_gives_the_record_and_one_honest_node_hides_it() -> None:
    """At z = 0 every node's shares give the record to fixed-point rounding (2^−33 per
    coordinate: ~1e-9 relative, under RECOVERED); with one node honest the other two
    hold uniform words and recover nothing."""
    every, found, _ = attack_run(
        _scenario(**{"training.aggregation": "dca", "threat.colluding_servers": NODES})
    )
    assert every["success"] == 1.0 and max(f.error for f in found) < 1e-6
    two, found, _ = attack_run(
        _scenario(**{"training.aggregation": "dca", "threat.colluding_servers": NODES[:2]})
    )
    assert two["success"] == 0.0 and all(math.isinf(f.error) for f in found)


def test_the_same_seed_gives_the_same_attack() -> None:
    scenario = _scenario(
        **{
            "training.aggregation": "dca",
            "training.noise_multiplier": 0.01,
            "threat.colluding_servers": NODES,
        }
    )
    first, found_first, _ = attack_run(scenario, seed=5)
    again, found_again, _ = attack_run(scenario, seed=5)
    assert first == again and found_first == found_again
    other, _, _ = attack_run(scenario, seed=6)
    assert other != first


# -- membership -----------------------------------------------------------------------------


def test_the_loss_threshold_figures() -> None:
    """Members all below the threshold, non-members all above: TPR 1, FPR 0, advantage
    1, and ε ≥ ln((1 − δ − FNR⁺)/FPR⁺) with the Clopper–Pearson upper bounds at 97.5%
    (FPR⁺ = 1 − 0.025^{1/n} for 0 of n)."""
    n, delta = 100, 1e-5
    got = loss_threshold(np.zeros(n), np.ones(n), 0.5, delta)
    assert (got["tpr"], got["fpr"], got["advantage"]) == (1.0, 0.0, 1.0)
    upper = 1 - 0.025 ** (1 / n)
    assert got["epsilon_lower_bound"] == pytest.approx(math.log((1 - delta - upper) / upper))


def _membership(**changes: Any) -> Scenario:
    """Three clients of digits split over 100 (14 records each), one round of 300 local
    epochs, no clipping in effect (C = 10⁴) and no noise: the released model is the
    average of three models fitted to their 43 records."""
    base = {
        "threat.attack": "membership",
        "population.clients": 100,
        "training.aggregation": "trusted",
        "training.algorithm": "dp_fedavg",
        "training.cohort": 3,
        "training.rounds": 1,
        "training.local_epochs": 300,
        "training.client_lr": 1.0,
        "training.clip_norm": 1e4,
    }
    return _scenario(**(base | changes))


def test_membership_on_an_overfitted_model() -> None:
    """Without a membership signal TPR and FPR are two proportions of n with one mean
    p, so TPR − FPR has sd √(2p(1 − p)/n) ≤ √(0.5/n); the overfitted model's advantage
    is above three of those (measured 0.5 at n = 44) and the ε it implies is positive."""
    report, findings, _ = attack_run(_membership())
    assert findings == [] and report["rounds_recovered"] == []
    n = report["members"]
    assert n == report["non_members"] > 0
    assert report["success"] == pytest.approx(report["tpr"] - report["fpr"])
    assert report["success"] > 3 * math.sqrt(0.5 / n)
    assert report["epsilon_lower_bound"] > 0


def test_membership_advantage_is_a_difference_of_rates() -> None:
    """With heavy noise (z = 5, C = 1) the figures stay well formed: the advantage is
    TPR − FPR, rates in [0, 1], ε's lower bound finite and ≥ 0; the same seed repeats.
    The noise leaves the model little of any member, so the advantage is within the
    sampling noise of two rates over n records each (sd at most √(0.5/n), 0.11 at
    n = 43): 4 sd, which a run without signal exceeds with probability below 10⁻⁴."""
    scenario = _membership(**{"training.noise_multiplier": 5.0, "training.clip_norm": 1.0})
    report, _, _ = attack_run(scenario, seed=2)
    assert report["success"] == pytest.approx(report["tpr"] - report["fpr"], abs=1e-12)
    assert abs(report["success"]) <= 4.0 * math.sqrt(0.5 / report["members"])
    assert 0.0 <= report["tpr"] <= 1.0 and 0.0 <= report["fpr"] <= 1.0
    assert 0.0 <= report["epsilon_lower_bound"] < math.inf
    assert attack_run(scenario, seed=2)[0] == report
