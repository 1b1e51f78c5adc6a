"""RACE sketches: unbiased rows, merging, the private release's noise, Theorem 3.4."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privsim.protocols.race.lsh import L2Hash, SRPHash
from privsim.protocols.race.private import laplace_scale, release
from privsim.protocols.race.sketch import RaceSketch


def _data(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 2.0, size=(n, 3))


@pytest.mark.parametrize("family", ["l2", "srp"])
def test_each_row_is_an_unbiased_estimate_of_the_kernel_sum(family):
    # Theorem 2.5: E[S[r, l_r(q)]] = f(q) = Σ k(x, q), Var ≤ (Σ sqrt k(x, q))². Over
    # independent hash draws (rows of one big sketch are independent functions), the mean
    # of R rows has standard error ≤ sqrt(Var)/sqrt(R); we allow 4 of them (and the row
    # variance measured from the same rows gives a tighter, honest check).
    x = _data(300)
    q = np.array([[0.5, -1.0, 0.2], [3.0, 3.0, 3.0]])
    rows = 4000
    rng = np.random.default_rng(1)
    fam = L2Hash.draw(rows, 3, 2.5, rng) if family == "l2" else SRPHash.draw(rows, 3, 2, rng)
    sketch = RaceSketch(fam, 64 if family == "l2" else 4).add(x)
    est = sketch.row_estimates(q)  # (2, R)
    truth = fam.kernel(x, q).sum(axis=0)
    bound = np.sqrt(fam.kernel(x, q)).sum(axis=0)
    se = est.std(axis=1, ddof=1) / math.sqrt(rows)
    assert np.all(se <= bound / math.sqrt(rows) + 1e-12)
    np.testing.assert_array_less(np.abs(est.mean(axis=1) - truth), 4 * se + 1e-9)


def test_hashing_in_single_precision_matches_the_exact_integer_hash():
    # The float32 bucket path may move a floor boundary only for points within ~1e-6 of
    # one: on 20,000 × 50 hashes at most a handful differ from ⌊(w·x + b)/r⌋ mod W.
    fam = L2Hash.draw(50, 3, 5.0, np.random.default_rng(2))
    x = _data(20_000, 3) * 40
    exact = np.mod(fam.hash(x), 97)
    fast = fam.buckets(x, 97)
    assert fast.min() >= 0 and fast.max() < 97
    assert (exact != fast).sum() <= 20


def test_merged_sketches_equal_the_sketch_of_the_union_and_chunking_is_invisible():
    import privsim.protocols.race.sketch as sk

    fam = L2Hash.draw(40, 3, 1.0, np.random.default_rng(3))
    a, b = _data(1000, 4), _data(700, 5)
    union = RaceSketch(fam, 31).add(np.vstack([a, b]))
    merged = RaceSketch(fam, 31).add(a).merge(RaceSketch(fam, 31).add(b))
    np.testing.assert_array_equal(merged.counts, union.counts)
    streamed = RaceSketch(fam, 31)
    for lo in range(0, 1700, 123):
        streamed.add(np.vstack([a, b])[lo : lo + 123])
    np.testing.assert_array_equal(streamed.counts, union.counts)
    old = sk.CHUNK_MAX, sk.CHUNK_MIN
    sk.CHUNK_MAX = sk.CHUNK_MIN = 64  # force many tiny chunks
    try:
        np.testing.assert_array_equal(
            RaceSketch(fam, 31).add(np.vstack([a, b])).counts, union.counts
        )
    finally:
        sk.CHUNK_MAX, sk.CHUNK_MIN = old
    assert union.total == pytest.approx(1700)
    with pytest.raises(ValueError, match="same LSH functions"):
        union.merge(RaceSketch(L2Hash.draw(40, 3, 1.0, np.random.default_rng(9)), 31))


def test_private_release_noise_has_laplace_scale_r_over_epsilon_and_the_known_mistake_fails():
    # Goodness of fit: the released noise (no rounding) against Laplace(0, R/ε) with a KS
    # test at level 1e-3 on R·W = 20,000 cells (critical distance ≈ 1.949/sqrt(n)).
    fam = L2Hash.draw(100, 3, 1.0, np.random.default_rng(4))
    sketch = RaceSketch(fam, 200).add(_data(5000))
    eps = 2.0
    private, event = release(sketch, eps, np.random.default_rng(5), rounding="none")
    noise = (private.counts - sketch.counts).reshape(-1)
    crit = 1.949 / math.sqrt(noise.size)
    assert stats.kstest(noise, stats.laplace(scale=100 / eps).cdf).statistic < crit
    # A release that scales the noise by R/(N·ε) is not ε-DP for N > 1; the same test
    # rejects it (its noise is N = 5000 times too small).
    wrong = np.random.default_rng(5).laplace(0.0, 100 / (5000 * eps), size=noise.size)
    assert stats.kstest(wrong, stats.laplace(scale=100 / eps).cdf).statistic > crit
    # The ledger event is ε-DP: Laplace with noise multiplier 1/ε of the L1 sensitivity R.
    assert event.noise_multiplier == pytest.approx(1 / eps)
    assert laplace_scale(100, eps, "replace_one") == pytest.approx(200 / eps)


def test_flooring_is_biased_by_one_half_and_rounding_is_not():
    # E⌊c + Z⌋ = c − 1/2 for symmetric continuous Z; mean over 200,000 cells has sd
    # ≈ sqrt(2)·b/sqrt(n) = 0.016 for b = 5: 6 sd tolerance.
    fam = L2Hash.draw(200, 3, 1.0, np.random.default_rng(6))
    sketch = RaceSketch(fam, 1000)
    rng = np.random.default_rng(7)
    tol = 6 * math.sqrt(2) * 5 / math.sqrt(sketch.counts.size)
    floored, _ = release(sketch, 40.0, rng, rounding="floor")
    rounded, _ = release(sketch, 40.0, rng, rounding="round")
    assert floored.counts.mean() == pytest.approx(-0.5, abs=tol)
    assert rounded.counts.mean() == pytest.approx(0.0, abs=tol)


def test_query_error_shrinks_with_n_as_theorem_3_4_says():
    # Theorem 3.4 (median of means, probability 1 − δ):
    #   |f̂ − f| ≤ sqrt(f̃²/R + 2R/ε²) · sqrt(32 log 1/δ),  f̃ = Σ sqrt k(x, q).
    # Relative to f ∝ N, the noise term falls as 1/N and the sketch term stays at
    # (f̃/f)/sqrt(R): the relative error falls with N towards that floor. Checked on 200
    # queries: at most a δ share exceed the bound, and the median relative error falls.
    fam = L2Hash.draw(200, 3, 4.0, np.random.default_rng(8))
    q = _data(200, 9)
    delta, eps, rows = 0.05, 1.0, 200
    medians, floors = [], []
    for n in (1000, 64_000):
        x = _data(n, 10)
        k = fam.kernel(x, q)
        truth, tilde = k.sum(axis=0), np.sqrt(k).sum(axis=0)
        private, _ = release(RaceSketch(fam, 100).add(x), eps, np.random.default_rng(11))
        err = np.abs(private.query(q, groups=5) - truth)
        bound = np.sqrt(tilde**2 / rows + 2 * rows / eps**2) * math.sqrt(32 * math.log(1 / delta))
        assert np.mean(err > bound) <= delta
        medians.append(float(np.median(err / truth)))
        floors.append(float(np.median(tilde / truth)) / math.sqrt(rows))
    assert medians[1] < medians[0] / 2
    # at large N the error is at the sketch's own floor, not the noise's
    assert medians[1] < 2 * floors[1]


def test_same_seed_same_sketch():
    def build(seed):
        fam = L2Hash.draw(30, 3, 1.0, np.random.default_rng(seed))
        s = RaceSketch(fam, 20).add(_data(500))
        return release(s, 1.0, np.random.default_rng(seed + 1))[0].counts

    np.testing.assert_array_equal(build(3), build(3))
    assert not np.array_equal(build(3), build(4))
