"""The secure-aggregation study's tables and crossover statistics
(benchmarks/secagg_figures.py) on a tiny synthetic store of both parts: medians with
intervals, the tests' verdicts, the crossover d and the release-rate test."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import secagg_figures
from privsim.studies.store import ResultStore

DROPOUTS = (0.0, 0.1, 0.3)


def _row(
    i: int,
    protocol: str,
    shares: str,
    n: int,
    d: int,
    p: float,
    r: int,
    *,
    client_bytes: float,
    sim_s: float,
    rmse: float,
    epsilon: float,
    released: bool = True,
    crashes: Any = (),
    servers: Any = (),
    clients: int = 0,
) -> dict[str, Any]:
    role = "server" if protocol.startswith("secagg") else "compute"
    return {
        "row_id": f"c{i}-r{r}",
        "cell": f"c{i}",
        "replication": r,
        "seed": 1000 * i + r,
        "status": "released" if released else "aborted",
        "abort_reason": "" if released else "agreement_incomplete",
        "protocol": protocol,
        "grid": {
            "population.clients": n,
            "data.dimension": d,
            "faults.absent": p,
            "dca.shares": shares,
            "faults.crashes": [list(c) for c in crashes],
            "threat.colluding_servers": list(servers),
            "threat.colluding_clients": clients,
        },
        "communication": {
            "roles": {
                "client": {
                    "bytes_sent_mean": client_bytes / 2,
                    "bytes_received_mean": client_bytes / 2,
                    "messages_sent_mean": 3.0,
                },
                role: {
                    "bytes_sent_mean": 10 * client_bytes,
                    "bytes_received_mean": 10 * client_bytes,
                    "messages_sent_mean": 3.0,
                },
            },
            "rounds": 3 if role == "compute" else 7,
            "duration": sim_s,
        },
        "timing": {"wall_seconds": 0.1},
        "accuracy": {"rmse": rmse},
        "privacy": {"achieved_epsilon": "inf" if np.isinf(epsilon) else epsilon},
    }


def _store(directory: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    with ResultStore(directory) as store:
        for row in rows:
            store.add(row)
    (directory / "study.json").write_text(json.dumps({"name": name}))
    return directory


@pytest.fixture(scope="module")
def df(tmp_path_factory: pytest.TempPathFactory) -> Any:
    rng = np.random.default_rng(7)
    root = tmp_path_factory.mktemp("secagg")
    scale, faults = [], []
    i = 0
    # part 1: bytes per client, DCA full = 24 d + 100, SecAgg+ = 26,000 + 8 d (±0.5%)
    for d in (10, 1000, 10_000):
        for p in DROPOUTS:
            for protocol, shares, cost in (
                ("dca", "full", 24 * d + 100),
                ("secagg_plus", "full", 26_000 + 8 * d),
            ):
                i += 1
                for r in range(3):
                    b = cost * (1 - p / 3) * (1 + rng.uniform(-0.005, 0.005))
                    scale.append(
                        _row(
                            i,
                            protocol,
                            shares,
                            100,
                            d,
                            p,
                            r,
                            client_bytes=b,
                            sim_s=10.0,
                            rmse=9.0,
                            epsilon=0.8,
                        )
                    )
    # part 2: no fault (DCA) and coalition (SecAgg+) rows, node loss, colluding servers
    for p in DROPOUTS:
        for protocol, shares, kw in (
            ("dca", "full", {}),
            ("secagg_plus", "full", {}),
            ("secagg_plus", "full", {"servers": ["server"], "clients": 100}),
        ):
            i += 1
            for r in range(10):
                faults.append(
                    _row(
                        i,
                        protocol,
                        shares,
                        1000,
                        100,
                        p,
                        r,
                        client_bytes=2500.0,
                        sim_s=(10.0 if protocol == "dca" else 30.0) + rng.uniform(0, 0.5),
                        rmse=9.0 + rng.normal(0, 0.5),
                        epsilon=(0.8 if protocol == "dca" else 1.0) + rng.uniform(0, 0.01),
                        **kw,
                    )
                )
        for shares, released in (("shamir", True), ("full", False)):
            i += 1
            for r in range(10):
                faults.append(
                    _row(
                        i,
                        "dca",
                        shares,
                        1000,
                        100,
                        p,
                        r,
                        client_bytes=2500.0,
                        sim_s=11.0,
                        rmse=9.0,
                        epsilon=0.8,
                        released=released,
                        crashes=[("compute-2", 0.0)],
                    )
                )
        for shares, eps in (("full", 0.8), ("shamir", np.inf)):
            i += 1
            for r in range(10):
                faults.append(
                    _row(
                        i,
                        "dca",
                        shares,
                        1000,
                        100,
                        p,
                        r,
                        client_bytes=2500.0,
                        sim_s=10.0,
                        rmse=9.0,
                        epsilon=eps + (rng.uniform(0, 0.01) if np.isfinite(eps) else 0),
                        servers=["compute-0", "compute-1"],
                    )
                )
    a = _store(root / "scale", "secure-aggregation", scale)
    b = _store(root / "faults", "secure-aggregation-faults", faults)
    return secagg_figures.frame(a, b)


def test_frame_reads_both_parts_into_blocks(df: Any) -> None:
    assert set(df["block"]) == {
        "scale",
        "no fault",
        "node loss",
        "servers collude",
        "servers + 10% clients",
    }
    assert len(df) == 9 * 2 * 3 + 3 * (3 + 2 + 2) * 10
    # an aborted run has neither accuracy nor ε
    aborted = df[~df["released"]]
    assert len(aborted) == 30 and aborted["epsilon"].isna().all() and aborted["rmse"].isna().all()


def test_table_gives_medians_with_intervals_and_release_counts(df: Any) -> None:
    text = secagg_figures.table(df)
    line = next(
        x
        for x in text.splitlines()
        if "| no fault | 1,000 | 100 | 10% | DCA full | 10 | yes |" in x
    )
    assert re.search(r"\| 10\.\d+ \[10\.\d+, 10\.\d+\] \|", line)  # simulated s with its CI
    lost = next(x for x in text.splitlines() if "| node loss | 1,000 | 100 | 0% | DCA full |" in x)
    assert "0/10 (agreement_incomplete)" in lost


def test_statistics_state_the_crossovers_with_their_tests(df: Any) -> None:
    text = secagg_figures.statistics(df)
    # bytes: DCA full below SecAgg+ at d = 10, above at d = 10^4; three strata of 3 v 3
    # give a two-sided p of 2/20^3 = 2.5e-4 per comparison, within Holm's bound here
    low = next(
        x for x in text.splitlines() if x.startswith("| N = 100, d = 10 | DCA full | SecAgg+ |")
    )
    high = next(
        x for x in text.splitlines() if x.startswith("| N = 100, d = 10,000 | DCA full | SecAgg+ |")
    )
    assert low.endswith("| a < b |") and high.endswith("| a > b |") and "9 v 9 (3 strata)" in low
    # 24 d + 100 = 26,000 + 8 d at d = 1,619 in linear terms; log-log interpolation between
    # d = 10^3 and 10^4 puts it a little higher
    found = re.findall(
        r"0% dropout: DCA full and SecAgg\+ cross at d = ([\d,]+) \[([\d,]+), ([\d,]+)\]", text
    )
    assert found, text
    point, lo, hi = (float(x.replace(",", "")) for x in found[0])
    assert 1500 < point < 2500 and lo <= point <= hi
    # completion time: DCA below SecAgg+ at every dropout (10 v 10, exact p = 2/C(20,10))
    rows = [x for x in text.splitlines() if "dropout | DCA full | SecAgg+ |" in x]
    assert any("a < b" in x for x in rows)
    # node loss: Shamir 10/10 against full 0/10, Fisher p = 1.1e-5, power 638/1024
    assert "| 0% dropout | DCA Shamir | DCA full | 10/10 | 0/10 | <0.001 | <0.001 | 0.62 |" in text
    # ε: colluding servers break Shamir 2-of-3 (∞) and not full shares
    eps = [
        x
        for x in text.splitlines()
        if x.startswith("| servers collude, 0% | DCA full | DCA Shamir |")
    ]
    assert eps and eps[0].endswith("| a < b |") and "| ∞ |" in eps[0]


def test_figures_are_drawn(df: Any, tmp_path: Path) -> None:
    paths = secagg_figures.figures(df, tmp_path)
    assert [p.name for p in paths] == [
        "secagg-bytes-per-client.png",
        "secagg-time.png",
        "secagg-faults-epsilon.png",
    ]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_readme_tables_give_intervals_per_design(df: Any) -> None:
    text = secagg_figures.readme_tables(df)
    assert "| N | d | DCA full | SecAgg+ |" in text
    # SecAgg+ sits 3 simulated rounds behind DCA: 30.x [30.x, 30.x] s
    line = next(x for x in text.splitlines() if x.startswith("| servers + 10% clients | SecAgg+ |"))
    assert re.search(r"\| 10/10 \| 30\.\d+ \[30\.\d+, 30\.\d+\] \|", line)
    assert "| node loss | DCA full | 0/10 |" in text


def test_passive_colluders_change_nothing_but_epsilon(df: Any) -> None:
    # the synthetic SecAgg+ rows with and without a coalition share their distributions
    # of bytes (equal), time and RMSE: no comparison may be shown
    text = secagg_figures.passive_check(df)
    rows = [
        x for x in text.splitlines() if x.startswith("| client_bytes") or x.startswith("| sim_s")
    ]
    assert len(rows) == 6 and not any(
        x.endswith("| a < b |") or x.endswith("| a > b |") for x in rows
    )


def test_replication_counts_are_read_from_the_rows(df: Any) -> None:
    """The labels state what was run: 3 per cost cell and 10 per fault cell in this
    store, and a range once cells differ."""
    scale = df[df["block"] == "scale"]
    assert secagg_figures._reps(scale) == "3 replications"
    assert secagg_figures._reps(df[df["block"] != "scale"]) == "10 replications"
    assert "part 1, 3 replications per dropout level" in secagg_figures.statistics(df)
    first = scale["design"].iloc[0]
    uneven = scale[~((scale["design"] == first) & (scale["replication"] > 0))]
    assert secagg_figures._reps(uneven) == "1–3 replications"
