"""The server's step from the round's averaged noisy update Δ̄ (Reddi et al. 2021,
"Adaptive federated optimization", Algorithm 2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from privsim.protocols.fedlearn.config import TrainingConfig

__all__ = ["ServerOptimizer"]

F64 = npt.NDArray[np.float64]


@dataclass(slots=True)
class ServerOptimizer:
    """FedAvg: w ← w + η·Δ̄. FedAdam, on the pseudo-gradient −Δ̄:
    m ← β₁m + (1 − β₁)Δ̄, v ← β₂v + (1 − β₂)Δ̄², w ← w + η·m/(√v + τ)."""

    training: TrainingConfig
    size: int
    m: F64 = field(init=False)
    v: F64 = field(init=False)

    def __post_init__(self) -> None:
        self.m = np.zeros(self.size)
        self.v = np.zeros(self.size)

    def step(self, params: F64, delta: F64) -> F64:
        """The new parameters after applying the averaged update ``delta``."""
        t = self.training
        if t.server_optimizer == "fedavg":
            return params + t.server_lr * delta
        self.m = t.adam_beta1 * self.m + (1.0 - t.adam_beta1) * delta
        self.v = t.adam_beta2 * self.v + (1.0 - t.adam_beta2) * delta * delta
        return params + t.server_lr * self.m / (np.sqrt(self.v) + t.adam_tau)
