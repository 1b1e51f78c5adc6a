"""The ``[dca]`` table: parameters of a DCA secure-sum round, shared by every protocol
that sums through DCA."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from privsim.kit.intnoise.noise import DEFAULT_BETA
from privsim.scenarios.errors import FieldError, require_positive

__all__ = ["DEFAULT_WRAP_PROBABILITY", "DcaConfig"]

#: Default bound on the probability that any coordinate of an integer sum wraps around.
DEFAULT_WRAP_PROBABILITY = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class DcaConfig:
    """DCA parameters: ``tolerated`` is T of Theorem 1 (dropped-or-colluding clients the
    noise is scaled for); timeouts in simulated seconds; ``on_excess_dropout`` says
    what to do when more than T clients are missing. ``delivery`` chooses how client
    shares travel: ``per_message`` (one event per share), ``batched`` (one event per
    node, identical results, for large N) or ``auto`` (batched from 100 clients).

    ``noise`` chooses the noise clients add: ``gaussian`` (continuous, in fixed point
    mod 2^64) or integer noise in arithmetic mod 2^b, ``discrete_gaussian`` (Kairouz,
    Liu & Steinke 2021) or ``skellam`` (Agarwal, Kairouz & Liu 2021), on inputs scaled
    by 2^fraction_bits and randomly rounded (``rounding_beta``: the β of conditional
    rounding, default e^{−1/2}). ``modulus_bits`` unset takes the planner's b (the
    smallest for which any coordinate wraps with probability below
    ``wrap_probability``, default 1e−9); a larger b is allowed, a smaller one refused.
    Unset, these fields stay out of the scenario's plain form, so scenarios without
    integer noise read and write as before.

    ``false_claims`` = D makes the compute nodes in the coalition (``threat.
    colluding_servers``) active adversaries: in the agreement step (§3.1.3) each claims
    that the first D honest clients whose shares it holds sent nothing, and since the
    nodes sum over the intersection of their received sets, those clients are left out
    of the release with their noise. The paper's guarantee assumes honest-but-curious
    nodes; the ledger counts the honest shares actually included, so the achieved ε
    shows what the claim costs."""

    tolerated: int = 0
    """T of Theorem 1: the dropped-or-colluding clients the noise is scaled for (each client adds
    σ²/(N − T − 1))."""
    fraction_bits: int = 32
    """Fixed-point fraction bits (1 to 52): inputs are scaled by 2^fraction_bits before sharing."""
    share_timeout: float = 1.0
    """Simulated seconds the compute nodes wait for the clients' shares."""
    agreement_timeout: float = 0.5
    """Simulated seconds the compute nodes wait for each other's sets of received clients
    (§3.1.3)."""
    sum_timeout: float = 0.5
    """Simulated seconds the output party waits for the compute nodes' sums."""
    on_excess_dropout: Literal["abort", "release"] = "abort"
    """More than T clients missing: ``abort`` (release nothing) or ``release`` (release and report
    the weaker guarantee)."""
    delivery: Literal["auto", "per_message", "batched"] = "auto"
    """How client shares travel: ``per_message`` (one event per share), ``batched`` (one event per
    node, identical results) or ``auto`` (batched from 100 clients)."""
    noise: Literal["gaussian", "discrete_gaussian", "skellam"] | None = None
    """The clients' noise: ``gaussian`` (continuous, fixed point mod 2^64; the default when
    unset), ``discrete_gaussian`` or ``skellam`` (integer noise mod 2^b)."""
    modulus_bits: int | None = None
    """b of integer noise's arithmetic mod 2^b (unset: the planner's smallest safe b; a smaller b
    is refused)."""
    wrap_probability: float | None = None
    """Integer noise: the largest accepted probability that any coordinate of the sum wraps around
    (unset: 1e-9)."""
    rounding_beta: float | None = None
    """Integer noise: β of conditional randomised rounding (unset: e^(−1/2))."""
    shares: Literal["full", "seeded", "shamir"] | None = None
    """Share mode: ``full`` (M additive shares of d words; the default when unset), ``seeded`` (M
    − 1 shares as 32-byte seeds and one correction) or ``shamir`` (``threshold``-of-M shares
    mod 2^61 − 1)."""
    threshold: int | None = None
    """t of Shamir shares (2 ≤ t ≤ M): the compute nodes whose sums reconstruct the total; only
    with ``shares = "shamir"``."""
    false_claims: int | None = None
    """D: each colluding compute node falsely claims the first D honest clients' shares never
    arrived (an active adversary; unset: none)."""

    def __post_init__(self) -> None:
        if self.tolerated < 0:
            raise FieldError("dca.tolerated", f"must be >= 0, got {self.tolerated}", "give T >= 0")
        if not 1 <= self.fraction_bits <= 52:
            raise FieldError(
                "dca.fraction_bits",
                f"must be in [1, 52], got {self.fraction_bits}",
                "use e.g. fraction_bits = 32",
            )
        for name in ("share_timeout", "agreement_timeout", "sum_timeout"):
            require_positive(f"dca.{name}", getattr(self, name), " seconds")
        self._check_integer_noise()
        self._check_shares()
        if self.false_claims is not None and self.false_claims < 0:
            raise FieldError(
                "dca.false_claims",
                f"must be >= 0, got {self.false_claims}",
                "set the number of honest clients a colluding compute node claims sent nothing",
            )

    @property
    def noise_kind(self) -> str:
        """``noise`` resolved: ``gaussian`` when unset."""
        return self.noise or "gaussian"

    @property
    def wrap_bound(self) -> float:
        """``wrap_probability`` resolved (default 1e−9)."""
        return DEFAULT_WRAP_PROBABILITY if self.wrap_probability is None else self.wrap_probability

    @property
    def beta(self) -> float:
        """``rounding_beta`` resolved (default e^{−1/2}, as in the papers)."""
        return DEFAULT_BETA if self.rounding_beta is None else self.rounding_beta

    def _check_integer_noise(self) -> None:
        if self.noise not in (None, "gaussian", "discrete_gaussian", "skellam"):
            raise FieldError(
                "dca.noise",
                f"unknown noise {self.noise!r}",
                "use 'gaussian', 'discrete_gaussian' or 'skellam'",
            )
        if self.modulus_bits is not None and not 2 <= self.modulus_bits <= 64:
            raise FieldError(
                "dca.modulus_bits",
                f"must be in [2, 64], got {self.modulus_bits}",
                "leave it out for the planner's choice",
            )
        if self.noise_kind == "gaussian" and self.modulus_bits not in (None, 64):
            raise FieldError(
                "dca.modulus_bits",
                f"{self.modulus_bits} bits with continuous Gaussian noise, which is summed in "
                "fixed point mod 2^64",
                "set dca.noise = 'discrete_gaussian' or 'skellam', or drop modulus_bits",
            )
        if not 0 < self.wrap_bound < 1:
            raise FieldError(
                "dca.wrap_probability",
                f"must be in (0, 1), got {self.wrap_probability}",
                "use e.g. wrap_probability = 1e-9",
            )
        if not 0 <= self.beta < 1:
            raise FieldError(
                "dca.rounding_beta",
                f"must be in [0, 1), got {self.rounding_beta}",
                "use e.g. exp(-0.5) = 0.6065 (the papers' choice) or 0 for plain rounding",
            )

    @property
    def share_mode(self) -> str:
        """``shares`` resolved: ``full`` when unset (left out of the plain form, so
        existing scenarios and results read and write as before)."""
        return self.shares or "full"

    def _check_shares(self) -> None:
        """``shares``: ``full`` (M additive shares of d words each, Algorithm 1),
        ``seeded`` (M − 1 shares as 32-byte PRG seeds, one explicit correction vector:
        same sum, about d·8 + 32(M − 1) bytes per client) or ``shamir`` (Shamir
        ``threshold``-of-M shares mod 2^61 − 1: the sum survives the loss of M − t compute
        nodes, and t colluding nodes see every input)."""
        if self.shares not in (None, "full", "seeded", "shamir"):
            raise FieldError(
                "dca.shares",
                f"unknown share mode {self.shares!r}",
                "use 'full', 'seeded' or 'shamir'",
            )
        if self.share_mode == "shamir":
            if self.threshold is None or self.threshold < 2:
                raise FieldError(
                    "dca.threshold",
                    f"Shamir shares need a threshold t >= 2, got {self.threshold}",
                    "set dca.threshold to the number of compute nodes that must answer, 2 <= t <= M",
                )
        elif self.threshold not in (None, 0):  # 0: unset (a study's cases set every field)
            raise FieldError(
                "dca.threshold",
                f"a threshold ({self.threshold}) only applies to dca.shares = 'shamir'",
                "set dca.shares = 'shamir' or drop dca.threshold",
            )
        if self.share_mode == "shamir" and self.noise_kind != "gaussian":
            raise FieldError(
                "dca.shares",
                f"'{self.shares}' shares with {self.noise_kind} noise (integer noise is "
                "summed mod 2^b with additive shares, not in Shamir's prime field)",
                "use dca.shares = 'full' or 'seeded' with integer noise",
            )
