"""The summarisation protocol on the bus: the trace's figures, dropout, collusion, the
ledger's events (the private auction's and the paper's), determinism and the named
errors."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

from privsim.api import run
from privsim.kit.result import without_timing
from privsim.protocols.summarization import SUMMARIZATION
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.protocols.summarization.data import SetUp, check_setup
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError
from privsim.sim.ledger import BudgetExceededError
from tests.conftest import needs_data


def _run(**changes: Any) -> dict[str, Any]:
    data = set_fields(SUMMARIZATION.example, changes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(data)).to_dict()


@pytest.fixture(scope="module")
def honest() -> dict[str, Any]:
    return _run()


def test_every_step_is_a_message_and_the_costs_come_from_the_trace(honest):
    d = honest["summarization"]
    kinds = honest["communication"]["by_kind"]
    p, k = d["summary_size"], d["owners"]
    assert honest["status"] == "released"
    # An epoch whose pool is empty after the coins adds no point (the private coins can
    # ask nobody); every other epoch adds one.
    assert honest["accuracy"]["size"] == p - d["empty_epochs"]
    assert kinds["ValidationSet"] == 1 and kinds["Summary"] == 1
    assert kinds["HashBroadcast"] == k * (p + 1)  # g̃ once, g_ℓ every epoch
    assert kinds["Bid"] == k * p and kinds["Ask"] == kinds["Point"] == d["asks"]
    # Parsimony from the trace: every point asked for was sent and counted.
    assert d["owner_points_accessed"] == kinds["Point"] >= p - d["empty_epochs"]
    assert d["points_accessed"] == d["owner_points_accessed"] + d["validation_points"]
    per_party = d["per_party"]
    assert per_party["curator"]["messages_sent"] == kinds["HashBroadcast"] + kinds["Ask"] + k + 1
    assert all(per_party[f"owner-{i}"]["rounds"] >= p for i in range(k))


def test_the_ledger_charges_mwem_and_the_auction_and_trusts_the_curator(honest):
    events = {e["label"]: e for e in honest["privacy"]["events"]}
    assert set(events) == {"validation-mwem", "summary-mwem", "auction"}
    assert all(e["trusted_parties"] == ["curator"] for e in events.values())
    # The exponential mechanism as bounded range, its measurement as Laplace; the
    # private auction as ε_auc-DP coins of no better-known shape, one per epoch.
    assert "BoundedRangeDpEvent(epsilon=0.01)" in events["validation-mwem"]["planned"]
    assert "LaplaceDpEvent(noise_multiplier=100.0)" in events["validation-mwem"]["planned"]
    cfg = SummarizationConfig(**SUMMARIZATION.example["summarization"])
    assert f"GenericPureDpEvent(epsilon={cfg.auction_epsilon})" in events["auction"]["planned"]
    assert "Laplace" not in events["auction"]["planned"]
    # Basic composition: 2 ε per MWEM iteration, ε_auc per epoch; the PLD at δ is
    # reported when it is smaller, with the basic figure beside it.
    basic = (
        2 * cfg.t_init * cfg.epsilon_validation
        + 2 * (cfg.summary_size - 1) * cfg.t_sub * cfg.summary_epsilon
        + cfg.summary_size * cfg.auction_epsilon
    )
    composed = honest["privacy"]["details"]["composition"]
    assert composed["basic_epsilon"] == pytest.approx(basic)
    assert composed["method"] == "pld" and honest["privacy"]["delta"] > 0
    assert honest["privacy"]["achieved_epsilon"] == composed["pld_epsilon"] < basic
    comp = honest["summarization"]["composition"]
    assert comp["validation"]["ledger_pld_epsilon"] < comp["validation"]["ledger_basic_epsilon"]


def test_the_same_seed_gives_the_same_run(honest):
    assert without_timing(_run()) == without_timing(honest)


def test_a_dropped_owner_stops_bidding_and_the_rest_finish():
    result = _run(**{"faults.absent_parties": ["owner-1"]})
    d = result["summarization"]
    assert result["status"] == "released"
    assert d["dropped_owners"] == ["owner-1"]
    assert d["per_party"]["owner-1"]["messages_sent"] == 0
    # After epoch 1 the curator broadcasts to the live owners only.
    assert d["per_party"]["owner-1"]["messages_received"] == 0
    assert result["accuracy"]["size"] == d["summary_size"] - d["empty_epochs"]


def test_colluding_owners_keep_the_guarantee_and_see_only_dp_releases(honest):
    result = _run(**{"threat.colluding_clients": ["owner-0", "owner-2"]})
    assert result["privacy"]["guarantee_met"] is True
    # Each colluding owner sees its own coin of every epoch (issue #37): the auction's
    # events twice, p·ε_auc more than with no coalition by the basic theorem.
    auction = next(e for e in result["privacy"]["events"] if e["label"] == "auction")
    assert auction["realised"].endswith("count=2)") and not auction["broken"]
    cfg = SummarizationConfig(**SUMMARIZATION.example["summarization"])
    basic = {r["privacy"]["details"]["composition"]["basic_epsilon"] for r in (honest, result)}
    assert max(basic) - min(basic) == pytest.approx(cfg.summary_size * cfg.auction_epsilon)
    assert result["privacy"]["achieved_epsilon"] > honest["privacy"]["achieved_epsilon"]
    exposure = result["coalition"]["exposure"]
    p = result["summarization"]["summary_size"]
    assert exposure["broadcasts_received"] == 2 * (p + 1)
    assert exposure["bids_seen_from_others"] == 0
    assert exposure["naive_comparison_bits"] == 2 * p
    assert 0 <= exposure["naive_winner_notifications"] <= p
    # The private auction's asks are DP releases that hold: nothing outside DP.
    assert exposure["auction_views_not_dp"] == exposure["outranked_revealed"] == 0


def _paper(**changes: Any) -> dict[str, Any]:
    return _run(**{"summarization.auction": "paper", "privacy.on_overspend": "warn", **changes})


def test_the_paper_auction_is_refused_under_the_default_overspend_policy():
    """Its per-epoch δ = 1 − e^{−ε_auc} = 0.39 alone is over the budget's δ = 1e-5."""
    data = set_fields(SUMMARIZATION.example, {"summarization.auction": "paper"})
    with pytest.raises(BudgetExceededError, match="on_overspend"):
        run(scenario_from_dict(data))


def test_the_paper_auction_reports_its_delta_and_no_guarantee_against_owners():
    """The same run as before issue #27 (the paper's coins, the top bidder always asked),
    now recorded as (ε_auc, 1 − e^{−ε_auc}) per epoch: composed over p epochs δ far
    exceeds the budget's, so the guarantee is not met — against a colluding owner too,
    and the threat view no longer counts the asks as DP releases."""
    result = _paper(**{"threat.colluding_clients": 1})
    eps, delta = 0.5, 1 - math.exp(-0.5)
    auction = next(e for e in result["privacy"]["events"] if e["label"] == "auction")
    assert f"ApproximateDpEvent(epsilon=0.5, delta={delta!r})" in auction["planned"]
    assert not auction["broken"]  # an owner does not break the curator's trust
    assert result["privacy"]["guarantee_met"] is False
    assert result["privacy"]["achieved_epsilon"] == "inf"
    assert result["methods"]["private"]["privacy"]["guarantee_met"] is False
    comp = result["summarization"]["composition"]["auction"]
    assert (comp["variant"], comp["epsilon_per_epoch"]) == ("paper", eps)
    assert comp["delta_per_epoch"] == pytest.approx(delta, rel=1e-12)
    p = result["summarization"]["summary_size"]
    exposure = result["coalition"]["exposure"]
    assert exposure["auction_views_not_dp"] == p  # one owner, p epochs of its coin
    # Every epoch the owner was not asked proved it was outbid (it bid every epoch).
    assert exposure["outranked_revealed"] == p - exposure["asks_received"]
    # The top bidder is always asked: every epoch adds a point.
    assert result["summarization"]["empty_epochs"] == 0
    assert result["accuracy"]["size"] == p


def test_the_auction_variant_does_not_change_the_rest_of_the_run():
    """Same seed: the split, h1, the MWEM noise and D_v's hash are the same; only the
    coins (and what follows from them) differ."""
    private, paper = _run(), _paper()
    assert (
        private["summarization"]["validation_points"] == paper["summarization"]["validation_points"]
    )
    assert private["methods"]["greedy"]["accuracy"] == paper["methods"]["greedy"]["accuracy"]
    assert private["summarization"]["asks"] < paper["summarization"]["asks"]


def test_a_colluding_curator_breaks_every_event():
    result = _run(**{"threat.colluding_servers": ["curator"]})
    assert result["privacy"]["achieved_epsilon"] == "inf"
    assert all(e["broken"] for e in result["privacy"]["events"])


def test_private_summary_beats_uniform_in_mmd_on_the_example(honest):
    methods = honest["methods"]
    assert methods["greedy"]["privacy"]["non_private"] is True
    assert methods["greedy"]["accuracy"]["mmd2"] <= methods["private"]["accuracy"]["mmd2"]
    assert methods["private"]["accuracy"]["mmd2"] < methods["uniform"]["accuracy"]["mmd2"]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("summarization.eta", 0.3, "summarization.eta"),
        ("summarization.dimension", 4, "summarization.dimension"),
        ("summarization.t_init", 0, "summarization.t_init"),
        ("summarization.summary_size", 10_000, "summarization.summary_size"),
        ("summarization.owners", 700, "summarization.synthetic_records"),
        ("summarization.auction", "exponential", "summarization.auction"),
    ],
)
def test_bad_inputs_are_named_errors(field, value, named):
    changes = {field: value}
    if field == "summarization.owners":
        changes["population.clients"] = value
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(set_fields(SUMMARIZATION.example, changes))
    assert info.value.field == named and "Fix:" in str(info.value)


def _setup(owner_sizes: list[int], validation_dim: int) -> SetUp:
    rng = np.random.default_rng(0)
    return SetUp(
        name="t",
        owners=tuple((rng.normal(size=(n, 3)), np.zeros(n)) for n in owner_sizes),
        validation=rng.normal(size=(4, validation_dim)),
        test=(np.zeros((1, 3)), np.zeros(1)),
        seed=(np.zeros((1, 3)), np.zeros(1)),
    )


def test_an_empty_owner_and_a_validation_set_of_the_wrong_dimension_are_named():
    cfg = SummarizationConfig(owners=2, summary_size=3)
    with pytest.raises(FieldError, match="owner-1 holds no data"):
        check_setup(_setup([5, 0], 3), cfg)
    with pytest.raises(FieldError) as info:
        check_setup(_setup([5, 5], 2), cfg)
    assert info.value.field == "summarization.dataset"
    with pytest.raises(FieldError) as info:
        check_setup(_setup([1, 1], 3), cfg)
    assert info.value.field == "summarization.summary_size"


def test_digits_set_up_runs_without_downloads():
    result = _run(
        **{
            "summarization.dataset": "digits",
            "summarization.seed_size": 40,
            "summarization.summary_size": 15,
        }
    )
    assert result["status"] == "released" and result["summarization"]["dataset"] == "digits"


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["occupancy", "wine"])
def test_real_set_ups_run(dataset):
    result = _run(**{"summarization.dataset": dataset, "summarization.summary_size": 10})
    assert result["status"] == "released"
    assert result["summarization"]["validation_points"] > 100


def test_the_curator_rejects_a_point_that_does_not_match_its_bid():
    from privsim.protocols.summarization.behaviours import (
        CuratorPlan,
        consumer,
        curator,
        owner,
    )
    from privsim.protocols.summarization.messages import Ask, Bid, Done, HashBroadcast, Point
    from privsim.protocols.summarization.rff import FourierHash
    from privsim.sim.world import World

    rng = np.random.default_rng(14)
    h1 = FourierHash.draw(2, 16, 0.5, rng)

    def liar(agent, x):
        """Bids 10⁶ every epoch and, when asked, sends a point that does not earn it."""
        epoch = 0
        while True:
            delivery = yield from agent.receive(HashBroadcast, Ask, Done)
            msg = delivery.message
            if isinstance(msg, Done):
                return None
            if isinstance(msg, HashBroadcast) and msg.epoch > 0:
                epoch = msg.epoch
                agent.send("curator", Bid(epoch=epoch, value=1e6, repeats=1))
            elif isinstance(msg, Ask):
                agent.send("curator", Point(epoch=epoch, features=x, label=0.0, bid=1e6))

    world = World(seed=3)
    plan = CuratorPlan(
        owners=("owner-0", "owner-1"),
        consumer="consumer",
        hash1=h1,
        summary_size=4,
        eta=0.1,
        t_init=20,
        t_sub=2,
        epsilon_validation=1.0,
        epsilon_first=1.0,
        epsilon_summary=1.0,
        auction_epsilon=0.5,
        auction="paper",  # the liar, top every epoch, is then asked every epoch
        tau=3,
        sensitivity=1.0,
        timeout=1.0,
        release_last=False,
        seed_points=rng.normal(size=(5, 2)),
    )
    cons, cur = world.add_party("consumer", "consumer"), world.add_party("curator", "curator")
    honest, lying = world.add_parties("client", ["owner-0", "owner-1"])
    world.start(cons, consumer(cons, rng.normal(size=(6, 2)), "curator"))
    world.start(cur, curator(cur, plan))
    world.start(honest, owner(honest, rng.normal(size=(10, 2)), np.zeros(10), h1, "curator"))
    world.start(lying, liar(lying, np.zeros(2)))
    world.run()
    out = cur.result
    # The liar tops every auction, so it is asked every epoch; its points are rejected
    # and the summary comes from the honest owner alone, one point for each epoch the
    # coins asked it too (an epoch with only the liar asked adds nothing).
    assert out.rejected == 4
    assert len(out.picks) == sum(a - 1 for a in out.asks)
    assert all(src == "owner-0" for src, _ in out.picks)


def test_an_epoch_nobody_is_asked_in_adds_no_point_and_the_size_stays_public():
    """Two honest owners, ε_auc = 0.05: the private coins ask nobody with probability
    (1 − 0.51)(1 − 0.49) ≈ 0.25 an epoch, so some of 30 epochs find the pool empty and
    add nothing. The size owner-0 receives with every g_ℓ is still |D_init| + ℓ − 1,
    so it does not tell whether anyone was asked."""
    from privsim.protocols.summarization.behaviours import (
        CuratorPlan,
        consumer,
        curator,
        owner,
    )
    from privsim.protocols.summarization.messages import HashBroadcast
    from privsim.protocols.summarization.rff import FourierHash
    from privsim.sim.coalition import CoalitionSpec
    from privsim.sim.world import World

    rng = np.random.default_rng(15)
    h1 = FourierHash.draw(2, 16, 0.5, rng)
    seed_points = rng.normal(size=(5, 2))
    world = World(seed=4, coalition=CoalitionSpec(clients=("owner-0",)), encryption=False)
    plan = CuratorPlan(
        owners=("owner-0", "owner-1"),
        consumer="consumer",
        hash1=h1,
        summary_size=30,
        eta=0.1,
        t_init=20,
        t_sub=2,
        epsilon_validation=1.0,
        epsilon_first=1.0,
        epsilon_summary=1.0,
        auction_epsilon=0.05,
        auction="private",
        tau=100,  # no τ-rule asks: only the coins
        sensitivity=1.0,
        timeout=1.0,
        release_last=False,
        seed_points=seed_points,
    )
    cons, cur = world.add_party("consumer", "consumer"), world.add_party("curator", "curator")
    owners = world.add_parties("client", ["owner-0", "owner-1"])
    world.start(cons, consumer(cons, rng.normal(size=(6, 2)), "curator"))
    world.start(cur, curator(cur, plan))
    for agent in owners:
        world.start(agent, owner(agent, rng.normal(size=(40, 2)), np.zeros(40), h1, "curator"))
    world.run()
    out = cur.result
    assert out.epochs == 30 and out.empty > 0
    assert len(out.points) == out.epochs - out.empty
    sizes = {
        m.message.epoch: m.message.size
        for m in world.coalition_view().messages_of(HashBroadcast)
        if m.message.epoch > 0
    }
    assert sizes == {ell: len(seed_points) + ell - 1 for ell in range(1, 31)}
