"""Installing a plug-in package for a test, as a user would, without touching the
environment: pip, from a copy of its source, into a temporary folder put on
``PYTHONPATH`` for the commands the test runs; and running ``python -m privsim`` there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def plugin_env(package: Path, factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment in which ``package`` (a folder with a pyproject.toml) is installed."""
    target = factory.mktemp("site")
    source = factory.mktemp("src") / package.name
    shutil.copytree(package, source)  # pip builds in the source tree: keep ours clean
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
    install = subprocess.run([*pip, str(source)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(target), str(ROOT), env.get("PYTHONPATH")) if p
    )
    return env


def privsim(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m privsim ARGS`` in ``env``, from ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "privsim", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )
