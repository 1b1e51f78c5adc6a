"""Engine-level batched sends and receives, against the per-message path."""

from dataclasses import dataclass

import numpy as np
import pytest

from privsim.sim.faults import FaultSpec
from privsim.sim.latency import LogNormalLatency
from privsim.sim.messages import Message, message
from privsim.sim.network import LinkSpec, NetworkModel
from privsim.sim.trace import Status
from privsim.sim.world import World


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Note(Message):
    n: int


SIZE = 13  # wire bytes of Note


def _world(batched: bool, *, deadline: float, count: int, faults: FaultSpec | None = None):
    net = NetworkModel(
        LinkSpec(latency=LogNormalLatency(median=0.1, sigma=1.0), bandwidth=1e3, loss=0.1)
    )
    w = World(seed=5, network=net, faults=faults, encryption=False)
    senders = w.add_parties("sender", [f"s{i}" for i in range(200)])
    sink = w.add_party("sink", "sink")
    if batched:

        def population():
            yield w.env.timeout(0.05)  # sends after the receiver started waiting
            running = w.running("sender")
            w.bus.send_batch("sender", running, "sink", Note, SIZE)
            w.bus.send_batch("sender", running, "sink", Note, SIZE)

        def receive(agent):
            got = yield from agent.receive_batch(Note, count=count, deadline=deadline)
            return sorted(got.senders.tolist())

        w.start_group("senders", population())
    else:

        def send(agent):
            yield w.env.timeout(0.05)
            agent.send("sink", Note(n=0))
            agent.send("sink", Note(n=1))

        def receive(agent):
            got = yield from agent.receive_all(Note, count=count, deadline=deadline)
            return sorted(w.agents[d.src].role_index for d in got)

        for a in senders:
            w.start(a, send(a))
    w.start(sink, receive(sink))
    w.run()
    return w, sink.result


@pytest.mark.parametrize(("deadline", "count"), [(0.3, 400), (100.0, 150), (100.0, 400)])
def test_batched_receive_takes_exactly_what_per_message_receive_takes(deadline, count):
    faults = FaultSpec(
        roles=("sender",),
        absent=0.1,
        crash=0.1,
        crash_window=(0.05, 0.1),
        straggler_fraction=0.3,
        straggler_slowdown=10.0,
    )
    w1, got1 = _world(False, deadline=deadline, count=count, faults=faults)
    w2, got2 = _world(True, deadline=deadline, count=count, faults=faults)
    assert got1 == got2 and 0 < len(got1) <= count
    t1, t2 = w1.trace.arrays(), w2.trace.arrays()
    for column in ("wire_bytes", "send_time", "depart_time", "status"):
        np.testing.assert_array_equal(np.sort(getattr(t1, column)), np.sort(getattr(t2, column)))
    np.testing.assert_array_equal(
        np.sort(np.nan_to_num(t1.recv_time)), np.sort(np.nan_to_num(t2.recv_time))
    )
    assert set(np.unique(t1.status).tolist()) >= {
        Status.DELIVERED,
        Status.LOST,
        Status.SENDER_CRASHED,
    }


def test_batched_messages_to_a_crashed_receiver_are_dropped():
    faults = FaultSpec(roles=(), crashes=(("sink", 0.2),))
    w, result = _world(True, deadline=100.0, count=400, faults=faults)
    assert result is None  # the receiver crashed while waiting
    t = w.trace.arrays()
    arrived_late = np.isfinite(t.recv_time) & (t.recv_time > 0.2)
    assert arrived_late.any()
    assert np.all(t.status[arrived_late] == Status.DROPPED_DEAD_RECEIVER)
    assert np.all(t.status[np.isfinite(t.recv_time) & (t.recv_time <= 0.2)] == Status.DELIVERED)
