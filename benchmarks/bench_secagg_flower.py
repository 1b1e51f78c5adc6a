"""SecAgg+ side by side: Flower's SecAggPlusWorkflow in its simulation engine vs privsim.

    /tmp/flwr-venv/bin/python benchmarks/bench_secagg_flower.py            # N = 10, 50, 100
    /tmp/flwr-venv/bin/python benchmarks/bench_secagg_flower.py --large    # + privsim at 10^4
    python benchmarks/bench_secagg_flower.py --large   # privsim only, with a note, without Flower

Flower logs a traceback on stderr for each deliberately dropped client (add 2>/dev/null).

Flower lives in an optional extra, installed in its own virtual environment so the
project's stays clean (never in CI)::

    python3 -m venv /tmp/flwr-venv && /tmp/flwr-venv/bin/pip install -e '.[flower]'

Both sides run in this one process, one N after the other (Flower then privsim), so they
see the same load on a shared machine. For each N both run SecAgg+ (Bell et al., CCS
2020) with the same vector length d, the same share count k + 1 (k the Harary degree
privsim chooses for 10% dropout and 10% corruption; k is even so k + 1 is odd, the
parity Flower needs at N >= 50), the same reconstruction threshold t, and the same
clients dropped: the first ⌊p·N⌋ clients drop after sharing their keys, before sending
their masked input, so the server must reconstruct their pairwise mask keys (privsim:
``faults.crashes`` at the time the server closes ShareKeys; Flower: a client mod that
fails those nodes' ``collect_masked_vectors`` message). Clients offline from the start
are not used: Flower 1.41's SecAgg+ client then fails in its unmask stage (KeyError on
the dropped node's share) and the round aborts.

Figures per N and engine:

- wall and CPU seconds per aggregation round: Flower runs ``--rounds`` rounds of
  ``DefaultWorkflow(fit_workflow=SecAggPlusWorkflow(...))`` (FedAvg, no evaluation) in
  the Ray-backed simulation runtime; each round is timed around the workflow call and the
  table gives the median of the rounds after the first (the first warms up the Ray
  actors; the Ray start-up itself is not counted, nor the benchmark's own byte counting
  and process-tree reading inside the round). CPU time is that of this process and all
  its descendants (Ray's GCS, raylet and workers) over the round, read with psutil.
  Flower's simulation grid polls for replies every 0.1 s (``InMemoryGrid``'s default
  ``pull_interval``), so at small N its round times come in steps of about 0.1 s (at
  N = 10: 0.66, 0.76, 0.96 s…): the default of 6 rounds takes the median of 5, not of 2.
  privsim simulates a round (``privsim.protocols.secagg.run.simulate``, the world and
  every key built anew each time) max(``--rounds`` − 1, 20) times after an untimed
  one, and the table gives the median, as for Flower (at N = 10^4, one timed round);
  its CPU time is this process's.
- bytes per client: Flower's are the serialized record dicts (protobuf ``ByteSize``) of
  the messages the server sends to and receives from each node in the four stages, summed
  per node and averaged over the nodes that took part, the dropped ones included (in Flower the clients' encrypted
  shares travel through the server, so this is all a client sends and receives);
  privsim's are the payload sizes of its typed messages (``Communication.of_world``),
  channel encryption off on both sides (each protocol's own AES-GCM on the shares is on).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

SIZES = (10, 50, 100)
#: Timed privsim rounds per N up to 1,000 (a round takes milliseconds: a median of two
#: would be noise; Flower's rounds take seconds and are given by ``--rounds``).
PRIVSIM_ROUNDS = 20
LARGE = 10_000
TARGET_DROPOUT = 0.1
TARGET_CORRUPTION = 0.1


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One configuration both engines run: N clients, vector length d, Harary degree k,
    threshold t, and the clients offline from the start."""

    n: int
    d: int
    degree: int
    threshold: int
    dropped: tuple[int, ...]

    @property
    def shares(self) -> int:
        return self.degree + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """What one engine measured for one cell."""

    engine: str
    wall_s: float
    cpu_s: float
    client_sent: float
    client_recv: float
    status: str
    rounds: tuple[float, ...] = field(default=())


def _scenario(cell: Cell, crash_at: float = 0.0) -> Any:
    from privsim.scenarios import scenario_from_dict

    return scenario_from_dict(
        {
            "name": f"bench-flower-{cell.n}-{cell.d}",
            "seed": 1,
            "protocol": "secagg_plus",
            "population": {"clients": cell.n},
            "privacy": {"epsilon": 1.0, "delta": 1e-5},
            "secagg": {
                "dimension": cell.d,
                "mean": 0.3,
                "modulus_bits": 32,
                "fraction_bits": 16,
                "target_dropout": TARGET_DROPOUT,
                "target_corruption": TARGET_CORRUPTION,
                "degree": cell.degree,
                "threshold": cell.threshold,
            },
            "faults": {"crashes": [[f"client-{i}", crash_at] for i in cell.dropped]},
            "network": {"encryption": "none"},
        }
    )


def make_cell(n: int, d: int, dropout: float) -> Cell:
    """privsim's (k, t) for N clients (Bell et al. parameter choice), k capped at N − 1."""
    from privsim.kit.secagg.graph import choose_parameters

    found = choose_parameters(
        n,
        dropout=TARGET_DROPOUT,
        corruption=TARGET_CORRUPTION,
        security_bits=40,
        correctness_bits=20,
        degree=0,
        threshold=0,
        complete=False,
    )
    if found is None:  # small N: the whole population, t a strict majority of k + 1
        degree = n - 1 if (n - 1) % 2 == 0 else n - 2
        threshold = (degree + 1) // 2 + 1
    else:
        degree, threshold = found.degree, found.threshold
    return Cell(
        n=n, d=d, degree=degree, threshold=threshold, dropped=tuple(range(int(dropout * n)))
    )


def run_privsim(cell: Cell, rounds: int = 2, *, warm_up: bool = True) -> Timing:
    """``rounds`` timed rounds of privsim's SecAgg+ after an untimed one (the same
    statistic as Flower's: the median of the rounds after a warm-up; without
    ``warm_up``, the untimed probe below is the only one before them)."""
    from privsim.kit.result import Communication
    from privsim.protocols.secagg.run import SERVER, simulate

    # The dropped clients crash when the server closes ShareKeys: their shares are
    # out, their masked inputs never leave (read off an untimed run without faults).
    probe = simulate(_scenario(dataclasses.replace(cell, dropped=())))
    scenario = _scenario(cell, crash_at=probe.outcome.closed_at[1])
    sim = simulate(scenario) if warm_up else probe  # the warm-up round, untimed
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(max(1, rounds)):
        started, cpu = time.perf_counter(), time.process_time()
        sim = simulate(scenario)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    comm = Communication.of_world(sim.world, output_party=SERVER)
    client = comm.roles["client"]
    # the mean over all N clients, the dropped ones included (as on Flower's side)
    return Timing(
        engine="privsim",
        wall_s=statistics.median(walls),
        cpu_s=statistics.median(cpus),
        client_sent=client["bytes_sent_mean"],
        client_recv=client["bytes_received_mean"],
        status="released" if sim.outcome.ok else str(sim.outcome.abort),
        rounds=tuple(walls),
    )


def flower_available() -> bool:
    return importlib.util.find_spec("flwr") is not None


def _tree_cpu() -> float:
    """CPU seconds of this process and all its live descendants (Ray's processes)."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        total += t.user + t.system
    return total


def run_flower(cell: Cell, rounds: int) -> Timing:
    """``rounds`` rounds of Flower's SecAgg+ workflow in its simulation runtime."""
    import logging

    import numpy as np
    from flwr.client import ClientApp, NumPyClient
    from flwr.client.mod import secaggplus_mod
    from flwr.common import Context, Message, ndarrays_to_parameters
    from flwr.common.logger import FLOWER_LOGGER as flwr_logger
    from flwr.common.secure_aggregation.secaggplus_constants import (
        RECORD_KEY_CONFIGS,
        Key,
        Stage,
    )
    from flwr.common.serde import recorddict_to_proto
    from flwr.server import Grid, LegacyContext, ServerApp, ServerConfig
    from flwr.server.strategy import FedAvg
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
    from flwr.simulation import run_simulation

    flwr_logger.setLevel(logging.WARNING)
    dropped = frozenset(cell.dropped)

    class Vector(NumPyClient):  # type: ignore[misc]
        def __init__(self, pid: int) -> None:
            self.value = np.random.default_rng(pid).normal(0.3, 0.1, size=cell.d)

        def fit(self, parameters: Any, config: Any) -> Any:
            return [self.value.astype(np.float32)], 1, {}

    def client_fn(context: Context) -> Any:
        return Vector(int(context.node_config["partition-id"])).to_client()

    def offline(msg: Message, ctxt: Context, call_next: Callable[..., Message]) -> Message:
        configs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
        stage = configs.get(Key.STAGE) if configs is not None else None
        if (
            stage == Stage.COLLECT_MASKED_VECTORS
            and int(ctxt.node_config["partition-id"]) in dropped
        ):
            raise ConnectionError("client dropped before sending its masked input")
        return call_next(msg, ctxt)

    sent: dict[int, int] = defaultdict(int)  # server -> node, i.e. what the node receives
    recv: dict[int, int] = defaultdict(int)  # node -> server, i.e. what the node sends
    walls: list[float] = []
    cpus: list[float] = []
    counting = [0.0, 0.0]  # wall and CPU seconds spent counting bytes in this round

    class CountingGrid:
        """The grid the workflow sees: counts the serialized content of every message
        (the time it takes is the benchmark's, taken off Flower's round)."""

        def __init__(self, inner: Grid) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

        def _count(self, into: dict[int, int], node: int, content: Any) -> None:
            wall, cpu = time.perf_counter(), time.process_time()
            into[node] += recorddict_to_proto(content).ByteSize()
            counting[0] += time.perf_counter() - wall
            counting[1] += time.process_time() - cpu

        def send_and_receive(self, messages: Iterable[Message], **kw: Any) -> Any:
            messages = list(messages)
            for m in messages:
                self._count(sent, m.metadata.dst_node_id, m.content)
            replies = list(self._inner.send_and_receive(messages, **kw))
            for r in replies:
                if r.has_content():
                    self._count(recv, r.metadata.src_node_id, r.content)
            return replies

    secagg = SecAggPlusWorkflow(num_shares=cell.shares, reconstruction_threshold=cell.threshold)

    def timed_fit(grid: Any, context: Any) -> None:
        counting[:] = [0.0, 0.0]
        cpu = _tree_cpu()  # (reading the process tree is not part of the round)
        wall = time.perf_counter()
        secagg(CountingGrid(grid), context)
        wall = time.perf_counter() - wall
        cpu = _tree_cpu() - cpu
        walls.append(wall - counting[0])
        cpus.append(cpu - counting[1])

    server_app = ServerApp()

    @server_app.main()  # type: ignore[misc]
    def _main(grid: Grid, context: Context) -> None:
        strategy = FedAvg(
            fraction_fit=1.0,
            fraction_evaluate=0.0,
            min_fit_clients=cell.n - len(dropped),
            min_available_clients=cell.n,
            initial_parameters=ndarrays_to_parameters([np.zeros(cell.d, np.float32)]),
        )
        legacy = LegacyContext(
            context=context, config=ServerConfig(num_rounds=rounds), strategy=strategy
        )
        DefaultWorkflow(fit_workflow=timed_fit)(grid, legacy)

    client_app = ClientApp(client_fn=client_fn, mods=[offline, secaggplus_mod])
    run_simulation(
        server_app=server_app,
        client_app=client_app,
        num_supernodes=cell.n,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"logging_level": logging.ERROR, "log_to_driver": False},
        },
    )
    took = len(recv) or 1
    steady = walls[1:] or walls
    steady_cpu = cpus[1:] or cpus
    return Timing(
        engine="flower",
        wall_s=statistics.median(steady) if steady else float("nan"),
        cpu_s=statistics.median(steady_cpu) if steady_cpu else float("nan"),
        client_sent=sum(recv.values()) / took / max(len(walls), 1),
        client_recv=sum(sent[n] for n in recv) / took / max(len(walls), 1),
        status=f"{len(walls)} rounds" if walls else "no round finished",
        rounds=tuple(walls),
    )


def _row(cell: Cell, t: Timing) -> str:
    return (
        f"{t.engine:<8} {cell.n:>6} {cell.d:>6} {cell.shares:>6} {cell.threshold:>4} "
        f"{len(cell.dropped):>5} {t.wall_s:>9.4f} {t.cpu_s:>9.4f} {t.client_sent:>12.0f} "
        f"{t.client_recv:>12.0f}  {t.status}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dimension", type=int, default=100, help="vector length d")
    parser.add_argument(
        "--dropout",
        type=float,
        default=0.1,
        help="fraction of clients that drop after sharing their keys",
    )
    parser.add_argument("--rounds", type=int, default=6, help="Flower rounds per N (>= 2)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="N values")
    parser.add_argument("--large", action="store_true", help=f"also privsim at N = {LARGE}")
    args = parser.parse_args(argv)
    have_flower = flower_available()
    if not have_flower:
        print(
            "note: Flower is not installed in this interpreter; only privsim's side runs.\n"
            "      python3 -m venv /tmp/flwr-venv && /tmp/flwr-venv/bin/pip install -e "
            "'.[flower]'\n      then run this file with /tmp/flwr-venv/bin/python.\n"
        )
    head = (
        f"{'engine':<8} {'N':>6} {'d':>6} {'shares':>6} {'t':>4} {'drop':>5} "
        f"{'wall s/rd':>9} {'cpu s/rd':>9} {'client sent':>12} {'client recv':>12}  status"
    )
    print(head)
    print("-" * len(head))
    speedups: list[str] = []
    sizes = [int(s) for s in args.sizes.split(",") if s]
    for n in [*sizes, *([LARGE] if args.large else [])]:
        cell = make_cell(n, args.dimension, args.dropout)
        flower = None
        if have_flower and n <= 1000:
            flower = run_flower(cell, args.rounds)
            print(_row(cell, flower), flush=True)
        # (at N = 10^4 one round after the probe: each takes a while)
        big = n > 1000
        ours = run_privsim(
            cell, 1 if big else max(PRIVSIM_ROUNDS, args.rounds - 1), warm_up=not big
        )
        print(_row(cell, ours), flush=True)
        if flower is not None:
            speedups.append(
                f"N = {n}: privsim {flower.wall_s / ours.wall_s:.1f}x faster in wall time, "
                f"{flower.cpu_s / ours.cpu_s:.1f}x in CPU time per round"
            )
    if speedups:
        print("\n" + "\n".join(speedups))


if __name__ == "__main__":
    main()
