"""Reconstruction of a client's record from its update (``threat.attack =
"reconstruction"``), a passive attack on what the coalition reads in each aggregation.

For the built-in linear models, one record's gradient of softmax regression at
θ = (W, b) is (Phong et al., IEEE TIFS 2018, "Privacy-preserving deep learning via
additively homomorphic encryption", §3; Zhu, Liu & Han, NeurIPS 2019, for the attack
on shared gradients)

    g_W = (p − e_y) xᵀ + λW,    g_b = p − e_y,    p = softmax(Wx + b),

and logistic regression's is the same with one class (p = σ(wᵀx + b), e_y = y). A
client's DP-SGD update is u = −a·g with a = min(1, C/‖g‖) (DP-FedAvg with one local
step of rate η on its one record: a = η·min(1, C/‖ηg‖)), so for every class c

    u_W[c] = u_b[c] · x − a·λ·W[c].

Without the L2 term (or at W = 0) x = u_W[c]/u_b[c] for the c of largest |u_b[c]|
(never 0: p has no zero entry); with it, (x, a) is the least-squares solution over the
classes, exact when the update is. The recovery is exact only for a single-record
gradient (one record per client: e.g. ``dataset.source = "digits"`` split over as many
clients as it has training records); a client with several records gives a mixture.

Every honest picked client that sent an update is a target in every round; its error
is the relative L2 error of the estimate against the nearest of its true records.
"""

from __future__ import annotations

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
    median_of,
    relative_error,
    share_recovered,
)
from privsim.protocols.fedlearn.attacks.exposed import (
    Exposed,
    dca_inputs,
    direct_updates,
    secagg_inputs,
)
from privsim.protocols.fedlearn.config import ModelConfig
from privsim.protocols.fedlearn.models import LogisticRegression, Model, SoftmaxRegression
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = [
    "LINEAR",
    "Reconstruction",
    "Trial",
    "build",
    "check_attack",
    "exposed",
    "nearest_error",
    "record_from_update",
]

F64 = npt.NDArray[np.float64]

_NO_RECORDS = (np.empty((0, 0)), np.empty(0, dtype=np.int64))

#: The models whose single-record gradient gives the record back.
LINEAR = ("logistic", "softmax")


def check_attack(scenario: Scenario) -> None:
    """The reconstruction needs one of the built-in linear models."""
    name = scenario.table("model", ModelConfig).name
    if name not in LINEAR:
        raise FieldError(
            "model.name",
            f"the reconstruction attack inverts a linear model's gradient; model {name!r} is not one",
            'use model.name = "softmax" or "logistic" with threat.attack = "reconstruction"',
        )


def _layout(model: Model, vector: F64) -> tuple[F64, F64]:
    """(W (c, d), b (c,)) of a linear model's flat parameter vector or update."""
    v = np.asarray(vector, dtype=np.float64)
    if isinstance(model, SoftmaxRegression):
        c, d = model.n_classes, model.n_features
        return v[: c * d].reshape(c, d), v[c * d :]
    if isinstance(model, LogisticRegression):
        return v[None, :-1], v[-1:]
    raise TypeError(f"no record reconstruction for model {model.name!r}")


def record_from_update(model: Model, update: F64, params: F64) -> F64 | None:
    """The record x of a single-record update ``update`` taken at ``params`` (module
    docstring's equation); None when the update carries no record (u_b = 0)."""
    u_W, u_b = _layout(model, update)
    if not (np.all(np.isfinite(u_W)) and np.all(np.isfinite(u_b))):
        return None
    l2 = float(getattr(model, "l2", 0.0))
    W, _ = _layout(model, params)
    if l2 == 0.0 or not np.any(W):
        c = int(np.argmax(np.abs(u_b)))
        if u_b[c] == 0.0:
            return None
        return np.asarray(u_W[c] / u_b[c])
    # least squares over the classes in closed form (the normal equations of (x, a)):
    # x = (p + a·q)/B, a = (r − q·p/B)/(‖q‖²/B − S), with B = Σ u_b[c]², p = Σ u_b[c] u_W[c],
    # w_c = λW[c], q = Σ u_b[c] w_c, r = Σ w_c·u_W[c], S = Σ ‖w_c‖²
    w = l2 * W
    B = float(u_b @ u_b)
    if B == 0.0:
        return None
    p, q = u_b @ u_W, u_b @ w
    r, S = float(np.sum(w * u_W)), float(np.sum(w * w))
    denominator = float(q @ q) / B - S  # ≤ 0 (Cauchy–Schwarz); 0: a not identifiable
    a = (r - float(q @ p) / B) / denominator if denominator < 0 else 0.0
    return np.asarray((p + a * q) / B)


def nearest_error(estimate: F64 | None, records: F64) -> float:
    """The relative error of ``estimate`` against the nearest row of ``records``."""
    if estimate is None or records.shape[0] == 0:
        return float("inf")
    return min(relative_error(estimate, row) for row in records)


def exposed(view: RoundView, dca: DcaConfig | None = None) -> Exposed:
    """What the coalition reads of each picked client's contribution in this round
    (``dca``: the scenario's DCA table, for its fixed point and share mode)."""
    plan, world = view.plan, view.run.worlds[-1]
    if plan.aggregation in ("trusted", "local"):
        return direct_updates(world, SERVER, noisy=plan.aggregation == "local")
    if plan.aggregation == "dca":
        cfg = DcaConfig() if dca is None else dca
        integer = plan.integer
        return dca_inputs(
            world,
            plan.nodes,
            fraction_bits=cfg.fraction_bits if integer is None else integer.fraction_bits,
            modulus_bits=64 if integer is None else integer.bits,
            threshold=cfg.threshold if cfg.share_mode == "shamir" else None,
        )
    if view.secure is None:
        return Exposed(values={}, seen="nothing (no secure round ran)")
    return secagg_inputs(world, view.secure)


@dataclass(frozen=True, slots=True, kw_only=True)
class Trial:
    """One targeted client-round beside its finding: the error of the update the
    coalition read (∞: it read none) and what it held of it."""

    round: int
    client: str
    update_error: float
    seen: str


class Reconstruction:
    """The passive reconstruction attack of one run (module docstring)."""

    __slots__ = ("_dca", "_trials", "aggregation", "model")
    name = "reconstruction"

    def __init__(self, model: Model, aggregation: str, dca: DcaConfig | None) -> None:
        self.model, self.aggregation, self._dca = model, aggregation, dca
        self._trials: list[Trial] = []

    def prepare(self, r: int, names: tuple[str, ...], params: F64) -> RoundTweaks:
        return RoundTweaks()

    def observe(self, view: RoundView) -> list[Finding]:
        seen = exposed(view, self._dca)
        findings = []
        for i, client in enumerate(view.names):
            if client in view.coalition or not bool(view.online[i]):
                continue
            got = seen.values.get(client)
            estimate = None if got is None else record_from_update(self.model, got, view.params)
            X = np.asarray(view.records.get(client, _NO_RECORDS)[0], dtype=np.float64)
            findings.append(
                Finding(round=view.round, client=client, error=nearest_error(estimate, X))
            )
            self._trials.append(
                Trial(
                    round=view.round,
                    client=client,
                    update_error=float("inf")
                    if got is None
                    else relative_error(got, view.updates[i]),
                    seen=seen.seen,
                )
            )
        return findings

    def report(self, findings: list[Finding], final_params: F64) -> dict[str, Any]:
        """``success``: the share of targeted client-rounds recovered; the median
        errors of the records and of the updates the coalition read; by client, its
        median error; ``seen``: what the coalition held in the rounds."""
        recovered = [f for f in findings if f.recovered]
        by_client: dict[str, list[float]] = {}
        for f in findings:
            by_client.setdefault(f.client, []).append(f.error)
        return {
            "name": self.name,
            "aggregation": self.aggregation,
            "success": share_recovered(findings),
            "rounds_recovered": sorted({f.round for f in recovered}),
            "client_rounds_targeted": len(findings),
            "clients_targeted": len(by_client),
            "clients_recovered": len({f.client for f in recovered}),
            "median_error": median_of([f.error for f in findings]),
            "median_update_error": median_of([t.update_error for t in self._trials]),
            "error_by_client": {c: median_of(e) for c, e in sorted(by_client.items())},
            "seen": sorted({t.seen for t in self._trials}),
        }


def build(ctx: AttackContext) -> Reconstruction:
    """The run's reconstruction attack."""
    aggregation = ctx.plan.aggregation
    dca = ctx.scenario.table("dca", DcaConfig) if aggregation == "dca" else None
    return Reconstruction(ctx.learner.model, aggregation, dca)
