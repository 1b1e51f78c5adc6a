"""Large populations without an object per party: agents made on first use
(:mod:`privsim.sim.agent_table`), numbered names (:class:`~privsim.sim.names.PartyNames`)
and views of some of them (:class:`~privsim.sim.names.Picked`), each as good as the list
of strings it replaces."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsim.sim.names import PartyNames, Picked
from privsim.sim.world import World


def test_a_population_is_registered_without_agent_objects():
    world = World(seed=1, encryption=False)
    world.add_parties("client", PartyNames("client-", 1000))
    assert list(world.agents.made()) == []
    world.add_party("server", "server")  # a single party is made: it gets a behaviour
    assert len(world.agents) == 1001
    agent = world.agents["client-7"]
    assert (agent.id, agent.role, agent.role_index) == ("client-7", "client", 7)
    assert world.agents["server"].role_index == 0
    assert world.agents["client-7"] is agent  # made once
    assert {a.id for a in world.agents.made()} == {"client-7", "server"}
    assert "client-999" in world.agents and "client-1000" not in world.agents
    assert world.agents.get("nobody") is None
    with pytest.raises(KeyError):
        world.agents["nobody"]


def test_a_party_registered_twice_is_refused_and_nothing_is_half_added():
    world = World(seed=1, encryption=False)
    world.add_parties("client", ["a", "b"])
    with pytest.raises(ValueError, match=r"parties already exist or repeat: \['b'\]"):
        world.add_parties("client", ["c", "b"])
    with pytest.raises(ValueError, match="repeated ids"):
        world.add_parties("client", ["d", "d"])
    assert list(world.agents) == ["a", "b"]
    added = world.add_parties("client", ["c", "d"])
    assert [a.role_index for a in added] == [2, 3]
    assert world.trace.party_index == {"a": 0, "b": 1, "c": 2, "d": 3}


def test_an_agent_never_made_is_alive_and_never_busy():
    world = World(seed=1, encryption=False)
    world.add_parties("client", PartyNames("client-", 50))
    world.run()
    assert world.dead == frozenset()
    assert list(world.agents.made()) == []


def test_numbered_names_are_the_tuple_of_their_strings():
    names = PartyNames("client-", 12)
    listed = tuple(f"client-{i}" for i in range(12))
    assert names == listed and tuple(names) == listed
    assert names[-1] == "client-11" and names[2:5] == listed[2:5]
    assert names.index("client-3") == 3
    for stranger in ("client-12", "client-03", "client--1", "client-", "node-1", 3, "client-٣"):
        assert stranger not in names
        with pytest.raises(ValueError):
            names.index(stranger)
    with pytest.raises(IndexError):
        names[12]
    assert len(pickle.dumps(PartyNames("client-", 10**7))) < 200  # a shard carries no names
    assert pickle.loads(pickle.dumps(names)) == names


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 300),
    data=st.data(),
)
def test_a_picked_view_counts_honest_contributors_as_the_tuple_does(n, data):
    names = PartyNames("client-", n)
    chosen = sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else [])
    coalition = set(
        data.draw(st.sets(st.sampled_from([*(f"client-{i}" for i in range(n + 3)), "server"])))
    )
    view = Picked(names, np.array(chosen, dtype=np.int64))
    listed = tuple(f"client-{i}" for i in chosen)
    assert view == listed and len(view) == len(listed)
    honest_by_tuple = sum(1 for c in listed if c not in coalition)
    honest_by_view = len(view) - sum(1 for c in coalition if c in view)
    assert honest_by_view == honest_by_tuple
    assert pickle.loads(pickle.dumps(view)) == view
