"""Attacks on a DCA round, each a function of the coalition's pooled view
(:class:`~privsim.sim.coalition.CoalitionView`) and what the coalition is assumed to
know (Heikkilä et al. 2017, Algorithm 1, Theorem 1 and its threat model).

- :func:`node_reconstruction`: when every compute node colludes, adding a client's M
  shares gives z_i + η_i exactly; the error of the reconstructed input is the client's
  own noise η_i ~ N(0, σ_i²). With fewer than M nodes the shares are uniform: nothing.
- :func:`noise_subtraction`: T′ colluding clients subtract their own noise shares
  (declared private state) and every other client's input from the released sum; what
  is left of the target's input is corrupted only by the honest included clients'
  noise, variance H·σ_i² per coordinate with σ_i² = σ²/(N − T − 1). Theorem 1 keeps this
  at ≥ σ² (the trusted aggregator's) while T′ + dropouts ≤ T; beyond, below σ².
- :func:`dropout_attack`: an *active* compute node that claims some honest clients'
  shares never arrived (in the §3.1.3 agreement step; the protocol accepts up to T
  missing clients) removes their noise from the release. Combined with T′ colluding
  clients, which the protocol cannot see, the release keeps N − T′ − D honest shares;
  the paper's T accounting (honest-but-curious servers) assumes T′ + D ≤ T.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.maths import client_noise_std
from privsim.kit.securesum.messages import DCA_KINDS
from privsim.protocols.dca.coalition import reconstructed_dca_inputs
from privsim.protocols.dca.run import Simulation, coalition_exposure, sensitivity, simulate
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_epsilon, gaussian_sigma
from privsim.sim.coalition import CoalitionView

__all__ = [
    "ATTACKS",
    "DropoutAttack",
    "dropout_attack",
    "exposure",
    "node_reconstruction",
    "noise_subtraction",
    "subtraction_variance",
]

F64 = npt.NDArray[np.float64]


def node_reconstruction(
    view: CoalitionView, nodes: Sequence[str], fraction_bits: int
) -> dict[str, F64]:
    """z_i + η_i of every client whose shares reached every compute node in the
    coalition, keyed by client (empty unless all M nodes collude)."""
    return reconstructed_dca_inputs(view, nodes, fraction_bits)


def noise_subtraction(
    view: CoalitionView,
    released: F64,
    target: str,
    known_inputs: Mapping[str, F64],
) -> F64:
    """The coalition's estimate of ``target``'s z: the released sum minus every other
    included client's input (``known_inputs``: the honest ones' the coalition is assumed
    to know; its members' it reads from their private state) minus its members' own
    noise η_i (their declared private state)."""
    estimate = np.array(released, dtype=np.float64)
    input_key, noise_key = DCA_KINDS.state_key("input"), DCA_KINDS.state_key("noise")
    members = {m: s for m, s in view.private.items() if noise_key in s}
    for client, z in known_inputs.items():
        if client != target and client not in members:
            estimate -= z
    for state in members.values():
        estimate -= np.asarray(state[input_key]) + np.asarray(state[noise_key])
    return estimate


def subtraction_variance(sigma: float, n: int, tolerated: int, honest_included: int) -> float:
    """Theory for :func:`noise_subtraction`: H·σ²/(N − T − 1) per coordinate (σ_i from
    Theorem 1), H honest included clients (the target's own share among them)."""
    return honest_included * client_noise_std(sigma, n, tolerated) ** 2


@dataclass(frozen=True, slots=True, kw_only=True)
class DropoutAttack:
    """One run of the dropout attack: T′ colluding clients, D honest clients falsely
    reported missing by a colluding compute node."""

    colluding_clients: int
    claimed_missing: int
    status: str
    honest_included: int
    #: The ledger's ε for the release against the coalition (the honest shares left).
    effective_epsilon: float
    #: What the paper's T accounting promises: the target ε while T′ ≤ T.
    paper_epsilon: float
    #: ε of the honest noise left, with the target's own share credited too.
    epsilon_with_own_share: float


def dropout_attack(
    scenario: Scenario, colluding: int, claimed: int, seed: int | None = None
) -> DropoutAttack:
    """Run the round with clients 0 … T′−1 and ``compute-0`` colluding, ``compute-0``
    an active adversary (``dca.false_claims`` = ``claimed``): in the agreement step it
    claims the first ``claimed`` honest clients' shares never reached it, and since the
    nodes sum over the intersection of their received sets, those clients and their noise
    are left out. The effective ε is the run's ledger's, which counts only honest
    included shares."""
    n = scenario.population.clients
    cfg = scenario.table("dca", DcaConfig)
    if colluding + claimed >= n:
        raise ValueError(f"T′ + D = {colluding + claimed} leaves no honest target of {n}")
    colluders = tuple(f"client-{i}" for i in range(colluding))
    attacked = scenario.replace(
        {
            "threat.colluding_clients": list(colluders),
            "threat.colluding_servers": ["compute-0"],
            "dca.false_claims": claimed,
            "dca.delivery": "per_message",
        }
    )
    sim = simulate(attacked, seed, protocol="dca")
    privacy = sim.privacy()
    included = sim.outcome.included
    honest = 0 if included is None else int(included.sum()) - colluding
    p = scenario.privacy
    sigma = gaussian_sigma(p.epsilon, p.delta, sensitivity(scenario), p.calibration)
    std = client_noise_std(sigma, n, cfg.tolerated) * math.sqrt(max(honest, 0))
    own = gaussian_epsilon(std / sensitivity(scenario), p.delta) if honest > 0 else math.inf
    return DropoutAttack(
        colluding_clients=colluding,
        claimed_missing=claimed,
        status="released" if sim.outcome.ok else "aborted",
        honest_included=honest,
        effective_epsilon=privacy.achieved_epsilon,
        paper_epsilon=p.epsilon if colluding <= cfg.tolerated else math.inf,
        epsilon_with_own_share=own,
    )


def exposure(sim: Simulation) -> dict[str, Any]:
    """A run's exposure metrics from these attacks, as its result's coalition section
    carries them (:func:`~privsim.protocols.dca.run.coalition_exposure`):
    ``inputs_reconstructed`` (:func:`node_reconstruction` on honest clients),
    ``honest_noise_shares`` H, and the error of :func:`noise_subtraction`'s estimate of
    an honest target, measured (``target_error_rmse``) and in theory
    (``target_error_sd_theory`` = √H·σ_i; ``target_noise_ratio`` = H·σ_i²/σ², ≥ 1 while
    T′ + dropouts ≤ T; 0 when nothing is released)."""
    return coalition_exposure(sim)


#: The attacks a DCA coalition can run, by name (see the module docstring).
ATTACKS: dict[str, Callable[..., Any]] = {
    "node_reconstruction": node_reconstruction,
    "noise_subtraction": noise_subtraction,
    "dropout_attack": dropout_attack,
    "exposure": exposure,
}
