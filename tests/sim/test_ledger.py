import math

import dp_accounting
import pytest

from privsim.sim.calibration import classic_sigma, exact_sigma
from privsim.sim.ledger import BudgetExceededError, OverspendWarning, PrivacyLedger, compose


def test_single_gaussian_charge_at_exact_calibration_fits_the_budget():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("sum", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    assert ledger.epsilon() == pytest.approx(1.0, rel=1e-8) and ledger.within_budget


def test_a_second_mechanism_that_overspends_is_refused():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("first", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    with pytest.raises(BudgetExceededError, match=r"privacy\.on_overspend"):
        ledger.charge("second", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    assert [e.label for e in ledger.entries] == ["first"]


def test_gaussian_composition_is_exact_and_mixed_composition_uses_pld():
    # Two Gaussians with multiplier s compose to one with s / sqrt(2) (exactly, for Gaussians).
    s = 3.0
    ledger = PrivacyLedger(10.0, 1e-5)
    ledger.charge("a", dp_accounting.GaussianDpEvent(s))
    ledger.charge("b", dp_accounting.GaussianDpEvent(s))
    single = PrivacyLedger(10.0, 1e-5)
    single.charge("ab", dp_accounting.GaussianDpEvent(s / math.sqrt(2)))
    assert ledger.epsilon() == pytest.approx(single.epsilon(), rel=1e-12)
    # With a non-Gaussian event the PLD accountant composes: pessimistic by at most ~1e-3
    # in epsilon at its default discretisation, never optimistic.
    mixed = PrivacyLedger(10.0, 1e-5)
    mixed.charge("a", dp_accounting.GaussianDpEvent(s))
    mixed.charge("b", dp_accounting.GaussianDpEvent(s))
    mixed.charge("none", dp_accounting.LaplaceDpEvent(1e9))
    assert single.epsilon() <= mixed.epsilon() <= single.epsilon() + 2e-3


def test_classic_overspend_refuses_by_default_and_warns_when_allowed():
    event = dp_accounting.GaussianDpEvent(classic_sigma(10.0, 1e-4))
    with pytest.raises(BudgetExceededError):
        PrivacyLedger(10.0, 1e-4).charge("sum", event)
    ledger = PrivacyLedger(10.0, 1e-4, on_overspend="warn")
    with pytest.warns(OverspendWarning):
        ledger.charge("sum", event)
    assert ledger.epsilon() > 10.0 and not ledger.within_budget


def test_settled_event_replaces_the_planned_one():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("sum", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    ledger.settle("sum", dp_accounting.NonPrivateDpEvent())
    assert ledger.epsilon() == math.inf and not ledger.within_budget
    ledger.settle("sum", dp_accounting.NoOpDpEvent())
    assert ledger.epsilon() == 0.0


def test_trust_is_broken_only_by_the_coalition_it_names():
    from privsim.sim.ledger import Trust

    nodes = ("compute-0", "compute-1", "compute-2")
    assert not Trust.nobody().broken_by({"aggregator", *nodes})
    assert Trust.each("aggregator").broken_by({"aggregator"})
    assert not Trust.each("aggregator").broken_by({"compute-0"})
    assert not Trust.one_of(nodes).broken_by({"compute-0", "compute-1"})
    assert Trust.one_of(nodes).broken_by(set(nodes))
    with pytest.raises(ValueError, match="needs the parties"):
        Trust.one_of(())


def test_a_coalition_that_breaks_the_trust_makes_the_release_non_private():
    from privsim.sim.ledger import Trust

    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge(
        "sum", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)), trust=Trust.each("curator")
    )
    ledger.settle("sum")
    honest, broken = ledger.guarantee(()), ledger.guarantee({"curator"})
    assert honest.met and honest.epsilon == pytest.approx(1.0, rel=1e-8)
    assert broken.epsilon == math.inf and not broken.met and broken.events[0].broken


def test_gaussian_noise_shares_credit_only_honest_included_contributors():
    # Theorem 1 of Heikkilä et al.: H honest shares of multiplier s protect as one
    # Gaussian of multiplier sqrt(H - 1) * s (the target's own share is not credited).
    from privsim.sim.ledger import NoiseShares, Trust

    s, clients = 0.5, tuple(f"client-{i}" for i in range(10))
    ledger = PrivacyLedger(50.0, 1e-5)
    ledger.charge(
        "sum",
        dp_accounting.GaussianDpEvent(s * 3.0),
        trust=Trust.one_of(("compute-0", "compute-1")),
        noise=NoiseShares(contributors=clients, share_multiplier=s),
    )
    ledger.settle("sum", contributors=clients[:8])  # two dropped out
    g = ledger.guarantee({"client-0", "client-1", "client-9"})  # client-9 was not included
    single = PrivacyLedger(50.0, 1e-5)
    single.charge("sum", dp_accounting.GaussianDpEvent(math.sqrt(6 - 1) * s))
    assert g.epsilon == pytest.approx(single.guarantee().epsilon, rel=1e-12)
    assert ledger.guarantee({"compute-0", "compute-1"}).epsilon == math.inf


def test_pure_events_report_the_tighter_of_the_basic_theorem_and_the_pld():
    ledger = PrivacyLedger(1.0, 1e-5)
    steps = dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1 / 0.1), 10)
    ledger.charge("steps", steps)
    g = ledger.guarantee()
    # basic: (1.0, 0); PLD at 1e-5 is smaller by more than PURE_MARGIN, so it is reported
    assert g.composition is not None and g.composition.method == "pld"
    assert g.composition.basic_epsilon == pytest.approx(1.0, rel=1e-12)
    assert g.epsilon == g.composition.pld_epsilon < 0.99 and g.delta == 1e-5 and g.met
    # a charge the basic theorem would refuse (Σ ε = 1.01) fits by the PLD ...
    ledger.charge("more", dp_accounting.LaplaceDpEvent(1 / 0.01))
    assert ledger.guarantee().met
    # ... and one that neither fits is refused
    with pytest.raises(BudgetExceededError):
        ledger.charge("too much", dp_accounting.LaplaceDpEvent(1 / 0.5))
    # at delta = 0 nothing but the basic theorem holds
    assert compose([steps], 0.0) == pytest.approx((1.0, 0.0), rel=1e-12)


def test_one_pure_release_stays_pure():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("one", dp_accounting.LaplaceDpEvent(1.0))
    g = ledger.guarantee()  # the PLD's 0.99998 at 1e-5 is not worth giving up delta = 0
    assert (g.epsilon, g.delta) == (1.0, 0.0) and g.composition.method == "basic"


def test_withheld_and_non_private_entries():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("sum", dp_accounting.GaussianDpEvent(exact_sigma(1.0, 1e-5)))
    ledger.withhold("sum")
    assert ledger.guarantee().epsilon == 0.0
    ledger.non_private("baseline", "a labelled non-private baseline")  # never refused
    g = ledger.guarantee()
    assert g.epsilon == math.inf and g.non_private and not g.met
    assert g.events[1].reason == "a labelled non-private baseline"
