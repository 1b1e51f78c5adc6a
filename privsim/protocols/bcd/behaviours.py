"""(DP) block coordinate descent as agent behaviours (Algorithms 1–2, k ≥ 2 parties).

Party 0 holds the label and starts with v = y. Each party, on receiving the remainder,
takes its local least-squares step (perturbed in DP-BCD) and sends the new remainder to
the next party in the ring; one iteration is one pass around the ring. After
``iterations`` passes — or earlier, when the label owner sees the remainder's squared
length fall by at most ``convergence_bound`` over a pass (Eq. (6)) — the label owner
tells everyone to finish, and every party sends its block β_j to every other party, so
all publish (β_0, …, β_{k−1}). A DP step whose output remainder is longer than ξ aborts
the run (Algorithm 2, lines 11–15): the party tells everyone and nothing is published.
A party that hears nothing for ``step_timeout`` simulated seconds stops with a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.protocols.bcd.maths import LocalBlock, perturbation
from privsim.protocols.bcd.messages import Coefficients, Finish, Remainder, StopNotice
from privsim.sim.agent import Agent, Behaviour

__all__ = ["BcdOutcome", "BcdPlan", "party"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True)
class BcdPlan:
    """Public parameters. ``step_epsilon`` is None for BCD (no perturbation)."""

    parties: tuple[str, ...]
    iterations: int
    gamma: float
    step_epsilon: float | None
    convergence_bound: float | None = None
    step_timeout: float = 10.0
    prose_scale: bool = False  # length sd ξ/ε_step (the prose) instead of ξ/√ε_step
    abort_rule: bool = True

    def next_of(self, index: int) -> str:
        return self.parties[(index + 1) % len(self.parties)]


@dataclass(slots=True)
class BcdOutcome:
    """One party's view of the run: its block, the published model, what happened."""

    status: str  # "published", "aborted", "timeout"
    beta: F64
    published: dict[int, F64] = field(default_factory=dict)
    iterations: int = 0
    steps: int = 0
    detail: str = ""
    remainders: list[float] = field(default_factory=list)  # ‖v_out‖ after each own step
    xis: list[float] = field(default_factory=list)


def _step(
    block: LocalBlock, v: F64, plan: BcdPlan, rng: np.random.Generator
) -> tuple[F64, F64, float]:
    """One local step on remainder v: (β̃, v_out, ξ). ξ = γ‖v − Xβ̂‖ for the unperturbed β̂."""
    xi = plan.gamma * block.residual_norm(v)
    if plan.step_epsilon is None:
        target = v
    else:
        # perturbation() uses sd ξ/√e; the prose's ξ/ε_step is that with e = ε_step².
        e = plan.step_epsilon**2 if plan.prose_scale else plan.step_epsilon
        target = v - perturbation(v.size, xi, e, rng)
    beta = block.solve(target)
    return beta, v - block.fitted(target), xi


def _abort(agent: Agent, plan: BcdPlan, outcome: BcdOutcome, reason: str) -> BcdOutcome:
    for other in plan.parties:
        if other != agent.id:
            agent.send(other, StopNotice(reason=reason))
    outcome.status, outcome.detail = "aborted", reason
    return outcome


def party(agent: Agent, index: int, x: F64, y: F64 | None, plan: BcdPlan) -> Behaviour:
    """The behaviour of party ``index`` holding columns ``x`` (and the label if index 0)."""
    block = LocalBlock.of(x)
    rng = agent.rng("perturbation")
    outcome = BcdOutcome(status="timeout", beta=np.zeros(x.shape[1]))
    agent.remember("data", x)

    def step(v: F64, iteration: int) -> bool:
        """Take a local step on v and pass the remainder on; False if it must abort."""
        beta, v_out, xi = _step(block, v, plan, rng)
        outcome.beta = outcome.beta + beta
        outcome.steps += 1
        outcome.xis.append(xi)
        length = float(np.linalg.norm(v_out))
        outcome.remainders.append(length)
        if plan.step_epsilon is not None and plan.abort_rule and length > xi:
            _abort(
                agent, plan, outcome, f"step {outcome.steps}: ‖v_out‖ = {length:.6g} > ξ = {xi:.6g}"
            )
            return False
        agent.send(plan.next_of(index), Remainder(values=v_out, iteration=iteration, step=index))
        return True

    iteration = 0
    previous = 0.0
    if index == 0:
        assert y is not None, "party 0 holds the label"
        agent.remember("label", y)
        label = np.asarray(y, dtype=np.float64)
        previous = float(label @ label)
        if not step(label, 1):
            return outcome
    while True:
        delivery: Any = yield from agent.receive(
            Remainder, Finish, StopNotice, deadline=agent.now + plan.step_timeout
        )
        if delivery is None:
            outcome.detail = "no message within step_timeout"
            return outcome
        msg = delivery.message
        if isinstance(msg, StopNotice):
            outcome.status, outcome.detail = "aborted", f"{delivery.src}: {msg.reason}"
            return outcome
        if isinstance(msg, Finish):
            outcome.iterations = msg.iterations
            break
        v = np.asarray(msg.values, dtype=np.float64)
        iteration = msg.iteration
        if index == 0:  # the remainder has been around the ring: iteration done
            length = float(v @ v)
            converged = (
                plan.convergence_bound is not None and previous - length <= plan.convergence_bound
            )
            previous = length
            if iteration >= plan.iterations or converged:
                outcome.iterations = iteration
                for other in plan.parties[1:]:
                    agent.send(other, Finish(iterations=iteration))
                break
            iteration += 1
        if not step(v, iteration):
            return outcome
    # Publication: every party sends its block to every other and collects theirs.
    for other in plan.parties:
        if other != agent.id:
            agent.send(other, Coefficients(values=outcome.beta))
    outcome.published[index] = outcome.beta
    while len(outcome.published) < len(plan.parties):
        delivery = yield from agent.receive(Coefficients, deadline=agent.now + plan.step_timeout)
        if delivery is None:
            outcome.status, outcome.detail = "timeout", "a coefficient block never arrived"
            return outcome
        outcome.published[plan.parties.index(delivery.src)] = np.asarray(
            delivery.message.values, dtype=np.float64
        )
    outcome.status = "published"
    return outcome
