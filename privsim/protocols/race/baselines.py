"""Function-release baselines for private kernel density at low dimension (the paper's §5.1),
for the same function RACE estimates: f(q) = N⁻¹ Σ k(x_i, q) with k the LSH kernel.

Data are mapped into [0, 1]^d by the public box ``low``–``high``.

- :class:`BernsteinRelease` (Aldà & Rubinstein 2017): f is evaluated on the lattice
  {v/M : v ∈ {0..M}^d}; one record moves each lattice value by at most 1/N (the kernel is
  in [0, 1]), so the (M+1)^d values have L1 sensitivity (M+1)^d/N (add/remove) and get
  Laplace noise of that scale over ε. A query is the Bernstein polynomial
  Σ_v f̃(v/M) Π_j C(M, v_j) q_j^{v_j} (1 − q_j)^{M − v_j}.
- :class:`FourierRelease` (spectral approximation, Wang et al. 2016): on the torus,
  f(q) = Σ_k κ̂(k) φ̂_k e^{2πi k·q} with φ̂_k = N⁻¹ Σ_i e^{−2πi k·x_i} the empirical
  characteristic function and κ̂ the kernel's Fourier transform (computed by FFT of the
  kernel on a grid). The series is cut at |k_j| ≤ K; the real and imaginary parts of the
  (2K+1)^d coefficients each move by at most 1/N when a record is added or removed:
  L1 sensitivity 2(2K+1)^d/N, Laplace noise of that scale over ε on each part.

Both cost O(N·(lattice or coefficients)) to build — the reason the paper found them slow —
which here is one vectorised pass over the data per block of lattice points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import comb

from privsim.protocols.race.lsh import LshFamily

__all__ = ["BernsteinRelease", "FourierRelease"]

F64 = npt.NDArray[np.float64]


def _unit(x: F64, low: F64, high: F64) -> F64:
    return np.clip((np.asarray(x, dtype=np.float64) - low) / (high - low), 0.0, 1.0)


@dataclass
class BernsteinRelease:
    values: F64  # (M+1)^d noisy lattice values, C order
    degree: int
    low: F64
    high: F64

    @classmethod
    def build(
        cls,
        x: F64,
        family: LshFamily,
        degree: int,
        low: F64,
        high: F64,
        epsilon: float | None,
        rng: np.random.Generator,
        block: int = 256,
    ) -> BernsteinRelease:
        d = x.shape[1]
        axis = np.linspace(0.0, 1.0, degree + 1)
        grid = np.stack(np.meshgrid(*([axis] * d), indexing="ij"), axis=-1).reshape(-1, d)
        lattice = low + grid * (high - low)
        values = np.zeros(lattice.shape[0])
        for lo in range(0, lattice.shape[0], block):
            part = lattice[lo : lo + block]
            for start in range(0, x.shape[0], 50_000):
                values[lo : lo + block] += family.kernel(x[start : start + 50_000], part).sum(
                    axis=0
                )
        values /= x.shape[0]
        exact = cls(values=values, degree=degree, low=low, high=high)
        return exact if epsilon is None else exact.private(x.shape[0], epsilon, rng)

    def private(self, n: int, epsilon: float, rng: np.random.Generator) -> BernsteinRelease:
        """The ε-DP release of these (exact) lattice values of an n-record data set."""
        scale = self.values.size / (n * epsilon)
        noisy = self.values + rng.laplace(0.0, scale, self.values.size)
        return BernsteinRelease(values=noisy, degree=self.degree, low=self.low, high=self.high)

    def query(self, q: F64) -> F64:
        u = _unit(q, self.low, self.high)
        m, d = self.degree, u.shape[1]
        v = np.arange(m + 1)
        coef = comb(m, v)
        # per-dimension basis (n, d, M+1)
        basis = coef * u[:, :, None] ** v * (1.0 - u[:, :, None]) ** (m - v)
        tensor = self.values.reshape((m + 1,) * d)
        out = tensor
        # contract dimension by dimension, batched over queries
        out = np.einsum("nj,j...->n...", basis[:, 0], tensor)
        for j in range(1, d):
            out = np.einsum("nj,nj...->n...", basis[:, j], out)
        return np.asarray(out, dtype=np.float64)


@dataclass
class FourierRelease:
    characteristic: npt.NDArray[np.complex128]  # (2K+1)^d: φ̂_k (noisy once released)
    spectrum: npt.NDArray[np.complex128]  # κ̂(k)
    cutoff: int
    low: F64
    high: F64

    @classmethod
    def build(
        cls,
        x: F64,
        family: LshFamily,
        cutoff: int,
        low: F64,
        high: F64,
        epsilon: float | None,
        rng: np.random.Generator,
        grid: int = 64,
    ) -> FourierRelease:
        d = x.shape[1]
        k = np.arange(-cutoff, cutoff + 1)
        u = _unit(x, low, high)
        # empirical characteristic function, separable over dimensions, in chunks
        phi = np.zeros((k.size,) * d, dtype=np.complex128)
        for start in range(0, u.shape[0], 20_000):
            e = np.exp(-2j * math.pi * u[start : start + 20_000, :, None] * k)  # (n, d, 2K+1)
            part = e[:, 0]
            for j in range(1, d):
                part = part[..., None] * e[:, j].reshape((-1,) + (1,) * j + (k.size,))
            phi += part.sum(axis=0)
        phi /= u.shape[0]
        # κ̂(k): FFT of the kernel κ(u) = k(0, u) sampled on the periodic grid (unit box)
        offsets = (np.arange(grid) / grid + 0.5) % 1.0 - 0.5  # in [−1/2, 1/2)
        cell = np.stack(np.meshgrid(*([offsets] * d), indexing="ij"), axis=-1).reshape(-1, d)
        kernel = family.kernel(np.zeros((1, d)), cell * (high - low))[0].reshape((grid,) * d)
        spectrum = np.fft.fftn(kernel) / kernel.size
        idx = np.ix_(*([np.mod(k, grid)] * d))
        exact = cls(characteristic=phi, spectrum=spectrum[idx], cutoff=cutoff, low=low, high=high)
        return exact if epsilon is None else exact.private(u.shape[0], epsilon, rng)

    def private(self, n: int, epsilon: float, rng: np.random.Generator) -> FourierRelease:
        """The ε-DP release of this (exact) characteristic function of n records."""
        phi = self.characteristic
        scale = 2.0 * phi.size / (n * epsilon)
        noisy = phi + rng.laplace(0.0, scale, phi.shape) + 1j * rng.laplace(0.0, scale, phi.shape)
        return FourierRelease(
            characteristic=noisy,
            spectrum=self.spectrum,
            cutoff=self.cutoff,
            low=self.low,
            high=self.high,
        )

    def query(self, q: F64) -> F64:
        u = _unit(q, self.low, self.high)
        k = np.arange(-self.cutoff, self.cutoff + 1)
        e = np.exp(2j * math.pi * u[:, :, None] * k)  # (m, d, 2K+1)
        out = np.einsum("nk,k...->n...", e[:, 0], self.spectrum * self.characteristic)
        for j in range(1, u.shape[1]):
            out = np.einsum("nk,nk...->n...", e[:, j], out)
        return np.asarray(out.real, dtype=np.float64)
