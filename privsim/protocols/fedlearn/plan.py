"""One training plan, built once from the scenario: the sampling and who knows the
sample, the planned cohort, T, the noise (Gaussian or integer) and the shape of every
round's DP event. The rounds, the ledger's charges and settlements, the planner, the
report and the audit all read this one frozen object (:func:`plan_training`), so none
of them re-derives the accounting from the scenario.

A sampled round is one mechanism whatever its cohort (:meth:`TrainingPlan.settle`):

- ``trusted``: the curator releases its noise whatever arrives, an empty cohort's
  round included (noise alone), so every round is the sampled Gaussian;
- ``dca`` under Poisson sampling: every round releases what reached the sum (no abort
  for dropouts beyond T: whether to release would depend on the cohort's size, which
  the target changes; an empty cohort releases the empty sum), and is charged the exact
  pair of its realised honest shares with the target's own share only on the side
  where it was sampled (:class:`~privsim.sim.share_pair.SampledSharesGaussianDpEvent`);
  a round with no other honest share is not private. Only an abort that does not
  depend on the cohort (a compute node's failure) is withheld;
- SecAgg(+) rounds skipped for too small a cohort: the target's presence could have
  made the round run, so such a round is not private — unless one more client would
  still not make a round (then both sides skip and nothing is released);
- ``local``: every round is charged, released or not (no amplification is credited).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import dp_accounting

from privsim.kit.secagg import round as secagg
from privsim.kit.securesum import round as securesum
from privsim.protocols.fedlearn import accounting
from privsim.protocols.fedlearn.accounting import SERVER, NoisePlan, RoundShape
from privsim.protocols.fedlearn.cohort import planned_cohort
from privsim.protocols.fedlearn.config import TrainingConfig
from privsim.protocols.fedlearn.integer import IntegerPlan
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import NoiseShares, PrivacyLedger, Trust
from privsim.sim.sampling import Sampling

__all__ = ["TrainingPlan", "check_mean_mode", "plan_training"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingPlan:
    """Everything the rounds and the accounting read, derived once from the scenario.

    ``sampling``: the amplification credited (None for local DP), naming the server as
    sampler and, with DCA, the compute nodes as observers of who took part;
    ``shape``: how a round's event depends on the noise multiplier (the planner's and
    the charge's); ``noise``: z, σ, each share's σ_i, T and the planned cohort m;
    ``integer``: the integer noise of SecAgg or integer DCA rounds; ``dimension``: the
    model's parameter count, the release's coordinates; ``needed``: the planned honest
    shares, the target's own included (m − T), for DCA's pair."""

    training: TrainingConfig
    population: int
    delta_l2: float
    dimension: int
    nodes: tuple[str, ...]
    sampling: Sampling | None
    shape: RoundShape
    noise: NoisePlan
    integer: IntegerPlan | None
    needed: int

    @property
    def aggregation(self) -> str:
        return self.training.aggregation

    @property
    def secure(self) -> bool:
        """SecAgg or SecAgg+ rounds."""
        return self.aggregation in accounting.SECURE

    @property
    def poisson(self) -> bool:
        return self.training.sampling == "poisson"

    @property
    def own_share_pair(self) -> bool:
        """DCA's Gaussian shares on a Poisson sample: the exact pair per round."""
        return self.shape.share_ratio is not None

    def trust(self, secure: secagg.RoundPlan | None = None) -> Trust:
        """Who must stay honest for a round: SecAgg's server and holders, DCA's compute
        nodes (one of them), the curator, or nobody (local noise)."""
        if secure is not None:
            return secagg.trust(secure)
        if self.aggregation == "dca":
            return Trust.one_of(self.nodes, description="not all compute nodes colluding")
        if self.aggregation == "trusted":
            return Trust.each(SERVER, description="the server (curator) honest")
        return Trust.nobody()

    def noise_shares(self, clients: Sequence[str]) -> NoiseShares | None:
        """DCA's Gaussian noise shares from the picked ``clients`` (σ_i/Δ each)."""
        if self.aggregation != "dca" or self.integer is not None:
            return None
        return NoiseShares(
            contributors=tuple(clients),
            share_multiplier=self.noise.share_std / self.delta_l2,
            sampled_own_share=self.own_share_pair,
            dimension=self.dimension,
            needed=self.needed,
        )

    def charge(
        self,
        ledger: PrivacyLedger,
        r: int,
        clients: Sequence[str],
        secure: secagg.RoundPlan | None = None,
    ) -> None:
        """Charge round r before it runs (refused over budget under ``refuse``): its
        planned event with the aggregation's trust, the picked ``clients``' noise shares
        and the sampling's amplification while the sample stays hidden."""
        label = accounting.round_label(r)
        if secure is not None:  # integer noise shares, the server and t holders trusted
            assert secure.noise is not None
            shares = secure.noise.account
            ledger.charge(
                label,
                shares.event,
                trust=self.trust(secure),
                noise=shares.noise_shares(clients),
                sampling=self.sampling,
            )
            return
        if self.integer is not None:  # DCA with integer noise shares: the papers' bound
            ledger.charge(
                label,
                self.integer.account.event,
                trust=self.trust(),
                noise=self.integer.account.noise_shares(clients),
                sampling=self.sampling,
            )
            return
        planned = dp_accounting.GaussianDpEvent(self.noise.multiplier * self.shape.factor)
        ledger.charge(
            label,
            planned,
            trust=self.trust(),
            noise=self.noise_shares(clients),
            sampling=self.sampling,
        )

    def settle(
        self, ledger: PrivacyLedger, r: int, included: Sequence[str] | None, reason: str = ""
    ) -> None:
        """Settle round r with what reached the release (``included``; None: nothing was
        released; ``reason``: why, where not as planned). A sampled round is charged
        whatever its cohort (module docstring): only a round whose release could not
        depend on the target is withheld."""
        label = accounting.round_label(r)
        if included is None:  # local: charged as planned; else an abort independent of
            # the cohort (a compute node's failure; under a fixed cohort, dropouts)
            if self.aggregation == "local":
                ledger.settle(label)
            else:
                ledger.withhold(label)
            return
        if self.aggregation in ("dca", *accounting.SECURE):
            ledger.settle(label, contributors=included, reason=reason)
        elif self.aggregation == "trusted" and self.training.central_noise == "mean":
            realised = self.noise.multiplier * len(included) / self.noise.cohort
            ledger.settle(label, dp_accounting.GaussianDpEvent(realised))
        else:
            ledger.settle(label)

    def skip(self, ledger: PrivacyLedger, r: int, runnable_with_one_more: bool) -> None:
        """A SecAgg round skipped for too small a cohort: charged as not private when one
        more client (the target) would have made it run — whether it ran reveals the
        target's sampling — (refused over budget like any charge), nothing otherwise."""
        if runnable_with_one_more:
            label = accounting.round_label(r)
            ledger.charge(label, dp_accounting.NonPrivateDpEvent())
            ledger.settle(label)


def check_mean_mode(training: TrainingConfig) -> None:
    """Central noise on the mean, z·k/m with k counting the target, is refused under
    Poisson sampling: the noise's variance then reveals whether the target was sampled
    (with the count known, rare cohorts of 1–2 clients get noise of 0.06–0.11 and ε at
    δ = 10⁻⁶ is at least 144), which Flower's accountant, charging the planned z,
    does not see."""
    if (
        training.aggregation == "trusted"
        and training.central_noise == "mean"
        and training.sampling == "poisson"
    ):
        raise FieldError(
            "training.central_noise",
            "noise on the mean (z·k/m) under Poisson sampling scales with a cohort that "
            "counts the protected client, so its variance reveals whether it was sampled; "
            "no sampled Gaussian accounts for that",
            'set training.central_noise = "sum" (noise calibrated to the sum, whatever the '
            'cohort), or training.sampling = "fixed" with privacy.neighbour = "replace_one"',
        )


def plan_training(scenario: Scenario, dimension: int) -> TrainingPlan:
    """The scenario's training plan for a model of ``dimension`` parameters."""
    training = scenario.table("training", TrainingConfig)
    check_mean_mode(training)
    n = scenario.population.clients
    nodes = securesum.node_names(scenario) if training.aggregation == "dca" else ()
    sampling = accounting.sampling_of(scenario, nodes)
    delta_l2 = accounting.sensitivity(scenario)
    integer = (
        accounting.integer_of(scenario, dimension) if accounting.integer_noise(scenario) else None
    )
    m = planned_cohort(training, n)
    t = accounting.tolerated(scenario) if training.aggregation in ("dca", *accounting.SECURE) else 0
    needed = math.floor(m - t + 1e-9) if training.aggregation == "dca" else 0
    shape = accounting.round_shape(scenario, sampling, m, t, needed, dimension)
    noise = (
        accounting.secure_noise(scenario, integer)
        if integer is not None
        else accounting.noise_plan(scenario, shape)
    )
    return TrainingPlan(
        training=training,
        population=n,
        delta_l2=delta_l2,
        dimension=dimension,
        nodes=nodes,
        sampling=sampling,
        shape=shape,
        noise=noise,
        integer=integer,
        needed=needed,
    )
