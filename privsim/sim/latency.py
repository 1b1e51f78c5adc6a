"""Latency models: distributions of one-way link delay, in simulated seconds.

Each model is a frozen dataclass validated on construction with a vectorised
``sample(rng, size)``. Bandwidth is separate (see :mod:`privsim.sim.network`): the
delivery delay of a message is ``latency + wire_bytes / bandwidth``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from privsim.sim import portable

__all__ = [
    "ConstantLatency",
    "EmpiricalLatency",
    "LatencyModel",
    "LogNormalLatency",
    "UniformLatency",
    "delay",
]

FloatArray = npt.NDArray[np.float64]


@runtime_checkable
class LatencyModel(Protocol):
    """A distribution of non-negative delays. A model may also define ``delay(u)``, the
    inverse CDF of one uniform as a Python float with the bits of ``from_uniform``'s
    (every built-in model does; :func:`delay` falls back to ``from_uniform``): the
    per-message path computes one delay per message."""

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray: ...

    def from_uniform(self, u: FloatArray) -> FloatArray:
        """Inverse CDF: delays for uniforms ``u`` in [0, 1) (elementwise, so a delay depends
        only on its own uniform, however many are computed at once)."""
        ...

    @property
    def mean(self) -> float: ...


def _check_nonneg(name: str, value: float) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0 seconds (a delay cannot be negative), got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConstantLatency:
    """Every message takes exactly ``value`` seconds."""

    value: float
    """The delay of every message, in seconds."""

    def __post_init__(self) -> None:
        _check_nonneg("value", self.value)

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray:
        return np.full(size, float(self.value))

    def from_uniform(self, u: FloatArray) -> FloatArray:
        return np.full(np.shape(u), float(self.value))

    def delay(self, u: float) -> float:
        """:meth:`from_uniform` of one uniform, as a Python float (the same bits)."""
        return float(self.value)

    @property
    def mean(self) -> float:
        return float(self.value)


@dataclass(frozen=True, slots=True, kw_only=True)
class UniformLatency:
    """Delay uniform on ``[low, high]``."""

    low: float
    """The shortest delay, in seconds."""
    high: float
    """The longest delay, in seconds."""

    def __post_init__(self) -> None:
        _check_nonneg("low", self.low)
        _check_nonneg("high", self.high)
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be >= low ({self.low})")

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray:
        return self.low + (self.high - self.low) * rng.random(size)

    def from_uniform(self, u: FloatArray) -> FloatArray:
        return self.low + (self.high - self.low) * np.asarray(u)

    def delay(self, u: float) -> float:
        """:meth:`from_uniform` of one uniform: the same operations on Python floats
        (IEEE doubles), so the same bits."""
        return self.low + (self.high - self.low) * u

    @property
    def mean(self) -> float:
        return 0.5 * (self.low + self.high)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogNormalLatency:
    """Delay ``median * exp(sigma * Z)``, Z standard normal: heavy right tail, as measured
    on wide-area links. ``shift`` adds a fixed propagation floor. The exponential is
    :func:`privsim.sim.portable.exp`, so a delay has the same bits on every CPU."""

    median: float
    """The median delay before ``shift``, in seconds."""
    sigma: float
    """The standard deviation of the delay's logarithm (the tail's weight)."""
    shift: float = 0.0
    """A fixed propagation floor added to every delay, in seconds."""

    def __post_init__(self) -> None:
        _check_nonneg("median", self.median)
        _check_nonneg("sigma", self.sigma)
        _check_nonneg("shift", self.shift)

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray:
        return self.shift + self.median * portable.exp(self.sigma * rng.standard_normal(size))

    def from_uniform(self, u: FloatArray) -> FloatArray:
        return self.shift + self.median * portable.exp(self.sigma * ndtri(np.asarray(u)))

    def delay(self, u: float) -> float:
        """:meth:`from_uniform` of one uniform: the same ufunc for the normal quantile and
        :func:`privsim.sim.portable.exp_one` for the exponential, so the same bits."""
        return self.shift + self.median * portable.exp_one(self.sigma * float(ndtri(u)))

    @property
    def mean(self) -> float:
        return self.shift + self.median * math.exp(0.5 * self.sigma**2)


@dataclass(frozen=True, slots=True, kw_only=True)
class EmpiricalLatency:
    """Delay drawn uniformly from measured ``samples`` (e.g. a ping trace)."""

    samples: tuple[float, ...]
    """Measured delays in seconds (e.g. a ping trace); each message draws one uniformly."""
    _array: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.samples) == 0:
            raise ValueError("samples must hold at least one measured delay")
        for i, s in enumerate(self.samples):
            _check_nonneg(f"samples[{i}]", s)
        arr = np.asarray(self.samples, dtype=np.float64)
        arr.setflags(write=False)
        object.__setattr__(self, "samples", tuple(float(s) for s in self.samples))
        object.__setattr__(self, "_array", arr)

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray:
        return self._array[rng.integers(0, self._array.size, size)]

    def from_uniform(self, u: FloatArray) -> FloatArray:
        i = np.minimum((np.asarray(u) * self._array.size).astype(np.int64), self._array.size - 1)
        return self._array[i]

    def delay(self, u: float) -> float:
        """:meth:`from_uniform` of one uniform (u ≥ 0, so ``int`` truncates as the cast does)."""
        return self.samples[min(int(u * len(self.samples)), len(self.samples) - 1)]

    @property
    def mean(self) -> float:
        return float(self._array.mean())


def delay(model: LatencyModel, u: float) -> float:
    """One message's delay for its uniform ``u``: the model's scalar ``delay`` when it has
    one (every built-in model does: the bits of :meth:`~LatencyModel.from_uniform` at a
    fraction of an array call's overhead), its ``from_uniform`` of a 0-d array otherwise."""
    one = getattr(model, "delay", None)
    if one is not None:
        return float(one(u))
    return float(model.from_uniform(np.array(u)))
