"""Communication cost computed from the trace: per party, per role, rounds, durations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.sim.trace import Status, TraceArrays

__all__ = ["CostReport", "RoleCost", "communication_cost", "message_rounds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleCost:
    """Mean and max over the parties of one role."""

    parties: int
    messages_sent_mean: float
    messages_sent_max: int
    bytes_sent_mean: float
    bytes_sent_max: int
    messages_received_mean: float
    messages_received_max: int
    bytes_received_mean: float
    bytes_received_max: int
    rounds_max: int
    busy_until_mean: float
    busy_until_max: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CostReport:
    """Whole-run figures plus :class:`RoleCost` per role."""

    messages: int
    bytes: int
    by_status: Mapping[str, int]
    by_kind: Mapping[str, int]
    rounds: int
    roles: Mapping[str, RoleCost]


def message_rounds(t: TraceArrays) -> npt.NDArray[np.int64]:
    """Round of each message: 1 + the highest round its sender had received before
    sending it (round complexity as the depth of the causal chain of messages)."""
    n = len(t)
    rounds = np.zeros(n, dtype=np.int64)
    if n == 0:
        return rounds
    received = np.isfinite(t.recv_time) & (t.status == Status.DELIVERED)
    # Events in time order; at equal times receives come before sends (a party can react
    # to what it has just received), ties otherwise by message id.
    times = np.concatenate([t.recv_time[received], t.send_time])
    is_send = np.concatenate(
        [np.zeros(int(received.sum()), dtype=np.int8), np.ones(n, dtype=np.int8)]
    )
    ids = np.concatenate([np.flatnonzero(received), np.arange(n)])
    order = np.lexsort((ids, is_send, times))
    seen = np.zeros(len(t.parties), dtype=np.int64)
    src, dst = t.src.tolist(), t.dst.tolist()
    for e in order.tolist():
        m = int(ids[e])
        if is_send[e]:
            rounds[m] = seen[src[m]] + 1
        elif rounds[m] > seen[dst[m]]:
            seen[dst[m]] = rounds[m]
    return rounds


def communication_cost(t: TraceArrays, busy_until: Mapping[str, float]) -> CostReport:
    """Aggregate the trace; ``busy_until[p]`` is when party p's behaviour ended (or it crashed)."""
    p = len(t.parties)
    delivered = t.status == Status.DELIVERED
    sent_msgs = np.bincount(t.src, minlength=p)
    sent_bytes = np.bincount(t.src, weights=t.wire_bytes, minlength=p).astype(np.int64)
    recv_msgs = np.bincount(t.dst[delivered], minlength=p)
    recv_bytes = np.bincount(t.dst[delivered], weights=t.wire_bytes[delivered], minlength=p).astype(
        np.int64
    )
    rounds = message_rounds(t)
    party_rounds = np.zeros(p, dtype=np.int64)
    np.maximum.at(party_rounds, t.src, rounds)
    last_departure = np.zeros(p)
    np.maximum.at(last_departure, t.src, t.depart_time)
    busy = np.array(
        [max(busy_until.get(name, 0.0), last_departure[i]) for i, name in enumerate(t.parties)]
    )

    roles_arr = np.asarray(t.roles)
    roles: dict[str, RoleCost] = {}
    for role in dict.fromkeys(t.roles):
        sel = roles_arr == role
        roles[role] = RoleCost(
            parties=int(sel.sum()),
            messages_sent_mean=float(sent_msgs[sel].mean()),
            messages_sent_max=int(sent_msgs[sel].max()),
            bytes_sent_mean=float(sent_bytes[sel].mean()),
            bytes_sent_max=int(sent_bytes[sel].max()),
            messages_received_mean=float(recv_msgs[sel].mean()),
            messages_received_max=int(recv_msgs[sel].max()),
            bytes_received_mean=float(recv_bytes[sel].mean()),
            bytes_received_max=int(recv_bytes[sel].max()),
            rounds_max=int(party_rounds[sel].max()),
            busy_until_mean=float(busy[sel].mean()),
            busy_until_max=float(busy[sel].max()),
        )
    by_status = {
        s.name.lower(): int((t.status == s).sum()) for s in Status if (t.status == s).any()
    }
    by_kind = {k: int((t.kind == i).sum()) for i, k in enumerate(t.kinds)}
    return CostReport(
        messages=len(t),
        bytes=int(t.wire_bytes.sum()),
        by_status=by_status,
        by_kind=by_kind,
        rounds=int(rounds.max()) if len(t) else 0,
        roles=roles,
    )
