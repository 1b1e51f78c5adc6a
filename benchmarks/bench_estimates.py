"""How close validation's estimates are: estimated against measured wall time and peak
memory for the shipped scenarios and a few sizes (one core, one run each).

    python benchmarks/bench_estimates.py

The estimates exist to refuse runs that cannot finish or fit; a ratio within a few
times either way is what they promise.
"""

from __future__ import annotations

import time
import tracemalloc
import warnings

from privsim import registry
from privsim.api import run
from privsim.scenarios import builtin_scenario
from privsim.scenarios.checks import format_bytes, format_seconds

CASES = [
    ("quickstart", {}),
    ("quickstart", {"network.encryption": "none"}),
    ("quickstart", {"population.clients": 20000, "dca.tolerated": 2000}),
    ("blr", {"blr.dataset": "synthetic"}),
    ("bcd", {}),
    ("bcd", {"bcd.records": 20000, "bcd.iterations": 20}),
    ("race", {}),
]


def main() -> None:
    print(
        "| scenario | changes | estimated s | measured s | ratio | estimated memory | traced peak |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, changes in CASES:
        scenario = builtin_scenario(name).replace(changes) if changes else builtin_scenario(name)
        footprint = registry.get(scenario.protocol).footprint
        assert footprint is not None
        estimate = footprint(scenario)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            started = time.perf_counter()
            run(scenario)  # timed untraced: tracing slows Python several times
            seconds = time.perf_counter() - started
            tracemalloc.start()
            run(scenario)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        print(
            f"| {name} | {changes or '-'} | {format_seconds(estimate.seconds)} | "
            f"{format_seconds(seconds)} | {estimate.seconds / seconds:.2f} | "
            f"{format_bytes(estimate.bytes)} | {format_bytes(peak)} |"
        )


if __name__ == "__main__":
    main()
