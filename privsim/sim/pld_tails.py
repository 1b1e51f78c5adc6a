"""dp-accounting's PLD tail truncation, with the same sums, vectorised.

Every composition of privacy loss distributions in dp-accounting 0.6 (``compose``,
``self_compose``) truncates the result's tails: ``pld_pmf._truncate_tails`` walks the
probability array from each end in a Python loop, adding masses until they pass half the
truncation bound. A PLD whose tails hold many tiny masses (a sampled round at a fine
interval; an FFT's result) makes that loop the slowest step of a ledger's composition.
:func:`truncate_tails` is the same function with the walk on ``np.cumsum``, which adds
in the same order as the loop (sequentially, in float64), so it cuts at the same
indices and moves the same masses for every input: the PLDs, and every ε computed from
them, are bit for bit unchanged (``tests/sim/test_pld_tails.py``).

:func:`install` puts it in place of the library's function when the ledger's event
module is imported, for the dp-accounting release it was written against
(:data:`FOR_VERSION`); any other release keeps its own.
"""

from __future__ import annotations

from importlib import metadata

import numpy as np
import numpy.typing as npt
from dp_accounting.pld import pld_pmf

__all__ = ["FOR_VERSION", "find_prefix_to_truncate", "install", "truncate_tails"]

#: The dp-accounting release whose ``_truncate_tails`` this reproduces.
FOR_VERSION = "0.6.0"
_LIBRARY = getattr(pld_pmf, "_truncate_tails", None)


def find_prefix_to_truncate(arr: npt.NDArray[np.float64], threshold: float) -> int:
    """The length of the longest prefix of ``arr`` whose running sum stays at most
    ``threshold``: the first index whose running sum exceeds it, or len(arr)."""
    above = np.cumsum(arr) > threshold
    return int(np.argmax(above)) if above.any() else int(arr.size)


def truncate_tails(
    probs: npt.NDArray[np.float64], tail_mass_truncation: float, pessimistic_estimate: bool
) -> tuple[int, npt.NDArray[np.float64], float]:
    """dp-accounting's ``_truncate_tails``: cut the longest prefix and suffix of
    ``probs`` whose masses each sum to at most half of ``tail_mass_truncation``;
    pessimistic: the prefix's mass joins the first element kept and the suffix's goes
    to an infinite loss (returned), else the suffix's joins the last element kept.
    Returns (prefix length, the kept array, mass to infinity)."""
    if tail_mass_truncation == 0:
        return 0, probs, 0
    half = tail_mass_truncation / 2
    left_idx = find_prefix_to_truncate(probs, half)
    right_idx = len(probs) - find_prefix_to_truncate(np.flip(probs), half)
    right_idx = max(right_idx, left_idx + 1)
    left_mass = np.sum(probs[:left_idx])
    right_mass = np.sum(probs[right_idx:])
    truncated = probs[left_idx:right_idx]
    if pessimistic_estimate:
        truncated[0] += left_mass
        return left_idx, truncated, right_mass
    truncated[-1] += right_mass
    return left_idx, truncated, 0


def install() -> None:
    """Use :func:`truncate_tails` inside dp-accounting's PLD pmfs (release
    :data:`FOR_VERSION` only)."""
    try:
        version = metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - installed as a dependency
        return
    if version == FOR_VERSION and _LIBRARY is not None:
        pld_pmf._truncate_tails = truncate_tails  # type: ignore[assignment]
