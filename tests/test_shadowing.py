"""A folder named ``privsim`` (a clone of the repository) in the folder Python starts in
shadows an editable install of privsim: ``import privsim`` gives an empty namespace
package. Nothing of privsim runs on ``import privsim``, so that AttributeError stays;
the command line and :mod:`privsim.api` detect it, say so and repair the module
(:mod:`privsim.shadowing`). Each case runs in a fresh interpreter, in a folder holding
such a clone, with privsim found as setuptools' editable install finds it: by a finder
consulted after the path (so the case does not depend on how this checkout is
installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: An editable install's finder (setuptools' ``__editable__`` finder, in short): it maps
#: ``privsim`` and its children to this checkout, after Python's own path search.
EDITABLE = f"""
import os, sys
from importlib.machinery import PathFinder

ROOT = {str(ROOT)!r}
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != ROOT]

class Editable:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname == "privsim":
            return PathFinder.find_spec(fullname, [ROOT])
        if fullname.rpartition(".")[0] == "privsim":
            return PathFinder.find_spec(fullname, [os.path.join(ROOT, "privsim")])
        return None

sys.meta_path.append(Editable)
"""


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", EDITABLE + code],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture
def beside_a_clone(tmp_path: Path) -> Path:
    """A folder holding ``privsim/`` as a clone has it: the repository's root (no
    ``__init__.py``) with the package inside, ``privsim/privsim/``."""
    clone = tmp_path / "privsim"
    (clone / "privsim").mkdir(parents=True)
    (clone / "privsim" / "__init__.py").write_text('"""not this one"""\n')
    (clone / "README.md").write_text("a clone\n")
    probe = _python("import privsim; print(privsim.__file__)", tmp_path)
    if probe.returncode != 0 or probe.stdout.strip() != "None":
        pytest.skip(f"privsim is a regular package here, never shadowed: {probe.stdout}")
    return tmp_path


def test_import_privsim_alone_cannot_be_detected(beside_a_clone):
    # nothing of privsim runs: the namespace package is empty, and says nothing
    done = _python("import privsim; privsim.load_scenario", beside_a_clone)
    assert "has no attribute 'load_scenario'" in done.stderr
    assert "ShadowedPackageWarning" not in done.stderr


def test_the_api_detects_it_says_where_and_repairs_the_module(beside_a_clone):
    done = _python(
        "import privsim\n"
        "from privsim.api import run\n"  # any use of the API
        "print(privsim.load_scenario.__module__, privsim.__version__)\n",
        beside_a_clone,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "privsim.scenarios.loader"
    assert "ShadowedPackageWarning" in done.stderr
    assert str(beside_a_clone / "privsim") in done.stderr
    assert "start Python in another folder" in done.stderr
    assert done.stderr.count("ShadowedPackageWarning") == 1


def test_the_command_line_says_so_and_runs(beside_a_clone):
    done = _python(
        "import sys, runpy\n"
        "sys.argv = ['privsim', 'protocols']\n"
        "runpy.run_module('privsim', run_name='__main__')\n",
        beside_a_clone,
    )
    assert done.returncode == 0, done.stderr
    assert "dca" in done.stdout
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("privsim:")]
    assert warning.startswith("privsim: warning: 'privsim' was imported from ")
    assert "editable" in warning and "ShadowedPackageWarning" not in done.stderr


def test_no_warning_without_a_clone(tmp_path):
    done = _python(
        "import privsim, privsim.api\nprint(privsim.__file__)\n"
        "from privsim.shadowing import shadowing_folders\nprint(shadowing_folders())\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    found, folders = done.stdout.split()
    assert Path(found).parts[-2:] == ("privsim", "__init__.py") and folders == "()"
    assert "warning" not in done.stderr.lower()


def test_a_regular_install_is_never_shadowed(beside_a_clone):
    # a regular package anywhere on the path (a wheel in site-packages, or the checkout
    # as a path entry: editable_mode=compat) wins over the namespace folder before it
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.append({str(ROOT)!r}); import privsim; print(privsim.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd=beside_a_clone,
        timeout=300,
    )
    assert done.stdout.strip() != "None", done.stderr
