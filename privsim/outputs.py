"""The one guarded writer: every file privsim writes goes through here.

A file is written into an output directory (``--out``, a results directory, the golden
file's directory) and never outside it:

- an empty path is refused (it would mean the current directory);
- a directory that cannot be made is named with its path and the operating system's
  reason (read-only, under a plain file, a name longer than the file system allows);
- a path is resolved first, and one that leads outside the directory (``..``, an
  absolute path, a symbolic link anywhere inside it) is refused with
  :class:`UnsafePathError` before anything is created;
- the file is written through a temporary file in the same directory, opened with
  ``O_CREAT | O_EXCL | O_NOFOLLOW``, fsynced and renamed over the target: a reader never
  sees half a file, and a link at the target's name is replaced, never written through.
  The directories on the way are opened one by one with ``O_NOFOLLOW`` relative to the
  one above (where the platform can), so a link swapped in meanwhile is refused too;
- a file written in place (a lock, an SQLite store) is opened with ``O_NOFOLLOW``, or
  refused when it is a link leading outside.

Every refusal is an :class:`OutputError` (a ``ValueError``): ``problem`` names the path
and the reason, ``fix`` what to do. This module imports nothing of privsim, so every
layer may use it.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import TextIO

__all__ = [
    "OutputError",
    "UnsafePathError",
    "check_output_folder",
    "make_folder",
    "open_lock",
    "output_folder",
    "path_inside",
    "refuse_links_out",
    "write_bytes",
    "write_text",
]

#: Directories can be opened and files made relative to them (POSIX): the race-free path.
_AT = {os.open, os.mkdir, os.rename, os.unlink} <= os.supports_dir_fd and hasattr(os, "O_DIRECTORY")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: The longest file name most file systems allow (bytes), where pathconf cannot say.
_NAME_MAX = 255


class OutputError(ValueError):
    """An output privsim cannot write: ``problem`` names the path and the reason,
    ``fix`` what to do; ``path`` is the path."""

    def __init__(self, problem: str, fix: str = "", path: str | Path | None = None) -> None:
        super().__init__(f"{problem}; {fix}" if fix else problem)
        self.problem = problem
        self.fix = fix
        self.path = path


class UnsafePathError(OutputError):
    """A file would be written outside the output directory it belongs in."""


def _shown(path: str | Path) -> str:
    return repr(str(path)[:200])


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__


def _cannot(what: str, path: str | Path, exc: BaseException, verb: str = "create") -> OutputError:
    """The named error of an operating-system refusal to make or write ``path``."""
    code = getattr(exc, "errno", None)
    if code == errno.ENOTDIR:
        return OutputError(
            f"cannot {verb} the {what} {_shown(path)}: a part of its path is a file, not a "
            f"directory ({_reason(exc)})",
            "choose a path under a directory",
            path,
        )
    if code == errno.ENAMETOOLONG:
        return OutputError(
            f"cannot {verb} the {what} {_shown(path)}: a name in it is longer than the file "
            f"system allows ({_reason(exc)})",
            "choose a shorter name",
            path,
        )
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return OutputError(
            f"cannot {verb} the {what} {_shown(path)} ({_reason(exc)})",
            "choose a directory you can write, or make it writable",
            path,
        )
    if code in (errno.EISDIR,):
        return OutputError(
            f"cannot {verb} the {what} {_shown(path)}: a directory is in its place",
            "remove or rename that directory, or choose another path",
            path,
        )
    if code == errno.ELOOP:
        return UnsafePathError(
            f"cannot {verb} the {what} {_shown(path)}: a symbolic link appeared on its path "
            "while privsim wrote it",
            "remove the link; privsim does not write through links",
            path,
        )
    return OutputError(
        f"cannot {verb} the {what} {_shown(path)} ({_reason(exc)})",
        "check the path, the free space and the permissions, or choose another path",
        path,
    )


def _require_path(path: str | Path, what: str) -> None:
    """Refuse an empty path (it would mean the current directory) or a NUL byte."""
    text = os.fspath(path)
    if text == "":
        raise OutputError(
            f"the {what} is an empty path", "give a directory name, e.g. --out results", path
        )
    if "\x00" in str(text):
        raise OutputError(f"the {what} {_shown(path)} holds a NUL byte", "give a plain path", path)


def _check_names(path: Path, what: str) -> None:
    """Refuse a path with a name longer than :data:`_NAME_MAX` bytes, before any work."""
    for name in path.parts:
        if len(os.fsencode(name)) > _NAME_MAX:
            raise OutputError(
                f"cannot create the {what} {_shown(path)}: the name {name[:40]!r}… is "
                f"{len(os.fsencode(name))} bytes, longer than the file system allows "
                f"({_NAME_MAX})",
                "choose a shorter name",
                path,
            )


def check_output_folder(folder: str | Path, what: str = "output directory") -> None:
    """Check, without creating anything, that ``folder`` can be the output directory:
    not empty, not a file, no name too long, and it (or the nearest directory above it
    that exists) writable. For a command to refuse before a long run, not after it."""
    _require_path(folder, what)
    p = Path(folder)
    _check_names(p, what)
    probe = p
    try:
        while not probe.exists():
            if probe.is_symlink():  # a dangling link: mkdir would fail on it
                raise OutputError(
                    f"cannot create the {what} {_shown(folder)}: {_shown(probe)} is a link to "
                    "nothing",
                    "remove the link, or choose another path",
                    folder,
                )
            if probe.parent == probe:
                return
            probe = probe.parent
        if not probe.is_dir():
            if probe == p:
                raise OutputError(f"{what} {folder} is a file", "choose a directory", folder)
            raise OutputError(
                f"cannot create the {what} {_shown(folder)}: {_shown(probe)} is a file, not "
                "a directory",
                "choose a path under a directory",
                folder,
            )
    except OSError as exc:
        raise _cannot(what, folder, exc) from None
    if not os.access(probe, os.W_OK | os.X_OK):
        verb = "write in" if probe == p else "create"
        raise OutputError(
            f"cannot {verb} the {what} {_shown(folder)} ({_shown(probe)} is not writable)",
            "choose a directory you can write, or make it writable",
            folder,
        )


def output_folder(folder: str | Path, what: str = "output directory") -> Path:
    """``folder``, created with its parents if need be; refused with an
    :class:`OutputError` naming it and the reason when it is empty, a file, or cannot be
    made. ``folder`` itself may be a link (the user named it); what is inside is checked
    by the writers."""
    _require_path(folder, what)
    p = Path(folder)
    try:
        if p.exists() and not p.is_dir():
            raise OutputError(f"{what} {folder} is a file", "choose a directory", folder)
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a dangling link, or a file in its place made meanwhile
        raise OutputError(
            f"cannot create the {what} {_shown(folder)}: something that is not a directory "
            "is in its place",
            "remove it, or choose another path",
            folder,
        ) from None
    except (OSError, ValueError) as exc:
        raise _cannot(what, folder, exc) from None
    return p


def _resolve(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # a loop of links
        raise UnsafePathError(
            f"cannot resolve {_shown(path)} ({_reason(exc)})",
            "remove the looping symbolic link",
            path,
        ) from None


def path_inside(directory: str | Path, path: str | Path, *, follow: bool = False) -> Path:
    """``directory / path`` resolved (symbolic links and ``..`` followed) if it stays
    inside ``directory``, else :class:`UnsafePathError`.

    The file's own name is followed only with ``follow`` (a directory to write into):
    an atomic write replaces a link at its name, never writes through it."""
    root = _resolve(Path(directory))
    if root.exists() and not root.is_dir():
        raise UnsafePathError(f"output directory {directory} is a file", "choose a directory")
    target = root / path  # an absolute ``path`` replaces ``root`` here and is caught below
    if target.name in ("", ".", ".."):
        raise UnsafePathError(f"{str(path)!r} is not a file name inside {directory}")
    resolved = _resolve(target) if follow else _resolve(target.parent) / target.name
    if not resolved.is_relative_to(root):
        raise UnsafePathError(
            f"refusing to write {str(path)[:80]!r}: it resolves outside the output directory "
            f"{directory} (through '..', an absolute path or a symbolic link)",
            "give a plain name inside it, and remove any link that leads out of it",
            path,
        )
    return resolved


def _walk(root: Path, parts: tuple[str, ...], what: str, shown: str | Path) -> int:
    """A descriptor of ``root / parts``, each part made if missing and opened with
    ``O_NOFOLLOW`` relative to the one above (a link swapped in is refused)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
    fd = os.open(root, flags)
    try:
        for part in parts:
            try:
                os.mkdir(part, 0o777, dir_fd=fd)
            except FileExistsError:
                pass
            inner = os.open(part, flags | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise _cannot(what, shown, exc) from None
        raise
    return fd


def _name_max(fd: int) -> int:
    try:
        return int(os.fpathconf(fd, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return _NAME_MAX


def _place(path: str | Path, within: str | Path | None, what: str) -> tuple[Path, Path]:
    """(resolved output directory, resolved target) of a file to write, the directory
    made and the target checked to be inside it."""
    _require_path(path, what)
    if within is None:
        folder: str | Path = Path(path).parent
        name: str | Path = Path(path).name
    else:
        _require_path(within, "output directory")
        folder, name = within, path
    output_folder(folder)
    target = path_inside(folder, name)
    return _resolve(Path(folder)), target


def write_bytes(
    path: str | Path, data: bytes, *, within: str | Path | None = None, what: str = "output file"
) -> Path:
    """Write ``data`` to ``path`` atomically (a temporary file in the same directory,
    ``O_EXCL | O_NOFOLLOW``, fsynced, renamed over the target). With ``within``, ``path``
    is relative to that directory (or absolute inside it); without, the directory is
    ``path``'s own. Anything resolving outside the directory is refused
    (:class:`UnsafePathError`) before anything is created. Returns the path as the user
    wrote it."""
    root, target = _place(path, within, what)
    shown = Path(within) / path if within is not None else Path(path)
    if not _AT:  # pragma: no cover - not POSIX: the checks above, then plain paths
        _write_by_path(target, data, what, shown)
        return shown
    fd = _walk(root, target.parent.relative_to(root).parts, "directory of the " + what, shown)
    try:
        if len(os.fsencode(target.name)) > _name_max(fd):
            raise OutputError(
                f"cannot create the {what} {_shown(shown)}: its name is longer than the file "
                f"system allows ({_name_max(fd)} bytes)",
                "choose a shorter name",
                shown,
            )
        _write_at(fd, target.name, data, what, shown)
    finally:
        os.close(fd)
    return shown


def _temporary_name(name: str) -> str:
    """``.NAME.<random>.tmp``, NAME cut so that the whole stays under 255 bytes."""
    return f".{name[:50]}.{secrets.token_hex(8)}.tmp"


def _write_at(dir_fd: int, name: str, data: bytes, what: str, shown: Path) -> None:
    tmp = _temporary_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)  # 0666 less the umask, as open()
    except OSError as exc:
        raise _cannot(what, shown, exc, "write") from None
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as exc:
            raise _cannot(what, shown, exc, "write") from None
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    try:
        os.fsync(dir_fd)  # the rename itself on disk
    except OSError:  # pragma: no cover - a file system that cannot sync a directory
        pass


def _write_by_path(target: Path, data: bytes, what: str, shown: Path) -> None:  # pragma: no cover
    tmp = target.with_name(_temporary_name(target.name))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _cannot(what, shown, exc, "write") from None


def write_text(
    path: str | Path, text: str, *, within: str | Path | None = None, what: str = "output file"
) -> Path:
    """:func:`write_bytes` of ``text`` in UTF-8."""
    return write_bytes(path, text.encode("utf-8"), within=within, what=what)


def make_folder(directory: str | Path, name: str | Path, what: str = "output directory") -> Path:
    """``directory / name``, made if missing, refused when it (or a link on the way)
    leads outside ``directory``; returns it as the user wrote it."""
    output_folder(directory)
    shown = Path(directory) / name
    root = _resolve(Path(directory))
    target = path_inside(directory, name, follow=True)
    if target == root:
        raise UnsafePathError(f"{str(name)!r} is not a directory inside {directory}")
    if not _AT:  # pragma: no cover - not POSIX
        output_folder(target, what)
        return shown
    os.close(_walk(root, target.relative_to(root).parts, what, shown))
    return shown


def refuse_links_out(directory: str | Path, names: tuple[str, ...], what: str = "file") -> None:
    """Refuse (:class:`UnsafePathError`) any of ``names`` in ``directory`` that is a
    symbolic link leading outside it: for files a library writes in place (an SQLite
    store and its journal), which privsim cannot open itself."""
    root = _resolve(Path(directory))
    for name in names:
        path = Path(directory) / name
        if path.is_symlink() and not _resolve(path).is_relative_to(root):
            raise UnsafePathError(
                f"the {what} {_shown(path)} is a symbolic link leading outside {directory}; "
                "privsim does not write through it",
                "remove the link, or choose another --out directory",
                path,
            )


def open_lock(directory: str | Path, name: str, what: str = "lock file") -> TextIO:
    """The regular file ``directory / name`` opened for reading and writing (made if
    missing) with ``O_NOFOLLOW``: a link there is refused, never followed, and so is a
    FIFO, a device or a directory (opened without blocking)."""
    output_folder(directory)
    path = Path(directory) / name
    flags = os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
    try:
        if _AT:
            dir_fd = _walk(_resolve(Path(directory)), (), what, path)
            try:
                fd = os.open(name, flags, 0o666, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
        else:  # pragma: no cover - not POSIX
            fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EMLINK and _NOFOLLOW):
            raise UnsafePathError(
                f"the {what} {_shown(path)} is a symbolic link; privsim does not write "
                "through links",
                "remove it",
                path,
            ) from None
        raise _cannot(what, path, exc, "open") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise OutputError(f"the {what} {_shown(path)} is not a regular file", "remove it", path)
    return os.fdopen(fd, "r+", encoding="utf-8")
