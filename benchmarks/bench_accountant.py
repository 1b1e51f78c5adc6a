"""The privacy accountant's cost: building one Poisson-sampled Gaussian round's PLD, and a
short federated training whose population grows at a fixed expected cohort.

    python benchmarks/bench_accountant.py              # both tables
    python benchmarks/bench_accountant.py --build      # (a) only
    python benchmarks/bench_accountant.py --fedlearn   # (b) only
    python benchmarks/bench_accountant.py --fedlearn --profile   # (b) with each run's
                                                       # top functions (cProfile)

(a) One distinct sampled round (``PoissonSampledDpEvent(q, GaussianDpEvent(z))``) at the
ledger's finest interval, 10⁻⁴: dp-accounting's ``from_gaussian_mechanism(z,
sampling_prob=q)`` against the vectorised
:func:`privsim.sim.sampled_pld.sampled_gaussian_pld`, each the best of a few builds
(``--ref-repeats``, ``--repeats``: the least disturbed by other work on a shared
machine), with the grid's points per direction and the relative difference of ε at
δ = 10⁻⁵. Goal: at most 20 ms per round at every q ≥ 10⁻⁵.

(b) The shipped ``fedlearn`` scenario with Poisson cohorts of about 60 clients
(``training.sampling = "poisson"``, ``privacy.neighbour = "add_remove"``,
``training.rate`` = 60/N), 5 rounds, at N = 10³ and 10⁵ clients, through ``trusted`` and
``dca`` aggregation; each run in a fresh process, so that its peak resident memory
(``ru_maxrss``) is its own. Wall is the time of ``run()`` alone (not the imports). Goal:
the 10⁵ run within 1.2 times the 10³ one. Two kinds of row: z *given* (the planner's z
at N = 10³, for both populations: the same mechanism on a larger population, where only
the sampling rate differs), and z *planned* for ε = 4 at each N. The planner's z falls
as q does (more amplification: 0.34 at N = 10⁵ against 0.68), and a sampled Gaussian's
PLD spans about 2·9/z + 1/z² of privacy loss, so the planned 10⁵ run composes PLDs
about twice as long: that ratio measures the smaller z's accounting, not the population.
Each figure is the median of ``--runs`` runs (3), to damp a shared machine's noise.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RATES = (1e-5, 1e-4, 1e-3, 1e-2, 0.1)
MULTIPLIERS = (0.8, 1.1, 2.0)
INTERVAL = 1e-4
POPULATIONS = (1_000, 100_000)
AGGREGATIONS = ("trusted", "dca")
COHORT = 60


def _best(build: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """(the last result, the least time of ``repeats`` calls of ``build``)."""
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        result = build()
        best = min(best, time.perf_counter() - started)
    return result, best


def _build_table(repeats: int, ref_repeats: int) -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    from privsim.sim.sampled_pld import sampled_gaussian_pld

    sampled_gaussian_pld(1.0, 0.01, INTERVAL)  # warm: imports, first-call set-up
    print(
        f"(a) one sampled Gaussian round's PLD at interval {INTERVAL:g} (best of "
        f"{ref_repeats} and of {repeats} builds)"
    )
    print()
    print(
        "| q | z | points per direction | dp-accounting ms | vectorised ms | speed-up | Δε/ε at δ = 1e-5 |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for q in RATES:
        for z in MULTIPLIERS:
            library = functools.partial(
                pld_module.from_gaussian_mechanism,
                standard_deviation=z,
                value_discretization_interval=INTERVAL,
                sampling_prob=q,
            )
            ref, theirs = _best(library, ref_repeats)
            new, ours = _best(functools.partial(sampled_gaussian_pld, z, q, INTERVAL), repeats)
            want, got = ref.get_epsilon_for_delta(1e-5), new.get_epsilon_for_delta(1e-5)
            rel = abs(got - want) / want if want else abs(got)
            print(
                f"| {q:g} | {z:g} | {new._pmf_remove.size:,} | {theirs * 1e3:.0f} | "
                f"{ours * 1e3:.1f} | {theirs / ours:.0f}x | {rel:.1e} |"
            )
    print()


def _scenario(clients: int, aggregation: str, multiplier: float | None) -> dict[str, Any]:
    """The shipped ``fedlearn`` scenario with Poisson cohorts of about :data:`COHORT`;
    ``multiplier``: z given, or None for the planner's."""
    from privsim.scenarios.convert import set_fields
    from privsim.scenarios.loader import builtin_scenario_path, read_toml

    base = read_toml(builtin_scenario_path("fedlearn"), "scenario file")
    return set_fields(
        base,
        {
            "training.sampling": "poisson",
            "privacy.neighbour": "add_remove",
            "training.rate": COHORT / clients,
            "training.rounds": 5,
            "population.clients": clients,
            "training.aggregation": aggregation,
        }
        | ({} if multiplier is None else {"training.noise_multiplier": multiplier}),
    )


def _one(clients: int, aggregation: str, multiplier: float | None, profile: bool) -> dict[str, Any]:
    """Run the scenario here; its figures as a dict."""
    import resource
    import warnings

    from privsim.api import run
    from privsim.scenarios import scenario_from_dict

    warnings.simplefilter("ignore")
    scenario = scenario_from_dict(_scenario(clients, aggregation, multiplier))
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started = time.perf_counter()
    result = run(scenario).to_dict()
    wall = time.perf_counter() - started
    top = ""
    if profiler is not None:
        import io
        import pstats

        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(
            "privsim|dp_accounting", 25
        )
        top = out.getvalue()
    noise = result["fedlearn"]["noise"]
    return {
        "clients": clients,
        "aggregation": aggregation,
        "wall": wall,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "epsilon": result["privacy"]["achieved_epsilon"],
        "multiplier": noise.get("noise_multiplier", math.nan),
        "profile": top,
    }


def _in_child(
    clients: int, aggregation: str, multiplier: float | None, profile: bool
) -> dict[str, Any]:
    """:func:`_one` in a fresh interpreter (its own peak memory)."""
    args = [sys.executable, __file__, "--child", str(clients), aggregation, repr(multiplier)]
    out = subprocess.run(
        args + (["--profile"] if profile else []),
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _median_run(
    clients: int, aggregation: str, multiplier: float | None, profile: bool, runs: int
) -> dict[str, Any]:
    """The run of median wall time among ``runs`` (its memory the median of theirs)."""
    got = sorted(
        (_in_child(clients, aggregation, multiplier, profile) for _ in range(runs)),
        key=lambda r: r["wall"],
    )
    middle = dict(got[len(got) // 2])
    middle["peak_mib"] = statistics.median(r["peak_mib"] for r in got)
    return middle


def _fedlearn_table(profile: bool, runs: int) -> None:
    print(
        f"(b) fedlearn, 5 rounds, Poisson cohorts of about {COHORT} (rate = {COHORT}/N), "
        f"median of {runs} runs"
    )
    print()
    print(
        "| aggregation | z | N | z value | ε | wall s | peak MiB | wall ÷ N = 10³ | "
        "peak ÷ N = 10³ |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    profiles = []
    for aggregation in AGGREGATIONS:
        planned_small = _median_run(POPULATIONS[0], aggregation, None, profile, runs)
        for kind in ("given", "planned"):
            first: dict[str, Any] | None = None
            for clients in POPULATIONS:
                multiplier = planned_small["multiplier"] if kind == "given" else None
                if kind == "planned" and clients == POPULATIONS[0]:
                    got = planned_small
                else:
                    got = _median_run(clients, aggregation, multiplier, profile, runs)
                first = first or got
                print(
                    f"| {aggregation} | {kind} | {clients:,} | {got['multiplier']:.3f} | "
                    f"{got['epsilon']:.3f} | {got['wall']:.1f} | {got['peak_mib']:.0f} | "
                    f"{got['wall'] / first['wall']:.2f} | "
                    f"{got['peak_mib'] / first['peak_mib']:.2f} |"
                )
                if got["profile"]:
                    profiles.append((f"{aggregation}, z {kind}, N = {clients:,}", got["profile"]))
    print()
    for label, text in profiles:
        print(f"--- {label}: cumulative time (cProfile) ---")
        print(text)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--build", action="store_true", help="table (a) only")
    parser.add_argument("--fedlearn", action="store_true", help="table (b) only")
    parser.add_argument("--repeats", type=int, default=7, help="(a): vectorised builds per cell")
    parser.add_argument("--ref-repeats", type=int, default=2, help="(a): dp-accounting's builds")
    parser.add_argument("--profile", action="store_true", help="(b): each run's top functions")
    parser.add_argument("--runs", type=int, default=3, help="(b): runs per row (median)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        given = None if args.child[2] == "None" else float(args.child[2])
        print(json.dumps(_one(int(args.child[0]), args.child[1], given, args.profile)))
        return
    both = not (args.build or args.fedlearn)
    print(f"{os.cpu_count()} CPUs")
    print()
    if args.build or both:
        _build_table(args.repeats, args.ref_repeats)
    if args.fedlearn or both:
        _fedlearn_table(args.profile, args.runs)


if __name__ == "__main__":
    main()
