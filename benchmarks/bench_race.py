"""RACE sketches on skin (245,057 × 3, L2 LSH bandwidth 5.0): time to build the private
sketch and per query (batched), at the two sizes the authors' code was timed at, and the
Bernstein and Fourier function releases side by side on the same machine; memory
while streaming 10⁷ synthetic points; KDE error over several hash seeds. Needs
``PRIVSIM_DATA_DIR``.

    python benchmarks/bench_race.py
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from privsim.data.registry import load_dataset
from privsim.protocols.race.baselines import BernsteinRelease, FourierRelease
from privsim.protocols.race.lsh import L2Hash
from privsim.protocols.race.private import release
from privsim.protocols.race.sketch import RaceSketch

#: The authors' public code, run on this 2-core machine over all of skin.
AUTHORS = {(80, 50): (6.8, 39.0), (1000, 1000): (87.0, 940.0)}  # sketch s, µs per query


def _exact_kde(x: np.ndarray, q: np.ndarray, fam: L2Hash) -> np.ndarray:
    out = np.zeros(q.shape[0])
    for lo in range(0, x.shape[0], 20_000):
        out += fam.kernel(x[lo : lo + 20_000], q).sum(axis=0)
    return out / x.shape[0]


def main() -> None:
    skin = load_dataset("skin").X
    rng = np.random.default_rng(2021)
    held_out = rng.choice(skin.shape[0], 2000, replace=False)
    queries = skin[held_out] + rng.uniform(-0.5, 0.5, size=(2000, 3))
    print(
        "| R | W | build private sketch (s) | authors (s) | speed-up | query (µs, batched) | authors (µs) | speed-up |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    with threadpool_limits(1):
        for (rows, width), (a_sketch, a_query) in AUTHORS.items():
            fam = L2Hash.draw(rows, 3, 5.0, np.random.default_rng(1))
            started = time.perf_counter()
            sketch = RaceSketch(fam, width).add(skin)
            private, _ = release(sketch, 1.0, np.random.default_rng(2))
            build = time.perf_counter() - started
            private.query(queries[:10], normalise=True)
            started = time.perf_counter()
            private.query(queries, normalise=True)
            per_query = (time.perf_counter() - started) / queries.shape[0] * 1e6
            print(
                f"| {rows} | {width} | {build:.3f} | {a_sketch} | {a_sketch / build:.0f}× | "
                f"{per_query:.2f} | {a_query:g} | {a_query / per_query:.0f}× |"
            )

        # The function-release baselines on the same data and kernel (R = 80 functions
        # define the kernel; its density is what every method releases).
        fam = L2Hash.draw(80, 3, 5.0, np.random.default_rng(1))
        low, high = np.zeros(3), np.full(3, 256.0)
        print("\n| method | build private release (s) | query (µs, batched) |")
        print("|---|---:|---:|")
        for name, cls, size in (
            ("Bernstein, M = 8 (729 lattice values)", BernsteinRelease, 8),
            ("Fourier, K = 8 (4913 coefficients)", FourierRelease, 8),
        ):
            started = time.perf_counter()
            model = cls.build(skin, fam, size, low, high, 1.0, np.random.default_rng(5))
            build = time.perf_counter() - started
            started = time.perf_counter()
            model.query(queries)
            per_query = (time.perf_counter() - started) / queries.shape[0] * 1e6
            print(f"| {name} | {build:.1f} | {per_query:.1f} |")

        # Memory: stream 10^7 synthetic points in batches; peak traced memory stays at the
        # sketch plus one batch, whatever N.
        fam = L2Hash.draw(80, 3, 5.0, np.random.default_rng(3))
        print("\n| points streamed | peak traced memory (MB) | seconds |")
        print("|---:|---:|---:|")
        for total in (10**5, 10**6, 10**7):
            sketch = RaceSketch(fam, 1000)
            gen = np.random.default_rng(4)
            tracemalloc.start()
            started = time.perf_counter()
            for _ in range(total // 100_000):
                sketch.add(gen.uniform(0, 255, size=(100_000, 3)))
            seconds = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            print(f"| {total:,} | {peak:.1f} | {seconds:.2f} |")

        # KDE accuracy (R = 80, W = 50 as the authors' code): mean relative error of the
        # normalised estimate against the exact kernel density on the 2000 queries, over
        # 8 hash seeds, non-private and at ε = 1.
        print("\n| hash seed | non-private MRE | private (ε = 1) MRE |")
        print("|---:|---:|---:|")
        errs = []
        for seed in range(8):
            fam = L2Hash.draw(80, 3, 5.0, np.random.default_rng(100 + seed))
            truth = _exact_kde(skin, queries, fam)
            sketch = RaceSketch(fam, 50).add(skin)
            plain = np.mean(np.abs(sketch.query(queries, normalise=True) - truth) / truth)
            private, _ = release(sketch, 1.0, np.random.default_rng(200 + seed))
            noisy = np.mean(np.abs(private.query(queries, normalise=True) - truth) / truth)
            errs.append((plain, noisy))
            print(f"| {seed} | {plain:.4f} | {noisy:.4f} |")
        med = np.median(np.array(errs), axis=0)
        print(f"| median | {med[0]:.4f} | {med[1]:.4f} |")


if __name__ == "__main__":
    main()
