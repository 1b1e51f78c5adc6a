"""Per-viewer releases: a mechanism drawn for each of some parties, each seeing its own
draw, composes once per viewer a coalition holds, and once when it holds none."""

from __future__ import annotations

import math

import dp_accounting
import pytest

from privsim.sim.events import GenericPureDpEvent
from privsim.sim.ledger import BudgetExceededError, NoiseShares, PrivacyLedger, Trust
from privsim.sim.names import PartyNames, Picked
from privsim.sim.sampling import Sampling

VIEWERS = ("a", "b", "c")


def _ledger(budget: float = 10.0) -> PrivacyLedger:
    ledger = PrivacyLedger(budget, 1e-5)
    ledger.charge("coin", GenericPureDpEvent(0.5), trust=Trust.each("k"), viewers=VIEWERS)
    ledger.charge("broadcast", dp_accounting.LaplaceDpEvent(4.0), trust=Trust.each("k"))
    return ledger


@pytest.mark.parametrize(
    ("coalition", "draws"),
    [((), 1), (("a",), 1), (("x",), 1), (("a", "x"), 1), (("a", "c"), 2), (VIEWERS, 3)],
)
def test_a_coalition_sees_one_draw_per_viewer_it_holds_and_at_least_one(coalition, draws):
    ledger = _ledger()
    ledger.settle("coin")
    ledger.settle("broadcast")
    coin, broadcast = ledger.entries
    assert coin.draws_against(coalition) == draws and broadcast.draws_against(coalition) == 1
    g = ledger.guarantee(coalition)
    assert g.composition is not None and g.composition.basic_epsilon == pytest.approx(
        0.5 * draws + 0.25
    )


def test_the_budget_check_counts_one_draw_and_trust_still_breaks_it():
    ledger = PrivacyLedger(0.6, 1e-5)
    ledger.charge("coin", GenericPureDpEvent(0.5), viewers=VIEWERS, trust=Trust.each("k"))
    assert ledger.guarantee().met and not ledger.guarantee(["a", "b"]).met
    assert math.isinf(ledger.guarantee(["k", "a"]).epsilon)
    with pytest.raises(BudgetExceededError):
        ledger.charge("more", GenericPureDpEvent(0.2))


def test_settling_and_withholding_keep_the_viewers():
    ledger = _ledger()
    ledger.settle("coin", dp_accounting.SelfComposedDpEvent(GenericPureDpEvent(0.5), 2))
    assert ledger.entries[0].viewers == VIEWERS
    assert ledger.guarantee(["a", "b"]).composition.basic_epsilon == pytest.approx(2.25)
    ledger.withhold("coin")
    assert ledger.entries[0].viewers == VIEWERS
    assert ledger.guarantee(["a", "b"]).composition.basic_epsilon == pytest.approx(0.25)


def test_viewers_of_a_numbered_population_are_kept_as_a_view():
    ledger = PrivacyLedger(10.0, 1e-5)
    picked = Picked(PartyNames("client-", 10**6), [3, 5])
    ledger.charge("coin", GenericPureDpEvent(0.5), viewers=picked)
    (entry,) = ledger.entries
    assert entry.viewers is picked
    assert entry.draws_against(["client-3", "client-5", "client-7"]) == 2


def test_a_per_viewer_release_takes_no_noise_shares_or_sampling():
    ledger = PrivacyLedger(10.0, 1e-5)
    with pytest.raises(ValueError, match="per-viewer"):
        ledger.charge(
            "shares",
            dp_accounting.GaussianDpEvent(1.0),
            noise=NoiseShares(contributors=VIEWERS),
            viewers=VIEWERS,
        )
    with pytest.raises(ValueError, match="per-viewer"):
        ledger.charge(
            "sampled",
            dp_accounting.GaussianDpEvent(1.0),
            sampling=Sampling.poisson(0.1, "k"),
            viewers=VIEWERS,
        )
