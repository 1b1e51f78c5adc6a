"""The documentation site builds with warnings as errors (``mkdocs build --strict``, as
CI runs it): a broken link, a missing anchor, a page left out of the nav or a docstring
mkdocstrings cannot render fails here. The build must stay fast enough to run on every
change."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Seconds the build may take (about 6 s on a shared 2-core machine).
BUDGET = 60.0

NEEDED = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name.split(".")[0]) is None]


@pytest.mark.skipif(
    bool(MISSING),
    reason=f"the docs build needs {', '.join(MISSING)}: pip install -e '.[docs]' (or '.[test]')",
)
def test_the_site_builds_strictly_and_quickly(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=10 * BUDGET,
    )
    seconds = time.perf_counter() - started
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{output}"
    assert seconds < BUDGET, f"the docs build took {seconds:.1f} s (budget {BUDGET:.0f} s)"
    landing = (site / "index.html").read_text(encoding="utf-8")
    assert "privsim" in landing
    for page in (
        "reference/scenario-schema/index.html",
        "reference/cli/index.html",
        "reference/python-api/index.html",
        "reference/protocol-api/index.html",
        "changelog/index.html",
    ):
        assert (site / page).is_file(), page
    api = (site / "reference" / "python-api" / "index.html").read_text(encoding="utf-8")
    assert "doc-function" in api or "doc doc-object" in api, "mkdocstrings rendered nothing"
    changelog = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in changelog, "the changelog page does not include CHANGELOG.md"
