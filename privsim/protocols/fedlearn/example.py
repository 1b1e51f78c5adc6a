"""The small scenario the protocol's contract test, examples and audit start from."""

from __future__ import annotations

from typing import Any

__all__ = ["EXAMPLE"]

EXAMPLE: dict[str, Any] = {
    "name": "fedlearn-example",
    "seed": 1,
    "protocol": "fedlearn",
    "population": {"clients": 60, "compute_nodes": 3},
    "privacy": {"epsilon": 4.0, "delta": 1e-5},
    "training": {"rounds": 4, "cohort": 20, "aggregation": "dca", "local_epochs": 1},
    "dataset": {"source": "synthetic", "synthetic_features": 10, "synthetic_classes": 3},
    "model": {"name": "softmax"},
    "network": {"encryption": "none"},
}
