"""Throughput of the privacy audit, trials per second on one core: DCA at N = 1,000,
d = 1 and RACE on a 10⁴-row synthetic data set (K = 10 owners, R = 80, W = 1000), each
vectorised (the audit plan's trial function, as ``privsim audit`` runs it) and as
full protocol runs (one end-to-end run per trial, what a study of full runs costs);
and the reference Gaussian mechanism. With ``--claims``: the audit table instead —
claimed ε against the 95 % lower bound for every protocol's correct release, and for
each injected bug (the same settings as ``tests/audit``); ``--match TEXT`` (repeatable,
case-insensitive) keeps only the rows whose label contains one of the texts.

With ``--dropout``: the dropout attack's effective ε against the adversary's budget,
as a table and ``docs/figures/threat-dca-dropout-attack.png``.

    python benchmarks/bench_audit.py [--claims [--match TEXT ...] | --dropout]
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

from threadpoolctl import threadpool_limits

from privsim import registry
from privsim.api import run
from privsim.audit.harness import audit_plan, plan_of
from privsim.audit.reference import gaussian_plan
from privsim.scenarios import scenario_from_dict


def _dca() -> Any:
    ex = dict(registry.get("dca").example)
    return scenario_from_dict(
        {
            **ex,
            "name": "bench-audit-dca",
            "baseline": False,
            "population": {"clients": 1000, "compute_nodes": 3},
            "data": {"dimension": 1, "mean": 0.3},
            "dca": {"tolerated": 10},
        }
    )


def _race(mode: str, noise: str) -> Any:
    ex = dict(registry.get("race").example)
    return scenario_from_dict(
        {
            **ex,
            "name": "bench-audit-race",
            "population": {"clients": 10, "compute_nodes": 3},
            "dca": {"tolerated": 2},
            "race": {
                "mode": mode,
                "noise": noise,
                "dataset": "synthetic",
                "synthetic_records": 10_000,
                "owners": 10,
                "rows": 80,
                "width": 1000,
                "queries": 100,
            },
        }
    )


def _rate(fn: Callable[[], int], min_seconds: float = 3.0) -> float:
    """Trials per second of ``fn`` (returns the trials it ran), repeated for at least
    ``min_seconds``."""
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < min_seconds:
        done += fn()
    return done / (time.perf_counter() - started)


def _vectorised(scenario: Any, trials: int) -> Callable[[], int]:
    plan = plan_of(scenario)
    return lambda: 2 * audit_plan(plan, scenario, trials).trials  # D and D′


def _full(scenario: Any) -> Callable[[], int]:
    def once() -> int:
        run(scenario, 1, preflight=False)
        return 1

    return once


def main() -> None:
    warnings.simplefilter("ignore")
    cases = [
        ("Gaussian mechanism (reference)", "vectorised", None, 1_000_000),
        ("DCA, N = 1,000, d = 1", "vectorised", _dca(), 100_000),
        ("DCA, N = 1,000, d = 1", "full runs", _dca(), 0),
        ("RACE dca/Laplace, 10⁴ rows, K = 10", "vectorised", _race("dca", "laplace"), 20_000),
        ("RACE dca/Gaussian, 10⁴ rows, K = 10", "vectorised", _race("dca", "gaussian"), 100_000),
        ("RACE curator, 10⁴ rows", "vectorised", _race("curator", "laplace"), 100_000),
        ("RACE dca/Laplace, 10⁴ rows, K = 10", "full runs", _race("dca", "laplace"), 0),
    ]
    print("| audited release | trials as | trials per second per core |")
    print("|---|---|---:|")
    with threadpool_limits(1):
        for label, how, scenario, trials in cases:
            if scenario is None:
                plan = gaussian_plan(1.0, 1e-5)
                fn: Callable[[], int] = lambda: 2 * audit_plan(plan, None, trials).trials  # noqa: E731,B023
            elif how == "vectorised":
                fn = _vectorised(scenario, trials)
            else:
                fn = _full(scenario)
            print(f"| {label} | {how} | {_rate(fn):,.0f} |", flush=True)


def _example(name: str, **changes: Any) -> Any:
    data = dict(registry.get(name).example)
    for key, value in changes.items():
        data[key] = {**data[key], **value} if isinstance(data.get(key), dict) else value
    return scenario_from_dict(data)


#: tests/audit/test_summarization_audit.py's MWEM settings: ε_v = 1, one iteration, d = 8.
MWEM = {"epsilon_validation": 1.0, "t_init": 1, "dimension": 8}

#: A row of the claims table: (label, scenario, trials, bug injector or None, release).
ClaimsRow = tuple[str, Any, int, Callable[[], Any] | None, str | None]


def _new_rows() -> list[ClaimsRow]:
    """The integer-noise SecAgg and summarization rows (issue 23), correct and with the
    bugs of their tests."""
    from privsim.kit.intnoise import rounding
    from privsim.kit.secagg import noise as secagg_noise
    from privsim.protocols.secagg import run as secagg_run
    from privsim.protocols.secagg.audit import small_audit_scenario
    from privsim.protocols.summarization import auction, mwem
    from privsim.protocols.summarization.mwem import MarginalMwem

    def unscaled() -> Any:
        def sensitivity(clip: float, scale: float, d: int, beta: float, **kw: Any) -> Any:
            return rounding.integer_sensitivity(clip, 1.0, d, beta, **kw)

        return setattr(secagg_run, "kit_sensitivity", sensitivity)

    correct_skellam = secagg_noise.sample_skellam

    def halved_skellam() -> Any:
        return setattr(
            secagg_noise, "sample_skellam", lambda rng, mu, size: correct_skellam(rng, mu / 4, size)
        )

    correct_run, correct_measure = MarginalMwem.run, mwem.measure

    def understated_weights() -> Any:
        def run(
            self: Any, target: Any, q: int, it: int, eps: float, sens: float, rng: Any, **kw: Any
        ) -> Any:
            return correct_run(self, target, q, it, eps, sens / 2, rng, **kw)

        return setattr(MarginalMwem, "run", run)

    def halved_measurement() -> Any:
        return setattr(
            mwem, "measure", lambda t, i, eps, sens, rng: correct_measure(t, i, eps, sens / 2, rng)
        )

    correct_coins = auction.ask_probabilities

    def doubled_coins() -> Any:
        return setattr(
            auction, "ask_probabilities", lambda k, eps, v="private": correct_coins(k, 2 * eps, v)
        )

    skellam12 = {
        "population.clients": 12,
        "secagg.tolerated": 0,
        "secagg.threshold": 7,
        "threat.colluding_clients": 0,
        "privacy.epsilon": 2.0,
    }
    mwem_scenario = _example("summarization", summarization=MWEM)
    return [
        ("secagg DDG (example: N = 12, T = 2, d = 4)", _example("secagg"), 1_000_000, None, None),
        (
            "secagg Skellam (example, noise = skellam)",
            _example("secagg", secagg={"noise": "skellam"}),
            1_000_000,
            None,
            None,
        ),
        (
            "summarization MWEM choice (ε_v = 1, d = 8)",
            mwem_scenario,
            1_000_000,
            None,
            "mwem-choice",
        ),
        (
            "summarization MWEM measurement (ε_v = 1)",
            mwem_scenario,
            1_000_000,
            None,
            "mwem-measurement",
        ),
        (
            "summarization auction (example: K = 3)",
            _example("summarization"),
            1_000_000,
            None,
            None,
        ),
        (
            "BUG secagg DDG Δ₂ without the scale 2^f, f = 3 (true ε ≈ 3.4)",
            small_audit_scenario("discrete_gaussian", **{"secagg.fraction_bits": 3}),
            1_000_000,
            unscaled,
            None,
        ),
        (
            "BUG secagg Skellam Δ₂ without the scale 2^f, f = 3 (true ε ≈ 3.4)",
            small_audit_scenario("skellam", **{"secagg.fraction_bits": 3}),
            1_000_000,
            unscaled,
            None,
        ),
        (
            "BUG secagg Skellam shares at half the scale, N = 12 (true ε ≈ 3.8)",
            small_audit_scenario("skellam", **skellam12),
            1_000_000,
            halved_skellam,
            None,
        ),
        (
            "BUG summarization MWEM weights with Δ/2 (true ε 2)",
            mwem_scenario,
            1_000_000,
            understated_weights,
            "mwem-choice",
        ),
        (
            "BUG summarization MWEM measurement at half the noise (true ε 2)",
            mwem_scenario,
            1_000_000,
            halved_measurement,
            "mwem-measurement",
        ),
        (
            "BUG summarization private coins at 2·ε_auc (true ε 1.0)",
            _example("summarization"),
            1_000_000,
            doubled_coins,
            None,
        ),
    ]


def _claims_rows() -> list[ClaimsRow]:
    """(label, scenario, trials, bug injector or None, release or None)."""
    from privsim.kit.securesum import maths as dca_maths
    from privsim.protocols.bcd import maths as bcd_maths
    from privsim.protocols.race import experiment as race_experiment
    from privsim.protocols.race import private as race_private
    from privsim.sim.ledger import Trust

    def unscaled() -> Any:
        return setattr(dca_maths, "client_noise_std", lambda s, n, t: s / n**0.5)

    correct_scale = race_private.laplace_scale

    def by_records() -> Any:
        def scale(rows: int, epsilon: float, neighbour: str = "add_remove") -> float:
            return correct_scale(rows, epsilon, neighbour) / 10

        return setattr(race_private, "laplace_scale", scale)

    def prose() -> Any:
        return setattr(bcd_maths, "perturbation_scale", lambda xi, e: xi / e)

    class Forgets:
        nobody = staticmethod(Trust.nobody)
        one_of = staticmethod(Trust.one_of)

        @staticmethod
        def each(*parties: str, description: str = "") -> Trust:
            return Trust.nobody()

    def forgets_curator() -> Any:
        return setattr(race_experiment, "Trust", Forgets)

    colluding = {
        "population": {"clients": 20, "compute_nodes": 3},
        "dca": {"tolerated": 15},
        "threat": {"colluding_clients": 15},
    }
    tiny = {
        "race": {"mode": "curator", "synthetic_records": 12, "owners": 2, "queries": 2, "rows": 4},
        "population": {"clients": 2},
        "privacy": {"epsilon": 0.2, "delta": 1e-5, "neighbour": "add_remove"},
    }
    bcd60 = {"seed": 3, "privacy": {"epsilon": 8.0}, "bcd": {"records": 60, "iterations": 1}}
    return [
        ("dca (example: N = 30, T = 3)", _example("dca"), 1_000_000, None, None),
        ("dca, 15 of 20 colluding, T = 15", _example("dca", **colluding), 1_000_000, None, None),
        ("trusted_aggregator (example)", _example("trusted_aggregator"), 1_000_000, None, None),
        ("race dca/Laplace (example)", _example("race"), 200_000, None, None),
        ("race dca/Gaussian", _example("race", race={"noise": "gaussian"}), 1_000_000, None, None),
        ("race local", _example("race", race={"mode": "local"}), 1_000_000, None, None),
        ("race curator", _example("race", race={"mode": "curator"}), 1_000_000, None, None),
        ("blr DDP (example)", _example("blr"), 1_000_000, None, None),
        ("blr TA", _example("blr", blr={"methods": ["TA"]}), 1_000_000, None, None),
        (
            "bcd, N = 1000, ε_step = 0.5",
            _example("bcd", privacy={"epsilon": 1.0}, bcd={"records": 1000, "iterations": 1}),
            1_000_000,
            None,
            None,
        ),
        ("bcd, N = 60, ε_step = 4", _example("bcd", **bcd60), 1_000_000, None, None),
        ("bcd (example: N = 200, ε_step = 0.25)", _example("bcd"), 1_000_000, None, None),
        (
            "BUG dca σ/√N, 15 of 20 colluding (true ε 2.15)",
            _example("dca", **colluding),
            1_000_000,
            unscaled,
            None,
        ),
        (
            "BUG race b = R/(N·ε), N = 10 (true ε 2.0)",
            _example("race", **tiny),
            1_000_000,
            by_records,
            None,
        ),
        (
            "BUG bcd prose ξ/ε_step, N = 60, ε_step = 4",
            _example("bcd", **bcd60),
            1_000_000,
            prose,
            None,
        ),
        (
            "BUG race curator colluding, ledger trusts nobody (true ε ∞)",
            _example(
                "race", race={"mode": "curator"}, threat={"colluding_servers": ["aggregator"]}
            ),
            1_000_000,
            forgets_curator,
            None,
        ),
        *_new_rows(),
    ]


def claims(match: list[str] | None = None) -> None:
    """The audit table: claimed ε against the 95 % lower bound (``match``: only the rows
    whose label contains one of these texts, case-insensitive)."""
    import importlib

    from privsim.audit import audit
    from privsim.protocols.summarization.mwem import MarginalMwem

    warnings.simplefilter("ignore")
    print("| release | claimed ε (δ) | 95 % lower bound | trials per side | seconds |")
    print("|---|---:|---:|---:|---:|")
    modules = [
        "privsim.kit.secagg.noise",
        "privsim.kit.securesum.maths",
        "privsim.protocols.bcd.maths",
        "privsim.protocols.race.private",
        "privsim.protocols.race.experiment",
        "privsim.protocols.secagg.run",
        "privsim.protocols.summarization.auction",
        "privsim.protocols.summarization.mwem",
    ]
    saved = {m: dict(vars(importlib.import_module(m))) for m in modules}
    saved_run = MarginalMwem.run  # a bug patches the class, not its module
    wanted = [m.lower() for m in match or []]
    for label, scenario, trials, bug, release in _claims_rows():
        if wanted and not any(m in label.lower() for m in wanted):
            continue
        if bug is not None:
            bug()
        try:
            r = audit(scenario, trials, seed=1, release=release)
            print(
                f"| {label} | {r.claimed_epsilon:.3g} ({r.claimed_delta:g}) | "
                f"{r.lower_bound:.3g}{' **exceeds**' if r.exceeds_claim else ''} | "
                f"{trials:,} | {r.seconds:.1f} |",
                flush=True,
            )
        finally:
            for m, names in saved.items():
                vars(importlib.import_module(m)).update(names)
            MarginalMwem.run = saved_run  # type: ignore[method-assign]


def dropout(figure: str = "docs/figures/threat-dca-dropout-attack.png") -> None:
    """The dropout attack's effective ε against the adversary's budget T′ (N = 100,
    T = 10, ε = 1, a compute node claiming T honest clients missing), printed and drawn
    against the paper's T accounting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from privsim.protocols.dca.attacks import dropout_attack

    warnings.simplefilter("ignore")
    scenario = _example(
        "dca",
        population={"clients": 100, "compute_nodes": 3},
        dca={"tolerated": 10},
        network={"encryption": "none"},
    )
    budgets = list(range(0, 21, 2))
    rows = [dropout_attack(scenario, t, 10, seed=1) for t in budgets]
    print(
        "| colluding clients T′ | claimed missing D | effective ε (ledger) | with own share | paper |"
    )
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.colluding_clients} | {r.claimed_missing} | {r.effective_epsilon:.3f} | "
            f"{r.epsilon_with_own_share:.3f} | {r.paper_epsilon:g} |"
        )
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.plot(budgets, [r.effective_epsilon for r in rows], "o-", label="effective ε (ledger)")
    ax.plot(
        budgets,
        [r.epsilon_with_own_share for r in rows],
        "s--",
        label="crediting the target's own share",
    )
    paper = [r.paper_epsilon if r.paper_epsilon != float("inf") else None for r in rows]
    ax.plot(budgets, paper, "k:", label="paper's T accounting (T′ ≤ T)")
    ax.axvline(10, color="grey", lw=0.8)
    ax.set_xlabel("colluding clients T′ (with D = T = 10 honest clients claimed missing)")
    ax.set_ylabel("ε for an honest target")
    ax.set_title("DCA, N = 100, T = 10: dropout as an attack", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(figure, dpi=110)
    print(f"wrote {figure}")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--claims", action="store_true", help="the audit table")
    mode.add_argument("--dropout", action="store_true", help="the dropout attack's table")
    parser.add_argument(
        "--match",
        action="append",
        metavar="TEXT",
        help="with --claims: only rows whose label contains TEXT (repeatable)",
    )
    args = parser.parse_args()
    if args.claims:
        claims(args.match)
    elif args.dropout:
        dropout()
    else:
        main()
