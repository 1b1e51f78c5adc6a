"""Quickstart and engine benchmark: wall time, key-agreement time and peak memory per cell.
(The DCA grid of the paper's Table 1 is ``bench_table1.py``.)

    python benchmarks/bench_dca.py

Each cell runs in a fresh subprocess so its peak resident memory (ru_maxrss) is its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time

CELLS = {
    "engine-1e5-msgs": dict(kind="engine", messages=100_000),
    "quickstart": dict(kind="quickstart"),
}
QUICK = ("engine-1e5-msgs", "quickstart")


def _engine_cell(messages: int, encryption: str) -> dict:
    """Per-message overhead of the bus: 100 senders each send to one receiver."""
    from dataclasses import dataclass

    from privsim.sim.latency import LogNormalLatency
    from privsim.sim.messages import Message, message
    from privsim.sim.network import LinkSpec, NetworkModel
    from privsim.sim.world import World

    @message
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Tick(Message):
        n: int

    senders = 100
    per_sender = messages // senders
    world = World(
        seed=1,
        network=NetworkModel(LinkSpec(latency=LogNormalLatency(median=0.01, sigma=0.5))),
        encryption=encryption == "aes-gcm",
    )
    sink = world.add_party("sink", "server")

    def send(agent):
        for i in range(per_sender):
            agent.send("sink", Tick(n=i))
        yield from ()

    def receive(agent):
        yield from agent.receive_all(Tick, count=senders * per_sender, deadline=1e9)

    for s in range(senders):
        a = world.add_party(f"s{s}", "client")
        world.start(a, send(a))
    world.start(sink, receive(sink))
    t0 = time.perf_counter()
    world.run()
    wall = time.perf_counter() - t0
    n = len(world.trace)
    return {
        "wall_s": wall,
        "keys_s": world.channels.key_agreement_seconds,
        "messages": n,
        "us_per_message": 1e6 * (wall - world.channels.key_agreement_seconds) / n,
    }


def _run_cell(name: str, encryption: str) -> dict:
    spec = CELLS[name]
    if spec["kind"] == "engine":
        return _engine_cell(spec["messages"], encryption)
    from privsim.protocols.dca.run import simulate
    from privsim.scenarios import builtin_scenario_path, load_scenario

    sc = load_scenario(builtin_scenario_path("quickstart"))
    sc = dataclasses.replace(sc, network=dataclasses.replace(sc.network, encryption=encryption))
    t0 = time.perf_counter()
    sim = simulate(sc)
    wall = time.perf_counter() - t0
    assert sim.outcome.ok, sim.outcome
    n = len(sim.world.trace)
    keys = sim.world.channels.key_agreement_seconds
    return {
        "wall_s": wall,
        "keys_s": keys,
        "messages": n,
        "us_per_message": 1e6 * (wall - keys) / n,
    }


def _child(name: str, encryption: str) -> None:
    out = _run_cell(name, encryption)
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small cells only")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    names = QUICK if args.quick else tuple(CELLS)
    header = f"{'cell':<24}{'encryption':>11}{'wall s':>9}{'keys s':>9}{'msgs':>9}{'us/msg':>9}{'peak MiB':>10}"
    print(header)
    print("-" * len(header))
    for name in names:
        for enc in ("none", "aes-gcm"):
            proc = subprocess.Popen(
                [sys.executable, __file__, "--child", name, enc], stdout=subprocess.PIPE, text=True
            )
            _, status, usage = os.wait4(proc.pid, 0)
            out = proc.stdout.read() if proc.stdout else ""
            if status != 0:
                print(f"{name:<24}{enc:>11}  failed (status {status})")
                continue
            r = json.loads(out.strip().splitlines()[-1])
            peak = usage.ru_maxrss / 1024  # Linux reports KiB
            print(
                f"{name:<24}{enc:>11}{r['wall_s']:>9.2f}{r['keys_s']:>9.2f}{r['messages']:>9}"
                f"{r['us_per_message']:>9.1f}{peak:>10.0f}"
            )
    print(
        "\nwall s: whole cell (data, keys, protocol); keys s: X25519 + HKDF part of it;"
        " us/msg: (wall - keys) / messages."
    )


if __name__ == "__main__":
    main()
