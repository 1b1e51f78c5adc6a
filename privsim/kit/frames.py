"""Scenario fields read back from a study's frame (for the protocols' reference tables)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["scenario_field"]


def scenario_field(
    frame: Any,
    name: str,
    config: Any,
    *,
    table: str,
    target: str | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Any:
    """A scenario field per row of a study frame: the grid's column, the study base's,
    for ``target`` (``"privacy.epsilon"``, ``"privacy.delta"``) the cell's
    ``privacy.target_*`` column, else the default: ``config``'s attribute for a field of
    the protocol's ``table``, ``defaults`` for the others (None when absent)."""
    import pandas as pd

    for column in (f"grid.{name}", f"base.{name}"):
        if column in frame:
            return frame[column]
    if name == target:
        section, _, attr = target.partition(".")
        if f"{section}.target_{attr}" in frame:
            return frame[f"{section}.target_{attr}"]
    section, _, attr = name.partition(".")
    default = getattr(config, attr, None) if section == table else (defaults or {}).get(name)
    return pd.Series([default] * len(frame), index=frame.index)
