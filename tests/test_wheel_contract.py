"""The contract test as a plug-in author runs it: outside the repository, in a fresh
virtual environment holding privsim installed from its wheel and the test plug-ins of
``tests/plugins/noisy_sum`` (``noisy_sum``, ``noisy_rr``) installed from their source.

The wheel ships ``privsim.testing`` and the data files (built-in scenarios and studies),
and no ``tests/``; ``privsim check-protocol NAME`` passes on each plug-in, and so does a
plug-in's own pytest file written with ``parametrize_with_checks``.

Slow (it builds a wheel and installs privsim's dependencies with pip, from the
configured index): skipped by default and in CI; run it with
``pytest -m slow tests/test_wheel_contract.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "plugins" / "noisy_sum"
PLUGIN_TEST = """\
from privsim.testing import parametrize_with_checks


@parametrize_with_checks("noisy_sum", "noisy_rr")
def test_privsim_contract(protocol, check):
    check(protocol)
"""


class Installed(NamedTuple):
    """A fresh venv with privsim's wheel and the plug-ins installed."""

    bin: Path  # the venv's scripts
    wheel: Path
    work: Path  # an empty folder outside the repository, to run from
    env: dict[str, str]

    def call(self, program: str, *argv: str) -> subprocess.CompletedProcess[str]:
        return _call(self.bin / program, *argv, cwd=self.work, env=self.env)


def _call(*argv: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=1800
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (
        f"{done.args} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheelcheck")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    _ok(_call(sys.executable, "-m", "venv", base / "venv", cwd=base, env=env))
    bin_dir = base / "venv" / ("Scripts" if os.name == "nt" else "bin")
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    # pip builds in the source folder: build copies, so the checkout stays clean
    source = base / "src" / "privsim"
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "privsim", source / "privsim", ignore=ignore)
    shutil.copytree(PLUGIN, base / "src" / "noisy_sum", ignore=ignore)
    pip = (bin_dir / "python", "-m", "pip")
    _ok(_call(*pip, "wheel", "--no-deps", "-q", "-w", base / "dist", source, cwd=base, env=env))
    (wheel,) = (base / "dist").glob("privsim-*.whl")
    _ok(
        _call(*pip, "install", "-q", wheel, base / "src" / "noisy_sum", "pytest", cwd=base, env=env)
    )
    work = base / "work"  # no privsim folder here to shadow the installed one
    work.mkdir()
    return Installed(bin_dir, wheel, work, env)


def test_the_wheel_ships_the_checks_and_the_data_files_and_no_tests(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert {"privsim/testing/__init__.py", "privsim/testing/checks.py"} <= names
    assert not [n for n in names if n.startswith("tests/")]
    for folder in ("scenarios", "studies"):
        data = {f"privsim/{folder}/{p.name}" for p in (ROOT / "privsim" / folder).glob("*.toml")}
        assert data and data <= names, sorted(data - names)
    assert "privsim/py.typed" in names


def test_privsim_comes_from_the_wheel_not_the_checkout(installed):
    where = _ok(installed.call("python", "-c", "import privsim; print(privsim.__file__)"))
    assert str(ROOT) not in where and "site-packages" in where, where
    listed = _ok(installed.call("privsim", "protocols"))
    assert re.search(r"^noisy_sum ", listed, re.M) and re.search(r"^noisy_rr ", listed, re.M)
    assert "[dca]" in _ok(installed.call("privsim", "scenario", "quickstart"))


@pytest.mark.parametrize("name", ["noisy_sum", "noisy_rr"])
def test_check_protocol_passes_on_each_installed_plugin(installed, name):
    out = _ok(installed.call("privsim", "check-protocol", name))
    assert f"{name}: 9 passed, 0 failed, 3 skipped" in out, out
    assert "FAIL" not in out


def test_a_plugins_own_pytest_suite_runs_the_checks(installed):
    (installed.work / "test_plugin_contract.py").write_text(PLUGIN_TEST)
    out = _ok(installed.call("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"))
    assert re.search(r"\b18 passed, 6 skipped\b", out), out
