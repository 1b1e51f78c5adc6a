"""Mutation testing of the privacy- and correctness-critical modules with mutmut.

For each module below, mutmut makes every one-token mutant it can (operators, constants,
comparisons, arguments, return values …) and runs, per mutant, only the tests of that
module's list that call the mutated function. A mutant is *killed* when a test fails;
one that survives is either a missing test or an equivalent mutant (a change no caller
can observe). The score is killed / (killed + survived + no tests + timeouts).

    pip install -e '.[dev]'                   # mutmut is in the dev extra
    python benchmarks/mutation.py             # every module; prints the score table
    python benchmarks/mutation.py --module privsim/sim/ledger.py --survivors
    python benchmarks/mutation.py --list      # the modules and the tests each runs

Each module runs in its own scratch copy of ``privsim/`` and ``tests/`` (under
``--workdir``, default a temporary directory), never in the working tree: mutmut writes
its mutated copy under ``mutants/`` next to the configuration it reads, and nothing it
does can touch the sources. ``--survivors`` prints the diff of every mutant that was not
killed (``mutmut show``). Expect several minutes per module on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: module -> the tests that exercise it (kept short: each mutant runs the ones that reach it).
MODULES: dict[str, tuple[str, ...]] = {
    "privsim/kit/securesum/maths.py": (
        "tests/protocols/test_dca_maths.py",
        "tests/kit/test_securesum_maths.py",
    ),
    "privsim/sim/ledger.py": (
        "tests/sim/test_ledger.py",
        "tests/sim/test_ledger_records.py",
        "tests/sim/test_composition.py",
    ),
    "privsim/sim/calibration.py": (
        "tests/sim/test_calibration.py",
        "tests/sim/test_calibration_edges.py",
        "tests/sim/test_ledger.py",
        "tests/sim/test_composition.py",
    ),
    "privsim/sim/channels.py": (
        "tests/sim/test_channels.py",
        "tests/sim/test_channels_binding.py",
        "tests/sim/test_channels_state.py",
    ),
    "privsim/studies/store.py": (
        "tests/studies/test_store_schema.py",
        "tests/studies/test_store_safety.py",
    ),
    "privsim/protocols/blr/maths.py": (
        "tests/protocols/test_blr_maths.py",
        "tests/protocols/test_blr_regression.py",
    ),
    "privsim/protocols/bcd/maths.py": (
        "tests/protocols/test_bcd_maths.py",
        "tests/protocols/test_bcd.py",
    ),
    "privsim/protocols/race/private.py": (
        "tests/protocols/test_race.py",
        "tests/protocols/test_race_applications.py",
    ),
}

#: mutmut's exit codes per mutant, grouped as this table counts them.
KILLED = {1, 3, 37}
SURVIVED = {0}
NO_TESTS = {5, 33}
TIMEOUT = {36, -24, 24, 152, 255}


@dataclass
class Score:
    module: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    no_tests: int = 0
    timeout: int = 0
    other: int = 0
    seconds: float = 0.0
    error: str = ""

    @property
    def score(self) -> float:
        tried = self.killed + self.survived + self.no_tests + self.timeout
        return self.killed / tried if tried else float("nan")


def _pyproject(module: str, tests: tuple[str, ...]) -> str:
    """The scratch copy's pyproject: the repository's pytest options and mutmut's table."""

    def toml_list(items: tuple[str, ...] | list[str]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    return "\n".join(
        [
            "[tool.pytest.ini_options]",
            'testpaths = ["tests"]',
            "addopts = \"-m 'not slow'\"",
            'markers = ["slow: long runs"]',
            "",
            "[tool.mutmut]",
            'source_paths = ["privsim"]',
            f"only_mutate = {toml_list([module])}",
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
            'pytest_add_cli_args = ["-x", "-q"]',
            "use_git_change_detection = false",
            "",
        ]
    )


def _scratch(base: Path, module: str, tests: tuple[str, ...]) -> Path:
    work = base / module.removesuffix(".py").replace("/", ".")
    if work.exists():
        shutil.rmtree(work)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "privsim", work / "privsim", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    (work / "pyproject.toml").write_text(_pyproject(module, tests))
    return work


def _count(work: Path, module: str, score: Score) -> list[str]:
    """Tally the module's mutants from mutmut's meta file; return the names not killed."""
    meta = work / "mutants" / (module + ".meta")
    data = json.loads(meta.read_text())
    not_killed = []
    for name, code in sorted(data["exit_code_by_key"].items()):
        score.mutants += 1
        if code in KILLED:
            score.killed += 1
            continue
        if code in SURVIVED:
            score.survived += 1
        elif code in NO_TESTS:
            score.no_tests += 1
        elif code in TIMEOUT:
            score.timeout += 1
        else:
            score.other += 1
        not_killed.append(name)
    return not_killed


def run_module(
    base: Path, module: str, tests: tuple[str, ...], jobs: int, survivors: bool, log: Path
) -> Score:
    score = Score(module)
    present = tuple(t for t in tests if (ROOT / t).exists())
    if not present:
        score.error = "none of its tests exist"
        return score
    work = _scratch(base, module, present)
    # mutmut puts its mutated copy first on sys.path itself (a PYTHONPATH naming it breaks
    # its test collection); keep the module's tests in-process, since a subprocess would
    # import the installed package, not the mutants.
    env = dict(os.environ)
    env.setdefault("PRIVSIM_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    mutmut = [shutil.which("mutmut", path=str(Path(sys.executable).parent)) or "mutmut"]
    start = time.perf_counter()
    with log.open("a") as out:
        out.write(f"\n===== {module}: {' '.join(present)}\n")
        out.flush()
        done = subprocess.run(
            [*mutmut, "run", "--max-children", str(jobs)],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    score.seconds = time.perf_counter() - start
    try:
        not_killed = _count(work, module, score)
    except (OSError, ValueError, KeyError) as exc:
        score.error = f"mutmut exited {done.returncode} ({exc}); see {log}"
        return score
    if done.returncode != 0:
        score.error = f"mutmut exited {done.returncode}; see {log}"
    if survivors and not_killed:
        print(f"\n--- {module}: {len(not_killed)} not killed", flush=True)
        for name in not_killed:
            shown = subprocess.run(
                [*mutmut, "show", name], cwd=work, env=env, capture_output=True, text=True
            )
            print(shown.stdout.rstrip(), flush=True)
    return score


def table(scores: list[Score]) -> str:
    head = f"{'module':44} {'mutants':>7} {'killed':>6} {'survived':>8} {'no tests':>8} {'timeout':>7} {'score':>6}"
    lines = [head, "-" * len(head)]
    total = Score("total")
    for s in scores:
        lines.append(
            f"{s.module:44} {s.mutants:7d} {s.killed:6d} {s.survived:8d} {s.no_tests:8d} "
            f"{s.timeout:7d} {s.score:6.1%}" + (f"  ({s.error})" if s.error else "")
        )
        for field in ("mutants", "killed", "survived", "no_tests", "timeout"):
            setattr(total, field, getattr(total, field) + getattr(s, field))
    lines.append("-" * len(head))
    lines.append(
        f"{'total':44} {total.mutants:7d} {total.killed:6d} {total.survived:8d} "
        f"{total.no_tests:8d} {total.timeout:7d} {total.score:6.1%}"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--module", action="append", choices=sorted(MODULES), help="only these (repeatable)"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants at once")
    parser.add_argument("--workdir", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("--survivors", action="store_true", help="show every mutant not killed")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    parser.add_argument("--json", type=Path, help="also write the scores as JSON here")
    args = parser.parse_args()

    if args.list:
        for module, tests in MODULES.items():
            print(module)
            for t in tests:
                print(f"    {t}" + ("" if (ROOT / t).exists() else "  (missing)"))
        return 0
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("mutmut is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2

    modules = args.module or list(MODULES)
    base = args.workdir or Path(tempfile.mkdtemp(prefix="privsim-mutation-"))
    base.mkdir(parents=True, exist_ok=True)
    log = base / "mutmut.log"
    print(f"scratch copies and mutmut's log under {base}", flush=True)
    scores = []
    for module in modules:
        print(f"{module} ...", flush=True)
        score = run_module(base, module, MODULES[module], args.jobs, args.survivors, log)
        print(
            f"    {score.killed}/{score.mutants} killed in {score.seconds:.0f} s"
            + (f" ({score.error})" if score.error else ""),
            flush=True,
        )
        scores.append(score)
    print()
    print(table(scores))
    if args.json:
        args.json.write_text(
            json.dumps([{**vars(s), "score": s.score} for s in scores], indent=2) + "\n"
        )
    return 0 if all(not s.error for s in scores) else 1


if __name__ == "__main__":
    raise SystemExit(main())
