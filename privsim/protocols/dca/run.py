"""A DCA secure-sum run (or its trusted-aggregator baseline): synthetic client vectors,
one round on the bus, and what it achieved.

:func:`simulate` builds one world for one protocol and returns it with the outcome (for
tests and analyses that want the trace or the coalition view); :func:`run_dca` and
:func:`run_trusted_aggregator` summarise it into a :class:`~privsim.kit.result.RunResult`
— the DCA run with the trusted aggregator on the same data as a baseline method when
the scenario asks for one.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.data.synthetic import SyntheticVectors
from privsim.kit.intnoise.dca import IntegerSetup
from privsim.kit.result import Abort, Communication, MethodResult, Privacy, RunResult, Timing
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.inputs import ClientData, ClientInputs
from privsim.kit.securesum.maths import client_noise_std
from privsim.kit.securesum.messages import DCA_KINDS
from privsim.kit.securesum.outcome import SumOutcome
from privsim.kit.world import agree_channels, build_world
from privsim.protocols.dca import trusted_aggregator as ta
from privsim.protocols.dca.coalition import reconstructed_dca_inputs
from privsim.protocols.dca.config import DataConfig
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger, Trust
from privsim.sim.names import PartyNames
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = [
    "Simulation",
    "coalition_exposure",
    "plan_ledger",
    "run_dca",
    "run_trusted_aggregator",
    "simulate",
    "target_error",
]

OUTPUT_PARTY = securesum.OUTPUT_PARTY
#: The ledger label of the one release, by protocol.
MECHANISM = {"dca": "secure-sum", "trusted_aggregator": "curator-sum"}

#: From this many clients, ``dca.delivery = "auto"`` sends the client shares in batches.
BATCHED_FROM_CLIENTS = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    """One simulated round with everything needed to analyse it."""

    scenario: Scenario
    seed: int
    protocol: str
    world: World
    outcome: SumOutcome
    data: ClientData
    clients: Sequence[str]
    nodes: tuple[str, ...]
    ledger: PrivacyLedger
    sensitivity: float
    sigma_std: float
    client_noise_std: float
    wall_seconds: float
    delivery: str

    @property
    def true_sum(self) -> npt.NDArray[np.float64]:
        """Σ z_i over every client (the target without dropouts)."""
        return self.data.sum()

    def included_sum(self) -> npt.NDArray[np.float64] | None:
        """Σ z_i over the clients the protocol included (the target it actually estimates)."""
        if self.outcome.included is None:
            return None
        return self.data.sum(self.outcome.included)

    def privacy(self) -> Privacy:
        """The ledger's guarantee against the realised coalition."""
        return Privacy.of(
            self.ledger,
            self.world.coalition,
            sensitivity_l2=self.sensitivity,
            sigma_std=self.sigma_std,
            client_noise_std=self.client_noise_std,
            calibration=self.scenario.privacy.calibration,
        )


def sensitivity(scenario: Scenario) -> float:
    """L2 sensitivity of Σ z_i with ||z_i|| <= C: 2C for replace-one, C for add/remove."""
    c = scenario.table("data", DataConfig).clip_norm
    return 2.0 * c if scenario.privacy.neighbour == "replace_one" else c


def _delivery(scenario: Scenario) -> str:
    """Resolve ``dca.delivery``. Batched delivery keeps no per-share view for colluding
    compute nodes, so a scenario with one uses the per-message path."""
    choice = scenario.table("dca", DcaConfig).delivery
    node_colludes = any(s.startswith("compute-") for s in scenario.threat.colluding_servers)
    if choice == "batched" and node_colludes:
        raise ValueError(
            "dca.delivery = 'batched' cannot record the shares colluding compute nodes receive; "
            "use delivery = 'per_message' (or 'auto') with threat.colluding_servers naming compute nodes"
        )
    if choice == "auto":
        batched = scenario.population.clients >= BATCHED_FROM_CLIENTS and not node_colludes
        return "batched" if batched else "per_message"
    return choice


@dataclass(frozen=True, slots=True, kw_only=True)
class _Charged:
    """The ledger with the release charged, and the noise it was charged for: σ of the
    sum, each client's σ_i (0 for the curator), and the integer mechanism if any."""

    ledger: PrivacyLedger
    sigma_std: float
    noise_std: float
    integer: IntegerSetup | None = None


def _charge(
    scenario: Scenario, protocol: str, clients: Sequence[str], nodes: tuple[str, ...]
) -> _Charged:
    """Charge ``protocol``'s release (refused over budget before anything runs): the
    secure sum while not every compute node colludes, with noise shares from the
    clients (or integer noise, charged by its own accountant); the curator's sum while
    the curator is honest."""
    n, privacy = len(clients), scenario.privacy
    delta_l2 = sensitivity(scenario)
    sigma_std = gaussian_sigma(privacy.epsilon, privacy.delta, delta_l2, privacy.calibration)
    ledger = PrivacyLedger(privacy.epsilon, privacy.delta, on_overspend=privacy.on_overspend)
    planned = dp_accounting.GaussianDpEvent(sigma_std / delta_l2)
    if protocol != "dca":
        curator = Trust.each(OUTPUT_PARTY, description="the curator honest")
        ledger.charge(MECHANISM[protocol], planned, trust=curator)
        return _Charged(ledger=ledger, sigma_std=sigma_std, noise_std=0.0)
    data_cfg, cfg = scenario.table("data", DataConfig), scenario.table("dca", DcaConfig)
    integer = securesum.integer_setup(
        scenario,
        n,
        data_cfg.dimension,
        data_cfg.clip_norm,
        replace_one=privacy.neighbour == "replace_one",
    )
    if integer is not None:  # integer noise mod 2^b, charged by its own accountant
        noise_std = integer.client_std
        sigma_std = noise_std * math.sqrt(integer.account.honest_clients)
        securesum.charge_integer(ledger, MECHANISM[protocol], integer, clients=clients, nodes=nodes)
        return _Charged(ledger=ledger, sigma_std=sigma_std, noise_std=noise_std, integer=integer)
    noise_std = client_noise_std(sigma_std, n, cfg.tolerated)
    securesum.charge(
        ledger,
        MECHANISM[protocol],
        event=planned,
        clients=clients,
        nodes=nodes,
        share_multiplier=noise_std / delta_l2,
        threshold=securesum.node_threshold(scenario),
    )
    return _Charged(ledger=ledger, sigma_std=sigma_std, noise_std=noise_std)


def plan_ledger(scenario: Scenario) -> PrivacyLedger:
    """The ledger as :func:`run_dca` or :func:`run_trusted_aggregator` charges it, before
    anything runs (the baseline's, charged after it, refused the same way)."""
    clients = tuple(f"client-{i}" for i in range(scenario.population.clients))
    protocol = scenario.protocol
    nodes = securesum.node_names(scenario) if protocol == "dca" else ()
    ledger = _charge(scenario, protocol, clients, nodes).ledger
    if protocol == "dca" and scenario.baseline:  # the baseline, run after it
        _charge(scenario, "trusted_aggregator", clients, ())
    return ledger


def simulate(
    scenario: Scenario,
    seed: int | None = None,
    *,
    protocol: str | None = None,
    keep_envelopes: bool = False,
) -> Simulation:
    """Simulate ``protocol`` (``"dca"`` or ``"trusted_aggregator"``; default: the
    scenario's) on the scenario's data and network."""
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    protocol = protocol or scenario.protocol
    if protocol not in ("dca", "trusted_aggregator"):
        raise ValueError(f"simulate runs 'dca' or 'trusted_aggregator', not {protocol!r}")
    streams = Streams(seed)
    data_cfg = scenario.table("data", DataConfig)
    cfg = scenario.table("dca", DcaConfig)
    n, d = scenario.population.clients, data_cfg.dimension
    clients = PartyNames("client-", n)
    all_nodes = securesum.node_names(scenario)
    nodes = all_nodes if protocol == "dca" else ()

    data = SyntheticVectors(  # each client clips its own vector
        n,
        d,
        mean=data_cfg.mean,
        scale=data_cfg.scale,
        clip_norm=data_cfg.clip_norm,
        stream=streams.keystream("data", "synthetic"),
        distribution=data_cfg.distribution,
    )
    delta_l2 = sensitivity(scenario)
    charged = _charge(scenario, protocol, clients, nodes)
    ledger, sigma_std, noise_std = charged.ledger, charged.sigma_std, charged.noise_std
    world = build_world(
        scenario,
        streams,
        itertools.chain(clients, nodes, [OUTPUT_PARTY]),
        ignore_servers=() if nodes else all_nodes,
        keep_envelopes=keep_envelopes,
    )
    if protocol == "dca":
        securesum.check_fixed_point(scenario, n, data_cfg.clip_norm, noise_std)
        plan = securesum.plan(scenario, clients, nodes, d, noise_std, integer=charged.integer)
        inputs = ClientInputs(
            data=data,
            noise=streams.keystream("dca", "noise"),
            randomness=streams.keystream("dca", "shares"),
            noise_std=noise_std,
            fraction_bits=cfg.fraction_bits,
            n_nodes=len(nodes),
        )
        delivery = _delivery(scenario)
        out = securesum.launch(world, plan, inputs, batched=delivery == "batched")
    else:
        delivery = "per_message"
        ta_plan = ta.TrustedAggregatorPlan(
            clients=clients,
            curator=OUTPUT_PARTY,
            dimension=d,
            sigma=sigma_std,
            timeout=cfg.share_timeout,
        )
        for agent in world.add_parties("client", clients):
            world.start(agent, ta.client(agent, data.rows([agent.role_index])[0], ta_plan))
        out = world.add_party(OUTPUT_PARTY, "aggregator")
        world.start(out, ta.curator(out, ta_plan))

    agree_channels(world, securesum.channel_pairs)
    world.run()
    outcome = securesum.outcome_of(out)
    securesum.settle(ledger, MECHANISM[protocol], outcome, clients)
    return Simulation(
        scenario=scenario,
        seed=seed,
        protocol=protocol,
        world=world,
        outcome=outcome,
        data=data,
        clients=clients,
        nodes=nodes,
        ledger=ledger,
        sensitivity=delta_l2,
        sigma_std=sigma_std,
        client_noise_std=noise_std,
        wall_seconds=time.perf_counter() - started,
        delivery=delivery,
    )


def _errors(sim: Simulation) -> dict[str, float] | None:
    released = sim.outcome.released
    included = sim.included_sum()
    if released is None or included is None:
        return None
    d = released.size
    vs_included = released - included
    vs_all = released - sim.true_sum
    return {
        "l2_error": float(np.linalg.norm(vs_included)),
        "rmse": float(np.linalg.norm(vs_included) / math.sqrt(d)),
        "relative_l2_error": float(
            np.linalg.norm(vs_included) / max(float(np.linalg.norm(included)), 1e-300)
        ),
        "l2_error_vs_all_clients": float(np.linalg.norm(vs_all)),
        "rmse_vs_all_clients": float(np.linalg.norm(vs_all) / math.sqrt(d)),
    }


def _abort(sim: Simulation) -> Abort | None:
    if sim.outcome.ok:
        return None
    return Abort(reason=str(sim.outcome.abort), detail=sim.outcome.detail)


def _included(sim: Simulation) -> list[str]:
    if sim.outcome.included is None:
        return []
    return [sim.clients[i] for i in np.flatnonzero(sim.outcome.included)]


def coalition_exposure(sim: Simulation) -> dict[str, Any]:
    """What the coalition learns, from its pooled view: ``inputs_reconstructed``, honest
    clients whose z_i + η_i it adds up from every node's share (Algorithm 1, step 2), or
    whose z_i a colluding curator received (its own members' inputs are not counted: it
    knows them anyway); and the coalition's estimate of an honest target's input
    (:func:`target_error`)."""
    coalition = sim.world.coalition
    view = sim.world.coalition_view()
    if sim.nodes:
        cfg = sim.scenario.table("dca", DcaConfig)
        found = reconstructed_dca_inputs(
            view,
            sim.nodes,
            cfg.fraction_bits,
            threshold=securesum.node_threshold(sim.scenario),
        )
        exposed = sum(1 for c in found if c not in coalition)
    else:
        exposed = len({m.src for m in view.messages_of(ta.Contribution) if m.src not in coalition})
    return {"inputs_reconstructed": exposed, **target_error(sim)}


def _client_index(party: str, n: int) -> int | None:
    """i for ``client-i`` with i < n, else None."""
    prefix, _, tail = party.rpartition("-")
    if prefix != "client" or not tail.isdigit() or int(tail) >= n:
        return None
    return int(tail)


def target_error(sim: Simulation) -> dict[str, Any]:
    """The coalition's estimate of an honest included client's z: the release minus every
    other included client's input (the worst case: it knows the honest ones'; its
    members' it reads from their declared state) minus its members' noise shares η_i.
    What is left is the noise of the H honest included clients, the target's own share
    among them — the same error for every target. ``target_error_rmse``: measured, per
    coordinate; ``target_error_sd_theory``: √H·σ_i (Heikkilä et al. 2017, Theorem 1,
    σ_i² = σ²/(N − T − 1); σ for the curator, 0 if it colludes); ``target_noise_ratio``
    = H·σ_i²/σ², the estimate's variance over the trusted aggregator's (≥ 1 while
    T′ + dropouts ≤ T). ``honest_noise_shares`` = H. Nothing released: H = 0 and
    ``target_error_rmse`` None."""
    released, included = sim.outcome.released, sim.outcome.included
    if released is None or included is None:
        return {
            "honest_noise_shares": 0,
            "target_error_rmse": None,
            "target_error_sd_theory": 0.0,
            "target_noise_ratio": 0.0,
        }
    coalition = sim.world.coalition
    view = sim.world.coalition_view()
    noise_key = DCA_KINDS.state_key("noise")
    # Every included input is known (the members' own from their declared state).
    error = np.asarray(released, dtype=np.float64) - sim.data.sum(included)
    honest = int(np.count_nonzero(included))
    for member in sorted(coalition):  # a fixed order: the sum is reproducible
        index = _client_index(member, len(sim.clients))
        if index is None or not included[index]:
            continue
        honest -= 1
        state = view.private.get(member, {})
        if noise_key in state:  # a colluding client subtracts its own noise share η_i
            error = error - np.asarray(state[noise_key])
    if sim.nodes:
        variance = honest * sim.client_noise_std**2
    elif OUTPUT_PARTY in coalition:  # a colluding curator received the target's z itself
        variance, error = 0.0, np.zeros_like(error)
    else:
        variance = sim.sigma_std**2
    return {
        "honest_noise_shares": honest,
        "target_error_rmse": float(np.linalg.norm(error) / math.sqrt(error.size)),
        "target_error_sd_theory": math.sqrt(variance),
        "target_noise_ratio": variance / sim.sigma_std**2,
    }


def _result(sim: Simulation, methods: dict[str, MethodResult]) -> RunResult:
    return RunResult.of_world(
        sim.scenario,
        sim.seed,
        sim.world,
        sim.ledger,
        holders=sim.clients,
        included=_included(sim) if sim.outcome.ok else None,
        abort=_abort(sim),
        privacy=sim.privacy(),
        accuracy=_errors(sim),
        output_party=OUTPUT_PARTY,
        exposure=coalition_exposure(sim),
        methods=methods,
        details={"delivery": sim.delivery},
        wall_seconds=sim.wall_seconds,
    )


def _baseline(scenario: Scenario, seed: int) -> MethodResult:
    base = simulate(scenario, seed, protocol="trusted_aggregator")
    return MethodResult(
        status="released" if base.outcome.ok else "aborted",
        abort=_abort(base),
        privacy=base.privacy(),
        accuracy=_errors(base),
        communication=Communication.of_world(base.world, output_party=OUTPUT_PARTY),
        timing=Timing(wall_seconds=base.wall_seconds),
    )


def run_dca(scenario: Scenario, seed: int) -> RunResult:
    """A DCA round, and the trusted aggregator on the same data if ``scenario.baseline``."""
    main = simulate(scenario, seed, protocol="dca")
    methods = {"trusted_aggregator": _baseline(scenario, seed)} if scenario.baseline else {}
    return _result(main, methods)


def run_trusted_aggregator(scenario: Scenario, seed: int) -> RunResult:
    """The trusted-aggregator round alone."""
    return _result(simulate(scenario, seed, protocol="trusted_aggregator"), {})
