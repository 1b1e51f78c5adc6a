"""The integer noise of a SecAgg round: each client's share of a distributed discrete
Gaussian (Kairouz, Liu & Steinke 2021) or Skellam (Agarwal, Kairouz & Liu 2021) noise,
its accounting and the modulus planned for it (:mod:`privsim.kit.intnoise`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.intnoise.accounting import IntegerAccount, account
from privsim.kit.intnoise.modulus import ModulusPlan, plan_modulus
from privsim.kit.intnoise.noise import NoiseKind
from privsim.kit.intnoise.rounding import Sensitivity
from privsim.kit.intnoise.samplers import sample_share

__all__ = ["Noise"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Noise:
    """The integer noise plan: each client's share parameter (σ_i of a discrete
    Gaussian, or μ_i of a Skellam), the N − T − 1 honest shares it is calibrated for,
    the accountant's figures for the release, and the planned modulus (which the caller
    checks against the round's bits: :meth:`~privsim.kit.intnoise.modulus.ModulusPlan.
    check`)."""

    kind: NoiseKind
    parameter: float
    account: IntegerAccount
    modulus: ModulusPlan

    @property
    def honest(self) -> int:
        return self.account.honest_clients

    def sample(self, rng: np.random.Generator, dimension: int) -> npt.NDArray[np.int64]:
        """One client's share of the noise."""
        return sample_share(self.kind, self.parameter, rng, dimension)

    @classmethod
    def of(
        cls,
        kind: NoiseKind,
        parameter: float,
        *,
        clients: int,
        honest: int,
        sensitivity: Sensitivity,
        dimension: int,
        delta: float,
        clip: float,
        scale: float,
        wrap_probability: float,
    ) -> Noise:
        """Shares of ``parameter`` accounted for ``honest`` honest clients
        (:func:`~privsim.kit.intnoise.accounting.account`), with the modulus planned for
        the sum of ``clients`` inputs of L2 norm ≤ ``clip``·``scale`` and their noise
        (:func:`~privsim.kit.intnoise.modulus.plan_modulus`)."""
        return cls(
            kind=kind,
            parameter=parameter,
            account=account(
                kind,
                parameter,
                honest_clients=honest,
                sensitivity=sensitivity,
                dimension=dimension,
                delta=delta,
            ),
            modulus=plan_modulus(
                clients, dimension, clip, scale, parameter, kind, wrap_probability
            ),
        )
