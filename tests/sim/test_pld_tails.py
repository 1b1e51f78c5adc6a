"""The vectorised tail truncation is dp-accounting's own, bit for bit: the same cut,
the same kept array and the same masses for arrays with tiny tails, negative rounding
residues from an FFT, all mass in one element, and thresholds that cut nothing or all."""

from __future__ import annotations

import numpy as np
import pytest

from privsim.sim import pld_tails


def _cases() -> list[tuple[np.ndarray, float]]:
    rng = np.random.default_rng(20261129)
    tiny = np.concatenate([np.full(500, 1e-19), rng.random(300), np.full(400, 1e-18)])
    residues = rng.random(1000) * 1e-3
    residues[::7] = -1e-18  # an FFT's rounding below zero
    return [
        (tiny / tiny.sum(), 1e-15),
        (residues / residues.sum(), 1e-15),
        (np.array([1.0]), 1e-15),
        (np.array([0.0, 0.0, 1.0, 0.0]), 1e-15),
        (rng.random(50), 0.0),
        (rng.random(50), 5.0),
    ]


@pytest.mark.parametrize(("probs", "bound"), _cases())
@pytest.mark.parametrize("pessimistic", [True, False])
def test_the_same_cut_as_the_librarys(probs: np.ndarray, bound: float, pessimistic: bool) -> None:
    assert pld_tails._LIBRARY is not None
    theirs = pld_tails._LIBRARY(probs.copy(), bound, pessimistic)
    ours = pld_tails.truncate_tails(probs.copy(), bound, pessimistic)
    assert ours[0] == theirs[0]
    assert np.array_equal(np.asarray(ours[1]), np.asarray(theirs[1]))
    assert ours[2] == theirs[2]
