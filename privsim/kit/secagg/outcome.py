"""What a SecAgg round hands back: the released sum over U3, or an abort with a reason."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["AbortReason", "Outcome", "Stage"]


class Stage(enum.IntEnum):
    """The four rounds of Bonawitz et al. (2017), Figure 4 (honest-but-curious)."""

    ADVERTISE_KEYS = 0
    SHARE_KEYS = 1
    MASKED_INPUT = 2
    UNMASKING = 3


class AbortReason(enum.StrEnum):
    """Why the server stopped: fewer than t live parties after a round (per client's
    neighbourhood in SecAgg+), or a secret that could not be reconstructed."""

    TOO_FEW_KEYS = "too_few_keys"  # after AdvertiseKeys: |U1| < t
    TOO_FEW_SHARES = "too_few_shares"  # after ShareKeys: |U2| < t
    TOO_FEW_MASKED_INPUTS = "too_few_masked_inputs"  # after MaskedInputCollection: |U3| < t
    TOO_FEW_UNMASKING_SHARES = "too_few_unmasking_shares"  # after Unmasking: |U5| < t
    SERVER_CRASHED = "server_crashed"


#: The abort reason of each round's threshold check.
STAGE_ABORT = {
    Stage.ADVERTISE_KEYS: AbortReason.TOO_FEW_KEYS,
    Stage.SHARE_KEYS: AbortReason.TOO_FEW_SHARES,
    Stage.MASKED_INPUT: AbortReason.TOO_FEW_MASKED_INPUTS,
    Stage.UNMASKING: AbortReason.TOO_FEW_UNMASKING_SHARES,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """The server's result. ``released``: Σ_{u ∈ U3} x_u decoded (None on an abort);
    ``survivors``: the live sets U1, U2, U3, U5 (client indices) as far as the round
    got; ``closed_at``: when the server closed each round (simulated seconds);
    the self-mask seeds b_u and mask keys s_v^SK the server reconstructed;
    ``isolated``: the client an active server isolated (:mod:`.isolation`; its
    ``route``), whose input it opened with only the colluders' beside it (U3 as
    reported is those clients)."""

    released: npt.NDArray[np.float64] | None
    survivors: tuple[npt.NDArray[np.int64], ...] = ()
    closed_at: tuple[float, ...] = ()
    abort: AbortReason | None = None
    detail: str = ""
    seeds_reconstructed: int = 0
    keys_reconstructed: int = 0
    isolated: int | None = None
    route: str = ""

    @property
    def ok(self) -> bool:
        return self.abort is None

    @property
    def included(self) -> npt.NDArray[np.int64] | None:
        """U3, the clients whose inputs are in the sum (None on an abort)."""
        return self.survivors[2] if self.ok and len(self.survivors) > 2 else None
