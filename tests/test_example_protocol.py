"""The protocol tutorial's finished code, ``examples/two_server_mean``: a plug-in package
that CI installs (as tests/test_plugin.py installs its plug-in: pip, into a temporary
folder on ``PYTHONPATH``, unless the package is installed already) and holds to the
contract with ``privsim check-protocol``, as the tutorial does. The tutorial page shows
the package's files exactly, and the package stays small."""

from __future__ import annotations

import json
import os
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.plugin_install import plugin_env, privsim

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "two_server_mean"
PAGE = ROOT / "docs" / "tutorials" / "write-a-protocol.md"
#: The tutorial promises "at most ~150 lines" of Python; this is the ceiling it may reach.
MAX_LINES = 170


@pytest.fixture(scope="module")
def example_env(tmp_path_factory) -> dict[str, str]:
    if any(ep.name == "two_server_mean" for ep in entry_points(group="privsim.protocols")):
        return dict(os.environ)  # installed already (pip install -e examples/two_server_mean)
    return plugin_env(EXAMPLE, tmp_path_factory)


_privsim = privsim


def test_the_tutorial_protocol_keeps_the_contract(example_env, tmp_path):
    checked = _privsim(example_env, "check-protocol", "two_server_mean", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "two_server_mean: 10 passed, 0 failed" in checked.stdout


def test_the_tutorial_scenario_releases_and_two_servers_break_it(example_env, tmp_path):
    scenario = str(EXAMPLE / "two_server_mean.toml")
    ran = _privsim(example_env, "run", scenario, "--out", "out", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "Noise       σ_i" in ran.stdout  # the protocol's own report section
    both = 'threat.colluding_servers=["server-0","server-1"]'
    broken = _privsim(example_env, "run", scenario, "--set", both, "--out", "out", cwd=tmp_path)
    assert broken.returncode == 3 and "NOT met" in broken.stdout
    results = [json.loads(p.read_text()) for p in (tmp_path / "out").glob("*.json")]
    epsilons = sorted(str(r["privacy"]["achieved_epsilon"]) for r in results)
    assert epsilons == ["1.0", "inf"]
    assert all(r["parties"]["included"] == 50 for r in results)


def _sources(*suffixes: str) -> list[Path]:
    """The example's own files (not what building or installing it leaves beside them)."""
    return sorted(
        p
        for p in EXAMPLE.rglob("*")
        if p.is_file()
        and p.suffix in suffixes
        and not any(part == "build" or part.endswith(".egg-info") for part in p.parts)
    )


def test_the_package_stays_small():
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in _sources(".py"))
    assert lines <= MAX_LINES, f"{lines} lines of Python in {EXAMPLE}: the tutorial says ~150"


def _normal(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def test_the_tutorial_shows_every_file_as_it_is():
    """Code blocks titled with a file's path show that file: the whole of it, in order
    (a file shown in several blocks, in as many consecutive parts; blank lines between
    parts aside)."""
    shown: dict[str, list[str]] = {}
    for token in MarkdownIt("commonmark").parse(PAGE.read_text(encoding="utf-8")):
        title = re.search(r'title="([^"]+)"', token.info) if token.type == "fence" else None
        if title:
            shown.setdefault(title.group(1), []).append(token.content)
    files = {p.relative_to(ROOT).as_posix() for p in _sources(".py", ".toml")}
    assert set(shown) == files, f"files not shown: {files - set(shown)}"
    for path, parts in shown.items():
        page = _normal("\n\n".join(part.strip("\n") for part in parts))
        assert page == _normal((ROOT / path).read_text(encoding="utf-8")), (
            f"{PAGE.name} shows {path} differently from the file"
        )
