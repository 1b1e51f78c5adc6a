"""One distributed private-sketching replication: shards, owners' sketches, the release
on the bus by the scenario's mode, and its accuracy, privacy and cost.

Accounting (one ledger entry, ``sketch``): the merged R × W counts have L1 sensitivity
Δ₁ = R (add/remove; 2R replace-one), so Laplace(b = Δ₁/ε) per cell is ε-DP (Coleman &
Shrivastava 2021, Lemma 3.1), recorded as ``LaplaceDpEvent(b/Δ₁ = 1/ε)``:

- ``local``: each owner adds Laplace(b) to its own shard's sketch; shards are disjoint,
  so the release is ε-DP trusting nobody.
- ``curator``: the curator adds Laplace(b) once; it holds while the curator is honest.
- ``dca``: a DCA secure sum whose noise comes in shares from the owners: Gamma
  differences that add up to Laplace(b) from any K − T honest shares, or Gaussian shares
  σ_i = σ/√(K − T − 1) (Heikkilä et al. 2017, Theorem 1, L2 sensitivity Δ₂ = √R); it holds
  while not every compute node colludes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.data.registry import load_dataset
from privsim.kit.result import Abort, Communication, Privacy, RunResult
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.maths import client_noise_std
from privsim.kit.securesum.messages import SeedShare, Share
from privsim.kit.securesum.outcome import SumOutcome
from privsim.kit.world import agree_channels, build_world
from privsim.protocols.race.attacks import advantage_bound
from privsim.protocols.race.config import RaceConfig
from privsim.protocols.race.distributed import OwnerSketch, SketchShares, collector, owner
from privsim.protocols.race.lsh import L2Hash
from privsim.protocols.race.private import laplace_scale
from privsim.protocols.race.sketch import RaceSketch
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.coalition import CoalitionView
from privsim.sim.ledger import PrivacyLedger, Trust
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = ["plan_ledger", "run_race"]

OUTPUT_PARTY = securesum.OUTPUT_PARTY
MECHANISM = "sketch"

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Noise:
    """The release's calibration: Laplace scale b = Δ₁/ε of the whole release, and for
    Gaussian DCA σ (at L2 sensitivity Δ₂ = √R, or 2√R replace-one) and each owner's σ_i."""

    laplace_scale: float
    sensitivity_l2: float
    sigma_std: float = 0.0
    client_noise_std: float = 0.0


def _points(cfg: RaceConfig, rng: np.random.Generator) -> F64:
    if cfg.dataset == "skin":
        return np.asarray(load_dataset("skin").X, dtype=np.float64)
    centres = rng.uniform(0, 255, size=(8, 3))
    labels = rng.integers(0, 8, cfg.synthetic_records)
    return np.clip(centres[labels] + rng.normal(0, 15, (cfg.synthetic_records, 3)), 0, 255)


def _charge(
    ledger: PrivacyLedger,
    scenario: Scenario,
    cfg: RaceConfig,
    owners: tuple[str, ...],
    nodes: tuple[str, ...],
) -> _Noise:
    """Charge the planned release with the parties it trusts; returns its calibration."""
    priv = scenario.privacy
    b = laplace_scale(cfg.rows, priv.epsilon, priv.neighbour)
    sensitivity = math.sqrt(cfg.rows) * (2.0 if priv.neighbour == "replace_one" else 1.0)
    laplace = dp_accounting.LaplaceDpEvent(1.0 / priv.epsilon)  # b/Δ₁
    if cfg.mode == "local":
        ledger.charge(MECHANISM, laplace, trust=Trust.nobody())
        return _Noise(laplace_scale=b, sensitivity_l2=sensitivity)
    if cfg.mode == "curator":
        ledger.charge(
            MECHANISM, laplace, trust=Trust.each(OUTPUT_PARTY, description="the curator honest")
        )
        return _Noise(laplace_scale=b, sensitivity_l2=sensitivity)
    tolerated = scenario.table("dca", DcaConfig).tolerated
    if cfg.noise == "gaussian":
        sigma = gaussian_sigma(priv.epsilon, priv.delta, sensitivity, priv.calibration)
        noise_std = client_noise_std(sigma, cfg.owners, tolerated)
        securesum.charge(
            ledger,
            MECHANISM,
            event=dp_accounting.GaussianDpEvent(sigma / sensitivity),
            clients=owners,
            nodes=nodes,
            share_multiplier=noise_std / sensitivity,
        )
        return _Noise(
            laplace_scale=b,
            sensitivity_l2=sensitivity,
            sigma_std=sigma,
            client_noise_std=noise_std,
        )
    securesum.charge(
        ledger,
        MECHANISM,
        event=laplace,
        clients=owners,
        nodes=nodes,
        noise="gamma-laplace",
        needed=cfg.owners - tolerated,
    )
    return _Noise(laplace_scale=b, sensitivity_l2=sensitivity)


def _planned(scenario: Scenario) -> tuple[PrivacyLedger, _Noise]:
    """The ledger with the release charged (refused over budget before anything runs)
    and the release's calibration."""
    cfg = scenario.table("race", RaceConfig)
    priv = scenario.privacy
    ledger = PrivacyLedger(priv.epsilon, priv.delta, on_overspend=priv.on_overspend)
    owners = tuple(f"owner-{k}" for k in range(cfg.owners))
    nodes = securesum.node_names(scenario) if cfg.mode == "dca" else ()
    return ledger, _charge(ledger, scenario, cfg, owners, nodes)


def plan_ledger(scenario: Scenario) -> PrivacyLedger:
    """The ledger as :func:`run_race` charges it, before anything runs."""
    return _planned(scenario)[0]


def _launch_dca(
    world: World,
    scenario: Scenario,
    cfg: RaceConfig,
    streams: Streams,
    counts: tuple[F64, ...],
    owners: tuple[str, ...],
    nodes: tuple[str, ...],
    noise: _Noise,
    shard_records: int,
) -> Agent:
    """The owners as DCA clients (per-message delivery), the compute nodes and the
    aggregator; returns the output party. ``shard_records``: the largest shard's size."""
    tolerated = scenario.table("dca", DcaConfig).tolerated
    # The range check may refuse the run, so it reads public numbers only: a cell counts
    # at most its owner's records (``shard_records``, the largest shard, follows from the
    # configured record count), not the largest count in the private sketches.
    securesum.check_fixed_point(
        scenario, cfg.owners, float(shard_records), 40 * noise.laplace_scale
    )
    plan = securesum.plan(scenario, owners, nodes, cfg.rows * cfg.width, noise.client_noise_std)
    inputs = SketchShares(
        counts=counts,
        noise=cfg.noise,
        noise_std=noise.client_noise_std,
        laplace_scale=noise.laplace_scale,
        parts=max(1, cfg.owners - tolerated),
        randomness=streams.keystream("race", "shares"),
        seed_rngs=tuple(streams.generator("race", o, "noise") for o in owners),
        fraction_bits=plan.fraction_bits,
        n_nodes=len(nodes),
    )
    # SketchShares gives what the per-message client reads (messages(clients)).
    return securesum.launch(world, plan, inputs, batched=False)


def _launch_direct(
    world: World, cfg: RaceConfig, counts: tuple[F64, ...], owners: tuple[str, ...], b: float
) -> Agent:
    """``local`` (owners add Laplace(b)) or ``curator`` (the collector adds it once)."""
    local = cfg.mode == "local"
    for agent, c in zip(world.add_parties("client", owners), counts, strict=True):
        world.start(agent, owner(agent, c, b if local else 0.0, OUTPUT_PARTY))
    out = world.add_party(OUTPUT_PARTY, "aggregator")
    size = cfg.rows * cfg.width
    world.start(out, collector(out, owners, size, cfg.timeout, 0.0 if local else b))
    return out


def _accuracy(
    outcome: SumOutcome,
    family: L2Hash,
    cfg: RaceConfig,
    counts: tuple[F64, ...],
    queries: F64,
) -> dict[str, float] | None:
    """Mean relative error of the released sketch's normalised KDE against the
    non-private merged sketch of the included owners, and the noise sd per cell."""
    if outcome.released is None or outcome.included is None:
        return None
    reference = RaceSketch(family, cfg.width)
    reference.counts = sum(
        (counts[i] for i in np.flatnonzero(outcome.included)), np.zeros((cfg.rows, cfg.width))
    )
    private = RaceSketch(family, cfg.width)
    private.counts = np.asarray(outcome.released, dtype=np.float64).reshape(cfg.rows, cfg.width)
    truth = reference.query(queries) / max(reference.total, 1.0)
    est = private.query(queries) / max(reference.total, 1.0)
    ok = truth > 0
    if ok.any():
        mre = float(np.mean(np.abs(est[ok] - truth[ok]) / truth[ok]))
    else:  # no query has mass in the reference: relative error 0 if est agrees, else ∞
        mre = 0.0 if np.array_equal(est, truth) else math.inf
    return {
        "mre_vs_nonprivate_sketch": mre,
        "noise_sd_per_cell": float(np.std(private.counts - reference.counts)),
    }


def _cells_known_exactly(
    cfg: RaceConfig, view: CoalitionView, owners: Sequence[str], nodes: Sequence[str], quorum: int
) -> int:
    """Sketch cells the coalition sees without the calibrated noise, from its pooled view:
    every cell when it holds every included owner's raw sketch (a colluding curator) or
    enough of every owner's DCA shares to add them up (all M nodes' shares, or t Shamir
    shares: each owner's counts under only its own noise share); none otherwise."""
    if not owners:
        return 0
    if cfg.mode == "curator":
        raw = {m.src for m in view.messages_of(OwnerSketch) if m.dst in view.members}
        return cfg.rows * cfg.width if raw >= set(owners) else 0
    if cfg.mode == "dca" and nodes:
        held: dict[str, set[str]] = {}
        for kind in (Share, SeedShare):
            for m in view.messages_of(kind):
                if m.dst in nodes:
                    held.setdefault(m.src, set()).add(m.dst)
        if all(len(held.get(o, ())) >= quorum for o in owners):
            return cfg.rows * cfg.width
    return 0


def _exposure(
    cfg: RaceConfig,
    world: World,
    owners: Sequence[str],
    nodes: tuple[str, ...],
    threshold: int | None,
    privacy: Privacy,
) -> dict[str, float | int]:
    """``cells_known_exactly`` (:func:`_cells_known_exactly`, over the included owners) and
    ``membership_advantage_bound``: the most any canary-membership test can gain on
    the release against this coalition, TPR − FPR ≤ (e^ε − 1 + 2δ)/(e^ε + 1) at the
    ledger's ε (1 when the coalition sees the cells exactly; δ when nothing was
    released: :func:`~privsim.protocols.race.attacks.advantage_bound`)."""
    return {
        "cells_known_exactly": _cells_known_exactly(
            cfg, world.coalition_view(), owners, nodes, threshold or len(nodes)
        ),
        "membership_advantage_bound": advantage_bound(privacy.achieved_epsilon, privacy.delta),
    }


def run_race(scenario: Scenario, seed: int) -> RunResult:
    """One replication of the scenario's release mode at ``seed``."""
    started = time.perf_counter()
    cfg = scenario.table("race", RaceConfig)
    priv = scenario.privacy
    streams = Streams(seed)
    rng = streams.generator("race", "data")
    points = _points(cfg, rng)
    order = rng.permutation(points.shape[0])
    queries = points[order[: cfg.queries]]
    shards = np.array_split(points[order[cfg.queries :]], cfg.owners)
    family = L2Hash.draw(cfg.rows, points.shape[1], cfg.bandwidth, streams.generator("race", "lsh"))
    counts = tuple(RaceSketch(family, cfg.width).add(s).counts for s in shards)
    owners = tuple(f"owner-{k}" for k in range(cfg.owners))
    all_nodes = securesum.node_names(scenario)
    nodes = all_nodes if cfg.mode == "dca" else ()
    world = build_world(
        scenario,
        streams,
        [*owners, *nodes, OUTPUT_PARTY],
        ignore_servers=() if nodes else all_nodes,
    )
    ledger, noise = _planned(scenario)
    if cfg.mode == "dca":
        largest = max(len(s) for s in shards)
        out = _launch_dca(world, scenario, cfg, streams, counts, owners, nodes, noise, largest)
    else:
        out = _launch_direct(world, cfg, counts, owners, noise.laplace_scale)
    agree_channels(world, securesum.channel_pairs)
    world.run()

    outcome = securesum.outcome_of(out)
    if cfg.mode == "dca" or cfg.mode == "curator":
        # Nothing leaves an aborted secure sum or a crashed curator: withheld.
        securesum.settle(ledger, MECHANISM, outcome, owners)
    else:
        ledger.settle(MECHANISM)  # the owners sent their noisy sketches whatever came of them
    included = (
        None if outcome.included is None else [owners[i] for i in np.flatnonzero(outcome.included)]
    )
    comm = Communication.of_world(world, output_party=OUTPUT_PARTY)
    details: dict[str, Any] = {"laplace_scale": noise.laplace_scale}
    if cfg.mode == "dca" and cfg.noise == "gaussian":
        details |= {
            "sensitivity_l2": noise.sensitivity_l2,
            "sigma_std": noise.sigma_std,
            "client_noise_std": noise.client_noise_std,
            "calibration": priv.calibration,
        }
    privacy = Privacy.of(ledger, world.coalition, **details)
    exposed = owners if included is None else included
    threshold = securesum.node_threshold(scenario)
    return RunResult.of_world(
        scenario,
        seed,
        world,
        ledger,
        holders=owners,
        included=included,
        abort=None if outcome.ok else Abort(reason=str(outcome.abort), detail=outcome.detail),
        privacy=privacy,
        accuracy=_accuracy(outcome, family, cfg, counts, queries),
        communication=comm,
        exposure=_exposure(cfg, world, exposed, nodes, threshold, privacy),
        details={
            "mode": cfg.mode,
            "noise": cfg.noise if cfg.mode == "dca" else "laplace",
            "owners": cfg.owners,
            "bytes_per_owner": comm.roles.get("client", {}).get("bytes_sent_mean"),
        },
        started=started,
    )
