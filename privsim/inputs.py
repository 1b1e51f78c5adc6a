"""The one guarded reader: every file privsim reads goes through here.

A file is read only when it is a regular file (a device, a FIFO, a socket or a directory
is named, and a FIFO is opened without waiting for a writer), of at most a size limit
checked before a byte is read (``$PRIVSIM_MAX_INPUT_BYTES`` raises it for text inputs,
``$PRIVSIM_MAX_DATA_BYTES`` for data files). JSON and TOML are nested at most
:data:`MAX_NESTING` lists or tables deep: the text is scanned for its depth without
recursion *before* the parser (which recurses, and for TOML's dotted keys takes time and
memory quadratic in their length) sees it, and the parsed data is walked again, without
recursion, for the depth that dotted keys and table headers add. Parsed data can be
checked against a :class:`Shape` (top-level type, required and optional keys and their
types), and an error names the field.

Every refusal is an :class:`InputFileError` (a ``ValueError``; one whose file is missing
is also a ``FileNotFoundError``) whose ``problem`` names the file and whose ``fix`` says
what to do; callers wrap it in their own named error. This module imports nothing of
privsim, so every layer may use it.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate
from operator import methodcaller
from pathlib import Path
from typing import IO, Any

__all__ = [
    "MAX_DATA_BYTES",
    "MAX_DATA_ENV",
    "MAX_INPUT_BYTES",
    "MAX_INPUT_ENV",
    "MAX_NESTING",
    "MAX_TOML_BYTES",
    "InputFileError",
    "InputKindError",
    "InputMissingError",
    "InputShapeError",
    "InputSyntaxError",
    "InputTooDeepError",
    "InputTooLargeError",
    "InputUnreadableError",
    "Shape",
    "check_shape",
    "decode_text",
    "input_exists",
    "input_limit",
    "open_input",
    "parse_json",
    "parse_toml",
    "read_input_bytes",
    "read_input_head",
    "read_input_text",
    "read_json",
    "read_toml",
]

#: The largest JSON or text input privsim reads (a golden file, a study description; 64
#: MiB): an endless or huge input is refused instead of filling the memory.
MAX_INPUT_BYTES = 64 * 2**20
#: The largest TOML file (a scenario, a study, a study's base; 4 MiB, a thousand times a
#: large scenario): TOML is parsed in pure Python at about 1 MB/s.
MAX_TOML_BYTES = 4 * 2**20
#: The largest data file (a user's CSV, a registered data set's file; 256 MiB).
MAX_DATA_BYTES = 256 * 2**20
#: Environment variables raising the limits (a number of bytes).
MAX_INPUT_ENV = "PRIVSIM_MAX_INPUT_BYTES"
MAX_DATA_ENV = "PRIVSIM_MAX_DATA_BYTES"
#: The deepest nesting of lists and tables in a JSON or TOML file (a result is about 6
#: deep, a scenario at most 32): well below Python's recursion limit.
MAX_NESTING = 64


class InputFileError(ValueError):
    """A file privsim cannot read as asked: ``problem`` names the file and what is
    wrong, ``fix`` what to do; ``path`` is the file and ``reason`` what is wrong in a few
    words ("a FIFO (named pipe)", "not valid JSON", ...), for a caller's own message."""

    def __init__(
        self, problem: str, fix: str, path: str | Path | None = None, reason: str = ""
    ) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix
        self.path = path
        self.reason = reason or problem


class InputMissingError(InputFileError, FileNotFoundError):
    """The file does not exist."""


class InputKindError(InputFileError):
    """The path is not a regular file: a directory, a device, a FIFO or a socket."""


class InputTooLargeError(InputFileError):
    """The file is larger than the limit (the message gives it and how to raise it)."""


class InputUnreadableError(InputFileError):
    """The operating system refuses to open or read the file (permissions, a name too
    long, a NUL byte, an I/O error)."""


class InputSyntaxError(InputFileError):
    """The bytes are not UTF-8 text, or the text is not valid JSON or TOML."""


class InputTooDeepError(InputFileError):
    """The data nests lists or tables more than :data:`MAX_NESTING` deep."""


class InputShapeError(InputFileError):
    """The parsed data is not of the expected shape; ``field`` is the dotted key (empty
    for the top level)."""

    def __init__(
        self, problem: str, fix: str, path: str | Path | None, field: str, reason: str = ""
    ) -> None:
        super().__init__(problem, fix, path, reason)
        self.field = field


def _shown(path: str | Path) -> str:
    """A path as quoted in a message (long ones cut)."""
    return repr(str(path)[:200])


def input_limit(default: int = MAX_INPUT_BYTES, env: str = MAX_INPUT_ENV) -> int:
    """The size limit: ``$env`` (a whole number of bytes) when set, else ``default``."""
    value = os.environ.get(env, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number >= 1 and number == int(number)):
        raise InputFileError(
            f"{env}={value[:40]!r} is not a number of bytes",
            f"set it to a whole number of bytes, e.g. {env}={2 * default}, or unset it",
        )
    return int(number)


def _file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((words for test, words in kinds if test(mode)), "a special file")


def _os_error(exc: OSError | ValueError, path: str | Path, what: str) -> InputFileError:
    """The named error of an operating-system refusal."""
    if isinstance(exc, FileNotFoundError):
        return InputMissingError(
            f"{what} {_shown(path)} does not exist",
            f"give the path of an existing {what}",
            path,
            "it does not exist",
        )
    if isinstance(exc, IsADirectoryError):  # Windows opens no directory
        return InputKindError(
            f"{what} {_shown(path)} is a directory, not a readable text file (privsim reads "
            "regular files only)",
            f"give the path of a {what}, not a device, FIFO or directory",
            path,
            "a directory",
        )
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
    return InputUnreadableError(
        f"{what} {_shown(path)} cannot be read ({reason})",
        "check the path and that you may read it",
        path,
        reason,
    )


def input_exists(path: str | Path, what: str) -> bool:
    """Whether ``path`` exists (a link to nothing, or under a plain file, does not); a
    path the system cannot look up at all (a name too long, a NUL byte, no permission on
    a directory above) is an :class:`InputUnreadableError` naming it, not an ``OSError``."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False
        raise _os_error(exc, path, what) from None
    except ValueError as exc:  # a NUL byte
        raise _os_error(exc, path, what) from None
    return True


def _not_regular(path: str | Path, what: str, mode: int) -> InputKindError:
    return InputKindError(
        f"{what} {_shown(path)} is {_file_kind(mode)}, not a readable text file (privsim "
        "reads regular files only)",
        f"give the path of a {what}, not a device, FIFO or directory",
        path,
        _file_kind(mode),
    )


@contextmanager
def open_input(path: str | Path, what: str) -> Iterator[IO[bytes]]:
    """The regular file ``path``, opened for reading in binary; anything else is an
    :class:`InputFileError` raised before a byte is read. A FIFO is opened without
    waiting for a writer (``O_NONBLOCK``), so nothing hangs."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:  # missing, no permission, too long, a NUL byte
        try:  # a socket cannot be opened at all (ENXIO): name what it is
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise _not_regular(path, what, mode) from None
        raise _os_error(exc, path, what) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, what, info.st_mode)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def _too_large(path: str | Path, what: str, size: str, limit: int, env: str) -> InputFileError:
    shown = f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit:,} bytes"
    typical = "a few kB of text" if env == MAX_INPUT_ENV else "a table of data"
    return InputTooLargeError(
        f"{what} {_shown(path)} is {size} bytes, more than the {shown} privsim reads as a {what}",
        f"give the path of a {what} ({typical}), not a data file or a device; if it is one, "
        f"raise the limit with {env}=BYTES",
        path,
        f"{size} bytes, more than {shown}",
    )


def read_input_bytes(
    path: str | Path, what: str, *, limit: int | None = None, env: str = MAX_INPUT_ENV
) -> bytes:
    """The bytes of the regular file ``path`` (``what``: "scenario file", ...), at most
    ``limit`` (default: ``$env``, else :data:`MAX_INPUT_BYTES`), checked before reading
    and again while reading (``/proc`` files say they are empty; a file may grow)."""
    limit = input_limit(MAX_INPUT_BYTES, env) if limit is None else limit
    with open_input(path, what) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise _too_large(path, what, f"{size:,}", limit, env)
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise _os_error(exc, path, what) from None
    if len(data) > limit:
        raise _too_large(path, what, f"at least {len(data):,}", limit, env)
    return data


def read_input_head(path: str | Path, what: str, size: int) -> bytes:
    """The first ``size`` bytes of the regular file ``path`` (a file's magic number)."""
    with open_input(path, what) as fh:
        try:
            return fh.read(size)
        except OSError as exc:
            raise _os_error(exc, path, what) from None


def decode_text(data: bytes, what: str, path: str | Path) -> str:
    """``data`` as UTF-8 text, else an :class:`InputSyntaxError` giving the offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputSyntaxError(
            f"{what} {_shown(path)} is not a readable text file (not UTF-8 text: "
            f"undecodable byte at offset {exc.start})",
            f"save it as UTF-8 text, or give the path of a {what}",
            path,
            f"not UTF-8 text: undecodable byte at offset {exc.start}",
        ) from None


def read_input_text(
    path: str | Path, what: str, limit: int | None = None, env: str = MAX_INPUT_ENV
) -> str:
    """:func:`read_input_bytes` decoded as UTF-8; bytes that are not UTF-8 raise the
    ``UnicodeDecodeError`` (for a caller that names it its own way)."""
    return read_input_bytes(path, what, limit=limit, env=env).decode("utf-8")


# -- nesting depth, without recursion --------------------------------------------------

#: +1 for an opening bracket, -1 for a closing one.
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
#: A JSON string (possessive, and matching wherever it starts: linear time).
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_TOML_OPENERS = re.compile(r"[\"'#]")
_TOML_BASIC_END = re.compile(r'["\\\n]')
_TOML_LITERAL_END = re.compile(r"['\n]")
_TOML_MULTI_BASIC_END = re.compile(r'\\|"""')
#: What ends a piece of a TOML key (a dotted key's dots are counted between these).
_TOML_KEY_ENDS = re.compile(r"[=\[\]{},\n]")


def _bracket_depth(brackets: str) -> int:
    """The deepest nesting of a string of brackets (without recursion, in C loops)."""
    if not brackets:
        return 0
    return max(0, max(accumulate(map(_DELTA.__getitem__, brackets))))


def _json_skeleton(text: str) -> str:
    """``text`` with its strings taken out (JSON: double quotes, backslash escapes); a
    string left open runs to the end, as the parser stops there too."""
    return _JSON_STRING.sub("", text)


def _unescaped(pattern: re.Pattern[str], text: str, j: int) -> re.Match[str] | None:
    """The first match of ``pattern`` from ``j`` that is not a backslash (a backslash it
    matches escapes the next character, which is skipped); None if there is none."""
    while (m := pattern.search(text, j)) is not None and m.group() == "\\":
        j = m.start() + 2
    return m


def _toml_string_end(text: str, start: int, quote: str) -> int:
    """Where the TOML string opened at ``start`` ends (one past its closing quote; the
    end of the line or text if it is not closed, where the parser stops too)."""
    n = len(text)
    if text.startswith(quote * 3, start):
        if quote == "'":
            end = text.find("'''", start + 3)
            end = n if end < 0 else end + 3
        else:
            m = _unescaped(_TOML_MULTI_BASIC_END, text, start + 3)
            if m is None:
                return n
            end = m.end()
        while end < n and text[end] == quote and end - start < 3 + 2:  # '''''a''''' ends
            end += 1
        return end
    pattern = _TOML_BASIC_END if quote == '"' else _TOML_LITERAL_END
    m = _unescaped(pattern, text, start + 1)
    if m is None:
        return n
    return m.end() if m.group() == quote else m.start()


def _toml_skeleton(text: str) -> str:
    """``text`` with each string replaced by ``s`` and its comments taken out."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        m = _TOML_OPENERS.search(text, i)
        if m is None:
            parts.append(text[i:])
            break
        start = m.start()
        parts.append(text[i:start])
        if m.group() == "#":
            end = text.find("\n", start)
            i = n if end < 0 else end
            continue
        parts.append("s")
        i = _toml_string_end(text, start, m.group())
    return "".join(parts)


def _too_deep(what: str, source: str | Path, limit: int, where: str = "") -> InputTooDeepError:
    place = f" at '{where[:120]}'" if where else ""
    return InputTooDeepError(
        f"{what} {_shown(source)} nests lists or tables too deeply{place} (more than "
        f"{limit} levels)",
        "give plain values, lists and tables",
        source,
        f"nested more than {limit} lists or tables deep{place}",
    )


def _check_text_depth(text: str, what: str, source: str | Path, limit: int, toml: bool) -> None:
    """Refuse text whose lists and tables (and, in TOML, dotted keys) nest deeper than
    ``limit``, before a parser recurses into it. A text with few brackets and dots is
    passed at once."""
    few = text.count("[") + text.count("{") <= limit
    if few and (not toml or text.count(".") < limit):
        return
    skeleton = _toml_skeleton(text) if toml else _json_skeleton(text)
    if _bracket_depth(_NOT_BRACKETS.sub("", skeleton)) > limit:
        raise _too_deep(what, source, limit)
    if toml:
        # `a.b.c = 1` and `[a.b.c]` nest one table per dot (and tomllib spends time and
        # memory quadratic in their number): count the dots of each key
        pieces = _TOML_KEY_ENDS.split(skeleton)
        if max(map(methodcaller("count", "."), pieces), default=0) >= limit:
            raise _too_deep(what, source, limit)


def _deepest(data: Any, limit: int) -> str | None:
    """The dotted path of a value nested more than ``limit`` deep, or None (a walk
    without recursion)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > limit:
            return where
        if isinstance(value, dict):
            stack.extend(
                (v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in value.items()
            )
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
    return None


# -- shapes -----------------------------------------------------------------------------

Types = type | tuple[type, ...]


@dataclass(frozen=True, slots=True)
class Shape:
    """What parsed data must look like: its top-level type, and the types of keys given
    by dotted paths (``*`` stands for any one key). ``required`` keys must be there;
    ``optional`` ones are checked when present. ``bool`` is not an ``int`` here, and
    ``float`` takes an ``int``."""

    top: Types = dict
    required: Mapping[str, Types] = field(default_factory=dict)
    optional: Mapping[str, Types] = field(default_factory=dict)


def _words(value: Any, json_words: bool) -> str:
    if value is None:
        return "null" if json_words else "nothing"
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object" if json_words else "a table",
    }
    return names.get(type(value), type(value).__name__)


def _type_words(types: Types, json_words: bool) -> str:
    kinds = types if isinstance(types, tuple) else (types,)
    samples = {bool: True, int: 1, float: 1.0, str: "", list: [], dict: {}, type(None): None}
    return " or ".join(
        _words(samples.get(t), json_words) if t in samples else t.__name__ for t in kinds
    )


def _fits(value: Any, types: Types) -> bool:
    kinds = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, kinds)


def _values_at(data: Any, parts: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """(keys, value) of every value at the dotted key split in ``parts`` (``*``: every
    key of a table); none where a table on the way is missing or is not a table."""
    found: list[tuple[tuple[str, ...], Any]] = [((), data)]
    for part in parts:
        step: list[tuple[tuple[str, ...], Any]] = []
        for where, value in found:
            if type(value) is not dict:
                continue
            if part == "*":
                step.extend(((*where, str(k)), v) for k, v in value.items())
            elif part in value:
                step.append(((*where, part), value[part]))
        found = step
        if not found:
            break
    return found


def _fits_fast(value: Any, types: Types) -> bool:
    """:func:`_fits` for the common exact match (a row's str, int, bool, dict)."""
    kind = type(value)
    return kind is types or (type(types) is tuple and kind in types) or _fits(value, types)


def check_shape(
    data: Any, shape: Shape, what: str, source: str | Path, *, json_words: bool = True
) -> None:
    """Refuse (:class:`InputShapeError`, naming the field) ``data`` not of ``shape``."""
    fix = f"give a {what} as privsim writes it"
    if not _fits(data, shape.top):
        raise InputShapeError(
            f"{what} {_shown(source)} is {_words(data, json_words)}, not "
            f"{_type_words(shape.top, json_words)}",
            fix,
            source,
            "",
            f"{_words(data, json_words)}, not {_type_words(shape.top, json_words)}",
        )
    for keys, required in ((shape.required, True), (shape.optional, False)):
        for key, types in keys.items():
            found = _values_at(data, tuple(key.split(".")))
            if required and not found and "*" not in key:
                raise InputShapeError(
                    f"{what} {_shown(source)} has no field '{key}'",
                    fix,
                    source,
                    key,
                    f"no field '{key}'",
                )
            for parts, value in found:
                if not _fits_fast(value, types):
                    where = ".".join(parts)[:120]
                    raise InputShapeError(
                        f"{what} {_shown(source)}: field '{where}' is "
                        f"{_words(value, json_words)}, not {_type_words(types, json_words)}",
                        fix,
                        source,
                        where,
                        f"field '{where}' is {_words(value, json_words)}",
                    )


# -- parsing ----------------------------------------------------------------------------


def _loaded(text: str | bytes, what: str, source: str | Path, max_depth: int, toml: bool) -> Any:
    """JSON or TOML text decoded, its bracket depth checked, and parsed; a syntax error
    (JSONDecodeError, TOMLDecodeError, or a number of more than 4300 digits) or a
    parser's recursion made an :class:`InputFileError`."""
    if isinstance(text, bytes):
        text = decode_text(text, what, source)
    _check_text_depth(text, what, source, max_depth, toml=toml)
    kind = "TOML" if toml else "JSON"
    try:
        return tomllib.loads(text) if toml else json.loads(text)
    except RecursionError:
        raise _too_deep(what, source, max_depth) from None
    except ValueError as exc:
        raise InputSyntaxError(
            f"{what} {_shown(source)} is not valid {kind} ({str(exc)[:160]})",
            f"correct the {kind} syntax",
            source,
            f"not valid {kind}",
        ) from None


def parse_json(
    text: str | bytes,
    what: str,
    *,
    source: str | Path = "",
    shape: Shape | None = None,
    max_depth: int = MAX_NESTING,
) -> Any:
    """JSON text parsed, its depth checked first and its shape after (``source`` names
    where it came from in errors)."""
    data = _loaded(text, what, source, max_depth, toml=False)
    # no walk of the data: in JSON the brackets scanned are all its nesting
    if shape is not None:
        check_shape(data, shape, what, source)
    return data


def parse_toml(
    text: str | bytes,
    what: str,
    *,
    source: str | Path = "",
    shape: Shape | None = None,
    max_depth: int = MAX_NESTING,
) -> dict[str, Any]:
    """TOML text parsed, its depth checked first (brackets and dotted keys) and again
    after (tables nest through headers), and its shape checked."""
    data: dict[str, Any] = _loaded(text, what, source, max_depth, toml=True)
    where = _deepest(data, max_depth)
    if where is not None:
        raise _too_deep(what, source, max_depth, where)
    if shape is not None:
        check_shape(data, shape, what, source, json_words=False)
    return data


def read_json(
    path: str | Path,
    what: str,
    *,
    shape: Shape | None = None,
    limit: int | None = None,
    max_depth: int = MAX_NESTING,
) -> Any:
    """The JSON file ``path``: regular, within ``limit`` (default
    :data:`MAX_INPUT_BYTES` or ``$PRIVSIM_MAX_INPUT_BYTES``), UTF-8, at most
    ``max_depth`` deep and of ``shape``; else an :class:`InputFileError`."""
    data = read_input_bytes(path, what, limit=limit)
    return parse_json(data, what, source=path, shape=shape, max_depth=max_depth)


def read_toml(
    path: str | Path,
    what: str,
    *,
    shape: Shape | None = None,
    limit: int | None = None,
    max_depth: int = MAX_NESTING,
) -> dict[str, Any]:
    """The TOML file ``path``: regular, within ``limit`` (default
    :data:`MAX_TOML_BYTES` or ``$PRIVSIM_MAX_INPUT_BYTES``), UTF-8, at most
    ``max_depth`` deep and of ``shape``; else an :class:`InputFileError`."""
    limit = input_limit(MAX_TOML_BYTES) if limit is None else limit
    data = read_input_bytes(path, what, limit=limit)
    return parse_toml(data, what, source=path, shape=shape, max_depth=max_depth)
