"""Function-release baselines: they approximate the same kernel density as RACE, and their
private releases add Laplace noise of the stated scale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsim.protocols.race.baselines import BernsteinRelease, FourierRelease
from privsim.protocols.race.lsh import L2Hash


def _setup():
    rng = np.random.default_rng(0)
    x = np.clip(rng.normal(0.5, 0.15, size=(3000, 2)), 0, 1)
    q = np.clip(rng.normal(0.5, 0.15, size=(200, 2)), 0.05, 0.95)
    fam = L2Hash.draw(10, 2, 0.4, rng)  # a wide kernel: smooth density on the unit box
    truth = fam.kernel(x, q).mean(axis=0)
    return x, q, fam, truth, np.zeros(2), np.ones(2)


def test_the_approximations_converge_to_the_kernel_density():
    x, q, fam, truth, low, high = _setup()
    rng = np.random.default_rng(1)
    errors = {}
    for name, cls, sizes in (
        ("bernstein", BernsteinRelease, (4, 16)),
        ("fourier", FourierRelease, (2, 8)),
    ):
        errs = []
        for size in sizes:
            approx = cls.build(x, fam, size, low, high, None, rng)
            errs.append(float(np.mean(np.abs(approx.query(q) - truth) / truth)))
        errors[name] = errs
    # a finer lattice / more coefficients approximates better; the finer ones within 10%
    assert errors["bernstein"][1] < errors["bernstein"][0]
    assert errors["fourier"][1] < errors["fourier"][0]
    assert errors["bernstein"][1] < 0.1 and errors["fourier"][1] < 0.1


def test_private_releases_add_laplace_noise_of_the_stated_scale():
    # Bernstein: (M+1)^d values, scale (M+1)^d/(N ε); Fourier: (2K+1)^d complex
    # coefficients, scale 2(2K+1)^d/(N ε) on each part. The sd of Laplace(b) is sqrt(2)·b;
    # estimated from ≥ 289 draws its relative error is below ~15% at 3 sd (kurtosis 6).
    x, _, fam, _, low, high = _setup()
    rng = np.random.default_rng(2)
    n, eps = x.shape[0], 0.5
    bern = BernsteinRelease.build(x, fam, 16, low, high, None, rng)
    noise = bern.private(n, eps, rng).values - bern.values
    scale = 17**2 / (n * eps)
    assert noise.std() == pytest.approx(math.sqrt(2) * scale, rel=0.15)
    four = FourierRelease.build(x, fam, 8, low, high, None, rng)
    diff = four.private(n, eps, rng).characteristic - four.characteristic
    scale = 2 * 17**2 / (n * eps)
    assert diff.real.std() == pytest.approx(math.sqrt(2) * scale, rel=0.15)
    assert diff.imag.std() == pytest.approx(math.sqrt(2) * scale, rel=0.15)
