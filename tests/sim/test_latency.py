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
