"""What a coalition reads of each client's contribution to a round, from the round's
worlds (each world's :class:`~privsim.sim.coalition.CoalitionView`: the members'
messages in the clear and the key material of its own members), per aggregation:

- ``trusted`` / ``local``: the server's Update messages — the clipped update u_i, or
  u_i + η_i with the client's whole noise under local DP;
- ``dca``: the shares m_{i,k} received by colluding compute nodes. With every node (or
  t of them, Shamir shares) their sum is encode(u_i + η_i), η_i the client's noise
  share (Heikkilä et al. 2017, Algorithm 1); with fewer, uniform words: nothing;
- ``secagg`` / ``secagg_plus``: the server's masked input y_u = x_u + PRG(b_u) +
  Σ_v Δ_{u,v} PRG(s_{u,v}) (Bonawitz et al. 2017, Figure 4). Colluding holders open
  u's ShareKeys ciphertexts with their own c^SK; t shares of (b_u, s_u^SK) interpolate
  at zero to the secrets, the masks are recomputed and x_u = round(2^f u_u) + η_u
  decoded (η_u the integer noise share); fewer than t: nothing (Theorem 6.3).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.kit.secagg import round as secagg
from privsim.kit.secagg.bulk import mask_sums
from privsim.kit.secagg.crypto import KEY_BYTES, SEED_BYTES, TAG_BYTES, agree, open_share
from privsim.kit.secagg.keybook import SECRET_WORDS
from privsim.kit.secagg.maths import (
    B_WORDS,
    RECORD_BYTES,
    decode_sum,
    modulus_mask,
    unpack_records,
)
from privsim.kit.secagg.messages import AdvertiseKeys, EncryptedShares, MaskedInput
from privsim.kit.secagg.sharing import interpolate_at_zero, words_to_bytes
from privsim.kit.securesum import maths as dca_maths
from privsim.kit.securesum import threshold as shamir_dca
from privsim.kit.securesum.messages import SeedShare, Share
from privsim.kit.securesum.seeded import expand
from privsim.protocols.fedlearn.behaviours import Update
from privsim.sim.coalition import CoalitionView
from privsim.sim.world import World

__all__ = ["Exposed", "dca_inputs", "direct_updates", "secagg_inputs"]

F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]

_CIPHERTEXT = RECORD_BYTES + TAG_BYTES


@dataclass(frozen=True, slots=True, kw_only=True)
class Exposed:
    """A round's contributions as the coalition reads them: ``values`` by client (only
    the clients it could read), and ``seen``, what it holds of each contribution."""

    values: Mapping[str, F64]
    seen: str


def direct_updates(world: World, server: str, noisy: bool) -> Exposed:
    """``trusted`` / ``local``: the Update each client sent ``server``, when it colludes."""
    view = world.coalition_view()
    if server not in view.members:
        return Exposed(values={}, seen="nothing (the server is honest)")
    got = {
        m.src: np.asarray(m.message.values, dtype=np.float64)  # type: ignore[attr-defined]
        for m in view.messages_of(Update)
        if m.dst == server
    }
    return Exposed(values=got, seen="noisy updates" if noisy else "updates")


def dca_inputs(
    world: World,
    nodes: Sequence[str],
    *,
    fraction_bits: int,
    modulus_bits: int = 64,
    threshold: int | None = None,
) -> Exposed:
    """``dca``: u_i + η_i of each client whose shares reached every compute node in the
    coalition (``threshold`` t: any t nodes, Lagrange at zero mod 2^61 − 1), decoded
    from fixed point with ``fraction_bits`` (integer noise: mod 2^``modulus_bits``)."""
    view = world.coalition_view()
    held = [k for k in nodes if k in view.members]
    need = len(nodes) if threshold is None else threshold
    seen = f"shares of {len(held)} of {len(nodes)} compute nodes"
    if len(held) < need:
        return Exposed(values={}, seen=seen + " (uniform: nothing)")
    shares = _dca_shares(view, nodes)
    out: dict[str, F64] = {}
    for client, by_node in shares.items():
        if len(by_node) < need:
            continue
        if threshold is not None:
            by_index = {nodes.index(k): v for k, v in by_node.items()}
            total = shamir_dca.reconstruct_sum(by_index, threshold)
            out[client] = shamir_dca.decode_residues(total, fraction_bits)
        else:
            total = dca_maths.reconstruct(np.stack(list(by_node.values())))
            out[client] = dca_maths.decode_sum(total, fraction_bits, modulus_bits)
    return Exposed(values=out, seen=seen)


def _dca_shares(view: CoalitionView, nodes: Sequence[str]) -> dict[str, dict[str, U64]]:
    """Each client's shares by compute node, seeds expanded (a seed has no length of its
    own: the client's explicit share, to node 0, gives it)."""
    shares: dict[str, dict[str, U64]] = defaultdict(dict)
    for seen in view.messages_of(Share):
        if seen.dst in nodes:
            shares[seen.src][seen.dst] = np.asarray(seen.message.values, dtype=np.uint64)  # type: ignore[attr-defined]
    for seen in view.messages_of(SeedShare):
        if seen.dst in nodes and shares[seen.src]:
            size = next(iter(shares[seen.src].values())).size
            shares[seen.src][seen.dst] = expand(seen.message.seed, size)  # type: ignore[attr-defined]
    return shares


def secagg_inputs(world: World, plan: secagg.RoundPlan) -> Exposed:
    """``secagg`` / ``secagg_plus``: u_u + η_u/2^f of each client the coalition unmasks
    (module docstring), decoded mod 2^b with the plan's fraction bits."""
    view = world.coalition_view()
    t = plan.threshold
    if plan.server not in view.members:
        return Exposed(values={}, seen="nothing (the server is honest)")
    index = {c: i for i, c in enumerate(plan.clients)}
    members = sorted(index[p] for p in view.members if p in index)
    seen = f"masked inputs, and shares of {len(members)} holders (t = {t})"
    if len(members) < t:
        return Exposed(values={}, seen=seen)
    c_secret, _ = _own_secrets(world, plan, members)
    publics: dict[int, tuple[bytes, bytes]] = {}
    sealed: dict[int, tuple[npt.NDArray[np.int64], bytes]] = {}
    came: dict[int, npt.NDArray[np.int64]] = {}
    masked: dict[int, U64] = {}
    for m in view.messages:
        msg, src, dst = m.message, index.get(m.src), index.get(m.dst)
        if isinstance(msg, AdvertiseKeys) and src is not None:
            publics[src] = (msg.c_public, msg.s_public)
        elif isinstance(msg, EncryptedShares) and src is not None and m.dst == plan.server:
            sealed[src] = (msg.peers, msg.ciphertexts)
        elif isinstance(msg, EncryptedShares) and dst is not None and m.src == plan.server:
            came[dst] = msg.peers
        elif isinstance(msg, MaskedInput) and src is not None and m.dst == plan.server:
            masked[src] = np.asarray(msg.values, dtype=np.uint64)
    out: dict[str, F64] = {}
    for u, y in masked.items():
        if u in members or u not in sealed or u not in came:
            continue
        secrets = _opened(u, sealed[u], c_secret, publics, t)
        if secrets is None:
            continue
        b_seed, s_secret = secrets
        peers = came[u]
        pair = np.array(
            [
                np.frombuffer(agree(s_secret, publics[v][1], b"s"), dtype=np.uint8)
                for v in peers.tolist()
            ],
            dtype=np.uint8,
        ).reshape(1, peers.size, SEED_BYTES)
        signs = np.where(peers < u, 1, -1).astype(np.int8)[None, :]
        masks = mask_sums(
            np.frombuffer(b_seed, dtype=np.uint8)[None, :], pair, signs, plan.dimension, plan.bits
        )[0].astype(np.uint64)
        x = (y - masks) & modulus_mask(plan.bits)
        out[plan.clients[u]] = decode_sum(x, plan.fraction_bits, plan.bits)
    return Exposed(values=out, seen=seen)


def _own_secrets(
    world: World, plan: secagg.RoundPlan, members: Sequence[int]
) -> tuple[dict[int, bytes], dict[int, bytes]]:
    """The colluding clients' own c^SK and s^SK: their rows of the round's key material
    (:func:`privsim.kit.secagg.round.launch` draws it from the world's streams)."""
    rows = np.asarray(members, dtype=np.int64)
    words = world.streams.keystream(*plan.label, "client-secrets").words(rows, 0, SECRET_WORDS)
    raw = np.ascontiguousarray(words, dtype="<u8").view(np.uint8).reshape(rows.size, -1)
    c = {h: raw[i, :KEY_BYTES].tobytes() for i, h in enumerate(members)}
    s = {h: raw[i, KEY_BYTES : 2 * KEY_BYTES].tobytes() for i, h in enumerate(members)}
    return c, s


def _opened(
    u: int,
    sealed: tuple[npt.NDArray[np.int64], bytes],
    c_secret: Mapping[int, bytes],
    publics: Mapping[int, tuple[bytes, bytes]],
    t: int,
) -> tuple[bytes, bytes] | None:
    """(b_u, s_u^SK) from the shares of u that t colluding holders open (e_{u,v} under
    KA.agree(c_v^SK, c_u^PK)), None with fewer than t."""
    peers, blob = sealed
    xs: list[int] = []
    ys: list[U64] = []
    for j, v in enumerate(peers.tolist()):
        if v not in c_secret or len(xs) == t:
            continue
        key = agree(c_secret[v], publics[u][0], b"c")
        plain = open_share(AESGCM(key), u, v, blob[_CIPHERTEXT * j : _CIPHERTEXT * (j + 1)])
        ids, words = unpack_records(plain)
        if int(ids[0, 0]) != u or int(ids[0, 1]) != v:
            continue
        xs.append(v + 1)
        ys.append(words[0])
    if len(xs) < t:
        return None
    secret = interpolate_at_zero(np.array([xs], dtype=np.int64), np.array([ys], dtype=np.uint64))
    b_seed = words_to_bytes(secret[:, :B_WORDS], SEED_BYTES)[0].tobytes()
    s_secret = words_to_bytes(secret[:, B_WORDS:], KEY_BYTES)[0].tobytes()
    return b_seed, s_secret
