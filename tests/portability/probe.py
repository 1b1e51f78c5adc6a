"""Run one built-in scenario and print, as JSON, its result and a digest of every message
trace the run simulated (routes, fates, wire bytes and the send, departure and receipt
times, floats by their bytes). Run as a script by tests/portability: the parent sets the
environment (NumPy's CPU dispatch, worker processes) and compares what children print.

    python tests/portability/probe.py '{"scenario": "quickstart", "set": {...}, "seed": 1}'

Given a JSON list of such specs, it runs them one after the other in this one process
and prints the list of their outputs (one interpreter's start-up for several runs).
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import numpy as np


def _trace_digest(world: Any) -> str:
    t = world.trace.arrays()
    h = hashlib.sha256()
    for ints in (t.src, t.dst, t.kind, t.status, t.wire_bytes):
        h.update(np.ascontiguousarray(ints).astype("<i8").tobytes())
    for times in (t.send_time, t.depart_time, t.recv_time):
        h.update(np.ascontiguousarray(times).astype("<f8").tobytes())
    return h.hexdigest()


def main(spec: dict[str, Any] | list[dict[str, Any]]) -> None:
    import privsim
    from privsim.sim import world as world_module

    digests: list[str] = []
    original = world_module.World.run

    def run(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        digests.append(_trace_digest(self))

    world_module.World.run = run  # type: ignore[method-assign]
    specs = spec if isinstance(spec, list) else [spec]
    if any(s.get("legacy_exp") for s in specs):
        if not all(s.get("legacy_exp") for s in specs):
            raise SystemExit("legacy_exp patches the process: give it to every spec or none")
        # the old, machine-dependent path (the test of the test)
        from privsim.sim import portable

        portable.exp = np.exp  # type: ignore[assignment]
        portable.exp_one = lambda x: float(np.exp(np.float64(x)))  # (one message's latency)
    outputs = []
    for one in specs:
        digests.clear()
        scenario = privsim.builtin_scenario(one["scenario"]).replace(one.get("set", {}))
        result = privsim.run(scenario, seed=one["seed"])
        outputs.append({"traces": list(digests), "result": result.to_dict()})
    json.dump(outputs if isinstance(spec, list) else outputs[0], sys.stdout)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
