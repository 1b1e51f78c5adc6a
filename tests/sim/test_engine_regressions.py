"""Regression tests for engine bugs found in review (each failed before its fix)."""

from dataclasses import dataclass

import numpy as np

from privsim.sim.latency import ConstantLatency
from privsim.sim.messages import Message, message
from privsim.sim.network import LinkSpec, NetworkModel
from privsim.sim.trace import Status
from privsim.sim.world import World


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Token(Message):
    n: int


def _world(latency: float = 1.0, bandwidth: float = 100.0) -> World:
    return World(
        seed=1,
        encryption=False,
        network=NetworkModel(LinkSpec(latency=ConstantLatency(value=latency), bandwidth=bandwidth)),
    )


def test_a_receive_without_deadline_ignores_an_earlier_receives_timer():
    w = _world(latency=0.01, bandwidth=float("inf"))
    a, b = w.add_party("a", "x"), w.add_party("b", "y")

    def sender(agent):
        agent.send("b", Token(n=1))
        yield w.env.timeout(20)
        agent.send("b", Token(n=2))

    def receiver(agent):
        first = yield from agent.receive(Token, deadline=10.0)
        second = yield from agent.receive(Token)  # no deadline: waits for t = 20.01
        return first.message.n, second.message.n, agent.now

    w.start(a, sender(a))
    w.start(b, receiver(b))
    w.run()
    assert b.result[:2] == (1, 2) and b.result[2] > 20


def test_receive_batch_keeps_later_messages_for_a_later_receive():
    w = _world()
    w.add_parties("client", ["c0", "c1"])
    node = w.add_party("node", "compute")

    def group():
        w.bus.send_batch("client", [0, 1], "node", Token, 50)  # both arrive at 1.5
        w.bus.send_batch("client", [0], "node", Token, 50)  # queued behind: arrives at 2.0
        yield from ()

    def receiver(agent):
        first = yield from agent.receive_batch(Token, count=2, deadline=10.0)
        second = yield from agent.receive_batch(Token, count=1, deadline=10.0)
        return first.senders.tolist(), second.senders.tolist(), second.arrival.tolist()

    w.start_group("g", group())
    w.start(node, receiver(node))
    w.run()
    assert node.result == ([0, 1], [0], [2.0])


def test_receive_batch_takes_at_most_count_on_ties():
    w = _world(bandwidth=float("inf"))
    w.add_parties("client", ["c0", "c1", "c2"])
    node = w.add_party("node", "compute")

    def group():
        w.bus.send_batch("client", [0, 1, 2], "node", Token, 50)  # all arrive at 1.0
        yield from ()

    def receiver(agent):
        got = yield from agent.receive_batch(Token, count=2, deadline=10.0)
        return got.senders.tolist()

    w.start_group("g", group())
    w.start(node, receiver(node))
    w.run()
    assert node.result == [0, 1]


def test_an_empty_batch_is_not_a_self_send():
    w = _world()
    w.add_parties("client", ["c0"])
    w.add_party("node", "compute")

    def group():
        flight = w.bus.send_batch("client", [], "node", Token, 50)
        assert flight.senders.size == 0
        yield from ()

    w.start_group("g", group())
    w.run()
    assert len(w.trace) == 0


def test_a_run_that_stops_early_leaves_batched_messages_in_flight():
    w = _world(latency=4.0, bandwidth=float("inf"))
    w.add_parties("client", ["c0"])
    w.add_party("node", "compute")
    w.add_party("a", "x")
    w.add_party("b", "y")

    def group():
        w.bus.send_batch("client", [0], "node", Token, 50)
        yield from ()

    def sender(agent):
        agent.send("b", Token(n=0))
        yield from ()

    w.start_group("g", group())
    w.start(w.agents["a"], sender(w.agents["a"]))
    w.run(until=2.0)
    assert [r.status for r in w.trace.records()] == [Status.IN_FLIGHT, Status.IN_FLIGHT]
    w.run()
    assert [r.status for r in w.trace.records()] == [Status.DELIVERED, Status.DELIVERED]
    assert np.isfinite(w.trace.arrays().recv_time).all()
