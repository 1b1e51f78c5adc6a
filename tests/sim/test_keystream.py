import numpy as np
import pytest
from scipy import stats

from privsim.sim.keystream import BOX_MULLER_MAX, KeyStream
from privsim.sim.streams import Streams


def test_words_do_not_depend_on_how_they_are_computed():
    ks = Streams(3).keystream("x")
    whole = ks.words([3, 5, 9], 0, 1200)  # long runs: one AES-CTR call per party
    pieces = np.concatenate([ks.words([3, 5, 9], s, 100) for s in range(0, 1200, 100)], axis=1)
    np.testing.assert_array_equal(whole, pieces)  # short runs: AES-ECB over counter blocks
    np.testing.assert_array_equal(ks.words([9], 7, 3)[0], whole[2, 7:10])
    assert ks.word(5, 11) == whole[1, 11]


def test_parties_purposes_and_seeds_are_independent_streams():
    a = Streams(3).keystream("x").words([0, 1], 0, 8)
    assert not np.array_equal(a[0], a[1])
    assert not np.array_equal(a, Streams(3).keystream("y").words([0, 1], 0, 8))
    assert not np.array_equal(a, Streams(4).keystream("x").words([0, 1], 0, 8))
    # adding parties never changes another party's draws
    np.testing.assert_array_equal(a[1], Streams(3).keystream("x").words([7, 1, 2], 0, 8)[1])


@pytest.mark.parametrize("count", [BOX_MULLER_MAX, 4 * BOX_MULLER_MAX])
def test_normals_are_standard_normal_in_both_regimes(count):
    # 200 000 draws; Kolmogorov-Smirnov at the 0.1% level.
    ks = KeyStream.derive(1, (), "n")
    z = ks.normal(np.arange(200_000 // count), count).ravel()
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # mean and variance: sd of the mean is 1/sqrt(n) = 0.0022; 5 sd tolerance
    assert abs(z.mean()) < 0.011 and abs(z.var() - 1.0) < 5 * np.sqrt(2 / z.size)


def test_normals_of_a_party_are_the_same_alone_or_in_a_crowd():
    ks = KeyStream.derive(1, (), "n")
    for count in (5, 300):
        crowd = ks.normal(np.arange(50), count)
        np.testing.assert_array_equal(crowd[17], ks.normal([17], count)[0])


def test_uniforms_are_uniform():
    u = KeyStream.derive(2, (), "u").uniform(np.arange(1000), 0, 100).ravel()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
