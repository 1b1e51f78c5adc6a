"""The message trace: one immutable record per message, stored column-wise.

The trace is the single source of communication figures: messages and bytes per party
and role, rounds and durations are computed from it (:mod:`privsim.sim.cost`),
never counted by hand inside protocols.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.sim.party_index import PartyIndex

__all__ = ["MessageRecord", "Status", "Trace", "TraceArrays"]


class Status(enum.IntEnum):
    """What became of a message."""

    IN_FLIGHT = 0
    DELIVERED = 1
    LOST = 2  #: lost on the link (loss probability)
    DROPPED_DEAD_RECEIVER = 3  #: the receiver had crashed or was absent
    SENDER_CRASHED = 4  #: still in the sender's uplink queue when it crashed
    REJECTED = 5  #: failed authentication or was a replay


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRecord:
    """One message: who sent what to whom, when, its size on the wire, and its fate."""

    id: int
    src: str
    dst: str
    kind: str
    wire_bytes: int
    send_time: float
    depart_time: float  #: when its last byte left the sender's uplink
    recv_time: float  #: NaN unless it reached the receiver (delivered, dropped or rejected)
    status: Status


@dataclass(frozen=True, slots=True)
class TraceArrays:
    """The trace as NumPy columns (party and kind columns are indices into the tables)."""

    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int64]
    wire_bytes: npt.NDArray[np.int64]
    send_time: npt.NDArray[np.float64]
    depart_time: npt.NDArray[np.float64]
    recv_time: npt.NDArray[np.float64]
    status: npt.NDArray[np.int8]
    parties: tuple[str, ...]
    roles: tuple[str, ...]
    kinds: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.src.size)


_COLUMNS = ("src", "dst", "kind", "wire_bytes", "send_time", "depart_time", "recv_time", "status")


@dataclass(slots=True)
class _Batch:
    """Messages logged together: a batched send (one per sender, same receiver) or a
    broadcast (one sender, one per receiver)."""

    first_id: int
    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    kind: int
    wire_bytes: int | npt.NDArray[np.int64]
    send_time: float | npt.NDArray[np.float64]
    depart_time: npt.NDArray[np.float64]
    recv_time: npt.NDArray[np.float64]
    status: npt.NDArray[np.int8]


def _per_batch(value: Any, n: int, dtype: type) -> Any:
    """A batch's column: one Python number for all its messages, or an array of ``n``."""
    if np.ndim(value) == 0:
        return dtype(value).item()
    column: npt.NDArray[Any] = np.asarray(value, dtype=dtype)
    if column.shape != (n,):
        raise ValueError(f"a batch of {n} messages got a column of shape {column.shape}")
    return column


class Trace:
    """Append-only log of messages; parties are registered with their role."""

    def __init__(self) -> None:
        self._party_index = PartyIndex()
        self._roles: list[str] = []
        self._role_runs: list[tuple[int, int, str]] = []  # positions [lo, hi) of one role
        self._kind_index: dict[str, int] = {}
        self._kinds: list[str] = []
        self._slot: dict[int, int] = {}
        self._role_index_cache: dict[str, npt.NDArray[np.int64]] = {}
        self._src: list[int] = []
        self._dst: list[int] = []
        self._kind: list[int] = []
        self._bytes: list[int] = []
        self._send: list[float] = []
        self._depart: list[float] = []
        self._recv: list[float] = []
        self._status: list[int] = []
        self._ids: list[int] = []
        self._next_id = 0
        self._batches: list[_Batch] = []

    def register_party(self, party: str, role: str) -> None:
        self.register_parties([party], role)

    @property
    def party_index(self) -> Mapping[str, int]:
        """Every registered party's position (registration order)."""
        return self._party_index

    def register_parties(self, parties: Sequence[str], role: str) -> int:
        """Register ``parties`` of ``role``; returns the first one's position. Raises
        ValueError (registering none) if one is registered already or repeats."""
        first = self._party_index.add(parties)
        self._roles.extend([role] * len(parties))
        self._role_runs.append((first, first + len(parties), role))
        return first

    def record_send(
        self, src: str, dst: str, kind: str, wire_bytes: int, time: float, depart: float
    ) -> int:
        """Log a send; returns the message id used to settle its fate later."""
        k = self._kind_code(kind)
        self._src.append(self._party_index[src])
        self._dst.append(self._party_index[dst])
        self._kind.append(k)
        self._bytes.append(wire_bytes)
        self._send.append(time)
        self._depart.append(depart)
        self._recv.append(float("nan"))
        self._status.append(Status.IN_FLIGHT)
        mid = self._next_id
        self._next_id += 1
        self._ids.append(mid)
        self._slot[mid] = len(self._ids) - 1
        return mid

    def _kind_code(self, kind: str) -> int:
        k = self._kind_index.get(kind)
        if k is None:
            k = self._kind_index[kind] = len(self._kinds)
            self._kinds.append(kind)
        return k

    def record_batch(
        self,
        *,
        role: str,
        senders: npt.NDArray[np.int64],
        dst: str,
        kind: str,
        wire_bytes: int | npt.NDArray[np.int64],
        send_time: float | npt.NDArray[np.float64],
        depart_time: npt.NDArray[np.float64],
    ) -> int:
        """Log one message from each sender (role indices) at once; returns the first id
        (the batch holds ids ``first .. first + len(senders) - 1``). ``wire_bytes`` and
        ``send_time``: one for the whole batch, or one per message."""
        src = self._role_offsets(role)[senders]
        # One receiver for the whole batch: a read-only broadcast, no array per message.
        dst_index = np.broadcast_to(np.int64(self._party_index[dst]), src.shape)
        return self._append_batch(src, dst_index, kind, wire_bytes, send_time, depart_time)

    def record_broadcast(
        self,
        *,
        src: str,
        role: str,
        receivers: npt.NDArray[np.int64],
        kind: str,
        wire_bytes: int | npt.NDArray[np.int64],
        send_time: float,
        depart_time: npt.NDArray[np.float64],
    ) -> int:
        """Log one message from ``src`` to each receiver (role indices of ``role``);
        returns the first id, as :meth:`record_batch` (``wire_bytes`` one for all or one
        per message)."""
        dst = self._role_offsets(role)[receivers]
        src_index = np.broadcast_to(np.int64(self._party_index[src]), dst.shape)
        return self._append_batch(src_index, dst, kind, wire_bytes, send_time, depart_time)

    def _append_batch(
        self,
        src: npt.NDArray[np.int64],
        dst: npt.NDArray[np.int64],
        kind: str,
        wire_bytes: int | npt.NDArray[np.int64],
        send_time: float | npt.NDArray[np.float64],
        depart_time: npt.NDArray[np.float64],
    ) -> int:
        first = self._next_id
        n = int(src.size)
        self._next_id += n
        self._batches.append(
            _Batch(
                first_id=first,
                src=src,
                dst=dst,
                kind=self._kind_code(kind),
                wire_bytes=_per_batch(wire_bytes, n, np.int64),
                send_time=_per_batch(send_time, n, np.float64),
                depart_time=np.asarray(depart_time, dtype=np.float64),
                recv_time=np.full(n, np.nan),
                status=np.full(n, Status.IN_FLIGHT, dtype=np.int8),
            )
        )
        return first

    def _role_offsets(self, role: str) -> npt.NDArray[np.int64]:
        runs = [(lo, hi) for lo, hi, r in self._role_runs if r == role]
        cached = self._role_index_cache.get(role)
        if cached is None or cached.size != sum(hi - lo for lo, hi in runs):
            parts = [np.arange(lo, hi, dtype=np.int64) for lo, hi in runs]
            cached = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            self._role_index_cache[role] = cached
        return cached

    def settle(self, message_id: int, status: Status, time: float | None = None) -> None:
        slot = self._slot[message_id]
        self._status[slot] = status
        if time is not None:
            self._recv[slot] = time

    def settle_batch(
        self, first_id: int, status: npt.NDArray[np.int8], recv_time: npt.NDArray[np.float64]
    ) -> None:
        for b in self._batches:
            if b.first_id == first_id:
                b.status[:] = status
                b.recv_time[:] = recv_time
                return
        raise KeyError(f"no batch starts at message {first_id}")

    def __len__(self) -> int:
        return self._next_id

    def arrays(self) -> TraceArrays:
        """All messages as columns, in id order."""
        cols: dict[str, list[np.ndarray]] = {k: [] for k in _COLUMNS}
        ids = [np.asarray(self._ids, dtype=np.int64)]
        cols["src"].append(np.asarray(self._src, dtype=np.int64))
        cols["dst"].append(np.asarray(self._dst, dtype=np.int64))
        cols["kind"].append(np.asarray(self._kind, dtype=np.int64))
        cols["wire_bytes"].append(np.asarray(self._bytes, dtype=np.int64))
        cols["send_time"].append(np.asarray(self._send, dtype=np.float64))
        cols["depart_time"].append(np.asarray(self._depart, dtype=np.float64))
        cols["recv_time"].append(np.asarray(self._recv, dtype=np.float64))
        cols["status"].append(np.asarray(self._status, dtype=np.int8))
        for b in self._batches:
            n = b.src.size
            ids.append(np.arange(b.first_id, b.first_id + n, dtype=np.int64))
            cols["src"].append(b.src)
            cols["dst"].append(b.dst)
            cols["kind"].append(np.full(n, b.kind, dtype=np.int64))
            cols["wire_bytes"].append(np.broadcast_to(np.asarray(b.wire_bytes, np.int64), n))
            cols["send_time"].append(np.broadcast_to(np.asarray(b.send_time, np.float64), n))
            cols["depart_time"].append(b.depart_time)
            cols["recv_time"].append(b.recv_time)
            cols["status"].append(b.status)
        order = np.argsort(np.concatenate(ids), kind="stable")
        joined = {k: np.concatenate(v)[order] for k, v in cols.items()}
        return TraceArrays(
            **joined,
            parties=tuple(self._party_index),
            roles=tuple(self._roles),
            kinds=tuple(self._kinds),
        )

    def records(self) -> Iterator[MessageRecord]:
        t = self.arrays()
        for i in range(len(t)):
            yield MessageRecord(
                id=i,
                src=t.parties[t.src[i]],
                dst=t.parties[t.dst[i]],
                kind=t.kinds[t.kind[i]],
                wire_bytes=int(t.wire_bytes[i]),
                send_time=float(t.send_time[i]),
                depart_time=float(t.depart_time[i]),
                recv_time=float(t.recv_time[i]),
                status=Status(int(t.status[i])),
            )

    def party_role(self, party: str) -> str:
        return self._roles[self._party_index[party]]
