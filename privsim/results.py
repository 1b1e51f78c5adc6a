"""Writing results: JSON files written atomically (a crash never leaves half a file),
through the guarded writer (:mod:`privsim.outputs`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from privsim.kit.result import jsonable
from privsim.outputs import OutputError, UnsafePathError, path_inside, write_bytes

__all__ = ["OutputError", "UnsafePathError", "path_inside", "write_json_atomic"]


def write_json_atomic(
    path: str | Path,
    data: dict[str, Any],
    *,
    within: str | Path | None = None,
    what: str = "result file",
) -> Path:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename
    (:func:`privsim.outputs.write_bytes`). With ``within``, ``path`` is relative to that
    directory and one that resolves outside it is refused (:class:`UnsafePathError`)
    before anything is created; an output that cannot be made is an
    :class:`OutputError` naming it and the reason."""
    text = json.dumps(jsonable(data), indent=2, sort_keys=False) + "\n"
    return write_bytes(path, text.encode("utf-8"), within=within, what=what)
