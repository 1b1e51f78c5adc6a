"""Iterative private learning on the bus: DP-SGD and DP-FedAvg rounds whose noisy sums
travel through DCA (Heikkilä et al., NeurIPS 2017, §3), a trusted curator or local
noise, with cohort sampling, availability, dropouts and a coalition — and the ε each
round actually delivered.

Each round the server samples a cohort of the population, sends it the model, and the
online picked clients return clipped updates with their noise (McMahan et al. 2018,
"Learning differentially private recurrent language models"). One ledger event per
round, amplified by sampling while the server is honest and realised from the noise
that reached the sum, composes into the run's guarantee (:mod:`.accounting`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.round import check_fixed_point, node_names, secure_sum_seconds
from privsim.kit.spec import PARTY_BYTES, Footprint, Numbered, ProtocolSpec, StudyView
from privsim.protocols.fedlearn import accounting
from privsim.protocols.fedlearn.attacks.registry import check_threats
from privsim.protocols.fedlearn.audit import AUDIT
from privsim.protocols.fedlearn.canaries import canary_rate
from privsim.protocols.fedlearn.cohort import planned_cohort
from privsim.protocols.fedlearn.config import (
    AvailabilityConfig,
    DatasetConfig,
    ModelConfig,
    TrainingConfig,
)
from privsim.protocols.fedlearn.example import EXAMPLE
from privsim.protocols.fedlearn.federated import KNOWN_SHAPES, check_learner, preflight_data
from privsim.protocols.fedlearn.figures import draw_study, html_figures
from privsim.protocols.fedlearn.integer import check_clip_range
from privsim.protocols.fedlearn.models import BUILT_IN
from privsim.protocols.fedlearn.plan import check_mean_mode, plan_training
from privsim.protocols.fedlearn.report import EMPIRICAL_COLUMN, flatten, report_lines
from privsim.protocols.fedlearn.run import plan_ledger, run_fedlearn
from privsim.scenarios.checks import check_footprint
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = ["FEDLEARN", "PROTOCOLS", "THREAT_EXAMPLES"]

#: Each attack on training, set up on the example (the contract test runs each).
THREAT_EXAMPLES: dict[str, dict[str, Any]] = {
    "reconstruction": {
        "threat.attack": "reconstruction",
        "threat.colluding_servers": ["server"],
        "training.aggregation": "trusted",
    },
    "membership": {"threat.attack": "membership", "threat.colluding_servers": ["server"]},
    "dropout_isolation": {
        "threat.attack": "dropout_isolation",
        "threat.colluding_servers": ["server"],
        "training.aggregation": "secagg_plus",
        "training.sampling": "poisson",
        "training.rate": 0.3,
        "privacy.neighbour": "add_remove",
    },
    "model_inconsistency": {
        "threat.attack": "model_inconsistency",
        "threat.colluding_servers": ["server"],
        "training.aggregation": "dca",
    },
    "poisoning": {"threat.poisoning": {"share": 0.1, "kind": "scale"}},
}


def _check(scenario: Scenario) -> None:
    """Cross-table checks: the neighbouring relation the sampling is accounted for, a
    cohort no larger than the population, a coalition drawn from the population, the
    aggregation's own needs, and a model that fits the data."""
    training, n = scenario.table("training", TrainingConfig), scenario.population.clients
    if training.sampling == "fixed" and training.cohort > n:
        raise FieldError(
            "training.cohort",
            f"a cohort of {training.cohort} is larger than the population of {n} clients",
            f"set training.cohort <= {n} (population.clients)",
        )
    accounting.check_neighbour(scenario)
    colluders = scenario.threat.colluding_clients
    if isinstance(colluders, int) and colluders > n:
        raise FieldError(
            "threat.colluding_clients",
            f"{colluders} colluding clients in a population of {n}",
            f"give at most {n}",
        )
    check_mean_mode(training)
    check_threats(scenario)
    n_params = check_learner(scenario)
    # Memory and time before the noise is planned: the planner's cost grows with R.
    check_footprint(scenario, _footprint(scenario))
    if accounting.integer_noise(scenario):  # planned at run; a C beyond 64 bits is known now
        m = planned_cohort(training, n)
        check_clip_range(training.clip_norm, math.ceil(m + 6 * math.sqrt(max(m, 1.0))))
    if training.aggregation == "dca":
        if (
            training.sampling == "poisson"
            and scenario.table("dca", DcaConfig).on_excess_dropout == "release"
        ):  # Poisson rounds release whatever reached the sum, the empty sum included
            raise FieldError(
                "dca.on_excess_dropout",
                '"release" has no effect under Poisson sampling: every round already releases '
                "what reached the sum (an abort would depend on the target's presence), an "
                "empty sum included",
                'leave dca.on_excess_dropout out (or "abort") with training.sampling = "poisson"',
            )
        if scenario.population.compute_nodes < 2:
            raise FieldError(
                "population.compute_nodes",
                "DCA needs at least 2 compute nodes (one node would see every input)",
                "set compute_nodes = 2 or more",
            )
        if not accounting.integer_noise(scenario):  # integer sums mod 2^b: planned at run
            noise = plan_training(scenario, n_params or 1).noise
            m = planned_cohort(training, n) + canary_rate(training, n) * training.canaries
            cohort_max = max(1, math.ceil(m + 6 * math.sqrt(max(m, 1.0))))
            check_fixed_point(scenario, cohort_max, training.clip_norm, noise.share_std)
    _check_deadline(scenario, n_params)


def _check_deadline(scenario: Scenario, n_params: int | None) -> None:
    """A round's deadline longer than one message: the model's download alone takes the
    link's least latency plus its transmission (8 bytes a parameter, when the model's
    size is known before loading the data)."""
    training, link = scenario.table("training", TrainingConfig), scenario.network.link
    latency = float(link.latency.from_uniform(np.zeros(1))[0])
    size = 8 * (n_params or 0)
    floor = latency + size / link.bandwidth
    if training.deadline <= floor:
        raise FieldError(
            "training.deadline",
            f"{training.deadline:g} s is shorter than one message: the model's download "
            f"alone takes at least {floor:.3g} s (latency {latency:.3g} s"
            + (
                f" + {size} bytes at {link.bandwidth:g} B/s)"
                if size and math.isfinite(link.bandwidth)
                else ")"
            ),
            f"set training.deadline above {floor:.3g} s (the clients also need time to send)",
        )


def _parties(scenario: Scenario) -> dict[str, Sequence[str]]:
    """``client-0`` … ``client-(N−1)`` (only the picked ones ever become agents), the
    ``server`` and, with DCA, the compute nodes."""
    training = scenario.table("training", TrainingConfig)
    parties: dict[str, Sequence[str]] = {
        "client": Numbered("client", scenario.population.clients),
        "aggregator": (accounting.SERVER,),
    }
    if training.aggregation == "dca":
        parties["compute"] = node_names(scenario)
    return parties


#: Wall time of one picked client in one round besides its arithmetic: its agent, its
#: messages and its share of the round's bookkeeping (measured 3–7 ms on the example).
SECONDS_PER_CLIENT_ROUND = 3e-3
#: numpy's fixed cost of one vectorised local step or evaluation block (measured about
#: 1 ms a step on the example: 33 ms for 32 steps of 20 clients).
SECONDS_PER_STEP = 1e-3
#: One multiply-add of a model's forward or backward pass, vectorised.
SECONDS_PER_FLOP = 1e-9
#: The ledger's cost of charging a round and reporting ε so far, per distinct round
#: event composed (measured about 6 ms with one; 0.8 s a round in all with about 15 under
#: Poisson-sampled DCA on the example).
SECONDS_PER_CHARGE = 0.03
#: The accountant's cost of one distinct round event (its PLD built and composed).
SECONDS_PER_DISTINCT_EVENT = 0.05
#: Memory each planned round holds: the accountant's PLD grids grow with the rounds
#: composed (measured 0.9 KB a round calibrating 10⁶ fixed-cohort rounds, 3.5 KB under
#: Poisson sampling, where 3·10⁶ rounds ran out of memory), and the round's record,
#: ledger entry and curve row; plus the names of the round's contributors.
BYTES_PER_ROUND = 4096
BYTES_PER_CONTRIBUTOR = 64
#: The planner's calibration (``training.noise_multiplier`` left out) at sampling rate q:
#: its z falls with q, and the PLDs it composes lengthen as z does. Measured on the
#: default training (20 rounds, cohorts of 10) at N = 10⁶ … 10⁹ clients (q = 10⁻⁵ …
#: 10⁻⁸): the whole run took 4.5, 8.2, 29 and 89 s, at a peak of 392, 607, 2,047 and
#: about 3,000 MB. Fitted at or above each: PLANNER_SECONDS·(10⁻⁵/q)^0.45 and
#: PLANNER_BYTES·(10⁻⁵/q)^0.5.
PLANNER_RATE = 1e-5
PLANNER_SECONDS = 4.5
PLANNER_BYTES = 200_000_000
#: SecAgg's key agreement and PRG expansion per pair of neighbours, per byte.
SECONDS_PER_AGREEMENT = 90e-6
SECONDS_PER_PRG_BYTE = 1.5e-9
#: The records a synthetic client holds at most, and a real set's client (an estimate).
SYNTHETIC_RECORDS, REAL_RECORDS = 500, 1000
#: Records evaluated at once by the test set's blocks (models.GRADIENT_BLOCK_RECORDS).
EVAL_RECORDS = 1 << 16


def _shape(scenario: Scenario) -> tuple[int, int, int, int]:
    """(d features, c classes, P parameters, records per client) as far as known before
    the data is loaded: the synthetic set's and the known sets' shapes, else estimates."""
    dataset = scenario.table("dataset", DatasetConfig)
    model = scenario.table("model", ModelConfig)
    if dataset.source == "synthetic":
        d, c, records = dataset.synthetic_features, dataset.synthetic_classes, SYNTHETIC_RECORDS
    elif dataset.source in KNOWN_SHAPES:
        (d, c), records = KNOWN_SHAPES[dataset.source], REAL_RECORDS
    else:
        d, c, records = len(dataset.features) or 64, 10, REAL_RECORDS
    h = model.hidden
    if model.name == "mlp":
        p = h * d + h + c * h + c
    elif model.name == "logistic":
        p = d + 1
    elif model.name == "softmax":
        p = c * (d + 1)
    else:  # a user's model: its own count where the shape is known, else softmax's
        p = check_learner(scenario) or c * (d + 1)
    return d, c, p, records


def _planner_footprint(training: TrainingConfig, population: int) -> tuple[float, int]:
    """Seconds and bytes of the planner's calibration of z, at the rounds' sampling rate
    (none when the multiplier is given)."""
    if training.noise_multiplier is not None:
        return 0.0, 0
    rate = min(planned_cohort(training, population) / max(population, 1), 1.0)
    scale = PLANNER_RATE / max(rate, 1e-300)
    return PLANNER_SECONDS * scale**0.45, int(PLANNER_BYTES * scale**0.5)


def _footprint(scenario: Scenario) -> Footprint:
    """Peak memory and wall time of the whole run, estimated before the first round.

    Memory: the cohort's parameter rows (each client's w, gradient, update and clipped
    update; with DCA its M shares), 8·P·k·(4 + M); the canaries' directions, 8·P·K; the
    cohort's records, 8·k·n·(d+1); the records in flight (a local batch of every client,
    or an evaluation block) times their temporaries, 8·B·3·(c + h) + d; one agent per
    client; each of the R rounds' accounting, record and contributors,
    R·(:data:`BYTES_PER_ROUND` + :data:`BYTES_PER_CONTRIBUTOR`·k). k is the largest
    likely cohort (m + 6√m, canaries included).

    Time: R rounds of k clients, each E·⌈n/b⌉ local steps of 3·P multiply-adds per
    record, the aggregation's messages and shares, the test set's evaluation every
    ``eval_every`` rounds, and the ledger's charge per round and PLD per distinct round
    event (its checks compose the rounds' distinct events, never every round again).
    Both add the planner's calibration where it runs (:data:`PLANNER_SECONDS`, which
    grows as the sampling rate falls)."""
    training, n = scenario.table("training", TrainingConfig), scenario.population.clients
    model = scenario.table("model", ModelConfig)
    dataset = scenario.table("dataset", DatasetConfig)
    m = planned_cohort(training, n) + canary_rate(training, n) * training.canaries
    k = math.ceil(m + 6 * math.sqrt(max(m, 1.0)))
    d, c, p, records = _shape(scenario)
    h = model.hidden if model.name == "mlp" else 0
    nodes = scenario.population.compute_nodes if training.aggregation == "dca" else 0
    fedavg = training.algorithm == "dp_fedavg"
    in_flight = max(k * training.local_batch if fedavg else min(k * records, EVAL_RECORDS), 1)
    in_flight = max(in_flight, EVAL_RECORDS)  # the test set's evaluation blocks
    total = (
        8 * p * (k * (4 + nodes) + 8)
        + 8 * p * training.canaries
        + 8 * k * records * (d + 1)
        + 8 * in_flight * (3 * (c + h) + d)
        + k * PARTY_BYTES
        + training.rounds * (BYTES_PER_ROUND + BYTES_PER_CONTRIBUTOR * k)
        + 50_000_000
    )
    planner_seconds, planner_bytes = _planner_footprint(training, n)
    total += planner_bytes
    # Time, in the order a round spends it.
    steps = training.local_epochs * math.ceil(records / training.local_batch) if fedavg else 1
    flops = 3 * p * (training.local_batch if fedavg else records)  # per client and step
    round_seconds = k * SECONDS_PER_CLIENT_ROUND + steps * (
        SECONDS_PER_STEP + k * flops * SECONDS_PER_FLOP
    )
    encrypted = scenario.network.encryption == "aes-gcm"
    if training.aggregation == "dca":
        round_seconds += secure_sum_seconds(k, nodes, p, batched=False, encrypted=encrypted)
    elif training.aggregation in ("secagg", "secagg_plus"):
        degree = k - 1 if training.aggregation == "secagg" else min(k - 1, 4 * k.bit_length())
        round_seconds += k * degree * (SECONDS_PER_AGREEMENT + 16 * p * SECONDS_PER_PRG_BYTE)
    evaluations = training.rounds / training.eval_every + 1
    eval_seconds = math.ceil(records * min(n, 1000) / EVAL_RECORDS) * (
        SECONDS_PER_STEP + EVAL_RECORDS * 3 * p * SECONDS_PER_FLOP
    )
    # A round's event varies with the realised cohort (Poisson sampling, dropouts,
    # availability): about one distinct event per likely cohort size (m ± 2√m), each
    # composed again whenever ε so far is reported, i.e. every round.
    faults = scenario.faults
    varies = (
        training.sampling == "poisson"
        or faults.absent > 0
        or faults.crash > 0
        or faults.straggler_fraction > 0
        or scenario.table("availability", AvailabilityConfig).model != "always"
    )
    distinct = min(training.rounds, math.ceil(4 * math.sqrt(max(m, 1.0))) + 1) if varies else 1
    seconds = (
        training.rounds * (round_seconds + SECONDS_PER_CHARGE * distinct)
        + evaluations * eval_seconds
        + distinct * SECONDS_PER_DISTINCT_EVENT
        + planner_seconds
    )
    # The fields named: the factor that grew most from the example's (R = 20, E = 1,
    # M = 3, m = 10, d = 60, c = 10, h = 32).
    cohort_field = "training.cohort" if training.sampling == "fixed" else "training.rate"
    grown = {
        cohort_field: m / 10,
        "training.rounds": training.rounds * BYTES_PER_ROUND / (8 * p * k * 4 + 1),
        # a user's model: its own parameter count, past the softmax's on the same data
        "model.name": p / (c * (d + 1)) if model.name not in BUILT_IN else 0.0,
        "training.canaries": training.canaries * p / max(k * p * 4, 1),
        "model.hidden": h / 32,
        "dataset.synthetic_classes": c / 10 if dataset.source == "synthetic" else 0.0,
        "dataset.synthetic_features": d / 60 if dataset.source == "synthetic" else 0.0,
        "population.compute_nodes": nodes / 3,
        # the planner's z, and so its PLDs, at a rate m/N that more clients lower
        "population.clients": planner_bytes / PLANNER_BYTES,
    }
    field = max(grown, key=lambda f: grown[f])
    slow = grown | {
        "training.rounds": training.rounds / 20,
        "training.local_epochs": training.local_epochs if fedavg else 0.0,
        "training.eval_every": 0.0,
        "population.clients": planner_seconds / PLANNER_SECONDS,
    }
    slow_field = max(slow, key=lambda f: slow[f])
    formula = (
        f"8·P·(k·(4+M) + K) + 8·k·n·(d+1) + 8·B·(3·(c+h)+d) + R·({BYTES_PER_ROUND} + "
        f"{BYTES_PER_CONTRIBUTOR}·k), P = {p}, k = {k}, M = {nodes}, K = {training.canaries}, "
        f"d = {d}, c = {c}, h = {h}, R = {training.rounds}"
        + (
            f", plus the planner's PLDs at q = m/N, {PLANNER_BYTES / 1e6:g} MB·(10⁻⁵/q)^0.5"
            if planner_bytes
            else ""
        )
    )
    return Footprint(total, field, formula, seconds, slow_field)


STUDY = StudyView(
    metrics={
        "accuracy.test_accuracy": "test accuracy of the final model",
        "accuracy.test_loss": "test loss of the final model",
        "privacy.achieved_epsilon": "ε delivered over the rounds",
        EMPIRICAL_COLUMN: "empirical ε from canaries (one run, final model; an estimate)",
        "communication.bytes": "bytes on the wire, all rounds",
        "attack.success": "share of the attack's targeted client-rounds recovered",
    },
    axes={
        "training.noise_multiplier": ("noise multiplier z", False),
        "training.rate": ("sampling rate q", True),
        "training.cohort": ("cohort size m", True),
        "training.clip_norm": ("clipping norm C", True),
    },
    curves="curves",
    figures=draw_study,
    html_figures=html_figures,
)


FEDLEARN = ProtocolSpec(
    name="fedlearn",
    training_threats=THREAT_EXAMPLES,
    summary="DP-SGD / DP-FedAvg rounds with sampling over DCA, a curator or local noise",
    tables={
        "training": TrainingConfig,
        "model": ModelConfig,
        "dataset": DatasetConfig,
        "availability": AvailabilityConfig,
        "dca": DcaConfig,
    },
    run=run_fedlearn,
    plan=plan_ledger,
    check=_check,
    preflight=preflight_data,
    parties=_parties,
    footprint=_footprint,
    report=report_lines,
    flatten=flatten,
    study=STUDY,
    exposure={
        "updates_exposed": "honest included client-rounds whose clipped update the coalition "
        "read in the clear (it broke the aggregation's trust)",
        "included_client_rounds": "client-rounds whose update reached a released sum",
        "colluding_picks": "picks of colluding clients over the rounds",
    },
    overspend={"training.noise_multiplier": 0.3},
    example=EXAMPLE,
    audit=AUDIT,
)

PROTOCOLS = (FEDLEARN,)
