"""Shared helpers: small scenarios built from plain dicts, as a user's TOML would be."""

from __future__ import annotations

import copy
import os
import re
from typing import Any

import pytest

from privsim.scenarios import Scenario, scenario_from_dict

#: Tests that read the real data sets run only where $PRIVSIM_DATA_DIR names them (CI).
needs_data = pytest.mark.skipif(
    not os.environ.get("PRIVSIM_DATA_DIR"), reason="PRIVSIM_DATA_DIR not set"
)

BASE: dict[str, Any] = {
    "name": "test",
    "seed": 11,
    "baseline": False,
    "population": {"clients": 40, "compute_nodes": 3},
    "data": {"dimension": 8, "clip_norm": 1.0, "mean": 0.2},
    "privacy": {"epsilon": 1.0, "delta": 1e-5},
    "dca": {"tolerated": 5},
    "network": {
        "encryption": "none",
        "link": {"latency": {"model": "constant", "value": 0.01}, "bandwidth": 1e6, "loss": 0.0},
    },
}


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and "model" not in value:
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def make_scenario(**changes: Any) -> Scenario:
    """The small test scenario with nested ``changes`` merged in (tables merge, except
    latency models, which replace; other values replace)."""
    return scenario_from_dict(_merge(BASE, changes))


@pytest.fixture
def scenario_factory():
    return make_scenario


def pytest_terminal_summary(terminalreporter, config):
    """The docs test's count of code blocks executed (tests/test_docs.py)."""
    from tests.docs_blocks import TALLY_KEY

    if TALLY_KEY in config.stash:
        terminalreporter.write_line(config.stash[TALLY_KEY].line())


@pytest.fixture(scope="module")
def dask_scheduler():
    """The address of an in-process Dask cluster of two single-threaded worker processes,
    as ``DaskExecutor("local", 2)`` starts (privsim/studies/executors.py), shared by the
    module's tests: a cluster's start-up (two fresh interpreters importing privsim) is
    paid once."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster:
        yield cluster.scheduler_address


# --- pytest-xdist, when installed and asked for: python -m pytest -n 2 --dist loadfile ---
#
# Each test file runs whole on one worker, in order (its module fixtures are computed
# once), except the docs test: there the unit is a page, whose blocks run in order on one
# worker, sharing their folder and namespace, while other pages run on the other worker.
# (xdist's own --dist loadgroup does not group under pytest 9, whose items ignore the
# node id it rewrites; a scheduler that reads the page from the node id needs no marks.)

_DOCS_PAGE = "docs page "
_DOCS_BLOCK = re.compile(r"^tests/test_docs\.py::test_block\[(?P<page>.+):\d+\]$")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist", "no") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileOrDocsPageScheduling(LoadFileScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            block = _DOCS_BLOCK.match(nodeid)
            if block:
                return f"{_DOCS_PAGE}{block['page']}"
            return super()._split_scope(nodeid)

        def _assign_work_unit(self, node):
            # The files first (those with most tests first, as xdist orders them), the
            # docs pages last: many small units, which keep both workers busy to the end
            # instead of one worker finishing a file of a few long tests alone.
            if not self.ordered:
                self.ordered = True
                units = sorted(
                    self.workqueue.items(),
                    key=lambda unit: (unit[0].startswith(_DOCS_PAGE), -len(unit[1])),
                )
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return FileOrDocsPageScheduling(config, log)


def pytest_sessionfinish(session):
    """On an xdist worker: hand the docs tally to the controller (pytest_testnodedown)."""
    from tests.docs_blocks import TALLY_KEY

    config = session.config
    if hasattr(config, "workeroutput") and TALLY_KEY in config.stash:
        tally = config.stash[TALLY_KEY]
        config.workeroutput["docs_tally"] = {
            "ran": dict(tally.ran),
            "failed": list(tally.failed),
            "slow_ran": sorted(tally.slow_ran),
            "skipped": tally.skipped,
            "slow": tally.slow,
        }


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """On the xdist controller: add each worker's docs tally to the session's."""
    from tests.docs_blocks import TALLY_KEY, Tally

    part = getattr(node, "workeroutput", {}).get("docs_tally")
    if part is None:
        return
    stash = node.config.stash
    if TALLY_KEY not in stash:
        # the counts of blocks marked skip or slow are the collection's, the same on every worker
        stash[TALLY_KEY] = Tally(skipped=part["skipped"], slow=part["slow"])
    tally = stash[TALLY_KEY]
    tally.ran.update(part["ran"])
    tally.failed.extend(part["failed"])
    tally.slow_ran.update(part["slow_ran"])
