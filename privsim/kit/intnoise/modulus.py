"""The modulus of a secure sum of integer vectors: arithmetic mod 2^b and the planner.

Clients send x̃_i + noise_i mod 2^b; the server reads the sum in the centred range
[−2^(b−1), 2^(b−1)). The decoded sum is right unless some coordinate of the true sum
leaves that range ("wraps around"). :func:`plan_modulus` picks the smallest b for which
the probability that any of the d coordinates wraps is below a stated bound:

- signal: every rounded coordinate has |x̃_ij| ≤ c·s + 1 (|x_ij| ≤ ‖x_i‖₂ ≤ c, and
  rounding moves it by less than one step), so |Σ_i x̃_ij| ≤ N·(c·s + 1), surely;
- noise: the N shares' sum per coordinate is sub-Gaussian with variance proxy N·σ_i²
  for the discrete Gaussian (Canonne, Kamath & Steinke 2020: E e^{tX} ≤
  e^{t²σ²/2}), so P(|Z| ≥ a) ≤ 2·exp(−a²/(2Nσ_i²)); for Skellam the sum is
  Sk(λ, λ) with λ = N·μ_i, and the Chernoff bound P(|Z| ≥ a) ≤
  2·exp(2λ(cosh t − 1) − t·a) at t = asinh(a/(2λ)) (from its moment generating
  function exp(2λ(cosh t − 1)));
- union over the d coordinates: d·P(|Z| ≥ a) ≤ ``wrap_probability`` fixes the noise
  margin a, and b is the smallest width with N·(c·s + 1) + a ≤ 2^(b−1) − 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.intnoise.noise import NoiseKind

__all__ = [
    "MAX_BITS",
    "ModulusPlan",
    "ModulusTooSmallError",
    "from_modular",
    "noise_tail",
    "plan_modulus",
    "to_modular",
]

#: Words are 64-bit: the widest modulus is 2^64.
MAX_BITS = 64


class ModulusTooSmallError(ValueError):
    """The modulus asked for is narrower than the plan's: the sum may wrap around."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModulusPlan:
    """The planned modulus 2^``bits`` and the bound it rests on: the sum stays within
    ±(``signal_bound`` + ``noise_bound``) ≤ 2^(bits−1) − 1 except with probability at most
    ``wrap_probability`` (``tail`` names the tail bound used)."""

    bits: int
    modulus: int
    signal_bound: float
    noise_bound: float
    wrap_probability: float
    tail: str

    @property
    def range(self) -> int:
        """Largest magnitude the centred decoding represents, 2^(bits−1) − 1."""
        return (1 << (self.bits - 1)) - 1

    def check(self, bits: int) -> None:
        """Refuse a modulus narrower than the plan's, naming both widths."""
        if bits < self.bits:
            raise ModulusTooSmallError(
                f"a modulus of 2^{bits} is too small: the sum can reach "
                f"{self.signal_bound + self.noise_bound:.6g} (|signal| <= {self.signal_bound:.6g} "
                f"plus noise <= {self.noise_bound:.6g}, {self.tail}), which needs {self.bits} bits "
                f"for a wrap-around probability below {self.wrap_probability:g}"
            )


def _skellam_tail(a: float, lam: float) -> float:
    """Chernoff bound on P(Sk(λ, λ) ≥ a)."""
    if a <= 0:
        return 1.0
    t = math.asinh(a / (2.0 * lam))
    return math.exp(min(0.0, 2.0 * lam * (math.cosh(t) - 1.0) - t * a))


def noise_tail(
    kind: NoiseKind, clients: int, noise_parameter: float, dimension: int, p: float
) -> float:
    """The smallest margin a with d · P(|Σ_i noise_ij| ≥ a) ≤ p (by the tail bounds above)."""
    if not 0 < p < 1:
        raise ValueError(f"wrap probability must be in (0, 1), got {p}")
    if noise_parameter <= 0:
        return 0.0
    per_coordinate = p / dimension
    if kind == "discrete_gaussian":
        proxy = clients * noise_parameter**2
        return math.sqrt(2.0 * proxy * math.log(2.0 / per_coordinate))
    if kind != "skellam":
        raise ValueError(f"unknown integer noise kind {kind!r}")
    lam = clients * noise_parameter
    lo, hi = 0.0, max(1.0, 4.0 * math.sqrt(2.0 * lam))
    while 2.0 * _skellam_tail(hi, lam) > per_coordinate:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if 2.0 * _skellam_tail(mid, lam) > per_coordinate:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9 * hi:
            break
    return hi


def plan_modulus(
    clients: int,
    dimension: int,
    clip: float,
    scale: float,
    noise_parameter: float,
    kind: NoiseKind,
    wrap_probability: float,
) -> ModulusPlan:
    """The smallest modulus 2^b for the sum of ``clients`` vectors of L2 norm ≤ ``clip``,
    scaled by ``scale`` and rounded, each with an integer noise share of parameter
    ``noise_parameter`` (σ_i, or the Poisson mean μ_i for Skellam), such that any of the
    ``dimension`` coordinates wraps with probability below ``wrap_probability``."""
    if clients < 1 or dimension < 1:
        raise ValueError(f"need clients >= 1 and dimension >= 1, got {clients}, {dimension}")
    signal = clients * (clip * scale + 1.0)
    noise = noise_tail(kind, clients, noise_parameter, dimension, wrap_probability)
    need = signal + noise
    bits = max(2, math.ceil(math.log2(need + 1.0)) + 1)
    while (1 << (bits - 1)) - 1 < need:
        bits += 1
    if bits > MAX_BITS:
        raise ModulusTooSmallError(
            f"the sum can reach {need:.6g}, beyond a 64-bit modulus; lower the scale or the noise"
        )
    tail = (
        f"sub-Gaussian, variance proxy {clients}·σ_i²"
        if kind == "discrete_gaussian"
        else f"Skellam Chernoff bound, λ = {clients}·μ_i"
    )
    return ModulusPlan(
        bits=bits,
        modulus=1 << bits,
        signal_bound=signal,
        noise_bound=noise,
        wrap_probability=wrap_probability,
        tail=tail + f", union over d = {dimension}",
    )


def to_modular(x: npt.ArrayLike, bits: int) -> npt.NDArray[np.uint64]:
    """Integers to Z_{2^bits} (two's complement, reduced)."""
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in [1, 64], got {bits}")
    u = np.asarray(x, dtype=np.int64).view(np.uint64)
    if bits == MAX_BITS:
        return u.copy()
    return u & np.uint64((1 << bits) - 1)


def from_modular(u: npt.ArrayLike, bits: int) -> npt.NDArray[np.int64]:
    """An element of Z_{2^bits} (possibly unreduced, as a sum in Z_{2^64}) read in the
    centred range [−2^(bits−1), 2^(bits−1))."""
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in [1, 64], got {bits}")
    v = np.asarray(u, dtype=np.uint64)
    shift = MAX_BITS - bits
    # Move bit b−1 to the sign bit, then shift back arithmetically (sign extension).
    return np.asarray((v << np.uint64(shift)).view(np.int64) >> np.int64(shift), dtype=np.int64)
