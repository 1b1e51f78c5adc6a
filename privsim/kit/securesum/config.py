"""The ``[dca]`` table: parameters of a DCA secure-sum round, shared by every protocol
that sums through DCA."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from privsim.scenarios.errors import FieldError, require_positive

__all__ = ["DcaConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DcaConfig:
    """DCA parameters: ``tolerated`` is T of Theorem 1 (dropped-or-colluding clients the
    noise is scaled for); timeouts in simulated seconds; ``on_excess_dropout`` says
    what to do when more than T clients are missing. ``delivery`` chooses how client
    shares travel: ``per_message`` (one event per share), ``batched`` (one event per
    node, identical results, for large N) or ``auto`` (batched from 100 clients)."""

    tolerated: int = 0
    fraction_bits: int = 32
    share_timeout: float = 1.0
    agreement_timeout: float = 0.5
    sum_timeout: float = 0.5
    on_excess_dropout: Literal["abort", "release"] = "abort"
    delivery: Literal["auto", "per_message", "batched"] = "auto"

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
