"""The ``privsim`` command line."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from privsim.version import __version__

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    from privsim.analysis.report import format_report
    from privsim.api import run
    from privsim.results import write_json_atomic
    from privsim.scenarios import builtin_scenario_path, load_scenario

    path = Path(args.scenario) if args.scenario else builtin_scenario_path("quickstart")
    scenario = load_scenario(path)
    if args.encryption:
        scenario = scenario.replace({"network.encryption": args.encryption})
    seed = scenario.seed if args.seed is None else args.seed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(scenario, seed).to_dict()
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    print(format_report(result))
    out = write_json_atomic(f"{scenario.name}-seed{seed}.json", result, within=args.out)
    print(f"Result file {out}")
    return _privacy_verdict(result, allowed=args.allow_overspend or _allows(scenario))


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
    print(
        f"privsim: warning: the privacy guarantee is NOT met: achieved epsilon = "
        f"{privacy['achieved_epsilon']} at delta = {privacy['delta']} against the target "
        f"epsilon = {privacy['target_epsilon']} ({privacy.get('notion', '')}). "
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
    sys.stdout.write(builtin_scenario_path(args.name).read_text(encoding="utf-8"))
    return 0


def _cmd_protocols(args: argparse.Namespace) -> int:
    from privsim.api import list_protocols

    for name, summary in list_protocols().items():
        print(f"{name:<20} {summary}")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from privsim import registry
    from privsim.api import validate
    from privsim.scenarios import load_scenario
    from privsim.scenarios.checks import format_bytes, format_seconds

    # Everything `run` checks before it starts: fields, party ids, memory, and the
    # protocol's preflight (a data set's files and columns).
    scenario = validate(load_scenario(args.scenario))
    print(f"{args.scenario}: valid scenario '{scenario.name}' ({scenario.protocol})")
    footprint = registry.get(scenario.protocol).footprint
    if footprint is not None:
        estimate = footprint(scenario)
        if isinstance(estimate, tuple):
            print(
                f"  estimated peak memory {format_bytes(estimate[0])}, wall time "
                f"{format_seconds(float(getattr(estimate, 'seconds', 0.0)))} on one core "
                f"(order of magnitude; {estimate[2] if len(estimate) > 2 else ''})"
            )
    return 0


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


def _apply_max_memory(args: argparse.Namespace) -> None:
    """``--max-memory`` and ``--max-time`` become $PRIVSIM_MAX_MEMORY and
    $PRIVSIM_MAX_SECONDS, which every scenario validation reads (and the sweep's worker
    processes inherit)."""
    import os

    from privsim.scenarios.checks import MAX_MEMORY_ENV, MAX_TIME_ENV, parse_bytes, parse_seconds

    value = getattr(args, "max_memory", None)
    if value:
        os.environ[MAX_MEMORY_ENV] = str(parse_bytes(value))
    limit = getattr(args, "max_time", None)
    if limit:
        os.environ[MAX_TIME_ENV] = str(parse_seconds(limit))


def _cmd_sweep(args: argparse.Namespace) -> int:
    from privsim.studies.executors import dask_security
    from privsim.studies.study import load_study
    from privsim.studies.sweep import sweep

    security = dask_security(args.scheduler, args.tls_ca_file, args.tls_cert, args.tls_key)
    study = load_study(args.study)
    summary = sweep(
        study, args.out, scheduler=args.scheduler, workers=args.workers, security=security
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


def _cmd_report(args: argparse.Namespace) -> int:
    from privsim.studies.report import write_report

    md, figures = write_report(args.results)
    print(f"wrote {md} and {len(figures)} figures")
    return 0


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
        same = json.loads(json.dumps(without_timing(row), sort_keys=True)) == without_timing(stored)
        print(f"replay {'matches' if same else 'DIFFERS FROM'} the stored row (timings aside)")
        return 0 if same else 1
    return 0


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
        description="Run a scenario and write its JSON result. Exit status: 0 done; "
        "2 invalid input or a mechanism refused over budget; 3 the achieved privacy "
        "guarantee is not met (see --allow-overspend).",
    )
    run_p.add_argument("scenario", nargs="?", help="scenario TOML file (omit for the quickstart)")
    run_p.add_argument("--seed", type=int, help="root seed (default: the scenario's seed)")
    run_p.add_argument(
        "--out", default="results", help="directory for the JSON result (default: results)"
    )
    run_p.add_argument(
        "--encryption", choices=["aes-gcm", "none"], help="override network.encryption"
    )
    run_p.add_argument(
        "--allow-overspend",
        action="store_true",
        help="exit 0 even when the achieved privacy guarantee is not met (default: exit 3)",
    )
    _add_max_memory(run_p)
    run_p.set_defaults(func=_cmd_run)
    sc_p = sub.add_parser("scenario", help="print a built-in scenario's TOML (to copy and edit)")
    sc_p.add_argument("name", nargs="?", help="built-in scenario name; omit to list them")
    sc_p.set_defaults(func=_cmd_scenario)
    sw_p = sub.add_parser(
        "sweep", help="run a study (grid x replications); resumes where it stopped"
    )
    sw_p.add_argument("study", help="study TOML file")
    sw_p.add_argument("--out", required=True, help="results directory (created; reused to resume)")
    sw_p.add_argument(
        "--scheduler",
        help="Dask scheduler address (tls://HOST:PORT with the --tls-* options; a scheduler is "
        "a trust boundary), or 'local' for a LocalCluster",
    )
    sw_p.add_argument(
        "--tls-ca-file", help="PEM file of the CA that signed the cluster's certificates"
    )
    sw_p.add_argument("--tls-cert", help="PEM file of this client's certificate (mutual TLS)")
    sw_p.add_argument("--tls-key", help="PEM file of this client's private key")
    sw_p.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    _add_max_memory(sw_p)
    sw_p.set_defaults(func=_cmd_sweep)
    rep_p = sub.add_parser("report", help="summary tables (Markdown) and figures (PNG) of a study")
    rep_p.add_argument("results", help="results directory of 'privsim sweep'")
    rep_p.set_defaults(func=_cmd_report)
    rp_p = sub.add_parser("replay", help="run one stored replication again and compare")
    rp_p.add_argument("row_id", help="row id (the 'row_id' column)")
    rp_p.add_argument("--out", default="results", help="results directory holding the row")
    rp_p.set_defaults(func=_cmd_replay)
    pr_p = sub.add_parser("protocols", help="list the registered protocols (built-in and plug-ins)")
    pr_p.set_defaults(func=_cmd_protocols)
    val_p = sub.add_parser("validate", help="check a scenario file and report the first error")
    val_p.add_argument("scenario")
    _add_max_memory(val_p)
    val_p.set_defaults(func=_cmd_validate)
    return parser


def main(argv: list[str] | None = None) -> int:
    from privsim.scenarios import ScenarioError
    from privsim.sim.ledger import BudgetExceededError
    from privsim.studies.executors import SchedulerError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    try:
        _apply_max_memory(args)
        return int(args.func(args))
    except (
        ScenarioError,
        BudgetExceededError,
        SchedulerError,
        ValueError,
        FileNotFoundError,
    ) as exc:
        print(f"privsim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
