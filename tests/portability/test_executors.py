"""The same study gives the same rows on any executor: local worker processes and an
in-process Dask cluster, for every protocol's built-in scenario (one cell, two
replications). Rows are compared whole, timings aside, to the bit: both executors run the
same ``run`` on the same CPU, and a row is a pure function of (scenario, seed)."""

from __future__ import annotations

import pytest
import tomli_w

from privsim.scenarios import builtin_scenario
from privsim.studies import ResultStore, load_study
from privsim.studies.store import rows_without_timing
from privsim.studies.sweep import sweep
from tests.portability.test_cross_cpu import SCENARIOS


def _study(tmp_path, name):
    epsilon = builtin_scenario(name).privacy.epsilon
    study = {
        "name": f"executors-{name}",
        "seed": 11,
        "replications": 2,
        "base": name,
        "overrides": SCENARIOS[name],
        "grid": {"privacy.epsilon": [epsilon]},
    }
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps(study), encoding="utf-8")
    return load_study(path)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_processes_and_a_dask_cluster_give_the_same_rows(tmp_path, name):
    study = _study(tmp_path, name)
    sweep(study, tmp_path / "processes", workers=2, progress=None)
    sweep(study, tmp_path / "dask", scheduler="local", workers=2, progress=None)
    with ResultStore(tmp_path / "processes") as a, ResultStore(tmp_path / "dask") as b:
        rows, again = rows_without_timing(a.rows()), rows_without_timing(b.rows())
    assert len(rows) == 2
    assert rows == again
