"""Checks of the clients' updates against poisoning (``training.update_check``), and the
honest curator's clip.

Where an update can be checked depends on who sees it:

- ``trusted``: the curator receives every update in the clear and clips it to C
  (:func:`curator_clip`): an unclipped update cannot pass.
- ``local``: each client adds the whole noise before sending; the server sees u_i + η_i
  with ‖η_i‖ ≈ σ√P ≫ C, and clipping that would destroy the signal: unchecked.
- ``secagg``, ``secagg_plus``, ``dca``: the server sees only the sum; an unclipped update
  passes unless the protocol checks it through the secure aggregation:

  * ``norm_bound`` (:func:`norm_bound`): the server bounds the norm of the released sum
    to what k honest clipped updates and the planned noise reach with probability
    1 − :data:`NORM_BOUND_FAILURE`, k·C + σ_Σ·(√P + √(2 ln(1/β))) (the Gaussian
    concentration ‖g‖₂ ≤ √P + t with probability ≥ 1 − e^{−t²/2}), and rescales a sum
    beyond it. Cheap (no cryptography, nothing on the wire) and weak: the noise's own
    norm σ_Σ√P leaves the attackers that much room, and a sum within the bound is
    never touched (the clipping-of-the-aggregate baseline RoFL's §3 finds insufficient).
  * ``range_check`` (:func:`range_check`): each client proves in zero knowledge that every
    coordinate of its quantised input round(s·u_i) lies in [−round(s·C), round(s·C)] (the
    L∞ check of RoFL, Lycklama et al., IEEE S&P 2023, "RoFL: Robustness of Secure
    Federated Learning", built on Bulletproofs range proofs, Bünz et al., IEEE S&P
    2018). The server rejects a client whose proof fails; a rejected client is treated
    as dropped before it masks its input. An honest clipped update passes (|u_ij| ≤
    ‖u_i‖₂ ≤ C); the poisoned updates privsim's attackers send fail as soon as one
    coordinate exceeds C. An adaptive attacker that sends C·sign(u) passes with
    norm C√P: the L∞ check bounds each coordinate, not the update's norm (RoFL's L2
    check is what closes that, at a larger proof). Its cost on the wire is
    :func:`range_proof_bytes` per client per round.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from privsim.protocols.fedlearn.config import TrainingConfig
from privsim.protocols.fedlearn.models import clip_rows

__all__ = [
    "GROUP_ELEMENT_BYTES",
    "NORM_BOUND_FAILURE",
    "admitted",
    "curator_clip",
    "norm_bound",
    "norm_bound_of",
    "range_check",
    "range_proof_bytes",
    "range_value_bits",
    "sum_std",
]

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

#: β of :func:`norm_bound`: the probability that an honest round's sum is rescaled.
NORM_BOUND_FAILURE = 1e-9
#: Bytes of a compressed group element or scalar of Ristretto255 (the curve of the
#: Bulletproofs implementations RoFL builds on).
GROUP_ELEMENT_BYTES = 32
#: A row within C·(1 + this) of the bound is within it (clip_rows leaves ‖u‖ = C up to
#: rounding).
CLIP_SLACK = 1e-9


def curator_clip(total: F64, rows: F64, clip: float) -> F64:
    """What an honest curator releases from the updates it received: each row clipped
    to L2 norm ``clip`` before summing. ``total`` (the sum as received) is returned as it
    is when no row exceeds the bound (every honest round: bit for bit the same); else
    the sum of the clipped rows, in the cohort's order."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.size == 0:
        return total
    norms = np.sqrt(np.einsum("kp,kp->k", rows, rows))
    if not np.any(norms > clip * (1.0 + CLIP_SLACK)):
        return total
    return np.asarray(clip_rows(rows, clip)[0].sum(axis=0))


def range_check(rows: F64, clip: float, scale: float | None = None) -> B:
    """Which rows pass the L∞ range proof (RoFL): every coordinate of the quantised
    input round(s·u_ij) within ±round(s·C) (``scale`` s, the fixed point 2^f of the
    integer encoding), or |u_ij| ≤ C for real inputs (``scale`` None). An honest update
    clipped to C always passes (rounding is monotone)."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        if scale is None:
            peak = np.abs(rows).max(axis=1, initial=0.0)
            ok = peak <= clip * (1.0 + CLIP_SLACK)
        else:
            peak = np.abs(np.rint(rows * scale)).max(axis=1, initial=0.0)
            ok = peak <= np.rint(clip * scale)
    return np.asarray(ok & np.isfinite(rows).all(axis=1), dtype=bool)


def admitted(training: TrainingConfig, rows: F64, online: B, scale: float | None = None) -> B:
    """The clients that take part in the round: the ``online`` ones, less (with
    ``update_check = "range_check"``) those whose range proof fails."""
    online = np.asarray(online, dtype=bool)
    if training.update_check != "range_check":
        return online
    return online & range_check(rows, training.clip_norm, scale)


def range_value_bits(clip: float, scale: float | None) -> int:
    """n of the range proof: the bits of x + B ∈ [0, 2B] for B = round(s·C) (32 for real
    inputs, a 32-bit fixed point)."""
    if scale is None:
        return 32
    bound = int(np.rint(clip * scale))
    return max(1, math.ceil(math.log2(2 * bound + 1)))


def range_proof_bytes(dimension: int, value_bits: int) -> int:
    """A client's bytes for one round's range check, a lower bound: one commitment per
    coordinate (a group element each) and one aggregated Bulletproofs range proof for
    the P values of n bits, 2⌈log₂(n·P)⌉ + 4 group elements and 5 scalars (Bünz et al.
    2018, §4.3; 672 bytes for one 64-bit value)."""
    if dimension < 1 or value_bits < 1:
        raise ValueError(f"need dimension >= 1 and value_bits >= 1, got {dimension}, {value_bits}")
    proof = 2 * math.ceil(math.log2(value_bits * dimension)) + 4 + 5
    return GROUP_ELEMENT_BYTES * (dimension + proof)


def sum_std(training: TrainingConfig, plan: object, included: int) -> float:
    """The per-coordinate standard deviation of the noise in a round's released sum of
    ``included`` clients under the training ``plan`` (a
    :class:`~privsim.protocols.fedlearn.plan.TrainingPlan`): the curator's σ (on the mean:
    σ·k/m), k local σ² or k shares' σ_i² (integer shares: σ_i/s), plus the rounding of k
    inputs at scale s (at most 1/2s each)."""
    noise = plan.noise  # type: ignore[attr-defined]
    integer = plan.integer  # type: ignore[attr-defined]
    k = max(int(included), 0)
    if training.aggregation == "trusted":
        if training.central_noise == "mean":
            return float(noise.sigma * k / noise.cohort)
        return float(noise.sigma)
    if training.aggregation == "local":
        return float(math.sqrt(k) * noise.sigma)
    if integer is not None:
        setup = integer.setup(training.clip_norm)
        return float(math.sqrt(k) * setup.client_std + k * 0.5 / setup.mechanism.scale)
    return float(math.sqrt(k) * noise.share_std)


def norm_bound_of(included: int, clip: float, std: float, dimension: int) -> float:
    """k·C + σ_Σ·(√P + √(2 ln(1/β))), β = :data:`NORM_BOUND_FAILURE`: the norm an honest
    round's noisy sum stays under with probability ≥ 1 − β."""
    t = math.sqrt(2.0 * math.log(1.0 / NORM_BOUND_FAILURE))
    return included * clip + std * (math.sqrt(dimension) + t)


def norm_bound(released: F64, bound: float) -> F64:
    """The released sum rescaled to L2 norm at most ``bound`` (``released`` itself, the
    same array, when within it)."""
    released = np.asarray(released, dtype=np.float64)
    norm = float(np.linalg.norm(released))
    if not math.isfinite(norm):
        return np.zeros_like(released)
    if norm <= bound:
        return released
    return released * (bound / norm)
