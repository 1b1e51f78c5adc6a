"""How a BLR study reads: its figure (test MAE of every method against ε, styled as the
paper's Figure 2), its extra row columns, and the claims of Heikkilä et al. (2017) §5
checked on its rows.

Per grid cell (data set, ε, …) over the released repetitions, rows paired by seed (every
method of a replication runs on the same split):

1. DDP and TA, and proj DDP and proj TA, do not differ: the median paired difference
   with its bootstrap interval, a two-sided Wilcoxon signed-rank test, and the test's
   power against a 10% shift (a non-significant test with low power is no evidence);
2. projection lowers the MAE (proj TA < TA, proj DDP < DDP; one-sided) — the paper's
   claim is for small ε;
3. input perturbation is worse than DDP (one-sided), with the ratio of medians and its
   paired-bootstrap interval.

Each claim's verdict counts the cells where it holds after Holm's correction.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privsim.kit.spec import FigureKit
from privsim.kit.stats import (
    Alternative,
    PairedTest,
    bootstrap_median_ci,
    bootstrap_ratio_ci,
    finite,
    paired_test,
)

__all__ = ["METHOD_STYLE", "figure2_checks", "figures", "flatten", "sections"]

#: Line styles of the BLR methods, as in the paper's Figure 2.
METHOD_STYLE = {
    "NP": ("black", "-"),
    "proj_NP": ("grey", "--"),
    "TA": ("tab:blue", "-"),
    "proj_TA": ("tab:blue", "--"),
    "DDP": ("tab:orange", "-"),
    "proj_DDP": ("tab:orange", "--"),
    "input_perturbation": ("tab:red", ":"),
}

SECTION_TITLE = "Distributed against trusted aggregator, with and without projection"

#: The smallest difference the tests should detect: 10% of the reference median.
EFFECT = 0.10

SECTION_NOTE = (
    "Rows pair by seed: in a replication every method runs on the same split, so each "
    "comparison is a **Wilcoxon signed-rank test of the paired MAE differences** "
    "(scipy.stats.wilcoxon). Medians carry 95% percentile-bootstrap intervals [lo, hi] "
    "(2000 resamples, fixed seed; differences and ratios resample the pairs). *power*: "
    "the estimated probability that the test at α = 0.05 detects a true median shift of "
    "10% of the reference method's median with this many pairs (200 resamples of the "
    "centred differences, shifted). Verdicts at the bottom count the cells where a claim "
    'holds after Holm\'s correction over the cells (family-wise α = 0.05); "≈" is '
    "not a test of equality: read it with the power."
)


def _mae(method: str) -> str:
    return f"methods.{method}.accuracy.mae"


def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    """BLR's own row columns: clients included per distributed method (per round for
    proj DDP) and the projection thresholds of the auxiliary search."""
    included = {
        name: {k: m["details"][k] for k in ("included", "included_round1") if k in m["details"]}
        for name, m in result["methods"].items()
        if m.get("details")
    }
    thresholds = result["blr"]["thresholds"]
    return {
        "methods": {name: {"details": cols} for name, cols in included.items() if cols},
        "blr": {
            "thresholds": thresholds and {k: thresholds[k] for k in ("feature", "target")},
        },
    }


def figures(kit: FigureKit, summary: Any) -> list[Path]:
    """Test MAE of every method against ε (input perturbation runs off the chart)."""
    return kit.by_method("accuracy.mae", METHOD_STYLE, off_chart=("input_perturbation",))


def sections(frame: Any) -> list[tuple[str, str]]:
    """The Figure 2 checks, when the study ran the four methods they compare."""
    checks = figure2_checks(frame)
    return [(SECTION_TITLE, SECTION_NOTE + "\n\n" + checks)] if checks else []


def _median(values: Any, name: tuple[Any, ...]) -> str:
    v = finite(values)
    if v.size == 0:
        return "–"
    lo, hi = bootstrap_median_ci(v, name=name)
    return f"{np.median(v):.3g} [{lo:.3g}, {hi:.3g}]"


def _diff(test: PairedTest) -> str:
    lo, hi = test.diff_ci
    return f"{test.median_diff:+.3g} [{lo:+.3g}, {hi:+.3g}]"


def _p(p: float) -> str:
    return "–" if p != p else ("<0.001" if p < 0.001 else f"{p:.3f}")


def _holm(pvalues: list[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down rejections of the hypotheses with these p-values (NaN: kept)."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p == p)
    reject = [False] * len(pvalues)
    m = len(order)
    for rank, (p, i) in enumerate(order):
        if p > alpha / (m - rank):
            break
        reject[i] = True
    return reject


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def _paired(
    group: Any, a: str, b: str, alternative: Alternative, name: tuple[Any, ...]
) -> PairedTest:
    """Method a against method b in one cell, paired by row; the effect to detect is
    EFFECT times b's median."""
    ref = finite(group[_mae(b)])
    shift = EFFECT * float(np.median(ref)) if ref.size else 0.0
    return paired_test(
        group[_mae(a)], group[_mae(b)], alternative=alternative, shift=shift, name=(a, b, *name)
    )


def figure2_checks(frame: Any) -> str:
    """The Figure 2 claims per grid cell, with intervals, paired tests and power, and the
    verdicts over cells (empty if the study lacks the four methods)."""
    need = {_mae("TA"), _mae("DDP"), _mae("proj_TA"), _mae("proj_DDP")}
    if not need <= set(frame.columns):
        return ""
    keys = sorted(c for c in frame.columns if c.startswith("grid."))
    shown = [k for k in keys if frame[k].nunique() > 1] or keys
    ok = frame[frame["status"] == "released"]
    ip = _mae("input_perturbation") in frame.columns
    same: list[list[str]] = []
    helps: list[list[str]] = []
    worse: list[list[str]] = []
    p_same: list[float] = []
    p_helps: list[float] = []
    p_worse: list[float] = []
    powers: list[float] = []
    for coords, group in ok.groupby(keys, sort=True) if keys else [((), ok)]:
        coords = coords if isinstance(coords, tuple) else (coords,)
        cell = [str(c) for k, c in zip(keys, coords, strict=True) if k in shown]
        name = tuple(str(c) for c in coords)
        ddp_ta = _paired(group, "DDP", "TA", "two-sided", name)
        pddp_pta = _paired(group, "proj_DDP", "proj_TA", "two-sided", name)
        same.append(
            [
                *cell,
                str(ddp_ta.n),
                _median(group[_mae("TA")], ("TA", *name)),
                _median(group[_mae("DDP")], ("DDP", *name)),
                _diff(ddp_ta),
                _p(ddp_ta.p),
                f"{ddp_ta.power:.2f}",
                _median(group[_mae("proj_TA")], ("proj_TA", *name)),
                _median(group[_mae("proj_DDP")], ("proj_DDP", *name)),
                _diff(pddp_pta),
                _p(pddp_pta.p),
                f"{pddp_pta.power:.2f}",
            ]
        )
        p_same += [ddp_ta.p, pddp_pta.p]
        powers += [ddp_ta.power, pddp_pta.power]
        pta = _paired(group, "proj_TA", "TA", "less", name)
        pddp = _paired(group, "proj_DDP", "DDP", "less", name)
        helps.append([*cell, _diff(pta), _p(pta.p), _diff(pddp), _p(pddp.p)])
        p_helps += [pta.p, pddp.p]
        if ip:
            w = _paired(group, "input_perturbation", "DDP", "greater", name)
            ratio, lo, hi = bootstrap_ratio_ci(
                group[_mae("input_perturbation")], group[_mae("DDP")], name=("ip", *name)
            )
            worse.append(
                [
                    *cell,
                    _median(group[_mae("input_perturbation")], ("input_perturbation", *name)),
                    f"{ratio:.2f} [{lo:.2f}, {hi:.2f}]",
                    _diff(w),
                    _p(w.p),
                    f"{w.power:.2f}",
                ]
            )
            p_worse.append(w.p)
    cells = [k.removeprefix("grid.") for k in shown]
    parts = [
        "**DDP against TA, proj DDP against proj TA** (two-sided; difference = distributed "
        "− trusted aggregator):",
        "",
        _table(
            [
                *cells,
                "pairs",
                "TA",
                "DDP",
                "DDP − TA",
                "p",
                "power",
                "proj TA",
                "proj DDP",
                "proj DDP − proj TA",
                "p",
                "power",
            ],
            same,
        ),
        "",
        "**Projection lowers the MAE** (one-sided, projected < unprojected; difference = "
        "projected − unprojected):",
        "",
        _table([*cells, "proj TA − TA", "p", "proj DDP − DDP", "p"], helps),
    ]
    if ip:
        parts += [
            "",
            "**Input perturbation against DDP** (one-sided, input perturbation > DDP; ratio "
            "of medians with its paired-bootstrap interval):",
            "",
            _table(
                [*cells, "input pert.", "input pert. / DDP", "input pert. − DDP", "p", "power"],
                worse,
            ),
        ]
    parts += ["", *_verdicts(p_same, p_helps, p_worse, powers)]
    return "\n".join(parts)


def _verdicts(
    p_same: list[float], p_helps: list[float], p_worse: list[float], powers: list[float]
) -> list[str]:
    """The findings over cells, each with its test and multiplicity correction."""
    n_same, n_helps, n_worse = len(p_same), len(p_helps), len(p_worse)
    differ = sum(_holm(p_same))
    raw = sum(1 for p in p_same if p == p and p < 0.05)
    known = [x for x in powers if x == x]
    power = f"; median power to detect a 10% shift {np.median(known):.2f}" if known else ""
    lines = [
        "Verdicts (Holm-corrected over the comparisons of each claim, family-wise α = 0.05):",
        "",
        f"- distributed ≠ trusted aggregator: {differ} of {n_same} comparisons "
        f"({raw} at an uncorrected p < 0.05){power}",
        f"- projection lowers the MAE: {sum(_holm(p_helps))} of {n_helps} comparisons",
    ]
    if n_worse:
        lines.append(
            f"- input perturbation worse than DDP: {sum(_holm(p_worse))} of {n_worse} cells"
        )
    return lines
