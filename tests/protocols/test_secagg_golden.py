"""SecAgg and SecAgg+ rounds are pure functions of (scenario, seed): the released sum and
the whole message trace (who sent what kind of message of how many bytes to whom, when,
and what became of it) match values captured from the reference implementation, for
several seeds, noise kinds and dropout patterns. Any speed-up of the simulation must
leave these unchanged.

The golden file is checked the way a user's is (``privsim.golden.compare``): integers,
routes and fates exactly (digests of integer arrays), floats — the released sum, the
rounds' closing times and every message's send, departure and receipt time — within the
default tolerance (relative 1e-9), never by the hash of their bytes, so that a file
written on one CPU checks on any other. (The simulated times are in fact the same bits on
any CPU, see tests/portability; the tolerance is what docs/explanation/reproducibility.md promises.) Rounds of more
than ``LISTED`` messages keep summary statistics of their times instead of every value.

Regenerate (only when a change is meant to alter what is simulated):

    PRIVSIM_UPDATE_GOLDEN=1 python -m pytest tests/protocols/test_secagg_golden.py -m 'slow or not slow'
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privsim.golden import compare, format_differences
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


#: Rounds with at most this many messages list every message's times in the golden file.
LISTED = 1000


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _floats(values: np.ndarray) -> list[float | str]:
    """Floats for JSON: finite values as numbers, the others by name."""
    return [float(v) if np.isfinite(v) else str(float(v)) for v in values.tolist()]


def _times(values: np.ndarray) -> list[float | str] | dict[str, Any]:
    if values.size <= LISTED:
        return _floats(values)
    finite = values[np.isfinite(values)]
    positions = np.linspace(0, finite.size - 1, 17).astype(np.int64)
    return {
        "count": int(finite.size),
        "sum": float(finite.sum()),
        "min": float(finite.min()),
        "max": float(finite.max()),
        "at": _floats(finite[positions]),
    }


def summary(data: dict[str, Any], processes: int | None = None) -> dict[str, Any]:
    """What a run released and put on the wire: integers exactly, floats as values."""
    sim = simulate(scenario_from_dict(data), processes=processes)
    out, trace = sim.outcome, sim.world.trace.arrays()
    kinds: dict[str, list[int]] = {}
    for code, name in enumerate(trace.kinds):
        sel = trace.kind == code
        kinds[name] = [int(sel.sum()), int(trace.wire_bytes[sel].sum())]
    return {
        "abort": None if out.ok else str(out.abort),
        "released": None if out.released is None else _floats(out.released.astype(np.float64)),
        "survivors": [s.tolist() for s in out.survivors],
        "closed_at": _floats(np.asarray(out.closed_at, dtype=np.float64)),
        "messages": len(trace),
        "bytes_by_kind": kinds,
        "wire_bytes": _digest(trace.wire_bytes.astype("<i8")),
        "routes": _digest(
            trace.src.astype("<i8"), trace.dst.astype("<i8"), trace.kind.astype("<i8")
        ),
        "fates": _digest(trace.status.astype("i1")),
        "times": {
            "send": _times(trace.send_time.astype(np.float64)),
            "depart": _times(trace.depart_time.astype(np.float64)),
            "receive": _times(trace.recv_time.astype(np.float64)),
        },
    }


def assert_matches(name: str, now: dict[str, Any], golden: dict[str, Any]) -> None:
    differences = compare(golden[name], now)
    assert not differences, f"{name}:\n{format_differences(differences)}"


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
    assert_matches(name, summary(CASES[name]), golden)


@pytest.mark.parametrize("name", ["secagg_plus-random-faults-1", "secagg-random-faults"])
def test_two_worker_processes_give_the_same_round(name, golden):
    assert_matches(name, summary(CASES[name], processes=2), golden)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_CASES))
def test_a_larger_round_matches_the_golden_capture(name, golden):
    assert_matches(name, summary(SLOW_CASES[name]), golden)


def test_the_golden_cases_cover_releases_aborts_and_every_drop_point(golden):
    released = [g for g in golden.values() if g["released"] is not None]
    assert len(released) == len(golden) - 1
    # a drop after ShareKeys makes the server rebuild s^SK of the dropped: the live sets shrink
    assert any(len(set(map(len, g["survivors"]))) > 1 for g in golden.values())
