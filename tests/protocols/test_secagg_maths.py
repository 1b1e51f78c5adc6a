"""The pure parts of SecAgg / SecAgg+: the Harary graph and the (k, t) choice, the
crypto primitives, vectorised Shamir sharing, and the modular encoding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from scipy import stats

from privsim.kit import shamir
from privsim.kit.secagg.crypto import KeyPair, agree, expand, open_share, seal_share
from privsim.kit.secagg.graph import choose_parameters, harary, threshold_for
from privsim.kit.secagg.maths import decode_sum, encode_inputs, pack_records, unpack_records
from privsim.kit.secagg.sharing import (
    ShareBook,
    bytes_to_words,
    interpolate_at_zero,
    words_to_bytes,
)
from privsim.sim.keystream import KeyStream


@pytest.mark.parametrize(("n", "k"), [(10, 4), (101, 10), (1000, 34)])
def test_the_harary_graph_is_k_regular_and_symmetric(n, k):
    g = harary(n, k, np.random.default_rng(1))
    assert g.matrix.shape == (n, k) and not g.complete
    for c in range(n):
        row = g.neighbours(c)
        assert len(set(row.tolist())) == k and c not in row
    pairs = {(int(c), int(v)) for c in range(n) for v in g.neighbours(c)}
    assert all((v, c) in pairs for c, v in pairs)


def test_a_degree_of_n_minus_1_is_the_complete_graph():
    g = harary(7, 6, np.random.default_rng(0))
    assert g.complete and g.degree == 6
    assert g.neighbours(3).tolist() == [0, 1, 2, 4, 5, 6]
    assert g.holders(3).tolist() == list(range(7))


def test_the_threshold_is_the_smallest_meeting_the_security_bound():
    n, k, gamma, sigma = 10_000, 40, 0.05, 40
    t = threshold_for(n, k, gamma, sigma)
    assert t is not None
    tail = lambda t: n * stats.binom.sf(t - 1, k, gamma)  # noqa: E731
    assert tail(t) <= 2.0**-sigma < tail(t - 1)


@pytest.mark.parametrize("n", [1_000, 10_000, 100_000])
def test_secagg_plus_parameters_meet_every_bound_with_a_logarithmic_degree(n):
    gamma, delta, sigma, eta = 0.05, 0.05, 40, 20
    p = choose_parameters(
        n, dropout=delta, corruption=gamma, security_bits=sigma, correctness_bits=eta
    )
    assert p is not None and not p.complete and p.degree % 2 == 0
    assert p.log2_security <= -sigma and p.log2_disconnect <= -sigma
    assert p.log2_correctness <= -eta
    # k = O(log n): the connectivity bound alone needs k/2 ≥ (σ + log2 n)/log2(1/(γ+δ))
    floor = 2 * math.ceil((sigma + math.log2(n)) / -math.log2(gamma + delta))
    assert floor <= p.degree <= 3 * floor
    # no smaller even degree admits a threshold meeting all three bounds
    smaller = choose_parameters(
        n,
        dropout=delta,
        corruption=gamma,
        security_bits=sigma,
        correctness_bits=eta,
        degree=p.degree - 2,
    )
    assert smaller is not None
    assert not (
        smaller.log2_security <= -sigma
        and smaller.log2_correctness <= -eta
        and smaller.log2_disconnect <= -sigma
    )


def test_degree_grows_with_the_population_and_the_corruption():
    def k(n: int, gamma: float) -> int:
        p = choose_parameters(
            n, dropout=0.05, corruption=gamma, security_bits=40, correctness_bits=20
        )
        assert p is not None
        return p.degree

    assert k(1_000, 0.05) <= k(100_000, 0.05)
    assert k(10_000, 0.05) < k(10_000, 0.2)


def test_both_ends_agree_the_same_key_and_shares_round_trip():
    a, b = KeyPair.from_secret(bytes(range(32))), KeyPair.from_secret(bytes(range(1, 33)))
    assert agree(a.secret, b.public, b"s") == agree(b.secret, a.public, b"s")
    assert agree(a.secret, b.public, b"s") != agree(a.secret, b.public, b"c")
    cipher = AESGCM(agree(a.secret, b.public, b"c"))
    record = pack_records(3, np.array([9]), np.arange(8, dtype=np.uint64)[None])[0].tobytes()
    sealed = seal_share(cipher, 3, 9, record)
    assert len(sealed) == len(record) + 16 == 96
    other_end = AESGCM(agree(b.secret, a.public, b"c"))
    ids, words = unpack_records(open_share(other_end, 3, 9, sealed))
    assert ids.tolist() == [[3, 9]] and words.tolist() == [list(range(8))]
    with pytest.raises(InvalidTag):
        open_share(AESGCM(agree(a.secret, b.public, b"s")), 3, 9, sealed)


def test_the_prg_is_the_aes_ctr_keystream():
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    seed = bytes(range(16))
    ctr = Cipher(algorithms.AES(seed), modes.CTR(bytes(12) + (2).to_bytes(4, "big")))
    stream = ctr.encryptor().update(bytes(8 * 50))
    assert np.array_equal(expand(seed, 50, 64), np.frombuffer(stream, dtype="<u8"))


@pytest.mark.parametrize("bits", [16, 32, 48, 64])
def test_the_prg_is_deterministic_and_in_range(bits):
    seed = bytes(range(16))
    x = expand(seed, 1000, bits)
    assert np.array_equal(x, expand(seed, 1000, bits)) and x.dtype == np.uint64
    assert not np.array_equal(x, expand(bytes(16), 1000, bits))
    if bits < 64:
        assert int(x.max()) < 2**bits
    # uniform mod 2^bits: the mean of 1000 words is 2^bits/2 ± 4 standard errors
    # (sd of a uniform word 2^bits/√12; standard error that /√1000)
    assert abs(float(x.mean()) / 2**bits - 0.5) < 4 / math.sqrt(12 * 1000)


def test_encoding_wraps_and_decodes_signed_sums():
    z = np.array([[-1.5, 0.25], [0.5, -0.75]])
    total = sum(encode_inputs(row, 8, 20, np.zeros(2, np.int64)) for row in z)
    assert np.array_equal(decode_sum(total, 8, 20), z.sum(axis=0))


def test_bytes_and_words_round_trip_like_the_kits_encoding():
    raw = np.random.default_rng(2).integers(0, 256, size=(5, 32), dtype=np.uint8)
    words = bytes_to_words(raw)
    assert np.array_equal(words[0], shamir.encode_bytes(raw[0].tobytes()))
    assert np.array_equal(words_to_bytes(words, 32), raw)


def test_vectorised_sharing_reconstructs_from_any_t_and_not_from_t_minus_1():
    n, t = 9, 4
    rng = np.random.default_rng(3)
    secrets = rng.integers(0, shamir.PRIME, size=(n, 8), dtype=np.uint64)
    holders = np.broadcast_to(np.arange(n, dtype=np.int64), (n, n))
    book = ShareBook(secrets, holders, t, KeyStream(bytes(16), "test"))
    for client in range(n):
        who, shares = book.shares(client)
        pick = rng.choice(n, size=t, replace=False)
        got = interpolate_at_zero((who[pick] + 1)[None, :], shares[pick][None])
        assert np.array_equal(got[0], secrets[client])
        kit = shamir.reconstruct({int(who[j]) + 1: shares[j] for j in pick})
        assert np.array_equal(kit, secrets[client])  # agrees with the kit's interpolation
        fewer = interpolate_at_zero((who[pick[:-1]] + 1)[None, :], shares[pick[:-1]][None])
        assert not np.array_equal(fewer[0], secrets[client])


@pytest.mark.parametrize("bits", [20, 32, 62, 64])
def test_an_input_past_int64_is_reduced_exactly(bits: int) -> None:
    """A malicious client's unclipped update can be far past 2^63 once scaled by 2^f:
    its residue is the integer the float holds mod 2^b (Python's exact integers are the
    reference), never a saturated cast. Values near the 2^62 switch, signs, and
    magnitudes up to 10^30 (whose float integers are multiples of 2^47)."""
    rng = np.random.default_rng(3)
    z = np.concatenate(
        [
            rng.normal(size=20) * 10.0 ** rng.integers(0, 30, size=20),
            [2.0**22, -(2.0**22), 2.0**22 - 2.0**-18, 1e-3, -0.5],
        ]
    )
    noise = rng.integers(-(2**40), 2**40, size=z.size)
    got = encode_inputs(z, 40, bits, noise)
    want = [
        (round(v * 2**40) + int(n)) % 2**bits
        for v, n in zip(z.tolist(), noise.tolist(), strict=True)
    ]
    assert got.tolist() == want
