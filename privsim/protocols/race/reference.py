"""The paper's noise beside a RACE study's (for the HTML report).

Coleman & Shrivastava (2021), Algorithm 1, release every cell of the R × W sketch with
Laplace noise of scale b = Δ₁/ε, Δ₁ = R for add/remove neighbours (2R for replace-one):
the noise per cell has standard deviation √2·b. One curator, or DCA's secure sum of the
Gamma-difference shares (Lap(b) = Σ_{k≤K−T}(G_k − G'_k)), adds it once; when each of the K
owners releases its own sketch (``local``), the merged sketch carries K of them, sd
√K·√2·b. The table sets this beside the sd each run measured (released minus
non-private counts, the paper's floor rounding included: it adds 1/12 to the variance),
and beside what this mode should give: DCA split over K − T owners (``dca.tolerated``)
adds K′/(K − T) times one Lap(b)'s variance when K′ owners take part.
Gaussian DCA shares are not the paper's mechanism and are left out.
"""

from __future__ import annotations

import math
from typing import Any

from privsim.kit.frames import scenario_field
from privsim.protocols.race.config import RaceConfig
from privsim.protocols.race.private import laplace_scale

__all__ = ["paper_noise"]

_DEFAULTS = {"privacy.neighbour": "replace_one"}


def _field(frame: Any, name: str) -> Any:
    """A scenario field per row: the grid's column, the study base's, else the default."""
    return scenario_field(
        frame, name, RaceConfig(), table="race", target="privacy.epsilon", defaults=_DEFAULTS
    )


def _predicted(mode: str, owners: float, rows: int, epsilon: float, neighbour: str) -> float:
    """The paper's noise sd per cell: √2·b once, or √K·√2·b over K local releases."""
    once = math.sqrt(2.0) * laplace_scale(int(rows), float(epsilon), str(neighbour))
    return once * math.sqrt(owners) if mode == "local" else once


def _dca_factor(mode: str, included: float, owners: float, tolerated: float) -> float:
    """DCA's shares are split over K − T owners so that any K − T of them make one
    Lap(b): the K' owners included add K'/(K − T) times its variance."""
    if mode != "dca" or owners - tolerated <= 0:
        return 1.0
    return math.sqrt(included / (owners - tolerated))


def paper_noise(frame: Any) -> list[tuple[str, Any]]:
    """Per grid cell of released Laplace runs: the paper's predicted noise sd per cell,
    the median measured one, and their ratio."""
    import pandas as pd

    if "protocol" not in frame or "accuracy.noise_sd_per_cell" not in frame:
        return []
    rows = frame[(frame["protocol"] == "race") & (frame["status"] == "released")]
    fields = {
        name: _field(rows, name)
        for name in (
            "race.mode",
            "race.noise",
            "race.rows",
            "race.owners",
            "dca.tolerated",
            "privacy.epsilon",
            "privacy.neighbour",
        )
    }
    included = (
        rows["parties.included"] if "parties.included" in rows else _field(rows, "race.owners")
    )
    laplace = (fields["race.mode"] != "dca") | (fields["race.noise"] == "laplace")
    rows = rows[laplace]
    if rows.empty:
        return []
    predicted = pd.Series(
        [
            _predicted(m, float(k), int(r), float(e), str(n))
            for m, k, r, e, n in zip(
                fields["race.mode"][laplace],
                included[laplace],
                fields["race.rows"][laplace],
                fields["privacy.epsilon"][laplace],
                fields["privacy.neighbour"][laplace],
                strict=True,
            )
        ],
        index=rows.index,
    )
    factor = pd.Series(
        [
            _dca_factor(m, float(i), float(k), float(t or 0))
            for m, i, k, t in zip(
                fields["race.mode"][laplace],
                included[laplace],
                fields["race.owners"][laplace],
                fields["dca.tolerated"][laplace],
                strict=True,
            )
        ],
        index=rows.index,
    )
    keys = sorted(c for c in rows.columns if c.startswith("grid."))
    parts = rows.assign(predicted=predicted, expected=predicted * factor)
    records = []
    for coords, cell in parts.groupby(keys, sort=True) if keys else [((), parts)]:
        coords = coords if isinstance(coords, tuple) else (coords,)
        measured = float(pd.to_numeric(cell["accuracy.noise_sd_per_cell"]).median())
        paper = float(cell["predicted"].median())
        records.append(
            {
                **dict(zip(keys, coords, strict=True)),
                **(
                    {}
                    if "grid.race.mode" in keys
                    else {"mode": str(_field(cell, "race.mode").iloc[0])}
                ),
                "runs": len(cell),
                "paper: noise sd per cell": paper,
                "expected here (DCA: × √(K′/(K − T)))": float(cell["expected"].median()),
                "ours: median measured sd": measured,
                "ours / paper": measured / paper if paper > 0 else float("nan"),
            }
        )
    title = (
        "Coleman & Shrivastava (2021), Algorithm 1: the Laplace noise per sketch cell "
        "(sd √2·R/ε, √K times that for K local releases) beside the measured"
    )
    return [(title, pd.DataFrame.from_records(records))]
