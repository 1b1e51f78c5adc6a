"""The ledger's shortcuts are exact or bounds: :func:`epsilon_of` caches a pure
function of its leaves (the same figure as computed afresh, under either relation when
no leaf depends on it), and a charge's check takes a figure already found for more
rounds of the same leaf, or of a leaf of its Gaussian family with no more noise, only
when that figure meets the budget — never for a leaf with less noise or more rounds."""

from __future__ import annotations

import dp_accounting
import pytest

from privsim.sim import ledger as ledger_module
from privsim.sim.ledger import PrivacyLedger, epsilon_of

DELTA = 1e-5


@pytest.fixture(autouse=True)
def _fresh_tables() -> None:
    """Each test starts from empty tables: figures other tests left there (for larger
    compositions: smaller, equally valid bounds) would otherwise be the ones found."""
    ledger_module.forget_known()
    ledger_module._epsilon_of_cached.cache_clear()


def _wor(z: float) -> dp_accounting.SampledWithoutReplacementDpEvent:
    return dp_accounting.SampledWithoutReplacementDpEvent(60, 20, dp_accounting.GaussianDpEvent(z))


def test_the_cached_figure_is_the_computed_one() -> None:
    events = [dp_accounting.SelfComposedDpEvent(_wor(1.3), 3)]
    cached = epsilon_of(events, DELTA, neighbour="replace_one")
    fresh = ledger_module._epsilon_of_leaves(((_wor(1.3), 3),), DELTA, "replace_one")
    assert cached == fresh == epsilon_of(events, DELTA)  # no leaf reads the relation


def test_a_charge_within_a_larger_known_composition_needs_no_pld(monkeypatch) -> None:
    z, rounds = 1.2, 4
    total = epsilon_of([dp_accounting.SelfComposedDpEvent(_wor(z), rounds)], DELTA)
    found = [(_wor(z), rounds - 1)]
    assert ledger_module._dominated_within(found, DELTA, "replace_one", total) == total
    # more noise in some rounds: a post-processing of the known rounds
    found = [(_wor(z * 1.5), 2), (_wor(z), 1)]
    assert ledger_module._dominated_within(found, DELTA, "replace_one", total) == total
    # less noise, more rounds, another sample or a budget below the figure: not covered
    for other, budget in (
        ([(_wor(z * 0.99), 1)], total),
        ([(_wor(z), rounds + 1)], 10 * total),
        (
            [
                (
                    dp_accounting.SampledWithoutReplacementDpEvent(
                        61, 20, dp_accounting.GaussianDpEvent(z)
                    ),
                    1,
                )
            ],
            total,
        ),
        ([(_wor(z), 1)], total * 0.5),
    ):
        assert ledger_module._dominated_within(other, DELTA, "replace_one", budget) is None

    def no_pld(*args, **kwargs):
        raise AssertionError("a covered charge composed a PLD")

    monkeypatch.setattr(ledger_module, "_pld_epsilon", no_pld)
    ledger = PrivacyLedger(total, DELTA, neighbour="replace_one")
    for r in range(rounds):  # the RDP shortcut or the known figure, never a PLD
        ledger.charge(f"round-{r}", _wor(z))


def test_a_charge_beyond_the_budget_is_still_refused() -> None:
    z = 1.2
    three = epsilon_of([dp_accounting.SelfComposedDpEvent(_wor(z), 3)], DELTA)
    ledger = PrivacyLedger(three, DELTA, neighbour="replace_one")
    for r in range(3):
        ledger.charge(f"round-{r}", _wor(z))
    with pytest.raises(ledger_module.BudgetExceededError):
        ledger.charge("round-3", _wor(z))


def test_a_run_starts_from_an_empty_table() -> None:
    """A figure another run left is never reused: the run's result is a function of its
    own scenario and seed, whatever ran before it in the process."""
    from privsim.api import run
    from privsim.protocols.fedlearn import EXAMPLE
    from privsim.scenarios import scenario_from_dict

    epsilon_of([dp_accounting.SelfComposedDpEvent(_wor(1.2), 9)], DELTA)
    assert ledger_module._known
    run(scenario_from_dict(dict(EXAMPLE)))
    assert not any(
        key[0] == _wor(1.2) for key in ledger_module._known
    )  # cleared at the start, then only the run's own figures
