import numpy as np
import pytest

from privsim.sim.channels import OVERHEAD_BYTES, ChannelError, SecureChannels


def _channels() -> SecureChannels:
    ch = SecureChannels()
    rng = np.random.default_rng(0)
    for party in ("alice", "bob", "carol"):
        ch.add_party_from_rng(party, rng)
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
