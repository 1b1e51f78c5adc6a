"""Reading and writing scenarios: TOML <-> dict <-> validated :class:`Scenario`.

Every field is checked for its type by :mod:`privsim.scenarios.convert`, unknown keys are
refused with the list of known ones, and errors name the dotted field path and the fix.
The protocol tables a scenario may hold are those of the registered protocols.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import ScenarioError
from privsim.scenarios.schema import Scenario

__all__ = [
    "MAX_INPUT_BYTES",
    "InputFileError",
    "ScenarioError",
    "builtin_scenario",
    "builtin_scenario_path",
    "builtin_scenarios",
    "load_scenario",
    "read_input_text",
    "scenario_from_dict",
    "scenario_to_dict",
    "scenario_to_toml",
    "set_fields",
]


#: The largest scenario, study or golden file privsim reads (64 MiB; a scenario is a few
#: kB): an endless or huge input is refused instead of filling the memory.
MAX_INPUT_BYTES = 64 * 2**20


class InputFileError(ValueError):
    """An input path that is not a regular file (a device, a FIFO, a directory) or that
    is larger than :data:`MAX_INPUT_BYTES`; ``problem`` names the file, ``fix`` the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


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


def read_input_text(path: str | Path, what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (``what``: "scenario file", ...).

    Devices (``/dev/zero``), FIFOs, sockets and directories are refused before a byte is
    read (a FIFO is opened without waiting for a writer), and so is a file over ``limit``
    bytes, with an :class:`InputFileError`. A missing or unreadable file raises the
    ``OSError`` and text that is not UTF-8 the ``UnicodeDecodeError``, for the caller to
    name."""
    p = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(p, flags | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(
                f"{what} {str(p)[:200]!r} is {_file_kind(info.st_mode)}, not a readable "
                "text file (privsim reads regular files only)",
                f"give the path of a {what}, not a device, FIFO or directory",
            )
        if info.st_size > limit:
            raise _too_large(p, what, f"{info.st_size:,}", limit)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        data = fh.read(limit + 1)  # the size stat reports may be 0 (/proc) or grow
    if len(data) > limit:
        raise _too_large(p, what, f"at least {len(data):,}", limit)
    return data.decode("utf-8")


def _too_large(p: Path, what: str, size: str, limit: int) -> InputFileError:
    """The error of a file of ``size`` bytes (in words) over ``limit`` bytes."""
    shown = f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit:,} bytes"
    return InputFileError(
        f"{what} {str(p)[:200]!r} is {size} bytes, more than the {shown} privsim reads as a {what}",
        f"give the path of a {what} (a few kB of text), not a data file",
    )


def scenario_from_dict(data: Mapping[str, Any]) -> Scenario:
    """Validate a plain dict (as parsed from TOML) into a :class:`Scenario`."""
    return Scenario.from_dict(data)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file."""
    p = Path(path)
    try:
        text = read_input_text(p, "scenario file")
    except FileNotFoundError:
        raise ScenarioError(
            "", f"file {str(p)!r} does not exist", "give the path of a scenario .toml file"
        ) from None
    except InputFileError as exc:  # /dev/zero, a FIFO, a directory, a huge file
        raise ScenarioError("", exc.problem, exc.fix) from None
    except (OSError, ValueError) as exc:  # a directory, not UTF-8, unreadable, bad name
        raise ScenarioError(
            "",
            f"{str(p)[:200]!r} is not a readable text file ({type(exc).__name__})",
            "give a scenario .toml file",
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(
            "", f"{p} is not valid TOML ({exc})", "correct the TOML syntax"
        ) from None
    except RecursionError:
        raise ScenarioError(
            "", f"{p} nests lists or tables too deeply", "give plain values, lists and tables"
        ) from None
    return scenario_from_dict(data)


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data (lists, dicts, numbers, strings), TOML- and JSON-ready,
    with the common tables and the tables its protocol reads."""
    return scenario.to_dict()


def scenario_to_toml(scenario: Scenario) -> str:
    return tomli_w.dumps(scenario_to_dict(scenario))


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped with privsim."""
    return sorted(
        p.name.removesuffix(".toml")
        for p in resources.files("privsim.scenarios").iterdir()
        if p.name.endswith(".toml")
    )


def builtin_scenario_path(name: str) -> Path:
    path = resources.files("privsim.scenarios") / f"{name}.toml"
    if not path.is_file():
        raise ScenarioError(
            "", f"no built-in scenario {name!r}", f"use one of {builtin_scenarios()}"
        )
    return Path(str(path))


def builtin_scenario(name: str = "quickstart") -> Scenario:
    """A scenario shipped with privsim, validated (``privsim scenario`` lists them)."""
    return load_scenario(builtin_scenario_path(name))
