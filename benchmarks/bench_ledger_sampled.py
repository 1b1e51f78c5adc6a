"""The ledger's cost of composing training rounds: sampled Gaussian rounds, equal (one
leaf self-composed) and distinct (dropouts differ round by round), charged one by one as
a training does and composed at the end.

    python benchmarks/bench_ledger_sampled.py

Each figure is the median of 3 runs in a fresh process (the ledger caches per-leaf
PLDs and RDP curves, so a second composition in one process is far cheaper).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CASES = {
    "200 equal Poisson rounds (TFF: q = 120/3383, z = 1.2), composed": "equal",
    "200 distinct Poisson rounds (z·√0.6 … z), composed": "distinct",
    "200 fixed-size rounds (100 of 10,000), distinct, composed": "fixed",
    "100 charges of the TFF round, budget checked at each": "charges",
}


def _case(name: str) -> float:
    import dp_accounting
    import numpy as np

    from privsim.sim.ledger import PrivacyLedger, epsilon_of
    from privsim.sim.sampling import Sampling

    q, z = 120 / 3383, 1.2
    started = time.perf_counter()
    if name == "equal":
        event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z))
        epsilon_of([dp_accounting.SelfComposedDpEvent(event, 200)], 1e-5)
    elif name == "distinct":
        zs = z * np.sqrt(np.linspace(0.6, 1.0, 200))
        epsilon_of(
            [
                dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(float(v)))
                for v in zs
            ],
            1e-5,
        )
    elif name == "fixed":
        zs = z * np.sqrt(np.linspace(0.6, 1.0, 200))
        sampling = Sampling.fixed(10_000, 100, "server")
        epsilon_of(
            [sampling.wrap(dp_accounting.GaussianDpEvent(float(v))) for v in zs],
            1e-5,
            neighbour="replace_one",
        )
    else:
        ledger = PrivacyLedger(10.0, 1e-5, neighbour="add_remove")
        sampling = Sampling.poisson(q, "server")
        for r in range(100):
            ledger.charge(f"round-{r}", dp_accounting.GaussianDpEvent(z), sampling=sampling)
    return time.perf_counter() - started


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(_case(sys.argv[2]))
        return
    print("| case | seconds (median of 3 fresh processes) |")
    print("|---|---:|")
    for label, name in CASES.items():
        runs = [
            float(
                subprocess.run(
                    [sys.executable, __file__, "--child", name],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
            )
            for _ in range(3)
        ]
        print(f"| {label} | {statistics.median(runs):.2f} |")


if __name__ == "__main__":
    main()
