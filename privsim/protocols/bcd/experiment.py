"""One (DP-)BCD replication on the bus: data, parties, publication, and what it cost.

``run_bcd(scenario, seed)`` is a pure function of its inputs: the data (synthetic draws
come from the seed; real data are fixed), each party's perturbations (its own stream) and
the network all derive from ``seed``.

Privacy. Each DP step is ε_step-DP in the paper's *locally sensitive* sense (Definition 2:
the data set at hand against its one-record removals, with ξ computed from the data
themselves; not standard (ε, δ)-DP over all neighbouring data sets, and the result says
so). Every step is recorded as a pure ε_step event of no known shape
(``GenericPureDpEvent``: the perturbation is a half-normal length on a random direction,
Eq. (12), not Laplace noise, so at δ > 0 it composes as the worst-case ε-DP pair, never
as Laplace), and the k·T planned steps compose by the basic theorem — the paper's
simple composition (Lemma 1) — or, where the ledger finds it tighter at δ, by the
worst-case pair's PLD (each step bounds the likelihood ratio of every neighbouring pair
Definition 2 covers, and the optimal composition of such pairs holds pair by pair,
Kairouz, Oh & Viswanath 2015) — in ONE ledger entry
``"steps"``, charged before the run starts (so ``bcd.step_budget = "whole"``, k·T·ε in
all, is refused unless ``privacy.on_overspend = "warn"``) and settled with the steps
actually taken. Each party perturbs its own release, so the event trusts nobody. BCD
without perturbation, and the readings of the paper that void its proof (the prose's
length scale, no abort rule), are recorded as non-private releases.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np

from privsim.kit.result import Abort, Privacy, RunResult
from privsim.kit.world import agree_channels, build_world
from privsim.protocols.bcd.attacks import contribution_error
from privsim.protocols.bcd.behaviours import BcdOutcome, BcdPlan, party
from privsim.protocols.bcd.config import BcdConfig
from privsim.protocols.bcd.data import PartitionedData, load_partitioned
from privsim.protocols.bcd.maths import aapd, centralised_solution, r_squared, step_budget
from privsim.protocols.bcd.messages import Remainder
from privsim.scenarios.schema import Scenario
from privsim.sim.events import GenericPureDpEvent
from privsim.sim.ledger import PrivacyLedger, Trust
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = [
    "PRIVACY_NOTION",
    "STEPS",
    "Simulation",
    "invalid_reading",
    "party_names",
    "plan_ledger",
    "plan_of",
    "run_bcd",
    "simulate_bcd",
]

PRIVACY_NOTION = (
    "locally sensitive differential privacy (de Jong et al. 2022, Definition 2): the data "
    "set against its one-record removals, composed over steps; not "
    "standard (epsilon, delta)-DP"
)

#: The ledger entry of the perturbed local steps.
STEPS = "steps"

#: Who must stay honest for a step's guarantee: nobody, each party perturbs its own step.
OWN_PERTURBATION = Trust.nobody("nobody (each party perturbs its own local step)")


def party_names(cfg: BcdConfig) -> tuple[str, ...]:
    """``party-0`` (the label owner) … ``party-{k−1}``, in ring order."""
    return tuple(f"party-{j}" for j in range(cfg.parties))


def plan_of(scenario: Scenario) -> BcdPlan:
    """The public parameters: ε_step = ε/(kT) (Algorithm 2), or ε (``step_budget =
    "whole"``), or none (BCD, Algorithm 1)."""
    cfg = scenario.table("bcd", BcdConfig)
    epsilon = scenario.privacy.epsilon
    step_epsilon = None
    if cfg.method == "dp-bcd":
        whole = cfg.step_budget == "whole"
        step_epsilon = epsilon if whole else step_budget(epsilon, cfg.parties, cfg.iterations)
    return BcdPlan(
        parties=party_names(cfg),
        iterations=cfg.iterations,
        gamma=cfg.gamma,
        step_epsilon=step_epsilon,
        convergence_bound=cfg.convergence_bound if cfg.stopping == "convergence" else None,
        step_timeout=cfg.step_timeout,
        prose_scale=cfg.length_scale == "prose",
        abort_rule=cfg.abort_rule,
    )


def invalid_reading(cfg: BcdConfig) -> str:
    """Why a DP-BCD configuration is not a valid guarantee ("" when it is)."""
    reasons = []
    if cfg.length_scale == "prose":
        reasons.append("the prose's length scale ξ/ε_step")
    if not cfg.abort_rule:
        reasons.append("abort rule off")
    if not reasons:
        return ""
    return (
        "not a valid guarantee: "
        + "; ".join(reasons)
        + " (a reading of the paper that voids its proof, kept only to test it)"
    )


def steps_event(step_epsilon: float, steps: int) -> dp_accounting.DpEvent:
    """``steps`` pure ε_step-DP local steps, composed by the basic theorem (Lemma 1); each
    an ε-DP mechanism of no known shape (objective perturbation, not Laplace)."""
    return dp_accounting.SelfComposedDpEvent(GenericPureDpEvent(step_epsilon), steps)


def _charge(ledger: PrivacyLedger, cfg: BcdConfig, plan: BcdPlan) -> bool:
    """Record the planned steps; True if they are a DP release to settle afterwards."""
    if plan.step_epsilon is None:
        ledger.non_private(STEPS, "BCD without perturbation")
        return False
    reason = invalid_reading(cfg)
    if reason:
        ledger.non_private(STEPS, reason)
        return False
    planned = steps_event(plan.step_epsilon, cfg.parties * cfg.iterations)
    ledger.charge(STEPS, planned, trust=OWN_PERTURBATION)
    return True


def _planned(scenario: Scenario) -> tuple[PrivacyLedger, BcdPlan, bool]:
    """The ledger with the planned steps charged (refused over budget before anything
    runs), the public plan, and whether the steps are a DP release to settle."""
    plan = plan_of(scenario)
    privacy = scenario.privacy
    ledger = PrivacyLedger(privacy.epsilon, privacy.delta, on_overspend=privacy.on_overspend)
    return ledger, plan, _charge(ledger, scenario.table("bcd", BcdConfig), plan)


def plan_ledger(scenario: Scenario) -> PrivacyLedger:
    """The ledger as :func:`run_bcd` charges it, before anything runs."""
    return _planned(scenario)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    """One simulated run with everything needed to analyse it."""

    scenario: Scenario
    seed: int
    world: World
    data: PartitionedData
    plan: BcdPlan
    ledger: PrivacyLedger
    outcomes: tuple[BcdOutcome | None, ...]
    wall_seconds: float

    @property
    def published(self) -> bool:
        return all(isinstance(o, BcdOutcome) and o.status == "published" for o in self.outcomes)

    @property
    def steps(self) -> int:
        """Local steps taken by every party (an aborting step included: it was computed
        and its party's earlier remainders were sent)."""
        return sum(o.steps for o in self.outcomes if isinstance(o, BcdOutcome))


def simulate_bcd(scenario: Scenario, seed: int | None = None) -> Simulation:
    """Charge the planned steps (refused over budget before anything runs), build and run
    the world, settle the ledger. The coalition view holds the adversary's received
    remainders (the scenario's ``threat.colluding_servers``, e.g. ``["party-1"]``)."""
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    cfg = scenario.table("bcd", BcdConfig)
    ledger, plan, private = _planned(scenario)

    streams = Streams(seed)
    data = load_partitioned(cfg, streams.generator("data", "bcd"))
    names = plan.parties
    world = build_world(scenario, streams, list(names))
    agents = world.add_parties("party", names)
    for j, agent in enumerate(agents):
        world.start(agent, party(agent, j, data.block(j), data.y if j == 0 else None, plan))
    agree_channels(world, lambda _: [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]])
    world.run()

    outcomes = tuple(world.agents[p].result for p in names)
    steps = sum(o.steps for o in outcomes if isinstance(o, BcdOutcome))
    if private:
        assert plan.step_epsilon is not None
        if steps:
            ledger.settle(STEPS, steps_event(plan.step_epsilon, steps))
        else:
            ledger.withhold(STEPS)
    return Simulation(
        scenario=scenario,
        seed=seed,
        world=world,
        data=data,
        plan=plan,
        ledger=ledger,
        outcomes=outcomes,
        wall_seconds=time.perf_counter() - started,
    )


def _beta(data: PartitionedData, published: dict[int, Any]) -> np.ndarray:
    beta = np.zeros(data.x.shape[1])
    for j, block in enumerate(data.blocks):
        beta[list(block)] = published[j]
    return beta


def _privacy(sim: Simulation) -> Privacy:
    """The ledger's guarantee; ε per party by simple composition of its own steps."""
    guarantee = sim.ledger.guarantee(sim.world.coalition)
    step_eps = sim.plan.step_epsilon
    per_party = {
        p: (math.inf if guarantee.non_private or step_eps is None else o.steps * step_eps)
        for p, o in zip(sim.plan.parties, sim.outcomes, strict=True)
        if isinstance(o, BcdOutcome)
    }
    return Privacy.of(
        sim.ledger,
        sim.world.coalition,
        notion=None if guarantee.non_private else PRIVACY_NOTION,
        epsilon_per_step=step_eps,
        epsilon_per_party=per_party,
    )


def _remainders_received(world: World) -> int:
    """Remainder vectors the coalition received from parties outside it."""
    view = world.coalition_view()
    return sum(
        1
        for m in view.messages_of(Remainder)
        if m.dst in view.members and m.src not in view.members
    )


def _exposure(world: World, data: PartitionedData) -> dict[str, float | int | None]:
    """``remainders_received`` and ``contribution_error``: the mean relative error of the
    coalition's estimates v − v_out of an honest neighbour's fitted part X(XᵀX)⁻¹Xᵀv
    (de Jong et al. 2022, §2.3; :func:`~privsim.protocols.bcd.attacks.contribution_error`):
    0 for plain BCD, growing as ε falls for DP-BCD; None when the coalition received
    no remainder back."""
    blocks = {f"party-{j}": data.block(j) for j in range(len(data.blocks))}
    error = contribution_error(world.coalition_view(), blocks)
    return {
        "remainders_received": _remainders_received(world),
        "contribution_error": None if math.isnan(error) else error,
    }


def run_bcd(scenario: Scenario, seed: int | None = None) -> RunResult:
    """One replication; see the module docstring."""
    started = time.perf_counter()
    sim = simulate_bcd(scenario, seed)
    world, data, plan, outcomes = sim.world, sim.data, sim.plan, sim.outcomes
    cfg = scenario.table("bcd", BcdConfig)
    owner = outcomes[0]
    central = centralised_solution(data.x, data.y)
    r2_central = r_squared(data.y, data.x @ central)

    accuracy = None
    abort = None
    if sim.published:
        assert isinstance(owner, BcdOutcome)
        beta = _beta(data, owner.published)
        accuracy = {
            "r2": r_squared(data.y, data.x @ beta),
            "r2_central": r2_central,
            "aapd": aapd(beta, central),
            "beta_abs_error": float(np.mean(np.abs(beta - central))),
            "beta": beta.tolist(),
        }
    else:
        reasons = [
            o.detail for o in outcomes if isinstance(o, BcdOutcome) and o.status != "published"
        ]
        missing = [p for p, o in zip(plan.parties, outcomes, strict=True) if o is None]
        if all(p in world.faults.absent for p in plan.parties):  # no block took part
            abort = Abort(
                reason="no_data",
                detail=f"every party is absent ({', '.join(plan.parties)}): no block of the "
                "data took part, nothing was published",
            )
        else:
            gone = [f"{', '.join(missing)} absent or crashed"] if missing else []
            abort = Abort(reason="aborted", detail="; ".join([*gone, *(r for r in reasons if r)]))

    last = outcomes[-1]
    r2_by_iteration: list[float] = []
    if isinstance(last, BcdOutcome):  # the remainder after each full pass is y − Xβ_t
        sst = float(np.sum((data.y - data.y.mean()) ** 2))
        r2_by_iteration = [1.0 - r**2 / sst for r in last.remainders]

    details = {
        "method": cfg.method,
        "dataset": {
            "name": data.name,
            "records": int(data.x.shape[0]),
            "predictors": int(data.x.shape[1]),
            "columns": list(data.columns),
            "blocks": [[data.columns[i] for i in b] for b in data.blocks],
        },
        "iterations": owner.iterations if isinstance(owner, BcdOutcome) else 0,
        "steps": sim.steps,
        "xi": {
            p: o.xis
            for p, o in zip(plan.parties, outcomes, strict=True)
            if isinstance(o, BcdOutcome)
        },
        "reference": {"r2_central": r2_central, "beta_central": central.tolist()},
        "r2_by_iteration": r2_by_iteration,
    }
    return RunResult.of_world(  # duration: when the last party finished
        scenario,
        sim.seed,
        world,
        sim.ledger,
        holders=plan.parties,
        included=plan.parties if sim.published else None,
        abort=abort,
        privacy=_privacy(sim),
        accuracy=accuracy,
        exposure=_exposure(world, data),
        details=details,
        started=started,
    )
