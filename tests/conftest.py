"""Shared helpers: small scenarios built from plain dicts, as a user's TOML would be."""

from __future__ import annotations

import copy
import os
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
