"""Three of dp-accounting's loops, with the same arithmetic, on NumPy arrays.

dp-accounting 0.6 reads ε at δ from a dense PLD (``DensePLDPmf.get_epsilon_for_delta``)
in a Python loop over the losses from the highest down, and before every
``self_compose`` it bounds the result's support by Chernoff bounds at 40 orders
(``common.compute_self_convolve_bounds``), each one a call of SciPy's ``logsumexp``
that passes over the whole array about twenty times. For a PLD of millions of points
(a sampled round at a small noise multiplier) the loop and the bounds take seconds
each, more than the composition itself.

- :func:`epsilon_for_delta` is the loop's walk on ``np.cumsum``, which adds in the same
  order as the loop (sequentially, in float64): the same running masses, the same losses
  (``itertools.count``'s repeated addition), the same stopping index and the same
  ε. It walks in chunks that double in size, so a walk that stops early reads little.
- :func:`self_convolve_bounds` computes each order's ``logsumexp`` as SciPy's stable
  branch does (the maximum term set aside, the others' weighted exponentials summed,
  ``log1p`` of their ratio). The library's orders are ±k/n for k = 1 … 20, so the k-th
  order's terms are the (k − 1)-th's times one array w = exp(±(i − i_max)/n): one
  product per order in place of an exponential of the whole array (20 times faster at
  2.5·10⁵ points). The products differ from the exponentials by a few ulps, and a
  bound is the ceiling (or floor) of a value near n·R·log-MGF/k, so the bounds are the
  library's unless that value lies within about 10⁻⁷ of a whole number; where one
  did, the truncation would move by one point of mass below the tail's 10⁻¹⁵. Other
  orders, or arrays with non-finite entries, take the order-by-order path.
- :func:`forward_diffs` is the forward differences behind the RDP bound for sampling
  without replacement (Wang, Balle & Kasiviswanathan 2019), O(α²) scalar steps in
  Python for order α, with each pass over the array at once: a pass's steps are
  independent (each reads its position's old value and its right neighbour's), and
  each is the library's step.

Where NumPy's ``exp``, ``log`` and ``log1p`` are not the C library's
(:func:`_numpy_is_libm`, a probe at import: NumPy has its own on some CPUs),
:func:`epsilon_for_delta` takes them from :mod:`math`, element by element, as the loop
does (still several times faster than the loop), and :func:`forward_diffs` is the
library's own. ``tests/sim/test_pld_loops.py`` compares all three with the library's
functions, bit for bit.

:func:`install` puts the first two in place for the dp-accounting release they were
written against (:data:`FOR_VERSION`; any other release keeps its own);
:func:`~privsim.sim.events.wor_gaussian_rdp` calls the third.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from importlib import metadata

import numpy as np
import numpy.typing as npt
from dp_accounting.pld import common, pld_pmf

__all__ = [
    "FOR_VERSION",
    "epsilon_for_delta",
    "forward_diffs",
    "install",
    "self_convolve_bounds",
]

F64 = npt.NDArray[np.float64]

#: The dp-accounting release whose functions these reproduce.
FOR_VERSION = "0.6.0"
_LIBRARY_EPSILON = getattr(pld_pmf.DensePLDPmf, "get_epsilon_for_delta", None)
_LIBRARY_BOUNDS = getattr(common, "compute_self_convolve_bounds", None)
#: The first chunk of losses :func:`epsilon_for_delta` reads (each next one is twice).
FIRST_CHUNK = 4096


def _numpy_is_libm() -> bool:
    """Whether NumPy's float64 ``exp`` and ``log`` give :mod:`math`'s results on a probe
    of the arguments the walk takes (NumPy uses the C library's unless the CPU has
    AVX-512, where it has its own, within an ulp)."""
    rng = np.random.default_rng(709)
    x = np.concatenate([rng.uniform(-745.0, 50.0, 20_000), -rng.exponential(5.0, 20_000)])
    y = np.exp(rng.uniform(-700.0, 700.0, 20_000))
    w = -np.exp(rng.uniform(-40.0, 0.0, 20_000))  # log1p(−e^{−t}), as the RDP steps take it
    return bool(
        np.array_equal(np.exp(x), np.fromiter(map(math.exp, x.tolist()), np.float64, x.size))
        and np.array_equal(np.log(y), np.fromiter(map(math.log, y.tolist()), np.float64, y.size))
        and np.array_equal(
            np.log1p(w), np.fromiter(map(math.log1p, w.tolist()), np.float64, w.size)
        )
    )


_NUMPY_IS_LIBM = _numpy_is_libm()


def _exp(x: F64) -> F64:
    """exp of each element, ∞ past float64's range (a chunk of the walk reads losses
    beyond the point where the loop would have stopped; those are discarded)."""
    if _NUMPY_IS_LIBM:
        with np.errstate(over="ignore"):
            return np.exp(x)
    return np.fromiter(map(_exp_or_inf, x.tolist()), np.float64, x.size)


def _exp_or_inf(value: float) -> float:
    try:
        return math.exp(value)
    except OverflowError:
        return math.inf


def _log(x: F64) -> F64:
    if _NUMPY_IS_LIBM:
        return np.log(x)
    return np.fromiter(map(math.log, x.tolist()), np.float64, x.size)


def epsilon_for_delta(
    infinity_mass: float, upper_loss: float, step: float, reversed_probs: F64, delta: float
) -> float:
    """dp-accounting's ``_get_epsilon_for_delta`` for a dense PLD: the smallest ε whose
    hockey-stick divergence is at most ``delta``, reading the losses ``upper_loss``,
    ``upper_loss − step``, … (each the previous one minus ``step``, as
    ``itertools.count`` makes them) with their masses ``reversed_probs``."""
    if infinity_mass > delta:
        return math.inf
    n = len(reversed_probs)
    upper: float = infinity_mass  # the loop's mass_upper and mass_lower
    lower: float = 0.0
    loss = upper_loss  # the next loss the loop reads
    start, size = 0, FIRST_CHUNK
    while start < n:
        stop = min(n, start + size)
        p = np.asarray(reversed_probs[start:stop], dtype=np.float64)
        m = stop - start
        steps = np.full(m, -step, dtype=np.float64)
        steps[0] = loss
        losses = np.cumsum(steps)
        uppers = np.cumsum(np.concatenate(([upper], p)))  # [j]: before element j
        lowers = np.cumsum(np.concatenate(([lower], _exp(-losses) * p)))
        u, lo = uppers[:m], lowers[:m]
        valid = (u > delta) & (lo > 0)
        with np.errstate(all="ignore"):  # the loop's float arithmetic: inf, not a warning
            ratio = np.where(valid, (u - delta) / np.where(valid, lo, 1.0), 1.0)
        stops = valid & (_log(ratio) >= losses)  # ε is at least this loss: stop before it
        ends = (uppers[1:] >= delta) & (lowers[1:] == 0)  # after it: exp(−loss) was 0
        j_stop = int(np.argmax(stops)) if stops.any() else m
        j_end = int(np.argmax(ends)) if ends.any() else m
        if j_end < j_stop:
            return max(0, losses[j_end])  # type: ignore[return-value]
        if j_stop < m:
            upper, lower = uppers[j_stop], lowers[j_stop]
            break
        upper, lower = uppers[m], lowers[m]
        loss = losses[-1] + (-step)
        start, size = stop, 2 * size
    if upper <= lower + delta:
        return 0  # type: ignore[return-value]
    return math.log((upper - delta) / lower)


def _dense_epsilon_for_delta(self: pld_pmf.DensePLDPmf, delta: float) -> float:
    """``DensePLDPmf.get_epsilon_for_delta`` by :func:`epsilon_for_delta`."""
    upper_loss = (self._lower_loss + len(self._probs) - 1) * self._discretization
    return epsilon_for_delta(
        self._infinity_mass, upper_loss, self._discretization, np.flip(self._probs), delta
    )


def self_convolve_bounds(
    input_list: F64,
    num_times: int,
    tail_mass_truncation: float = 0,
    orders: F64 | None = None,
) -> tuple[int, int]:
    """dp-accounting's ``compute_self_convolve_bounds``: the range of indices outside of
    which the ``num_times``-fold self-convolution of ``input_list`` has at most
    ``tail_mass_truncation`` of mass, by the Chernoff bound at each of ``orders``, with
    each order's log moment generating function computed as SciPy's ``logsumexp``
    (``a = i·order``, weights ``input_list``) computes it where it is finite."""
    upper_bound = (len(input_list) - 1) * num_times
    lower_bound = 0
    if tail_mass_truncation == 0:
        return lower_bound, upper_bound
    if orders is None:
        orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / len(input_list)
    b = np.asarray(input_list, dtype=np.float64)
    if b.ndim != 1 or b.size == 0 or not np.all(np.isfinite(b)):
        assert _LIBRARY_BOUNDS is not None
        return _LIBRARY_BOUNDS(input_list, num_times, tail_mass_truncation, orders)  # type: ignore[no-any-return]
    log_mgfs = _library_orders_log_mgf(b, orders)
    if log_mgfs is None:
        index = np.arange(b.size)
        zero = b == 0
        nonzero = np.flatnonzero(~zero)
        log_mgfs = [_log_mgf(b, index, zero, nonzero, order) for order in orders]
    for order, log_mgf in zip(orders, log_mgfs, strict=True):
        bound = (num_times * log_mgf + math.log(2 / tail_mass_truncation)) / order
        if not math.isfinite(bound):
            continue
        if order > 0:
            upper_bound = min(upper_bound, math.ceil(bound))
        if order < 0:
            lower_bound = max(lower_bound, math.floor(bound))
    return lower_bound, upper_bound


#: The library's orders, in units of 1/n: −20 … −1, 1 … 20.
_LIBRARY_STEPS = np.concatenate((np.arange(-20, 0), np.arange(1, 21)))


def _library_orders_log_mgf(b: F64, orders: F64) -> list[float] | None:
    """``logsumexp(i·order, b=b)`` at each of the library's orders ±k/n (n = b's
    length), the k-th order's terms b_i·w^k built from the (k − 1)-th's by one product
    (w = exp((i − i*)/n) for positive orders, i* the last non-zero index; exp(−(i −
    i₀)/n) for negative ones, i₀ the first): log1p(s/m) + log m + i*·order, m = b at
    i*, s the other terms' sum. None for other orders, an array of zeros or negative
    entries, or a non-finite figure (the caller's order-by-order path)."""
    n = b.size
    if orders.shape != _LIBRARY_STEPS.shape or not np.array_equal(orders, _LIBRARY_STEPS / n):
        return None
    nonzero = np.flatnonzero(b)
    if nonzero.size == 0 or b.min() < 0:
        return None
    first, last = int(nonzero[0]), int(nonzero[-1])
    span = b[first : last + 1]
    steps = np.arange(first, last + 1, dtype=np.float64)
    found: dict[int, float] = {}
    for sign, at in ((1, last), (-1, first)):
        m = float(b[at])
        with np.errstate(all="ignore"):
            w = np.exp(sign * (steps - at) / n)
            terms = span.copy()
            terms[at - first] = 0.0  # the largest term, set aside
            for k in range(1, 21):
                terms *= w
                order = sign * k / n
                found[sign * k] = math.log1p(float(terms.sum()) / m) + math.log(m) + at * order
    figures = [found[int(k)] for k in _LIBRARY_STEPS]
    return figures if all(math.isfinite(f) for f in figures) else None


def _log_mgf(
    b: F64,
    index: npt.NDArray[np.int64],
    zero: npt.NDArray[np.bool_],
    nonzero: npt.NDArray[np.int64],
    order: float,
) -> float:
    """``scipy.special.logsumexp(index * order, b=b)`` for finite ``b``, as SciPy 1.17
    computes it: the terms with b = 0 are −∞, the largest term a_max (its weights m
    summed) set aside, s = Σ b·exp(a − a_max) over the rest (−∞ set to a zero term,
    summed pairwise over the whole array), and log1p(s/m) + log(m) + a_max; where that
    is not finite, log(Σ b·exp(a)), the naive sum SciPy falls back to."""
    a = index * order
    if nonzero.size == 0:  # every term −∞: SciPy's naive log(0) = −∞
        return -math.inf
    kept = a[nonzero]
    a_max = kept.max()
    at_max = nonzero[kept == a_max]
    m = float(np.sum(b[at_max], dtype=np.float64)) if at_max.size > 1 else float(b[at_max[0]])
    with np.errstate(all="ignore"):
        terms = b * np.exp(a - a_max)
        terms[zero] = 0.0
        terms[at_max] = 0.0
        s = float(np.sum(terms))
        if s != 0:
            s = s / m
        negative = float(np.sign(s + 1.0) * np.sign(m)) < 0  # SciPy's sign: then NaN
        if s < -1:
            s = -s - 2
        out = math.nan if negative else float(np.log1p(s) + np.log(abs(m)) + a_max)
        if math.isfinite(out):
            return out
        return float(np.log(np.sum(b * np.exp(a))))  # SciPy's naive sum (NaN if < 0)


def forward_diffs(fun: Callable[[float], float], n: int) -> tuple[F64, npt.NDArray[np.bool_]]:
    """dp-accounting's ``_get_forward_diffs`` (the log-magnitudes and signs of the
    forward differences of exp(fun) at 0, up to order n + 1) with each pass of its
    ``_stable_inplace_diff_in_log`` on whole arrays: a pass reads every position's old
    value and its right neighbour's, so its steps are independent, and each is the
    library's scalar step (``_log_sub_sign`` where the signs agree, ``_log_add`` where
    they differ) with NumPy's exp and log1p, which are the C library's here
    (:func:`_numpy_is_libm`; elsewhere the library's own function)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_module

    if not _NUMPY_IS_LIBM:
        return rdp_module._get_forward_diffs(fun, n)  # type: ignore[no-any-return]
    vec = np.zeros(n + 3)
    signs = np.ones(n + 3, dtype=bool)
    deltas = np.zeros(n + 2)
    signs_deltas = np.zeros(n + 2, dtype=bool)
    for i in range(1, n + 3):
        vec[i] = fun(1.0 * (i - 1))
    with np.errstate(all="ignore"):
        for i in range(n + 2):
            m = n + 2 - i  # differences this pass computes: positions 0 … m − 1
            left, right = vec[:m], vec[1 : m + 1]
            s_left, s_right = signs[:m], signs[1 : m + 1]
            same = s_left == s_right
            # _log_sub_sign(right, left), its sign toggled where the right one is negative
            above, below = right > left, right < left
            mag = np.where(
                above,
                right + np.log1p(-np.exp(left - right)),
                np.where(below, left + np.log1p(-np.exp(right - left)), -np.inf),
            )
            sub_sign = np.where(below, False, True) ^ ~s_right
            # _log_add(left, right): the larger plus log1p(exp(smaller − larger))
            lo, hi = np.minimum(left, right), np.maximum(left, right)
            added = np.where(lo == -np.inf, hi, np.log1p(np.exp(lo - hi)) + hi)
            new_vec = np.where(same, mag, added)
            new_signs = np.where(same, sub_sign, s_right)
            vec[:m], signs[:m] = new_vec, new_signs
            deltas[i], signs_deltas[i] = vec[0], signs[0]
    return deltas, signs_deltas


def install() -> None:
    """Use :func:`epsilon_for_delta` and :func:`self_convolve_bounds` inside
    dp-accounting (release :data:`FOR_VERSION` only)."""
    try:
        version = metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - installed as a dependency
        return
    if version != FOR_VERSION or _LIBRARY_EPSILON is None or _LIBRARY_BOUNDS is None:
        return
    pld_pmf.DensePLDPmf.get_epsilon_for_delta = _dense_epsilon_for_delta  # type: ignore[method-assign]
    common.compute_self_convolve_bounds = self_convolve_bounds  # type: ignore[assignment]
