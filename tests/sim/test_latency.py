import numpy as np
import pytest

from privsim.sim.latency import ConstantLatency, EmpiricalLatency, LogNormalLatency, UniformLatency


def test_constant_uniform_and_empirical_supports():
    rng = np.random.default_rng(3)
    assert np.all(ConstantLatency(value=0.2).sample(rng, 10) == 0.2)
    u = UniformLatency(low=0.1, high=0.3).sample(rng, 10_000)
    assert u.min() >= 0.1 and u.max() <= 0.3
    e = EmpiricalLatency(samples=(0.01, 0.02, 0.5)).sample(rng, 1000)
    assert set(np.unique(e)) == {0.01, 0.02, 0.5}


def test_lognormal_median_and_mean():
    # n = 200k: the sample median's sd is about 1.25 * sigma * median / sqrt(n) ~ 0.1% of it;
    # 1% tolerance is ten standard deviations.
    model = LogNormalLatency(median=0.05, sigma=0.6)
    x = model.sample(np.random.default_rng(4), 200_000)
    assert np.median(x) == pytest.approx(0.05, rel=0.01)
    assert x.mean() == pytest.approx(model.mean, rel=0.01)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ConstantLatency(value=-0.1),
        lambda: UniformLatency(low=0.2, high=0.1),
        lambda: LogNormalLatency(median=-1.0, sigma=0.5),
        lambda: EmpiricalLatency(samples=()),
        lambda: EmpiricalLatency(samples=(0.1, -0.2)),
    ],
)
def test_invalid_models_are_refused(make):
    with pytest.raises(ValueError):
        make()


def test_inverse_cdfs_used_by_the_bus():
    u = np.array([0.0, 0.25, 0.5, 0.999])
    np.testing.assert_allclose(LogNormalLatency(median=0.05, sigma=0.6).from_uniform(u)[2], 0.05)
    np.testing.assert_allclose(
        UniformLatency(low=1.0, high=3.0).from_uniform(u), [1.0, 1.5, 2.0, 2.998]
    )
    np.testing.assert_array_equal(
        EmpiricalLatency(samples=(0.1, 0.2)).from_uniform(u), [0.1, 0.1, 0.2, 0.2]
    )
    np.testing.assert_array_equal(ConstantLatency(value=0.3).from_uniform(u), [0.3] * 4)
    # the lognormal inverse CDF gives the right distribution: KS test on 100 000 uniforms
    from scipy import stats

    x = LogNormalLatency(median=0.05, sigma=0.6).from_uniform(
        np.random.default_rng(9).random(100_000)
    )
    assert stats.kstest(np.log(x / 0.05) / 0.6, "norm").pvalue > 1e-3


class _ArrayOnly:
    """A user's model with ``from_uniform`` alone (no scalar ``delay``)."""

    mean = 0.1

    def sample(self, rng, size):
        return np.full(size, 0.1)

    def from_uniform(self, u):
        return 0.1 + 2.0 * np.asarray(u)


@pytest.mark.parametrize(
    "model",
    [
        ConstantLatency(value=0.3),
        UniformLatency(low=0.01, high=0.2),
        LogNormalLatency(median=0.05, sigma=0.6, shift=0.001),
        LogNormalLatency(median=0.002, sigma=2.5),
        EmpiricalLatency(samples=(0.01, 0.05, 0.3, 0.07)),
        _ArrayOnly(),
    ],
)
def test_one_messages_delay_has_the_bits_of_the_array_path(model):
    """The bus computes one message's delay on Python floats (``delay``); it must be the
    array path's value to the bit, for uniforms across [0, 1) and at its edges (the
    batched path computes the same messages' delays as arrays)."""
    from privsim.sim.latency import delay

    rng = np.random.default_rng(11)
    u = np.concatenate([[0.0, 2.0**-53, 1e-300, 0.5, 1.0 - 2.0**-53], rng.random(2000)])
    want = np.asarray(model.from_uniform(u), dtype=np.float64)
    got = np.array([delay(model, float(x)) for x in u])
    assert got.tobytes() == want.tobytes()
