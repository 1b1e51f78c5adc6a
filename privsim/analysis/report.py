"""Human-readable report of a run result (the same figures as the JSON result file)."""

from __future__ import annotations

from typing import Any

__all__ = ["format_bcd_report", "format_blr_report", "format_race_report", "format_report"]


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} GB"


def _eps(value: Any) -> str:
    return "inf (no protection)" if value == "inf" else f"{value:.4g}"


def format_blr_report(result: dict[str, Any]) -> str:
    """One line per regression method: MAE, privacy delivered, communication."""
    ds, priv = result["dataset"], result["privacy"]
    sc = result["scenario"]
    lines = [
        f"privsim {result['privsim_version']} — scenario '{result['scenario_name']}', "
        f"protocol blr, seed {result['seed']}",
        f"  data {ds['name']}: {ds['train']} clients (one record each), {ds['test']} test records, "
        f"d = {ds['dimension']}; {sc['population']['compute_nodes']} compute nodes, "
        f"encryption {sc['network']['encryption']}",
        f"  budget ε = {priv['target_epsilon']:g}, δ = {priv['delta']:g}, "
        f"{priv['calibration']} calibration",
    ]
    if result["thresholds"]:
        t = result["thresholds"]
        lines.append(
            f"  projection thresholds (auxiliary search): features {t['feature']:.3g}·σ̂, "
            f"target {t['target']:.3g}·σ̂"
        )
    lines.append(
        f"{'method':<20}{'status':<10}{'test MAE':>10}{'ε delivered':>16}{'messages':>10}{'bytes':>11}"
    )
    for name, m in result["methods"].items():
        mae = f"{m['mae']:.4g}" if m.get("mae") is not None else "-"
        comm = m.get("communication") or {}
        if m["epsilon"] == "inf":
            eps = "none (NP)" if name.endswith("NP") else "inf (!)"
        else:
            eps = _eps(m["epsilon"]) + ("" if m.get("guarantee_met") else " (!)")
        lines.append(
            f"{name:<20}{m['status']:<10}{mae:>10}{eps:>16}"
            f"{comm.get('messages', '-'):>10}{_bytes(comm['bytes']) if comm else '-':>11}"
        )
    lines.append(
        "  MAE in the units of the scaled target (range 10); (!) over the budget "
        "(classic calibration or a coalition beyond T)"
    )
    return "\n".join(lines)


def format_bcd_report(result: dict[str, Any]) -> str:
    """A (DP-)BCD run: the published model's R² against the centralised one."""
    ds, priv, comm = result["dataset"], result["privacy"], result["communication"]
    blocks = "; ".join(f"party-{j}: {len(b)} columns" for j, b in enumerate(ds["blocks"]))
    lines = [
        f"privsim {result['privsim_version']} — scenario '{result['scenario_name']}', "
        f"protocol bcd ({result['method']}), seed {result['seed']}",
        f"  data {ds['name']}: {ds['records']} records, {ds['predictors']} predictors ({blocks}); "
        "party-0 holds the label",
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Result      published after {result['iterations']} iterations ({result['steps']} steps)"
        )
        lines.append(
            f"Accuracy    R² {acc['r2']:.4g} (centralised {acc['r2_central']:.4g}); "
            f"AAPD of β vs centralised {100 * acc['aapd']:.1f}%"
        )
    else:
        lines.append(f"Result      aborted: {result['abort']['detail']}")
    if priv["epsilon_per_step"] is not None:
        lines.append(
            f"Privacy     ε spent {priv['epsilon_spent']:.4g} of {priv['target_epsilon']:g} "
            f"({priv['epsilon_per_step']:.4g} per step); {priv['notion']}"
        )
    else:
        lines.append("Privacy     none (BCD without perturbation)")
    view = result["adversary_view"]
    lines.append(
        f"Traffic     {comm['messages']} messages, {_bytes(comm['bytes'])}, {comm['rounds']} rounds, "
        f"{comm['duration']:.3g} s simulated; adversary {', '.join(view['members']) or '-'} "
        f"received {view['remainders_received']} remainder vectors"
    )
    return "\n".join(lines)


def format_race_report(result: dict[str, Any]) -> str:
    """A distributed-sketching run: the released sketch's error, privacy and cost."""
    sc, priv, comm = result["scenario"]["race"], result["privacy"], result["communication"]
    lines = [
        f"privsim {result['privsim_version']} — scenario '{result['scenario_name']}', "
        f"protocol race, seed {result['seed']}",
        f"  {sc['owners']} data owners, sketch {sc['rows']} × {sc['width']}, data {sc['dataset']}, "
        f"mode {sc['mode']}" + (f" ({sc['noise']} noise)" if sc["mode"] == "dca" else ""),
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Accuracy    KDE mean relative error {acc['mre_vs_nonprivate_sketch']:.4g} vs the "
            f"non-private merged sketch; noise sd per cell {acc['noise_sd_per_cell']:.4g}; "
            f"{acc['included']} of {sc['owners']} owners included"
        )
    else:
        lines.append("Result      aborted (more owners missing than tolerated)")
    met = "met" if priv["guarantee_met"] else "NOT met"
    lines.append(
        f"Privacy     achieved ε = {_eps(priv['achieved_epsilon'])} (target {priv['target_epsilon']:g}, "
        f"δ = {priv['delta']:g}): {met}"
    )
    lines.append(
        f"Traffic     {comm['messages']} messages, {_bytes(comm['bytes'])}, "
        f"{_bytes(comm['bytes_per_owner'] or 0)} per owner, {comm['rounds']} rounds"
    )
    return "\n".join(lines)


def format_report(result: dict[str, Any]) -> str:
    """A compact multi-line summary of :meth:`privsim.runner.RunResult.to_dict`."""
    if result.get("protocol") == "race":
        return format_race_report(result)
    if result.get("protocol") == "blr":
        return format_blr_report(result)
    if result.get("protocol") == "bcd":
        return format_bcd_report(result)
    sc = result["scenario"]
    pop, priv = sc["population"], result["privacy"]
    parties = result["parties"]
    lines = [
        f"privsim {result['privsim_version']} — scenario '{result['scenario_name']}', "
        f"protocol {result['protocol']}, seed {result['seed']}",
        f"  {pop['clients']} clients, {pop['compute_nodes']} compute nodes, d = {sc['data']['dimension']}, "
        f"encryption {sc['network']['encryption']}",
    ]
    if result["status"] == "released":
        acc = result["accuracy"]
        lines.append(
            f"Result      released: sum of {parties['included']} of {parties['clients']} clients"
        )
        line = f"Accuracy    RMSE {acc['rmse']:.4g} per coordinate vs true sum of included clients"
        base = result.get("baseline")
        if base and base.get("accuracy"):
            ratio = (
                acc["rmse"] / base["accuracy"]["rmse"] if base["accuracy"]["rmse"] else float("nan")
            )
            line += f" (trusted aggregator {base['accuracy']['rmse']:.4g}; ratio {ratio:.3f})"
        lines.append(line)
        lines.append(
            f"            RMSE {acc['rmse_vs_all_clients']:.4g} vs true sum of all clients; "
            f"relative L2 error {acc['relative_l2_error']:.3%}"
        )
    else:
        lines.append(
            f"Result      ABORTED ({result['abort']['reason']}): {result['abort']['detail']}"
        )
    met = "met" if priv["guarantee_met"] else "NOT met"
    lines.append(
        f"Privacy     achieved (eps, delta) = ({_eps(priv['achieved_epsilon'])}, {priv['delta']:g}) "
        f"against the realised coalition; target eps = {priv['target_epsilon']:g}: {met}"
    )
    lines.append(
        f"            calibration {priv['calibration']}, sigma_std = {priv['sigma_std']:.4g}, "
        f"per-client sigma = {priv['client_noise_std']:.4g}, L2 sensitivity {priv['sensitivity_l2']:g}"
    )
    lines.append(
        f"Parties     absent {len(parties['absent'])}, crashed {len(parties['crashed'])}, "
        f"excluded from the sum {len(parties['excluded'])}, colluding {len(parties['colluding'])}"
    )
    comm = result["communication"]
    lines.append(
        f"Traffic     {comm['messages']} messages, {_bytes(comm['bytes'])}, {comm['rounds']} rounds; "
        + ", ".join(f"{k} {v}" for k, v in comm["by_status"].items())
    )
    lines.append(
        f"  {'role':<11}{'parties':>8}{'sent msgs':>16}{'sent bytes':>22}{'recv msgs':>16}{'recv bytes':>22}"
    )
    for role, rc in comm["roles"].items():
        lines.append(
            f"  {role:<11}{rc['parties']:>8}"
            f"{rc['messages_sent_mean']:>9.1f} /{rc['messages_sent_max']:>5}"
            f"{_bytes(rc['bytes_sent_mean']):>12} /{_bytes(rc['bytes_sent_max']):>9}"
            f"{rc['messages_received_mean']:>9.1f} /{rc['messages_received_max']:>5}"
            f"{_bytes(rc['bytes_received_mean']):>12} /{_bytes(rc['bytes_received_max']):>9}"
        )
    lines.append("  (mean / max per party)")
    duration = result["duration"]
    lines.append(
        "Time        simulated protocol duration "
        + (f"{duration:.4g} s" if duration is not None else "n/a (output party did not finish)")
        + f"; wall {result['wall_seconds']:.2f} s (key agreement {result['key_agreement_seconds']:.2f} s)"
    )
    return "\n".join(lines)
