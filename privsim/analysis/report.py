"""Human-readable report of a run result (the same figures as the JSON result file).

The header, the privacy verdict, the traffic and the timing are written once, here, for
every protocol; the protocol's own section comes from its registry entry.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from typing import Any

from privsim import registry
from privsim.kit.text import fmt_bytes

__all__ = ["OUTLIER_FACTOR", "format_epsilon", "format_number", "format_report", "outlier_lines"]

#: A method's error this many times the median over the run's methods is flagged. Over
#: Figure 2's 2160 rows (120 repetitions) that ratio has a median of 1.6 (DDP), 1.7
#: (TA) and 3.5 (input perturbation), at most 12.6 for the projected methods, and
#: reaches 100 in 61 rows (2.8%: TA 16, DDP 6, input perturbation 39), all draws from
#: the heavy tail of an unprojected noisy posterior; the blr quickstart's default seed
#: is one (TA: MAE 501.5 against a median of 0.51, 991×; 1.7–3.9 at seeds 1–6).
OUTLIER_FACTOR = 100.0


#: How a result file writes the non-finite floats (JSON has no infinity): see
#: :func:`privsim.kit.result.jsonable`.
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def format_number(value: Any, spec: str = ".4g") -> str:
    """A result's number as read: ``spec`` for a finite one; ``inf``, ``-inf`` or
    ``nan`` for a non-finite one, a float or the text a result file holds for it
    (``"inf"``); ``n/a`` for None; anything else as its text. Never raises, so a
    report of any result can be printed."""
    if isinstance(value, str):
        value = _NON_FINITE.get(value.strip().lower(), value)
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return format(value, spec)


def format_epsilon(value: Any) -> str:
    """An achieved ε as :func:`format_number` writes it, ∞ marked ``inf (no protection)``."""
    text = format_number(value)
    return f"{text} (no protection)" if text == "inf" else text


def _exposure_value(value: Any) -> str:
    """An exposure metric as read: 4 significant digits, "not exposed" for None."""
    if value is None:
        return "not exposed"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _privacy_line(priv: Mapping[str, Any]) -> str:
    if priv.get("non_private"):
        return f"Privacy     none: {priv.get('notion') or 'a non-private release'}"
    met = "met" if priv["guarantee_met"] else "NOT met"
    return (
        f"Privacy     achieved (ε, δ) = ({format_epsilon(priv['achieved_epsilon'])}, "
        f"{format_number(priv['delta'], 'g')}) against the realised coalition; target ε = "
        f"{format_number(priv['target_epsilon'], 'g')}, "
        f"δ = {format_number(priv['target_delta'], 'g')}: {met}"
        + (f"\n            {priv['notion']}" if priv.get("notion") else "")
        + _composition_line((priv.get("details") or {}).get("composition"))
    )


def _composition_line(found: Mapping[str, Any] | None) -> str:
    """For a pure composition reported by its PLD, the basic theorem's figure beside it
    (a pure (Σ ε, 0) result needs no such line: its notion says ε-DP)."""
    if not isinstance(found, Mapping) or found.get("method") != "pld":
        return ""
    return (
        f"\n            composed by PLD (the basic theorem gives ε = "
        f"{format_epsilon(found['basic_epsilon'])} at δ = 0)"
    )


def _traffic_lines(comm: Mapping[str, Any], encryption: str = "") -> list[str]:
    lines = [
        f"Traffic     {comm['messages']} messages, {fmt_bytes(comm['bytes'])}, {comm['rounds']} rounds"
        + "".join(f", {k} {v}" for k, v in comm.get("by_status", {}).items())
    ]
    roles = comm.get("roles") or {}
    if roles:
        lines.append(
            f"  {'role':<11}{'parties':>8}{'sent msgs':>16}{'sent bytes':>22}"
            f"{'recv msgs':>16}{'recv bytes':>22}"
        )
        for role, rc in roles.items():
            lines.append(
                f"  {role:<11}{rc['parties']:>8}"
                f"{rc['messages_sent_mean']:>9.1f} /{rc['messages_sent_max']:>5}"
                f"{fmt_bytes(rc['bytes_sent_mean']):>12} /{fmt_bytes(rc['bytes_sent_max']):>9}"
                f"{rc['messages_received_mean']:>9.1f} /{rc['messages_received_max']:>5}"
                f"{fmt_bytes(rc['bytes_received_mean']):>12} /{fmt_bytes(rc['bytes_received_max']):>9}"
            )
        lines.append("  (mean / max per party)")
    if encryption == "sized":  # the bytes are aes-gcm's; the run must not seem encrypted
        lines.append("  (sized channels: AES-GCM's envelope bytes charged, nothing encrypted)")
    return lines


def outlier_lines(result: Mapping[str, Any], factor: float = OUTLIER_FACTOR) -> list[str]:
    """Say when one method's error in this run is an outlier: at least ``factor`` times
    the median of the same error over the run's methods (three or more of them).

    One run is one draw (a pure function of scenario and seed); a method whose error is
    heavy-tailed can headline a value it rarely takes, so the report flags it and points
    to a study's median over replications rather than rerunning silently."""
    import math
    import statistics

    methods = result.get("methods") or {}
    by_metric: dict[str, dict[str, float]] = {}
    for name, method in methods.items():
        for metric, value in ((method or {}).get("accuracy") or {}).items():
            if isinstance(value, int | float) and math.isfinite(value) and value > 0:
                by_metric.setdefault(metric, {})[name] = float(value)
    lines = []
    for metric, values in by_metric.items():
        if len(values) < 3:
            continue
        middle = statistics.median(values.values())
        for name, value in values.items():
            if value >= factor * middle:
                lines.append(
                    f"Outlier     {name}: {metric} {value:.4g} is {value / middle:.0f}× the "
                    f"median over methods ({middle:.3g}): one heavy-tailed draw, not this "
                    "method's typical error; quote a study's median over replications "
                    "(privsim sweep with replications > 1)"
                )
    return lines


def _abort_lines(result: Mapping[str, Any], own: list[str]) -> list[str]:
    """Why an aborted run released nothing (its abort's reason and detail), unless the
    protocol's own section already says so on its ``Result`` line."""
    if result.get("status") != "aborted":
        return []
    if any(line.startswith("Result") and "abort" in line.lower() for line in own):
        return []
    abort = result.get("abort") or {}
    detail = abort.get("detail") or ""
    return [
        f"Result      ABORTED ({abort.get('reason') or 'no reason given'})"
        + (f": {detail}" if detail else "")
        + "; nothing was released"
    ]


def format_report(result: Mapping[str, Any]) -> str:
    """A compact multi-line summary of :meth:`privsim.kit.result.RunResult.to_dict`."""
    lines = [
        f"privsim {result['privsim_version']} — scenario '{result['scenario_name']}', "
        f"protocol {result['protocol']}, seed {result['seed']}"
    ]
    own = registry.get(result["protocol"]).report(result)
    lines += own
    lines += _abort_lines(result, own)
    lines += outlier_lines(result)
    lines += _privacy_line(result["privacy"]).split("\n")
    coalition = result.get("coalition") or {}
    if coalition.get("members"):
        exposure = ", ".join(
            f"{k} {_exposure_value(v)}" for k, v in (coalition.get("exposure") or {}).items()
        )
        text = (
            f"{len(coalition['members'])} members"
            + (f"; {exposure}" if exposure else "")
            + ("" if coalition.get("view_complete", True) else " (per-share view not recorded)")
        )
        wrapped = textwrap.wrap(text, width=88, break_long_words=False, break_on_hyphens=False)
        lines.append(f"Coalition   {wrapped[0]}")
        lines += [f"            {part}" for part in wrapped[1:]]
    comm = result.get("communication")
    if comm:
        network = (result.get("scenario") or {}).get("network") or {}
        lines += _traffic_lines(comm, str(network.get("encryption", "")))
    timing = result["timing"]
    duration = comm.get("duration") if comm else None
    lines.append(
        "Time        simulated protocol duration "
        + (f"{format_number(duration)} s" if duration is not None else "n/a")
        + f"; wall {timing['wall_seconds']:.2f} s"
        + (
            f" (key agreement {timing['key_agreement_seconds']:.2f} s)"
            if timing.get("key_agreement_seconds")
            else ""
        )
    )
    return "\n".join(lines)
