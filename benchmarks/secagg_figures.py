"""Tables and figures of the secure-aggregation comparison study.

    privsim sweep privsim/studies/secure-aggregation.toml --out /tmp/secagg-cmp
    python benchmarks/secagg_figures.py /tmp/secagg-cmp            # table on stdout
    python benchmarks/secagg_figures.py /tmp/secagg-cmp --figures docs/figures

Reads the study's rows and prints, per scenario (N, d, fault block) and client dropout,
one line per design: released or not, bytes and messages per client and per server,
rounds, simulated completion time, wall time, RMSE of the released sum and the achieved
ε for the realised coalition (medians over replications). With ``--figures`` it draws
``secagg-*.png`` there: bytes per client against d and N, wall time against N,
completion time against dropout, and ε under the fault and coalition blocks.

"Server" is a DCA compute node (mean over the M nodes; DCA's aggregator only receives M
sums) or the SecAgg server.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

DESIGNS = ("DCA full", "DCA seeded", "DCA Shamir", "SecAgg", "SecAgg+")
COLOURS = dict(zip(DESIGNS, ("C0", "C1", "C2", "C3", "C4"), strict=True))
BLOCKS = ("scale", "node loss", "servers collude", "servers + 10% clients")


def design(row: Any) -> str:
    if row["protocol"] == "secagg":
        return "SecAgg"
    if row["protocol"] == "secagg_plus":
        return "SecAgg+"
    shares = str(row.get("grid.dca.shares") or "full")
    return {"full": "DCA full", "seeded": "DCA seeded", "shamir": "DCA Shamir"}[shares]


def block(row: Any) -> str:
    crashes = row.get("grid.faults.crashes")
    servers = row.get("grid.threat.colluding_servers")
    clients = row.get("grid.threat.colluding_clients") or 0
    if _given(crashes):
        return "node loss"
    if clients and float(clients) > 0:
        return "servers + 10% clients"
    if _given(servers):
        return "servers collude"
    return "scale"


def _given(value: Any) -> bool:
    """A non-empty list field (rows hold lists, or their text after a round trip)."""
    return value is not None and str(value) not in ("[]", "()", "", "nan", "None")


def _server(row: Any, what: str) -> float:
    role = "server" if row["protocol"] in ("secagg", "secagg_plus") else "compute"
    value = row.get(f"communication.roles.{role}.{what}")
    return float(value) if value is not None and value == value else float("nan")


def frame(directory: str | Path) -> Any:
    """One row per replication with the comparison's columns."""
    import pandas as pd

    from privsim.studies.store import load

    raw = load(directory)
    out = pd.DataFrame(
        {
            "design": raw.apply(design, axis=1),
            "block": raw.apply(block, axis=1),
            "N": raw["grid.population.clients"].astype(int),
            "d": raw["grid.data.dimension"].astype(int),
            "dropout": raw["grid.faults.absent"].astype(float),
            "released": raw["status"] == "released",
            "status": raw["status"].astype(str)
            + (raw["abort_reason"] if "abort_reason" in raw else pd.Series("", index=raw.index))
            .fillna("")
            .map(lambda r: f" ({r})" if r else ""),
            "client_bytes": raw["communication.roles.client.bytes_sent_mean"]
            + raw["communication.roles.client.bytes_received_mean"],
            "client_msgs": raw["communication.roles.client.messages_sent_mean"],
            "server_bytes": raw.apply(
                lambda r: _server(r, "bytes_received_mean") + _server(r, "bytes_sent_mean"),
                axis=1,
            ),
            "server_msgs": raw.apply(lambda r: _server(r, "messages_sent_mean"), axis=1),
            "rounds": raw["communication.rounds"],
            "sim_s": raw["communication.duration"],
            "wall_s": raw["timing.wall_seconds"],
            "rmse": raw.get("accuracy.rmse", float("nan")),
            "epsilon": raw.get("privacy.achieved_epsilon", float("nan")),
        }
    )
    # a run that released nothing has no accuracy and no ε to report
    out.loc[~out["released"], ["rmse", "epsilon"]] = float("nan")
    return out


def table(df: Any) -> str:
    """The Markdown comparison table (medians over replications)."""
    cols = [
        "client_bytes",
        "client_msgs",
        "server_bytes",
        "server_msgs",
        "rounds",
        "sim_s",
        "wall_s",
        "rmse",
        "epsilon",
    ]
    df = df.assign(
        _block=df["block"].map(BLOCKS.index), _design=df["design"].map(DESIGNS.index)
    ).sort_values(["_block", "N", "d", "dropout", "_design"])
    g = df.groupby(["block", "N", "d", "dropout", "design"], sort=False)
    med = g[cols].median()
    rel = g["released"].mean()
    status = g["status"].agg(lambda s: s.mode().iloc[0])
    lines = [
        "| scenario | N | d | dropout | design | released | client B (sent+recv) | client msgs "
        "| server B (sent+recv) | server msgs | rounds | simulated s | wall s | RMSE | ε |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in med.index:
        b, n, d, p, des = key
        r = med.loc[key]
        released = (
            "yes" if rel.loc[key] == 1 else ("no" if rel.loc[key] == 0 else f"{rel.loc[key]:.0%}")
        )
        if rel.loc[key] < 1:
            released += f" ({status.loc[key].split('(')[-1].rstrip(')')})"
        lines.append(
            f"| {b} | {n:,} | {d:,} | {p:.0%} | {des} | {released} | {_n(r.client_bytes)} | "
            f"{_f(r.client_msgs)} | {_n(r.server_bytes)} | {_f(r.server_msgs)} | "
            f"{_f(r.rounds)} | {_f(r.sim_s)} | {_f(r.wall_s)} | {_f(r.rmse)} | {_eps(r.epsilon)} |"
        )
    return "\n".join(lines)


def _n(x: float) -> str:
    return "–" if not x == x else f"{x:,.0f}"


def _f(x: Any) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    return "–" if not x == x else f"{x:.3g}"


def _eps(x: Any) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    if not x == x:
        return "–"
    return "∞" if math.isinf(x) else f"{x:.3g}"


def figures(df: Any, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    scale = df[df["block"] == "scale"]
    paths: list[Path] = []

    def lines(ax: Any, sub: Any, x: str, y: str) -> None:
        for des in DESIGNS:
            s = sub[sub["design"] == des].groupby(x)[y].median()
            if len(s):
                ax.plot(s.index, s.values, "o-", label=des, color=COLOURS[des])

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    lines(axes[0], scale[(scale["N"] == 100) & (scale["dropout"] == 0.0)], "d", "client_bytes")
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="d",
        ylabel="bytes per client (sent + received)",
        title="N = 100, no dropout",
    )
    lines(axes[1], scale[(scale["d"] == 10) & (scale["dropout"] == 0.0)], "N", "client_bytes")
    axes[1].set(xscale="log", yscale="log", xlabel="N", title="d = 10, no dropout")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "secagg-bytes-per-client.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    lines(axes[0], scale[(scale["d"] == 10) & (scale["dropout"] == 0.0)], "N", "wall_s")
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="N",
        ylabel="wall seconds per run",
        title="d = 10, no dropout (loaded 2-core machine)",
    )
    lines(axes[1], scale[(scale["N"] == 100) & (scale["d"] == 10)], "dropout", "sim_s")
    axes[1].set(xlabel="clients absent", ylabel="simulated completion (s)", title="N = 100, d = 10")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "secagg-time.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)

    faults = df[(df["N"] == 1000) & (df["d"] == 100) & (df["dropout"] == 0.1)]
    fig, ax = plt.subplots(figsize=(9, 3.4))
    width = 0.18
    present = [b for b in BLOCKS if b in set(faults["block"])]
    for i, des in enumerate(d for d in DESIGNS if d != "SecAgg"):
        ys = []
        for b in present:
            s = faults[(faults["block"] == b) & (faults["design"] == des)]
            if s.empty or not s["released"].any():
                ys.append(0.0)
                continue
            e = float(s["epsilon"].median())
            ys.append(10.0 if math.isinf(e) else e)
        xs = [j + (i - 1.5) * width for j in range(len(present))]
        ax.bar(xs, ys, width, label=des, color=COLOURS[des])
    ax.set_xticks(range(len(present)), present)
    ax.set(
        ylabel="achieved ε (10 = ∞; 0 = no release)",
        yscale="symlog",
        title="N = 1,000, d = 100, 10% dropout: faults and coalitions",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(out / "secagg-faults-epsilon.png")
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="the study's results directory")
    parser.add_argument("--figures", default="", help="directory for secagg-*.png")
    args = parser.parse_args(argv)
    df = frame(args.results)
    print(table(df))
    if args.figures:
        for p in figures(df, Path(args.figures)):
            print(f"wrote {p}")


if __name__ == "__main__":
    main()
