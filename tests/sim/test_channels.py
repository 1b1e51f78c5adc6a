import numpy as np
import pytest

from privsim.sim.channels import OVERHEAD_BYTES, ChannelError, SecureChannels


def _channels() -> SecureChannels:
    ch = SecureChannels()
    rng = np.random.default_rng(0)
    for party in ("alice", "bob", "carol"):
        ch.add_party(party, rng.bytes(32), "person")
    return ch


def test_round_trip_and_real_ciphertext_length():
    ch = _channels()
    env = ch.seal("alice", "bob", b"secret share")
    assert len(env) == len(b"secret share") + OVERHEAD_BYTES
    assert b"secret share" not in env
    assert ch.open("alice", "bob", env) == b"secret share"


def test_each_direction_has_its_own_key():
    ch = _channels()
    a_to_b = ch.seal("alice", "bob", b"x" * 16)
    b_to_a = ch.seal("bob", "alice", b"x" * 16)
    assert a_to_b != b_to_a  # same counter 0, same plaintext: differs only through the key


@pytest.mark.parametrize("position", [0, 12, 20, -1])
def test_tampered_ciphertext_is_rejected(position):
    ch = _channels()
    env = bytearray(ch.seal("alice", "bob", b"payload bytes"))
    env[position] ^= 0x01
    with pytest.raises(ChannelError):
        ch.open("alice", "bob", bytes(env))


def test_replay_and_redirection_are_rejected():
    ch = _channels()
    env = ch.seal("alice", "bob", b"once")
    assert ch.open("alice", "bob", env) == b"once"
    with pytest.raises(ChannelError, match="replayed"):
        ch.open("alice", "bob", env)
    other = ch.seal("alice", "bob", b"twice")
    with pytest.raises(ChannelError):  # alice->bob ciphertext presented as alice->carol
        ch.open("alice", "carol", other)


def test_out_of_order_delivery_is_accepted_once():
    ch = _channels()
    first, second, third = (ch.seal("alice", "bob", m) for m in (b"1", b"2", b"3"))
    assert ch.open("alice", "bob", third) == b"3"
    assert ch.open("alice", "bob", first) == b"1"
    assert ch.open("alice", "bob", second) == b"2"
    for env in (first, second, third):
        with pytest.raises(ChannelError, match="replayed"):
            ch.open("alice", "bob", env)


def test_hkdf_matches_rfc_5869_test_case_1():
    from privsim.sim.channels import hkdf_sha256

    ikm = bytes.fromhex("0b" * 22)
    salt = bytes.fromhex("000102030405060708090a0b0c")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    okm = hkdf_sha256(ikm, info, 42, salt)
    assert okm.hex() == (
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


def test_bulk_agreement_gives_the_same_keys_as_lazy_agreement():
    lazy, bulk = _channels(), _channels()
    bulk.agree([("alice", "bob"), ("carol", "alice")])
    assert bulk.pairs_agreed == 2
    env = bulk.seal("bob", "alice", b"x")
    assert lazy.open("bob", "alice", env) == b"x"


def test_key_agreement_on_worker_processes_gives_the_same_keys(monkeypatch):
    """X25519 is symmetric, so computing a pair's secret from either end on a worker
    gives the keys of the one-process path, both directions, pair for pair."""
    from privsim.sim import channels as channels_module
    from privsim.sim import workers

    def build() -> SecureChannels:
        ch = SecureChannels()
        for i in range(300):
            ch.add_party(f"client-{i}", i.to_bytes(2, "big") + bytes(30), "client", i)
        for j in range(3):
            ch.add_party(f"node-{j}", bytes([200 + j]) * 32, "compute", j)
        return ch

    # Both orientations appear: clients first, and nodes first.
    pairs = [(f"client-{i}", f"node-{j}") for i in range(200) for j in range(3)]
    pairs += [(f"node-{j}", f"client-{i}") for i in range(200, 300) for j in range(3)]
    monkeypatch.setenv(workers.ENV, "1")
    alone = build()
    alone.agree(pairs)
    monkeypatch.setenv(workers.ENV, "2")
    monkeypatch.setattr(channels_module, "PARALLEL_PAIRS", 0)
    pooled = build()
    pooled.agree(pairs)
    assert pooled.pairs_agreed == alone.pairs_agreed == 900
    for roles in (("client", "compute"), ("compute", "client")):
        assert pooled._tables[roles].agreed.all()
        np.testing.assert_array_equal(pooled._tables[roles].keys, alone._tables[roles].keys)
