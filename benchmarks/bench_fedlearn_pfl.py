"""Central-DP federated averaging side by side: Apple's pfl-research vs privsim's fedlearn.

    /tmp/torch-venv/bin/python benchmarks/bench_fedlearn_pfl.py --seeds 1,2,3 --rounds 20
    python benchmarks/bench_fedlearn_pfl.py      # privsim and the referee only, without pfl

pfl (``pip install pfl``, 0.6.0, PyTorch backend) lives in its own virtual environment
with torch and privsim (editable), never in CI::

    /tmp/torch-venv/bin/pip install pfl

Both sides run in this one process, seed after seed (pfl then privsim), so they see the
same load on a shared machine. The task is the same on both: softmax regression (one
linear layer, 64 features, 10 classes, zero-initialised) on scikit-learn's bundled
digits, split IID over N = 100 clients by privsim's own partition for the seed
(:class:`privsim.protocols.fedlearn.partition.Partitioned`, via
:func:`privsim.protocols.fedlearn.federated.learner_of`; pfl's users get the same
records, and both test on the same held-out set). Each round every client is picked
independently with probability q = 0.2 (Poisson sampling, 20 expected), each picked
client runs 1 local epoch of minibatch SGD (batch 16, lr 0.5, a fresh shuffle a round)
from the global model, its update w_i − w is clipped to L2 norm C = 1, the server adds
Gaussian noise of standard deviation z·C = 1 (z = 1) to the sum and steps
w ← w + (noisy sum)/(q·N) (FedAvg, server lr 1, the fixed denominator of McMahan et al.
2018). 20 rounds, δ = 1e-5, add/remove-one neighbours.

- pfl 0.6.0: ``FederatedAveraging`` on a ``PyTorchModel`` (``torch.optim.SGD`` locally,
  ``SGD(lr = 1)`` centrally) in ``SimulatedBackend`` with the postprocessor
  ``CentrallyAppliedPrivacyMechanism(GaussianMechanism.from_privacy_accountant(acc, C))``
  (clipping per user, noise N(0, (zC)²) on the summed statistics), ``acc`` a
  ``PLDPrivacyAccountant(num_compositions = 20, sampling_probability = 0.2,
  mechanism = "gaussian", noise_parameter = z, delta = 1e-5)`` whose ``epsilon`` is
  pfl's ε (its RDP and PRV accountants are printed for reference).
  pfl's own cohort sampling is fixed-size: ``SimulatedBackend`` asks the training set
  for ``train_cohort_size`` users, and ``FederatedDataset`` draws each from its
  ``user_sampler`` (``get_user_sampler("random")``: uniformly *with replacement*;
  ``"minimize_reuse"``: round-robin over the ids) — its accountant nevertheless assumes
  Poisson sampling at ``sampling_probability``. So that pfl's run is the mechanism its
  accountant accounts (and privsim's), the benchmark gives pfl a ``FederatedDataset``
  whose ``get_cohort`` ignores the cohort size and yields a Poisson(q) draw of the users
  (NumPy, seeded per seed and round); a second pfl row uses pfl's stock sampler
  (fixed 20 a round, uniform with replacement) for the timing. FedAvg's
  ``process_aggregated_statistics`` is overridden to divide the noisy sum by q·N = 20
  (pfl divides by the summed user weights, the realised cohort size; the stock-sampler
  row keeps pfl's own average, which is /20 too). pfl's ``Dataset.iter`` slices in order,
  so each user's records are shuffled per round before pfl sees them, as privsim does.
  float32 tensors (pfl's and torch's default); privsim computes in float64.
- privsim: ``protocol = "fedlearn"``, ``training.aggregation = "trusted"`` (a curator
  adds σ = z·C to the clipped sum), ``sampling = "poisson"``, ``rate = 0.2``,
  ``privacy.neighbour = "add_remove"``, ``noise_multiplier = 1``, ``privacy.epsilon =
  100`` (a ceiling only; z is fixed), ``dataset.source = "digits"``, ``model = "softmax"``.
  Its ε is ``privacy.achieved_epsilon``: the ledger's PLD composition of
  ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` over the rounds.
- Referee: dp-accounting's ``PLDAccountant`` (default discretisation) composing
  ``PoissonSampledDpEvent(0.2, GaussianDpEvent(1.0))`` 20 times, ε at δ = 1e-5.

Figures per system, over the seeds (``--seeds``):

- seconds per round: the median over all seeds' rounds after the first, of the wall time
  of a whole round. pfl: between successive ``after_central_iteration`` callbacks (the
  first from ``on_train_begin``): sampling, local training, clipping, summing, noise, the
  server step, and the callback's evaluation of the test set (as privsim's rounds
  include theirs). privsim: its own ``curves[r]["wall_seconds"]`` (sampling, ledger,
  local training, the round's world, server step, evaluation). Set-up not counted.
- test accuracy of the final model: median and range over the seeds.
- ε at δ = 1e-5 after the rounds, and its relative difference to the referee's.

Measured 2026-11-26 08:46 UTC with
``/tmp/torch-venv/bin/python benchmarks/bench_fedlearn_pfl.py --seeds 1,2,3 --rounds 20``
(seeds 1, 2, 3; 20 rounds; Python 3.11.7, torch 2.13 CPU, pfl 0.6.0, dp-accounting
0.5.1; 2 shared cores, load average 1.5; total 11 s):

| system | sampling | s / round (median) | × pfl's time | test accuracy, median [range] | ε (δ = 1e-5) | ε vs referee |
|---|---|---:|---:|---|---:|---:|
| pfl 0.6.0 | Poisson q = 0.2 (benchmark's) | 0.0117 | 1.00× | 0.866 [0.864, 0.872] | 6.6161 (PLDPrivacyAccountant) | +0.00% |
| pfl 0.6.0, stock sampler | fixed 20, uniform with replacement | 0.0133 | 1.13× | 0.872 [0.858, 0.872] | pfl's ε as above (its accountant assumes Poisson; this run is not) | — |
| privsim trusted | Poisson q = 0.2 (add/remove) | 0.0100 | 0.85× | 0.861 [0.847, 0.866] | 6.6161 | +0.00% |
| pfl RDPPrivacyAccountant | Poisson q = 0.2 | — | — | — | 7.5205 | +13.67% |
| pfl PRVPrivacyAccountant | Poisson q = 0.2 | — | — | — | 6.6162 | +0.00% |
| dp-accounting PLDAccountant (referee) | Poisson q = 0.2 | — | — | — | 6.6161 | — |

ε: privsim 6.61613671950473, pfl PLD 6.6161367195111955, referee 6.61613671950473
(relative difference privsim vs pfl ~1e-12). privsim / pfl time per round 0.85×.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import logging
import math
import os
import platform
import shlex
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CLIENTS = 100
RATE = 0.2
COHORT = round(RATE * CLIENTS)
CLIP = 1.0
NOISE = 1.0
EPOCHS = 1
BATCH = 16
CLIENT_LR = 0.5
SERVER_LR = 1.0
DELTA = 1e-5


@dataclass(slots=True)
class Measured:
    """What one system measured over the seeds."""

    system: str
    sampling: str
    rounds: dict[int, list[float]] = field(default_factory=dict)  # seed -> per-round walls
    accuracy: dict[int, float] = field(default_factory=dict)
    epsilon: float = float("nan")
    eps_source: str = ""

    @property
    def per_round(self) -> float:
        steady = [w for walls in self.rounds.values() for w in (walls[1:] or walls)]
        return statistics.median(steady) if steady else float("nan")


def scenario(seed: int, rounds: int) -> dict[str, Any]:
    return {
        "name": "bench-fedlearn-pfl",
        "seed": seed,
        "protocol": "fedlearn",
        "population": {"clients": CLIENTS},
        "privacy": {
            "epsilon": 100.0,  # z is fixed; the budget is only a ceiling (ε is reported)
            "delta": DELTA,
            "neighbour": "add_remove",
            "on_overspend": "warn",
        },
        "training": {
            "rounds": rounds,
            "aggregation": "trusted",
            "sampling": "poisson",
            "rate": RATE,
            "clip_norm": CLIP,
            "noise_multiplier": NOISE,
            "local_epochs": EPOCHS,
            "local_batch": BATCH,
            "client_lr": CLIENT_LR,
            "server_optimizer": "fedavg",
            "server_lr": SERVER_LR,
        },
        "dataset": {"source": "digits", "partition": "iid"},
        "model": {"name": "softmax"},
        "network": {"encryption": "none"},
    }


def run_privsim(seed: int, rounds: int) -> tuple[list[float], float, float]:
    """One training run: per-round wall seconds, final test accuracy, ε."""
    from privsim.api import run
    from privsim.scenarios import scenario_from_dict

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run(scenario_from_dict(scenario(seed, rounds))).to_dict()
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

    return client_records(scenario_from_dict(scenario(seed, 1)), seed)


def pfl_available() -> bool:
    return importlib.util.find_spec("pfl") is not None and importlib.util.find_spec("torch")


def pfl_epsilons(rounds: int) -> dict[str, float]:
    """pfl's accountants' ε for (q, z, rounds, δ)."""
    from pfl.privacy import PLDPrivacyAccountant, PRVPrivacyAccountant, RDPPrivacyAccountant

    common = {
        "num_compositions": rounds,
        "sampling_probability": RATE,
        "mechanism": "gaussian",
        "noise_parameter": NOISE,
        "delta": DELTA,
    }
    return {
        "PLD": float(PLDPrivacyAccountant(**common).epsilon),
        "RDP": float(RDPPrivacyAccountant(**common).epsilon),
        "PRV": float(PRVPrivacyAccountant(**common).epsilon),
    }


def referee_epsilon(rounds: int) -> float:
    """dp-accounting's PLD accountant, directly."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant()
    event = dp_accounting.PoissonSampledDpEvent(RATE, dp_accounting.GaussianDpEvent(NOISE))
    acc.compose(event, rounds)
    return float(acc.get_epsilon(DELTA))


def run_pfl(seed: int, rounds: int, *, poisson: bool) -> tuple[list[float], float, Any]:
    """``rounds`` rounds of pfl's central-DP FedAvg: per-round walls, test accuracy, the
    accountant (pfl's ε)."""
    import numpy as np
    import torch
    from pfl.aggregate.simulate import SimulatedBackend
    from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
    from pfl.callback.base import TrainingProcessCallback
    from pfl.data.dataset import Dataset
    from pfl.data.federated_dataset import FederatedDataset
    from pfl.data.sampling import get_user_sampler
    from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams
    from pfl.metrics import Metrics, Weighted
    from pfl.model.pytorch import PyTorchModel
    from pfl.privacy import (
        CentrallyAppliedPrivacyMechanism,
        GaussianMechanism,
        PLDPrivacyAccountant,
    )

    torch.set_num_threads(1)
    np.random.seed(seed)  # noqa: NPY002 (pfl's samplers and seeds draw from the global state)
    torch.manual_seed(seed)
    parts, (X_test, y_test) = partition(seed)
    parts32 = [(X.astype(np.float32), y.astype(np.int64)) for X, y in parts]
    X_t, y_t = torch.from_numpy(X_test.astype(np.float32)), torch.from_numpy(y_test)
    d, k = parts32[0][0].shape[1], 10

    class Softmax(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(d, k)
            torch.nn.init.zeros_(self.linear.weight)
            torch.nn.init.zeros_(self.linear.bias)

        def forward(self, x: Any) -> Any:
            return self.linear(x)

        def loss(self, x: Any, y: Any) -> Any:
            return torch.nn.functional.cross_entropy(self(x), y.long())  # pfl's tensors are float32

        def metrics(self, x: Any, y: Any) -> dict[str, Any]:
            with torch.no_grad():
                correct = float((self(x).argmax(dim=1) == y.long()).sum())
            return {"accuracy": Weighted(correct, len(y))}

    shuffles = np.random.default_rng([seed, 0xF1])
    round_no = [0]

    def make_dataset(uid: int) -> Any:
        X, y = parts32[uid]
        perm = shuffles.permutation(y.size)
        return Dataset((X[perm], y[perm]), user_id=uid)

    class PoissonUsers(FederatedDataset):  # type: ignore[misc]
        """Each user independently with probability q: the cohort pfl's accountant
        accounts (``cohort_size`` is ignored)."""

        def get_cohort(self, cohort_size: int) -> Any:
            rng = np.random.default_rng([seed, round_no[0], 0x9015])
            for uid in np.flatnonzero(rng.random(CLIENTS) < RATE):
                yield make_dataset(int(uid)), int(rng.integers(2**32))

    user_ids = list(range(CLIENTS))
    if poisson:
        train = PoissonUsers(make_dataset, get_user_sampler("random", user_ids))
    else:
        train = FederatedDataset(make_dataset, get_user_sampler("random", user_ids))
    val = FederatedDataset(make_dataset, get_user_sampler("random", user_ids))

    accountant = PLDPrivacyAccountant(
        num_compositions=rounds,
        sampling_probability=RATE,
        mechanism="gaussian",
        noise_parameter=NOISE,
        delta=DELTA,
    )
    mechanism = CentrallyAppliedPrivacyMechanism(
        GaussianMechanism.from_privacy_accountant(accountant=accountant, clipping_bound=CLIP)
    )
    backend = SimulatedBackend(training_data=train, val_data=val, postprocessors=[mechanism])
    net = Softmax()
    model = PyTorchModel(
        model=net,
        local_optimizer_create=torch.optim.SGD,
        central_optimizer=torch.optim.SGD(net.parameters(), lr=SERVER_LR),
    )

    class FixedDenominator(FederatedAveraging):  # type: ignore[misc]
        """The noisy sum over q·N, as privsim (and McMahan et al. 2018)."""

        def process_aggregated_statistics(
            self, central_context: Any, aggregate_metrics: Any, model: Any, statistics: Any
        ) -> Any:
            statistics.reweight(statistics.weight / COHORT)  # values × 1/(q·N)
            return model.apply_model_update(statistics)

    walls: list[float] = []
    accuracy = [float("nan")]
    mark = [0.0]

    class Clock(TrainingProcessCallback):  # type: ignore[misc]
        def on_train_begin(self, *, model: Any) -> Any:
            mark[0] = time.perf_counter()
            return Metrics()

        def after_central_iteration(
            self, aggregate_metrics: Any, model: Any, *, central_iteration: int
        ) -> Any:
            with torch.no_grad():
                accuracy[0] = float((net(X_t).argmax(dim=1) == y_t).float().mean())
            now = time.perf_counter()
            walls.append(now - mark[0])
            mark[0] = now
            round_no[0] += 1
            return False, Metrics()

    algorithm = FixedDenominator() if poisson else FederatedAveraging()
    algorithm.run(
        algorithm_params=NNAlgorithmParams(
            central_num_iterations=rounds,
            evaluation_frequency=rounds + 1,
            train_cohort_size=COHORT,
            val_cohort_size=0,
        ),
        backend=backend,
        model=model,
        model_train_params=NNTrainHyperParams(
            local_num_epochs=EPOCHS, local_learning_rate=CLIENT_LR, local_batch_size=BATCH
        ),
        model_eval_params=NNEvalHyperParams(local_batch_size=None),
        callbacks=[Clock()],
        send_metrics_to_platform=False,
    )
    return walls, accuracy[0], accountant


def _spread(values: list[float], fmt: str) -> str:
    if not values:
        return "—"
    mid = format(statistics.median(values), fmt)
    return mid if len(values) == 1 else f"{mid} [{min(values):{fmt}}, {max(values):{fmt}}]"


def table(rows: list[Measured], referee: float, base: Measured | None) -> str:
    lines = [
        "| system | sampling | s / round (median) | × pfl's time | test accuracy, median "
        "[range] | ε (δ = 1e-5) | ε vs referee |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for m in rows:
        ratio = "—" if base is None or not m.rounds else f"{m.per_round / base.per_round:.2f}×"
        if not math.isfinite(m.epsilon):
            lines.append(
                f"| {m.system} | {m.sampling} | {m.per_round:.4f} | {ratio} "
                f"| {_spread(list(m.accuracy.values()), '.3f')} | pfl's ε as above "
                "(its accountant assumes Poisson; this run is not) | — |"
            )
            continue
        rel = (m.epsilon - referee) / referee
        lines.append(
            f"| {m.system} | {m.sampling} "
            f"| {m.per_round:.4f} | {ratio} | {_spread(list(m.accuracy.values()), '.3f')} "
            f"| {m.epsilon:.4f}{m.eps_source} | {rel:+.2%} |"
            if m.rounds
            else f"| {m.system} | {m.sampling} | — | — | — | {m.epsilon:.4f}{m.eps_source} "
            f"| {rel:+.2%} |"
        )
    lines.append(
        f"| dp-accounting PLDAccountant (referee) | Poisson q = {RATE:g} | — | — | — "
        f"| {referee:.4f} | — |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    parser.add_argument("--rounds", type=int, default=20, help="training rounds (>= 2)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    rounds = max(2, args.rounds)
    have_pfl = bool(pfl_available())
    logging.getLogger("absl").setLevel(logging.ERROR)  # RDP orders that do not converge
    warnings.filterwarnings("ignore", category=UserWarning, module="pfl")
    if not have_pfl:
        print("note: pfl (and torch) are not installed here; only privsim's side runs.\n")
    started = time.perf_counter()
    pfl_p = Measured(system="pfl 0.6.0", sampling=f"Poisson q = {RATE:g} (benchmark's)")
    pfl_f = Measured(
        system="pfl 0.6.0, stock sampler",
        sampling=f"fixed {COHORT}, uniform with replacement",
    )
    ours = Measured(system="privsim trusted", sampling=f"Poisson q = {RATE:g} (add/remove)")
    eps_ours: list[float] = []
    for seed in seeds:
        if have_pfl:
            for m, poisson in ((pfl_p, True), (pfl_f, False)):
                walls, acc, accountant = run_pfl(seed, rounds, poisson=poisson)
                m.rounds[seed], m.accuracy[seed] = walls, acc
                m.epsilon = float(accountant.epsilon)
                print(
                    f"seed {seed} {m.system} ({m.sampling}): median "
                    f"{statistics.median(walls[1:] or walls):.4f} s, accuracy {acc:.3f}",
                    flush=True,
                )
        walls, acc, eps = run_privsim(seed, rounds)
        ours.rounds[seed], ours.accuracy[seed] = walls, acc
        eps_ours.append(eps)
        print(
            f"seed {seed} privsim: median {statistics.median(walls[1:] or walls):.4f} s, "
            f"accuracy {acc:.3f}, ε {eps:.4f}",
            flush=True,
        )
    ours.epsilon = statistics.median(eps_ours)
    if len(set(eps_ours)) > 1:
        ours.eps_source = f" (seeds' range {min(eps_ours):.4f}–{max(eps_ours):.4f})"
    referee = referee_epsilon(rounds)
    extra: list[Measured] = []
    if have_pfl:
        pfl_f.epsilon = float("nan")  # the same accountant: reported on the Poisson row
        pfl_f.eps_source = ""
        others = pfl_epsilons(rounds)
        pfl_p.eps_source = " (PLDPrivacyAccountant)"
        for name in ("RDP", "PRV"):
            extra.append(
                Measured(
                    system=f"pfl {name}PrivacyAccountant",
                    sampling=f"Poisson q = {RATE:g}",
                    epsilon=others[name],
                )
            )
    took = time.perf_counter() - started
    rows = ([pfl_p, pfl_f] if have_pfl else []) + [ours] + extra
    out = table(rows, referee, pfl_p if have_pfl else None)
    print("\n" + out)
    if have_pfl:
        ratio = ours.per_round / pfl_p.per_round
        rel = abs(ours.epsilon - pfl_p.epsilon) / pfl_p.epsilon
        print(f"\nε: privsim {ours.epsilon!r}, pfl PLD {pfl_p.epsilon!r}, referee {referee!r}")
        print(
            f"privsim / pfl time per round: {ratio:.2f}× (target <= 2×: "
            f"{'met' if ratio <= 2 else 'NOT met'}); |ε_privsim − ε_pfl| / ε_pfl = "
            f"{rel:.3%} (target <= 1%: {'met' if rel <= 0.01 else 'NOT met'})"
        )
    command = " ".join(
        [shlex.quote(sys.executable), "benchmarks/bench_fedlearn_pfl.py"]
        + [shlex.quote(a) for a in sys.argv[1:]]
    )
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(
        f"\nMeasured {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} with\n"
        f"    {command}\n"
        f"seeds {', '.join(map(str, seeds))}; {rounds} rounds; Python "
        f"{platform.python_version()}, {os.cpu_count()} cores (shared; load average "
        f"{load[0]:.1f} at the end); total {took:.0f} s."
    )


if __name__ == "__main__":
    main()
