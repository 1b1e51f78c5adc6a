"""The ``privsim`` command line."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privsim.version import __version__

if TYPE_CHECKING:
    from privsim.sim.ledger import PrivacyLedger

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    from privsim.analysis.report import format_report
    from privsim.api import run
    from privsim.outputs import check_output_folder
    from privsim.overrides import scenario_hash
    from privsim.progress import working
    from privsim.results import write_json_atomic

    scenario = _scenario_with_settings(args)
    if args.encryption:
        scenario = scenario.replace({"network.encryption": args.encryption})
    check_output_folder(args.out, "--out directory")  # before the run, not after it
    seed = scenario.seed if args.seed is None else args.seed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with working(
            f"running {scenario.name} ({scenario.protocol}, seed {seed})",
            stream=sys.stderr,
            show=args.progress,
        ):
            try:
                result = run(scenario, seed, **_cluster_of(args)).to_dict()
            except KeyboardInterrupt:
                raise KeyboardInterrupt("no result file was written") from None
    for w in caught:
        print(f"privsim: warning: {w.message}", file=sys.stderr)
    # Written before anything is printed: a closed pipe (privsim run | head) loses no result.
    name = f"{scenario.name}-{scenario_hash(scenario)}-seed{seed}.json"
    out = write_json_atomic(name, result, within=args.out)
    print(format_report(result))
    print(f"Result file {out}")
    verdict = _privacy_verdict(result, allowed=args.allow_overspend or _allows(scenario))
    return _abort_verdict(result, allowed=args.allow_abort) or verdict


def _cluster_of(args: argparse.Namespace) -> dict[str, Any]:
    """``run``'s Dask cluster options as :func:`privsim.api.run` takes them (none without
    --scheduler; the TLS options without it are refused as for a sweep)."""
    from privsim.studies.executors import dask_security

    security = dask_security(args.scheduler, args.tls_ca_file, args.tls_cert, args.tls_key)
    if args.scheduler is None:
        return {}
    return {"scheduler": args.scheduler, "security": security, "workers": args.workers}


def _scenario_with_settings(args: argparse.Namespace) -> Any:
    """The scenario of ``args.scenario`` — a file, or a built-in scenario's name
    (:func:`~privsim.scenarios.scenario_path`); the quickstart when omitted — with
    ``--set``."""
    from privsim.overrides import apply_settings, parse_settings
    from privsim.scenarios import builtin_scenario_path, load_scenario, scenario_path

    path = scenario_path(args.scenario) if args.scenario else builtin_scenario_path("quickstart")
    settings = parse_settings(args.set or [])
    if not settings:
        return load_scenario(path)
    # The work limits apply to the scenario as run: the file's own size is checked only
    # after --set (which may make it smaller), when apply_settings validates the result.
    with _limits_lifted():
        scenario = load_scenario(path)
    return apply_settings(scenario, settings)


@contextlib.contextmanager
def _limits_lifted() -> Iterator[None]:
    """Within the block, no memory, time or size limit refuses a scenario."""
    import os

    from privsim.limits import allowing_large
    from privsim.scenarios.checks import MAX_MEMORY_ENV

    before = os.environ.get(MAX_MEMORY_ENV)
    os.environ[MAX_MEMORY_ENV] = str(1 << 62)
    try:
        with allowing_large():
            yield
    finally:
        if before is None:
            os.environ.pop(MAX_MEMORY_ENV, None)
        else:
            os.environ[MAX_MEMORY_ENV] = before


#: Exit status of `check` and `replay` when a result differs from the stored one.
EXIT_DIFFERS = 1
#: Exit status of invalid input, or of a mechanism refused over its budget.
EXIT_INVALID = 2
#: Exit status of `privsim run` when the run aborted (nothing released).
EXIT_ABORTED = 4
#: Exit status after Ctrl-C (SIGINT): 128 + 2, as a shell reports it.
EXIT_INTERRUPTED = 130
#: Exit status when the reader of stdout went away (privsim run | head): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141

EXIT_CODES = """exit status:
  0    done (a released run, a matching check, every contract check passed)
  1    check / replay: the result differs from the stored one (each field is printed);
       check-protocol: a contract check failed (each failing check is named)
  2    invalid input, or a mechanism refused over its budget (privacy.on_overspend)
  3    run: the achieved privacy guarantee is not met (see --allow-overspend)
  4    run: the run aborted, nothing released (see --allow-abort)
  130  interrupted (Ctrl-C); a sweep keeps every finished row and resumes
  141  the reader of stdout went away (privsim run | head); the result file is written"""


def _abort_verdict(result: dict[str, Any], *, allowed: bool) -> int:
    """Exit status 4 when the run aborted (nothing released), unless allowed
    (``--allow-abort``, for studies of aborts)."""
    if result.get("status") != "aborted":
        return 0
    abort = result.get("abort") or {}
    print(
        f"privsim: the run aborted ({abort.get('reason', 'no reason given')}: "
        f"{abort.get('detail', '')}); nothing was released. "
        + (
            "Allowed by --allow-abort."
            if allowed
            else f"Exit status {EXIT_ABORTED}; pass --allow-abort to accept it, e.g. in a study of aborts."
        ),
        file=sys.stderr,
    )
    return 0 if allowed else EXIT_ABORTED


#: Exit status of `privsim run` when the achieved privacy guarantee is not met.
EXIT_NOT_MET = 3


def _allows(scenario: Any) -> bool:
    return bool(scenario.privacy.on_overspend == "allow")


def _privacy_verdict(result: dict[str, Any], *, allowed: bool) -> int:
    """Loud when the guarantee is not met: a warning on stderr, and exit status 3 unless
    the user allowed it (``--allow-overspend`` or ``privacy.on_overspend = "allow"``)."""
    privacy = result["privacy"]
    if privacy.get("non_private"):
        print(
            "privsim: note: this run is a labelled non-private baseline (no privacy guarantee)",
            file=sys.stderr,
        )
        return 0
    if privacy["guarantee_met"]:
        return 0
    from privsim.analysis.report import format_epsilon, format_number

    # ε = ∞ (every compute node colluding) is the text "inf" in a result: JSON has no infinity
    print(
        f"privsim: warning: the privacy guarantee is NOT met: achieved epsilon = "
        f"{format_epsilon(privacy['achieved_epsilon'])} at delta = "
        f"{format_number(privacy['delta'], 'g')} against the target epsilon = "
        f"{format_number(privacy['target_epsilon'], 'g')} ({privacy.get('notion', '')}). "
        + (
            "Allowed by the scenario or --allow-overspend."
            if allowed
            else "Exit status 3; pass --allow-overspend (or set privacy.on_overspend = "
            '"allow") to accept it, e.g. for a study of attacks.'
        ),
        file=sys.stderr,
    )
    return 0 if allowed else EXIT_NOT_MET


def _cmd_scenario(args: argparse.Namespace) -> int:
    from privsim import registry
    from privsim.scenarios import builtin_scenario_path, builtin_scenarios

    if not args.name:
        print("\n".join(builtin_scenarios()))
        return 0
    if args.name not in builtin_scenarios() and args.name in registry.names():
        # a plug-in protocol's example scenario, as TOML to copy and edit
        import tomli_w

        example = registry.get(args.name).example
        sys.stdout.write(f"# The example scenario of protocol {args.name!r}\n")
        sys.stdout.write(tomli_w.dumps(dict(example)))
        return 0
    from privsim.inputs import read_input_text

    sys.stdout.write(read_input_text(builtin_scenario_path(args.name), "built-in scenario"))
    return 0


def _cmd_protocols(args: argparse.Namespace) -> int:
    from privsim.api import list_protocols

    for name, summary in list_protocols().items():
        print(f"{name:<20} {summary}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from privsim import registry
    from privsim.api import validate
    from privsim.scenarios.checks import format_bytes, format_seconds

    # Everything `run` checks before it starts: fields, party ids, memory, the
    # protocol's preflight (a data set's files and columns) and its privacy budget,
    # planned as the run charges it (refused with run's message and exit status 2).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scenario = validate(_scenario_with_settings(args))
    for w in caught:
        print(f"privsim: warning: {w.message}", file=sys.stderr)
    changed = f" with {len(args.set)} --set" if args.set else ""
    spec = registry.get(scenario.protocol)
    if spec.plan is None:
        print(
            f"{args.scenario}{changed}: scenario '{scenario.name}' ({scenario.protocol}) passes "
            f"every check but its privacy budget, checked at run time: protocol "
            f"{scenario.protocol!r} declares no plan of its ledger"
        )
    else:
        print(f"{args.scenario}{changed}: valid scenario '{scenario.name}' ({scenario.protocol})")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for line in _plan_lines(spec.plan(scenario)):
                print(line)
    footprint = spec.footprint
    if footprint is not None:
        estimate = footprint(scenario)
        if isinstance(estimate, tuple):
            seconds = float(getattr(estimate, "seconds", 0.0))
            print(
                f"  estimated peak memory {format_bytes(estimate[0])}"
                + (f", wall time {format_seconds(seconds)} on one core" if seconds else "")
                + f" (order of magnitude; {estimate[2] if len(estimate) > 2 else ''})"
            )
    return 0


def _plan_lines(ledger: PrivacyLedger) -> list[str]:
    """The planned ledger in a few lines: runs of consecutive events with the same
    planned event and trust, and the ε they compose to if every release goes as
    planned."""
    g = ledger.guarantee()
    runs: list[tuple[str, str, str, int]] = []  # first label, event, conditions, count
    for e in g.events:
        holds = f"holds while {e.trust or 'nobody colludes'}"
        if e.amplification:
            holds += f"; {e.amplification}"
        if runs and runs[-1][1:3] == (e.planned, holds):
            first, planned, _, count = runs[-1]
            runs[-1] = (first, planned, holds, count + 1)
        else:
            runs.append((e.label, e.planned, holds, 1))
    lines = [
        f"  plan: {len(g.events)} event(s), ε = {g.epsilon:.4g} at δ = {g.delta:g} if every "
        f"release goes as planned (target ε = {g.target_epsilon:g}, δ = {g.target_delta:g})"
    ]
    for first, planned, holds, count in runs:
        times = f" ×{count} (from {first})" if count > 1 else f" ({first})"
        lines.append(f"    {planned}{times}; {holds}")
    return lines


def _add_max_memory(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="refuse a run whose estimated memory exceeds SIZE, e.g. 32GiB "
        "(default: $PRIVSIM_MAX_MEMORY, else 8GiB)",
    )
    parser.add_argument(
        "--max-time",
        metavar="DURATION",
        help="refuse a run whose estimated wall time exceeds DURATION, e.g. 6h "
        "(default: $PRIVSIM_MAX_SECONDS, else a day)",
    )


def _add_allow_large(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-large",
        action="store_true",
        help="go ahead with work past privsim's limits (longer lists, more grid cells or "
        "tasks, a longer estimated time); memory stays limited (--max-memory)",
    )


def _apply_max_memory(args: argparse.Namespace) -> None:
    """``--max-memory``, ``--max-time`` and ``--allow-large`` become $PRIVSIM_MAX_MEMORY,
    $PRIVSIM_MAX_SECONDS and $PRIVSIM_ALLOW_LARGE, which every scenario validation reads
    (and the sweep's worker processes inherit); ``run --workers`` becomes
    $PRIVSIM_ROUND_PROCESSES, checked against this machine's cores."""
    import os

    from privsim.limits import ALLOW_LARGE_ENV
    from privsim.scenarios.checks import MAX_MEMORY_ENV, MAX_TIME_ENV, parse_bytes, parse_seconds

    if getattr(args, "allow_large", False):
        os.environ[ALLOW_LARGE_ENV] = "1"
    if args.command == "run" and args.workers is not None and args.scheduler is None:
        from privsim.sim.workers import ENV as ROUND_PROCESSES
        from privsim.studies.executors import check_workers

        os.environ[ROUND_PROCESSES] = str(
            check_workers(args.workers, default="for the usable cores, at most 4")
        )

    value = getattr(args, "max_memory", None)
    if value:
        os.environ[MAX_MEMORY_ENV] = str(parse_bytes(value))
    limit = getattr(args, "max_time", None)
    if limit:
        os.environ[MAX_TIME_ENV] = str(parse_seconds(limit))


def _add_cluster(parser: argparse.ArgumentParser, what: str) -> None:
    """--scheduler and the TLS options of a Dask cluster."""
    parser.add_argument(
        "--scheduler",
        help=f"{what}: a Dask scheduler address (tls://HOST:PORT with the --tls-* options; a "
        "scheduler is a trust boundary), or 'local' for a LocalCluster on this machine",
    )
    parser.add_argument(
        "--tls-ca-file", help="PEM file of the CA that signed the cluster's certificates"
    )
    parser.add_argument("--tls-cert", help="PEM file of this client's certificate (mutual TLS)")
    parser.add_argument("--tls-key", help="PEM file of this client's private key")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from privsim.studies.executors import check_workers, dask_security
    from privsim.studies.study import load_study
    from privsim.studies.sweep import sweep

    if args.scheduler in (None, "local"):  # a remote cluster has its own workers
        check_workers(args.workers)  # before the study's cells are validated
    security = dask_security(args.scheduler, args.tls_ca_file, args.tls_cert, args.tls_key)
    study = _study_with_settings(load_study(args.study), args.set or [], args.replications)
    summary = sweep(
        study,
        args.out,
        scheduler=args.scheduler,
        workers=args.workers,
        security=security,
        progress=sys.stderr,
        show_progress=args.progress,
    )
    print(
        f"{summary.total} rows in {args.out}: {summary.already_done} already there, {summary.ran} run "
        f"({summary.errors} errors) in {summary.seconds:.1f} s. Next: privsim report {args.out}"
    )
    if summary.over_budget:
        print(
            f"privsim: warning: {summary.over_budget} released rows do not meet their privacy "
            "guarantee (column privacy.guarantee_met); the report marks their cells",
            file=sys.stderr,
        )
    return 0


def _study_with_settings(study: Any, options: list[str], replications: int | None) -> Any:
    """``study`` with ``--set`` applied to its base scenario and ``--replications``."""
    from privsim.overrides import SetError, apply_settings, parse_settings
    from privsim.scenarios import scenario_from_dict
    from privsim.studies.study import study_from_dict

    settings = parse_settings(options)
    if not settings and replications is None:
        return study
    varied = set(study.grid) | {k for case in study.cases for k in case}
    for path in settings:
        clash = next(
            (
                k
                for k in varied
                if k == path or k.startswith(path + ".") or path.startswith(k + ".")
            ),
            None,
        )
        if clash is not None:
            raise SetError(
                f"{path}=...",
                path,
                f"the study varies '{clash}' in its grid or cases, so the "
                "base value would never be used",
                "change the study's grid, or drop this --set",
            )
    apply_settings(scenario_from_dict(study.base), settings)  # errors name the option
    data = study.to_toml_dict()
    data["overrides"] = settings
    if replications is not None:
        data["replications"] = replications
    return study_from_dict(data, source=study.source)


def _cmd_report(args: argparse.Namespace) -> int:
    from privsim.studies.report import write_report

    if args.html:  # first: the page needs no PNG
        from privsim.analysis.html import write_html
        from privsim.studies.store import load
        from privsim.studies.sweep import STUDY_FILE, read_study_file

        # guarded: a FIFO, a list, a deep nesting in study.json is a named error
        study = read_study_file(Path(args.results) / STUDY_FILE, missing_ok=True)
        page = write_html(
            load(args.results),
            "report/index.html",  # a report/ linked out of the results directory is refused
            within=args.results,
            study=study,
            results_dir=args.results,
        )
        print(f"wrote {page} (one self-contained page: open it in a browser)")
    md, figures = write_report(args.results)
    print(f"wrote {md} and {len(figures)} figures")
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from privsim.audit import audit
    from privsim.outputs import check_output_folder
    from privsim.results import write_json_atomic
    from privsim.scenarios import load_scenario, scenario_path
    from privsim.studies.executors import check_workers

    if args.scheduler in (None, "local"):  # a remote cluster has its own workers
        check_workers(args.workers, default="to run the trials in this process")
    if args.trials < 4:
        raise ValueError(
            f"--trials {args.trials}: an audit needs at least 4 trials per side; "
            "use --trials 100000 or more for a bound that can approach the claim"
        )
    scenario = load_scenario(scenario_path(args.scenario))
    check_output_folder(args.out, "--out directory")  # before the trials, not after them
    seed = scenario.seed if args.seed is None else args.seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration warnings belong to `privsim run`
        result = audit(
            scenario,
            args.trials,
            seed=seed,
            confidence=args.confidence,
            workers=args.workers,
            scheduler=args.scheduler,
            full_runs=args.full_runs,
            release=args.release,
        )
    t = result.test
    what = scenario.protocol + (f", release {args.release}" if args.release else "")
    print(f"audit of {scenario.name} ({what}), {args.trials} trials on each of D, D′")
    print(f"  neighbours: {result.neighbours}")
    print(f"  statistic:  {result.statistic}")
    print(f"  claimed epsilon  {result.claimed_epsilon:.4g} at delta {result.claimed_delta:g}")
    print(
        f"  audited epsilon >= {result.lower_bound:.4g} with confidence {result.confidence:g} "
        f"(FPR {t.fpr:.3g}, FNR {t.fnr:.3g} on {t.negatives} + {t.positives} trials)"
    )
    verdict = "EXCEEDS the claim" if result.exceeds_claim else "is below the claim"
    print(f"  the lower bound {verdict} ({result.seconds:.1f} s)")
    ceiling = _audit_ceiling(t.negatives, t.positives, result.claimed_delta, result.confidence)
    if ceiling < result.claimed_epsilon:
        needed = args.trials
        while (
            needed < 10**9
            and _audit_ceiling(needed // 2, needed // 2, result.claimed_delta, result.confidence)
            < result.claimed_epsilon
        ):
            needed *= 2
        print(
            f"privsim: warning: {args.trials} trials cannot resolve the claim: even a perfect "
            f"distinguisher would show at most epsilon {ceiling:.3g} < {result.claimed_epsilon:.3g}; "
            f"use --trials {needed} or more",
            file=sys.stderr,
        )
    release = f"-{args.release}" if args.release else ""
    name = f"audit-{scenario.name}{release}-seed{seed}-trials{args.trials}.json"
    out = write_json_atomic(name, {"rows": [result.row()]}, within=args.out)
    print(f"Rows {out}")
    return EXIT_NOT_MET if result.exceeds_claim else 0


def _audit_ceiling(negatives: int, positives: int, delta: float, confidence: float) -> float:
    """The largest lower bound an audit with these counted trials can give: no false
    positive and no false negative."""
    from privsim.audit.bounds import epsilon_lower_bound

    return epsilon_lower_bound(0, negatives, 0, positives, delta, confidence)


def _cmd_replay(args: argparse.Namespace) -> int:
    import json

    from privsim.studies.store import stored_row
    from privsim.studies.sweep import load_study_dir
    from privsim.studies.worker import run_task, without_timing

    study = load_study_dir(args.out)
    task = next((t for t in study.tasks() if t.row_id == args.row_id), None)
    if task is None:
        raise ValueError(f"no row {args.row_id!r} in the study at {args.out}")
    row = run_task(study.base, task)
    print(json.dumps(row, indent=2, sort_keys=True, default=str))
    stored = stored_row(args.out, args.row_id)  # read-only
    if stored is not None:
        from privsim.golden import Tolerance, compare, format_differences

        # Exact: the same row at the same seed must be the same, bit for bit.
        differences = compare(without_timing(stored), without_timing(row), default=Tolerance())
        if not differences:
            print("replay matches the stored row (timings aside)")
            return 0
        print(
            f"replay DIFFERS FROM the stored row (timings aside) in {len(differences)} "
            f"field{'s' * (len(differences) != 1)}:\n{format_differences(differences)}"
        )
        return EXIT_DIFFERS
    return 0


def _pattern_values(options: list[str], flag: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for option in options:
        pattern, sep, text = option.rpartition("=")
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not sep or not pattern or not value >= 0:
            raise ValueError(
                f"{flag} {option!r}: expected PATTERN=NUMBER with a number >= 0, e.g. "
                f"{flag} 'accuracy.*=0.01'"
            )
        out[pattern] = value
    return out


#: Exit status of `check-protocol` when a contract check failed.
EXIT_CHECKS_FAILED = 1


def _cmd_check_protocol(args: argparse.Namespace) -> int:
    from privsim import registry
    from privsim.testing import CheckResult, check_protocol

    spec = registry.get(args.name)  # an unknown name: exit 2, naming the registered ones

    def show(result: CheckResult) -> None:
        print(result, flush=True)

    print(f"privsim check-protocol {spec.name}: the contract on its example scenario")
    results = check_protocol(spec, report=show)
    failed = [r.name for r in results if r.status == "fail"]
    skipped = sum(r.status == "skip" for r in results)
    print(
        f"{spec.name}: {len(results) - len(failed) - skipped} passed, {len(failed)} failed, "
        f"{skipped} skipped (not applicable)"
    )
    if failed:
        print(f"privsim: {spec.name} fails the checks {', '.join(failed)}", file=sys.stderr)
        return EXIT_CHECKS_FAILED
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from privsim.golden import UnmatchedPatternWarning, check_golden, parse_tolerances
    from privsim.progress import working

    scenario = _scenario_with_settings(args)
    if args.update:  # the golden file's directory, before the run
        from privsim.outputs import check_output_folder

        check_output_folder(Path(args.golden).parent, "directory of the golden file")
    tolerances = parse_tolerances(
        _pattern_values(args.rel or [], "--rel"), _pattern_values(args.abs or [], "--abs")
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")  # `privsim run` shows the run's; a check compares
        warnings.simplefilter("always", UnmatchedPatternWarning)  # but a pattern's, it shows
        with working(f"checking {scenario.name}", stream=sys.stderr, show=args.progress):
            report = check_golden(
                scenario,
                args.golden,
                seed=args.seed,
                tolerances=tolerances,
                ignore=args.ignore or [],
                update=args.update,
            )
    for w in caught:
        if isinstance(w.message, UnmatchedPatternWarning):
            print(f"privsim: warning: {_unmatched_option(w.message, args)}", file=sys.stderr)
    print(f"{args.scenario}: {report}")
    return 0 if report.ok else EXIT_DIFFERS


def _unmatched_option(warning: Any, args: argparse.Namespace) -> str:
    """A pattern's :class:`~privsim.golden.UnmatchedPatternWarning` named by the options
    that gave it: ``--rel '[=1': the pattern '[' matches no field of the result ...``."""
    pattern = warning.pattern
    if warning.kind == "ignore":
        options = [f"--ignore {pattern!r}"]
    else:
        given = (("--rel", args.rel or []), ("--abs", args.abs or []))
        options = [
            f"{flag} {option!r}"
            for flag, values in given
            for option in values
            if option.rpartition("=")[0] == pattern
        ]
    return f"{' and '.join(options)}: the pattern {pattern!r} {warning.detail}"


#: What a command's scenario argument may be (resolved by `privsim.scenarios.scenario_path`).
SCENARIO_HELP = (
    "scenario TOML file, or the name of a built-in scenario (see 'privsim scenario'); "
    "a file of that name in the current folder wins"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privsim",
        description="Simulate privacy-preserving distributed learning protocols.",
    )
    parser.add_argument("--version", action="version", version=f"privsim {__version__}")
    sub = parser.add_subparsers(dest="command")
    run_p = sub.add_parser(
        "run",
        help="run a scenario (default: the embedded quickstart)",
        description="Run a scenario and write its JSON result, named "
        "NAME-HASH-seedSEED.json (HASH: a short hash of the effective scenario).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run_p.add_argument("scenario", nargs="?", help=f"{SCENARIO_HELP} (omit for the quickstart)")
    run_p.add_argument("--seed", type=int, help="root seed (default: the scenario's seed)")
    run_p.add_argument(
        "--out", default="results", help="directory for the JSON result (default: results)"
    )
    run_p.add_argument(
        "--encryption",
        choices=["aes-gcm", "sized", "none"],
        help="override network.encryption (sized: AES-GCM's wire sizes, nothing encrypted)",
    )
    run_p.add_argument(
        "--allow-overspend",
        action="store_true",
        help="exit 0 even when the achieved privacy guarantee is not met (default: exit 3)",
    )
    run_p.add_argument(
        "--allow-abort",
        action="store_true",
        help="exit 0 even when the run aborts (default: exit 4), e.g. in a study of aborts",
    )
    run_p.add_argument(
        "--workers",
        type=int,
        help="worker processes of the run's share rounds (default: $PRIVSIM_ROUND_PROCESSES, "
        "else the usable cores, at most 4; at most 4 per core; 1 keeps the run in one process); "
        "with --scheduler local, the LocalCluster's workers",
    )
    _add_cluster(
        run_p,
        "shard each round's bulk work (shares, noise, sealing, partial sums) "
        "over a Dask cluster's workers; the result is the same bytes as a local run",
    )
    _add_set(run_p)
    _add_progress(run_p)
    _add_max_memory(run_p)
    _add_allow_large(run_p)
    run_p.set_defaults(func=_cmd_run)
    sc_p = sub.add_parser("scenario", help="print a built-in scenario's TOML (to copy and edit)")
    sc_p.add_argument("name", nargs="?", help="built-in scenario name; omit to list them")
    sc_p.set_defaults(func=_cmd_scenario)
    sw_p = sub.add_parser(
        "sweep", help="run a study (grid x replications); resumes where it stopped"
    )
    sw_p.add_argument("study", help="study TOML file")
    sw_p.add_argument("--out", required=True, help="results directory (created; reused to resume)")
    _add_cluster(sw_p, "run the study's replications on a Dask cluster, one per task")
    sw_p.add_argument(
        "--workers",
        type=int,
        help="worker processes (default: one per core; at most 4 per core, and no more "
        "start than the study has tasks)",
    )
    sw_p.add_argument(
        "--replications", type=int, metavar="N", help="replications per cell (default: the study's)"
    )
    _add_set(sw_p, "the study's base scenario")
    _add_progress(sw_p)
    _add_max_memory(sw_p)
    _add_allow_large(sw_p)
    sw_p.set_defaults(func=_cmd_sweep)
    rep_p = sub.add_parser("report", help="summary tables (Markdown) and figures (PNG) of a study")
    rep_p.add_argument("results", help="results directory of 'privsim sweep'")
    rep_p.add_argument(
        "--html",
        action="store_true",
        help="also write report/index.html: one self-contained page (sortable tables, "
        "interactive figures, rates per cell, the study file) that opens from disk",
    )
    rep_p.set_defaults(func=_cmd_report)
    rp_p = sub.add_parser("replay", help="run one stored replication again and compare")
    rp_p.add_argument("row_id", help="row id (the 'row_id' column)")
    rp_p.add_argument("--out", default="results", help="results directory holding the row")
    _add_allow_large(rp_p)
    rp_p.set_defaults(func=_cmd_replay)
    pr_p = sub.add_parser("protocols", help="list the registered protocols (built-in and plug-ins)")
    pr_p.set_defaults(func=_cmd_protocols)
    au_p = sub.add_parser(
        "audit",
        help="audit a scenario's privacy claim empirically (a lower bound on epsilon)",
        description="Run the protocol's audit trials on neighbouring inputs D and D′, "
        "test them, and print the claimed epsilon against the audited lower bound "
        "(Clopper-Pearson, Jagielski et al. 2020); the rows go to --out. Exit status 3 "
        "when the lower bound exceeds the claim.",
    )
    au_p.add_argument("scenario", help=SCENARIO_HELP)
    au_p.add_argument("--trials", type=int, required=True, help="trials on each of D and D′")
    au_p.add_argument("--out", default="results", help="directory for the rows (default: results)")
    au_p.add_argument(
        "--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)"
    )
    au_p.add_argument("--seed", type=int, help="audit seed (default: the scenario's seed)")
    au_p.add_argument(
        "--workers",
        type=int,
        help="local worker processes (default: this one; at most 4 per core)",
    )
    au_p.add_argument("--scheduler", help="Dask scheduler address, or 'local'")
    au_p.add_argument(
        "--full-runs",
        action="store_true",
        help="one end-to-end protocol run per trial (slow; the protocols that have them)",
    )
    au_p.add_argument(
        "--release",
        metavar="NAME",
        help="which release to audit, for a protocol that audits several (default: its "
        "first; an unknown name lists them)",
    )
    _add_max_memory(au_p)
    _add_allow_large(au_p)
    au_p.set_defaults(func=_cmd_audit)
    val_p = sub.add_parser("validate", help="check a scenario file and report the first error")
    val_p.add_argument("scenario", help=SCENARIO_HELP)
    _add_set(val_p)
    _add_max_memory(val_p)
    _add_allow_large(val_p)
    val_p.set_defaults(func=_cmd_validate)
    ck_p = sub.add_parser(
        "check",
        help="rerun a scenario and compare it with a golden result (regression tests)",
        description="Rerun a scenario and compare its result with a golden file field by "
        "field, timings aside; print every differing field with both values. Numbers "
        "match within max(abs, rel * max(|a|, |b|)) (default rel 1e-9); PATTERN is a "
        "dotted field path where * matches one segment and ** any number. --update "
        "(re)writes the golden file, keeping its tolerances and adding the ones given.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ck_p.add_argument("scenario", help=SCENARIO_HELP)
    ck_p.add_argument("--golden", required=True, metavar="FILE", help="golden result (JSON)")
    ck_p.add_argument(
        "--update", action="store_true", help="write or rewrite the golden file from this run"
    )
    ck_p.add_argument(
        "--seed", type=int, help="root seed (default: the golden file's, else the scenario's)"
    )
    ck_p.add_argument(
        "--rel",
        action="append",
        metavar="PATTERN=X",
        help="relative tolerance, e.g. 'accuracy.*=0.01'",
    )
    ck_p.add_argument(
        "--abs",
        action="append",
        metavar="PATTERN=X",
        help="absolute tolerance, e.g. 'privacy.achieved_epsilon=1e-6'",
    )
    ck_p.add_argument(
        "--ignore",
        action="append",
        metavar="PATTERN",
        help="leave fields out, e.g. 'communication.duration'",
    )
    _add_set(ck_p)
    _add_progress(ck_p)
    _add_max_memory(ck_p)
    _add_allow_large(ck_p)
    ck_p.set_defaults(func=_cmd_check)
    cp_p = sub.add_parser(
        "check-protocol",
        help="run the protocol contract checks on a registered protocol (e.g. a plug-in)",
        description="Run every contract check (privsim.testing) on the registered protocol\n"
        "NAME, on its spec's example scenario: one line per check, PASS, FAIL with its\n"
        "message, or SKIP with why it does not apply. Exit status 0 only when no check fails.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cp_p.add_argument("name", help="protocol name (see 'privsim protocols')")
    cp_p.set_defaults(func=_cmd_check_protocol)
    return parser


def _add_set(parser: argparse.ArgumentParser, what: str = "the scenario") -> None:
    parser.add_argument(
        "--set",
        action="append",
        metavar="PATH=VALUE",
        help=f"set a field of {what} (repeatable): a dotted path and a TOML value, e.g. "
        "--set privacy.epsilon=2.0 --set 'network.encryption=\"none\"' (a bare word is a string)",
    )


def _add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress on stderr (default: only when stderr is a terminal); "
        "--no-progress silences it",
    )


def main(argv: list[str] | None = None) -> int:
    from privsim.shadowing import check

    shadowed = check(warn=False)  # python -m privsim in the folder holding a clone
    if shadowed:
        print(f"privsim: warning: {shadowed}", file=sys.stderr)
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:  # one line, no traceback; a sweep keeps its rows
        print(f"privsim: interrupted{_interrupted(exc)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
    from privsim.scenarios import ScenarioError
    from privsim.sim.ledger import BudgetExceededError
    from privsim.sim.workers import workers
    from privsim.studies.executors import SchedulerError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    try:
        _apply_max_memory(args)
        workers()  # a bad PRIVSIM_ROUND_PROCESSES is named now, not deep inside a large run
        return int(args.func(args))
    except (
        ScenarioError,
        BudgetExceededError,
        SchedulerError,
        ValueError,
        FileNotFoundError,
    ) as exc:
        print(f"privsim: error: {exc}", file=sys.stderr)
        return EXIT_INVALID


def _interrupted(exc: KeyboardInterrupt) -> str:
    stored, total, out = (getattr(exc, k, None) for k in ("stored", "total", "out"))
    if stored is not None:  # a SweepInterrupted
        return f": {stored} of {total} rows are stored in {out}; run the same command to resume"
    return f"; {exc}" if str(exc) else ""


def _stdout_to_devnull() -> None:
    """After a broken pipe: point stdout at /dev/null, so flushing it at exit raises
    nothing (the reader is gone; what it did not read is dropped)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture)
        pass


if __name__ == "__main__":
    raise SystemExit(main())
