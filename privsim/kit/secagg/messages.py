"""SecAgg messages, one per step of Bonawitz et al. (2017), Figure 4 (honest-but-curious
server: no signatures, no consistency round). Client ids travel as int64 indices; byte
strings are concatenations of fixed-size records, so the wire size is the real one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.sim.messages import Message, message

__all__ = [
    "AdvertiseKeys",
    "Directory",
    "EncryptedShares",
    "MaskedInput",
    "Survivors",
    "UnmaskShares",
]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class AdvertiseKeys(Message):
    """Round 0, client u -> server: (c_u^PK, s_u^PK)."""

    c_public: bytes
    s_public: bytes


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Directory(Message):
    """Round 0, server -> client: the neighbours in U1 and their public keys (32 bytes
    each, in the order of ``clients``)."""

    clients: npt.NDArray[np.int64]
    c_public: bytes
    s_public: bytes


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class EncryptedShares(Message):
    """Round 1, client u -> server (and server -> client v, regrouped by recipient):
    ciphertexts e_{u,v} of (u, v, share of b_u, share of s_u^SK), one fixed-size record
    each; ``peers`` are the recipients (upstream) or the senders (downstream)."""

    peers: npt.NDArray[np.int64]
    ciphertexts: bytes


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class MaskedInput(Message):
    """Round 2, client u -> server: y_u = x_u + PRG(b_u) + Σ_v Δ_{u,v} PRG(s_{u,v}) mod 2^b."""

    values: npt.NDArray[np.unsignedinteger]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Survivors(Message):
    """Round 2, server -> client: U3, the clients whose masked input arrived."""

    clients: npt.NDArray[np.int64]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class UnmaskShares(Message):
    """Round 3, client -> server: its shares of b_v for survivors v ∈ U3 and of s_v^SK
    for dropped v ∈ U2 \\ U3 (``owners`` v; ``kinds`` 0 for b, 1 for s^SK), each a row
    of field elements."""

    owners: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.uint8]
    shares: npt.NDArray[np.uint64]
