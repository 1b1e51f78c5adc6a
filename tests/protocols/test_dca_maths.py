import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privsim.kit.securesum.maths import (
    FixedPointRangeError,
    client_noise_std,
    decode_fixed,
    encode_fixed,
    reconstruct,
    split_additive,
)

uint64_vectors = hnp.arrays(
    np.uint64,
    hnp.array_shapes(max_dims=1, min_side=1, max_side=64),
    elements=st.integers(0, 2**64 - 1),
)


@settings(max_examples=200)
@given(x=uint64_vectors, m=st.integers(1, 20), seed=st.integers(0, 2**32))
def test_shares_reconstruct_exactly_for_any_m_and_vector(x, m, seed):
    shares = split_additive(x, m, np.random.default_rng(seed))
    assert shares.shape == (m, *x.shape) and shares.dtype == np.uint64
    np.testing.assert_array_equal(reconstruct(shares), x)


@given(values=st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=30), m=st.integers(2, 10))
def test_sum_of_shares_of_many_clients_is_the_sum_of_inputs(values, m):
    rng = np.random.default_rng(0)
    encoded = [np.array([v], dtype=np.int64).view(np.uint64) for v in values]
    per_node = sum(split_additive(e, m, rng) for e in encoded)  # each node sums its shares
    assert int(reconstruct(per_node).view(np.int64)[0]) == sum(values)


def test_m_minus_one_shares_look_uniform():
    # The first share of a zero vector is r_1: uniform on Z_2^64, so its top bit is a fair coin.
    # 20 000 bits: sd of the count is 71; 4.5 sd tolerance.
    shares = split_additive(np.zeros(20_000, dtype=np.uint64), 3, np.random.default_rng(1))
    top = (shares[0] >> np.uint64(63)).sum()
    assert abs(int(top) - 10_000) < 320


@given(
    x=hnp.arrays(np.float64, st.integers(1, 50), elements=st.floats(-1e6, 1e6)),
    f=st.integers(8, 40),
)
def test_fixed_point_round_trip(x, f):
    back = decode_fixed(encode_fixed(x, f), f)
    assert np.all(np.abs(back - x) <= 2.0 ** (-f - 1) + 1e-9 * np.abs(x))


def test_fixed_point_overflow_names_the_bound():
    with pytest.raises(FixedPointRangeError, match=r"2\^31"):
        encode_fixed(np.array([0.0, 2.0**31]), 32)
    with pytest.raises(FixedPointRangeError, match="NaN"):
        encode_fixed(np.array([np.nan]), 32)
    encode_fixed(np.array([2.0**31 - 1]), 32)  # just inside


def test_negative_sums_decode_through_twos_complement():
    enc = [encode_fixed(np.array([v]), 16) for v in (-3.5, 1.25, -0.75)]
    total = np.sum(enc, axis=0, dtype=np.uint64)
    assert decode_fixed(total, 16)[0] == pytest.approx(-3.0)


def test_theorem_1_noise_scaling():
    assert client_noise_std(6.0, 10, 0) == pytest.approx(6.0 / 3.0)
    assert client_noise_std(6.0, 40, 3) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        client_noise_std(1.0, 5, 4)
