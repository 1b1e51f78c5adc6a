"""Tables, crossover statistics and figures of the secure-aggregation comparison study.

    privsim sweep privsim/studies/secure-aggregation.toml --out /tmp/secagg-cmp
    privsim sweep privsim/studies/secure-aggregation-faults.toml --out /tmp/secagg-cmp-faults
    python benchmarks/secagg_figures.py /tmp/secagg-cmp /tmp/secagg-cmp-faults
    python benchmarks/secagg_figures.py /tmp/secagg-cmp /tmp/secagg-cmp-faults --figures docs/figures

Reads the studies' rows (part 1, scale; part 2, faults and coalitions) and prints, per
scenario (N, d, fault block) and client dropout, one line per design: replications,
release rate, and the medians with 95% percentile-bootstrap intervals of bytes per client
and per server, simulated completion time, wall time, RMSE of the released sum and the
achieved ε for the realised coalition; then the crossover statistics ("where each design
wins"), each comparison with its test, Holm-adjusted p-value and power. With
``--figures`` it draws ``secagg-*.png`` there.

Rows do not pair across designs (each cell's seeds come from its own coordinates), so
every comparison is unpaired: a Wilcoxon rank-sum test, stratified by dropout where a
claim spans the dropout levels, or Fisher's exact test for release rates
(:mod:`privsim.analysis.rank_tests`). Each claim's comparisons are one Holm family
(family-wise α = 0.05). Power is against a shift of 10% of the reference design's median
(release rates: 1.0 against 0.5).

"Server" is a DCA compute node (mean over the M nodes; DCA's aggregator only receives M
sums) or the SecAgg server. Wall times are per-row measurements on a shared, loaded
machine.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privsim.analysis.rank_tests import Alternative, holm, rank_sum_test, rate_test
from privsim.kit.stats import BOOTSTRAP_ENTROPY, bootstrap_median_ci
from privsim.sim.streams import stream_key

DESIGNS = ("DCA full", "DCA seeded", "DCA Shamir", "SecAgg", "SecAgg+")
COLOURS = dict(zip(DESIGNS, ("C0", "C1", "C2", "C3", "C4"), strict=True))
BLOCKS = ("scale", "no fault", "node loss", "servers collude", "servers + 10% clients")
DCA = ("DCA full", "DCA seeded", "DCA Shamir")
#: Power is computed against a shift of this share of the reference design's median.
EFFECT = 0.10
#: Stated true release rates for the power of Fisher's test (a, b).
RATES = (1.0, 0.5)
ALPHA = 0.05
#: Resamples behind each power estimate (a power of 0.8 is known to about ±0.03).
POWER_RESAMPLES = 200
#: Resamples behind each bootstrap interval of a crossover d.
CROSSOVER_RESAMPLES = 2000


def design(row: Any) -> str:
    if row["protocol"] == "secagg":
        return "SecAgg"
    if row["protocol"] == "secagg_plus":
        return "SecAgg+"
    shares = str(row.get("grid.dca.shares") or "full")
    return {"full": "DCA full", "seeded": "DCA seeded", "shamir": "DCA Shamir"}[shares]


def block(row: Any, part: str = "scale") -> str:
    """The fault block of a row; rows without a fault or coalition are "scale" in part 1
    and "no fault" in part 2 (``part`` = "faults")."""
    crashes = row.get("grid.faults.crashes")
    servers = row.get("grid.threat.colluding_servers")
    clients = row.get("grid.threat.colluding_clients") or 0
    if _given(crashes):
        return "node loss"
    if clients and float(clients) > 0:
        return "servers + 10% clients"
    if _given(servers):
        return "servers collude"
    return "no fault" if part == "faults" else "scale"


def _given(value: Any) -> bool:
    """A non-empty list field (rows hold lists, or their text after a round trip)."""
    return value is not None and str(value) not in ("[]", "()", "", "nan", "None")


def _server(row: Any, what: str) -> float:
    role = "server" if row["protocol"] in ("secagg", "secagg_plus") else "compute"
    value = row.get(f"communication.roles.{role}.{what}")
    return float(value) if value is not None and value == value else float("nan")


def _part(directory: Path) -> str:
    """The part a results directory holds: "faults" when its study's name ends so."""
    try:
        name = str(json.loads((directory / "study.json").read_text())["name"])
    except (OSError, ValueError, KeyError):
        return "scale"
    return "faults" if name.endswith("-faults") else "scale"


def frame(*directories: str | Path) -> Any:
    """One row per replication with the comparison's columns, over every results
    directory given."""
    import pandas as pd

    from privsim.studies.store import load

    parts = []
    for directory in directories:
        raw = load(directory)
        part = _part(Path(directory))
        reason = (
            raw["abort_reason"].fillna("").astype(str)
            if "abort_reason" in raw
            else pd.Series("", index=raw.index)
        )
        parts.append(
            pd.DataFrame(
                {
                    "design": raw.apply(design, axis=1),
                    "block": raw.apply(lambda r, p=part: block(r, p), axis=1),
                    "N": raw["grid.population.clients"].astype(int),
                    "d": raw["grid.data.dimension"].astype(int),
                    "dropout": raw["grid.faults.absent"].astype(float),
                    "replication": raw["replication"].astype(int),
                    "released": raw["status"] == "released",
                    "reason": reason,
                    "client_bytes": raw["communication.roles.client.bytes_sent_mean"]
                    + raw["communication.roles.client.bytes_received_mean"],
                    "client_msgs": raw["communication.roles.client.messages_sent_mean"],
                    "server_bytes": raw.apply(
                        lambda r: _server(r, "bytes_received_mean") + _server(r, "bytes_sent_mean"),
                        axis=1,
                    ),
                    "rounds": raw["communication.rounds"].astype(float),
                    "sim_s": raw["communication.duration"].astype(float),
                    "wall_s": raw["timing.wall_seconds"].astype(float),
                    "rmse": raw.get("accuracy.rmse", pd.Series(np.nan, index=raw.index)),
                    "epsilon": raw.get(
                        "privacy.achieved_epsilon", pd.Series(np.nan, index=raw.index)
                    ),
                }
            )
        )
    out = pd.concat(parts, ignore_index=True)
    # a run that released nothing has no accuracy and no ε to report
    out.loc[~out["released"], ["rmse", "epsilon"]] = float("nan")
    return out


# --- formatting ------------------------------------------------------------------------


def _num(x: float, digits: int = 3) -> str:
    if not x == x:
        return "–"
    if math.isinf(x):
        return "∞"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def ci(values: Any, name: tuple[Any, ...] = ()) -> str:
    """``median [lo, hi]`` with the 95% percentile-bootstrap interval (– when empty)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return "–"
    med = float(np.median(v)) if np.isfinite(v).all() else float(np.sort(v)[(v.size - 1) // 2])
    lo, hi = bootstrap_median_ci(v, name=name)
    if lo == hi == med:
        return _num(med)
    return f"{_num(med)} [{_num(lo)}, {_num(hi)}]"


def _p(p: float) -> str:
    if not p == p:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _sorted(df: Any) -> Any:
    return df.assign(
        _block=df["block"].map(BLOCKS.index), _design=df["design"].map(DESIGNS.index)
    ).sort_values(["_block", "N", "d", "dropout", "_design", "replication"])


def table(df: Any) -> str:
    """The Markdown comparison table: per cell, n replications, release rate, and
    median [95% CI] of each measure."""
    lines = [
        "| scenario | N | d | dropout | design | n | released | client B (sent+recv) "
        "| server B (sent+recv) | rounds | simulated s | wall s | RMSE | ε |",
        "|---|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, g in _sorted(df).groupby(["block", "N", "d", "dropout", "design"], sort=False):
        b, n, d, p, des = key
        k = int(g["released"].sum())
        released = "yes" if k == len(g) else f"{k}/{len(g)}"
        reasons = sorted({r for r in g.loc[~g["released"], "reason"] if r})
        if k < len(g) and reasons:
            released += f" ({', '.join(reasons)})"
        name = (b, n, d, p, des)
        lines.append(
            f"| {b} | {n:,} | {d:,} | {p:.0%} | {des} | {len(g)} | {released} | "
            f"{ci(g['client_bytes'], ('cb', *name))} | {ci(g['server_bytes'], ('sb', *name))} | "
            f"{_num(float(g['rounds'].median()))} | {ci(g['sim_s'], ('t', *name))} | "
            f"{ci(g['wall_s'], ('w', *name))} | {ci(g['rmse'], ('r', *name))} | "
            f"{ci(g['epsilon'], ('e', *name))} |"
        )
    return "\n".join(lines)


# --- crossover statistics --------------------------------------------------------------


def _strata(sub: Any, des: str, column: str, levels: Sequence[float]) -> list[Any]:
    return [
        sub.loc[(sub["design"] == des) & (sub["dropout"] == p), column].to_numpy(dtype=float)
        for p in levels
    ]


def compare(
    sub: Any,
    column: str,
    a: str,
    b: str,
    *,
    levels: Sequence[float],
    label: str,
    alternative: Alternative = "two-sided",
) -> dict[str, Any] | None:
    """Rank-sum test of ``column`` of design a against design b over the dropout
    ``levels`` (one stratum each); None when either design has no values. The power is
    against a shift of ``EFFECT`` × b's median."""
    xa, xb = _strata(sub, a, column, levels), _strata(sub, b, column, levels)
    if not any(len(x) for x in xa) or not any(len(x) for x in xb):
        return None
    # the reference is b's median, or a's where b's is infinite (ε of a broken design)
    base = [x[np.isfinite(x)] for x in (np.concatenate(xb), np.concatenate(xa))]
    finite = next((x for x in base if x.size), np.zeros(1))
    shift = EFFECT * abs(float(np.median(finite)))
    test = rank_sum_test(
        xa,
        xb,
        alternative=alternative,
        shift=shift,
        power_resamples=POWER_RESAMPLES,
        name=(column, label, a, b),
    )
    return {
        "where": label,
        "a": a,
        "b": b,
        "median_a": test.median_a,
        "median_b": test.median_b,
        "n": f"{test.n_a} v {test.n_b}" + (f" ({test.strata} strata)" if test.strata > 1 else ""),
        "p": test.p,
        "power": test.power,
        "shift": test.shift,
    }


def _family(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    adjusted = holm([r["p"] for r in rows])
    for r, q in zip(rows, adjusted, strict=True):
        r["p_holm"] = q
        if not q == q:
            r["verdict"] = "no test (no variation)"
        elif q < ALPHA:
            r["verdict"] = "a < b" if r["median_a"] < r["median_b"] else "a > b"
        else:
            r["verdict"] = "not shown"
    return rows


def _render(rows: list[dict[str, Any]], unit: Callable[[float], str] = _num) -> list[str]:
    out = [
        "| where | a | b | median a | median b | a / b | n | p | p (Holm) | power | verdict |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        finite = math.isfinite(r["median_a"]) and math.isfinite(r["median_b"])
        ratio = r["median_a"] / r["median_b"] if finite and r["median_b"] != 0 else float("nan")
        out.append(
            f"| {r['where']} | {r['a']} | {r['b']} | {unit(r['median_a'])} | "
            f"{unit(r['median_b'])} | {_num(ratio, 2)} | {r['n']} | {_p(r['p'])} | "
            f"{_p(r['p_holm'])} | {_num(r['power'], 2)} | {r['verdict']} |"
        )
    return out


def _cross(ds: Sequence[int], diff: Any) -> Any:
    """Per row of ``diff`` (log a − log b at each d of ``ds``), the d of the first sign
    change by log-log interpolation; NaN where the sign never changes."""
    out = np.full(diff.shape[0], np.nan)
    logd = np.log(np.asarray(ds, dtype=np.float64))
    for i in range(len(ds) - 1):
        hit = np.isnan(out) & (diff[:, i] * diff[:, i + 1] < 0)
        frac = diff[hit, i] / (diff[hit, i] - diff[hit, i + 1])
        out[hit] = np.exp(logd[i] + (logd[i + 1] - logd[i]) * frac)
        out[np.isnan(out) & (diff[:, i] == 0)] = ds[i]
    return out


def crossover_d(df: Any, a: str, b: str, n: int = 100) -> list[str]:
    """The d where design a's bytes per client meet design b's, by log-log interpolation
    between the two measured d that bracket the sign change, per dropout level; with a
    95% bootstrap interval (each design's replications resampled separately)."""
    sub = df[(df["block"] == "scale") & (df["N"] == n)]
    seq = np.random.SeedSequence(
        BOOTSTRAP_ENTROPY, spawn_key=stream_key("secagg-crossover", a, b, n)
    )
    rng = np.random.default_rng(seq)
    lines: list[str] = []
    for p in sorted(sub["dropout"].unique()):
        at = sub[sub["dropout"] == p]
        ds = sorted(set(at.loc[at["design"] == a, "d"]) & set(at.loc[at["design"] == b, "d"]))
        if len(ds) < 2:
            continue
        va = [
            at.loc[(at["design"] == a) & (at["d"] == d), "client_bytes"].to_numpy(float) for d in ds
        ]
        vb = [
            at.loc[(at["design"] == b) & (at["d"] == d), "client_bytes"].to_numpy(float) for d in ds
        ]

        def medians(x: Any) -> Any:
            """B bootstrap medians of x's replications."""
            return np.median(x[rng.integers(0, x.size, size=(CROSSOVER_RESAMPLES, x.size))], axis=1)

        point = float(
            _cross(
                ds,
                np.log([[float(np.median(x)) for x in va]])
                - np.log([[float(np.median(x)) for x in vb]]),
            )[0]
        )
        boots = _cross(
            ds,
            np.log(np.stack([medians(x) for x in va], axis=1))
            - np.log(np.stack([medians(x) for x in vb], axis=1)),
        )
        good = boots[~np.isnan(boots)]
        if point == point and good.size:
            lo, hi = np.percentile(good, [2.5, 97.5])
            lines.append(
                f"- N = {n:,}, {p:.0%} dropout: {a} and {b} cross at d = {point:,.0f} "
                f"[{lo:,.0f}, {hi:,.0f}] ({good.size / CROSSOVER_RESAMPLES:.0%} of resamples cross "
                f"between d = {ds[0]:,} and {ds[-1]:,})"
            )
        else:
            lines.append(f"- N = {n:,}, {p:.0%} dropout: {a} and {b} do not cross for d in {ds}")
    return lines


def _reps(sub: Any) -> str:
    """How many replications the cells of ``sub`` hold, as text ("3 replications", or a
    range when cells differ): read from the rows, so the labels say what was run."""
    if len(sub) == 0:
        return "no replications"
    counts = sub.groupby(["block", "N", "d", "dropout", "design"]).size()
    lo, hi = int(counts.min()), int(counts.max())
    n = str(lo) if lo == hi else f"{lo}–{hi}"
    return f"{n} replication" + ("" if n == "1" else "s")


def statistics(df: Any) -> str:
    """The crossover claims, each comparison with its test, Holm-adjusted p and power."""
    out: list[str] = []
    scale = df[df["block"] == "scale"]
    levels = sorted(df["dropout"].unique())
    part1, part2 = _reps(scale), _reps(df[df["block"] != "scale"])

    # 1. bytes per client, per (N, d), stratified by dropout
    rows: list[dict[str, Any]] = []
    pairs = [
        ("DCA full", "SecAgg+"),
        ("DCA seeded", "SecAgg+"),
        ("DCA seeded", "DCA full"),
        ("DCA full", "SecAgg"),
    ]
    for (n, d), sub in scale.groupby(["N", "d"]):
        for a, b in pairs:
            r = compare(sub, "client_bytes", a, b, levels=levels, label=f"N = {n:,}, d = {d:,}")
            if r:
                rows.append(r)
    out += [
        f"**Bytes per client** (sent + received; part 1, {part1} per dropout level; "
        "Wilcoxon rank-sum stratified by dropout, two-sided; Holm over this table):",
        "",
        *_render(_family(rows)),
        "",
    ]
    for a, b in (("DCA full", "SecAgg+"), ("DCA full", "SecAgg"), ("DCA Shamir", "SecAgg+")):
        out += crossover_d(df, a, b)
    out.append("")

    # 2. bytes per server
    rows = []
    for (n, d), sub in scale.groupby(["N", "d"]):
        for a in ("DCA full", "DCA seeded"):
            r = compare(
                sub, "server_bytes", a, "SecAgg+", levels=levels, label=f"N = {n:,}, d = {d:,}"
            )
            if r:
                rows.append(r)
    out += [
        "**Bytes per server** (one DCA compute node against the SecAgg+ server; part 1, "
        "stratified rank-sum, two-sided, Holm over this table):",
        "",
        *_render(_family(rows)),
        "",
    ]

    # 3-4. completion and wall time against dropout, accuracy: part 2's reference rows
    ref = reference(df)
    for column, title in (
        ("sim_s", "**Simulated completion time** (s"),
        ("rmse", "**Accuracy** (RMSE of the released sum per coordinate"),
        ("wall_s", "**Wall time per run** (s, measured per row on the shared, loaded machine"),
    ):
        rows = []
        for p in levels:
            sub = ref[ref["dropout"] == p]
            for a in DCA:
                r = compare(sub, column, a, "SecAgg+", levels=[p], label=f"{p:.0%} dropout")
                if r:
                    rows.append(r)
            if column == "rmse":
                for a in ("DCA seeded", "DCA Shamir"):
                    r = compare(sub, column, a, "DCA full", levels=[p], label=f"{p:.0%} dropout")
                    if r:
                        rows.append(r)
        if rows:
            out += [
                f"{title}; N = 1,000, d = 100, part 2, no fault, {part2} per cell; "
                "rank-sum, two-sided, Holm over this table):",
                "",
                *_render(_family(rows)),
                "",
            ]

    check = passive_check(df)
    if check:
        out += [check, ""]

    # 5. node loss: release rates
    loss = df[df["block"] == "node loss"]
    if len(loss):
        rate_rows = []
        for p in levels:
            at = loss[loss["dropout"] == p]
            a = at[at["design"] == "DCA Shamir"]
            for b in ("DCA full", "DCA seeded", "SecAgg+"):
                other = at[at["design"] == b]
                if a.empty or other.empty:
                    continue
                t = rate_test(
                    int(a["released"].sum()),
                    len(a),
                    int(other["released"].sum()),
                    len(other),
                    rates=RATES,
                )
                rate_rows.append((f"{p:.0%} dropout", b, t))
        adjusted = holm([t.p for _, _, t in rate_rows])
        out += [
            "**A lost compute node or server** (release rate; part 2, N = 1,000, d = 100; "
            "Fisher's exact test, two-sided, Holm over this table; power for true rates "
            f"{RATES[0]:.1f} against {RATES[1]:.1f}):",
            "",
            "| where | a | b | released a | released b | p | p (Holm) | power |",
            "|---|---|---|---:|---:|---:|---:|---:|",
        ]
        for (where, b, t), q in zip(rate_rows, adjusted, strict=True):
            out.append(
                f"| {where} | DCA Shamir | {b} | {t.k_a}/{t.n_a} | {t.k_b}/{t.n_b} | "
                f"{_p(t.p)} | {_p(q)} | {_num(t.power, 2)} |"
            )
        out.append("")

    # 6. ε under coalitions
    rows = []
    for blk, comps in (
        ("servers collude", (("DCA full", "DCA Shamir"), ("DCA seeded", "DCA Shamir"))),
        (
            "servers + 10% clients",
            (("DCA full", "SecAgg+"), ("DCA seeded", "SecAgg+"), ("DCA Shamir", "SecAgg+")),
        ),
    ):
        sub = df[df["block"] == blk]
        for p in levels:
            for a, b in comps:
                r = compare(
                    sub[sub["dropout"] == p], "epsilon", a, b, levels=[p], label=f"{blk}, {p:.0%}"
                )
                if r:
                    rows.append(r)
    if rows:
        out += [
            f"**ε for the realised coalition** (part 2, N = 1,000, d = 100, {part2}; "
            "ε = ∞ ranks above every finite ε; rank-sum, two-sided, Holm over this table):",
            "",
            *_render(_family(rows)),
            "",
        ]
    return "\n".join(out)


def readme_tables(df: Any, dropout: float = 0.1) -> str:
    """The two compact tables of docs/reproductions/secagg.md at one dropout level: bytes per client per design
    at each (N, d) of part 1, and part 2's outcomes per design and block (medians with
    95% bootstrap intervals)."""
    scale = df[(df["block"] == "scale") & (df["dropout"] == dropout)]
    present = [d for d in DESIGNS if d in set(scale["design"])]
    out = [
        f"| N | d | {' | '.join(present)} |",
        "|---:|---:|" + "---:|" * len(present),
    ]
    for (n, d), sub in scale.groupby(["N", "d"]):
        cells = [
            ci(sub.loc[sub["design"] == des, "client_bytes"], ("readme", n, d, des))
            for des in present
        ]
        out.append(f"| {n:,} | {d:,} | " + " | ".join(cells) + " |")
    part2 = df[(df["N"] == 1000) & (df["d"] == 100) & (df["dropout"] == dropout)]
    part2 = part2[part2["block"] != "scale"]
    out += [
        "",
        "| block | design | released | simulated s | RMSE | ε | wall s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (b, des), g in _sorted(part2).groupby(["block", "design"], sort=False):
        name = ("readme2", b, des)
        out.append(
            f"| {b} | {des} | {int(g['released'].sum())}/{len(g)} | "
            f"{ci(g['sim_s'], ('t', *name))} | {ci(g['rmse'], ('r', *name))} | "
            f"{ci(g['epsilon'], ('e', *name))} | {ci(g['wall_s'], ('w', *name))} |"
        )
    return "\n".join(out)


def reference(df: Any) -> Any:
    """Part 2's no-fault rows. Where SecAgg+ has none, its coalition rows stand in: its
    colluders are passive, so that run is its no-fault run (only ε differs)."""
    at = (df["N"] == 1000) & (df["d"] == 100)
    plain = at & (df["block"] == "no fault")
    if not (df.loc[plain, "design"] == "SecAgg+").any():
        stand_in = at & (df["block"] == "servers + 10% clients") & (df["design"] == "SecAgg+")
        return df[plain | stand_in]
    return df[plain]


def passive_check(df: Any) -> str:
    """SecAgg+ without a coalition against SecAgg+ with the server and 10% of the clients
    colluding: the colluders are passive, so nothing but ε should differ."""
    at = df[(df["N"] == 1000) & (df["d"] == 100) & (df["design"] == "SecAgg+")]
    part2 = _reps(at)
    plain = at[at["block"] == "no fault"].assign(design="no coalition")
    coalition = at[at["block"] == "servers + 10% clients"].assign(design="coalition")
    if plain.empty or coalition.empty:
        return ""
    both = pd_concat([plain, coalition])
    rows = []
    for column in ("client_bytes", "sim_s", "rmse"):
        for p in sorted(both["dropout"].unique()):
            r = compare(
                both[both["dropout"] == p],
                column,
                "no coalition",
                "coalition",
                levels=[p],
                label=f"{column}, {p:.0%}",
            )
            if r:
                rows.append(r)
    return "\n".join(
        [
            f"**Passive colluders** (SecAgg+ at N = 1,000, d = 100, {part2}: no "
            "coalition against the server and 10% of the clients colluding; rank-sum, "
            "two-sided, Holm over this table; nothing but ε should differ):",
            "",
            *_render(_family(rows)),
            "",
        ]
    )


def pd_concat(frames: Sequence[Any]) -> Any:
    import pandas as pd

    return pd.concat(list(frames), ignore_index=True)


# --- figures ---------------------------------------------------------------------------


def _medians(
    sub: Any, x: str, y: str, name: tuple[Any, ...]
) -> tuple[list[float], list[float], list[list[float]]]:
    xs, ys, err = [], [], []
    for value, g in sub.groupby(x):
        v = g[y].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if not v.size:
            continue
        med = float(np.median(v))
        lo, hi = bootstrap_median_ci(v, name=(*name, value))
        xs.append(float(value))
        ys.append(med)
        err.append([med - lo, hi - med])
    return xs, ys, err


def figures(df: Any, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    scale = df[df["block"] == "scale"]
    part1, part2 = _reps(scale), _reps(df[df["block"] != "scale"])
    paths: list[Path] = []

    def lines(ax: Any, sub: Any, x: str, y: str) -> None:
        for des in DESIGNS:
            xs, ys, err = _medians(sub[sub["design"] == des], x, y, ("fig", des, x, y))
            if xs:
                ax.errorbar(
                    xs,
                    ys,
                    yerr=np.asarray(err).T,
                    fmt="o-",
                    capsize=3,
                    label=des,
                    color=COLOURS[des],
                )

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    lines(axes[0], scale[(scale["N"] == 100) & (scale["dropout"] == 0.1)], "d", "client_bytes")
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="d",
        ylabel="bytes per client (sent + received)",
        title="N = 100, 10% dropout",
    )
    lines(axes[1], scale[(scale["d"] == 10) & (scale["dropout"] == 0.1)], "N", "client_bytes")
    axes[1].set(xscale="log", yscale="log", xlabel="N", title="d = 10, 10% dropout")
    axes[1].legend(fontsize=7)
    fig.suptitle(f"medians and 95% bootstrap intervals, {part1}", fontsize=8)
    fig.tight_layout()
    paths.append(out / "secagg-bytes-per-client.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    lines(axes[0], scale[(scale["d"] == 10) & (scale["dropout"] == 0.1)], "N", "wall_s")
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="N",
        ylabel="wall seconds per run",
        title=f"d = 10, 10% dropout ({part1}; loaded 2-core machine)",
    )
    lines(axes[1], reference(df), "dropout", "sim_s")
    axes[1].set(
        xlabel="clients absent",
        ylabel="simulated completion (s)",
        title=f"N = 1,000, d = 100 ({part2})",
    )
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "secagg-time.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)

    faults = df[(df["N"] == 1000) & (df["d"] == 100) & (df["dropout"] == 0.1)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 1]})
    ax = axes[0]
    width = 0.2
    present = [b for b in BLOCKS if b in set(faults["block"])]
    shown = [d for d in DESIGNS if d in set(faults["design"])]
    for i, des in enumerate(shown):
        ys, errs = [], []
        for b in present:
            s = faults[(faults["block"] == b) & (faults["design"] == des)]
            v = s["epsilon"].to_numpy(dtype=float)
            v = v[~np.isnan(v)]
            if not v.size:
                ys.append(0.0)
                errs.append([0.0, 0.0])
                continue
            v = np.where(np.isinf(v), 10.0, v)
            med = float(np.median(v))
            lo, hi = bootstrap_median_ci(v, name=("fig-eps", b, des))
            ys.append(med)
            errs.append([med - lo, hi - med])
        xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(present))]
        ax.bar(xs, ys, width, yerr=np.asarray(errs).T, capsize=2, label=des, color=COLOURS[des])
    ax.set_xticks(range(len(present)), present, fontsize=8)
    ax.set(
        ylabel="achieved ε (10 = ∞; 0 = no release)",
        yscale="symlog",
        title=f"N = 1,000, d = 100, 10% dropout: ε, median and 95% CI ({part2})",
    )
    ax.legend(fontsize=7)
    loss = df[(df["block"] == "node loss")]
    ax = axes[1]
    for i, des in enumerate(shown):  # offset a little so equal rates stay visible
        rates = [
            float(loss[(loss["design"] == des) & (loss["dropout"] == p)]["released"].mean())
            for p in sorted(loss["dropout"].unique())
        ]
        offset = 0.015 * (i - (len(shown) - 1) / 2)
        ax.plot(
            sorted(loss["dropout"].unique()),
            [r + offset for r in rates],
            "o-",
            color=COLOURS[des],
            label=des,
        )
    ax.legend(fontsize=6)
    ax.set(
        xlabel="clients absent",
        ylabel="release rate",
        title=f"node or server lost ({part2})",
        ylim=(-0.05, 1.05),
    )
    fig.tight_layout()
    paths.append(out / "secagg-faults-epsilon.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("results", nargs="+", help="the studies' results directories")
    parser.add_argument("--figures", default="", help="directory for secagg-*.png")
    parser.add_argument(
        "--readme",
        action="store_true",
        help="print only the compact tables of docs/reproductions/secagg.md",
    )
    args = parser.parse_args(argv)
    df = frame(*args.results)
    if args.readme:
        print(readme_tables(df))
        return
    print(table(df))
    print()
    print(statistics(df))
    if args.figures:
        for p in figures(df, Path(args.figures)):
            print(f"wrote {p}")


if __name__ == "__main__":
    main()
