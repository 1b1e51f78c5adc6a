"""The BLR section of ``privsim run``'s report: the setup, then one line per method
(status, test MAE, the ε its ledger achieved, and its traffic when it ran on the bus)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privsim.kit.text import fmt_bytes
from privsim.kit.world import channel_label

__all__ = ["report_lines"]


def _epsilon(privacy: Mapping[str, Any]) -> str:
    if privacy.get("non_private"):
        return "none (non-private baseline)"
    eps = privacy["achieved_epsilon"]
    text = "inf" if eps == "inf" else f"{eps:.4g}"
    return text if privacy.get("guarantee_met") else text + " (!)"


def report_lines(result: Mapping[str, Any]) -> list[str]:
    """One line per regression method: MAE, privacy delivered, communication."""
    details, sc = result["blr"], result["scenario"]
    ds = details["dataset"]
    lines = [
        f"  data {ds['name']}: {ds['train']} clients (one record each), {ds['test']} test "
        f"records, d = {ds['dimension']}; {sc['population']['compute_nodes']} compute nodes, "
        f"encryption {channel_label(sc['network']['encryption'])}",
        f"  {details['calibration']} calibration: noise multiplier σ/Δ = "
        f"{details['noise_multiplier']:.4g}; projected methods "
        + " and ".join(f"{z:.4g}" for z in details["noise_multipliers_projected"])
        + " (moments, statistics)",
    ]
    if details["thresholds"]:
        t = details["thresholds"]
        lines.append(
            f"  projection thresholds (auxiliary search): features {t['feature']:.3g}·σ̂, "
            f"target {t['target']:.3g}·σ̂"
        )
    lines.append(
        f"{'method':<20}{'status':<10}{'test MAE':>10}{'ε achieved':>29}"
        f"{'messages':>10}{'bytes':>11}"
    )
    for name, m in result["methods"].items():
        acc = m.get("accuracy") or {}
        mae = f"{acc['mae']:.4g}" if acc.get("mae") is not None else "-"
        comm = m.get("communication") or {}
        sent = fmt_bytes(comm["bytes"]) if comm else "-"
        lines.append(
            f"{name:<20}{m['status']:<10}{mae:>10}{_epsilon(m['privacy']):>29}"
            f"{comm.get('messages', '-'):>10}{sent:>11}"
        )
    for name, m in result["methods"].items():
        if m.get("abort"):
            lines.append(f"  {name} {m['status']} ({m['abort']['reason']}): {m['abort']['detail']}")
    if details.get("traffic_of"):
        lines.append(f"  Traffic below: the {details['traffic_of']} run on the bus")
    target = (ds.get("scaling") or {}).get("target", "range")
    units = (
        "the target's own units (a CSV target without blr.target_bounds is used as given)"
        if target == "none"
        else f"the units of the scaled target (range {sc['blr']['range_length']:g})"
    )
    lines.append(
        f"  MAE in {units}; "
        "(!) over the budget (classic calibration, a coalition beyond T, every compute node "
        "colluding, or a colluding curator)"
    )
    return lines
