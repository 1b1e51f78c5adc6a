"""The summarization section of ``privsim run``'s report and its study-row columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["flatten", "report_lines"]


def _num(value: Any, fmt: str = ".4g") -> str:
    return format(value, fmt) if isinstance(value, int | float) else str(value)


#: How ``summarization.standardise`` reads in the report (booleans: older results).
_SCALING = {
    "seed": "features standardised by the seed set's mean and sd (public)",
    "none": "features used as given",
    "owners": "features standardised by the owners' own mean and sd, outside the ledger: "
    "not private (ε = ∞), kept only to reproduce the reproduction's study tables",
}


def _scaling_lines(sc: Mapping[str, Any]) -> list[str]:
    """One line for the set-ups whose features ``standardise`` scales."""
    if sc.get("dataset") not in ("occupancy", "wine", "csv"):
        return []
    choice = sc.get("standardise", "seed")
    if isinstance(choice, bool):
        choice = "seed" if choice else "none"
    return [f"Scaling     {_SCALING.get(str(choice), str(choice))}"]


def report_lines(result: Mapping[str, Any]) -> list[str]:
    """Set-up, quality against the baselines, parsimony, the auction's guarantee and the
    two composition figures."""
    d, sc = result["summarization"], result["scenario"]["summarization"]
    lines = [
        f"  {d['owners']} owners, data {d['dataset']}, summary p = {d['summary_size']}, "
        f"d = {sc['dimension']}, γ = {sc['gamma']}, ε_auc = {sc['auction_epsilon']}"
    ]
    lines += _scaling_lines(sc)
    acc = result.get("accuracy")
    if acc:
        lines.append(
            f"Summary     private: MMD² {_num(acc['mmd2'])}, SVM accuracy "
            f"{_num(acc['svm_accuracy'], '.3f')}, {acc['size']} points"
        )
    else:
        abort = result.get("abort") or {}
        lines.append(f"Result      ABORTED ({abort.get('reason')}): {abort.get('detail')}")
    for name, m in result.get("methods", {}).items():
        a = m.get("accuracy") or {}
        if name != "private" and a:
            lines.append(
                f"Baseline    {name}: MMD² {_num(a['mmd2'])} "
                f"(+{_num(a.get('mmd2_increase_pct', float('nan')), '.1f')}% over greedy), "
                f"SVM accuracy {_num(a['svm_accuracy'], '.3f')}"
            )
    lines.append(
        f"Parsimony   curator accessed {d['points_accessed']} points "
        f"({d['owner_points_accessed']} owners' + {d['validation_points']} of D_v); "
        f"K^(1/3)·p = {_num(d['k13_bound'], '.1f')}, |D_s| + |D_v| = "
        f"{d['summary_size'] + d['validation_points']}"
    )
    c = d["composition"]
    lines += _auction_lines(d, c["auction"])
    for name in ("validation", "summary"):
        f = c[name]
        lines.append(
            f"Composition {name}: paper ε = {_num(f['paper_epsilon'])} at δ̃ = {f['delta']:g} "
            f"(advanced, ε₀ per iteration); ledger basic {_num(f['ledger_basic_epsilon'])}, "
            f"PLD {_num(f['ledger_pld_epsilon'])}"
        )
    return lines


def _auction_lines(d: Mapping[str, Any], a: Mapping[str, Any]) -> list[str]:
    """The auction's coins, their per-epoch (ε, δ) and its composition, and the
    expected asks against the parsimony bound."""
    eps, delta, epochs = a["epsilon_per_epoch"], a["delta_per_epoch"], a["epochs"]
    asks = (
        f"{_num(d['expected_asks_per_epoch'], '.3f')} coin asks per epoch expected, "
        f"bound on owners' points accessed {_num(d['parsimony_bound'], '.1f')}"
    )
    if a["variant"] == "paper":
        return [
            f"Auction     paper's coins e^(−ε(i−1)) (the top bidder always asked): "
            f"({_num(eps)}, {_num(delta)})-DP per epoch, no finite ε at δ = 0; over "
            f"{epochs} epochs ({_num(a['basic_epsilon'])}, {_num(a['basic_delta'])}) by "
            f"basic composition; {asks}"
        ]
    return [
        f"Auction     private coins e^ε/(1 + e^ε)·e^(−ε(i−1)): {_num(eps)}-DP per epoch for "
        f"each owner (k colluding owners see k coins), {epochs} epochs, "
        f"{d['empty_epochs']} added no point; {asks}"
    ]


def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    """Parsimony and composition columns beyond the common ones."""
    d = result["summarization"]
    c = d["composition"]
    return {
        "summarization": {
            "points_accessed": d["points_accessed"],
            "owner_points_accessed": d["owner_points_accessed"],
            "k13_bound": d["k13_bound"],
            "accessed_per_summary_point": d["accessed_per_summary_point"],
            "parsimony_ratio": d["parsimony_ratio"],
            "parsimony_bound": d["parsimony_bound"],
            "empty_epochs": d["empty_epochs"],
            "paper_epsilon_validation": c["validation"]["paper_epsilon"],
            "paper_epsilon_summary": c["summary"]["paper_epsilon"],
            "pld_epsilon_validation": c["validation"]["ledger_pld_epsilon"],
            "pld_epsilon_summary": c["summary"]["ledger_pld_epsilon"],
        }
    }
