"""The DCA and trusted-aggregator sections of ``privsim run``'s report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privsim.kit.world import channel_label

__all__ = ["report_lines"]


def report_lines(result: Mapping[str, Any]) -> list[str]:
    sc = result["scenario"]
    pop, priv, parties = sc["population"], result["privacy"], result["parties"]
    nodes = f"{pop['compute_nodes']} compute nodes" if result["protocol"] == "dca" else "a curator"
    lines = [
        f"  {pop['clients']} clients, {nodes}, d = {sc['data']['dimension']}, "
        f"encryption {channel_label(sc['network']['encryption'])}{_share_mode(sc)}"
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Result      released: sum of {parties['included']} of {parties['total']} clients"
        )
        line = f"Accuracy    RMSE {acc['rmse']:.4g} per coordinate vs true sum of included clients"
        base = result["methods"].get("trusted_aggregator")
        if base and base.get("accuracy"):
            rmse = base["accuracy"]["rmse"]
            ratio = acc["rmse"] / rmse if rmse else float("nan")
            line += f" (trusted aggregator {rmse:.4g}; ratio {ratio:.3f})"
        lines.append(line)
        lines.append(
            f"            RMSE {acc['rmse_vs_all_clients']:.4g} vs true sum of all clients; "
            f"relative L2 error {acc['relative_l2_error']:.3%}"
        )
    else:
        lines.append(
            f"Result      ABORTED ({result['abort']['reason']}): {result['abort']['detail']}"
        )
    d = priv["details"]
    lines.append(
        f"Noise       calibration {d['calibration']}, sigma_std = {d['sigma_std']:.4g}, "
        f"per-client sigma = {d['client_noise_std']:.4g}, L2 sensitivity {d['sensitivity_l2']:g}"
    )
    lines.append(
        f"Parties     absent {len(parties['absent'])}, crashed {len(parties['crashed'])}, "
        f"excluded from the sum {len(parties['excluded'])}, colluding {len(parties['colluding'])}"
    )
    return lines


def _share_mode(sc: Mapping[str, Any]) -> str:
    """``, seeded shares`` / ``, Shamir t-of-M shares`` (nothing for full shares)."""
    dca = sc.get("dca", {})
    mode = dca.get("shares")
    if mode == "seeded":
        return ", seed-compressed shares"
    if mode == "shamir":
        return f", Shamir {dca.get('threshold')}-of-{sc['population']['compute_nodes']} shares"
    return ""
