"""Poisoning clients (``threat.poisoning``) and the checks against them
(``training.update_check``): who is malicious, what reaches the sum through each
aggregation, and what each check lets through.

Every run is a few rounds of the protocol's small example, seeded. The rounds are
watched by wrapping :func:`~privsim.protocols.fedlearn.run.simulate_round` (the rows the
clients hand the aggregation and the round's outcome); every bound asserted is the
protocol's own (k·C, the norm bound's formula), with the margins explained beside them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privsim.protocols.fedlearn import EXAMPLE, rounds
from privsim.protocols.fedlearn import run as run_module
from privsim.protocols.fedlearn.attacks import AttackContext, defences
from privsim.protocols.fedlearn.attacks.poisoning import Poisoner, malicious_count
from privsim.protocols.fedlearn.attacks.registry import build_poisoner
from privsim.protocols.fedlearn.federated import learner_of
from privsim.protocols.fedlearn.models import clip_rows
from privsim.protocols.fedlearn.plan import plan_training
from privsim.protocols.fedlearn.rounds import RoundRun
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.schema import Scenario
from privsim.sim.streams import Streams

POISSON = {
    "training.sampling": "poisson",
    "training.rate": 0.33,
    "privacy.neighbour": "add_remove",
}

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _scenario(
    share: float = 0.1, kind: str = "scale", factor: float = 1000.0, **changes: Any
) -> Scenario:
    # z given: no calibration to wait for (the ledger still reports its ε)
    fields: dict[str, Any] = {
        "privacy.on_overspend": "allow",
        "training.rounds": 3,
        "training.noise_multiplier": 1.0,
        **changes,
    }
    if share > 0:
        fields["threat.poisoning"] = {"share": share, "kind": kind, "factor": factor}
    return scenario_from_dict(set_fields(EXAMPLE, fields))


Round = tuple[np.ndarray, RoundRun, Any]


def _watched(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Round]]:
    """Train ``scenario``, keeping each round's input rows (k, P), its run and the plan."""
    seen: list[Round] = []
    simulate = rounds.simulate_round  # the round itself, never an earlier watcher

    def watch(*args: Any, **kwargs: Any) -> RoundRun:
        out = simulate(*args, **kwargs)
        seen.append((np.array(kwargs["updates"].values), out, kwargs["plan"]))
        return out

    monkeypatch.setattr(run_module, "simulate_round", watch)
    return run_module.train(scenario), seen


def _poisoner(scenario: Scenario) -> Poisoner:
    streams = Streams(scenario.seed)
    learner = learner_of(scenario, streams)
    ctx = AttackContext(
        scenario=scenario,
        streams=streams,
        learner=learner,
        plan=plan_training(scenario, learner.start.size),
        coalition=frozenset(),
        target="",
    )
    poisoner = build_poisoner(ctx)
    assert isinstance(poisoner, Poisoner)
    return poisoner


def _malicious_rows(names: tuple[str, ...], poisoner_names: frozenset[str]) -> np.ndarray:
    return np.array([n in poisoner_names for n in names], dtype=bool)


@pytest.mark.parametrize(
    ("share", "clients", "count"), [(0.1, 60, 6), (0.05, 50, 3), (0.01, 60, 1)]
)
def test_the_malicious_clients_are_round_share_times_n(
    share: float, clients: int, count: int
) -> None:
    """round(share·N) clients, halves up (0.05·50 = 2.5 → 3), distinct, of the population."""
    assert malicious_count(share, clients) == count
    poisoner = _poisoner(_scenario(share, **{"population.clients": clients}))
    assert len(poisoner.malicious) == count == len(set(poisoner.indices))
    assert all(0 <= i < clients for i in poisoner.indices)


def test_a_named_target_is_never_drawn_malicious() -> None:
    """With ``threat.target`` named, the malicious draw skips it (an attack on a
    colluder's own input would be no attack): at a share of 0.9 of 20 clients, 18 are
    drawn from the 19 others, every time."""
    for target in ("client-0", "client-7", "client-19"):
        poisoner = _poisoner(
            _scenario(
                0.9,
                **{
                    "population.clients": 20,
                    "threat.attack": "reconstruction",
                    "threat.target": target,
                },
            )
        )
        assert target not in poisoner.malicious and len(poisoner.malicious) == 18
        assert all(0 <= i < 20 for i in poisoner.indices)


def test_the_malicious_clients_join_the_coalition_and_are_reported() -> None:
    """The run's coalition holds them (the ledger's ε is against them), and the report
    names the kind, the share and how many they are."""
    scenario = _scenario(0.1)
    poisoner = _poisoner(scenario)
    t = run_module.train(scenario)
    assert poisoner.malicious <= t.coalition
    report = t.attack["poisoning"]
    assert report["name"] == "poisoning" and report["kind"] == "scale"
    assert report["share"] == 0.1 and report["malicious"] == 6
    # every picked malicious client is online here (no faults, always available): each
    # sends one poisoned update, so the rounds' picked colluders are exactly those sent
    # (3 at this seed, all in the last round)
    assert t.coalition == poisoner.malicious
    assert all(r.picked == r.online for r in t.records)
    assert report["malicious_rounds_sent"] == sum(r.colluding for r in t.records) > 0
    from privsim.protocols.fedlearn.report import attack_lines

    assert attack_lines(t.attack) == [
        "Poisoning   scale by 6 malicious clients (a share of 0.1): "
        f"{report['malicious_rounds_sent']} poisoned updates sent, "
        f"{report['malicious_rounds_included']} included"
    ]


def test_poison_replaces_only_the_online_malicious_rows() -> None:
    """Honest and offline rows are left as they are; ``scale`` and ``sign_flip`` send
    ±factor times the same raw update (their own generator: two poisoners built alike
    draw alike), which clipped is the honest row's direction."""
    scenario = _scenario(0.1, "scale", factor=7.0)
    flip = _scenario(0.1, "sign_flip", factor=7.0)
    up, down = _poisoner(scenario), _poisoner(flip)
    learner = up.learner
    cohort = np.array([*up.indices[:2], *[i for i in range(60) if i not in up.indices][:3]])
    online = np.array([True, False, True, True, True])
    params = learner.init()
    honest = learner.updates(params, cohort, online, np.random.default_rng(0))
    got = up.poison(cohort, (), online, params, honest)
    got_flip = down.poison(cohort, (), online, params, honest)
    np.testing.assert_array_equal(got[1:], honest[1:])
    np.testing.assert_allclose(got_flip[0], -got[0], rtol=0, atol=0)
    raw = got[0] / 7.0
    assert np.linalg.norm(raw) > 0
    # clipped, the raw update points where the honest computation's would (another
    # minibatch order: the same direction only up to the local SGD's noise, so the
    # cosine is asserted positive, not 1)
    assert float(raw @ honest[0]) > 0


def test_replace_moves_the_model_to_the_wrong_labels_target() -> None:
    """Model replacement (Bagdasaryan et al. 2020): a malicious clients each send
    (m/(η·a))·(w_target − w), so their sum over m is w_target − w exactly."""
    poisoner = _poisoner(_scenario(0.1, "replace"))
    learner = poisoner.learner
    assert poisoner.target is not None
    cohort = np.array(poisoner.indices[:3])
    params = learner.init() + 0.01
    out = poisoner.poison(cohort, (), np.ones(3, dtype=bool), params, np.zeros((3, params.size)))
    step = out.sum(axis=0) / poisoner.boost
    np.testing.assert_allclose(step, poisoner.target - params, rtol=1e-12, atol=1e-12)
    # the target is a bad model: worse on the test set than the start's accuracy band
    acc, _ = learner.evaluate(poisoner.target)
    assert acc < learner.initial_accuracy


def test_trusted_curator_clips_every_received_update(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without noise (z = 0) the trusted release is exactly Σ clip(u_i) over the
    included clients, a malicious row boosted 1000-fold included: its norm ≤ k·C."""
    scenario = _scenario(
        0.2, **{"training.aggregation": "trusted", "training.noise_multiplier": 0.0}
    )
    poisoner = _poisoner(scenario)
    _, seen = _watched(scenario, monkeypatch)
    boosted = 0
    for rows, run, _ in seen:
        inc = run.outcome.included
        bad = _malicious_rows(run.names, poisoner.malicious) & inc
        boosted += int(bad.sum())
        assert np.all(np.linalg.norm(rows[bad], axis=1) > 1.0)  # they did skip clipping
        clipped = clip_rows(rows[inc], 1.0)[0].sum(axis=0)
        np.testing.assert_allclose(run.outcome.released, clipped, rtol=1e-12, atol=1e-12)
        assert np.linalg.norm(run.outcome.released) <= int(inc.sum()) * (1 + 1e-9)
    assert boosted > 0, "no malicious client was picked: choose another seed"


@pytest.mark.parametrize(
    ("aggregation", "extra"),
    [("secagg_plus", POISSON), ("dca", {}), ("dca", {**POISSON, "dca.noise": "discrete_gaussian"})],
)
def test_secure_aggregation_lets_a_scaled_update_through(
    aggregation: str, extra: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server sees only the sum: with a malicious client in it, the released sum's
    norm exceeds k·C, and even the norm the honest sum and its noise reach with
    probability 1 − 10⁻⁹ (:func:`defences.norm_bound_of`). With ``norm_bound`` the same
    rounds are held to that bound; without a malicious client in a round it is not
    touched (the release is bit for bit the unchecked one)."""
    changes = {"training.aggregation": aggregation, **extra}
    scenario = _scenario(0.1, **changes)
    poisoner = _poisoner(scenario)
    _, plain = _watched(scenario, monkeypatch)
    _, bounded = _watched(
        _scenario(0.1, **changes, **{"training.update_check": "norm_bound"}), monkeypatch
    )
    passed = 0
    for (rows, run, plan), (_, checked, _) in zip(plain, bounded, strict=True):
        inc = run.outcome.included
        if inc is None:
            continue
        k = int(inc.sum())
        bound = defences.norm_bound_of(
            k, 1.0, defences.sum_std(plan.training, plan, k), rows.shape[1]
        )
        released = np.linalg.norm(run.outcome.released)
        if np.any(_malicious_rows(run.names, poisoner.malicious) & inc):
            passed += 1
            assert released > bound > k
            assert np.linalg.norm(checked.outcome.released) <= bound * (1 + 1e-12)
        else:
            np.testing.assert_array_equal(checked.outcome.released, run.outcome.released)
    assert passed > 0, "no malicious client was picked: choose another seed"


def test_secagg_wraps_a_huge_update_around_its_modulus(monkeypatch: pytest.MonkeyPatch) -> None:
    """SecAgg sums round(2^f·x) mod 2^b: the decoded sum lies in [−2^(b−1), 2^(b−1))/2^f
    per coordinate whatever the inputs; a coordinate of the true sum beyond it comes back
    as its residue (off by a multiple of 2^b/2^f), not its value."""
    scenario = _scenario(0.1, factor=1e4, **{"training.aggregation": "secagg_plus", **POISSON})
    _, seen = _watched(scenario, monkeypatch)
    wrapped = 0
    for rows, run, plan in seen:
        if run.outcome.included is None:
            continue
        unit = 2.0 ** (plan.integer.bits - plan.integer.fraction_bits)
        released = np.asarray(run.outcome.released)
        assert np.all(np.abs(released) <= unit / 2)
        true = rows[run.outcome.included].sum(axis=0)
        turns = np.rint((true - released) / unit)
        wrapped += int(np.count_nonzero(turns))
        # less the whole turns, what is left is the noise and rounding: far below a turn
        assert np.all(np.abs(true - released - turns * unit) < unit / 8)
    assert wrapped > 0


def test_range_check_rejects_the_poisoned_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each coordinate proved in [−C, C] (RoFL's L∞ check): a malicious client's boosted
    update fails and is left out as if dropped; every honest online client is in."""
    changes = {
        "training.aggregation": "secagg_plus",
        "training.update_check": "range_check",
        **POISSON,
    }
    scenario = _scenario(0.1, **changes)
    poisoner = _poisoner(scenario)
    _, seen = _watched(scenario, monkeypatch)
    rejected = 0
    for rows, run, _ in seen:
        if run.outcome.included is None:
            continue
        bad = _malicious_rows(run.names, poisoner.malicious)
        sent = np.linalg.norm(rows, axis=1) > 0
        assert not np.any(run.outcome.included & bad)
        np.testing.assert_array_equal(run.outcome.included[~bad], sent[~bad])
        rejected += int((bad & sent).sum())
    assert rejected > 0, "no malicious client was picked: choose another seed"


def test_the_checks_leave_honest_inputs_alone() -> None:
    """Clipped rows pass the range check (|u_ij| ≤ ‖u_i‖ ≤ C, rounding being monotone),
    the curator's clip returns the received sum itself, and a proof for one 64-bit value
    is Bulletproofs' 672 bytes (21 elements of 32 bytes) plus its commitment."""
    rng = np.random.default_rng(3)
    rows = clip_rows(rng.normal(size=(50, 40)) * 3, 1.0)[0]
    rows[0] = 0.0
    rows[1, :] = 0.0
    rows[1, 5] = 1.0  # a row on the bound
    assert defences.range_check(rows, 1.0).all()
    assert defences.range_check(rows, 1.0, scale=float(1 << 20)).all()
    total = rows.sum(axis=0)
    assert defences.curator_clip(total, rows, 1.0) is total
    assert not defences.range_check(np.full((1, 40), 1.01), 1.0, scale=float(1 << 20)).any()
    assert defences.range_proof_bytes(1, 64) == 672 + 32


@pytest.mark.parametrize("aggregation", ["trusted", "dca"])
def test_same_seed_same_result(aggregation: str) -> None:
    """Two runs of one seeded scenario give the same accuracies and the same report."""
    scenario = _scenario(0.1, "sign_flip", 10.0, **{"training.aggregation": aggregation})
    a, b = run_module.train(scenario), run_module.train(scenario)
    assert [r.test_accuracy for r in a.records] == [r.test_accuracy for r in b.records]
    assert a.attack == b.attack


def test_a_study_row_keeps_the_poisoning_figures() -> None:
    """The study worker's row of a poisoning run holds the ``attack.poisoning`` section's
    figures (the store makes them dotted columns), not only the attack's top level."""
    from privsim.api import run
    from privsim.studies.worker import flatten_result

    result = run(_scenario(0.1)).to_dict()
    row = flatten_result(result)
    poisoning = result["attack"]["poisoning"]
    assert row["attack"]["poisoning"]["malicious"] == poisoning["malicious"] == 6
    assert (
        row["attack"]["poisoning"]["malicious_rounds_included"]
        == poisoning["malicious_rounds_included"]
    )
    assert row["attack"]["poisoning"]["kind"] == "scale"


def test_divergence_under_poisoning_names_the_attack_not_the_learning_rate() -> None:
    """A run whose parameters stop being finite stops with a named error: under
    poisoning the field is ``threat.poisoning.factor`` (the malicious scale did it),
    without it ``training.server_lr``; finite parameters pass."""
    from privsim.scenarios.errors import FieldError

    bad = np.array([1.0, np.inf])
    with pytest.raises(FieldError) as poisoned:
        run_module._check_finite(bad, 3, "softmax", poisoned=True)
    assert poisoned.value.field == "threat.poisoning.factor"
    assert "round 3" in str(poisoned.value) and "range_check" in str(poisoned.value)
    with pytest.raises(FieldError) as plain:
        run_module._check_finite(bad, 3, "softmax")
    assert plain.value.field == "training.server_lr"
    run_module._check_finite(np.ones(3), 3, "softmax", poisoned=True)
