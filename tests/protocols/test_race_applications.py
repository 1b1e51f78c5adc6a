"""The private releases of the RACE applications, held to their sensitivity analysis.

Each application's release is checked from first principles: fit on neighbouring data
sets D and D' (D' = D without one record) with the same seed, so the LSH functions are
the same; the L1 distance between the two sketches handed to ``release`` is the
sensitivity that record exercises, and the Laplace scale of the noise actually added must
be (that distance's worst case) / ε. The regression sketch adds every record as z and −z
(two cells in each of the R rows: Δ₁ = 2R, so the scale is 2R/ε: with R/ε the release is
only 2ε-DP); a classifier record adds one cell per row of its own class's sketch (Δ₁ = R
over all class sketches together).

The scale of a Laplace sample is estimated by the mean absolute value (E|Z| = b and
Var|Z| = b² for Z ~ Laplace(0, b)), so over n cells its relative sd is 1/sqrt(n); we allow
5 sd, and a factor of 2 in the scale is 100 sd or more away.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privsim.protocols.race.applications as apps
from privsim.protocols.race.applications import RaceClassifier, RaceRegressor
from privsim.protocols.race.lsh import SRPHash
from privsim.protocols.race.private import laplace_scale, release
from privsim.protocols.race.sketch import RaceSketch


class _Spy:
    """Wraps ``release`` in the applications module and keeps what went in and came out."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[dict] = []
        monkeypatch.setattr(apps, "release", self)

    def __call__(self, sketch, epsilon, rng, **kwargs):
        before = sketch.counts.copy()
        out, event = release(sketch, epsilon, rng, **kwargs)
        self.calls.append(
            {"before": before, "after": out.counts.copy(), "epsilon": epsilon, "rows": sketch.rows}
        )
        return out, event


def _scale_estimate(noise: np.ndarray) -> tuple[float, float]:
    """(b̂, 5 relative sds) for Laplace noise."""
    noise = noise.reshape(-1)
    return float(np.mean(np.abs(noise))), 5.0 / math.sqrt(noise.size)


def _regression_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, size=(n, 3))
    y = x @ np.array([0.5, -1.0, 2.0]) + rng.normal(0.0, 0.1, n)
    return x, y


@pytest.mark.parametrize("copies", [1, 2, 3])
@pytest.mark.parametrize("neighbour", ["add_remove", "replace_one"])
def test_release_scale_is_copies_times_the_sketch_sensitivity_over_epsilon(copies, neighbour):
    fam = SRPHash.draw(400, 3, 5, np.random.default_rng(1))  # R = 400, W = 32
    sketch = RaceSketch(fam, 32)
    eps = 1.5
    private, event = release(
        sketch, eps, np.random.default_rng(2), rounding="none", neighbour=neighbour, copies=copies
    )
    b, tol = _scale_estimate(private.counts - sketch.counts)
    expected = copies * (2 if neighbour == "replace_one" else 1) * 400 / eps
    assert expected == pytest.approx(copies * laplace_scale(400, eps, neighbour))
    assert b == pytest.approx(expected, rel=tol)
    # The ledger event: Laplace noise of multiplier 1/ε of the sensitivity it covers.
    assert event.noise_multiplier == pytest.approx(1 / eps)


def test_regression_release_covers_a_record_added_as_z_and_minus_z(monkeypatch):
    """One record moves the regression sketch by 2R in L1 (z and −z land in different
    cells of every row: their sign bits are complementary), so the noise scale is 2R/ε."""
    rows, bits, eps = 3000, 3, 2.0
    x, y = _regression_data(401, 3)
    # The record that D' leaves out holds the maxima: the scaling is by public bounds
    # (|x_j| ≤ 4, |y| ≤ 4·‖β‖₁ for the generator's N(0, 1) features), so it does not
    # matter (tests/protocols/test_race_public_scaling.py: the old max scaling did).
    x[-1], y[-1] = 10.0, -30.0
    assert np.abs(x).argmax(axis=0).tolist() == [400] * 3 and np.abs(y).argmax() == 400
    spy = _Spy(monkeypatch)
    for n in (401, 400):
        RaceRegressor.fit(
            x[:n],
            y[:n],
            x_bound=4.0,
            y_bound=14.0,
            rows=rows,
            bits=bits,
            epsilon=eps,
            rng=np.random.default_rng(4),
            iterations=1,
        )
    with_record, without = spy.calls
    l1 = float(np.abs(with_record["before"] - without["before"]).sum())
    assert l1 == 2 * rows  # the worst case, reached by every record
    for call in spy.calls:
        b, tol = _scale_estimate(call["after"] - call["before"])
        assert b == pytest.approx(l1 / eps, rel=tol)
        assert b == pytest.approx(2 * rows / eps, rel=tol)


def test_classifier_release_covers_one_record_in_one_class_sketch(monkeypatch):
    """Class sketches hold disjoint records: one record moves one cell per row of its own
    class's sketch, R in L1 over all of them (parallel composition): scale R/ε each."""
    rows, eps = 2000, 0.5
    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 1.0, size=(300, 2))
    y = (x[:, 0] > 0).astype(np.float64)
    spy = _Spy(monkeypatch)
    for n in (300, 299):
        RaceClassifier.fit(
            x[:n],
            y[:n],
            rows=rows,
            width=16,
            bandwidth=1.0,
            epsilon=eps,
            rng=np.random.default_rng(6),
        )
    assert len(spy.calls) == 4  # two classes, two fits
    with_record, without = spy.calls[:2], spy.calls[2:]
    l1 = sum(
        float(np.abs(a["before"] - b["before"]).sum())
        for a, b in zip(with_record, without, strict=True)
    )
    assert l1 == rows
    for call in spy.calls:
        b, tol = _scale_estimate(call["after"] - call["before"])
        assert b == pytest.approx(rows / eps, rel=tol)


def test_without_epsilon_nothing_is_released_with_noise(monkeypatch):
    spy = _Spy(monkeypatch)
    x, y = _regression_data(50, 7)
    RaceRegressor.fit(
        x,
        y,
        x_bound=4.0,
        y_bound=14.0,
        rows=10,
        bits=2,
        epsilon=None,
        rng=np.random.default_rng(8),
        iterations=1,
    )
    RaceClassifier.fit(
        x,
        (y > 0).astype(float),
        rows=10,
        width=4,
        bandwidth=1.0,
        epsilon=None,
        rng=np.random.default_rng(9),
    )
    assert spy.calls == []


def test_rounding_modes_and_the_epsilon_check():
    fam = SRPHash.draw(50, 3, 3, np.random.default_rng(10))
    sketch = RaceSketch(fam, 8).add(_regression_data(200, 11)[0])
    default, _ = release(sketch, 1.0, np.random.default_rng(12))  # the paper's floor
    floored, _ = release(sketch, 1.0, np.random.default_rng(12), rounding="floor")
    np.testing.assert_array_equal(default.counts, floored.counts)
    assert np.all(default.counts == np.floor(default.counts))
    rounded, _ = release(sketch, 1.0, np.random.default_rng(12), rounding="round")
    real, _ = release(sketch, 1.0, np.random.default_rng(12), rounding="none")
    np.testing.assert_array_equal(rounded.counts, np.floor(real.counts + 0.5))
    np.testing.assert_array_equal(floored.counts, np.floor(real.counts))
    assert not np.all(real.counts == np.floor(real.counts))
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match=f"^epsilon must be > 0, got {bad}$"):
            laplace_scale(10, bad)
