"""Results hold on every machine: the same (scenario, seed) gives the same simulation
whatever the CPU's vector instructions, the number of worker processes or the executor.

NumPy picks an implementation of ``exp``, ``log`` and friends by CPU at import; the
``NPY_DISABLE_CPU_FEATURES`` variable turns its dispatch off, so one machine can play both
a laptop with AVX-512 and one without. Each built-in scenario (every registered protocol;
the quickstart's trusted-aggregator baseline covers ``trusted_aggregator``) runs in child
processes (``probe.py``) with full dispatch and with every dispatched feature off, and with
one and two worker processes; then as a study through local worker processes and through
an in-process Dask cluster. What docs/explanation/reproducibility.md promises, checked here:

- **bit-identical**: every message trace (routes, fates, wire bytes and the send,
  departure and receipt times, floats by their bytes) and the result's ``communication``,
  ``parties``, ``status`` and coalition members;
- **equal within the default tolerance of** ``privsim check`` (relative 1e-9): every other
  field (accuracy, ε, noise calibration: floating-point maths that may round differently).
  Measured here: BLR's calibrated noise multipliers and errors differ by a few units in the
  last places between AVX-512 and baseline dispatch (relative up to about 1e-12).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privsim.golden import compare, format_differences
from privsim.kit.result import without_timing

PROBE = Path(__file__).with_name("probe.py")
REPO = PROBE.parents[2]

#: Each protocol's built-in scenario, made small where it is large.
SCENARIOS: dict[str, dict[str, Any]] = {
    "quickstart": {"population.clients": 400, "dca.tolerated": 40},
    "blr": {},
    "bcd": {},
    "race": {},
    "secagg": {},
    "secagg_plus": {"population.clients": 200},
    "summarization": {},
}
SEED = 5
#: The fields that must agree to the bit on any machine (besides the traces).
EXACT = ("communication", "parties", "status")


def dispatched_features() -> list[str]:
    """The CPU features NumPy dispatches to on this machine, beyond its baseline."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    found = umath.__cpu_features__
    return [name for name in umath.__cpu_dispatch__ if found.get(name)]


def _environment(*, limited: bool, processes: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    env["PRIVSIM_ROUND_PROCESSES"] = str(processes)
    if limited and dispatched_features():
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(dispatched_features())
    return env


def under_both_dispatches(script: str, *args: str) -> list[str]:
    """What ``python -c script args`` prints with NumPy's dispatch in full, then limited."""
    return [
        subprocess.run(
            [sys.executable, "-c", script, *args],
            env=_environment(limited=limited, processes=1),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for limited in (False, True)
    ]


def probe(name: str, *, limited: bool = False, processes: int = 1, legacy: bool = False) -> Any:
    return probe_all([name], limited=limited, processes=processes, legacy=legacy)[name]


def probe_all(
    names: list[str], *, limited: bool = False, processes: int = 1, legacy: bool = False
) -> dict[str, Any]:
    """Each scenario of ``names``, run in that order in one child process: {name: output}."""
    specs = [
        {"scenario": name, "set": SCENARIOS[name], "seed": SEED, "legacy_exp": legacy}
        for name in names
    ]
    done = subprocess.run(
        [sys.executable, str(PROBE), json.dumps(specs)],
        env=_environment(limited=limited, processes=processes),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300 * len(specs),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(zip(names, json.loads(done.stdout), strict=True))


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str], Any]:
    """Every scenario under three set-ups, two children at a time: one child per set-up
    runs every scenario (one interpreter's start-up, not seven). The set-ups compared
    with "full" run the scenarios in the reverse order, so that anything one run left
    behind in its process for the next would show as a difference too."""
    setups = {
        "full": {"limited": False, "processes": 1, "order": 1},
        "limited": {"limited": True, "processes": 1, "order": -1},
        "two-workers": {"limited": False, "processes": 2, "order": -1},
    }

    def job(setup: dict[str, Any]) -> dict[str, Any]:
        names = sorted(SCENARIOS)[:: setup["order"]]
        return probe_all(names, limited=setup["limited"], processes=setup["processes"])

    with ThreadPoolExecutor(max_workers=2) as pool:
        outs = dict(zip(setups, pool.map(job, setups.values()), strict=True))
    return {(name, setup): outs[setup][name] for name in SCENARIOS for setup in setups}


def _assert_same_run(a: Any, b: Any, what: str) -> None:
    assert a["traces"] and a["traces"] == b["traces"], f"{what}: the message traces differ"
    ra, rb = without_timing(a["result"]), without_timing(b["result"])
    for key in EXACT:
        assert ra.get(key) == rb.get(key), f"{what}: result field {key!r} differs"
    members = ("coalition", "members")
    assert ra.get(members[0], {}).get(members[1]) == rb.get(members[0], {}).get(members[1])
    differences = compare(ra, rb)
    assert not differences, f"{what}:\n{format_differences(differences)}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_run_is_the_same_with_and_without_the_cpus_vector_instructions(runs, name):
    _assert_same_run(runs[(name, "full")], runs[(name, "limited")], f"{name}, dispatch limited")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_run_is_the_same_on_one_or_two_worker_processes(runs, name):
    _assert_same_run(runs[(name, "full")], runs[(name, "two-workers")], f"{name}, 2 workers")


def test_the_probe_catches_a_machine_dependent_event_time(tmp_path):
    """The check has power: with NumPy's own ``exp`` back in the latency model (the path
    that made SecAgg's golden times differ between an AVX-512 machine and others), the
    traces differ between full and limited dispatch. Only a CPU on which NumPy's ``exp``
    itself changes with dispatch can show it."""
    x = np.random.default_rng(0).standard_normal(4096)
    script = (
        "import sys, numpy as np; sys.stdout.write(np.exp(np.load(sys.argv[1])).tobytes().hex())"
    )
    path = tmp_path / "x.npy"
    np.save(path, x)
    outs = under_both_dispatches(script, str(path))
    if outs[0] == outs[1]:
        pytest.skip(
            f"NumPy's exp gives the same bits with and without {dispatched_features() or 'dispatch'} "
            "on this CPU, so no machine-dependent path can show here"
        )
    a = probe("secagg_plus", legacy=True)
    b = probe("secagg_plus", limited=True, legacy=True)
    assert a["traces"] != b["traces"]
