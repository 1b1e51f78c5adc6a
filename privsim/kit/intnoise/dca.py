"""Integer noise in a DCA round (Heikkilä et al. 2017, Algorithm 1, in Z_{2^b}).

:class:`IntegerSetup` is the public plan of the integer mechanism for one secure sum:
the noise kind and its per-client parameter (calibrated for N − T − 1 honest clients),
its accounting, and the modulus 2^b. :class:`IntegerClientInputs` computes each
client's messages: clip, scale and conditionally round z_i to x̃_i, add the integer
noise share, reduce mod 2^b and split into M additive shares mod 2^b. A client's draws
come from one generator seeded by its own words of the ``noise`` keystream, so any
chunk of clients gives the same messages (per-message and batched delivery agree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.intnoise.accounting import IntegerAccount
from privsim.kit.intnoise.modulus import ModulusPlan, to_modular
from privsim.kit.intnoise.noise import IntegerNoise
from privsim.kit.intnoise.rounding import randomised_round, scale_and_round
from privsim.kit.intnoise.samplers import sample_discrete_gaussian, sample_skellam
from privsim.kit.securesum.inputs import ClientInputs, ClientMessages

__all__ = ["IntegerClientInputs", "IntegerSetup", "client_generator"]


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegerSetup:
    """The integer mechanism of one secure sum: ``mechanism`` (kind, scale s, β),
    the per-client ``parameter`` (σ_i, or the Poisson mean μ_i for Skellam),
    ``account`` (its (ε, δ) for N − T − 1 honest shares), the ``modulus`` plan and the
    ``bits`` used (at least the plan's), and the inputs' clipping bound ``clip``."""

    mechanism: IntegerNoise
    parameter: float
    account: IntegerAccount
    modulus: ModulusPlan
    bits: int
    clip: float

    @property
    def client_std(self) -> float:
        """One client's noise standard deviation in units of the input (σ_i/s, or
        sqrt(2μ_i)/s)."""
        var = (
            self.parameter**2 if self.mechanism.kind == "discrete_gaussian" else 2 * self.parameter
        )
        return math.sqrt(var) / self.mechanism.scale


def client_generator(words: npt.NDArray[np.uint64]) -> np.random.Generator:
    """A client's generator, seeded by its own keystream words."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(w) for w in words])))


#: The largest magnitude of a malicious client's scaled coordinate before reduction.
UNCLIPPED_LIMIT = float(2**62)


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegerClientInputs(ClientInputs):
    """:class:`~privsim.kit.securesum.inputs.ClientInputs` with integer noise mod 2^b;
    ``unclipped``: the rows (client indices) of malicious clients, who skip the clipping
    and the conditional rounding and send round(s·z_i) as it is (each coordinate held
    to ±2^62 before the reduction mod 2^b wraps it)."""

    setup: IntegerSetup
    unclipped: frozenset[int] = frozenset()

    def messages(self, clients: npt.ArrayLike) -> ClientMessages:
        """x̃_i = round(s·clip(z_i)), x_i = x̃_i + ν_i mod 2^b, and its M additive shares
        (full, or seed-compressed: ``share_mode``); ``eta`` holds ν_i/s, ``z`` the real z_i."""
        idx = np.atleast_1d(np.asarray(clients, dtype=np.int64))
        z, eta, x = self.encoded(idx)
        # Additive shares in Z_{2^64} (full or seed-compressed) sum to x mod 2^64, hence
        # to x mod 2^b; full shares are also reduced mod 2^b, as the protocol sends them.
        shares, seeds = self.split(idx, x)
        if seeds is None and self.setup.bits < 64:
            shares &= np.uint64((1 << self.setup.bits) - 1)
        return ClientMessages(clients=idx, z=z, eta=eta, shares=shares, seeds=seeds)

    def encoded(
        self, idx: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.uint64]]:
        """The real z_i, the noise ν_i/s and x_i = round(s·clip(z_i)) + ν_i mod 2^b."""
        d = self.data.dimension
        setup = self.setup
        mech, bits = setup.mechanism, setup.bits
        z = self.data.rows(idx)
        draws = self.noise.words(idx, 0, 4)
        values = np.empty((idx.size, d), dtype=np.int64)
        noise = np.empty((idx.size, d), dtype=np.int64)
        for row in range(idx.size):
            rng = client_generator(draws[row])
            if int(idx[row]) in self.unclipped:
                raw = np.clip(z[row] * mech.scale, -UNCLIPPED_LIMIT, UNCLIPPED_LIMIT)
                values[row] = randomised_round(raw, rng)
            else:
                values[row] = scale_and_round(z[row], setup.clip, mech.scale, mech.beta, rng)
            if mech.kind == "discrete_gaussian":
                noise[row] = sample_discrete_gaussian(rng, setup.parameter, d)
            else:
                noise[row] = sample_skellam(rng, setup.parameter, d)
        x = to_modular(values + noise, bits)
        return z, noise / mech.scale, x
