"""The associated data binds an envelope to its sender and recipient, whatever the keys.

Keys are per direction and derived with both names, so today an envelope re-addressed to
another party also fails because that party's key differs; the header ``src>dst`` as
associated data is what still rejects it when two directions end up under the same key
(a key-derivation that does not bind the pair, a key reused across recipients, a
compromised or shared key). These tests build exactly that case: a derivation that gives
every pair the same keys, so only the associated data stands between an envelope sealed
for alice→bob and its acceptance as alice→carol (or as carol→bob, or mallory→bob).
"""

from __future__ import annotations

import numpy as np
import pytest

import privsim.sim.channels as channels
from privsim.sim.channels import ChannelError, SecureChannels

PARTIES = ("alice", "bob", "carol")


@pytest.fixture
def same_keys(monkeypatch: pytest.MonkeyPatch) -> SecureChannels:
    """Channels whose key derivation ignores who the pair is: every pair gets the same 64
    bytes, i.e. the same key for the lower-named → higher-named direction of every pair,
    and the same (other) key for the reverse directions."""
    monkeypatch.setattr(channels, "hkdf_sha256", lambda secret, info, length, salt=b"": bytes(64))
    ch = SecureChannels()
    rng = np.random.default_rng(0)
    for party in PARTIES:
        ch.add_party(party, rng.bytes(32), "person")
    return ch


def test_same_key_precondition(same_keys):
    # alice→bob and alice→carol share a key, and so do alice→carol and bob→carol: the
    # associated data is the only thing that tells them apart.
    table_ab, i, j = same_keys._locate("alice", "bob")
    table_ac, k, m = same_keys._locate("alice", "carol")
    table_bc, p, q = same_keys._locate("bob", "carol")
    same_keys.agree([("alice", "bob"), ("alice", "carol"), ("bob", "carol")])
    assert table_ab.key(i, j) == table_ac.key(k, m) == table_bc.key(p, q)


def test_envelope_for_bob_re_addressed_to_carol_is_rejected(same_keys):
    env = same_keys.seal("alice", "bob", b"bob's share")
    with pytest.raises(ChannelError, match="authentication failed"):
        same_keys.open("alice", "carol", env)
    # The rejection left carol's channel as it was, and bob still gets his envelope.
    assert same_keys.open("alice", "carol", same_keys.seal("alice", "carol", b"c")) == b"c"
    assert same_keys.open("alice", "bob", env) == b"bob's share"


def test_envelope_from_alice_claimed_by_another_sender_is_rejected(same_keys):
    # alice→carol and bob→carol share a key: bob cannot pass alice's envelope off as his.
    env = same_keys.seal("alice", "carol", b"alice's share")
    with pytest.raises(ChannelError, match="authentication failed"):
        same_keys.open("bob", "carol", env)
    assert same_keys.open("alice", "carol", env) == b"alice's share"


def test_a_replayed_envelope_is_rejected_under_every_other_header(same_keys):
    """An envelope delivered once to bob, captured and replayed to every other pair that
    shares its key, is rejected everywhere (with the same nonce, only the header differs)."""
    env = same_keys.seal("alice", "bob", b"once")
    assert same_keys.open("alice", "bob", env) == b"once"
    for src, dst in [("alice", "carol"), ("bob", "carol")]:
        with pytest.raises(ChannelError, match="authentication failed"):
            same_keys.open(src, dst, env)
    with pytest.raises(ChannelError, match="replayed"):
        same_keys.open("alice", "bob", env)


def test_the_header_is_the_associated_data():
    """Independently of the channel code: decrypting alice→bob's envelope with the key and
    the header ``alice>bob`` works, with any other header it does not."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    ch = SecureChannels()
    rng = np.random.default_rng(1)
    for party in PARTIES:
        ch.add_party(party, rng.bytes(32), "person")
    env = ch.seal("alice", "bob", b"payload")
    table, i, j = ch._locate("alice", "bob")
    aead = AESGCM(table.key(i, j))
    nonce, body = env[: channels.NONCE_BYTES], env[channels.NONCE_BYTES :]
    assert aead.decrypt(nonce, body, b"alice>bob") == b"payload"
    for header in (b"alice>carol", b"carol>bob", b"alice>", b"alice", b""):
        with pytest.raises(InvalidTag):
            aead.decrypt(nonce, body, header)
