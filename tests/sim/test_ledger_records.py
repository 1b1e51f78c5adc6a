"""The ledger's smaller promises, each pinned: trust descriptions, noise-share realisation
at its edges, pure-ε composition, budget validation, the messages a user reads, and the
records a result reports for every entry."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import dp_accounting
import pytest

import privsim.sim.ledger as ledger_module
from privsim.sim.ledger import (
    BudgetExceededError,
    NoiseShares,
    OverspendWarning,
    PrivacyLedger,
    Trust,
    TrustKind,
    compose,
    pure_epsilon,
)

#: Under mutmut the module runs from its ``mutants/`` copy behind a trampoline frame.
_UNDER_MUTMUT = "mutants" in Path(ledger_module.__file__).parts

LAPLACE = dp_accounting.LaplaceDpEvent
GAUSSIAN = dp_accounting.GaussianDpEvent


def test_trust_constructors_and_their_descriptions():
    nobody = Trust.nobody()
    assert (nobody.kind, nobody.parties) == (TrustKind.NOBODY, ())
    assert nobody.description == "nobody (noise added where the data is)"
    assert Trust.nobody("local").description == "local"
    each = Trust.each("a", "b")
    assert (each.kind, each.parties, each.description) == (
        TrustKind.EACH,
        ("a", "b"),
        "a, b honest",
    )
    assert Trust.each("a", description="the curator").description == "the curator"
    one = Trust.one_of(["n0", "n1"])
    assert (one.kind, one.parties) == (TrustKind.ONE_OF, ("n0", "n1"))
    assert one.description == "not all of n0, n1 colluding"
    assert Trust.one_of(["n0"], description="nodes").description == "nodes"
    with pytest.raises(ValueError, match="needs the parties it trusts"):
        Trust(TrustKind.EACH)


def test_noise_share_kinds_are_checked():
    NoiseShares(contributors=("a",), kind="gamma-laplace", needed=1)
    with pytest.raises(
        ValueError,
        match=r"^noise shares are 'gaussian', 'gamma-laplace', 'threshold' or 'integer', "
        r"got 'uniform'$",
    ):
        NoiseShares(contributors=("a",), kind="uniform")


def test_gaussian_shares_credit_honest_minus_uncredited():
    shares = NoiseShares(contributors=("a", "b", "c"), share_multiplier=0.5, uncredited=1)
    planned = GAUSSIAN(9.0)
    assert isinstance(shares.realise(planned, 1), dp_accounting.NonPrivateDpEvent)  # 1 − 1 = 0
    assert isinstance(shares.realise(planned, 0), dp_accounting.NonPrivateDpEvent)
    assert shares.realise(planned, 2).noise_multiplier == pytest.approx(0.5)  # one share < 1
    assert shares.realise(planned, 3).noise_multiplier == pytest.approx(0.5 * math.sqrt(2))
    silent = NoiseShares(contributors=("a", "b"), share_multiplier=0.0)
    assert isinstance(silent.realise(planned, 2), dp_accounting.NonPrivateDpEvent)


def test_gamma_laplace_shares_need_enough_honest_contributors():
    shares = NoiseShares(contributors=("a", "b", "c"), kind="gamma-laplace", needed=2)
    planned = LAPLACE(2.0)
    assert shares.realise(planned, 2) is planned
    assert shares.realise(planned, 3) is planned
    assert isinstance(shares.realise(planned, 1), dp_accounting.NonPrivateDpEvent)


def test_a_settled_entry_with_contributors_but_no_shares_is_the_planned_event():
    ledger = PrivacyLedger(10.0, 1e-5)
    ledger.charge("x", LAPLACE(1.0))
    ledger.settle("x", contributors=["a", "b"])
    assert ledger.entries[0].event_against({"a"}).noise_multiplier == 1.0
    shares = NoiseShares(contributors=("a", "b"), kind="gamma-laplace", needed=1)
    ledger.charge("y", LAPLACE(2.0), noise=shares)
    ledger.settle("y", contributors=["a", "b"])
    assert ledger.entries[1].event_against({"a"}).noise_multiplier == 2.0


def test_pure_epsilon_of_every_pure_event_and_none_otherwise():
    assert pure_epsilon(dp_accounting.NoOpDpEvent()) == 0.0
    assert pure_epsilon(LAPLACE(0.5)) == 2.0
    assert pure_epsilon(LAPLACE(0.0)) == math.inf
    assert pure_epsilon(dp_accounting.SelfComposedDpEvent(LAPLACE(0.5), 3)) == 6.0
    assert pure_epsilon(dp_accounting.SelfComposedDpEvent(GAUSSIAN(1.0), 3)) is None
    assert pure_epsilon(dp_accounting.ComposedDpEvent([LAPLACE(1.0), LAPLACE(0.5)])) == 3.0
    assert pure_epsilon(dp_accounting.ComposedDpEvent([LAPLACE(1.0), GAUSSIAN(1.0)])) is None
    assert pure_epsilon(GAUSSIAN(1.0)) is None
    assert compose([], 1e-5) == (0.0, 0.0)
    assert compose([dp_accounting.NoOpDpEvent()], 1e-5) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("epsilon", "delta", "message"),
    [
        (0.0, 1e-5, r"^epsilon budget must be > 0, got 0.0$"),
        (1.0, 0.0, r"^delta budget must be in \(0, 1\), got 0.0$"),
        (1.0, 1.0, r"^delta budget must be in \(0, 1\), got 1.0$"),
        (1.0, 1.5, r"^delta budget must be in \(0, 1\), got 1.5$"),
    ],
)
def test_budgets_are_checked(epsilon, delta, message):
    with pytest.raises(ValueError, match=message):
        PrivacyLedger(epsilon, delta)


def test_spending_exactly_the_budget_with_its_slack_is_within_it():
    edge = 1.0 * (1 + 1e-6)  # the ledger's relative slack for exactly calibrated noise
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("x", LAPLACE(1.0 / edge))
    assert pure_epsilon(ledger.entries[0].event) == edge and ledger.within_budget


def test_labels_are_unique():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("x", LAPLACE(2.0))
    for record in (lambda: ledger.charge("x", LAPLACE(2.0)), lambda: ledger.non_private("x", "r")):
        with pytest.raises(ValueError, match=r"^ledger already has an entry 'x'$"):
            record()


def test_refusal_names_the_spend_and_every_way_out():
    ledger = PrivacyLedger(1.0, 1e-5)
    ledger.charge("a", LAPLACE(1.0))
    with pytest.raises(BudgetExceededError) as caught:
        ledger.charge("b", LAPLACE(1.0))
    assert str(caught.value) == (
        "b: composing this mechanism gives eps = 2 at delta = 0, over the budget eps = 1. "
        "Raise privacy.epsilon, spend less per mechanism (e.g. privacy.calibration = 'exact' "
        "for Gaussian noise), or set privacy.on_overspend = 'warn' to run anyway (e.g. paper "
        "reproduction)."
    )


def test_an_allowed_overspend_warns_where_the_mechanism_charged():
    ledger = PrivacyLedger(1.0, 1e-5, on_overspend="warn")
    ledger.charge("a", LAPLACE(1.0))
    with pytest.warns(OverspendWarning) as caught:
        ledger.charge("b", LAPLACE(1.0))
    (warning,) = caught
    assert str(warning.message) == (
        "b: composing this mechanism gives eps = 2 at delta = 0, over the budget eps = 1"
    )
    if not _UNDER_MUTMUT:  # mutmut's trampolines add a frame
        assert warning.filename == __file__
    quiet = PrivacyLedger(1.0, 1e-5, on_overspend="allow")
    quiet.charge("a", LAPLACE(0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet.charge("b", LAPLACE(0.5))
    assert not quiet.within_budget


def test_entries_keep_label_event_trust_and_noise_through_settle_and_withhold():
    ledger = PrivacyLedger(10.0, 1e-5)
    trust = Trust.each("curator")
    shares = NoiseShares(contributors=("a", "b", "c"), share_multiplier=1.0)
    ledger.charge("kept", GAUSSIAN(2.0), trust=trust, noise=shares)
    ledger.withhold("kept")
    ledger.charge("sent", GAUSSIAN(3.0), trust=trust, noise=shares)
    ledger.settle("sent", contributors=["a", "b"])
    ledger.non_private("base", "a baseline")
    kept, sent, base = ledger.entries
    assert (kept.label, kept.planned.noise_multiplier, kept.trust, kept.noise) == (
        "kept",
        2.0,
        trust,
        shares,
    )
    assert str(kept.status) == "withheld"
    assert (sent.label, sent.planned.noise_multiplier, sent.trust, sent.noise) == (
        "sent",
        3.0,
        trust,
        shares,
    )
    assert str(sent.status) == "released" and sent.contributors == ("a", "b")
    assert base.label == "base" and base.reason == "a baseline"
    assert isinstance(base.planned, dp_accounting.NonPrivateDpEvent)
    assert base.trust.kind is TrustKind.NOBODY and str(base.status) == "non_private"


def test_guarantee_reports_every_event_as_it_was_against_the_coalition():
    ledger = PrivacyLedger(3.0, 1e-5)
    ledger.charge("sum", GAUSSIAN(4.0), trust=Trust.one_of(["n0", "n1"]))
    ledger.charge("count", LAPLACE(2.0), trust=Trust.each("curator", description="curator"))
    honest = ledger.guarantee()
    assert (honest.target_epsilon, honest.target_delta) == (3.0, 1e-5)
    assert honest.met and not honest.non_private and honest.delta == 1e-5
    first, second = honest.events
    assert first.label == "sum" and first.status == "planned"
    assert first.planned == repr(GAUSSIAN(4.0)) == first.realised
    assert first.trust == "not all of n0, n1 colluding" and first.trusted_parties == ("n0", "n1")
    assert first.trust_kind == "one_of" and first.broken is False
    assert second.trust == "curator" and second.trust_kind == "each"
    broken = ledger.guarantee({"curator"})
    assert broken.events[1].broken and broken.events[1].realised == repr(
        dp_accounting.NonPrivateDpEvent()
    )
    assert broken.epsilon == math.inf and not broken.met and not broken.non_private


def test_epsilon_at_another_delta():
    ledger = PrivacyLedger(10.0, 1e-5)
    ledger.charge("x", GAUSSIAN(2.0))
    assert ledger.epsilon() > ledger.epsilon(1e-2)
    assert ledger.epsilon(1e-5) == ledger.epsilon()
