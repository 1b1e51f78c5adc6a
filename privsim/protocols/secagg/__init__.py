"""SecAgg (Bonawitz et al., CCS 2017) and SecAgg+ (Bell et al., CCS 2020) as protocols.

One server aggregates the clients' integer vectors mod 2^b: each client masks its input
with a self mask and pairwise masks agreed with X25519, shares the mask secrets with
Shamir's t-of-n scheme (encrypted with AES-GCM), and the survivors help the server strip
the masks of the dropped. SecAgg runs on the complete graph; SecAgg+ on a random Harary
graph of degree k = O(log N) with (k, t) chosen for a target dropout and corruption
(:mod:`privsim.kit.secagg.graph`). Optional integer noise (:mod:`privsim.kit.intnoise`)
makes the sum differentially private against the server as long as it does not collude
with t holders of one client's shares (:mod:`privsim.kit.secagg.trust`).

The round itself is the kit's (:mod:`privsim.kit.secagg`, which other protocols call
too); this package holds the protocol's own: its ``[secagg]`` table (:mod:`.config`),
the synthetic client vectors, (k, t) and noise planned from the scenario and the run's
result (:mod:`.run`), the report (:mod:`.report`), the audit (:mod:`.audit`) and what a
coalition unmasks (:mod:`.coalition`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from privsim.kit.secagg.graph import MAX_DEGREE
from privsim.kit.spec import PARTY_BYTES, Footprint, Numbered, ProtocolSpec, StudyView
from privsim.protocols.secagg.audit import audit_plan
from privsim.protocols.secagg.config import SecAggConfig
from privsim.protocols.secagg.report import flatten, report_lines
from privsim.protocols.secagg.run import (
    SERVER,
    delivery,
    noise_plan,
    parameters,
    plan_ledger,
    run_secagg,
)
from privsim.scenarios.checks import check_footprint
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = ["PROTOCOLS", "SECAGG", "SECAGG_PLUS"]


def _check(scenario: Scenario) -> None:
    """A delivery that can run, a (k, t) that meets the targets, N − T − 1 ≥ 1 honest
    noise shares, and a modulus that holds the sum of N inputs (plus the noise, planned
    with it)."""
    cfg = scenario.table("secagg", SecAggConfig)
    n = scenario.population.clients
    if scenario.protocol == "secagg" and n > MAX_DEGREE + 1:
        raise FieldError(
            "population.clients",
            f"SecAgg on the complete graph with N = {n} clients agrees N·(N − 1) keys and "
            f"holds N² shares; it is simulated up to N = {MAX_DEGREE + 1}",
            "use protocol = 'secagg_plus' (degree O(log N)), or fewer clients",
        )
    delivery(scenario)  # batched clients: not with colluders or sealed channels
    # Memory and time first: the noise calibration below costs O(N) for huge N.
    check_footprint(scenario, _footprint(scenario))
    params = parameters(scenario)
    if params.threshold > n:
        raise FieldError(
            "secagg.threshold", f"t = {params.threshold} exceeds N = {n}", f"give t <= {n}"
        )
    if cfg.noise != "none" and n - cfg.tolerated - 1 < 1:
        raise FieldError(
            "secagg.tolerated",
            f"N = {n} clients with T = {cfg.tolerated} leave no honest client to carry "
            "the noise (N − T − 1 < 1)",
            f"lower secagg.tolerated below {n - 1}",
        )
    if noise_plan(scenario) is not None:
        return  # the noise plan checked the modulus against its wrap-around bound
    peak = n * (cfg.clip_norm * 2.0**cfg.fraction_bits + 0.5)
    if not peak < 2.0 ** (cfg.modulus_bits - 1):
        raise FieldError(
            "secagg.modulus_bits",
            f"{cfg.modulus_bits}: a sum of {n} clients can reach {peak:.3g} in integer "
            f"units, beyond the signed range ±2^{cfg.modulus_bits - 1}",
            "raise secagg.modulus_bits, or lower secagg.fraction_bits",
        )


def _parties(scenario: Scenario) -> dict[str, Sequence[str]]:
    return {"client": Numbered("client", scenario.population.clients), "server": (SERVER,)}


#: Costs behind the time estimate (benchmarks/bench_secagg.py and profiles, one core of a
#: loaded machine): an X25519 exchange, the engine per message, a PRG byte, a share
#: sealed and opened (with its bookkeeping).
SECONDS_PER_AGREEMENT = 90e-6
SECONDS_PER_MESSAGE = 200e-6
SECONDS_PER_PRG_BYTE = 1.5e-9
SECONDS_PER_SHARE = 30e-6


#: A batched round's calling process per client and holder of its shares (its whole
#: peak of 4.02 GiB at N = 10^6, k = 38, d = 100 in benchmarks/bench_cluster.py, over
#: N·(k+1)): the key book's pair values and indices, the graph, the trace; and its own
#: work per client (the bus, the server's reconstruction: 218 s of CPU at N = 10^6).
BATCHED_HOLDER_BYTES = 112
SECONDS_PER_BATCHED_CLIENT = 2.5e-4


def _footprint(scenario: Scenario) -> Footprint:
    """Per client: memory ≈ N·P + N·(k+1)·(96 + 64) (share ciphertexts at the server and
    every client's shares, made at once) + N·d·8·2 (masked inputs and the inputs); time ≈
    N·k X25519 exchanges (one per pair and key kind), 8N messages, 2·N·k·d·w PRG bytes
    and N·(k+1) sealed shares. Batched (``secagg.delivery``): memory ≈
    N·(k+1)·:data:`BATCHED_HOLDER_BYTES`, time ≈ the exchanges, the PRG bytes and
    :data:`SECONDS_PER_BATCHED_CLIENT` per client (no process or message object per
    client; sealing and masks in bulk)."""
    cfg = scenario.table("secagg", SecAggConfig)
    n, d = scenario.population.clients, cfg.dimension
    k = n - 1 if scenario.protocol == "secagg" else min(cfg.degree or _degree(scenario), n - 1)
    width = 4 if cfg.modulus_bits <= 32 else 8
    crypto = n * k * SECONDS_PER_AGREEMENT + 2 * n * (k + 1) * d * width * SECONDS_PER_PRG_BYTE
    field = "population.clients" if n * k > 20 * d else "secagg.dimension"
    if delivery(scenario) == "batched":
        memory = n * (k + 1) * BATCHED_HOLDER_BYTES
        seconds = crypto + n * SECONDS_PER_BATCHED_CLIENT
        formula = f"N·(k+1)·{BATCHED_HOLDER_BYTES}, batched clients, N = {n}, k = {k}"
        return Footprint(memory, field, formula, seconds)
    memory = n * PARTY_BYTES + n * (k + 1) * 160 + n * d * 16
    seconds = crypto + 8 * n * SECONDS_PER_MESSAGE + 2 * n * (k + 1) * SECONDS_PER_SHARE
    return Footprint(memory, field, f"N·P + N·(k+1)·160 + N·d·16, N = {n}, k = {k}", seconds)


def _degree(scenario: Scenario) -> int:
    """SecAgg+'s k as the round will choose it (a search over binomial tails, cheap for
    any N), or about 4·log2 N where no k meets the targets (the check names that)."""
    try:
        return parameters(scenario).degree
    except FieldError:
        return _guess_degree(scenario.population.clients)


def _guess_degree(n: int) -> int:
    """A rough k for footprints, without the tail computations: about 4·log2 N."""
    return 2 * max(1, math.ceil(2 * math.log2(max(n, 2))))


STUDY = StudyView(
    metrics={
        "accuracy.rmse": "RMSE of the released sum (per coordinate)",
        "parties.included": "clients included",
        "communication.roles.client.bytes_sent_mean": "bytes sent per client (mean)",
        "communication.roles.server.bytes_received_mean": "bytes received by the server",
        "secagg.degree": "graph degree k",
        "coalition.exposure.inputs_exposed": "client inputs the coalition unmasks",
    },
    axes={"secagg.dimension": ("dimension d", True)},
    headline=("communication.roles.client.bytes_sent_mean", "accuracy.rmse"),
)

EXAMPLE: dict[str, Any] = {
    "name": "secagg-example",
    "seed": 5,
    "protocol": "secagg",
    "population": {"clients": 12},
    "privacy": {"epsilon": 1.0, "delta": 1e-5},
    "secagg": {
        "dimension": 4,
        "mean": 0.3,
        "threshold": 7,
        "noise": "discrete_gaussian",
        "tolerated": 2,
        "modulus_bits": 48,
    },
    "network": {"encryption": "none"},
}

SECAGG = ProtocolSpec(
    name="secagg",
    summary="SecAgg: pairwise-masked secure aggregation, one server (Bonawitz et al. 2017)",
    tables={"secagg": SecAggConfig},
    run=run_secagg,
    plan=plan_ledger,
    check=_check,
    parties=_parties,
    footprint=_footprint,
    report=report_lines,
    flatten=flatten,
    study=STUDY,
    exposure={
        "inputs_exposed": "honest clients whose x_u + η_u the server and colluders unmask",
        "keys_exposed": "honest clients whose mask key s_u^SK t colluding holders rebuild",
        "threshold_broken": "1 if some honest client has t colluding share holders",
    },
    # a user-fixed noise multiplier (as Flower's and TFF's DP aggregators take) that
    # the budget cannot cover: about ε = 10 for the example's ε = 1 budget
    overspend={"secagg.noise_multiplier": 1.0},
    example=EXAMPLE,
    audit=audit_plan,
)

SECAGG_PLUS = dataclasses.replace(
    SECAGG,
    name="secagg_plus",
    summary="SecAgg+: SecAgg over a random Harary graph of degree O(log N) (Bell et al. 2020)",
    example={
        **EXAMPLE,
        "name": "secagg-plus-example",
        "protocol": "secagg_plus",
        "population": {"clients": 16},
        "secagg": {**EXAMPLE["secagg"], "degree": 6, "threshold": 4},
    },
)

PROTOCOLS = (SECAGG, SECAGG_PLUS)
