"""Scenario regression test: red wine at two ε, five repetitions, all seven methods.

The summary numbers (median test MAE per method and ε over the repetitions) are compared
with stored golden values. Tolerance: a change that alters the random streams (but not
the methods) moves a median of r repetitions by about its standard error,
1.2533 · sd / sqrt(r) for a median, with sd estimated from the golden interquartile range
as IQR / 1.349 (exact for normal data; the heavy-tailed methods have a wide IQR, hence a
wide tolerance). We allow 3 standard errors, plus 1e-9 for methods without noise
(NP and proj NP are deterministic given the split, so their tolerance is the spread of
the split alone, captured the same way).

Regenerate (after an intended change, and say why in the commit):
    PRIVSIM_UPDATE_GOLDEN=1 PRIVSIM_DATA_DIR=../shared/data python -m pytest tests/protocols/test_blr_golden.py
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from privsim.protocols.blr.experiment import run_blr
from privsim.scenarios import scenario_from_dict
from tests.conftest import needs_data

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "blr_wine_red.json"
EPSILONS = (1.0, 10.0)
REPETITIONS = 5


def _summary() -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for eps in EPSILONS:
        scenario = scenario_from_dict(
            {
                "name": "golden-wine-red",
                "seed": 2017,
                "protocol": "blr",
                "population": {"clients": 1000, "compute_nodes": 3},
                "privacy": {"epsilon": eps, "delta": 1e-4},
                "network": {"encryption": "none"},
                "blr": {"dataset": "wine-red", "test": 500},
            }
        )
        maes: dict[str, list[float]] = {}
        for rep in range(REPETITIONS):
            result = run_blr(scenario, 1000 + rep).to_dict()
            for method, m in result["methods"].items():
                assert m["status"] == "released", (method, m)
                maes.setdefault(method, []).append(m["accuracy"]["mae"])
        out[str(eps)] = {
            method: [
                float(np.median(v)),
                float(np.percentile(v, 25)),
                float(np.percentile(v, 75)),
            ]
            for method, v in maes.items()
        }
    return out


@needs_data
def test_red_wine_medians_match_the_golden_values():
    summary = _summary()
    if os.environ.get("PRIVSIM_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert set(summary) == set(golden)
    for eps, methods in golden.items():
        assert set(summary[eps]) == set(methods)
        for method, (median, q25, q75) in methods.items():
            se = 1.2533 * ((q75 - q25) / 1.349) / math.sqrt(REPETITIONS)
            got = summary[eps][method][0]
            assert abs(got - median) <= 3 * se + 1e-9, (eps, method, got, median, se)
