"""privsim.sim.portable: accurate to a few units in the last place against NumPy, right
at the special values, and the same bits whatever NumPy's CPU dispatch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.sim import portable
from tests.portability.test_cross_cpu import under_both_dispatches

RNG = np.random.default_rng(20261125)
#: Inputs spanning each function's range (the log's down to subnormals).
X_EXP = np.concatenate([RNG.uniform(-745.0, 709.7, 50_000), RNG.standard_normal(50_000) * 3])
Y_LOG = np.concatenate([RNG.random(50_000), np.exp(RNG.uniform(-744.0, 709.0, 50_000))])
T_TURNS = RNG.random(100_000)


def ulps(got: np.ndarray, want: np.ndarray) -> float:
    """Largest error in units of the last place of the reference (subnormals: of the
    smallest subnormal)."""
    scale = np.maximum(np.spacing(np.abs(want)), 5e-324)
    return float(np.max(np.abs(got - want) / scale))


def test_exp_is_within_one_ulp_of_numpy():
    # NumPy's (and the C library's) exp are themselves within about 0.5 ulp of e^x, so
    # agreement within 1 ulp bounds ours within 1.5 ulp of the truth.
    assert ulps(portable.exp(X_EXP), np.exp(X_EXP)) <= 1.0


def test_log_is_within_two_ulps_of_numpy():
    # ln m through s = (m − 1)/(m + 1), rounded once: about one more ulp than exp.
    assert ulps(portable.log(Y_LOG), np.log(Y_LOG)) <= 2.0


def test_sin_and_cos_of_turns_are_within_two_ulps_of_one():
    sin, cos = portable.sin_cos_turns(T_TURNS)
    # NumPy's own sin(2πt) carries the rounding of 2πt (up to 2π·2⁻⁵³ ≈ 7e-16 absolute),
    # so the comparison is absolute, at a few units of 2⁻⁵³.
    angle = 2.0 * np.pi * T_TURNS
    assert np.max(np.abs(sin - np.sin(angle))) < 4 * 2.0**-52
    assert np.max(np.abs(cos - np.cos(angle))) < 4 * 2.0**-52
    assert np.max(np.abs(sin * sin + cos * cos - 1.0)) < 4 * 2.0**-52


def test_quarter_turns_are_exact():
    sin, cos = portable.sin_cos_turns(np.array([0.0, 0.25, 0.5, 0.75]))
    assert sin.tolist() == [0.0, 1.0, 0.0, -1.0]
    assert cos.tolist() == [1.0, 0.0, -1.0, 0.0]


@pytest.mark.parametrize(
    ("x", "want"),
    [
        (0.0, 1.0),
        (-0.0, 1.0),
        (math.inf, math.inf),
        (-math.inf, 0.0),
        (710.0, math.inf),
        (-746.0, 0.0),
    ],
)
def test_exp_special_values(x, want):
    assert portable.exp(np.array([x]))[0] == want


@pytest.mark.parametrize(
    ("y", "want"),
    [
        (1.0, 0.0),
        (0.0, -math.inf),
        (math.inf, math.inf),
        (2.0, math.log(2.0)),
        (5e-324, math.log(5e-324)),
    ],
)
def test_log_special_values(y, want):
    assert portable.log(np.array([y]))[0] == want


@pytest.mark.parametrize("y", [-1.0, math.nan])
def test_log_of_a_negative_or_nan_is_nan(y):
    assert math.isnan(portable.log(np.array([y]))[0])


def test_shapes_are_kept():
    x = RNG.standard_normal((3, 4))
    assert portable.exp(x).shape == (3, 4) and portable.log(np.abs(x)).shape == (3, 4)
    assert portable.exp(0.5).shape == ()


def test_the_same_bits_with_and_without_the_cpus_vector_instructions(tmp_path):
    """A child with every dispatched CPU feature of NumPy off computes the same bytes."""
    np.save(tmp_path / "x.npy", X_EXP)
    np.save(tmp_path / "y.npy", Y_LOG)
    np.save(tmp_path / "t.npy", T_TURNS)
    script = (
        "import sys, hashlib, numpy as np; from privsim.sim import portable as p; d = sys.argv[1]; "
        "x, y, t = (np.load(f'{d}/{n}.npy') for n in 'xyt'); "
        "s, c = p.sin_cos_turns(t); "
        "print(hashlib.sha256(b''.join(a.tobytes() for a in (p.exp(x), p.log(y), s, c))).hexdigest())"
    )
    digests = set(under_both_dispatches(script, str(tmp_path)))
    assert len(digests) == 1


def test_one_value_takes_the_scalar_path_with_the_same_bits():
    """A message's latency is one value: exp of a one-element array goes through Python
    floats, which must give the array path's bits, edges of the range included."""
    x = np.concatenate([X_EXP[:20_000], [709.782712893384, -745.1332191019412, -0.0, 1e-300]])
    one_by_one = np.array([portable.exp(np.array([v]))[0] for v in x.tolist()])
    assert np.array_equal(one_by_one, portable.exp(x))
