"""Helpers of the command-line tests: small scenario, golden and study files, and running
``privsim`` as a real process (for signals and pipes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomli_w

from privsim.cli import main
from privsim.scenarios import scenario_to_toml
from tests.conftest import make_scenario


def scenario_file(directory: Path, name: str = "small.toml", **changes: Any) -> Path:
    """The small test scenario (40 clients) with ``changes``, written as TOML."""
    path = directory / name
    path.write_text(scenario_to_toml(make_scenario(**changes)), encoding="utf-8")
    return path


def golden_files(directory: Path) -> tuple[Path, Path]:
    """The small test scenario and its golden file, written by ``privsim check --update``:
    (scenario path, golden path)."""
    scenario = scenario_file(directory)
    path = directory / "golden.json"
    assert main(["check", str(scenario), "--golden", str(path), "--update"]) == 0
    return scenario, path


def study_file(
    directory: Path,
    replications: int = 2,
    clients: int = 40,
    base_changes: dict[str, Any] | None = None,
    **grid: Any,
) -> Path:
    """A study over the small scenario (with ``base_changes``; a grid over ε unless
    ``grid`` is given)."""
    changes = {"population": {"clients": clients, "compute_nodes": 3}, **(base_changes or {})}
    base = make_scenario(**changes).to_dict()
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


def privsim_process(
    *args: str, cwd: Path, env: dict[str, str] | None = None, **popen: Any
) -> subprocess.Popen[str]:
    """``privsim ARGS`` as a child process (``python -m privsim``), stderr captured;
    ``env`` adds environment variables."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "privsim", *args],
        cwd=cwd,
        env=env,
        text=True,
        stderr=subprocess.PIPE,
        # Ctrl-C as at a terminal, even when the tests themselves run in the background,
        # where a shell starts them with SIGINT ignored (and Python then keeps ignoring it)
        preexec_fn=_default_sigint if sys.platform != "win32" else None,
        **popen,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
