"""Messages of the summarisation protocol (Algorithm 3), one per step; each knows its
size on the wire (:func:`privsim.sim.messages.wire_size`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.sim.messages import Message, message

__all__ = ["Ask", "Bid", "Done", "HashBroadcast", "Point", "Summary", "ValidationSet"]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationSet(Message):
    """Consumer -> curator: D_v (m × n, no labels); counted among the points accessed."""

    points: npt.NDArray[np.float64]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class HashBroadcast(Message):
    """Curator -> every owner: g̃ = h2(h1(D_v)) (``epoch`` 0, step 3, n = |D_v|) or
    g_ℓ = h2(h1(D_s)) (step 5) with the public size n = |D_init| + ℓ − 1 (= |D_s|
    unless an epoch added no point; the true |D_s| is not released)."""

    epoch: int
    size: int
    vector: npt.NDArray[np.float64]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Bid(Message):
    """Owner -> curator: b_i = max_x gain (step 6) and how many epochs in a row that
    point has been its bid (the τ rule)."""

    epoch: int
    value: float
    repeats: int


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Ask(Message):
    """Curator -> owner: send the point you bid in ``epoch`` (PrivAuction, step 13–14)."""

    epoch: int


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Point(Message):
    """Owner -> curator: the asked point, its label and the bid it was sent for."""

    epoch: int
    features: npt.NDArray[np.float64]
    label: float
    bid: float


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Summary(Message):
    """Curator -> consumer: D_s without the seed set (step 10)."""

    points: npt.NDArray[np.float64]
    labels: npt.NDArray[np.float64]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Done(Message):
    """Curator -> every owner: the summary is complete."""

    epochs: int
