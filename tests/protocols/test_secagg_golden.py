"""SecAgg and SecAgg+ rounds are pure functions of (scenario, seed): the released sum and
the whole message trace (who sent what kind of message of how many bytes to whom, when,
and what became of it) match values captured from the reference implementation, for
several seeds, noise kinds and dropout patterns. Any speed-up of the simulation must
leave these bit for bit unchanged.

Regenerate (only when a change is meant to alter what is simulated):

    PRIVSIM_UPDATE_GOLDEN=1 python -m pytest tests/protocols/test_secagg_golden.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privsim.protocols.secagg import SECAGG, SECAGG_PLUS
from privsim.protocols.secagg.run import simulate
from privsim.scenarios import builtin_scenario, scenario_from_dict, scenario_to_dict
from privsim.scenarios.convert import set_fields

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "secagg_rounds.json"
UPDATE = os.environ.get("PRIVSIM_UPDATE_GOLDEN") == "1"

SPECS = {"secagg": SECAGG, "secagg_plus": SECAGG_PLUS}
LINK = {"latency": {"model": "constant", "value": 0.01}}
#: Constant 10 ms links: round r closes at 10·(2r + 1) ms; +5 ms falls between rounds.
BETWEEN = [0.015, 0.035, 0.055]
DROPPED = ["client-1", "client-4", "client-7"]


def _case(protocol: str, **changes: Any) -> dict[str, Any]:
    return set_fields(SPECS[protocol].example, changes)


def _cases() -> dict[str, dict[str, Any]]:
    cases: dict[str, dict[str, Any]] = {}
    for protocol in sorted(SPECS):
        for seed in (1, 2, 3):
            cases[f"{protocol}-plain-{seed}"] = _case(
                protocol, seed=seed, **{"secagg.noise": "none"}
            )
        cases[f"{protocol}-gauss"] = _case(protocol)
        cases[f"{protocol}-skellam"] = _case(protocol, **{"secagg.noise": "skellam"})
        cases[f"{protocol}-absent"] = _case(
            protocol, **{"network.link": LINK, "faults.absent_parties": DROPPED}
        )
        for r, when in enumerate(BETWEEN):
            cases[f"{protocol}-crash-after-{r}"] = _case(
                protocol,
                **{"network.link": LINK, "faults.crashes": [[c, when] for c in DROPPED]},
            )
        cases[f"{protocol}-aes-gcm-lossy"] = _case(
            protocol,
            seed=9,
            **{"network.encryption": "aes-gcm", "network.link": {"loss": 0.02}},
        )
    for seed in (1, 2):
        cases[f"secagg_plus-random-faults-{seed}"] = _case(
            "secagg_plus",
            seed=seed,
            **{
                "population.clients": 150,
                "secagg.dimension": 37,
                "secagg.modulus_bits": 32,
                "secagg.fraction_bits": 12,
                "secagg.degree": 0,
                "secagg.threshold": 0,
                "secagg.target_dropout": 0.1,
                "secagg.target_corruption": 0.05,
                "secagg.security_bits": 20,
                "faults.absent": 0.05,
                "faults.crash": 0.05,
                "faults.crash_window": [0.0, 0.3],
            },
        )
    cases["secagg-random-faults"] = _case(
        "secagg",
        seed=4,
        **{
            "population.clients": 60,
            "secagg.dimension": 9,
            "secagg.threshold": 31,
            "secagg.tolerated": 10,
            "faults.absent": 0.05,
            "faults.crash": 0.1,
            "faults.crash_window": [0.0, 0.3],
        },
    )
    cases["secagg-too-few-keys"] = _case(
        "secagg", **{"faults.absent_parties": [f"client-{i}" for i in range(6)]}
    )
    return cases


#: Larger rounds (seconds each): the shipped SecAgg+ scenario (N = 1,000, 2 % absent and
#: 2 % crashing) and a round shaped like the benchmark's (b = 32, d = 1,000).
SLOW_CASES: dict[str, dict[str, Any]] = {
    "secagg_plus-scenario": scenario_to_dict(builtin_scenario("secagg_plus")),
    "secagg_plus-bench-2000": set_fields(
        scenario_to_dict(builtin_scenario("secagg_plus")),
        {
            "seed": 1,
            "population.clients": 2000,
            "secagg.dimension": 1000,
            "secagg.noise": "none",
            "secagg.modulus_bits": 32,
        },
    ),
}


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def summary(data: dict[str, Any], processes: int | None = None) -> dict[str, Any]:
    """What a run released and put on the wire, exactly (floats by their bytes)."""
    sim = simulate(scenario_from_dict(data), processes=processes)
    out, trace = sim.outcome, sim.world.trace.arrays()
    kinds: dict[str, list[int]] = {}
    for code, name in enumerate(trace.kinds):
        sel = trace.kind == code
        kinds[name] = [int(sel.sum()), int(trace.wire_bytes[sel].sum())]
    return {
        "abort": None if out.ok else str(out.abort),
        "released": None if out.released is None else out.released.astype("<f8").tobytes().hex(),
        "survivors": [s.tolist() for s in out.survivors],
        "closed_at": [float(t).hex() for t in out.closed_at],
        "messages": len(trace),
        "bytes_by_kind": kinds,
        "wire_bytes": _digest(trace.wire_bytes.astype("<i8")),
        "routes": _digest(
            trace.src.astype("<i8"), trace.dst.astype("<i8"), trace.kind.astype("<i8")
        ),
        "fates": _digest(trace.status.astype("i1")),
        "times": _digest(
            trace.send_time.astype("<f8"),
            trace.depart_time.astype("<f8"),
            trace.recv_time.astype("<f8"),
        ),
    }


CASES = _cases()
ALL_CASES = {**CASES, **SLOW_CASES}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    if UPDATE:
        GOLDEN.write_text(
            json.dumps({name: summary(data) for name, data in ALL_CASES.items()}, indent=1) + "\n",
            encoding="utf-8",
        )
    return json.loads(GOLDEN.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_round_matches_the_golden_capture(name, golden):
    assert summary(CASES[name]) == golden[name]


@pytest.mark.parametrize("name", ["secagg_plus-random-faults-1", "secagg-random-faults"])
def test_two_worker_processes_give_the_same_round(name, golden):
    assert summary(CASES[name], processes=2) == golden[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_CASES))
def test_a_larger_round_matches_the_golden_capture(name, golden):
    assert summary(SLOW_CASES[name]) == golden[name]


def test_the_golden_cases_cover_releases_aborts_and_every_drop_point(golden):
    released = [g for g in golden.values() if g["released"] is not None]
    assert len(released) == len(golden) - 1
    # a drop after ShareKeys makes the server rebuild s^SK of the dropped: the live sets shrink
    assert any(len(set(map(len, g["survivors"]))) > 1 for g in golden.values())
