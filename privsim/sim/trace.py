"""The message trace: one immutable record per message, stored column-wise.

The trace is the single source of communication figures: messages and bytes per party
and role, rounds and durations are computed from it (:mod:`privsim.analysis.cost`),
never counted by hand inside protocols.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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


class Trace:
    """Append-only log of messages; parties are registered with their role."""

    def __init__(self) -> None:
        self._party_index: dict[str, int] = {}
        self._parties: list[str] = []
        self._roles: list[str] = []
        self._kind_index: dict[str, int] = {}
        self._kinds: list[str] = []
        self._src: list[int] = []
        self._dst: list[int] = []
        self._kind: list[int] = []
        self._bytes: list[int] = []
        self._send: list[float] = []
        self._depart: list[float] = []
        self._recv: list[float] = []
        self._status: list[int] = []

    def register_party(self, party: str, role: str) -> None:
        if party in self._party_index:
            raise ValueError(f"party {party!r} is registered twice")
        self._party_index[party] = len(self._parties)
        self._parties.append(party)
        self._roles.append(role)

    def record_send(
        self, src: str, dst: str, kind: str, wire_bytes: int, time: float, depart: float
    ) -> int:
        """Log a send; returns the message id used to settle its fate later."""
        k = self._kind_index.get(kind)
        if k is None:
            k = self._kind_index[kind] = len(self._kinds)
            self._kinds.append(kind)
        self._src.append(self._party_index[src])
        self._dst.append(self._party_index[dst])
        self._kind.append(k)
        self._bytes.append(wire_bytes)
        self._send.append(time)
        self._depart.append(depart)
        self._recv.append(float("nan"))
        self._status.append(Status.IN_FLIGHT)
        return len(self._src) - 1

    def settle(self, message_id: int, status: Status, time: float | None = None) -> None:
        self._status[message_id] = status
        if time is not None:
            self._recv[message_id] = time

    def __len__(self) -> int:
        return len(self._src)

    def arrays(self) -> TraceArrays:
        return TraceArrays(
            src=np.asarray(self._src, dtype=np.int64),
            dst=np.asarray(self._dst, dtype=np.int64),
            kind=np.asarray(self._kind, dtype=np.int64),
            wire_bytes=np.asarray(self._bytes, dtype=np.int64),
            send_time=np.asarray(self._send, dtype=np.float64),
            depart_time=np.asarray(self._depart, dtype=np.float64),
            recv_time=np.asarray(self._recv, dtype=np.float64),
            status=np.asarray(self._status, dtype=np.int8),
            parties=tuple(self._parties),
            roles=tuple(self._roles),
            kinds=tuple(self._kinds),
        )

    def records(self) -> Iterator[MessageRecord]:
        for i in range(len(self._src)):
            yield MessageRecord(
                id=i,
                src=self._parties[self._src[i]],
                dst=self._parties[self._dst[i]],
                kind=self._kinds[self._kind[i]],
                wire_bytes=self._bytes[i],
                send_time=self._send[i],
                depart_time=self._depart[i],
                recv_time=self._recv[i],
                status=Status(self._status[i]),
            )

    def party_role(self, party: str) -> str:
        return self._roles[self._party_index[party]]
