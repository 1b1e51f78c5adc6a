"""The ``[data]`` table of the secure-sum protocols: each client's synthetic vector."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from privsim.scenarios.errors import FieldError, require_positive

__all__ = ["DataConfig"]


#: Largest |mean|, scale or clip_norm accepted (see ``DataConfig``).
VALUE_LIMIT = 1e100


@dataclass(frozen=True, slots=True, kw_only=True)
class DataConfig:
    """Each client's d-dimensional vector z_i. ``synthetic``: coordinates mean + scale·u
    with u standard normal (``distribution = "gaussian"``) or uniform with unit variance
    (``"uniform"``, cheaper at scale), then clipped by the client to L2 norm ``clip_norm``."""

    source: Literal["synthetic"] = "synthetic"
    """Where the clients' vectors come from; ``synthetic`` is the only source."""
    distribution: Literal["gaussian", "uniform"] = "gaussian"
    """The law of each coordinate's u: ``gaussian`` (standard normal) or ``uniform`` (unit
    variance, cheaper at scale)."""
    dimension: int = 10
    """d, the length of each client's vector."""
    clip_norm: float = 1.0
    """C: each client clips its vector to this L2 norm, which sets the sensitivity."""
    mean: float = 0.0
    """The mean of every coordinate before clipping."""
    scale: float = 1.0
    """The standard deviation of every coordinate before clipping."""

    def __post_init__(self) -> None:
        if self.dimension < 1:
            raise FieldError(
                "data.dimension", f"must be >= 1, got {self.dimension}", "set dimension >= 1"
            )
        require_positive("data.clip_norm", self.clip_norm)
        if not self.scale >= 0:
            raise FieldError(
                "data.scale", f"must be >= 0, got {self.scale}", "give a non-negative scale"
            )
        # Each client clips its vector to clip_norm: beyond VALUE_LIMIT the norm overflows
        # a float and the clipped vector (and every error relative to it) is garbage.
        if self.clip_norm < 1 / VALUE_LIMIT:
            raise FieldError(
                "data.clip_norm",
                f"{self.clip_norm!r} is below {1 / VALUE_LIMIT:g}: the noise calibration "
                "loses its precision",
                "give the clipping bound of the clients' vectors, e.g. 1.0",
            )
        for name in ("mean", "scale", "clip_norm"):
            value = getattr(self, name)
            if not abs(value) <= VALUE_LIMIT:
                raise FieldError(
                    f"data.{name}",
                    f"must be finite and at most {VALUE_LIMIT:g} in size, got {value!r}",
                    "give a value of the order of clip_norm (larger values are clipped anyway)",
                )
