"""Running one replication and turning its result into a tidy row (any process, any host).

The common sections of every result (privacy, accuracy, parties, communication,
coalition, methods, timing) are flattened here, once; a protocol adds its own columns
through its registry entry's ``flatten``, and its per-round curves (``curves``: a list
of dicts, one per round) when its study view names them (``StudyView.curves``).
"""

from __future__ import annotations

import os
import signal
import time
import traceback
import warnings
from collections.abc import Mapping
from typing import Any

from privsim import registry
from privsim.analysis.curves import CURVES
from privsim.kit.result import without_timing
from privsim.kit.securesum.pool import ENV as ROUND_PROCESSES
from privsim.runs import run
from privsim.scenarios.schema import Scenario
from privsim.sim.lifetime import die_with_parent
from privsim.studies.study import Task, apply_fields
from privsim.version import __version__

__all__ = [
    "PRIVACY_COLUMNS",
    "flatten_result",
    "init_worker_process",
    "run_task",
    "without_timing",
]

#: The privacy figures every row carries, for the run and for each method.
PRIVACY_COLUMNS = (
    "target_epsilon",
    "target_delta",
    "achieved_epsilon",
    "delta",
    "guarantee_met",
    "non_private",
)
#: Per-role communication figures kept in rows (the result file has them all).
ROLE_COLUMNS = (
    "messages_sent_mean",
    "messages_sent_max",
    "bytes_sent_mean",
    "bytes_sent_max",
    "bytes_received_mean",
    "bytes_received_max",
)


def _privacy(p: Mapping[str, Any]) -> dict[str, Any]:
    return {k: p[k] for k in PRIVACY_COLUMNS if k in p}


def _communication(c: Mapping[str, Any] | None, *, roles: bool = True) -> dict[str, Any] | None:
    if not c:
        return None
    out = {k: c[k] for k in ("messages", "bytes", "rounds", "duration") if k in c}
    if roles and c.get("roles"):
        out["roles"] = {
            role: {k: rc[k] for k in ROLE_COLUMNS if k in rc} for role, rc in c["roles"].items()
        }
    return out


def _parties(p: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not p:
        return None
    counts = {k: len(p[k]) for k in ("absent", "crashed", "excluded", "colluding") if k in p}
    return {"total": p["total"], "included": p.get("included"), **counts}


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


def flatten_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of a run result that a study tabulates (nested; the store flattens
    nested dicts into dotted columns such as ``privacy.achieved_epsilon``)."""
    abort = result.get("abort") or {}
    coalition = result.get("coalition") or {}
    row: dict[str, Any] = {
        "protocol": result["protocol"],
        "status": result["status"],
        "abort_reason": abort.get("reason"),
        "abort_detail": abort.get("detail"),
        "privacy": _privacy(result["privacy"]),
        "accuracy": result.get("accuracy"),
        "parties": _parties(result.get("parties")),
        "communication": _communication(result.get("communication")),
        "coalition": {
            "members": len(coalition.get("members", ())),
            "exposure": dict(coalition.get("exposure") or {}),
        },
        "methods": {
            name: _present(
                {
                    "status": m["status"],
                    "privacy": _privacy(m["privacy"]),
                    "accuracy": m.get("accuracy"),
                    "communication": _communication(m.get("communication"), roles=False),
                }
            )
            for name, m in (result.get("methods") or {}).items()
        },
        "timing": dict(result["timing"]),
        "attack": _attack(result.get("attack")),
    }
    spec = registry.get(result["protocol"])
    row = _merge(_present(row), spec.flatten(result))
    curves = _curves(result, spec.study.curves)
    if curves is not None:
        row[CURVES] = curves
    return row


def _attack(a: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An attack's scalar figures, and its list of rounds recovered as their count;
    nested sections, per-client figures and other lists left out (a protocol keeps
    the sections it wants through its ``flatten``)."""
    if not a:
        return None
    out: dict[str, Any] = {
        k: v for k, v in a.items() if isinstance(v, (int, float, str, bool)) or v is None
    }
    if isinstance(a.get("rounds_recovered"), list):
        out["rounds_recovered"] = len(a["rounds_recovered"])
    return out


def _curves(result: Mapping[str, Any], key: str) -> list[dict[str, Any]] | None:
    """The per-round dicts the protocol's study view keeps (``result[protocol][key]``),
    as they are; None when the view keeps none or the result has none."""
    if not key:
        return None
    rounds = (result.get(result["protocol"]) or {}).get(key)
    if not isinstance(rounds, list):
        return None
    return [dict(r) for r in rounds if isinstance(r, Mapping)]


def _present(section: dict[str, Any]) -> dict[str, Any]:
    """``section`` without the parts a protocol does not report (``None``)."""
    return {k: v for k, v in section.items() if v is not None}


_BLAS_LIMITED = False


def init_worker_process(parent: int | None = None) -> None:
    """Set up a study worker process: it ignores Ctrl-C (the sweep stops its workers
    itself and keeps the finished rows, with no traceback from each worker), and it ends
    when its parent dies, even by ``kill -9`` (no orphan keeps computing rows nobody will
    store). ``parent``: the pid that forked it (the sweep), when known; under the
    ``forkserver`` and ``spawn`` start methods the parent is whoever started it, and a
    forkserver ends with the sweep."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    # The sweep already runs a worker per core: a round inside a row stays in its process.
    os.environ.setdefault(ROUND_PROCESSES, "1")


def _one_blas_thread() -> None:
    """Worker processes run one replication each, side by side on every core: a BLAS
    library that also starts one thread per core oversubscribes the machine, and its
    spinning threads slowed the small matrix work of a BLR replication 100-fold when two
    workers shared two cores. Limit BLAS to one thread per worker, once per process."""
    global _BLAS_LIMITED
    if not _BLAS_LIMITED:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        _BLAS_LIMITED = True


def run_task(base: dict[str, Any], task: Task) -> dict[str, Any]:
    """Run one replication. Never raises: a failure becomes a row with status ``error``."""
    _one_blas_thread()
    coords = dict(task.coordinates)
    row: dict[str, Any] = {
        "row_id": task.row_id,
        "cell": task.cell,
        "replication": task.replication,
        "seed": task.seed,
        "grid": coords,
        "version": __version__,
    }
    started = time.perf_counter()
    try:
        scenario = Scenario.from_dict(apply_fields(base, coords))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the study preflighted every cell before any work (Study.validate)
            result = run(scenario, task.seed, preflight=False).to_dict()
        row.update(flatten_result(result))
    except Exception as exc:  # recorded, never fatal to the study
        row.update(
            {
                "status": "error",
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=5),
                "timing": {"wall_seconds": time.perf_counter() - started},
            }
        )
    return row
