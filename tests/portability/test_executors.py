"""The same study gives the same rows on any executor: local worker processes and an
in-process Dask cluster, for every protocol's built-in scenario (one cell, two
replications). Rows are compared whole, timings aside, to the bit: both executors run the
same ``run`` on the same CPU, and a row is a pure function of (scenario, seed).

The module's sweeps share one in-process Dask cluster, made as ``--scheduler local``
makes its own (two single-threaded worker processes) and reached at its address: a
cluster's start-up (about 10 s: two fresh interpreters importing privsim) is paid once,
not per study. ``--scheduler local`` itself, creating and closing its cluster, is
tests/studies/test_studies.py::test_dask_local_cluster_gives_the_same_rows_as_the_process_pool.
"""

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
def test_local_processes_and_a_dask_cluster_give_the_same_rows(tmp_path, name, dask_scheduler):
    study = _study(tmp_path, name)
    sweep(study, tmp_path / "processes", workers=2, progress=None)
    sweep(study, tmp_path / "dask", scheduler=dask_scheduler, workers=2, progress=None)
    with ResultStore(tmp_path / "processes") as a, ResultStore(tmp_path / "dask") as b:
        rows, again = rows_without_timing(a.rows()), rows_without_timing(b.rows())
    assert len(rows) == 2
    assert rows == again


def test_the_threat_study_of_training_gives_the_same_rows_with_1_and_2_workers(
    tmp_path, dask_scheduler
):
    """Every attack on training (the cases of privsim/studies/fedlearn-threats.toml, at
    one coalition size and without noise, where each attack recovers something) gives
    the same rows, attack sections included, with one worker process, two, and an
    in-process Dask cluster."""
    import tomllib
    from pathlib import Path

    shipped = Path(__file__).resolve().parents[2] / "privsim" / "studies"
    data = tomllib.loads((shipped / "fedlearn-threats.toml").read_text(encoding="utf-8"))
    data["name"] = "executors-threats"
    data["replications"] = 1
    data["overrides"]["training.rounds"] = 2
    data["grid"] = {"threat.colluding_clients": [5], "training.noise_multiplier": [0.0]}
    path = tmp_path / "threats.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    study = load_study(path)
    sweep(study, tmp_path / "one", workers=1, progress=None)
    sweep(study, tmp_path / "two", workers=2, progress=None)
    sweep(study, tmp_path / "dask", scheduler=dask_scheduler, workers=2, progress=None)
    with (
        ResultStore(tmp_path / "one") as a,
        ResultStore(tmp_path / "two") as b,
        ResultStore(tmp_path / "dask") as c,
    ):
        one, two, dask = (rows_without_timing(s.rows()) for s in (a, b, c))
    assert len(one) == len(data["cases"])
    # success is None only for an active attack whose target was never picked
    assert all("success" in row["attack"] for row in one)
    assert sum(isinstance(row["attack"]["success"], float) for row in one) >= 5
    assert one == two == dask
