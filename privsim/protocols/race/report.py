"""The race section of ``privsim run``'s report and its extra study-row columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privsim.kit.text import fmt_bytes
from privsim.kit.world import channel_label

__all__ = ["flatten", "report_lines"]


def report_lines(result: Mapping[str, Any]) -> list[str]:
    """Setup, the released sketch's error (or the abort), its noise and bytes per owner;
    the privacy verdict and traffic totals are the common report's."""
    sc, details, parties = result["scenario"], result["race"], result["parties"]
    race = sc["race"]
    lines = [
        f"  {race['owners']} data owners, sketch {race['rows']} × {race['width']}, "
        f"data {race['dataset']}, mode {race['mode']}"
        + (f" ({race['noise']} noise)" if race["mode"] == "dca" else "")
        + f", encryption {channel_label(sc['network']['encryption'])}"
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Accuracy    KDE mean relative error {acc['mre_vs_nonprivate_sketch']:.4g} vs the "
            f"non-private merged sketch; noise sd per cell {acc['noise_sd_per_cell']:.4g}; "
            f"{parties['included']} of {parties['total']} owners included"
        )
    else:
        abort = result.get("abort") or {}
        lines.append(
            f"Result      ABORTED ({abort.get('reason', 'unknown')}): {abort.get('detail', '')}"
        )
    d = result["privacy"]["details"]
    if "sigma_std" in d:
        noise = (
            f"Gaussian, calibration {d['calibration']}, sigma = {d['sigma_std']:.4g}, "
            f"per-owner sigma = {d['client_noise_std']:.4g}, L2 sensitivity {d['sensitivity_l2']:.4g}"
        )
    else:
        noise = f"Laplace scale b = {d['laplace_scale']:g} per cell"
    lines.append(f"Noise       {noise}")
    lines.append(f"Owners      {fmt_bytes(details['bytes_per_owner'] or 0)} sent per owner (mean)")
    return lines


def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    """The race column beyond the common ones: ``race.bytes_per_owner``."""
    return {"race": {"bytes_per_owner": result["race"]["bytes_per_owner"]}}
