"""Iterative private learning side by side: Flower's DP-FedAvg over SecAgg+ vs privsim's fedlearn.

    /tmp/flwr-venv/bin/python benchmarks/bench_fedlearn_flower.py               # 3 seeds, 20 rounds
    /tmp/flwr-venv/bin/python benchmarks/bench_fedlearn_flower.py --seeds 1,2,3 --rounds 20
    python benchmarks/bench_fedlearn_flower.py      # privsim only, with a note, without Flower

Flower lives in an optional extra, installed in its own virtual environment so the
project's stays clean (never in CI)::

    python3 -m venv /tmp/flwr-venv && /tmp/flwr-venv/bin/pip install -e '.[flower]'

Both sides run in this one process, seed after seed (Flower then privsim), so they see
the same load on a shared machine. The task is the same on both: softmax regression
(64 features, 10 classes, zero-initialised, plain NumPy) on scikit-learn's bundled
digits, split over N = 50 clients IID by privsim's own partition for the seed
(:class:`privsim.protocols.fedlearn.partition.Partitioned`, built here and handed to
Flower's clients, so both train on the same records and test on the same held-out set);
each round about 10 clients each run 1 local epoch of minibatch SGD (batch 16, lr 0.5)
from the global model, clip their update w_i − w to L2 norm C = 1, and the server steps
w ← w + 1·(Σ clipped updates + noise)/10 (FedAvg, server lr 1, the plain mean: Flower's
clients report ``num_examples = 1``), with noise of standard deviation z·C = 0.5 on the
sum (z = 0.5).

- Flower 1.42: ``DifferentialPrivacyClientSideFixedClipping(FedAvg(...), z, C, 10)``
  with the clients' ``fixedclipping_mod``, run over ``SecAggPlusWorkflow`` (3 shares,
  reconstruction threshold 2, ``max_weight = 1``) with the clients' ``secaggplus_mod``,
  in ``DefaultWorkflow`` in the Ray-backed simulation runtime; FedAvg samples a fixed
  cohort of 10 of the 50 nodes (``fraction_fit = 0.2``, ``min_fit_clients = 10``); the
  server evaluates the model centrally after each round (``evaluate_fn``). The noise is
  central: the server adds N(0, (zC/10)²) to the unmasked mean. Flower reports no ε.
- privsim: ``protocol = "fedlearn"`` on the same data and model. Its SecAgg+ path
  (``aggregation = "secagg_plus"``) adds distributed integer noise inside the masked sum
  (the clients' discrete Gaussian shares; the server never sees a noiseless sum) and is
  accounted under Poisson sampling only, so those rows sample each client at q = 0.2
  (cohorts of 10 on average) with add/remove-one neighbours (σ = z·C, planned for a
  cohort up to T = 6 clients smaller than planned, so more noise than Flower's on a
  cohort of 10; a second row plans for T = 1, about Flower's noise). ``trusted``
  (a curator's central noise, as Flower's) and ``dca`` rows use the same sampling, for
  reference; a last ``trusted`` row uses Flower's own sampling, a fixed cohort of 10
  with replace-one neighbours (Δ = 2C) at z = 0.25, so that σ = 0.5 on the sum as in
  Flower's run: its ε is what privsim's accountant gives Flower's configuration.

Figures per system, over the seeds (``--seeds``):

- seconds per round: the median, over all seeds' rounds after the first (the first warms
  up Ray's actors, privsim's caches), of the wall time of a whole round. Flower's is
  timed around the SecAgg+ fit workflow (configure, local training and clipping in the
  clients, the four SecAgg+ stages, aggregation and noise) plus the server's central
  evaluation; Ray's start-up is not counted. privsim's is its own per-round figure
  (``result["fedlearn"]["curves"][r]["wall_seconds"]``: sampling, ledger, the cohort's
  local training, the round's world, the server step and the evaluation); set-up (data
  loading, planning the ledger) is not counted.
- test accuracy of the final model: median and range over the seeds.
- ε at δ = 1e-5 after the rounds (privsim's ledger, against an honest server; median and
  range over the seeds). Flower: none.
- speed-up: Flower's median seconds per round over the row's.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import logging
import os
import platform
import random
import shlex
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CLIENTS = 50
COHORT = 10
RATE = COHORT / CLIENTS
CLIP = 1.0
NOISE = 0.5
EPOCHS = 1
BATCH = 16
CLIENT_LR = 0.5
SERVER_LR = 1.0
DELTA = 1e-5
#: Flower's SecAgg+ graph: 3 shares (each client and its 2 neighbours), threshold 2 —
#: privsim's choice at these cohorts is degree 2 (3 shares) too; Flower's smallest
#: threshold is 2 (privsim's is 1 with no dropout or corruption targeted).
SHARES = 3
THRESHOLD = 2
RESULTS = Path(__file__).resolve().parent / "results" / "fedlearn_flower.md"


@dataclass(frozen=True, slots=True, kw_only=True)
class Setup:
    """One privsim configuration of the comparison."""

    label: str
    aggregation: str
    sampling: str  # "poisson" (q = RATE, add/remove-one) or "fixed" (COHORT, replace-one)
    noise_multiplier: float
    tolerated: int = 0  # dca.tolerated (T of the distributed noise); 0: privsim's default

    @property
    def neighbour(self) -> str:
        return "add_remove" if self.sampling == "poisson" else "replace_one"

    @property
    def sigma(self) -> float:
        """The planned standard deviation of the noise on the sum."""
        return self.noise_multiplier * CLIP * (2.0 if self.neighbour == "replace_one" else 1.0)


SETUPS = (
    Setup(
        label="secagg_plus", aggregation="secagg_plus", sampling="poisson", noise_multiplier=NOISE
    ),
    Setup(
        label="secagg_plus, T = 1",
        aggregation="secagg_plus",
        sampling="poisson",
        noise_multiplier=NOISE,
        tolerated=1,
    ),
    Setup(label="trusted", aggregation="trusted", sampling="poisson", noise_multiplier=NOISE),
    Setup(label="dca (M = 3)", aggregation="dca", sampling="poisson", noise_multiplier=NOISE),
    Setup(
        label="trusted, Flower's sampling",
        aggregation="trusted",
        sampling="fixed",
        noise_multiplier=NOISE / 2,
    ),
)


@dataclass(slots=True)
class Measured:
    """What one system measured over the seeds."""

    system: str
    aggregation: str
    sampling: str
    sigma: float
    z: float
    rounds: dict[int, list[float]] = field(default_factory=dict)  # seed -> per-round walls
    accuracy: dict[int, float] = field(default_factory=dict)
    epsilon: dict[int, float] = field(default_factory=dict)
    status: str = ""

    @property
    def per_round(self) -> float:
        steady = [w for walls in self.rounds.values() for w in (walls[1:] or walls)]
        return statistics.median(steady) if steady else float("nan")


def scenario(setup: Setup, seed: int, rounds: int) -> dict[str, Any]:
    return {
        "name": f"bench-fedlearn-flower-{setup.aggregation}-{setup.sampling}",
        "seed": seed,
        "protocol": "fedlearn",
        "population": {"clients": CLIENTS, "compute_nodes": 3},
        "privacy": {
            "epsilon": 1000.0,  # z is fixed; the budget is only a ceiling (ε is reported)
            "delta": DELTA,
            "neighbour": setup.neighbour,
            "on_overspend": "warn",
        },
        "training": {
            "rounds": rounds,
            "aggregation": setup.aggregation,
            "sampling": setup.sampling,
            "rate": RATE,
            "cohort": COHORT,
            "clip_norm": CLIP,
            "noise_multiplier": setup.noise_multiplier,
            "local_epochs": EPOCHS,
            "local_batch": BATCH,
            "client_lr": CLIENT_LR,
            "server_optimizer": "fedavg",
            "server_lr": SERVER_LR,
        },
        "dataset": {"source": "digits", "partition": "iid"},
        "model": {"name": "softmax"},
        "network": {"encryption": "none"},
        **({"dca": {"tolerated": setup.tolerated}} if setup.tolerated else {}),
    }


def run_privsim(setup: Setup, seed: int, rounds: int) -> tuple[list[float], float, float]:
    """One training run: per-round wall seconds, final test accuracy, ε."""
    from privsim.api import run
    from privsim.scenarios import scenario_from_dict

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run(scenario_from_dict(scenario(setup, seed, rounds))).to_dict()
    curves = result["fedlearn"]["curves"]
    return (
        [float(c["wall_seconds"]) for c in curves],
        float((result["accuracy"] or {}).get("test_accuracy", float("nan"))),
        float(result["privacy"]["achieved_epsilon"]),
    )


def partition(seed: int) -> tuple[list[tuple[Any, Any]], tuple[Any, Any]]:
    """privsim's split of digits for ``seed``: each client's (X, y) and the test set."""
    from privsim.protocols.fedlearn.federated import client_records
    from privsim.scenarios import scenario_from_dict

    return client_records(scenario_from_dict(scenario(SETUPS[0], seed, 1)), seed)


def flower_available() -> bool:
    return importlib.util.find_spec("flwr") is not None


def run_flower(seed: int, rounds: int) -> tuple[list[float], float]:
    """``rounds`` rounds of Flower's DP-FedAvg (client-side fixed clipping, central noise)
    over SecAgg+ in its simulation runtime: per-round wall seconds, final test accuracy."""
    import numpy as np
    from flwr.client import ClientApp, NumPyClient
    from flwr.client.mod import fixedclipping_mod, secaggplus_mod
    from flwr.common import Context, ndarrays_to_parameters
    from flwr.common.logger import FLOWER_LOGGER as flwr_logger
    from flwr.server import Grid, LegacyContext, ServerApp, ServerConfig
    from flwr.server.strategy import DifferentialPrivacyClientSideFixedClipping, FedAvg
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
    from flwr.simulation import run_simulation

    flwr_logger.setLevel(logging.WARNING)
    parts, (X_test, y_test) = partition(seed)
    d, k = parts[0][0].shape[1], 10

    class Softmax(NumPyClient):  # type: ignore[misc]
        """Softmax regression, W (k, d) and b (k,): one epoch of minibatch SGD."""

        def __init__(self, pid: int) -> None:
            self.pid = pid
            self.X, self.y = parts[pid]

        def fit(self, parameters: Any, config: Any) -> Any:
            W, b = (np.array(p, dtype=np.float64) for p in parameters)
            rng = np.random.default_rng([seed, int(config["server_round"]), self.pid])
            n = self.y.size
            for _ in range(EPOCHS):
                order = rng.permutation(n)
                for lo in range(0, n, BATCH):
                    idx = order[lo : lo + BATCH]
                    Xb, yb = self.X[idx], self.y[idx]
                    z = Xb @ W.T + b
                    p = np.exp(z - z.max(axis=1, keepdims=True))
                    p /= p.sum(axis=1, keepdims=True)
                    p[np.arange(idx.size), yb] -= 1.0
                    p /= idx.size
                    W -= CLIENT_LR * (p.T @ Xb)
                    b -= CLIENT_LR * p.sum(axis=0)
            return [W, b], 1, {}  # the plain mean, as privsim's (sum / cohort)

    def client_fn(context: Context) -> Any:
        return Softmax(int(context.node_config["partition-id"])).to_client()

    walls: list[float] = []
    accuracy = [float("nan")]

    def evaluate(server_round: int, ndarrays: Any, config: Any) -> Any:
        started = time.perf_counter()
        W, b = ndarrays
        acc = float(np.mean(np.argmax(X_test @ W.T + b, axis=1) == y_test))
        accuracy[0] = acc
        if server_round >= 1:  # (round 0 evaluates the initial model: not a round)
            walls[-1] += time.perf_counter() - started
        return 0.0, {"accuracy": acc}

    secagg = SecAggPlusWorkflow(
        num_shares=SHARES, reconstruction_threshold=THRESHOLD, max_weight=1.0
    )

    def timed_fit(grid: Any, context: Any) -> None:
        started = time.perf_counter()
        secagg(grid, context)
        walls.append(time.perf_counter() - started)

    server_app = ServerApp()

    @server_app.main()  # type: ignore[misc]
    def _main(grid: Grid, context: Context) -> None:
        random.seed(seed)  # FedAvg's cohort, SecAgg+'s graph
        np.random.seed(seed)  # noqa: NPY002 (Flower's noise draws from the global state)
        strategy = DifferentialPrivacyClientSideFixedClipping(
            FedAvg(
                fraction_fit=COHORT / CLIENTS,
                fraction_evaluate=0.0,
                min_fit_clients=COHORT,
                min_available_clients=CLIENTS,
                initial_parameters=ndarrays_to_parameters([np.zeros((k, d)), np.zeros(k)]),
                evaluate_fn=evaluate,
                on_fit_config_fn=lambda r: {"server_round": r},
            ),
            noise_multiplier=NOISE,
            clipping_norm=CLIP,
            num_sampled_clients=COHORT,
        )
        legacy = LegacyContext(
            context=context, config=ServerConfig(num_rounds=rounds), strategy=strategy
        )
        DefaultWorkflow(fit_workflow=timed_fit)(grid, legacy)

    # secaggplus_mod outermost: it calls the fit (and the clipping) in its masking stage
    client_app = ClientApp(client_fn=client_fn, mods=[secaggplus_mod, fixedclipping_mod])
    run_simulation(
        server_app=server_app,
        client_app=client_app,
        num_supernodes=CLIENTS,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"logging_level": logging.ERROR, "log_to_driver": False},
        },
    )
    _settle()
    return walls, accuracy[0]


def _settle(timeout: float = 10.0) -> None:
    """Wait for Ray's processes to exit, so that they do not share privsim's rounds."""
    try:
        import psutil
    except ImportError:
        time.sleep(2.0)
        return
    psutil.wait_procs(psutil.Process().children(recursive=True), timeout=timeout)


def _spread(values: Sequence[float], fmt: str) -> str:
    if not values:
        return "—"
    mid = format(statistics.median(values), fmt)
    return mid if len(values) == 1 else f"{mid} [{min(values):{fmt}}, {max(values):{fmt}}]"


def table(rows: list[Measured], flower: Measured | None) -> str:
    lines = [
        "| system | aggregation | sampling | z (σ on the sum) | s / round (median) "
        "| speed-up vs Flower | test accuracy, median [range] | ε (δ = 1e-5), median [range] |",
        "|---|---|---|---|---:|---:|---|---|",
    ]
    for m in ([flower] if flower else []) + rows:
        speed = "—" if flower is None or m is flower else f"{flower.per_round / m.per_round:.0f}×"
        eps = _spread(list(m.epsilon.values()), ".2f") if m.epsilon else "none reported"
        lines.append(
            f"| {m.system} | {m.aggregation} | {m.sampling} | {m.z:g} ({m.sigma:g}) "
            f"| {m.per_round:.4f} | {speed} | {_spread(list(m.accuracy.values()), '.3f')} "
            f"| {eps} |"
        )
    return "\n".join(lines)


NOTES = """\
Notes:

- Same task on both sides: softmax regression on scikit-learn's digits (1,797 × 64,
  10 classes; standardised; 20 % stratified test set), split IID over N = 50 clients by
  privsim's partition for each seed (Flower's clients get the same records); 1 local
  epoch of minibatch SGD (batch 16, lr 0.5); updates clipped to C = 1; FedAvg, server
  lr 1, the plain mean over the cohort of 10; 20 rounds unless said otherwise above.
- Flower: `DifferentialPrivacyClientSideFixedClipping` wrapping `FedAvg` with the
  clients' `fixedclipping_mod`, over `SecAggPlusWorkflow` (3 shares, threshold 2,
  `max_weight = 1`) with `secaggplus_mod`, in the Ray simulation runtime (1 CPU per
  client actor). Fixed cohort of 10 of 50 per round. **Central noise**: the server adds
  N(0, (z·C/10)²) to the unmasked mean, i.e. σ = z·C = 0.5 on the sum; SecAgg+ only
  hides the individual updates. Flower reports no ε.
- privsim `secagg_plus`: **distributed integer noise** (each client adds a discrete
  Gaussian share inside the masked sum; the server never sees a noiseless sum), with
  **Poisson sampling** at q = 0.2 (cohorts of 10 on average, not exactly 10) and
  add/remove-one neighbours, because privsim accounts integer noise through SecAgg under
  Poisson sampling only. `trusted` (a curator adds σ = z·C on the sum, as Flower's
  server does) and `dca` rows use the same sampling, for reference.
- The planned σ = 0.5 on the sum is a floor for `secagg_plus` and `dca`: privsim scales
  each client's noise share so that a cohort T = ⌈2·√(N·q·(1 − q))⌉ = 6 clients smaller
  than planned still carries σ (σ_i = σ/√(m − T − 1) ≈ 0.29), so a cohort of 10 carries
  about σ_i·√9 to σ_i·√10 ≈ 0.87–0.91: more noise than Flower's 0.5 (privsim's ε is
  computed from the noise that actually reached the sum), hence lower accuracy. The
  "secagg_plus, T = 1" row sets `dca.tolerated = 1` (σ_i = σ/√8 ≈ 0.18, about 0.53–0.56
  on a cohort of 10, close to Flower's 0.5): the same SecAgg+ path with about Flower's
  noise, for the accuracy comparison (its ε is larger: smaller cohorts carry less noise).
- With Poisson sampling the server divides the noisy sum by the planned cohort q·N = 10
  whatever the realised cohort (4 to 16 clients, 9.4 on average, over seeds 1–3), as in
  McMahan et al. 2018.
- "trusted, Flower's sampling": a fixed cohort of 10 (replace-one neighbours, Δ = 2C) at
  z = 0.25, i.e. the same σ = 0.5 on the sum as Flower's run: its ε is what privsim's
  accountant gives Flower's configuration (its z = 0.5 is relative to C, the add/remove
  sensitivity, while a fixed-size cohort is amplified for replace-one neighbours).
- ε is privsim's ledger against an honest server (the sampling's amplification is
  credited), composed over the rounds with PLD accounting.
- Reproducibility: privsim's runs are deterministic per seed (same data, cohorts, noise
  and accuracy on every run). Flower's are not fully: the benchmark seeds Python's and
  NumPy's global generators in the server (cohort, SecAgg+ graph, noise) and the clients'
  shuffles, but the simulation gives the nodes random IDs each run, so the cohorts (and
  the final accuracy, by about ±0.01) differ between runs of the same seed.
- Seconds per round: the median over all seeds' rounds after the first of each run. Flower:
  the SecAgg+ fit workflow (configure, local training and clipping, the four SecAgg+
  stages, aggregation and noise) plus the central evaluation; Ray's start-up not
  counted. privsim: its per-round `wall_seconds` (sampling, ledger, local training, the
  round's simulated world, server step, evaluation); set-up not counted. Both in one
  process, seed after seed, on a shared 2-core machine.
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (>= 3)")
    parser.add_argument("--rounds", type=int, default=20, help="training rounds (>= 2)")
    parser.add_argument("--out", default=str(RESULTS), help="where to save the markdown table")
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    rounds = max(2, args.rounds)
    have_flower = flower_available()
    if not have_flower:
        print(
            "note: Flower is not installed in this interpreter; only privsim's side runs.\n"
            "      python3 -m venv /tmp/flwr-venv && /tmp/flwr-venv/bin/pip install -e "
            "'.[flower]'\n      then run this file with /tmp/flwr-venv/bin/python.\n"
        )
    started = time.perf_counter()
    flower = (
        Measured(
            system="Flower 1.42",
            aggregation="SecAgg+ + DP client-side fixed clipping (central noise)",
            sampling="fixed 10 of 50",
            sigma=NOISE * CLIP,
            z=NOISE,
        )
        if have_flower
        else None
    )
    ours = [
        Measured(
            system="privsim",
            aggregation=s.label,
            sampling=(
                f"Poisson q = {RATE:g} (add/remove)"
                if s.sampling == "poisson"
                else f"fixed {COHORT} of {CLIENTS} (replace-one)"
            ),
            sigma=s.sigma,
            z=s.noise_multiplier,
        )
        for s in SETUPS
    ]
    for seed in seeds:
        if flower is not None:
            walls, acc = run_flower(seed, rounds)
            flower.rounds[seed], flower.accuracy[seed] = walls, acc
            print(
                f"seed {seed} flower: {len(walls)} rounds, median "
                f"{statistics.median(walls[1:] or walls):.4f} s, accuracy {acc:.3f}",
                flush=True,
            )
        for setup, m in zip(SETUPS, ours, strict=True):
            walls, acc, eps = run_privsim(setup, seed, rounds)
            m.rounds[seed], m.accuracy[seed], m.epsilon[seed] = walls, acc, eps
            print(
                f"seed {seed} privsim {setup.label}: median "
                f"{statistics.median(walls[1:] or walls):.4f} s, accuracy {acc:.3f}, ε {eps:.2f}",
                flush=True,
            )
    took = time.perf_counter() - started
    out = table(ours, flower)
    print("\n" + out)
    if flower is not None:
        print(
            f"\nprivsim secagg_plus is {flower.per_round / ours[0].per_round:.0f}× faster "
            "per round than Flower's SecAgg+ with DP fixed clipping (target: >= 20×)"
        )
    print(f"\ntotal {took:.0f} s")
    if args.no_save:
        return
    command = " ".join(
        [
            shlex.quote(sys.executable),
            "benchmarks/bench_fedlearn_flower.py",
            *map(shlex.quote, sys.argv[1:]),
        ]
    )
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    text = (
        "# fedlearn vs Flower: DP-FedAvg over SecAgg+, side by side\n\n"
        f"Measured {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} with\n\n"
        f"    {command}\n\n"
        f"seeds {', '.join(map(str, seeds))}; {rounds} rounds; Python "
        f"{platform.python_version()}, {os.cpu_count()} cores (shared; load average "
        f"{load[0]:.1f} at the end); total {took:.0f} s.\n\n"
        f"{out}\n\n{NOTES}"
    )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
