"""The iterative-learning section of ``privsim run``'s report: the plan, the final
model, the one-run empirical ε beside the claimed one (when the run had canaries), and
a few rounds of the curves (accuracy, ε so far, cohort, bytes); and fedlearn's own
study columns (:func:`flatten`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privsim.kit.world import channel_label

__all__ = ["EMPIRICAL_COLUMN", "empirical_lines", "flatten", "report_lines"]

#: Rounds of the curves the report prints (the first, evenly spaced ones, the last).
SHOWN_ROUNDS = 6
#: The study column of the one-run empirical ε (the result's ``fedlearn.empirical.epsilon``),
#: beside the claimed ``privacy.achieved_epsilon``.
EMPIRICAL_COLUMN = "fedlearn.empirical_epsilon"


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
    caveat = (result.get("privacy") or {}).get("details", {}).get("caveat")
    if caveat:
        lines.append(f"Caveat      {caveat}")
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
    attack = result.get("attack")
    if isinstance(attack, Mapping):
        lines += attack_lines(attack)
    empirical = own.get("empirical")
    if isinstance(empirical, Mapping):
        claimed = (result.get("privacy") or {}).get("achieved_epsilon")
        lines += empirical_lines(empirical, claimed)
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


def attack_lines(attack: Mapping[str, Any]) -> list[str]:
    """The report's lines of the result's ``attack`` section: the attack's success (the
    share of targeted client-rounds recovered; "not targeted" where the target was
    never picked), what it targeted and its median error; then poisoning, if any."""
    lines = []
    if "name" in attack:
        success = attack.get("success")
        shown = "not targeted" if success is None else f"success {success:.3g}"
        rounds = attack.get("rounds_recovered") or []
        targeted = attack.get("client_rounds_targeted")
        lines.append(
            f"Attack      {attack['name']}: {shown}"
            + (f" over {targeted} targeted client-rounds" if targeted is not None else "")
            + f", {len(rounds)} rounds recovered"
            + (
                f", median error {_fmt(attack['median_error'], '.3g')}"
                if attack.get("median_error") is not None
                else ""
            )
        )
    poisoning = attack.get("poisoning")
    if isinstance(poisoning, Mapping):
        included = poisoning.get("malicious_rounds_included")
        lines.append(
            f"Poisoning   {poisoning.get('kind')} by {poisoning.get('malicious')} malicious "
            f"clients (a share of {_fmt(poisoning.get('share'), '.3g')}): "
            f"{poisoning.get('malicious_rounds_sent')} poisoned updates sent, "
            f"{'?' if included is None else included} included"
            + (
                f"; update check {poisoning['update_check']}"
                if poisoning.get("update_check") not in (None, "none")
                else ""
            )
        )
    return lines


def empirical_lines(empirical: Mapping[str, Any], claimed: Any = None) -> list[str]:
    """The report's lines of the ``empirical`` section: the one-run ε estimated from the
    canaries' cosines with the final model (Andrew et al. 2024) beside the ``claimed``
    ε, or why there is none; then what it rests on, and its caveat if it has one."""
    fit = (
        f"            {empirical.get('canaries')} canaries "
        f"({empirical.get('canaries_included', '-')} in a release, "
        f"{empirical.get('canary_rounds')} canary-rounds); cosine with the model's change: "
        f"mean {_fmt(empirical.get('mean_cosine'), '.3g')}, "
        f"sd {_fmt(empirical.get('sd_cosine'), '.3g')} (null: 0 ± "
        f"{_fmt(empirical.get('null_sd'), '.3g')})"
    )
    if empirical.get("epsilon") is None:
        head = f"Empirical   ε unavailable: {empirical.get('reason') or 'not estimated'}"
    else:
        head = (
            f"Empirical   ε ≈ {_fmt(empirical['epsilon'], '.4g')} at δ = "
            f"{_fmt(empirical.get('delta'), '.3g')} beside the claimed {_fmt(claimed, '.4g')} "
            "(canaries, one run, final model only: an estimate, not a bound)"
        )
    caveat = empirical.get("caveat")
    return [head, fit, *([f"            caveat: {caveat}"] if caveat else [])]


#: The nested sections of a result's ``attack`` kept in a study's rows (the store
#: flattens them to dotted columns such as ``attack.poisoning.malicious_rounds_sent``):
#: the poisoning figures and the dropout-isolation routes' counts.
ATTACK_SECTIONS = ("poisoning", "routes")


def _scalars(section: Mapping[str, Any]) -> dict[str, Any]:
    """A section's scalar figures (lists and deeper tables left out)."""
    return {k: v for k, v in section.items() if isinstance(v, (int, float, str, bool)) or v is None}


def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    """fedlearn's own study columns (the common sections, the claimed
    ``privacy.achieved_epsilon`` and the attack's scalar figures among them, are
    flattened for every protocol): the scalar figures of the attack's sections
    :data:`ATTACK_SECTIONS`; with canaries, the empirical ε (:data:`EMPIRICAL_COLUMN`),
    the canaries, their canary-rounds, their mean cosine and their crowding ρ."""
    out: dict[str, Any] = {}
    attack = result.get("attack")
    if isinstance(attack, Mapping):
        sections = {
            k: _scalars(v)
            for k, v in attack.items()
            if k in ATTACK_SECTIONS and isinstance(v, Mapping)
        }
        if sections:
            out["attack"] = sections
    own = result.get(result["protocol"]) or {}
    empirical = own.get("empirical")
    if isinstance(empirical, Mapping):
        out[result["protocol"]] = {
            "empirical_epsilon": empirical.get("epsilon"),
            "canaries": empirical.get("canaries"),
            "canary_rounds": empirical.get("canary_rounds"),
            "canary_mean_cosine": empirical.get("mean_cosine"),
            "canary_crowding": empirical.get("crowding"),
        }
    return out
