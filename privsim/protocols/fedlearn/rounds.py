"""One training round on its own world: the picked clients, the server and (for DCA)
the compute nodes, with the scenario's network, this round's faults and the members of
the coalition that were picked. A world per round keeps time and memory O(cohort):
only picked clients ever become agents."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.intnoise.dca import IntegerClientInputs
from privsim.kit.secagg import round as secagg
from privsim.kit.securesum import behaviours as dca_roles
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.kit.world import agree_channels, build_world
from privsim.protocols.fedlearn import behaviours as roles
from privsim.protocols.fedlearn.accounting import SERVER
from privsim.protocols.fedlearn.attacks import RoundTweaks, defences
from privsim.protocols.fedlearn.config import TrainingConfig
from privsim.protocols.fedlearn.integer import IntegerPlan
from privsim.protocols.fedlearn.plan import TrainingPlan
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent
from privsim.sim.coalition import CoalitionSpec
from privsim.sim.faults import FaultSpec
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = ["CohortUpdates", "RoundRun", "releases_empty_rounds", "simulate_round"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class CohortUpdates:
    """The picked clients' clipped updates u_i (k, P), as DCA's client data: row i is
    the update of the cohort's i-th client."""

    values: F64

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    @property
    def dimension(self) -> int:
        return int(self.values.shape[1])

    def rows(self, clients: npt.ArrayLike) -> F64:
        return np.array(self.values[np.asarray(clients, dtype=np.int64)], dtype=np.float64)

    def sum(self, mask: npt.NDArray[np.bool_] | None = None) -> F64:
        return np.asarray(
            self.values.sum(axis=0) if mask is None else self.values[mask].sum(axis=0)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundRun:
    """A finished round: its worlds (one, or with SecAgg the download and the secure
    aggregation) and what the server received."""

    worlds: tuple[World, ...]
    outcome: SumOutcome
    names: tuple[str, ...]

    @property
    def world(self) -> World:
        """The world of the aggregation."""
        return self.worlds[-1]

    def included(self) -> tuple[str, ...] | None:
        """The clients whose update is in the release (None: nothing released)."""
        if self.outcome.released is None or self.outcome.included is None:
            return None
        return tuple(self.names[i] for i in np.flatnonzero(self.outcome.included))


def _round_faults(
    scenario: Scenario, names: Collection[str], offline: Collection[str]
) -> FaultSpec:
    """The scenario's faults on this round's parties, with the offline picked clients
    absent from the start."""
    faults = scenario.faults
    present = set(names) | {SERVER} | set(securesum.node_names(scenario))
    return dataclasses.replace(
        faults,
        absent_parties=tuple(p for p in faults.absent_parties if p in present)
        + tuple(sorted(offline)),
        crashes=tuple((p, t) for p, t in faults.crashes if p in present),
    )


def simulate_round(
    scenario: Scenario,
    streams: Streams,
    *,
    names: tuple[str, ...],
    online: npt.NDArray[np.bool_],
    updates: CohortUpdates,
    params: F64,
    plan: TrainingPlan,
    coalition: frozenset[str],
    secure: secagg.RoundPlan | None = None,
    tweaks: RoundTweaks | None = None,
    unclipped: frozenset[str] = frozenset(),
) -> RoundRun:
    """Run one round of the training ``plan``: the server sends ``params`` to every
    picked client (``names``), the ``online`` ones return their row of ``updates``
    through the aggregation (``secure``: the SecAgg round planned for it; ``tweaks``:
    what an active server changes in the round; ``unclipped``: malicious clients, whose
    own encoding skips the clipping where the client applies it, DCA's integer noise)."""
    training = scenario.table("training", TrainingConfig)
    tweaks = RoundTweaks() if tweaks is None else tweaks
    # training.update_check: a client whose range proof fails is rejected, as if dropped
    online = defences.admitted(training, updates.values, online, _scale(plan))
    if secure is not None:
        found = _secure_round(
            scenario,
            streams,
            names=names,
            online=online,
            updates=updates,
            params=params,
            coalition=coalition,
            secure=secure,
            tweaks=tweaks,
        )
        return _checked(training, plan, found)
    dca = training.aggregation == "dca"
    nodes = securesum.node_names(scenario) if dca else ()
    offline = [c for c, up in zip(names, online.tolist(), strict=True) if not up]
    servers = tuple(s for s in scenario.threat.colluding_servers if s == SERVER or s in nodes)
    world = build_world(
        scenario,
        streams,
        [*names, *nodes, SERVER],
        faults=_round_faults(scenario, names, offline),
        coalition=CoalitionSpec(clients=tuple(c for c in names if c in coalition), servers=servers),
    )
    round_plan = roles.RoundPlan(
        clients=names,
        server=SERVER,
        params=params,
        deadline=training.deadline,
        release_empty=releases_empty_rounds(training),
        params_for=tweaks.params_for,
        check=_model_check(training, names, training.deadline, None),
    )
    if dca:
        rows = frozenset(i for i, c in enumerate(names) if c in unclipped)
        server = _launch_dca(world, scenario, round_plan, updates, plan, streams, rows)
    else:
        server = _launch_direct(world, round_plan, updates, plan, streams)
    agree_channels(world, lambda w: channel_pairs(w) + _check_pairs(round_plan))
    world.run()
    run = RoundRun(worlds=(world,), outcome=securesum.outcome_of(server), names=names)
    return _checked(training, plan, run)


def _model_check(
    training: TrainingConfig,
    names: tuple[str, ...],
    deadline: float,
    neighbours: Callable[[int], npt.ArrayLike] | None,
) -> roles.ModelCheck | None:
    """``training.model_check``: the clients' digest exchange, closing at half the
    window ``deadline`` (``neighbours``: SecAgg+'s graph; None: every other client)."""
    if not training.model_check:
        return None
    return roles.model_check(names, deadline / 2.0, neighbours)


def _check_pairs(plan: roles.RoundPlan) -> list[tuple[str, str]]:
    """The client-to-client channels of the model check (none without one)."""
    return [] if plan.check is None else plan.check.pairs()


def _scale(plan: TrainingPlan) -> float | None:
    """The fixed-point scale 2^f of the rounds' integer inputs (None: real inputs)."""
    return None if plan.integer is None else float(1 << plan.integer.fraction_bits)


def _checked(training: TrainingConfig, plan: TrainingPlan, run: RoundRun) -> RoundRun:
    """``update_check = "norm_bound"``: the released sum rescaled to the norm k honest
    clipped updates and the noise reach (:func:`~privsim.protocols.fedlearn.attacks.
    defences.norm_bound`); otherwise the round as it ran."""
    found = run.outcome
    if training.update_check != "norm_bound" or found.released is None or found.included is None:
        return run
    k = int(np.count_nonzero(found.included))
    released = np.asarray(found.released, dtype=np.float64)
    std = defences.sum_std(training, plan, k)
    bounded = defences.norm_bound(
        released, defences.norm_bound_of(k, training.clip_norm, std, released.size)
    )
    if bounded is released:
        return run
    return dataclasses.replace(run, outcome=dataclasses.replace(found, released=bounded))


def releases_empty_rounds(training: TrainingConfig) -> bool:
    """Whether the server releases a round that nothing reached: the curator's noise
    alone (``trusted``), so that whether a round releases never depends on the cohort
    (an empty Poisson cohort is still the sampled mechanism's release)."""
    return training.aggregation == "trusted"


def plan_secure_round(
    scenario: Scenario, streams: Streams, names: tuple[str, ...], integer: IntegerPlan, r: int
) -> secagg.RoundPlan | None:
    """Round r's SecAgg(+) plan for the picked ``names``: (k, t) for the planned dropout
    and the colluding share of the population, or ``training.corruption`` when given
    (Bell et al. 2020; SecAgg: the complete
    graph), the round's graph from its streams, the integer noise; None when the cohort
    is too small for a round (fewer than 2 clients, or no (k, t) meets the targets)."""
    training = scenario.table("training", TrainingConfig)
    if len(names) < 2:
        return None
    colluders = scenario.threat.colluding_clients
    share = (
        colluders if isinstance(colluders, int) else len(colluders)
    ) / scenario.population.clients
    if training.corruption is not None:  # planned apart from the realised coalition
        share = training.corruption
    params = secagg.choose_parameters(
        len(names),
        dropout=training.expected_dropout,
        corruption=min(share, 0.49),
        security_bits=training.security_bits,
        correctness_bits=training.correctness_bits,
        complete=training.aggregation == "secagg",
    )
    if params is None:
        return None
    return secagg.plan(
        names,
        SERVER,
        params=params,
        dimension=integer.account.dimension,
        bits=integer.bits,
        streams=streams,
        fraction_bits=integer.fraction_bits,
        noise=integer.noise(),
        round_timeout=training.deadline / 8.0,
        label=("secagg", r),
    )


def _coalition(
    scenario: Scenario, names: Collection[str], coalition: frozenset[str]
) -> CoalitionSpec:
    servers = tuple(s for s in scenario.threat.colluding_servers if s == SERVER)
    return CoalitionSpec(clients=tuple(c for c in names if c in coalition), servers=servers)


def _secure_round(
    scenario: Scenario,
    streams: Streams,
    *,
    names: tuple[str, ...],
    online: npt.NDArray[np.bool_],
    updates: CohortUpdates,
    params: F64,
    coalition: frozenset[str],
    secure: secagg.RoundPlan,
    tweaks: RoundTweaks,
) -> RoundRun:
    """A SecAgg round in two worlds: the model's download (the clients that miss it by
    half the deadline stay out), then the four rounds of secure aggregation, each
    closing after a quarter of the other half."""
    training = scenario.table("training", TrainingConfig)
    offline = {c for c, up in zip(names, online.tolist(), strict=True) if not up}
    half = training.deadline / 2.0
    down = build_world(
        scenario,
        Streams(streams.seed_sequence("download")),
        [*names, SERVER],
        faults=_round_faults(scenario, names, offline),
        coalition=_coalition(scenario, names, coalition),
    )
    plan = roles.RoundPlan(
        clients=names,
        server=SERVER,
        params=params,
        deadline=half,
        params_for=tweaks.params_for,
        check=_model_check(training, names, half, secure.graph.neighbours),
    )
    for agent in down.add_parties("client", names):
        down.start(agent, roles.receiver(agent, plan))
    server = down.add_party(SERVER, "server")  # SecAgg's role name for it
    down.start(server, roles.sender(server, plan))
    agree_channels(down, lambda w: channel_pairs(w) + _check_pairs(plan))
    down.run()
    missed = {c for c in names if down.agents[c].result is not True}
    world = build_world(
        scenario,
        streams,
        [*names, SERVER],
        faults=_round_faults(scenario, names, missed),
        coalition=_coalition(scenario, names, coalition),
    )
    isolation = (  # an active server opening the target alone (attacks.isolation)
        None if tweaks.isolate is None else secagg.isolation_of(secure, tweaks.isolate, coalition)
    )
    with secagg.launch(world, secure, updates.values, isolation=isolation) as launched:
        agree_channels(world, lambda _: secagg.channel_pairs(secure))
        world.run()
    found = secagg.outcome_of(launched)
    if found.released is None or found.included is None:
        outcome = SumOutcome.aborted(
            AbortReason.TOO_MANY_DROPOUTS, f"{found.abort}: {found.detail}"
        )
    else:
        mask = np.zeros(len(names), dtype=bool)
        mask[found.included] = True
        outcome = SumOutcome(released=np.asarray(found.released, dtype=np.float64), included=mask)
    return RoundRun(worlds=(down, world), outcome=outcome, names=names)


def channel_pairs(world: World) -> list[tuple[str, str]]:
    """Who talks to whom in a round: the server with every picked client (the model
    goes down), and with DCA the clients with the compute nodes, the nodes among
    themselves and with the server (its output party)."""
    roles = world.parties_by_role
    clients, nodes = list(roles.get("client", ())), list(roles.get("compute", ()))
    pairs = [(c, SERVER) for c in clients]
    pairs += [(c, k) for c in clients for k in nodes]
    pairs += [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :]]
    pairs += [(k, SERVER) for k in nodes]
    return pairs


def _launch_dca(
    world: World,
    scenario: Scenario,
    plan: roles.RoundPlan,
    updates: CohortUpdates,
    training_plan: TrainingPlan,
    streams: Streams,
    unclipped: frozenset[int] = frozenset(),
) -> Agent:
    """DCA: the picked clients, the compute nodes and the server as the output party;
    with integer noise, inputs scaled by 2^f, conditionally rounded and integer-noised
    mod 2^b (:class:`~privsim.kit.intnoise.dca.IntegerClientInputs`). Under Poisson
    sampling the round releases whatever reached the sum (an abort for dropouts beyond
    T would depend on the cohort's size, which the target changes)."""
    noise, integer = training_plan.noise, training_plan.integer
    cfg = scenario.table("dca", DcaConfig)
    nodes = securesum.node_names(scenario)
    setup = (
        None
        if integer is None
        else integer.setup(scenario.table("training", TrainingConfig).clip_norm)
    )
    sum_plan = dataclasses.replace(
        securesum.plan(
            scenario, plan.clients, nodes, updates.dimension, noise.share_std, integer=setup
        ),
        aggregator=SERVER,
        share_timeout=plan.deadline,
        tolerated=noise.tolerated,
        fraction_bits=cfg.fraction_bits if integer is None else integer.fraction_bits,
    )
    if training_plan.poisson:
        sum_plan = dataclasses.replace(sum_plan, release_beyond_tolerance=True)
    inputs: ClientInputs = ClientInputs(
        data=updates,
        noise=streams.keystream("dca", "noise"),
        randomness=streams.keystream("dca", "shares"),
        noise_std=noise.share_std,
        fraction_bits=sum_plan.fraction_bits,
        n_nodes=len(nodes),
        share_mode=sum_plan.share_mode,
        threshold=sum_plan.threshold,
    )
    if setup is not None:
        inputs = IntegerClientInputs(
            data=updates,
            noise=inputs.noise,
            randomness=inputs.randomness,
            noise_std=setup.client_std,
            fraction_bits=sum_plan.fraction_bits,
            n_nodes=len(nodes),
            share_mode=sum_plan.share_mode,
            threshold=sum_plan.threshold,
            setup=setup,
            unclipped=unclipped,
        )
    for agent in world.add_parties("client", plan.clients):
        world.start(agent, roles.dca_client(agent, plan, inputs, sum_plan))
    for node in nodes:
        agent = world.add_party(node, "compute")
        world.start(agent, dca_roles.compute_node(agent, sum_plan))
    server = world.add_party(SERVER, "aggregator")
    world.start(server, roles.dca_server(server, plan, sum_plan))
    return server


def _launch_direct(
    world: World,
    plan: roles.RoundPlan,
    updates: CohortUpdates,
    training_plan: TrainingPlan,
    streams: Streams,
) -> Agent:
    """``trusted`` / ``local``: the picked clients send to the server."""
    training, noise = training_plan.training, training_plan.noise
    local = training.aggregation == "local"
    local_noise = streams.keystream("local", "noise")

    def update(i: int) -> F64:
        values = updates.rows([i])[0]
        if local:  # η_i ~ N(0, σ²I): the client's own noise, the whole of it
            values = values + noise.sigma * local_noise.normal([i], updates.dimension)[0]
        return values

    central = streams.generator("curator", "noise")

    def finish(total: F64, included: npt.NDArray[np.bool_]) -> F64:
        if training.aggregation != "trusted":
            return total
        # the curator sees each update: it clips what a malicious client left unclipped
        total = defences.curator_clip(total, updates.values[included], training.clip_norm)
        scale = noise.sigma  # on the sum; on the mean over k clients: σ·k/m on the sum
        if training.central_noise == "mean":
            scale = noise.sigma * int(included.sum()) / noise.cohort
        return total + scale * central.standard_normal(total.size)

    for agent in world.add_parties("client", plan.clients):
        world.start(agent, roles.client(agent, plan, update))
    server = world.add_party(SERVER, "aggregator")
    world.start(server, roles.server(server, plan, finish))
    return server
