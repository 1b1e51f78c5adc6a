"""Dropout isolation (``threat.attack = "dropout_isolation"``): the active SecAgg server
reports every honest client but the target as dropped in the Unmasking round, so that
the sum it opens is the target's masked input with only the colluders' beside it
(Bonawitz et al. 2017, Figure 4, without the ConsistencyCheck round; Bell et al. 2020
for SecAgg+). The server, its routes and the condition each needs are
:mod:`privsim.kit.secagg.isolation`'s: with C the colluding clients alive in the round
and t the threshold, the server opens the target u when

- |C ∩ N(u)| ≥ t (``collusion``: the passive bound is crossed already), or
- |C ∩ N(u)| ≥ t − 1 and |C ∩ N(v)| ≥ t − 1 for every honest neighbour v of u in U2
  (``isolate``: the list {u} ∪ C; on SecAgg's complete graph |C| ≥ t − 1), or
- m + 2·|C ∩ N(u)| ≥ 2t, m the honest holders of u's shares alive (u included), with
  t − |C ∩ N(u)| of them whose own list keeps t members without u (``equivocate``:
  different lists to different clients; on the complete graph, n + |C| ≥ 2t).

The server mounts it only in a round where one of these holds (the target picked and
alive through MaskedInputCollection), and otherwise unmasks honestly. What it opens is
Σ_{w ∈ {u} ∪ C} x_w, reported as the round's survivors: the round's release, which the
ledger settles with those contributors, so that against the coalition only the target's
own noise share is in it — uncredited, the round is not private (ε = ∞).

Scoring: the coalition subtracts its colluders' inputs (fixed point plus their noise
shares, which they know). A targeted round's error is the relative error against the
target's input x_u as it entered the sum, round(2^f z_u)/2^f + η_u/2^f: under
:data:`~privsim.protocols.fedlearn.attacks.RECOVERED` in exactly the rounds the server
opened it. Against the target's true clipped update z_u the estimate differs by the
target's own integer noise share and the fixed-point rounding, reported beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.secagg import round as secagg
from privsim.kit.secagg.isolation import isolable
from privsim.kit.secagg.maths import decode_sum, encode
from privsim.kit.secagg.outcome import Outcome
from privsim.protocols.fedlearn import accounting
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
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.world import World

__all__ = ["DropoutIsolation", "Trial", "build", "check_attack", "target_input"]

F64 = npt.NDArray[np.float64]

NAME = "dropout_isolation"


def check_attack(scenario: Scenario) -> None:
    """The attack needs an active SecAgg server: ``"server"`` among
    ``threat.colluding_servers`` and ``training.aggregation`` secagg or secagg_plus."""
    threat = scenario.threat
    aggregation = scenario.table("training", TrainingConfig).aggregation
    if aggregation not in accounting.SECURE:
        raise FieldError(
            "threat.attack",
            f"dropout_isolation lies about dropouts in SecAgg's Unmasking round; "
            f"aggregation {aggregation!r} has no such round",
            'set training.aggregation to "secagg" or "secagg_plus"',
        )
    if SERVER not in threat.colluding_servers:
        raise FieldError(
            "threat.attack",
            "dropout_isolation is mounted by the server, which is not in threat.colluding_servers",
            f'add "{SERVER}" to threat.colluding_servers',
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Trial:
    """One targeted round: the server's ``route`` ("" when it unmasked honestly), the
    estimate's relative error against the target's clipped update (``update_error``),
    the target's noise share and the fixed-point rounding, each relative to that update."""

    round: int
    route: str
    update_error: float
    noise_share: float
    quantisation: float


def target_input(world: World, plan: secagg.RoundPlan, target: str, z: F64) -> tuple[F64, F64]:
    """(x_u decoded, η_u/2^f): the target's input as it entered the sum — its row ``z``
    in fixed point plus its integer noise share, redrawn from the client's own
    ``noise`` stream (the simulation's truth, never the coalition's)."""
    f, bits = plan.fraction_bits, plan.bits
    if plan.noise is None:
        eta = np.zeros(z.size, dtype=np.int64)
    else:
        eta = plan.noise.sample(world.streams.fresh("agent", target, "noise"), z.size)
    x = decode_sum(encode(np.asarray(z, dtype=np.float64), f, bits, eta), f, bits)
    return x, eta.astype(np.float64) / float(1 << f)


def _colluders_inputs(world: World, plan: secagg.RoundPlan, opened: Sequence[str]) -> F64:
    """Σ x_c of the colluders in the opened sum, from their own private state."""
    private = world.coalition_view().private
    total = np.zeros(plan.dimension, dtype=np.float64)
    for c in opened:
        state = private[c]
        x = encode(np.asarray(state["input"]), plan.fraction_bits, plan.bits, state["noise"])
        total += decode_sum(x, plan.fraction_bits, plan.bits)
    return total


class DropoutIsolation:
    """The dropout-isolation attack of one run on one target (module docstring)."""

    __slots__ = ("_trials", "aggregation", "target")
    name = NAME

    def __init__(self, aggregation: str, target: str) -> None:
        self.aggregation, self.target = aggregation, target
        self._trials: list[Trial] = []

    def openable(self, view: RoundView) -> tuple[str, ...]:
        """The honest clients the server could have opened alone in the round
        (:func:`openable`): the ledger charges the round for them, whoever the target."""
        return openable(view)

    def prepare(self, r: int, names: tuple[str, ...], params: F64) -> RoundTweaks:
        """Isolate the target in the rounds it is picked."""
        if self.target not in names or self.aggregation not in accounting.SECURE:
            return RoundTweaks()
        return RoundTweaks(isolate=self.target)

    def observe(self, view: RoundView) -> list[Finding]:
        """The server's opened sum, less the colluders' inputs, against the target's."""
        if view.tweaks.isolate != self.target or view.secure is None:
            return []
        plan: secagg.RoundPlan = view.secure
        world: World = view.run.world
        i = view.names.index(self.target)
        z = np.asarray(view.updates[i], dtype=np.float64)
        truth, share = target_input(world, plan, self.target, z)
        found = world.agents[plan.server].result
        outcome = found if isinstance(found, Outcome) else None
        opened_alone = outcome is not None and outcome.ok and outcome.isolated is not None
        route = outcome.route if outcome is not None and opened_alone else ""
        estimate: F64 | None = None
        released = view.run.outcome.released
        included = view.run.included()
        if route and released is not None:
            opened = [c for c in (included or ()) if c != self.target]
            estimate = np.asarray(released, dtype=np.float64) - _colluders_inputs(
                world, plan, opened
            )
        scale = float(np.linalg.norm(z))
        rounding = float(np.linalg.norm(truth - share - z))
        self._trials.append(
            Trial(
                round=view.round,
                route=route,
                update_error=relative_error(estimate, z),  # type: ignore[arg-type]
                noise_share=float(np.linalg.norm(share)) / scale if scale > 0 else math.inf,
                quantisation=rounding / scale if scale > 0 else rounding,
            )
        )
        error = relative_error(estimate, truth)  # type: ignore[arg-type]
        return [Finding(round=view.round, client=self.target, error=error)]

    @property
    def trials(self) -> tuple[Trial, ...]:
        return tuple(self._trials)

    def report(self, findings: list[Finding], final_params: F64) -> dict[str, Any]:
        """``success``: the share of the target's rounds recovered (its input within
        10⁻⁶ relative); the routes taken, and the errors against its clipped update
        with the noise share and rounding that make them."""
        recovered = [f for f in findings if f.recovered]
        opened = [t for t in self._trials if t.route]
        routes: dict[str, int] = {}
        for t in opened:
            routes[t.route] = routes.get(t.route, 0) + 1
        return {
            "name": self.name,
            "aggregation": self.aggregation,
            "target": self.target,
            "success": share_recovered(findings),
            "rounds_recovered": sorted({f.round for f in recovered}),
            "rounds_targeted": len(findings),
            "routes": dict(sorted(routes.items())),
            "median_error": median_of([f.error for f in findings]),
            "median_update_error": median_of([t.update_error for t in opened]),
            "median_noise_share": median_of([t.noise_share for t in opened]),
            "max_quantisation": largest_of(t.quantisation for t in opened),
        }


def build(ctx: AttackContext) -> DropoutIsolation:
    """The run's dropout-isolation attack on ``ctx.target``."""
    return DropoutIsolation(ctx.plan.aggregation, ctx.target)


def openable(view: RoundView) -> tuple[str, ...]:
    """The honest clients of the round's U3 that the active server, with the colluding
    clients alive in the round, could open alone by one of the routes of
    :func:`~privsim.kit.secagg.isolation.route`, whoever it targets (empty without a
    SecAgg round, a colluding server or live sets reaching U3): each such client's
    input was exposed, whatever the server chose to do."""
    plan: secagg.RoundPlan | None = view.secure
    if plan is None or plan.server not in view.coalition:
        return ()
    found = view.run.world.agents[plan.server].result
    if not isinstance(found, Outcome) or not found.ok or len(found.survivors) < 3:
        return ()
    real = set(view.names)  # canaries hold no data: never an exposed client
    if found.isolated is not None:  # it did open one
        name = plan.clients[found.isolated]
        return (name,) if name in real else ()
    colluders = tuple(i for i, c in enumerate(plan.clients) if c in view.coalition)
    u2, u3 = found.survivors[1], found.survivors[2]
    opened = isolable(plan.graph, plan.threshold, u2, u3, colluders)
    return tuple(name for name in (plan.clients[i] for i in opened.tolist()) if name in real)
