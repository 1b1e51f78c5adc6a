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

import numpy as np

from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.round import check_fixed_point, node_names
from privsim.kit.spec import PARTY_BYTES, Footprint, Numbered, ProtocolSpec, StudyView
from privsim.protocols.fedlearn import accounting
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
from privsim.protocols.fedlearn.federated import check_learner, preflight_data
from privsim.protocols.fedlearn.figures import draw_study, html_figures
from privsim.protocols.fedlearn.plan import check_mean_mode, plan_training
from privsim.protocols.fedlearn.report import EMPIRICAL_COLUMN, flatten, report_lines
from privsim.protocols.fedlearn.run import plan_ledger, run_fedlearn
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

__all__ = ["FEDLEARN", "PROTOCOLS"]


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
    n_params = check_learner(scenario)
    if training.aggregation == "dca":
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


def _footprint(scenario: Scenario) -> Footprint:
    """Peak memory ≈ one round's world and the cohort's data: k·(P + records·(d + 1))·8
    + k·P_party, with k the largest likely cohort (m + 6√m); independent of N."""
    training, n = scenario.table("training", TrainingConfig), scenario.population.clients
    m = planned_cohort(training, n) + canary_rate(training, n) * training.canaries
    k = math.ceil(m + 6 * math.sqrt(max(m, 1.0)))
    dataset = scenario.table("dataset", DatasetConfig)
    d = dataset.synthetic_features if dataset.source == "synthetic" else 64
    records = 500 if dataset.source == "synthetic" else 1000
    per_client = PARTY_BYTES + 8 * (records * (d + 1) + 4 * d * 10)
    total = k * per_client + 50_000_000
    return Footprint(total, "training.cohort", f"k·(P + records·(d+1)·8), k = {k}", 0.0)


STUDY = StudyView(
    metrics={
        "accuracy.test_accuracy": "test accuracy of the final model",
        "accuracy.test_loss": "test loss of the final model",
        "privacy.achieved_epsilon": "ε delivered over the rounds",
        EMPIRICAL_COLUMN: "empirical ε from canaries (one run, final model; an estimate)",
        "communication.bytes": "bytes on the wire, all rounds",
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
