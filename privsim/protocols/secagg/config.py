"""The ``[secagg]`` table: parameters of a SecAgg / SecAgg+ round and of its inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from privsim.scenarios.errors import FieldError, require_positive

__all__ = ["SecAggConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SecAggConfig:
    """SecAgg (Bonawitz et al. 2017) and SecAgg+ (Bell et al. 2020) parameters.

    Inputs: each client's synthetic vector (``mean`` + ``scale``·u, u standard normal
    or unit-variance uniform, clipped to L2 norm ``clip_norm``), scaled by
    2^``fraction_bits`` and rounded to integers, summed mod 2^``modulus_bits``.

    Threshold: ``threshold`` is t, the number of shares that reconstruct a secret
    (0: Bonawitz's choice ⌊2N/3⌋ + 1 for SecAgg; the Bell et al. choice for SecAgg+).
    A larger t resists more colluding clients and tolerates fewer dropouts.

    SecAgg+ graph: ``degree`` k of the Harary graph (0: chosen from
    ``target_dropout`` δ, ``target_corruption`` γ, ``security_bits`` σ and
    ``correctness_bits`` η, see :mod:`privsim.kit.secagg.graph`).

    Noise: ``noise = "none"`` releases the exact sum (not differentially private);
    ``"discrete_gaussian"`` / ``"skellam"`` add integer noise in shares from each
    client, scaled for N − T − 1 honest clients with T = ``tolerated``: calibrated by the
    papers' bounds to the budget, or fixed by the user with ``noise_multiplier`` z (the
    noise of N − T − 1 shares has standard deviation z·``clip_norm``, as in Flower's and
    TensorFlow Federated's fixed-noise DP aggregators); the ledger then reports the ε it
    achieves and refuses a plan over the budget unless ``privacy.on_overspend`` allows.

    ``round_timeout``: simulated seconds the server waits for each round's messages.
    ``delivery``: clients as processes or as a batched population.
    """

    dimension: int = 10
    """d, the length of each client's vector."""
    clip_norm: float = 1.0
    """Each client clips its vector to this L2 norm."""
    mean: float = 0.0
    """The mean of every coordinate before clipping."""
    scale: float = 1.0
    """The standard deviation of every coordinate before clipping."""
    distribution: Literal["gaussian", "uniform"] = "gaussian"
    """The law of each coordinate's u: ``gaussian`` or ``uniform`` (unit variance)."""
    fraction_bits: int = 16
    """Inputs are scaled by 2^fraction_bits and rounded to integers."""
    modulus_bits: int = 32
    """b: the sum is computed mod 2^b."""
    threshold: int = 0
    """t, the shares that reconstruct a secret (0: ⌊2N/3⌋ + 1 for SecAgg, the Bell et al. choice
    for SecAgg+)."""
    degree: int = 0
    """SecAgg+: k, the degree of the Harary graph (0: chosen from the targets below)."""
    target_dropout: float = 0.1
    """SecAgg+: δ, the dropout rate the graph and threshold are chosen for."""
    target_corruption: float = 0.1
    """SecAgg+: γ, the corrupted fraction the graph and threshold are chosen for."""
    security_bits: int = 40
    """SecAgg+: σ, the security parameter of the graph's choice."""
    correctness_bits: int = 20
    """SecAgg+: η, the correctness parameter of the graph's choice."""
    noise: Literal["none", "discrete_gaussian", "skellam"] = "none"
    """``none`` (the exact sum, not private), ``discrete_gaussian`` or ``skellam`` (integer noise
    shares from each client)."""
    tolerated: int = 0
    """T: the noise is scaled for N − T − 1 honest clients."""
    noise_multiplier: float | None = None
    """z: fixes the noise instead of calibrating it (N − T − 1 shares of total standard deviation
    z·``clip_norm``; unset: calibrated to the budget)."""
    round_timeout: float = 1.0
    """Simulated seconds the server waits for each round's messages."""
    delivery: Literal["auto", "per_client", "batched"] = "auto"
    """How the clients run: ``per_client`` (a process each), ``batched`` (a population the
    server drives: the same messages, times and release, for 10^5–10^6 clients; not with
    ``network.encryption = "aes-gcm"`` or a colluding server or client) or ``auto``
    (batched from 20,000 clients when it can be)."""

    def __post_init__(self) -> None:
        if self.dimension < 1:
            raise FieldError(
                "secagg.dimension", f"must be >= 1, got {self.dimension}", "set dimension >= 1"
            )
        require_positive("secagg.clip_norm", self.clip_norm)
        if not self.scale >= 0 or not abs(self.mean) < 1e100 or not self.scale < 1e100:
            raise FieldError(
                "secagg.scale",
                f"mean and scale must be finite and scale >= 0, got {self.mean}, {self.scale}",
                "give a finite mean and a non-negative scale",
            )
        if not 0 <= self.fraction_bits <= 40:
            raise FieldError(
                "secagg.fraction_bits",
                f"must be in [0, 40], got {self.fraction_bits}",
                "use e.g. fraction_bits = 16",
            )
        if not 8 <= self.modulus_bits <= 64:
            raise FieldError(
                "secagg.modulus_bits",
                f"must be in [8, 64], got {self.modulus_bits}",
                "use e.g. modulus_bits = 32 (the sum is computed mod 2^modulus_bits)",
            )
        if self.threshold < 0:
            raise FieldError(
                "secagg.threshold",
                f"must be >= 0, got {self.threshold}",
                "give t >= 2, or 0 for the paper's choice",
            )
        if self.degree < 0 or self.degree % 2:
            raise FieldError(
                "secagg.degree",
                f"must be an even number >= 0, got {self.degree}",
                "give an even k (a Harary graph has k/2 neighbours on each side), or 0",
            )
        for name in ("target_dropout", "target_corruption"):
            value = getattr(self, name)
            if not 0.0 <= value < 0.5:
                raise FieldError(
                    f"secagg.{name}",
                    f"must be a fraction in [0, 0.5), got {value}",
                    "give e.g. 0.1",
                )
        if self.target_dropout + self.target_corruption >= 0.5:
            raise FieldError(
                "secagg.target_dropout",
                f"δ + γ = {self.target_dropout + self.target_corruption:g} must stay below "
                "1/2 (Bell et al.: γ + 2δ < 1 and an honest majority among neighbours)",
                "lower target_dropout or target_corruption",
            )
        for name in ("security_bits", "correctness_bits"):
            value = getattr(self, name)
            if not 1 <= value <= 128:
                raise FieldError(
                    f"secagg.{name}", f"must be in [1, 128], got {value}", "use e.g. 40"
                )
        if self.tolerated < 0:
            raise FieldError(
                "secagg.tolerated", f"must be >= 0, got {self.tolerated}", "give T >= 0"
            )
        if self.noise_multiplier is not None and self.noise == "none":
            raise FieldError(
                "secagg.noise_multiplier",
                f"{self.noise_multiplier} with noise = 'none': a fixed noise multiplier "
                "needs integer noise",
                "set secagg.noise = 'discrete_gaussian' or 'skellam', or leave "
                "noise_multiplier out",
            )
        if self.noise_multiplier is not None and not 0 < self.noise_multiplier < 1e6:
            raise FieldError(
                "secagg.noise_multiplier",
                f"must be in (0, 1e6), got {self.noise_multiplier}",
                "give a multiplier such as 1.0, or leave noise_multiplier out (noise "
                "calibrated to the budget)",
            )
        require_positive("secagg.round_timeout", self.round_timeout, " seconds")
