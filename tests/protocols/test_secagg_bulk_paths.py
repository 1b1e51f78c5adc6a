"""The batched paths of SecAgg's cryptography and sharing give the values of the
one-at-a-time primitives: sealing and keystreams in a batch, sums of masks whose seeds
repeat (a pair's seed in both its clients' rows) in blocks of any size, shares by a
Horner pass reduced once at the end, and small reconstructions on Python integers."""

from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.kit import shamir
from privsim.kit.secagg import bulk, sharing
from privsim.kit.secagg.crypto import (
    KeyPair,
    agree,
    expand,
    keystream,
    keystreams,
    seal_batch,
    seal_share,
)
from privsim.kit.secagg.maths import RECORD_BYTES

P = shamir.PRIME


def _seals_as_seal_share(senders: list[int], receivers: list[int], keys: np.ndarray) -> None:
    """The batch's ciphertexts are :func:`seal_share`'s, one record at a time."""
    plain = np.random.default_rng(len(senders)).integers(
        0, 256, (len(senders), RECORD_BYTES), dtype=np.uint8
    )
    want = b"".join(
        seal_share(AESGCM(k.tobytes()), u, v, p.tobytes())
        for u, v, k, p in zip(senders, receivers, keys, plain, strict=True)
    )
    assert seal_batch(senders, receivers, keys.tobytes(), plain.tobytes(), RECORD_BYTES) == want


def test_a_batch_seals_each_record_as_seal_share_does():
    keys = np.random.default_rng(1).integers(0, 256, (4, 16), dtype=np.uint8)
    _seals_as_seal_share([3, 9, 9, 0], [7, 2, 9, 1], keys)


def test_a_pairs_two_shares_sealed_under_its_one_key_are_seal_shares():
    """u's share for v and v's for u use the pair's one key (the batch sets it up once):
    each is still the ciphertext of its own nonce and ids."""
    key, other = np.random.default_rng(2).integers(0, 256, (2, 16), dtype=np.uint8)
    _seals_as_seal_share([4, 1, 4, 2], [1, 4, 2, 4], np.stack([key, key, other, other]))


def test_the_books_x25519_is_cryptographys_from_both_ends():
    """The book's key pairs and agreements (libsodium) are those of the one-at-a-time
    primitives (OpenSSL through ``cryptography``), and a pair's value is the same from
    either end (the Diffie–Hellman symmetry the book computes each pair once by)."""
    rng = np.random.default_rng(3)
    secrets = rng.integers(0, 256, (6, 32), dtype=np.uint8)
    publics = bulk.public_keys(secrets)
    for row, public in zip(secrets, publics, strict=True):
        assert KeyPair.from_secret(row.tobytes()).public == public.tobytes()
    lo, hi = np.array([0, 0, 2, 5]), np.array([1, 3, 4, 1])
    forward = bulk.agreements(b"s", secrets[lo], publics[hi])
    backward = bulk.agreements(b"s", secrets[hi], publics[lo])
    assert forward.tobytes() == backward.tobytes()
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        assert forward[i].tobytes() == agree(secrets[a].tobytes(), publics[b].tobytes(), b"s")
    assert bulk.agreements(b"c", secrets[lo], publics[hi]).tobytes() != forward.tobytes()


@pytest.mark.parametrize("width", [0, 5, 31, 33])
def test_key_rows_of_another_length_never_reach_libsodium(width):
    """libsodium reads 32 bytes from a key's buffer whatever its length: a row of any
    other length is refused before it is read."""
    short = np.zeros((2, width), dtype=np.uint8)
    good = np.ones((2, 32), dtype=np.uint8)
    with pytest.raises(ValueError, match="rows of 32 bytes"):
        bulk.public_keys(short)
    with pytest.raises(ValueError, match="rows of 32 bytes"):
        bulk.agreements(b"s", short, good)
    with pytest.raises(ValueError, match="rows of 32 bytes"):
        bulk.agreements(b"s", good, short)


def test_keystreams_are_each_seeds_keystream_end_to_end():
    seeds = [bytes([i]) * 16 for i in range(5)]
    assert keystreams(b"".join(seeds), 40) == b"".join(keystream(s, 40) for s in seeds)


@pytest.mark.parametrize("bits", [16, 32, 33, 64])
@pytest.mark.parametrize("block", [1, 200, 1 << 22])
def test_mask_sums_with_repeated_seeds_and_pairs_left_out(bits, block, monkeypatch):
    """Each row is PRG(b_u) + Σ_j signs[u, j] PRG(seed_{u,j}) mod 2^b, whatever the
    block size, with seeds repeated across and within rows and some signs 0."""
    monkeypatch.setattr(bulk, "MASK_BLOCK_BYTES", block)
    rng = np.random.default_rng(bits)
    m, k, d = 5, 6, 9
    pool = rng.integers(0, 256, (4, 16), dtype=np.uint8)
    pairs = pool[rng.integers(0, 4, (m, k))]
    selfs = rng.integers(0, 256, (m, 16), dtype=np.uint8)
    signs = rng.integers(-1, 2, (m, k)).astype(np.int8)
    signs[2] = 0  # a row of self mask alone
    mod = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(2**64 - 1)
    got = bulk.mask_sums(selfs, pairs, signs, d, bits).astype(np.uint64) & mod
    for u in range(m):
        want = expand(selfs[u].tobytes(), d, bits).copy()
        for j in range(k):
            if signs[u, j] > 0:
                want += expand(pairs[u, j].tobytes(), d, bits)
            elif signs[u, j] < 0:
                want -= expand(pairs[u, j].tobytes(), d, bits)
        assert np.array_equal(got[u], want & mod)
    empty = bulk.mask_sums(None, pairs, np.zeros((m, k), np.int8), d, bits)
    assert not empty.any() and empty.shape == (m, d)


@pytest.mark.parametrize("top", [5, 1 << 20, (1 << 31) - 1])
def test_shares_are_the_exact_residues_up_to_the_largest_abscissas(top):
    """Horner's rule with one final reduction is f(x) mod p, at the bounds it allows:
    abscissas just below 2^31 and every residue p − 1."""
    rng = np.random.default_rng(top)
    n, h, w, t = 4, 5, 3, 7
    x = rng.integers(1, top + 1, (n, h, 1)).astype(np.uint64)
    x[0] = top
    coeffs = rng.integers(0, P, (n, t - 1, w), dtype=np.uint64)
    secrets = rng.integers(0, P, (n, w), dtype=np.uint64)
    coeffs[1], secrets[1] = P - 1, P - 1
    want = np.zeros((n, h, w), dtype=object)
    for k in range(t - 2, -1, -1):
        want = (want * x.astype(object) + coeffs[:, None, k, :].astype(object)) % P
    want = (want * x.astype(object) + secrets[:, None, :].astype(object)) % P
    got = sharing._horner_small(x, coeffs, secrets)
    assert got.dtype == np.uint64 and np.array_equal(got, want.astype(np.uint64))


def test_small_reconstructions_are_the_array_paths_residues():
    rng = np.random.default_rng(3)
    m, t, w = 6, 5, 4
    xs = np.stack([rng.choice(np.arange(1, 60), t, replace=False) for _ in range(m)])
    xs[3] = xs[1]  # the same holders twice
    ys = rng.integers(0, P, (m, t, w), dtype=np.uint64)
    small = sharing._interpolate_small(xs, ys)
    lam = sharing.lagrange_at_zero(xs)
    terms = shamir.mul(lam[:, :, None], ys)
    want = np.zeros((m, w), dtype=np.uint64)
    for col in range(t):
        want = shamir.add(want, terms[:, col])
    assert small is not None and np.array_equal(small, want)
    xs[0, 1] = xs[0, 0]  # a repeated abscissa: left to the array path
    assert sharing._interpolate_small(xs, ys) is None
