"""The (DP-)BCD section of ``privsim run``'s report: the data and its split, the published
model's R² against the centralised one, and the per-step budget. The privacy verdict,
the coalition's exposure (remainders received) and the traffic are the common report's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["report_lines"]


def _steps_line(result: Mapping[str, Any]) -> str:
    priv, bcd = result["privacy"], result["bcd"]
    details = priv["details"]
    if bcd["method"] == "bcd":
        return "Steps       no perturbation (BCD, Algorithm 1): not private"
    if priv["non_private"]:
        reasons = "; ".join(e["reason"] for e in priv["events"] if e.get("reason"))
        return f"Steps       ε {details['epsilon_per_step']:.4g} per step, {reasons}"
    per_party = ", ".join(f"{p} {e:.4g}" for p, e in details["epsilon_per_party"].items())
    return (
        f"Steps       ε {details['epsilon_per_step']:.4g} per step, composed over "
        f"{bcd['steps']} steps ({per_party}); locally sensitive DP (Definition 2)"
    )


def report_lines(result: Mapping[str, Any]) -> list[str]:
    bcd = result["bcd"]
    ds = bcd["dataset"]
    blocks = "; ".join(f"party-{j}: {len(b)} columns" for j, b in enumerate(ds["blocks"]))
    lines = [
        f"  method {bcd['method']}; data {ds['name']}: {ds['records']} records, "
        f"{ds['predictors']} predictors ({blocks}); party-0 holds the label"
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Result      published after {bcd['iterations']} iterations ({bcd['steps']} steps)"
        )
        lines.append(
            f"Accuracy    R² {acc['r2']:.4g} (centralised {acc['r2_central']:.4g}); "
            f"AAPD of β vs centralised {100 * acc['aapd']:.1f}%"
        )
    else:
        lines.append(f"Result      aborted: {result['abort']['detail']}")
    lines.append(_steps_line(result))
    return lines
