"""A protocol from outside the package: ``tests/plugins/noisy_sum`` is a tiny
distribution that registers a protocol through the ``privsim.protocols`` entry-point
group. It is installed (pip, into a temporary directory on ``PYTHONPATH``) and run
through the command line: listing, ``run``, ``sweep`` and ``report``, and the contract
test, which picks it up from the registry like any built-in protocol."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugin_install import plugin_env as install_plugin
from tests.plugin_install import privsim

PLUGIN = Path(__file__).parent / "plugins" / "noisy_sum"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    return install_plugin(PLUGIN, tmp_path_factory)


_privsim = privsim


def test_an_installed_plugin_runs_and_sweeps_through_the_command_line(plugin_env, tmp_path):
    listed = _privsim(plugin_env, "protocols", cwd=tmp_path)
    assert listed.returncode == 0 and "noisy_sum" in listed.stdout

    ran = _privsim(plugin_env, "run", str(PLUGIN / "noisy_sum.toml"), "--out", "out", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "protocol noisy_sum" in ran.stdout and "Privacy" in ran.stdout
    result = json.loads(next((tmp_path / "out").glob("noisy-sum-*-seed5.json")).read_text())
    assert result["status"] == "released" and result["privacy"]["guarantee_met"] is True
    assert result["parties"]["included"] == 25

    study = tmp_path / "study.toml"
    study.write_text(
        f'name = "plugin"\nseed = 1\nreplications = 3\nbase = "{PLUGIN / "noisy_sum.toml"}"\n'
        '[grid]\n"privacy.epsilon" = [1.0, 4.0]\n'
    )
    swept = _privsim(
        plugin_env, "sweep", str(study), "--out", "sweep", "--workers", "1", cwd=tmp_path
    )
    assert swept.returncode == 0, swept.stderr
    assert "6 rows" in swept.stdout and "(0 errors)" in swept.stdout
    reported = _privsim(plugin_env, "report", "sweep", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    summary = (tmp_path / "sweep" / "report" / "summary.md").read_text()
    assert "RMSE of the noisy sum" in summary


def test_the_contract_holds_for_the_plugin(plugin_env, tmp_path):
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            # in one process, whatever -n the outer run was given (pytest-xdist)
            *(["-n", "0"] if importlib.util.find_spec("xdist") else []),
            "-k",
            "noisy_sum",
            str(ROOT / "tests" / "test_contract.py"),
        ],
        capture_output=True,
        text=True,
        env=plugin_env,
        cwd=ROOT,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout[-3000:]
    passed = re.search(r"(\d+) passed", checked.stdout)
    assert passed and int(passed.group(1)) >= 5 and "failed" not in checked.stdout
