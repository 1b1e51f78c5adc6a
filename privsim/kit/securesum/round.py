"""One DCA secure-sum round as a sub-protocol other protocols call (Heikkilä et al.
2017, Algorithm 1 with the §3.1.3 agreement and Theorem 1's noise scaling).

A protocol that sums through DCA plans the round (:func:`plan`), checks the fixed-point
range (:func:`check_fixed_point`), launches its parties on a world (:func:`launch`),
and charges and settles the release on its ledger (:func:`charge`, :func:`settle`):
the event trusts that not every compute node colludes, and its noise comes in shares
from the clients, of which only the honest included ones protect anyone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import dp_accounting
import numpy as np

from privsim.kit.intnoise.accounting import account, calibrate
from privsim.kit.intnoise.dca import IntegerClientInputs, IntegerSetup
from privsim.kit.intnoise.modulus import ModulusTooSmallError, plan_modulus
from privsim.kit.intnoise.noise import IntegerNoise, NoiseKind
from privsim.kit.intnoise.rounding import integer_sensitivity
from privsim.kit.intnoise.samplers import SKELLAM_MAX_MU
from privsim.kit.securesum import behaviours as dca
from privsim.kit.securesum import pool
from privsim.kit.securesum.batched import (
    CHUNK_BYTES,
    THREADS,
    ShareRound,
    client_population,
    compute_node_batched,
)
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.inputs import ClientInputs, ShareSource
from privsim.kit.securesum.maths import fixed_point_bound
from privsim.kit.securesum.messages import DCA_KINDS, DcaKinds
from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.kit.spec import PARTY_BYTES
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent
from privsim.sim.ledger import NoiseShares, PrivacyLedger, Trust
from privsim.sim.names import PartyNames, Picked
from privsim.sim.world import World

__all__ = [
    "OUTPUT_PARTY",
    "channel_pairs",
    "charge",
    "charge_integer",
    "check_fixed_point",
    "check_secure_sum",
    "integer_setup",
    "launch",
    "node_names",
    "node_threshold",
    "outcome_of",
    "plan",
    "secure_sum_bytes",
    "secure_sum_seconds",
    "settle",
]

#: The party that receives the released sum.
OUTPUT_PARTY = "aggregator"


def node_names(scenario: Scenario) -> tuple[str, ...]:
    """The compute nodes ``compute-0`` … ``compute-(M−1)``."""
    return tuple(f"compute-{k}" for k in range(scenario.population.compute_nodes))


def _config(scenario: Scenario) -> DcaConfig:
    return scenario.table("dca", DcaConfig)


def check_secure_sum(scenario: Scenario, clients: int) -> None:
    """Theorem 1 needs N > T + 1 contributors; DCA needs at least two compute nodes."""
    t = _config(scenario).tolerated
    if clients <= t + 1:
        raise FieldError(
            "dca.tolerated",
            f"N = {clients} clients with T = {t} leaves N - T - 1 = {clients - t - 1} honest "
            "clients to carry the noise (Theorem 1 needs N > T + 1)",
            f"lower dca.tolerated below {clients - 1} or raise population.clients above {t + 1}",
        )
    if scenario.population.compute_nodes < 2:
        raise FieldError(
            "population.compute_nodes",
            "DCA needs at least 2 compute nodes (one node would see every input)",
            "set compute_nodes = 2 or more",
        )
    claims = _config(scenario).false_claims
    if claims and not any(s.startswith("compute-") for s in scenario.threat.colluding_servers):
        raise FieldError(
            "dca.false_claims",
            f"{claims} false claims need a compute node in the coalition to make them",
            'name one in threat.colluding_servers (e.g. ["compute-0"]) or drop dca.false_claims',
        )
    threshold, m = _config(scenario).threshold, scenario.population.compute_nodes
    if threshold is not None and threshold > m:
        raise FieldError(
            "dca.threshold",
            f"t = {threshold} exceeds the M = {m} compute nodes",
            f"set 2 <= dca.threshold <= {m}",
        )


def node_threshold(scenario: Scenario) -> int | None:
    """Compute nodes that must collude to see an input: t with Shamir shares (None: all)."""
    cfg = _config(scenario)
    return cfg.threshold if cfg.share_mode == "shamir" else None


def plan(
    scenario: Scenario,
    clients: tuple[str, ...],
    nodes: tuple[str, ...],
    dimension: int,
    noise_std: float,
    kinds: DcaKinds = DCA_KINDS,
    *,
    integer: IntegerSetup | None = None,
) -> dca.DcaPlan:
    """The public DCA parameters of ``scenario`` for one secure sum of ``dimension``
    (with ``integer``: the sum mod 2^b of integer-noised inputs, see :func:`integer_setup`).
    A protocol that does not pass ``integer`` sums with continuous Gaussian noise only:
    ``dca.noise`` set to an integer kind is then refused rather than ignored."""
    cfg = _config(scenario)
    if integer is None and cfg.noise_kind != "gaussian":
        raise FieldError(
            "dca.noise",
            f"{cfg.noise!r}: protocol {scenario.protocol!r} sums through DCA with continuous "
            "Gaussian noise only",
            "drop dca.noise for this protocol (integer noise is available to protocol 'dca')",
        )
    return dca.DcaPlan(
        clients=clients,
        nodes=nodes,
        aggregator=OUTPUT_PARTY,
        dimension=dimension,
        client_noise_std=noise_std,
        fraction_bits=cfg.fraction_bits,
        tolerated=cfg.tolerated,
        share_timeout=cfg.share_timeout,
        agreement_timeout=cfg.agreement_timeout,
        sum_timeout=cfg.sum_timeout,
        release_beyond_tolerance=cfg.on_excess_dropout == "release",
        release_empty=cfg.on_excess_dropout != "release",  # see DcaPlan
        share_mode=cfg.share_mode,
        threshold=cfg.threshold or 0,
        false_claims=cfg.false_claims or 0,
        kinds=kinds,
        modulus_bits=64 if integer is None else integer.bits,
        integer=integer,
    )


def integer_setup(
    scenario: Scenario, clients: int, dimension: int, clip_norm: float, *, replace_one: bool
) -> IntegerSetup | None:
    """The integer mechanism of a secure sum when ``dca.noise`` asks for one (else None):
    inputs clipped to ``clip_norm``, scaled by s = 2^fraction_bits and conditionally
    rounded; noise calibrated (bisection on the papers' bounds) to the scenario's (ε, δ)
    for N − T − 1 honest shares; the modulus planned for N clients, or ``dca.modulus_bits``
    if at least the plan's (else a :class:`FieldError` naming it)."""
    cfg = _config(scenario)
    if cfg.noise is None or cfg.noise == "gaussian":
        return None
    kind: NoiseKind = cfg.noise
    honest = clients - cfg.tolerated - 1
    if honest < 1:
        check_secure_sum(scenario, clients)
    mechanism = IntegerNoise(kind=kind, scale=float(2**cfg.fraction_bits), beta=cfg.beta)
    sensitivity = integer_sensitivity(
        clip_norm, mechanism.scale, dimension, mechanism.beta, replace_one=replace_one
    )
    privacy = scenario.privacy
    parameter = calibrate(
        kind,
        privacy.epsilon,
        delta=privacy.delta,
        honest_clients=honest,
        sensitivity=sensitivity,
        dimension=dimension,
    )
    accounted = account(
        kind,
        parameter,
        honest_clients=honest,
        sensitivity=sensitivity,
        dimension=dimension,
        delta=privacy.delta,
    )
    try:
        modulus = plan_modulus(
            clients, dimension, clip_norm, mechanism.scale, parameter, kind, cfg.wrap_bound
        )
        bits = modulus.bits if cfg.modulus_bits is None else cfg.modulus_bits
        modulus.check(bits)
    except ModulusTooSmallError as exc:
        raise FieldError(
            "dca.modulus_bits",
            str(exc),
            "leave dca.modulus_bits out (the planner's choice) or raise it; lower "
            "dca.fraction_bits (coarser rounding) or raise dca.wrap_probability",
        ) from exc
    if kind == "skellam" and parameter > SKELLAM_MAX_MU:
        raise FieldError(
            "dca.fraction_bits",
            f"the Skellam noise this needs has a Poisson mean of {parameter:.4g} per client, "
            f"beyond the {SKELLAM_MAX_MU:.4g} the sampler draws",
            f"lower dca.fraction_bits (now {cfg.fraction_bits}; each bit fewer divides the "
            "mean by 4) or use dca.noise = 'discrete_gaussian'",
        )
    return IntegerSetup(
        mechanism=mechanism,
        parameter=parameter,
        account=accounted,
        modulus=modulus,
        bits=bits,
        clip=clip_norm,
    )


def check_fixed_point(scenario: Scenario, n: int, peak_value: float, noise_std: float) -> None:
    """The decoded sum must stay inside the signed fixed-point range (with a 10σ margin):
    ``n`` clients, each entry at most ``peak_value`` plus noise of ``noise_std``. With
    Shamir shares the sum lives in F_p, p = 2^61 − 1: the range is ±2^(60−f)."""
    cfg = _config(scenario)
    bits = cfg.fraction_bits
    peak = n * (peak_value + 10.0 * noise_std)
    bound = fixed_point_bound(bits) / (8.0 if cfg.share_mode == "shamir" else 1.0)
    if not peak < bound:
        raise FieldError(
            "dca.fraction_bits",
            f"{bits}: a sum of {n} clients can reach {peak:.3g}, beyond the fixed-point "
            f"range ±{bound:.3g}",
            "lower dca.fraction_bits, or raise privacy.epsilon (less noise)",
        )


#: Batched delivery's memory per client (its name, positions and per-role state; no
#: agent object is made for it) and per message it sends (trace and flight records):
#: fitted to peaks measured at N = 10⁶, d = 10 with M = 3, 10 and 20 (545, 967 and
#: 1,618 bytes per client: 356 + 63·M), rounded up.
BATCHED_CLIENT_BYTES = 512
BATCHED_MESSAGE_BYTES = 72
#: With sealed channels, each client–node pair's key and nonce state besides: fitted to
#: 2,786 bytes per client measured at N = 10⁵, d = 10, M = 10 (182 per pair), rounded up.
SEALED_PAIR_BYTES = 192


def secure_sum_bytes(
    clients: int, nodes: int, dimension: int, *, batched: bool, sealed: bool = False
) -> int:
    """Estimated peak memory of one DCA round, in bytes. Per message, every client's
    vector, noise and M shares are in flight at once: N·d·8·(M+2), and N·PARTY_BYTES for
    the parties themselves. Batched, the shares are made and summed in chunks: THREADS
    chunks of CHUNK_BYTES (or of one client's M shares, if larger), three times over,
    plus the nodes' sums, 8·d·(M+2); and N·(:data:`BATCHED_CLIENT_BYTES` + M ·
    :data:`BATCHED_MESSAGE_BYTES`) for the clients, and M · :data:`SEALED_PAIR_BYTES` more
    with ``sealed`` channels. A round large enough for worker processes
    (:mod:`~privsim.kit.securesum.pool`) adds, per worker, its interpreter
    (:data:`~privsim.kit.securesum.pool.WORKER_BYTES`) and its chunks."""
    n, m, d = clients, max(nodes, 1), dimension
    if batched:
        chunk = 3 * max(CHUNK_BYTES, 8 * m * d)
        shares = THREADS * chunk + 8 * d * (m + 2)
        if pool.use_processes(pool.round_seconds(n, m, d, seeded=True, sealed=True)):
            shares += pool.workers() * (pool.WORKER_BYTES + chunk + 8 * d * m)
        per_message = BATCHED_MESSAGE_BYTES + (SEALED_PAIR_BYTES if sealed else 0)
        return n * (BATCHED_CLIENT_BYTES + m * per_message) + shares
    return n * PARTY_BYTES + n * d * 8 * (m + 2)


#: Measured costs behind :func:`secure_sum_seconds` (benchmarks/bench_table1.py,
#: bench_dca.py and bench_estimates.py on the reference machine, one core): time per
#: message on the per-message path (engine 85 µs plus the sender's data and network
#: draws) and batched, per 64-bit word of shares made and summed, per pair of parties
#: agreeing keys (X25519 + HKDF), and per byte sealed and opened with AES-GCM.
SECONDS_PER_MESSAGE = 170e-6
SECONDS_PER_BATCHED_MESSAGE = 1.7e-6
SECONDS_PER_SHARE_WORD = 9e-9
SECONDS_PER_KEY_PAIR = 85e-6
SECONDS_PER_SEALED_BYTE = 1e-9


def secure_sum_seconds(
    clients: int, nodes: int, dimension: int, *, batched: bool, encrypted: bool
) -> float:
    """Estimated wall time of one DCA round: messages (N·M shares, M² agreement and sum
    messages) times the engine's cost per message, plus the N·M·d share words made and
    summed; with encryption, N·M + M² key pairs agreed and N·M·d·8 bytes sealed and
    opened. An order-of-magnitude estimate (within a few times of the measured figures)
    for refusing runs that would not finish, not a prediction."""
    n, m, d = clients, max(nodes, 1), dimension
    messages = n * m + m * m + m
    per_message = SECONDS_PER_BATCHED_MESSAGE if batched else SECONDS_PER_MESSAGE
    seconds = messages * per_message + n * m * d * SECONDS_PER_SHARE_WORD
    if encrypted:
        seconds += (n * m + m * m) * SECONDS_PER_KEY_PAIR
        seconds += 2 * n * m * d * 8 * SECONDS_PER_SEALED_BYTE
    return seconds


def channel_pairs(world: World) -> list[tuple[str, str]]:
    """Who talks to whom in a secure sum: clients to the servers (the compute nodes, or
    the output party when there are none), compute nodes among themselves and to the
    output party."""
    roles = world.parties_by_role
    servers = roles.get("compute", []) or [OUTPUT_PARTY]
    pairs = [(c, s) for c in roles.get("client", []) for s in servers]
    nodes = roles.get("compute", [])
    pairs += [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :]]
    pairs += [(a, OUTPUT_PARTY) for a in nodes]
    return pairs


def launch(
    world: World, plan: dca.DcaPlan, inputs: ShareSource | ClientInputs, *, batched: bool
) -> Agent:
    """Add and start the round's clients, compute nodes and output party; returns the
    output party, whose result is the :class:`SumOutcome` (see :func:`outcome_of`).
    ``batched`` sends the client shares in one event per node (identical results, no
    per-share coalition view)."""
    agents = world.add_parties("client", plan.clients)
    if plan.integer is not None and type(inputs) is ClientInputs:
        inputs = IntegerClientInputs(
            data=inputs.data,
            noise=inputs.noise,
            randomness=inputs.randomness,
            noise_std=plan.integer.client_std,
            fraction_bits=inputs.fraction_bits,
            n_nodes=inputs.n_nodes,
            setup=plan.integer,
        )
    if plan.share_mode != "full":
        if not isinstance(inputs, ClientInputs):
            raise FieldError(
                "dca.shares",
                f"'{plan.share_mode}' shares are made by DCA's own client inputs; this "
                "protocol brings its own shares",
                "leave dca.shares out (full shares) for this protocol",
            )
        if (inputs.share_mode, inputs.threshold) != (plan.share_mode, plan.threshold):
            inputs = dataclasses.replace(
                inputs, share_mode=plan.share_mode, threshold=plan.threshold
            )
    if batched:
        if not isinstance(inputs, ClientInputs):
            raise TypeError("batched delivery needs ClientInputs (chunked share generation)")
        shares = ShareRound(world, plan, inputs)
        world.start_group(
            "clients", client_population(world, plan, inputs, prefetch=shares.prefetch)
        )
    else:
        for agent in agents:
            world.start(agent, dca.client(agent, inputs, plan))
    for node in plan.nodes:
        agent = world.add_party(node, "compute")
        if batched:
            world.start(agent, compute_node_batched(agent, plan, shares))
        else:
            world.start(agent, dca.compute_node(agent, plan))
    out = world.add_party(plan.aggregator, "aggregator")
    world.start(out, dca.aggregator(out, plan))
    return out


def outcome_of(agent: Agent) -> SumOutcome:
    """The output party's outcome (an abort if it crashed or never finished)."""
    if isinstance(agent.result, SumOutcome):
        return agent.result
    return SumOutcome.aborted(AbortReason.SUMS_MISSING, f"{agent.id} crashed or never started")


def charge(
    ledger: PrivacyLedger,
    label: str,
    *,
    event: dp_accounting.DpEvent,
    clients: Sequence[str],
    nodes: Sequence[str],
    share_multiplier: float = 0.0,
    noise: str = "gaussian",
    needed: int = 0,
    threshold: int | None = None,
) -> None:
    """Charge a secure-sum release: ``event`` holds while not every compute node
    colludes (with Shamir shares: while fewer than ``threshold`` do), with noise in
    shares from ``clients`` (Gaussian shares of multiplier ``share_multiplier`` = σ_i/Δ,
    or Gamma-split Laplace needing ``needed`` shares)."""
    trust = (
        Trust.one_of(nodes, description="not all compute nodes colluding")
        if threshold is None
        else Trust.fewer_than(
            threshold, nodes, description=f"fewer than t = {threshold} compute nodes colluding"
        )
    )
    ledger.charge(
        label,
        event,
        trust=trust,
        noise=NoiseShares(
            contributors=clients if isinstance(clients, PartyNames) else tuple(clients),
            kind=noise,
            share_multiplier=share_multiplier,
            needed=needed,
        ),
    )


def charge_integer(
    ledger: PrivacyLedger,
    label: str,
    setup: IntegerSetup,
    *,
    clients: Sequence[str],
    nodes: Sequence[str],
) -> None:
    """Charge a secure sum with integer noise: the accountant's (ε, δ) as its equivalent
    Gaussian event (:func:`~privsim.kit.intnoise.accounting.equivalent_gaussian`),
    holding while not every compute node colludes; with H honest included clients the
    ledger credits the papers' bound at H − 1 shares (the target's own uncredited), so
    N − T gives the planned event, more is better and fewer (but two or more) is finite
    and worse (:meth:`~privsim.kit.intnoise.accounting.IntegerAccount.noise_shares`)."""
    ledger.charge(
        label,
        setup.account.event,
        trust=Trust.one_of(nodes, description="not all compute nodes colluding"),
        noise=setup.account.noise_shares(clients),
    )


def settle(
    ledger: PrivacyLedger, label: str, outcome: SumOutcome | None, clients: Sequence[str]
) -> None:
    """Settle a secure-sum release: withheld on an abort, else released with the noise
    shares of the included clients."""
    if outcome is None or outcome.released is None or outcome.included is None:
        ledger.withhold(label)
        return
    included = np.flatnonzero(outcome.included)
    contributors: Sequence[str]
    if isinstance(clients, PartyNames):  # a view: no name is made for the ledger
        contributors = Picked(clients, included)
    else:
        contributors = [clients[i] for i in included.tolist()]
    ledger.settle(label, contributors=contributors)
