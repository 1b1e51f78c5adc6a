"""The trusted-aggregator baseline of a DCA run has no compute nodes: faults and
colluders that name compute nodes apply to the DCA round only."""

from __future__ import annotations

from privsim.runs import run
from tests.conftest import make_scenario


def test_a_crashed_compute_node_aborts_dca_and_leaves_the_baseline_running():
    scenario = make_scenario(
        baseline=True,
        faults={"crashes": [["compute-0", 0.0]]},
        threat={"colluding_servers": ["compute-1"]},
    )
    result = run(scenario).to_dict()
    assert result["status"] == "aborted"  # one lost node ends a round with additive shares
    baseline = result["methods"]["trusted_aggregator"]
    assert baseline["status"] == "released"
    assert baseline["privacy"]["guarantee_met"] is True
