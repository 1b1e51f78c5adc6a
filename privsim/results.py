"""Writing results: JSON files written atomically (a crash never leaves half a file)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from privsim.kit.result import jsonable

__all__ = ["UnsafePathError", "path_inside", "write_json_atomic"]


class UnsafePathError(ValueError):
    """A file would be written outside the output directory it belongs in."""


def path_inside(directory: str | Path, path: str | Path) -> Path:
    """``directory / path`` if it resolves inside ``directory`` (symbolic links and ``..``
    followed), else :class:`UnsafePathError`.

    The file's own name is not followed (an atomic write replaces a link, never writes
    through it), its directory is."""
    root = Path(directory).resolve()
    if root.exists() and not root.is_dir():
        raise UnsafePathError(f"output directory {directory} is a file; choose a directory")
    target = root / path  # an absolute ``path`` replaces ``root`` here and is caught below
    if target.name in ("", ".", ".."):
        raise UnsafePathError(f"{str(path)!r} is not a file name inside {directory}")
    resolved = target.parent.resolve() / target.name
    if not resolved.is_relative_to(root):
        raise UnsafePathError(
            f"refusing to write {str(path)[:80]!r}: it resolves outside the output directory "
            f"{directory}; give a plain file name (no '/', '..' or absolute path)"
        )
    return resolved


def _umask() -> int:
    """The process's umask (read by setting it, and set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json_atomic(
    path: str | Path, data: dict[str, Any], *, within: str | Path | None = None
) -> Path:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename. With
    ``within``, ``path`` is relative to that directory and one that resolves outside it
    is refused (:class:`UnsafePathError`) before anything is created."""
    target = Path(path) if within is None else path_inside(within, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(jsonable(data), fh, indent=2, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # as open() would have made it, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target if within is None else Path(within) / path  # as the user wrote it
