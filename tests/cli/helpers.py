"""Helpers of the command-line tests: small scenario and study files, and running
``privsim`` as a real process (for signals and pipes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomli_w

from privsim.scenarios import scenario_to_toml
from tests.conftest import make_scenario


def scenario_file(directory: Path, name: str = "small.toml", **changes: Any) -> Path:
    """The small test scenario (40 clients) with ``changes``, written as TOML."""
    path = directory / name
    path.write_text(scenario_to_toml(make_scenario(**changes)), encoding="utf-8")
    return path


def study_file(directory: Path, replications: int = 2, clients: int = 40, **grid: Any) -> Path:
    """A study over the small scenario (a grid over ε unless ``grid`` is given)."""
    base = make_scenario(population={"clients": clients, "compute_nodes": 3}).to_dict()
    data = {
        "name": "cli-study",
        "seed": 5,
        "replications": replications,
        "base": base,
        "grid": grid or {"privacy.epsilon": [0.5, 1.0]},
    }
    path = directory / "study.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def privsim_process(*args: str, cwd: Path, **popen: Any) -> subprocess.Popen[str]:
    """``privsim ARGS`` as a child process (``python -m privsim``), stderr captured."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "privsim", *args],
        cwd=cwd,
        env=env,
        text=True,
        stderr=subprocess.PIPE,
        **popen,
    )
