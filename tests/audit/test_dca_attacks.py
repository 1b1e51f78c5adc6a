"""DCA's attacks succeed where Theorem 1 says they must and fail where they must not."""

from __future__ import annotations

import numpy as np
import pytest

from privsim.kit.securesum.config import DcaConfig
from privsim.protocols.dca.attacks import (
    dropout_attack,
    exposure,
    node_reconstruction,
    noise_subtraction,
    subtraction_variance,
)
from privsim.protocols.dca.run import sensitivity, simulate
from privsim.sim.calibration import exact_sigma
from tests.conftest import make_scenario

N, T, D = 20, 5, 8  # clients, tolerated, dimension (conftest's scenario: d = 8)


def _scenario(**changes):
    return make_scenario(
        population={"clients": N, "compute_nodes": 3}, dca={"tolerated": T}, **changes
    )


@pytest.mark.parametrize("nodes", [3, 2])
def test_node_reconstruction_needs_every_compute_node(nodes):
    colluding = [f"compute-{k}" for k in range(nodes)]
    sim = simulate(_scenario(threat={"colluding_servers": colluding}), 1)
    bits = sim.scenario.table("dca", DcaConfig).fraction_bits
    found = node_reconstruction(sim.world.coalition_view(), sim.nodes, bits)
    if nodes < 3:
        assert found == {}  # M − 1 shares are uniform: nothing to reconstruct
        return
    assert len(found) == N
    z = sim.data.rows(np.arange(N))
    errors = np.stack([found[f"client-{i}"] - z[i] for i in range(N)])
    # The error is each client's own noise η_i ~ N(0, σ_i²): with 160 values the sample
    # variance has relative sd √(2/160) ≈ 0.11; 0.45 is 4 sd.
    assert np.var(errors) / sim.client_noise_std**2 == pytest.approx(1.0, abs=0.45)


def _subtraction_errors(colluding: int, absent: int, reps: int) -> tuple[np.ndarray, int]:
    """Errors of the coalition's estimate of client-(N−1)'s input over ``reps`` runs."""
    scenario = _scenario(
        threat={"colluding_clients": [f"client-{i}" for i in range(colluding)]},
        faults={"absent_parties": [f"client-{i}" for i in range(colluding, colluding + absent)]},
    )
    target = f"client-{N - 1}"
    errors = []
    honest = 0
    for seed in range(reps):
        sim = simulate(scenario, seed)
        assert sim.outcome.released is not None and sim.outcome.included is not None
        z = sim.data.rows(np.arange(N))
        known = {f"client-{i}": z[i] for i in np.flatnonzero(sim.outcome.included)}
        est = noise_subtraction(sim.world.coalition_view(), sim.outcome.released, target, known)
        errors.append(est - z[N - 1])
        honest = int(sim.outcome.included.sum()) - colluding
    return np.concatenate(errors), honest


@pytest.mark.parametrize(("colluding", "absent"), [(T, 0), (0, T), (2 * T, 0), (T, 3)])
def test_noise_subtraction_leaves_the_honest_noise(colluding, absent):
    """The error variance is H·σ_i² (theory); it stays ≥ σ² (the curator's) while
    T′ + dropouts ≤ T and falls below it beyond. 40 runs × 8 coordinates: relative sd
    of the sample variance √(2/320) ≈ 0.08; tolerance 0.32 = 4 sd."""
    errors, honest = _subtraction_errors(colluding, absent, 40)
    sigma = exact_sigma(1.0, 1e-5, sensitivity(_scenario()))
    theory = subtraction_variance(sigma, N, T, honest)
    assert honest == N - colluding - absent
    assert np.var(errors) / theory == pytest.approx(1.0, abs=0.32)
    if colluding + absent <= T:
        assert theory >= sigma**2  # the attack fails: no better than the curator's noise
    else:
        # the attack succeeds: below the curator's noise, i.e. below what ε allows
        # ((N − T′ − D)/(N − T − 1) = 10/14 and 12/14 here; measured as above)
        assert theory < 0.9 * sigma**2


def test_dropout_attack_breaks_the_paper_accounting_with_colluders():
    """A node claiming T honest clients missing: alone (T′ = 0) it stays within the
    paper's promise; with T′ ≥ 1 colluding clients it is beyond it, while the paper's
    T accounting (honest-but-curious nodes) still promises ε."""
    scenario = _scenario()
    alone = dropout_attack(scenario, 0, T, seed=1)
    assert alone.status == "released"
    assert alone.effective_epsilon == pytest.approx(1.0, rel=1e-6)
    eps = [dropout_attack(scenario, t, T, seed=1) for t in (1, 3, 5)]
    assert all(a.status == "released" for a in eps)
    assert all(a.paper_epsilon == 1.0 for a in eps)  # T′ ≤ T: the paper promises ε
    values = [a.effective_epsilon for a in eps]
    assert 1.0 < values[0] < values[1] < values[2]
    # the target's own share, which the ledger does not credit, does not rescue it
    assert eps[-1].epsilon_with_own_share > 1.0
    assert eps[0].honest_included == N - 1 - T


@pytest.mark.parametrize(("colluding", "ratio"), [(0, 20 / 14), (10, 10 / 14)])
def test_exposure_metrics_of_a_run(colluding, ratio):
    """H honest included shares of σ²/(N − T − 1) each: H/14 of the curator's σ²."""
    scenario = _scenario(threat={"colluding_clients": colluding})
    metrics = exposure(simulate(scenario, 1))
    assert metrics["honest_noise_shares"] == N - colluding
    assert metrics["target_noise_ratio"] == pytest.approx(ratio, rel=1e-9)
    assert metrics["inputs_reconstructed"] == 0
    every_node = _scenario(threat={"colluding_servers": ["compute-0", "compute-1", "compute-2"]})
    assert exposure(simulate(every_node, 1))["inputs_reconstructed"] == N


def test_a_false_claim_is_a_deviating_compute_node():
    """``dca.false_claims`` = 3 with compute-0 colluding: the node reports three honest
    clients' shares as missing, every node sums over the intersection, and those clients
    drop out of the release (their shares did arrive). The same scenario with the node
    honest-but-curious includes everyone. (Batched delivery is refused with a colluding
    compute node, so this is the per-message path.)"""
    from privsim.scenarios.errors import ScenarioError

    def scenario(**dca):
        return make_scenario(
            population={"clients": N, "compute_nodes": 3},
            threat={"colluding_servers": ["compute-0"]},
            dca={"tolerated": T, **dca},
        )

    base, sim = simulate(scenario(), 1), simulate(scenario(false_claims=3), 1)
    assert sim.outcome.ok and int(sim.outcome.included.sum()) == N - 3
    assert int(base.outcome.included.sum()) == N
    left_out = [f"client-{i}" for i in np.flatnonzero(~sim.outcome.included)]
    assert left_out == ["client-0", "client-1", "client-2"]  # the first honest ones
    # ledger: 3 fewer honest shares than the honest-but-curious run, within T = 5
    assert sim.privacy().achieved_epsilon > base.privacy().achieved_epsilon
    assert sim.privacy().guarantee_met
    with pytest.raises(ScenarioError, match=r"dca\.false_claims"):
        simulate(make_scenario(dca={"tolerated": T, "false_claims": 3}), 1)
