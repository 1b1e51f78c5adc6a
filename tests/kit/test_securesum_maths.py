"""Edges of DCA's pure maths that the protocol tests do not reach: the fixed-point range,
input types, the batched share completion, Theorem 1's noise scaling and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.kit.securesum.maths import (
    FixedPointRangeError,
    client_noise_std,
    complete_shares,
    decode_fixed,
    encode_fixed,
    fixed_point_bound,
    reconstruct,
    split_additive,
)


def test_fixed_point_bound_accepts_0_to_62_fraction_bits_only():
    assert fixed_point_bound(0) == 2.0**63
    assert fixed_point_bound(62) == 2.0
    for bad in (-1, 63):
        with pytest.raises(
            ValueError, match=r"fraction_bits must be in \[0, 62\], got " + str(bad)
        ):
            fixed_point_bound(bad)


def test_encoding_is_done_in_double_precision_whatever_the_input_type():
    # A float32 input must not be scaled in float32 (which keeps only 24 bits).
    values = np.array([0.1, -0.3, 1.7], dtype=np.float32)
    np.testing.assert_array_equal(
        encode_fixed(values, 32), encode_fixed(values.astype(np.float64), 32)
    )
    assert decode_fixed(encode_fixed([1, -2], 32), 32).tolist() == [1.0, -2.0]
    # float16 overflows at 65504: 1.0 · 2^32 must not be computed in it.
    half = np.array([1.0, -0.5], dtype=np.float16)
    assert decode_fixed(encode_fixed(half, 32), 32).tolist() == [1.0, -0.5]


def test_empty_input_and_messages():
    assert encode_fixed(np.zeros(0), 32).size == 0
    with pytest.raises(
        FixedPointRangeError, match=r"^fixed-point encoding got a NaN or infinite value$"
    ):
        encode_fixed([np.nan], 8)
    with pytest.raises(FixedPointRangeError, match=r"lower fraction_bits or scale the data down$"):
        encode_fixed([2.0**40], 32)


def test_decoding_accepts_any_unsigned_integer_array():
    # Words of a narrower unsigned type are values in Z_2^64 too (not reinterpreted bytes).
    words = np.array([3 << 20, 5 << 20], dtype=np.uint32)
    np.testing.assert_array_equal(decode_fixed(words, 20), [3.0, 5.0])


def test_split_additive_accepts_a_list_and_names_a_bad_share_count():
    rng = np.random.default_rng(0)
    shares = split_additive([1, 2, 2**63 + 5], 4, rng)
    assert shares.dtype == np.uint64
    assert reconstruct(shares).tolist() == [1, 2, 2**63 + 5]
    with pytest.raises(ValueError, match=r"^n_shares must be >= 1, got 0$"):
        split_additive(np.zeros(2, np.uint64), 0, rng)


@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_complete_shares_makes_algorithm_1_messages_in_place(m):
    rng = np.random.default_rng(m)
    n, d = 6, 4
    x = rng.integers(0, 2**64, size=(n, d), dtype=np.uint64)
    shares = rng.integers(0, 2**64, size=(n, m, d), dtype=np.uint64)
    r = shares[:, : m - 1].copy()  # r_1 … r_{M-1}
    complete_shares(x, shares)
    # Σ_k shares[:, k] = x for every client ...
    np.testing.assert_array_equal(shares.sum(axis=1, dtype=np.uint64), x)
    if m == 1:
        np.testing.assert_array_equal(shares[:, 0], x)
        return
    # ... with m_1 = x + r_1, m_k = r_k (1 < k < M) and m_M = −Σ r_k.
    np.testing.assert_array_equal(shares[:, 0], x + r[:, 0])
    np.testing.assert_array_equal(shares[:, 1 : m - 1], r[:, 1:])
    np.testing.assert_array_equal(shares[:, m - 1], np.uint64(0) - r.sum(axis=1, dtype=np.uint64))


def test_client_noise_std_is_theorem_1_and_needs_n_minus_t_minus_1_positive():
    assert client_noise_std(3.0, 10, 5) == pytest.approx(3.0 / math.sqrt(4))
    assert client_noise_std(3.0, 2, 0) == pytest.approx(3.0)  # N − T − 1 = 1 is allowed
    with pytest.raises(ValueError, match=r"^need N - T - 1 > 0, got N = 5, T = 4$"):
        client_noise_std(1.0, 5, 4)
