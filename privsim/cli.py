"""The ``privsim`` command line."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from pathlib import Path

from privsim import __version__

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    from privsim.analysis.report import format_report
    from privsim.results import write_json_atomic
    from privsim.runner import run
    from privsim.scenarios import builtin_scenario_path, load_scenario

    path = Path(args.scenario) if args.scenario else builtin_scenario_path("quickstart")
    scenario = load_scenario(path)
    if args.encryption:
        scenario = dataclasses.replace(
            scenario, network=dataclasses.replace(scenario.network, encryption=args.encryption)
        )
    seed = scenario.seed if args.seed is None else args.seed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(scenario, seed).to_dict()
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    print(format_report(result))
    out = write_json_atomic(Path(args.out) / f"{scenario.name}-seed{seed}.json", result)
    print(f"Result file {out}")
    return 0


def _cmd_scenario(args: argparse.Namespace) -> int:
    from privsim.scenarios import builtin_scenario_path, builtin_scenarios

    if not args.name:
        print("\n".join(builtin_scenarios()))
        return 0
    sys.stdout.write(builtin_scenario_path(args.name).read_text(encoding="utf-8"))
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from privsim.scenarios import load_scenario

    scenario = load_scenario(args.scenario)
    print(f"{args.scenario}: valid scenario '{scenario.name}' ({scenario.protocol})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privsim",
        description="Simulate privacy-preserving distributed learning protocols.",
    )
    parser.add_argument("--version", action="version", version=f"privsim {__version__}")
    sub = parser.add_subparsers(dest="command")
    run_p = sub.add_parser("run", help="run a scenario (default: the embedded quickstart)")
    run_p.add_argument("scenario", nargs="?", help="scenario TOML file (omit for the quickstart)")
    run_p.add_argument("--seed", type=int, help="root seed (default: the scenario's seed)")
    run_p.add_argument(
        "--out", default="results", help="directory for the JSON result (default: results)"
    )
    run_p.add_argument(
        "--encryption", choices=["aes-gcm", "none"], help="override network.encryption"
    )
    run_p.set_defaults(func=_cmd_run)
    sc_p = sub.add_parser("scenario", help="print a built-in scenario's TOML (to copy and edit)")
    sc_p.add_argument("name", nargs="?", help="built-in scenario name; omit to list them")
    sc_p.set_defaults(func=_cmd_scenario)
    val_p = sub.add_parser("validate", help="check a scenario file and report the first error")
    val_p.add_argument("scenario")
    val_p.set_defaults(func=_cmd_validate)
    return parser


def main(argv: list[str] | None = None) -> int:
    from privsim.analysis.ledger import BudgetExceededError
    from privsim.scenarios import ScenarioError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    try:
        return int(args.func(args))
    except (ScenarioError, BudgetExceededError, ValueError) as exc:
        print(f"privsim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
