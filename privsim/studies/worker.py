"""Running one replication and turning its result into a tidy row (any process, any host)."""

from __future__ import annotations

import time
import traceback
import warnings
from typing import Any

from privsim import __version__
from privsim.studies.study import Task, apply_fields

__all__ = ["ROW_TIMING_FIELDS", "flatten_result", "run_task"]

#: Fields that measure the machine, not the simulation (excluded when comparing runs).
ROW_TIMING_FIELDS = ("wall_seconds", "key_agreement_seconds")


def flatten_blr_result(result: dict[str, Any]) -> dict[str, Any]:
    """A BLR run's figures, one column group per method (``mae.TA``, ``epsilon.DDP``…)."""
    methods = result["methods"]
    row: dict[str, Any] = {
        "status": result["status"],
        "target_epsilon": result["privacy"]["target_epsilon"],
        "delta": result["privacy"]["delta"],
        "mae": {m: v["mae"] for m, v in methods.items()},
        "method_status": {m: v["status"] for m, v in methods.items()},
        "epsilon": {m: v["epsilon"] for m, v in methods.items()},
        "guarantee_met": {m: v["guarantee_met"] for m, v in methods.items()},
        "included": {m: v["included"] for m, v in methods.items() if "included" in v},
        "messages": {
            m: v["communication"]["messages"] for m, v in methods.items() if "communication" in v
        },
        "bytes": {
            m: v["communication"]["bytes"] for m, v in methods.items() if "communication" in v
        },
        "thresholds": result["thresholds"]
        and {k: result["thresholds"][k] for k in ("feature", "target")},
        "wall_seconds": result["wall_seconds"],
    }
    return row


def flatten_bcd_result(result: dict[str, Any]) -> dict[str, Any]:
    """A (DP-)BCD run's figures: R², AAPD and β of the published model, the centralised
    reference, abort, privacy spent (locally sensitive DP) and communication."""
    acc = result["accuracy"]
    comm = result["communication"]
    return {
        "status": result["status"],
        "abort_reason": (result["abort"] or {}).get("detail"),
        "accuracy": acc and {k: acc[k] for k in ("r2", "aapd", "beta_abs_error", "beta")},
        "reference": result["reference"],
        "dataset": {"columns": result["dataset"]["columns"]},
        "epsilon": result["privacy"]["epsilon_spent"],
        "target_epsilon": result["privacy"]["target_epsilon"],
        "iterations": result["iterations"],
        "r2_by_iteration": result.get("r2_by_iteration", []),
        "steps": result["steps"],
        "messages": comm["messages"],
        "bytes": comm["bytes"],
        "rounds": comm["rounds"],
        "duration": comm["duration"],
        "wall_seconds": result["wall_seconds"],
    }


def flatten_race_result(result: dict[str, Any]) -> dict[str, Any]:
    """A distributed-sketching run: error, privacy delivered, bytes per owner."""
    return {
        "status": result["status"],
        "accuracy": result["accuracy"],
        "epsilon": result["privacy"]["achieved_epsilon"],
        "guarantee_met": result["privacy"]["guarantee_met"],
        "target_epsilon": result["privacy"]["target_epsilon"],
        "messages": result["communication"]["messages"],
        "bytes": result["communication"]["bytes"],
        "bytes_per_owner": result["communication"]["bytes_per_owner"],
        "wall_seconds": result["wall_seconds"],
    }


def flatten_result(result: dict[str, Any]) -> dict[str, Any]:
    """The figures of a :class:`~privsim.runner.RunResult` that a study tabulates."""
    if result.get("protocol") == "race":
        return flatten_race_result(result)
    if result.get("protocol") == "blr":
        return flatten_blr_result(result)
    if result.get("protocol") == "bcd":
        return flatten_bcd_result(result)
    privacy = result["privacy"]
    parties = result["parties"]
    comm = result["communication"]
    row: dict[str, Any] = {
        "status": result["status"],
        "abort_reason": (result["abort"] or {}).get("reason"),
        "accuracy": result["accuracy"],
        "epsilon": privacy["achieved_epsilon"],
        "delta": privacy["delta"],
        "target_epsilon": privacy["target_epsilon"],
        "guarantee_met": privacy["guarantee_met"],
        "parties": {
            "clients": parties["clients"],
            "included": parties["included"],
            "absent": len(parties["absent"]),
            "crashed": len(parties["crashed"]),
            "excluded": len(parties["excluded"]),
            "colluding": len(parties["colluding"]),
        },
        "messages": comm["messages"],
        "bytes": comm["bytes"],
        "rounds": comm["rounds"],
        "cost": {
            role: {
                k: rc[k]
                for k in (
                    "messages_sent_mean",
                    "messages_sent_max",
                    "bytes_sent_mean",
                    "bytes_sent_max",
                    "bytes_received_mean",
                    "bytes_received_max",
                )
            }
            for role, rc in comm["roles"].items()
        },
        "duration": result["duration"],
        "wall_seconds": result["wall_seconds"],
        "key_agreement_seconds": result["key_agreement_seconds"],
    }
    base = result.get("baseline")
    if base and base.get("accuracy"):
        row["baseline"] = {"rmse": base["accuracy"]["rmse"], "epsilon": base["achieved_epsilon"]}
    return row


_BLAS_LIMITED = False


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
    from privsim.runner import run

    _one_blas_thread()
    from privsim.scenarios.loader import scenario_from_dict

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
        scenario = scenario_from_dict(apply_fields(base, coords))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run(scenario, task.seed).to_dict()
        row.update(flatten_result(result))
    except Exception as exc:  # recorded, never fatal to the study
        row.update(
            {
                "status": "error",
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=5),
                "wall_seconds": time.perf_counter() - started,
            }
        )
    return row
