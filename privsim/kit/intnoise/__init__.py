"""Integer noise for sums in modular arithmetic (secure aggregation): the distributed
discrete Gaussian (Kairouz, Liu & Steinke, ICML 2021) and the Skellam mechanism
(Agarwal, Kairouz & Liu, NeurIPS 2021), with samplers, per-client shares scaled for
N − T − 1 honest clients, their privacy accounting, input scaling and rounding, and a
modulus planner. Pure functions of arrays and a ``numpy.random.Generator``; no SimPy.

A secure-sum protocol calls, in order: :func:`integer_sensitivity` (clip c, scale s,
dimension, β), :func:`calibrate` (the per-client parameter for a target (ε, δ) and
N − T − 1 honest clients), :func:`plan_modulus` (the bits; or :func:`plan_scale`, the finest scale for a
given bit width), then per client
:func:`scale_and_round` and :func:`client_noise` (or the samplers with the calibrated
parameter), :func:`to_modular` before masking and :func:`from_modular` after
unmasking; :func:`account` gives the (ε, δ), its ledger event and the noise shares to
charge with it (:meth:`IntegerAccount.noise_shares`: the ledger re-evaluates the bound,
in :mod:`privsim.sim.integer_bounds`, at the honest shares that reach the release). DCA's use is in
:mod:`privsim.kit.intnoise.dca` (imported separately: it depends on the DCA kit).
"""

from __future__ import annotations

from privsim.kit.intnoise.accounting import (
    IntegerAccount,
    account,
    calibrate,
    epsilon,
    equivalent_gaussian,
)
from privsim.kit.intnoise.modulus import (
    ModulusPlan,
    ModulusTooSmallError,
    from_modular,
    plan_modulus,
    to_modular,
)
from privsim.kit.intnoise.noise import (
    DEFAULT_BETA,
    IntegerNoise,
    NoiseKind,
    client_noise,
    client_parameter,
    share_variance,
)
from privsim.kit.intnoise.rounding import Sensitivity, integer_sensitivity, scale_and_round
from privsim.kit.intnoise.samplers import (
    discrete_gaussian_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_skellam,
    skellam_pmf,
)
from privsim.kit.intnoise.scale import ScalePlan, plan_scale

__all__ = [
    "DEFAULT_BETA",
    "IntegerAccount",
    "IntegerNoise",
    "ModulusPlan",
    "ModulusTooSmallError",
    "NoiseKind",
    "ScalePlan",
    "Sensitivity",
    "account",
    "calibrate",
    "client_noise",
    "client_parameter",
    "discrete_gaussian_pmf",
    "epsilon",
    "equivalent_gaussian",
    "from_modular",
    "integer_sensitivity",
    "plan_modulus",
    "plan_scale",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_skellam",
    "scale_and_round",
    "share_variance",
    "skellam_pmf",
    "to_modular",
]
