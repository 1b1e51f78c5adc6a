"""The pair of a Poisson-sampled release whose noise includes the target's own share
(:mod:`privsim.sim.share_pair`), checked against an exact computation made apart: the
hockey-stick divergence by one-dimensional quadrature over x₁ of χ² tails
(:func:`~privsim.sim.share_pair.hockey_stick`), never by the PLD's own grid.

Tolerances. The PLD is pessimistic by construction (each histogram cell's mass at its
largest loss, the loss rounded up to the interval), so its δ(ε) must never be below the
quadrature's (up to the quadrature's own error, 10⁻¹⁰ relative plus 10⁻¹⁴ absolute,
hence the 1e-9 slack) and is above it by the discretisation alone: a loss rounded up by
at most about two intervals (g's cell and step, then the PLD's grid), which moves δ(ε)
by at most a factor e^{2·interval}-ish around the mass that sits near ε — well under
0.5% at interval 10⁻⁴ for the ε below (measured: 0.01–0.12%)."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_module

from privsim.sim.ledger import NoiseShares, PrivacyLedger, Trust
from privsim.sim.sampling import Sampling
from privsim.sim.share_pair import SampledSharesGaussianDpEvent, hockey_stick, shares_pair_pld

INTERVAL = 1e-4

CASES = [  # (q, s_in, s_out, d): DCA-like H = 10 shares of 0.5, a q = 1 pair, many dims
    (0.05, math.sqrt(10) * 0.5, 3 * 0.5, 1),
    (0.05, math.sqrt(10) * 0.5, 3 * 0.5, 20),
    (1.0, 1.2, 1.0, 5),
    (0.1, 1.05, 1.0, 500),
]


@pytest.mark.parametrize(("q", "s_in", "s_out", "d"), CASES)
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0])
def test_the_pld_dominates_the_exact_pair_tightly(
    q: float, s_in: float, s_out: float, d: int, epsilon: float
) -> None:
    pld = shares_pair_pld(SampledSharesGaussianDpEvent(q, s_in, s_out, d), INTERVAL)
    exact = max(
        hockey_stick(epsilon, q, s_in, s_out, d),
        hockey_stick(epsilon, q, s_in, s_out, d, direction="add"),
    )
    found = pld.get_delta_for_epsilon(epsilon)
    assert found >= exact * (1 - 1e-9)
    assert found <= exact * 1.005


@pytest.mark.parametrize(("q", "z"), [(0.05, 1.0), (0.3, 2.0), (1.0, 1.5)])
def test_equal_noise_on_both_sides_is_the_sampled_gaussian(q: float, z: float) -> None:
    """s_in = s_out: dp-accounting's Poisson-sampled Gaussian, the same ε to the
    discretisation, one round and forty. Both are pessimistic on different grids; each
    round's loss is rounded up by at most about two intervals here, so the composed ε
    may lie above by up to 2·count·interval (measured: 0.0001 at one round, 0.0025 at
    forty)."""
    mine = shares_pair_pld(SampledSharesGaussianDpEvent(q, z, z, 7), INTERVAL)
    ref = pld_module.from_gaussian_mechanism(
        z, value_discretization_interval=INTERVAL, sampling_prob=q
    )
    for count in (1, 40):
        a = (mine if count == 1 else mine.self_compose(count)).get_epsilon_for_delta(1e-5)
        b = (ref if count == 1 else ref.self_compose(count)).get_epsilon_for_delta(1e-5)
        assert b - 1e-9 <= a <= b + 2 * count * INTERVAL


@pytest.mark.parametrize("d", [1, 20])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_the_largest_update_is_the_worst_case(d: int, direction: str) -> None:
    """The pair is charged at ‖u‖ = Δ: its divergence grows with the norm of the target's
    update (smaller updates, u = 0 included, are below it at every ε checked)."""
    q, s_in, s_out = 0.2, math.sqrt(5) * 0.6, 2 * 0.6
    for epsilon in (0.05, 0.3, 1.0):
        by_norm = [
            hockey_stick(epsilon, q, s_in, s_out, d, mean=m, direction=direction)
            for m in (0.0, 0.5, 1.0)
        ]
        assert by_norm == sorted(by_norm)


def test_the_variance_mismatch_costs_more_with_more_coordinates() -> None:
    """The same shares, one coordinate against 33 and 610: the variance differs on each,
    so ε grows with the release's dimension (never below the one-coordinate pair)."""
    eps = [
        shares_pair_pld(
            SampledSharesGaussianDpEvent(0.05, math.sqrt(60) * 0.2, math.sqrt(59) * 0.2, d),
            1e-3,
        ).get_epsilon_for_delta(1e-5)
        for d in (1, 33, 610)
    ]
    assert eps == sorted(eps) and eps[2] > 1.2 * eps[0]


def test_bad_events_are_named() -> None:
    with pytest.raises(ValueError, match="multiplier_in"):
        SampledSharesGaussianDpEvent(0.1, 0.9, 1.0, 3)
    with pytest.raises(ValueError, match="sampling_probability"):
        SampledSharesGaussianDpEvent(0.0, 1.0, 1.0, 3)
    with pytest.raises(ValueError, match="dimension"):
        SampledSharesGaussianDpEvent(0.1, 1.0, 1.0, 0)


# --- in the ledger ---------------------------------------------------------------------


def _ledger(contributors: tuple[str, ...]) -> PrivacyLedger:
    ledger = PrivacyLedger(10.0, 1e-5, neighbour="add_remove")
    nodes = ("node-0", "node-1")
    ledger.charge(
        "round-1",
        dp_accounting.GaussianDpEvent(1.0),
        trust=Trust.one_of(nodes),
        noise=NoiseShares(
            contributors=contributors,
            share_multiplier=0.5,
            sampled_own_share=True,
            dimension=4,
            needed=5,
        ),
        sampling=Sampling.poisson(0.1, "server", observers=nodes),
    )
    return ledger


def test_a_settled_round_is_the_pair_of_its_honest_shares() -> None:
    ledger = _ledger(())
    # unsettled: the plan's 5 honest shares, the target's own among them
    planned = ledger.entries[0].event_against(())
    assert planned == SampledSharesGaussianDpEvent(0.1, math.sqrt(5) * 0.5, 2 * 0.5, 4)
    ledger.settle("round-1", contributors=[f"client-{i}" for i in range(7)])
    entry = ledger.entries[0]
    assert entry.event_against(()) == SampledSharesGaussianDpEvent(
        0.1, math.sqrt(7) * 0.5, math.sqrt(6) * 0.5, 4
    )
    # two colluding contributors: 5 honest shares left
    assert entry.event_against({"client-0", "client-1"}) == SampledSharesGaussianDpEvent(
        0.1, math.sqrt(5) * 0.5, 2 * 0.5, 4
    )
    # the server drew the sample, a compute node saw who sent it a share: no amplification
    for knows in ({"server"}, {"node-1"}):
        assert entry.event_against(knows).sampling_probability == 1.0
    assert entry.amplification_against({"node-1"}) == (
        "not applied: observer of the sample colluding (node-1)"
    )
    # every compute node colluding: the inputs are read in the clear
    assert math.isinf(ledger.guarantee({"node-0", "node-1"}).epsilon)


def test_a_release_with_no_other_honest_share_is_not_private() -> None:
    """One honest share, the target's own: without the target the release is exactly
    known, with it the release is noisy, so a sampled target is seen (δ ≥ q)."""
    ledger = _ledger(())
    ledger.settle("round-1", contributors=["client-0"])
    assert math.isinf(ledger.guarantee().epsilon)
    ledger = _ledger(())
    ledger.settle("round-1", contributors=[])
    assert math.isinf(ledger.guarantee().epsilon)
