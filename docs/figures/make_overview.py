"""Draw docs/figures/overview.png, the README's and the landing page's picture of a run:
a scenario in, parties on a simulated network (colluding and dropped ones marked), a
result out.

    python docs/figures/make_overview.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

OUT = Path(__file__).resolve().parent / "overview.png"

INK = "#1f2937"
MUTED = "#6b7280"
ACCENT = "#3f51b5"
HONEST = "#5c6bc0"
COLLUDING = "#d32f2f"
DROPPED = "#bdbdbd"


def box(ax, x, y, w, h, title, lines, colour):
    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0.02,rounding_size=0.05",
            facecolor="white",
            edgecolor=colour,
            linewidth=2,
        )
    )
    ax.text(
        x + 0.12,
        y + h - 0.22,
        title,
        fontsize=13,
        fontweight="bold",
        color=colour,
        va="top",
        family="DejaVu Sans Mono",
    )
    for i, line in enumerate(lines):
        ax.text(x + 0.12, y + h - 0.62 - 0.34 * i, line, fontsize=10.5, color=INK, va="top")


def arrow(ax, a, b, colour=MUTED, width=1.0, style="-|>", alpha=1.0):
    ax.add_patch(
        FancyArrowPatch(
            a,
            b,
            arrowstyle=style,
            mutation_scale=12,
            color=colour,
            linewidth=width,
            alpha=alpha,
            shrinkA=6,
            shrinkB=6,
        )
    )


def main() -> None:
    fig, ax = plt.subplots(figsize=(12, 4.2), dpi=150)
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 4.2)
    ax.axis("off")

    box(
        ax,
        0.1,
        0.55,
        2.9,
        3.25,
        "scenario.toml",
        [
            "[population]  N, M",
            "[privacy]  ε, δ",
            "[network]  links, loss",
            "[faults]  dropout, crashes",
            "[threat]  coalition",
            "[dca] / [secagg] / …",
        ],
        ACCENT,
    )
    box(
        ax,
        9.0,
        0.55,
        2.9,
        3.25,
        "result.json",
        [
            "accuracy",
            "achieved (ε, δ) against",
            "  the realised coalition",
            "messages, bytes, rounds",
            "simulated time per party",
            "coalition view",
        ],
        ACCENT,
    )

    # Parties on the simulated network.
    ax.text(
        6.0,
        3.95,
        "agents on a simulated network",
        ha="center",
        fontsize=12,
        color=INK,
        fontweight="bold",
    )
    clients = [(3.75 + 0.42 * i, 3.1 - 0.55 * (j % 2)) for j in range(2) for i in range(9)]
    kinds = {2: "colluding", 7: "dropped", 11: "colluding", 14: "dropped"}
    nodes = [(4.9, 1.45), (6.0, 1.45), (7.1, 1.45)]
    aggregator = (6.0, 0.45)
    for i, (x, y) in enumerate(clients):
        kind = kinds.get(i, "honest")
        if kind != "dropped":
            for n in nodes:
                arrow(
                    ax,
                    (x, y),
                    n,
                    colour=COLLUDING if kind == "colluding" else HONEST,
                    width=0.5,
                    style="-",
                    alpha=0.25,
                )
    for n in nodes:
        arrow(ax, n, aggregator, colour=INK, width=1.2)
    for i, (x, y) in enumerate(clients):
        kind = kinds.get(i, "honest")
        colour = {"honest": HONEST, "colluding": COLLUDING, "dropped": DROPPED}[kind]
        ax.plot(x, y, "o", markersize=10, color=colour, markeredgecolor="white", zorder=3)
        if kind == "dropped":
            ax.plot(x, y, "x", markersize=7, color=MUTED, zorder=4)
    for x, y in nodes:
        ax.plot(x, y, "s", markersize=15, color=INK, zorder=3)
    ax.text(7.45, 1.45, "compute\nnodes", fontsize=9.5, color=INK, va="center")
    ax.plot(*aggregator, "D", markersize=14, color=ACCENT, zorder=3)
    ax.text(6.3, 0.45, "aggregator", fontsize=9.5, color=INK, va="center")
    legend = [("honest client", HONEST), ("colluding", COLLUDING), ("dropped out", DROPPED)]
    for i, (label, colour) in enumerate(legend):
        y = 1.05 - 0.32 * i
        ax.plot(3.7, y, "o", markersize=8, color=colour)
        ax.text(3.85, y, label, fontsize=9, color=MUTED, va="center")

    arrow(ax, (3.05, 2.2), (3.5, 2.2), colour=ACCENT, width=2)
    arrow(ax, (8.5, 2.2), (8.95, 2.2), colour=ACCENT, width=2)
    ax.text(
        6.0,
        0.02,
        "a run is a pure function of (scenario, seed)",
        ha="center",
        fontsize=10,
        color=MUTED,
        style="italic",
    )
    fig.savefig(OUT, bbox_inches="tight", facecolor="white")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
