"""Poisoning clients (``threat.poisoning``): a share of the population, drawn once per run,
skips clipping and sends a poisoned update in every round it is picked and online.

The malicious clients collude: the run adds them to its coalition, so the ε the ledger
reports is against them too. What each sends, with u_i its raw (unclipped) update
from the round's model w (:meth:`~privsim.protocols.fedlearn.federated.Learner.updates`
with ``clip=False``):

- ``scale``: factor·u_i, a boosted update (Bhagoji et al., ICML 2019, "explicit boosting");
- ``sign_flip``: −factor·u_i, gradient ascent on the clients' loss (a sign-flipping
  Byzantine client, as in Blanchard et al., NeurIPS 2017, and the robust-aggregation
  literature after it);
- ``replace``: model replacement (Bagdasaryan et al., AISTATS 2020, §4.2): the a malicious
  clients online in a round each send (m/(η·a))·(w_target − w), so that the server's
  step w + η·Σ/m moves the model onto w_target (exactly for FedAvg when every honest
  update averages out; m the planned cohort, η ``training.server_lr``). w_target is a
  fixed "wrong labels" model: the start model trained, before the run, on the malicious
  clients' own records with every label y replaced by (y + 1) mod K
  (:data:`TARGET_EPOCHS` local epochs each, their models averaged). ``factor`` is not
  used (the boost is the planned cohort's).

Where the update is checked decides whether it counts: an honest ``trusted`` curator
clips every update it receives (the attack is then a clipped honest-looking update);
``local``, ``secagg``, ``secagg_plus`` and ``dca`` pass it into the sum unchecked
unless ``training.update_check`` checks it (:mod:`~privsim.protocols.fedlearn.attacks.
defences`). Through SecAgg the client's input is round(2^f·u) mod 2^b: coordinates
beyond the modulus planned for clipped inputs wrap around, and the decoded sum holds
their residue, not their value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from privsim.protocols.fedlearn.attacks import AttackContext, RoundView, defences
from privsim.protocols.fedlearn.data import CohortData
from privsim.protocols.fedlearn.models import local_updates

__all__ = ["TARGET_EPOCHS", "PoisonTally", "Poisoner", "build", "malicious_count"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: Local epochs of the "wrong labels" target model of ``replace``.
TARGET_EPOCHS = 20


def malicious_count(share: float, clients: int) -> int:
    """round(share·N), halves rounded up."""
    return int(np.floor(share * clients + 0.5))


@dataclass(slots=True)
class PoisonTally:
    """What the malicious clients did over the run: poisoned rows ``sent`` (picked and
    online), and of those the ones ``included`` in a released sum over the ``observed``
    rounds."""

    sent: int = 0
    included: int = 0
    observed: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Poisoner:
    """The run's malicious clients (``malicious``, population indices ``indices``) and what
    they send (``kind``, ``factor``; ``replace``: the model ``target`` and the boost
    m/η). ``learner`` computes their raw updates on the ``rng`` of their own.
    ``update_check`` is the run's defence, ``proof_bytes`` a client's range proof per
    round under ``range_check`` (:func:`~privsim.protocols.fedlearn.attacks.defences.
    range_proof_bytes`; not on the simulated wire)."""

    name: ClassVar[str] = "poisoning"

    kind: str
    share: float
    factor: float
    indices: tuple[int, ...]
    malicious: frozenset[str]
    learner: Any
    rng: np.random.Generator
    boost: float
    target: F64 | None = None
    update_check: str = "none"
    proof_bytes: int | None = None
    tally: PoisonTally = field(default_factory=PoisonTally)

    def rows(self, cohort: I64, online: npt.NDArray[np.bool_]) -> I64:
        """The cohort rows of the malicious clients that are online."""
        bad = np.isin(np.asarray(cohort, dtype=np.int64), np.asarray(self.indices, dtype=np.int64))
        return np.flatnonzero(bad & np.asarray(online, dtype=bool))

    def poison(
        self,
        cohort: I64,
        names: tuple[str, ...],
        online: npt.NDArray[np.bool_],
        params: F64,
        updates: F64,
    ) -> F64:
        """The cohort's update matrix (k, P) with the online malicious clients' rows
        replaced by what they send (``updates``: the honest clipped rows; unchanged, the
        same array, when no malicious client is online)."""
        rows = self.rows(cohort, online)
        if rows.size == 0:
            return updates
        out = np.array(updates, dtype=np.float64)
        if self.kind == "replace":
            assert self.target is not None
            step = (self.boost / rows.size) * (self.target - np.asarray(params, dtype=np.float64))
            out[rows] = step[None, :]
        else:
            raw = self.learner.updates(
                params,
                np.asarray(cohort, dtype=np.int64)[rows],
                np.ones(rows.size, dtype=bool),
                self.rng,
                clip=False,
            )
            sign = -1.0 if self.kind == "sign_flip" else 1.0
            out[rows] = sign * self.factor * raw
        self.tally.sent += int(rows.size)
        return out

    def observe(self, view: RoundView) -> None:
        """Count the malicious client-rounds that reached a released sum."""
        self.tally.observed += 1
        included = view.run.included()
        if included is None:
            return
        self.tally.included += sum(1 for c in included if c in self.malicious)

    def report(self) -> dict[str, Any]:
        """The result's ``attack.poisoning`` section: the kind, the share, the number of
        malicious clients, their poisoned client-rounds sent and included."""
        return {
            "name": self.name,
            "kind": self.kind,
            "share": self.share,
            "factor": self.factor if self.kind != "replace" else None,
            "malicious": len(self.malicious),
            "malicious_rounds_sent": self.tally.sent,
            "update_check": self.update_check,
            "range_proof_bytes_per_client": self.proof_bytes,
            # None until the run shows the poisoner its rounds (observe)
            "malicious_rounds_included": self.tally.included if self.tally.observed else None,
        }


def wrong_labels_model(learner: Any, indices: tuple[int, ...], rng: np.random.Generator) -> F64:
    """``replace``'s target: the start model trained for :data:`TARGET_EPOCHS` epochs of
    the clients' local SGD on the records of ``indices`` with labels (y + 1) mod K,
    the clients' models averaged."""
    data = learner.data.cohort(np.asarray(indices, dtype=np.int64))
    flipped = CohortData(
        clients=data.clients.copy(),
        X=np.array(data.X),
        y=(np.asarray(data.y) + 1) % int(learner.data.n_classes),
        mask=np.array(data.mask),
        counts=data.counts.copy(),
    )
    t = learner.training
    deltas = local_updates(
        learner.model,
        learner.start,
        flipped,
        epochs=TARGET_EPOCHS,
        batch_size=t.local_batch,
        lr=t.client_lr,
        rng=rng,
    )
    target: F64 = np.asarray(learner.start + deltas.mean(axis=0), dtype=np.float64)
    target.flags.writeable = False
    return target


def build(ctx: AttackContext) -> Poisoner | None:
    """The run's malicious clients: round(share·N) of the population drawn once from the
    ``("threat", "poisoning")`` stream (None without ``threat.poisoning``), never the
    attack's named ``threat.target`` (an attack would "recover" a colluder's input)."""
    cfg = ctx.scenario.threat.poisoning
    if cfg is None:
        return None
    n = ctx.scenario.population.clients
    target = ctx.scenario.threat.target
    spared = int(target.removeprefix("client-")) if target is not None else None
    pool = n if spared is None else n - 1
    count = min(malicious_count(cfg.share, n), pool)
    drawn = ctx.streams.fresh("threat", "poisoning").choice(pool, size=count, replace=False)
    if spared is not None:  # indices past the target's move up by one
        drawn = drawn + (drawn >= spared)
    indices = tuple(sorted(int(i) for i in drawn))
    learner = ctx.learner
    training = learner.training
    proof = None
    if training.update_check == "range_check":
        integer = ctx.plan.integer
        scale = None if integer is None else float(1 << integer.fraction_bits)
        bits = defences.range_value_bits(training.clip_norm, scale)
        proof = defences.range_proof_bytes(int(learner.start.size), bits)
    target = None
    if cfg.kind == "replace" and indices:
        target = wrong_labels_model(
            learner, indices, ctx.streams.fresh("attack", "poisoning", "target")
        )
    return Poisoner(
        kind=cfg.kind,
        share=float(cfg.share),
        factor=float(cfg.factor),
        indices=indices,
        malicious=frozenset(f"client-{i}" for i in indices),
        learner=learner,
        rng=ctx.streams.generator("attack", "poisoning", "local"),
        boost=float(ctx.plan.noise.cohort) / float(learner.training.server_lr),
        target=target,
        update_check=training.update_check,
        proof_bytes=proof,
    )
