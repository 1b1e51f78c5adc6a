"""Small formatters shared by the reports of every protocol."""

from __future__ import annotations

from typing import Any

__all__ = ["fmt_bytes", "fmt_eps"]


def fmt_bytes(n: float) -> str:
    """Bytes with a decimal unit: 512 B, 1.5 kB, 2.0 MB."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} GB"


def fmt_eps(value: Any) -> str:
    """An achieved ε as reported (``"inf"`` in result dicts)."""
    if value == "inf" or value == float("inf"):
        return "inf (no protection)"
    return f"{value:.4g}"
