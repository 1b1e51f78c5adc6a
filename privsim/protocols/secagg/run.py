"""A SecAgg or SecAgg+ run: synthetic client vectors summed in one four-round
aggregation on the bus (the kit's round, :mod:`privsim.kit.secagg.round`), with the
scenario's (k, t) and noise plan, and what it achieved.

:func:`simulate` builds one world and returns it with the outcome (for tests and
analyses that want the trace); :func:`run_secagg` summarises it into a
:class:`~privsim.kit.result.RunResult`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.data.synthetic import SyntheticVectors
from privsim.kit.intnoise.accounting import account, calibrate
from privsim.kit.intnoise.modulus import ModulusTooSmallError, plan_modulus
from privsim.kit.intnoise.noise import NoiseKind, client_parameter
from privsim.kit.intnoise.rounding import integer_sensitivity as kit_sensitivity
from privsim.kit.result import Abort, Privacy, RunResult
from privsim.kit.secagg import round as secagg
from privsim.kit.secagg.graph import Graph, Parameters, choose_parameters
from privsim.kit.secagg.keybook import KeyBook
from privsim.kit.secagg.noise import Noise
from privsim.kit.secagg.outcome import Outcome
from privsim.kit.world import agree_channels, build_world
from privsim.protocols.secagg.coalition import exposure
from privsim.protocols.secagg.config import SecAggConfig
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = [
    "BATCHED_FROM_CLIENTS",
    "SERVER",
    "Simulation",
    "delivery",
    "noise_plan",
    "parameters",
    "plan_ledger",
    "round_plan",
    "run_secagg",
    "simulate",
]

#: The aggregation server's party id.
SERVER = "server"
#: The ledger label of the one release.
MECHANISM = "secure-aggregation"
#: Why a release without noise is non-private (the ledger's record).
NON_PRIVATE = "secagg.noise = 'none': the exact sum of the survivors' inputs is released"
#: Largest dimension whose released sum the result carries in full.
RELEASED_IN_RESULT = 1000


def parameters(scenario: Scenario) -> Parameters:
    """(k, t) for the scenario: SecAgg on the complete graph, SecAgg+ on a Harary graph,
    as :func:`~privsim.kit.secagg.graph.choose_parameters` chooses them."""
    cfg = scenario.table("secagg", SecAggConfig)
    n = scenario.population.clients
    found = choose_parameters(
        n,
        dropout=cfg.target_dropout,
        corruption=cfg.target_corruption,
        security_bits=cfg.security_bits,
        correctness_bits=cfg.correctness_bits,
        degree=cfg.degree,
        threshold=cfg.threshold,
        complete=scenario.protocol == "secagg",
    )
    if found is None:
        raise FieldError(
            "secagg.threshold",
            f"no threshold t meets 2^-{cfg.security_bits} security and 2^-"
            f"{cfg.correctness_bits} correctness for N = {n}, corruption "
            f"{cfg.target_corruption:g} and dropout {cfg.target_dropout:g}",
            "set secagg.threshold explicitly, lower security_bits/correctness_bits, or "
            "lower target_corruption/target_dropout",
        )
    if found.threshold > found.degree + 1:
        raise FieldError(
            "secagg.threshold",
            f"t = {found.threshold} exceeds the k + 1 = {found.degree + 1} holders of a share",
            f"give a threshold <= {found.degree + 1}",
        )
    return found


#: Largest probability that some coordinate of the noisy sum wraps around 2^b.
WRAP_PROBABILITY = 1e-9


def noise_plan(scenario: Scenario) -> Noise | None:
    """The noise option (None when off): inputs scaled by s = 2^f and rounded to the
    nearest integer (error ≤ 1/2 per coordinate, inside the ‖·‖ ≤ c·s + √d bound of
    Kairouz, Liu & Steinke 2021 with β = 0); each client's share calibrated by the
    papers' Rényi bounds (:func:`privsim.kit.intnoise.accounting.calibrate`) so that
    N − T − 1 honest shares meet the budget, or from the user's ``noise_multiplier``
    (accounted all the same; the ledger refuses it over the budget); the modulus planned
    for a wrap-around probability below :data:`WRAP_PROBABILITY` (a FieldError if
    ``modulus_bits`` is narrower)."""
    cfg = scenario.table("secagg", SecAggConfig)
    if cfg.noise == "none":
        return None
    kind: NoiseKind = cfg.noise
    n, d, p = scenario.population.clients, cfg.dimension, scenario.privacy
    honest = n - cfg.tolerated - 1
    scale = float(1 << cfg.fraction_bits)
    sensitivity = kit_sensitivity(
        cfg.clip_norm, scale, d, 0.0, replace_one=p.neighbour == "replace_one"
    )
    if cfg.noise_multiplier is None:
        parameter = calibrate(
            kind,
            p.epsilon,
            delta=p.delta,
            honest_clients=honest,
            sensitivity=sensitivity,
            dimension=d,
        )
    else:  # fixed by the user: N − T − 1 shares carry std z·c (z·c·s integer steps)
        total = (cfg.noise_multiplier * cfg.clip_norm * scale) ** 2
        parameter = client_parameter(kind, total, honest)
    accounted = account(
        kind, parameter, honest_clients=honest, sensitivity=sensitivity, dimension=d, delta=p.delta
    )
    if not math.isfinite(accounted.epsilon):
        raise FieldError(
            "secagg.noise_multiplier",
            f"{cfg.noise_multiplier}: each client's discrete Gaussian share has σ_i = "
            f"{parameter:.3g} < 1/2, where Kairouz, Liu & Steinke's Theorem 1 gives no bound",
            "raise secagg.noise_multiplier or secagg.fraction_bits, or leave "
            "noise_multiplier out (noise calibrated to the budget)",
        )
    modulus = plan_modulus(n, d, cfg.clip_norm, scale, parameter, kind, WRAP_PROBABILITY)
    try:
        modulus.check(cfg.modulus_bits)
    except ModulusTooSmallError as exc:
        raise FieldError(
            "secagg.modulus_bits", str(exc), f"set secagg.modulus_bits = {modulus.bits} or more"
        ) from None
    return Noise(kind=kind, parameter=parameter, account=accounted, modulus=modulus)


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    """One simulated round with everything needed to analyse it."""

    scenario: Scenario
    seed: int
    world: World
    outcome: Outcome
    data: SyntheticVectors
    clients: tuple[str, ...]
    graph: Graph
    params: Parameters
    noise: Noise | None
    ledger: PrivacyLedger
    keys: KeyBook
    wall_seconds: float

    def plain_sum(self, integer: bool = False) -> npt.NDArray[np.float64] | None:
        """Σ_{u ∈ U3} z_u (``integer``: of the encoded, rounded inputs, decoded)."""
        included = self.outcome.included
        if included is None:
            return None
        cfg = self.scenario.table("secagg", SecAggConfig)
        if not integer:
            mask = np.zeros(len(self.clients), dtype=bool)
            mask[included] = True
            return self.data.sum(mask)
        scale = float(1 << cfg.fraction_bits)
        rows = self.data.rows(included)
        return np.asarray(np.rint(rows * scale).sum(axis=0) / scale, dtype=np.float64)


def round_plan(scenario: Scenario, streams: Streams) -> secagg.RoundPlan:
    """The kit's round for the scenario: clients ``client-0`` … ``client-(N−1)`` and the
    server, (k, t) from :func:`parameters`, the graph drawn from ``streams``, the noise
    of :func:`noise_plan`."""
    cfg = scenario.table("secagg", SecAggConfig)
    clients = tuple(f"client-{i}" for i in range(scenario.population.clients))
    return secagg.plan(
        clients,
        SERVER,
        params=parameters(scenario),
        dimension=cfg.dimension,
        bits=cfg.modulus_bits,
        streams=streams,
        fraction_bits=cfg.fraction_bits,
        noise=noise_plan(scenario),
        round_timeout=cfg.round_timeout,
    )


def _charged(scenario: Scenario, plan: secagg.RoundPlan) -> PrivacyLedger:
    """The ledger with the round charged (refused over budget before anything runs),
    trusting the server short of ``t`` share holders of a client's."""
    p = scenario.privacy
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend=p.on_overspend)
    secagg.charge(ledger, MECHANISM, plan, non_private=NON_PRIVATE)
    return ledger


def plan_ledger(scenario: Scenario) -> PrivacyLedger:
    """The ledger as :func:`run_secagg` charges it, before anything runs (on the graph of
    the scenario's own seed: the trust recorded depends on it, the budget's verdict
    does not)."""
    return _charged(scenario, round_plan(scenario, Streams(scenario.seed)))


#: ``secagg.delivery = "auto"`` runs the clients as a batched population from this many.
BATCHED_FROM_CLIENTS = 20_000


def delivery(scenario: Scenario) -> str:
    """``secagg.delivery`` resolved: ``batched`` or ``per_client``. A batched round
    keeps no coalition view and seals no message, so ``auto`` runs per client when the
    threat names colluders or the channels are AES-GCM, and ``batched`` there is an
    error."""
    cfg = scenario.table("secagg", SecAggConfig)
    threat = scenario.threat
    colluders = bool(threat.colluding_clients) or SERVER in threat.colluding_servers
    sealed = scenario.network.encryption == "aes-gcm"
    if cfg.delivery == "batched" and (colluders or sealed):
        why = (
            "a colluding server or client (threat.colluding_*), whose view it does not keep"
            if colluders
            else "network.encryption = 'aes-gcm', whose messages it does not seal one by one"
        )
        raise FieldError(
            "secagg.delivery",
            f"'batched' cannot run with {why}",
            "use delivery = 'per_client' (or 'auto'), or network.encryption = 'sized' for "
            "the sealed sizes and times without sealing",
        )
    if cfg.delivery == "auto":
        large = scenario.population.clients >= BATCHED_FROM_CLIENTS
        return "batched" if large and not colluders and not sealed else "per_client"
    return cfg.delivery


def simulate(
    scenario: Scenario, seed: int | None = None, *, processes: int | None = None
) -> Simulation:
    """Simulate the scenario's protocol (``secagg`` or ``secagg_plus``). ``processes``:
    worker processes for the bulk cryptography (default
    :func:`~privsim.kit.secagg.round.round_processes`); the result is the same whatever
    their number."""
    started = time.perf_counter()
    seed = scenario.seed if seed is None else seed
    if scenario.protocol not in ("secagg", "secagg_plus"):
        raise ValueError(f"simulate runs 'secagg' or 'secagg_plus', not {scenario.protocol!r}")
    cfg = scenario.table("secagg", SecAggConfig)
    streams = Streams(seed)
    plan = round_plan(scenario, streams)
    data = SyntheticVectors(
        len(plan.clients),
        cfg.dimension,
        mean=cfg.mean,
        scale=cfg.scale,
        clip_norm=cfg.clip_norm,
        stream=streams.keystream("data", "synthetic"),
        distribution=cfg.distribution,
    )
    ledger = _charged(scenario, plan)

    world = build_world(scenario, streams, [*plan.clients, SERVER])
    batched = delivery(scenario) == "batched"
    with secagg.launch(world, plan, data.rows, processes=processes, batched=batched) as launched:
        agree_channels(world, lambda _: secagg.channel_pairs(plan))
        world.run()  # the workers stop with the round, at once if it fails or is interrupted
    outcome = secagg.outcome_of(launched)
    secagg.settle(ledger, MECHANISM, plan, outcome)
    return Simulation(
        scenario=scenario,
        seed=seed,
        world=world,
        outcome=outcome,
        data=data,
        clients=plan.clients,
        graph=plan.graph,
        params=plan.params,
        noise=plan.noise,
        ledger=ledger,
        keys=launched.keys,
        wall_seconds=time.perf_counter() - started,
    )


def _errors(sim: Simulation) -> dict[str, float] | None:
    released, plain = sim.outcome.released, sim.plain_sum()
    if released is None or plain is None:
        return None
    d = released.size
    err = released - plain
    rounded = sim.plain_sum(integer=True)
    assert rounded is not None
    return {
        "l2_error": float(np.linalg.norm(err)),
        "rmse": float(np.linalg.norm(err) / math.sqrt(d)),
        "relative_l2_error": float(np.linalg.norm(err) / max(float(np.linalg.norm(plain)), 1e-300)),
        "max_abs_error_vs_rounded_sum": float(np.max(np.abs(released - rounded))),
        "rmse_vs_all_clients": float(np.linalg.norm(released - sim.data.sum()) / math.sqrt(d)),
    }


def _exposure(sim: Simulation) -> dict[str, Any]:
    coalition = sim.world.coalition
    colluding = [i for i, c in enumerate(sim.clients) if c in coalition]
    return exposure(
        sim.graph,
        sim.params.threshold,
        sim.outcome.survivors,
        colluding,
        server_colludes=SERVER in coalition,
    )


def _details(sim: Simulation) -> dict[str, Any]:
    out, params = sim.outcome, sim.params
    return {
        "degree": params.degree,
        "threshold": params.threshold,
        "complete_graph": params.complete,
        "log2_security_failure": params.log2_security,
        "log2_correctness_failure": params.log2_correctness,
        "log2_disconnection": params.log2_disconnect,
        "live_per_round": [int(s.size) for s in out.survivors],
        "round_closed_at": list(out.closed_at),
        "rounds_completed": len(out.survivors),
        "seeds_reconstructed": out.seeds_reconstructed,
        "keys_reconstructed": out.keys_reconstructed,
        "key_agreements": sim.keys.agreements,
        "noise": "none" if sim.noise is None else sim.noise.kind,
        # how the clients ran: the resolved secagg.delivery (``auto`` says which it chose)
        "delivery": delivery(sim.scenario),
        # the released vector itself, when small enough to keep in the result
        "released_sum": None
        if out.released is None or out.released.size > RELEASED_IN_RESULT
        else out.released.tolist(),
    }


def _privacy(sim: Simulation) -> Privacy:
    noise = sim.noise
    extra: dict[str, Any] = {"noise": "none" if noise is None else noise.kind}
    if noise is not None:
        included = () if sim.outcome.included is None else sim.outcome.included
        coalition = sim.world.coalition
        extra.update(
            client_parameter=noise.parameter,
            # planned: the N − T − 1 shares the noise is calibrated for; realised: the
            # honest included clients H whose shares reached the sum (the ledger credits
            # H − 1 of them, the target's own aside)
            honest_shares=noise.honest,
            honest_included_realised=sum(
                1 for i in included if sim.clients[int(i)] not in coalition
            ),
            sensitivity_l2_integer=noise.account.sensitivity.l2,
            accounted_epsilon=noise.account.epsilon,
            modulus_bits_planned=noise.modulus.bits,
            accounting="Rényi bounds of the integer mechanism (privsim.kit.intnoise)",
        )
    return Privacy.of(sim.ledger, sim.world.coalition, **extra)


def run_secagg(scenario: Scenario, seed: int) -> RunResult:
    """One SecAgg or SecAgg+ round, summarised."""
    sim = simulate(scenario, seed)
    world, outcome = sim.world, sim.outcome
    included = [] if outcome.included is None else [sim.clients[i] for i in outcome.included]
    return RunResult.of_world(
        scenario,
        sim.seed,
        world,
        sim.ledger,
        holders=sim.clients,
        included=included if outcome.ok else None,
        abort=None if outcome.ok else Abort(reason=str(outcome.abort), detail=outcome.detail),
        privacy=_privacy(sim),
        accuracy=_errors(sim),
        output_party=SERVER,
        exposure=_exposure(sim),
        details=_details(sim),
        wall_seconds=sim.wall_seconds,
    )
