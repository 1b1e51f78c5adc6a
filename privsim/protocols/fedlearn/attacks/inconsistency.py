"""Model inconsistency (``threat.attack = "model_inconsistency"``): an active server sends
the target the round's model and every other picked client a crafted one whose update
is zero, so that the sum secure aggregation opens is the target's update alone (Pasquini,
Francati & Ateniese, ACM CCS 2022, "Eluding secure aggregation in federated learning via
model inconsistency": the attack works whatever the secure aggregation, since it
changes the inputs, not the protocol).

The crafted model θ' (:func:`crafted_model`), for the one-hidden-layer MLP (a = W₁x + b₁,
h = φ(a), z = W₂h + b₂):

- ``relu``: W₁ = 0, b₁ = −1, W₂ = 0, b₂ = 0. Every hidden unit is dead (a = −1 for every
  input: the paper's dead ReLUs), so h = 0 and φ'(a) = 0, hence ∂W₂ = ∂z hᵀ = 0 and
  ∂W₁ = ∂b₁ = 0; W₂ = 0 and W₁ = 0 also make the L2 term λW zero. Local SGD keeps every
  coordinate but b₂ where it was, so the whole DP-FedAvg update stays zero there.
- ``tanh``: the same with b₁ = 0 (h = tanh(0) = 0, and ∂h = W₂ᵀ∂z = 0).

Only the output bias b₂ still moves: ∂b₂ = mean(softmax(b₂) − e_y) over the client's
records, which depends on its labels, unknown to the server. The attack therefore
recovers the target's update on every coordinate but the c output biases, and is scored
there only (``scored_coordinates`` in the report); it does not claim the biases.

For the linear models (``softmax``, ``logistic``) no crafted model zeroes an update: the
gradient (p − e_y)xᵀ + λW vanishes only where p = e_y for every record, which needs the
labels, and a record's x is never zero; huge weights saturate p at some one-hot vector,
but at the right one only for records the server could already label. The server then
sends everyone the round's model and takes the aggregate as its estimate: the attack
runs with its real, measured error (the other clients' updates in the sum). Likewise for
a registered model the attack knows nothing of.

The server's estimate of the target's update is the release it opens (SecAgg(+): the
unmasked sum; DCA: the sum of the compute nodes' aggregates, as the output party) on
the scored coordinates, where it knows the other clients contribute exactly 0. What
stays in the estimate is the target's fixed-point rounding, at most 2^−f per coordinate
(f the round's fraction bits; nearest rounding gives half that, DCA's conditional
rounding less than 2^−f): ``quantisation_bound`` = √|S|·2^−f / ‖u_S‖ relative, and any
noise the mechanism adds (central, or the clients' shares), which the attack cannot
remove; its effect is the measured error.

``training.model_check`` (every client gossips a SHA-256 digest of the model it received
to its peers and withholds its update on a mismatch,
:mod:`privsim.protocols.fedlearn.behaviours`) stops the attack: the target and the
clients next to it withhold, the target's update is in no release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum.config import DcaConfig
from privsim.protocols.fedlearn.accounting import SERVER
from privsim.protocols.fedlearn.attacks import (
    AttackContext,
    Finding,
    RoundTweaks,
    RoundView,
    largest_of,
    median_of,
    relative_error,
    share_recovered,
)
from privsim.protocols.fedlearn.config import TrainingConfig
from privsim.protocols.fedlearn.models import MLP, Model
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = [
    "AGGREGATIONS",
    "DEAD_BIAS",
    "Crafted",
    "ModelInconsistency",
    "Trial",
    "build",
    "check_attack",
    "crafted_model",
    "quantisation_bound",
]

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

#: The aggregations whose server sees only a sum: the ones the attack is meant to elude.
AGGREGATIONS = ("secagg", "secagg_plus", "dca")
#: b₁ of the crafted ReLU model: every pre-activation is this (W₁ = 0), so no unit fires.
DEAD_BIAS = -1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Crafted:
    """What the server sends the other clients: ``params`` (None: no model zeroes their
    update, they get the round's), ``scored`` the coordinates where each of their
    updates is exactly 0, and ``how``, the construction in words."""

    params: F64 | None
    scored: B
    how: str

    def __post_init__(self) -> None:
        if self.params is not None:
            self.params.flags.writeable = False
        self.scored.flags.writeable = False


def check_attack(scenario: Scenario) -> None:
    """The attack needs an active server that opens only a sum: ``"server"`` among
    ``threat.colluding_servers`` and a secure aggregation (secagg, secagg_plus or dca)."""
    threat = scenario.threat
    if SERVER not in threat.colluding_servers:
        raise FieldError(
            "threat.attack",
            "model_inconsistency is mounted by the server, which is not in "
            "threat.colluding_servers",
            f'add "{SERVER}" to threat.colluding_servers',
        )
    aggregation = scenario.table("training", TrainingConfig).aggregation
    if aggregation not in AGGREGATIONS:
        raise FieldError(
            "threat.attack",
            f"model_inconsistency isolates an update from a secure sum; aggregation "
            f"{aggregation!r} shows the server each update (or its noisy copy) already",
            'set training.aggregation to "secagg_plus", "secagg" or "dca", or use '
            'threat.attack = "reconstruction"',
        )


def crafted_model(model: Model, params: F64) -> Crafted:
    """The model the other clients are sent and the coordinates it zeroes (module
    docstring): dead hidden units for the MLP, none for any other model."""
    size = int(np.asarray(params).size)
    if isinstance(model, MLP):
        d, h, c = model.n_features, model.hidden, model.n_classes
        out = np.zeros(size, dtype=np.float64)
        if model.activation == "relu":
            out[h * d : h * d + h] = DEAD_BIAS
        scored = np.ones(size, dtype=bool)
        scored[h * d + h + c * h :] = False  # b₂: the labels still move it
        how = (
            "dead ReLUs (W1 = 0, b1 < 0, W2 = 0): zero but the output bias"
            if model.activation == "relu"
            else "zero hidden layer (W1 = 0, b1 = 0, W2 = 0): zero but the output bias"
        )
        return Crafted(params=out, scored=scored, how=how)
    return Crafted(
        params=None,
        scored=np.ones(size, dtype=bool),
        how=f"none: no {model.name!r} model zeroes an update without the labels",
    )


def quantisation_bound(truth: F64, fraction_bits: int) -> float:
    """The largest relative error fixed point leaves in an exact isolation: √n·2^−f
    over ‖truth‖ (n coordinates, each rounded once by the target, by at most 2^−f)."""
    norm = float(np.linalg.norm(truth))
    spread = math.sqrt(truth.size) * 2.0**-fraction_bits
    return spread / norm if norm > 0 else spread


def fraction_bits_of(view: RoundView, dca: DcaConfig | None) -> int:
    """The fraction bits f of the round's fixed point."""
    if view.secure is not None:
        return int(view.secure.fraction_bits)
    if view.plan.integer is not None:
        return int(view.plan.integer.fraction_bits)
    return (DcaConfig() if dca is None else dca).fraction_bits


@dataclass(frozen=True, slots=True, kw_only=True)
class Trial:
    """One targeted round beside its finding: whether the target's update is in the
    release (``included``) and the fixed-point ``bound`` on an exact isolation's error."""

    round: int
    included: bool
    bound: float


class ModelInconsistency:
    """The model-inconsistency attack of one run on one target (module docstring)."""

    __slots__ = ("_dca", "_trials", "aggregation", "crafted", "model", "target")
    name = "model_inconsistency"

    def __init__(self, model: Model, aggregation: str, target: str, dca: DcaConfig | None) -> None:
        self.model, self.aggregation, self.target, self._dca = model, aggregation, target, dca
        self.crafted: Crafted | None = None
        self._trials: list[Trial] = []

    def prepare(self, r: int, names: tuple[str, ...], params: F64) -> RoundTweaks:
        """Every picked client but the target gets the crafted model (one array, shared)."""
        if self.target not in names:
            return RoundTweaks()
        crafted = crafted_model(self.model, params)
        self.crafted = crafted
        if crafted.params is None:
            return RoundTweaks()
        sent = crafted.params
        return RoundTweaks(params_for={c: sent for c in names if c != self.target})

    def observe(self, view: RoundView) -> list[Finding]:
        """The release on the scored coordinates against the target's true update there."""
        if self.target not in view.names:
            return []
        i = view.names.index(self.target)
        if not bool(view.online[i]):
            return []  # never had the model: nothing to isolate
        crafted = self.crafted or crafted_model(self.model, view.params)
        truth = np.asarray(view.updates[i], dtype=np.float64)[crafted.scored]
        released = view.run.outcome.released
        included = view.run.included()
        error = float("inf")
        if released is not None:
            error = relative_error(np.asarray(released, dtype=np.float64)[crafted.scored], truth)
        bound = quantisation_bound(truth, fraction_bits_of(view, self._dca))
        self._trials.append(
            Trial(
                round=view.round,
                included=included is not None and self.target in included,
                bound=bound,
            )
        )
        return [Finding(round=view.round, client=self.target, error=error)]

    def report(self, findings: list[Finding], final_params: F64) -> dict[str, Any]:
        """``success``: the share of the target's rounds recovered (relative error under
        10⁻⁶ on the scored coordinates); the errors, the fixed-point bound on an exact
        isolation's error, and what was scored."""
        recovered = [f for f in findings if f.recovered]
        crafted = self.crafted or crafted_model(self.model, final_params)
        return {
            "name": self.name,
            "aggregation": self.aggregation,
            "target": self.target,
            "success": share_recovered(findings),
            "rounds_recovered": sorted({f.round for f in recovered}),
            "client_rounds_targeted": len(findings),
            "median_error": median_of([f.error for f in findings]),
            "max_error": largest_of(f.error for f in findings),
            "quantisation_bound": largest_of(t.bound for t in self._trials),
            "rounds_withheld": sorted(t.round for t in self._trials if not t.included),
            "crafted_model": crafted.how,
            "scored_coordinates": int(np.count_nonzero(crafted.scored)),
            "excluded_coordinates": int(crafted.scored.size - np.count_nonzero(crafted.scored)),
        }


def build(ctx: AttackContext) -> ModelInconsistency:
    """The run's model-inconsistency attack on ``ctx.target``."""
    aggregation = ctx.plan.aggregation
    dca = ctx.scenario.table("dca", DcaConfig) if aggregation == "dca" else None
    return ModelInconsistency(ctx.learner.model, aggregation, ctx.target, dca)
