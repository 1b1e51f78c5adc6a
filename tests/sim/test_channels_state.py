"""Channel bookkeeping the round-trip tests do not see: nonces are consecutive counters,
keys are the documented HKDF derivation, the sparse tables behave like the dense ones,
batched sealing advances the same counters as the per-message path, and key agreement is
timed and counted once per pair."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

import privsim.sim.channels as channels
from privsim.sim.channels import (
    NONCE_BYTES,
    OVERHEAD_BYTES,
    ChannelError,
    SecureChannels,
    hkdf_sha256,
)


def _channels(
    parties=("alice", "bob", "carol"), role="person", seed=0
) -> tuple[SecureChannels, dict]:
    ch = SecureChannels()
    rng = np.random.default_rng(seed)
    keys = {}
    for party in parties:
        keys[party] = rng.bytes(32)
        ch.add_party(party, keys[party], role)
    return ch, keys


@pytest.fixture(params=["dense", "sparse"])
def layout(request, monkeypatch):
    if request.param == "sparse":
        monkeypatch.setattr(channels, "_DENSE_MAX_PAIRS", 0)
    return request.param


def _nonce(envelope: bytes) -> int:
    return int.from_bytes(envelope[:NONCE_BYTES], "big")


def test_hkdf_rfc_5869_test_case_3_zero_length_salt_and_info():
    okm = hkdf_sha256(bytes.fromhex("0b" * 22), b"", 42)
    assert okm.hex() == (
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
    )
    assert hkdf_sha256(b"k", b"i", 64)[:32] == hkdf_sha256(b"k", b"i", 32)


def test_keys_are_hkdf_of_the_x25519_secret_with_both_names(layout):
    ch, secret = _channels()
    ch.agree([("alice", "bob"), ("carol", "alice")])
    for a, b in [("alice", "bob"), ("alice", "carol")]:
        shared = X25519PrivateKey.from_private_bytes(secret[a]).exchange(
            X25519PrivateKey.from_private_bytes(secret[b]).public_key()
        )
        okm = hkdf_sha256(shared, b"privsim/channel/v1|" + a.encode() + b"|" + b.encode(), 64)
        for (src, dst), key in (((a, b), okm[:32]), ((b, a), okm[32:])):
            table, i, j = ch._locate(src, dst)
            assert table.key(i, j) == key
    # bob–carol never agreed
    table, i, j = ch._locate("bob", "carol")
    assert not table.has(i, j)


def test_nonces_are_consecutive_counters_per_direction(layout):
    ch, _ = _channels()
    envelopes = [ch.seal("alice", "bob", bytes([k])) for k in range(4)]
    assert [_nonce(e) for e in envelopes] == [0, 1, 2, 3]
    assert _nonce(ch.seal("bob", "alice", b"x")) == 0
    assert _nonce(ch.seal("alice", "carol", b"x")) == 0
    assert [ch.open("alice", "bob", e) for e in envelopes] == [bytes([k]) for k in range(4)]


def test_out_of_order_arrivals_in_any_order_are_accepted_once(layout):
    for order in itertools.permutations(range(4)):
        ch, _ = _channels()
        envelopes = [ch.seal("alice", "bob", bytes([k])) for k in range(4)]
        for k in order:
            assert ch.open("alice", "bob", envelopes[k]) == bytes([k])
        for env in envelopes:
            with pytest.raises(ChannelError, match="replayed"):
                ch.open("alice", "bob", env)
        after = ch.seal("alice", "bob", b"next")
        assert _nonce(after) == 4 and ch.open("alice", "bob", after) == b"next"


def test_an_empty_payload_is_a_valid_envelope_and_shorter_ones_are_refused(layout):
    ch, _ = _channels()
    env = ch.seal("alice", "bob", b"")
    assert len(env) == OVERHEAD_BYTES and ch.open("alice", "bob", env) == b""
    with pytest.raises(ChannelError, match=r"^envelope shorter than nonce and tag$"):
        ch.open("alice", "bob", env[:-1])


def test_unknown_parties_and_bad_keys_are_named():
    ch, _ = _channels()
    with pytest.raises(ChannelError, match=r"^no key pair registered for party 'zed'$"):
        ch.seal("alice", "zed", b"x")
    with pytest.raises(ValueError, match=r"^an X25519 private key is 32 bytes$"):
        ch.add_party("dave", b"short")


def test_each_pair_is_agreed_once_and_timed(monkeypatch, layout):
    ticks = itertools.count()

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return float(next(ticks))

    monkeypatch.setattr(channels, "time", Clock)
    ch, _ = _channels()
    assert ch.key_agreement_seconds == 0.0 and ch.pairs_agreed == 0
    ch.agree([("alice", "bob"), ("bob", "alice")])  # one pair, both directions
    assert ch.pairs_agreed == 1 and ch.key_agreement_seconds == 1.0
    ch.seal("alice", "bob", b"x")  # already agreed: no new agreement, no time
    ch.seal("bob", "alice", b"x")
    assert ch.pairs_agreed == 1 and ch.key_agreement_seconds == 1.0
    ch.seal("alice", "carol", b"x")  # lazy agreement: timed and counted
    assert ch.pairs_agreed == 2 and ch.key_agreement_seconds == 2.0
    ch.agree([("carol", "bob")])
    assert ch.pairs_agreed == 3 and ch.key_agreement_seconds == 3.0


def test_role_indices_size_the_dense_tables():
    ch = SecureChannels()
    rng = np.random.default_rng(1)
    ch.add_party("n", rng.bytes(32), "node")
    ch.add_party("c2", rng.bytes(32), "client", index=2)
    ch.add_party("c0", rng.bytes(32), "client", index=0)
    ch.add_party("c1", rng.bytes(32), "client")  # next free index: 3
    assert ch.keys_for("client", "node") is None  # no pair of these roles talked yet
    ch.agree([("c1", "n")])
    keys = ch.keys_for("client", "node")
    assert keys is not None and keys.shape == (4, 1, 32)
    table, i, j = ch._locate("c1", "n")
    assert (i, j) == (3, 0) and keys[3, 0].tobytes() == table.key(i, j)
    assert not keys[:3].any()  # only the agreed pair has a key


def test_dense_up_to_the_limit_sparse_beyond(monkeypatch):
    monkeypatch.setattr(channels, "_DENSE_MAX_PAIRS", 6)
    ch = SecureChannels()
    rng = np.random.default_rng(2)
    for k in range(3):
        ch.add_party(f"a{k}", rng.bytes(32), "a")
        ch.add_party(f"c{k}", rng.bytes(32), "c")
    for k in range(2):
        ch.add_party(f"b{k}", rng.bytes(32), "b")
    ch.agree([("a0", "b0"), ("a0", "c0")])
    assert ch.keys_for("a", "b") is not None  # 3 × 2 = 6 pairs: dense
    assert ch.keys_for("a", "c") is None  # 3 × 3 = 9 pairs: sparse
    env = ch.seal("a0", "c0", b"sparse")
    assert _nonce(env) == 0 and ch.open("a0", "c0", env) == b"sparse"


def test_private_keys_beyond_the_cache_are_reloaded():
    names = [f"p{k}" for k in range(channels._PRIVATE_CACHE + 20)]
    ch, _ = _channels(names, role="p")
    ch.agree(("p0", other) for other in names[1:])
    ch.agree((other, "p1") for other in names[2:])
    env = ch.seal(names[-1], "p0", b"x")
    assert ch.open(names[-1], "p0", env) == b"x"


@pytest.mark.parametrize("path", ["vectorised", "per_message"])
def test_batched_sealing_delivers_the_rows_and_advances_the_counters(path, layout):
    clients = [f"client-{k}" for k in range(5)]
    ch, _ = _channels(clients, role="client")
    ch.add_party("node", np.random.default_rng(9).bytes(32), "node")
    if path == "per_message":  # an out-of-order arrival on one pair forces the slow path
        early = ch.seal("client-0", "node", b"0")
        ch.open("client-0", "node", ch.seal("client-0", "node", b"1"))
        ch.open("client-0", "node", early)
    rows = np.random.default_rng(3).integers(0, 2**64, size=(5, 4), dtype=np.uint64)
    expected = rows.copy()
    ch.seal_and_open_rows(clients, "node", b"HDR", rows)
    np.testing.assert_array_equal(rows, expected)
    # Every pair was agreed (with its real key, not the table's zeros) and the receiver's
    # floor moved past the batch's counter.
    assert ch.pairs_agreed == len(clients)
    for c in clients:
        table, i, j = ch._locate(c, "node")
        assert table.has(i, j) and any(table.key(i, j))
        assert table.get_floor(i, j) == (3 if (path == "per_message" and c == "client-0") else 1)
    # Each pair's next nonce is one past the batch's, and the receiver accepts it.
    for c in clients:
        env = ch.seal(c, "node", b"after")
        assert _nonce(env) == (3 if (path == "per_message" and c == "client-0") else 1)
        assert ch.open(c, "node", env) == b"after"
    ch.seal_and_open_rows([], "node", b"HDR", rows[:0])  # nothing to send


def test_batched_sealing_of_mixed_roles_matches_per_message():
    ch, _ = _channels(["a", "b"], role="x")
    ch.add_party("c", np.random.default_rng(5).bytes(32), "y")
    ch.add_party("node", np.random.default_rng(6).bytes(32), "node")
    rows = np.arange(6, dtype=np.uint64).reshape(3, 2)
    ch.seal_and_open_rows(["a", "c", "b"], "node", b"", rows)
    assert rows.tolist() == [[0, 1], [2, 3], [4, 5]]
    for src in ("a", "b", "c"):
        assert _nonce(ch.seal(src, "node", b"")) == 1
