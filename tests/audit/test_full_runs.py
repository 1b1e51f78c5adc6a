"""The DCA audit's vectorised trials model the adversary's view of a real round: the
statistic from end-to-end runs on the bus has the same distribution."""

from __future__ import annotations

from scipy import stats

from privsim import registry
from privsim.audit import audit
from privsim.audit.harness import plan_of
from privsim.kit.audit import TrialBatch
from privsim.scenarios import scenario_from_dict

SMALL = {
    "population": {"clients": 10, "compute_nodes": 3},
    "dca": {"tolerated": 3},
    "threat": {"colluding_clients": 2},
}


def _scenario():
    return scenario_from_dict({**dict(registry.get("dca").example), **SMALL})


def test_full_runs_match_the_vectorised_trials():
    """150 full rounds per side against 10⁵ vectorised trials: a two-sample KS test
    (the same distribution: p-values are uniform; 0.001 fails 1 seed in 1000)."""
    scenario = _scenario()
    plan = plan_of(scenario)
    assert plan.full_trials is not None
    for canary_in in (False, True):
        full = plan.full_trials(scenario, TrialBatch(seed=2, index=0, count=150), canary_in)
        vec = plan.trials(scenario, TrialBatch(seed=2, index=0, count=100_000), canary_in)
        assert stats.ks_2samp(full, vec).pvalue > 1e-3


def test_full_run_audit_runs_as_a_study():
    result = audit(_scenario(), 40, seed=1, workers=2, full_runs=True)
    assert result.trials == 40
    assert result.lower_bound < result.claimed_epsilon
