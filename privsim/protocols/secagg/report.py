"""The SecAgg / SecAgg+ section of ``privsim run``'s report and its study-row columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["flatten", "report_lines"]


def report_lines(result: Mapping[str, Any]) -> list[str]:
    sc, det = result["scenario"], result[result["protocol"]]
    cfg = sc.get("secagg", {})
    graph = "complete graph" if det["complete_graph"] else f"Harary graph, k = {det['degree']}"
    lines = [
        f"  {sc['population']['clients']} clients, one server, d = {cfg.get('dimension')}, "
        f"{graph}, threshold t = {det['threshold']}, sum mod 2^{cfg.get('modulus_bits')}",
        f"Rounds      live after each round (U1, U2, U3, U5): {det['live_per_round']}; "
        f"closed at {[round(t, 4) for t in det['round_closed_at']]} s",
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Result      released: sum of {result['parties']['included']} of "
            f"{result['parties']['total']} clients; RMSE {acc['rmse']:.4g} per coordinate "
            f"vs their plain sum (max |error| vs the rounded sum "
            f"{acc['max_abs_error_vs_rounded_sum']:.4g})"
        )
    else:
        lines.append(
            f"Result      ABORTED ({result['abort']['reason']}): {result['abort']['detail']}"
        )
    roles = result["communication"]["roles"]
    client, server = roles.get("client", {}), roles.get("server", {})
    lines.append(
        f"Cost        per client {client.get('bytes_sent_mean', 0):.0f} B sent, "
        f"{client.get('bytes_received_mean', 0):.0f} B received; server "
        f"{server.get('bytes_received_mean', 0):.0f} B received, "
        f"{server.get('bytes_sent_mean', 0):.0f} B sent; "
        f"{det['key_agreements']} key agreements"
    )
    exp = result["coalition"]["exposure"]
    lines.append(
        f"Coalition   inputs exposed {exp.get('inputs_exposed')}, mask keys exposed "
        f"{exp.get('keys_exposed')}, threshold broken: {bool(exp.get('threshold_broken'))}; "
        f"noise {det['noise']}"
    )
    return lines


def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    det = result[result["protocol"]]
    return {
        "secagg.degree": det["degree"],
        "secagg.threshold": det["threshold"],
        "secagg.rounds_completed": det["rounds_completed"],
        "secagg.key_agreements": det["key_agreements"],
    }
