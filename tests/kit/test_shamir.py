"""Shamir t-of-n sharing over F_p, p = 2^61 − 1: field arithmetic against Python integers,
reconstruction from every t-subset, a wrong value from t − 1, determinism and errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsim.kit.shamir import (
    PRIME,
    ShamirError,
    add,
    decode_bytes,
    decode_signed,
    encode_bytes,
    encode_signed,
    lagrange_at_zero,
    mul,
    reconstruct,
    split,
    sub,
)

residues = st.integers(min_value=0, max_value=PRIME - 1)


@given(st.lists(st.tuples(residues, residues), min_size=1, max_size=20))
def test_field_arithmetic_matches_python_integers(pairs):
    a = np.array([x for x, _ in pairs], dtype=np.uint64)
    b = np.array([y for _, y in pairs], dtype=np.uint64)
    assert mul(a, b).tolist() == [x * y % PRIME for x, y in pairs]
    assert add(a, b).tolist() == [(x + y) % PRIME for x, y in pairs]
    assert sub(a, b).tolist() == [(x - y) % PRIME for x, y in pairs]


def test_field_arithmetic_at_the_extremes():
    top = np.uint64(PRIME - 1)
    assert int(mul(top, top)) == 1  # (−1)² = 1
    assert int(add(top, np.uint64(1))) == 0
    assert int(sub(np.uint64(0), np.uint64(1))) == PRIME - 1


@pytest.mark.parametrize(("t", "n"), [(1, 1), (1, 3), (2, 3), (3, 3), (3, 5), (4, 7)])
def test_every_t_subset_reconstructs_and_every_t_minus_1_subset_does_not(t, n):
    rng = np.random.default_rng(7)
    secret = rng.integers(0, PRIME, size=6, dtype=np.uint64)
    shares = split(secret, t, n, rng)
    assert shares.shape == (n, 6)
    for subset in itertools.combinations(range(n), t):
        got = reconstruct({j + 1: shares[j] for j in subset})
        np.testing.assert_array_equal(got, secret)
    if t > 1:
        for subset in itertools.combinations(range(n), t - 1):
            got = reconstruct({j + 1: shares[j] for j in subset})
            # Interpolating t − 1 points gives the wrong polynomial; a coordinate could
            # match by chance with probability 1/p per coordinate (about 4e-19).
            assert not np.any(got == secret)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=25),
    data=st.data(),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_any_t_shares_reconstruct_at_arbitrary_abscissas(n, data, seed):
    t = data.draw(st.integers(min_value=1, max_value=n))
    xs = data.draw(st.lists(st.integers(1, PRIME - 1), min_size=n, max_size=n, unique=True))
    secret = data.draw(st.lists(residues, min_size=1, max_size=8))
    shares = split(np.array(secret, dtype=np.uint64), t, xs, np.random.default_rng(seed))
    chosen = data.draw(st.lists(st.sampled_from(range(n)), min_size=t, max_size=t, unique=True))
    got = reconstruct({xs[j]: shares[j] for j in chosen})
    assert got.tolist() == secret
    # More than t shares are consistent too.
    assert reconstruct({x: s for x, s in zip(xs, shares, strict=True)}).tolist() == secret


def test_threshold_argument_refuses_too_few_shares_and_uses_exactly_t():
    rng = np.random.default_rng(3)
    secret = np.arange(4, dtype=np.uint64)
    shares = split(secret, 3, 5, rng)
    with pytest.raises(ShamirError, match="2 shares cannot reconstruct a 3-of-n secret"):
        reconstruct({1: shares[0], 4: shares[3]}, threshold=3)
    # A corrupted share beyond the first t (in abscissa order) is ignored.
    tampered = {j + 1: shares[j] for j in range(5)}
    tampered[5] = shares[4] + np.uint64(1)
    np.testing.assert_array_equal(reconstruct(tampered, threshold=3), secret)


def test_sharing_is_a_pure_function_of_the_generator_state():
    secret = np.array([5, 6, 7], dtype=np.uint64)
    a = split(secret, 3, 4, np.random.default_rng(11))
    b = split(secret, 3, 4, np.random.default_rng(11))
    c = split(secret, 3, 4, np.random.default_rng(12))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_shares_are_linear_so_summed_shares_reconstruct_the_sum():
    rng = np.random.default_rng(5)
    x = rng.integers(0, PRIME, size=(10, 3), dtype=np.uint64)
    total_shares = np.zeros((4, 3), dtype=np.uint64)
    for row in x:
        total_shares = add(total_shares, split(row, 3, 4, rng))
    expected = [sum(int(v) for v in x[:, k]) % PRIME for k in range(3)]
    assert reconstruct({j + 1: total_shares[j] for j in (0, 2, 3)}).tolist() == expected


def test_lagrange_coefficients_sum_to_one():
    # Interpolating the constant polynomial 1 gives Σ λ_j = 1.
    lam = lagrange_at_zero([2, 5, 9, 100])
    assert sum(int(v) for v in lam) % PRIME == 1


def test_signed_and_byte_encodings_round_trip():
    v = np.array([-3, 0, 7, -(PRIME // 2), PRIME // 2], dtype=np.int64)
    np.testing.assert_array_equal(decode_signed(encode_signed(v)), v)
    with pytest.raises(ShamirError, match=r"\|v\| <= \(p − 1\)/2"):
        encode_signed([PRIME // 2 + 1])
    seed = bytes(range(32))
    elements = encode_bytes(seed)
    assert len(elements) == 5 and all(int(e) < PRIME for e in elements)
    shares = split(elements, 2, 3, np.random.default_rng(1))
    assert decode_bytes(reconstruct({2: shares[1], 3: shares[2]}), 32) == seed


@pytest.mark.parametrize(
    ("holders", "t", "message"),
    [
        (3, 4, r"threshold must be in \[1, 3\]"),
        (3, 0, r"threshold must be in \[1, 3\]"),
        ([1, 1, 2], 2, "distinct"),
        ([0, 1, 2], 2, r"in \[1, p − 1\]"),
    ],
)
def test_bad_parameters_are_refused(holders, t, message):
    with pytest.raises(ShamirError, match=message):
        split(np.zeros(2, dtype=np.uint64), t, holders, np.random.default_rng(0))


def test_secret_outside_the_field_is_refused():
    with pytest.raises(ShamirError, match="residues"):
        split(np.array([PRIME], dtype=np.uint64), 2, 3, np.random.default_rng(0))
