"""The ledger's trust rules (:meth:`Trust.broken_by`) for every kind, with several
parties and every kind of coalition: empty, one party, some, all, outsiders only, and
parties with outsiders.

- nobody: no coalition breaks it;
- each(P): every party in P must stay honest, so any one of them colluding breaks it;
- one_of(P): one honest party in P is enough, so only all of P colluding breaks it;
- fewer_than(t, P): broken once t or more of P collude.

(The SecAgg server-threshold rule lives with its protocol and is tested in
tests/protocols/test_secagg_trust.py.)
"""

from __future__ import annotations

import itertools

import pytest

from privsim.sim.ledger import Trust, TrustKind

PARTIES = ("alice", "bob", "carol", "dave")
OUTSIDERS = ("eve", "mallory")
UNIVERSE = PARTIES + OUTSIDERS


def _coalitions() -> list[frozenset[str]]:
    """Every subset of the four parties and two outsiders (64 coalitions)."""
    return [
        frozenset(c)
        for size in range(len(UNIVERSE) + 1)
        for c in itertools.combinations(UNIVERSE, size)
    ]


# --- each: any member colluding breaks it -----------------------------------------------


def test_each_with_two_parties_is_broken_by_either_one():
    trust = Trust.each("curator", "aggregator")
    assert trust.kind is TrustKind.EACH
    assert not trust.broken_by(set())
    assert trust.broken_by({"curator"})
    assert trust.broken_by({"aggregator"})
    assert trust.broken_by({"curator", "aggregator"})
    assert trust.broken_by({"aggregator", "client-3"})
    assert not trust.broken_by({"client-3", "compute-0"})


def test_each_with_one_party():
    trust = Trust.each("curator")
    assert trust.broken_by({"curator"})
    assert trust.broken_by(["curator", "eve"])
    assert not trust.broken_by({"eve"})
    assert not trust.broken_by(())


@pytest.mark.parametrize("coalition", _coalitions(), ids=lambda c: "+".join(sorted(c)) or "none")
def test_each_of_several(coalition):
    trust = Trust.each(*PARTIES)
    assert trust.broken_by(coalition) == bool(coalition & set(PARTIES))


# --- one_of: only all members colluding breaks it ---------------------------------------


def test_one_of_two_parties_needs_both():
    trust = Trust.one_of(["compute-0", "compute-1"])
    assert trust.kind is TrustKind.ONE_OF
    assert not trust.broken_by(set())
    assert not trust.broken_by({"compute-0"})
    assert not trust.broken_by({"compute-1", "aggregator"})
    assert trust.broken_by({"compute-0", "compute-1"})
    assert trust.broken_by({"compute-0", "compute-1", "aggregator"})
    assert not trust.broken_by({"aggregator"})


@pytest.mark.parametrize("coalition", _coalitions(), ids=lambda c: "+".join(sorted(c)) or "none")
def test_one_of_several(coalition):
    trust = Trust.one_of(PARTIES)
    assert trust.broken_by(coalition) == set(PARTIES).issubset(coalition)


# --- fewer_than: a threshold on the colluding members -----------------------------------


@pytest.mark.parametrize("count", [1, 2, 3, 4])
@pytest.mark.parametrize("coalition", _coalitions(), ids=lambda c: "+".join(sorted(c)) or "none")
def test_fewer_than_counts_colluding_members_only(count, coalition):
    trust = Trust.fewer_than(count, PARTIES)
    members = len(coalition & set(PARTIES))
    assert trust.broken_by(coalition) == (members >= count)
    # the two ends of the threshold are the other two rules
    if count == 1:
        assert trust.broken_by(coalition) == Trust.each(*PARTIES).broken_by(coalition)
    if count == len(PARTIES):
        assert trust.broken_by(coalition) == Trust.one_of(PARTIES).broken_by(coalition)


def test_fewer_than_by_hand():
    trust = Trust.fewer_than(2, ("n0", "n1", "n2"))
    assert not trust.broken_by(set())
    assert not trust.broken_by({"n1"})
    assert not trust.broken_by({"n1", "aggregator", "eve"})  # outsiders do not count
    assert trust.broken_by({"n0", "n2"})
    assert trust.broken_by({"n0", "n1", "n2"})


# --- nobody -----------------------------------------------------------------------------


@pytest.mark.parametrize("coalition", _coalitions(), ids=lambda c: "+".join(sorted(c)) or "none")
def test_nobody_is_never_broken(coalition):
    assert not Trust.nobody().broken_by(coalition)


# --- coalitions of any collection type, and malformed rules -----------------------------


@pytest.mark.parametrize("kind", [set, frozenset, list, tuple])
def test_coalition_may_be_any_collection(kind):
    some = kind(["bob", "eve"])
    everyone = kind(PARTIES)
    assert Trust.each(*PARTIES).broken_by(some)
    assert not Trust.one_of(PARTIES).broken_by(some)
    assert Trust.one_of(PARTIES).broken_by(everyone)
    assert not Trust.fewer_than(2, PARTIES).broken_by(some)
    assert Trust.fewer_than(2, PARTIES).broken_by(everyone)


def test_rules_that_name_nobody_or_an_impossible_threshold_are_refused():
    with pytest.raises(ValueError):
        Trust.each()
    with pytest.raises(ValueError):
        Trust.one_of([])
    with pytest.raises(ValueError):
        Trust.fewer_than(0, PARTIES)
    with pytest.raises(ValueError):
        Trust.fewer_than(len(PARTIES) + 1, PARTIES)
