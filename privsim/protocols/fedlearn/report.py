"""The iterative-learning section of ``privsim run``'s report: the plan, the final
model, and a few rounds of the curves (accuracy, ε so far, cohort, bytes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privsim.kit.world import channel_label

__all__ = ["report_lines"]

#: Rounds of the curves the report prints (the first, evenly spaced ones, the last).
SHOWN_ROUNDS = 6


def _fmt(value: Any, spec: str) -> str:
    if value is None:
        return "-"
    if value == "inf" or value == float("inf"):
        return "inf"
    return format(value, spec)


def _shown(curves: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if len(curves) <= SHOWN_ROUNDS:
        return curves
    step = (len(curves) - 1) / (SHOWN_ROUNDS - 1)
    return [curves[round(i * step)] for i in range(SHOWN_ROUNDS)]


def report_lines(result: Mapping[str, Any]) -> list[str]:
    sc, own = result["scenario"], result.get(result["protocol"]) or {}
    training, noise = sc["training"], own.get("noise", {})
    aggregation = own.get("aggregation", training.get("aggregation"))
    lines = [
        f"  {sc['population']['clients']} clients, {own.get('algorithm')} over {aggregation}, "
        f"{own.get('rounds_run')} of {own.get('rounds_planned')} rounds, "
        f"encryption {channel_label(sc['network']['encryption'])}",
        f"Noise       z = {_fmt(noise.get('noise_multiplier'), '.4g')}"
        f"{' (planned for the budget)' if noise.get('calibrated') else ''}, "
        + (
            f"σ per client {_fmt(noise.get('sigma'), '.4g')} (each adds the whole noise)"
            if aggregation == "local"
            else f"σ on the sum {_fmt(noise.get('sigma'), '.4g')}"
        )
        + f", planned cohort {_fmt(noise.get('planned_cohort'), '.4g')}"
        + (
            f", T = {noise.get('tolerated')} (the dropped or colluding members of a cohort "
            "the noise shares are sized for)"
            if aggregation in ("dca", "secagg", "secagg_plus")
            else ""
        ),
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Accuracy    test {acc['test_accuracy']:.4f} (loss {acc['test_loss']:.4g}; "
            f"best {acc['best_test_accuracy']:.4f}; untrained {acc['initial_test_accuracy']:.4f}); "
            f"{acc['rounds_released']} rounds released"
        )
    else:
        lines.append(
            f"Result      ABORTED ({result['abort']['reason']}): {result['abort']['detail']}"
        )
    if own.get("stopped"):
        lines.append(f"Stopped     {own['stopped']}")
    lines.append("Rounds      round  picked online included colluding  accuracy  epsilon  bytes")
    for r in _shown(own.get("curves", [])):
        total = sum(r["bytes"].values())
        lines.append(
            f"            {r['round']:>5} {r['picked']:>7} {r['online']:>6} "
            f"{_fmt(r['included'], 'd'):>8} {r['colluding']:>9}  "
            f"{_fmt(r['test_accuracy'], '.4f'):>8}  {_fmt(r['epsilon'], '.4g'):>7}  {total}"
        )
    lines.append(
        "            (traffic below: per party and round; rounds are message rounds, several "
        "per training round)"
    )
    return lines
