"""The dataset registry: named real data sets, read from ``$PRIVSIM_DATA_DIR`` and verified.

Each entry names its file(s), their SHA-256 checksums, and a parser that returns the
raw table with documented encodings (e.g. abalone's sex M -> 0, F and I -> 1, as the DCA
paper's code does). Paper-specific preprocessing (centring, scaling, dummies, splits)
belongs to the studies that reproduce each paper. A user's own CSV works wherever a named
data set does: :func:`load_csv` with its feature and target columns.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.inputs import (
    MAX_DATA_BYTES,
    MAX_DATA_ENV,
    InputFileError,
    InputKindError,
    InputMissingError,
    InputTooLargeError,
    input_limit,
    open_input,
    read_input_bytes,
)

__all__ = [
    "DATA_DIR_ENV",
    "REGISTRY",
    "DataError",
    "DataFormatError",
    "Dataset",
    "DatasetSpec",
    "UnknownDatasetError",
    "data_dir",
    "load_csv",
    "load_dataset",
]

DATA_DIR_ENV = "PRIVSIM_DATA_DIR"


class DataError(FileNotFoundError):
    """A data set cannot be read: missing directory or file, or a checksum mismatch."""


class UnknownDatasetError(DataError, KeyError):
    """No data set of that name is registered (the message lists the registered ones)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DataFormatError(ValueError):
    """A data file is there but unusable: not UTF-8 text, empty, not a well-formed CSV, or
    a column missing, non-numeric or with missing, NaN or infinite values. The message
    names the file and the column, never the file's contents."""


@dataclass(frozen=True, slots=True)
class Dataset:
    """A table with a target column; ``X``/``y`` give NumPy arrays of the features."""

    name: str
    frame: Any  # pandas.DataFrame
    target: str
    features: tuple[str, ...]

    @property
    def X(self) -> npt.NDArray[np.float64]:
        return self.frame.loc[:, list(self.features)].to_numpy(dtype=np.float64)

    @property
    def y(self) -> npt.NDArray[np.float64]:
        return self.frame[self.target].to_numpy(dtype=np.float64)

    def __len__(self) -> int:
        return len(self.frame)


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    name: str
    files: tuple[tuple[str, str], ...]  # (file name, sha256)
    parse: Callable[[Sequence[Path]], Any]
    target: str
    description: str
    features: tuple[str, ...] = field(default=())  # default: every column but the target


def _data_bytes(path: Path, what: str) -> bytes:
    """A data file's bytes through the guarded reader (a regular file of at most
    ``$PRIVSIM_MAX_DATA_BYTES``, default 256 MiB)."""
    return read_input_bytes(
        path, what, limit=input_limit(MAX_DATA_BYTES, MAX_DATA_ENV), env=MAX_DATA_ENV
    )


def _read_csv(path: Path, **kwargs: Any) -> Any:
    import pandas as pd

    try:
        data = _data_bytes(path, "data file")
    except InputFileError as exc:  # replaced by a FIFO, a directory, grown past the limit
        raise DataError(str(exc)) from None
    return pd.read_csv(io.BytesIO(data), **kwargs)


def _wine(paths: Sequence[Path]) -> Any:
    return _read_csv(paths[0], sep=";")


def _abalone(paths: Sequence[Path]) -> Any:
    cols = [
        "sex",
        "length",
        "diameter",
        "height",
        "whole_weight",
        "shucked_weight",
        "viscera_weight",
        "shell_weight",
        "rings",
    ]
    frame = _read_csv(paths[0], header=None, names=cols)
    frame["sex"] = (frame["sex"] != "M").astype(np.float64)  # M -> 0, F and I -> 1
    return frame


def _airfoil(paths: Sequence[Path]) -> Any:
    return _read_csv(paths[0], sep="\t")


def _occupancy(paths: Sequence[Path]) -> Any:
    import pandas as pd

    # The header names 7 fields and every row has 8: the first is a row id, used as index.
    frames = [_read_csv(p, index_col=0) for p in paths]
    return pd.concat(frames, ignore_index=True).drop(columns=["date"])


def _htru2(paths: Sequence[Path]) -> Any:
    return _read_csv(paths[0])


def _skin(paths: Sequence[Path]) -> Any:
    frame = _read_csv(paths[0], sep="\t")
    # The file's header says R G B T; the UCI column order is B, G, R, class.
    frame.columns = ["B", "G", "R", "skin"]
    frame["skin"] = (frame["skin"] == 1).astype(np.float64)  # 1 = skin, 2 = non-skin -> 0
    return frame


def _raw(paths: Sequence[Path]) -> Any:
    return _read_csv(paths[0])


REGISTRY: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "wine-red",
            (
                (
                    "winequality-red.csv",
                    "4a402cf041b025d4566d954c3b9ba8635a3a8a01e039005d97d6a710278cf05e",
                ),
            ),
            _wine,
            "quality",
            "UCI Wine Quality, red: 1599 x 11 features",
        ),
        DatasetSpec(
            "wine-white",
            (
                (
                    "winequality-white.csv",
                    "76c3f809815c17c07212622f776311faeb31e87610d52c26d87d6e361b169836",
                ),
            ),
            _wine,
            "quality",
            "UCI Wine Quality, white: 4898 x 11 features",
        ),
        DatasetSpec(
            "abalone",
            (("abalone.data", "de37cdcdcaaa50c309d514f248f7c2302a5f1f88c168905eba23fe2fbc78449f"),),
            _abalone,
            "rings",
            "UCI Abalone: 4177 x 8 features (sex M -> 0, else 1)",
        ),
        DatasetSpec(
            "airfoil",
            (
                (
                    "airfoil_self_noise.dat",
                    "748164e2e721d54456380bb14013bbd978c9b0fe24bd24265e6bf02b90e69706",
                ),
            ),
            _airfoil,
            "Soundpressure",
            "UCI Airfoil Self-Noise: 1503 x 5 features",
        ),
        DatasetSpec(
            "forestfires",
            (
                (
                    "forestfires.csv",
                    "0d6586a1fa52f55bef48578aef14eb97273f1e9330e1a53423df497a77065253",
                ),
            ),
            _raw,
            "area",
            "UCI Forest Fires: 517 rows; month and day are text",
            ("X", "Y", "FFMC", "DMC", "DC", "ISI", "temp", "RH", "wind", "rain"),
        ),
        DatasetSpec(
            "garments",
            (
                (
                    "garments_worker_productivity.csv",
                    "c2ad58e5d45a7b2252386c023ab6855c3c07873c96121860b6226bc5423d3d68",
                ),
            ),
            _raw,
            "actual_productivity",
            "UCI Garment productivity: 1197 rows; several text columns",
            (
                "team",
                "targeted_productivity",
                "smv",
                "over_time",
                "incentive",
                "idle_time",
                "idle_men",
                "no_of_style_change",
                "no_of_workers",
            ),
        ),
        DatasetSpec(
            "occupancy",
            (
                (
                    "occupancy_datatraining.txt",
                    "b2c4d0ce2b9e4e453c476f7125ef31aeec2d1f5c7f5572d0e80de3df6521ab56",
                ),
                (
                    "occupancy_datatest.txt",
                    "1b92c7c1b2838963464fa891a610cf3c5db4becb7189189b29b330107a584c7f",
                ),
                (
                    "occupancy_datatest2.txt",
                    "d026d1bd5aeccd4aff4f3b3710d48e40613bd5fc370db7e61bbdcaa50d985095",
                ),
            ),
            _occupancy,
            "Occupancy",
            "UCI Occupancy Detection, all three files: 20560 x 5 features",
        ),
        DatasetSpec(
            "htru2",
            (("HTRU_2.csv", "19b47bc7feb15f30b48ae622a6d3665d740a162417b43986c6493989b6529254"),),
            _htru2,
            "Class",
            "UCI HTRU2 pulsars: 17898 x 8 features",
        ),
        DatasetSpec(
            "skin",
            (
                (
                    "Skin_NonSkin.txt",
                    "8aab1bfde88572ff0ba55be9a6c608654e5cedb1699630051dfff4f5a611cb6d",
                ),
            ),
            _skin,
            "skin",
            "UCI Skin Segmentation: 245057 x 3 (B, G, R); skin = 1",
        ),
    )
}

_verified: dict[tuple[str, int, float], str] = {}


def data_dir() -> Path:
    """The directory named by ``$PRIVSIM_DATA_DIR``."""
    value = os.environ.get(DATA_DIR_ENV)
    if not value:
        raise DataError(
            f"{DATA_DIR_ENV} is not set: point it at the directory holding the data files "
            f"(e.g. export {DATA_DIR_ENV}=../shared/data)"
        )
    path = Path(value)
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError) as exc:  # a name too long
        raise DataError(f"{DATA_DIR_ENV}={value[:200]} cannot be read ({exc})") from None
    if not is_dir:
        raise DataError(f"{DATA_DIR_ENV}={value} is not a directory")
    return path


def _sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime)
    if key not in _verified:
        digest = hashlib.sha256()
        try:
            with open_input(path, "data file") as fh:  # a regular file only
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except InputFileError as exc:
            raise DataError(str(exc)) from None
        _verified[key] = digest.hexdigest()
    return _verified[key]


def load_dataset(name: str) -> Dataset:
    """Read a registered data set from ``$PRIVSIM_DATA_DIR``, verifying every checksum.

    A process keeps the last data sets it read (keyed by path, size and modification
    time), so a study's replications read and verify each file once per worker. The
    returned table is shared: treat it as read-only."""
    spec = REGISTRY.get(name)
    if spec is None:
        shown = name if len(name) <= 40 else name[:40] + "…"
        raise UnknownDatasetError(
            f"no data set {shown!r}; registered: {sorted(REGISTRY)} (or use load_csv for your own)"
        )
    root = data_dir()
    stamp = []
    for file_name, _ in spec.files:
        path = root / file_name
        if not path.is_file():
            raise DataError(
                f"{file_name} (data set {name!r}) is missing from {DATA_DIR_ENV}={root}"
            )
        st = path.stat()
        stamp.append((str(path), st.st_size, st.st_mtime_ns))
    return _load_verified(name, str(root), tuple(stamp))


@functools.lru_cache(maxsize=8)
def _load_verified(name: str, root: str, stamp: tuple[tuple[str, int, int], ...]) -> Dataset:
    """Checksums and parsing; ``stamp`` (path, size, mtime per file) keys the cache."""
    spec = REGISTRY[name]
    paths = []
    for file_name, sha in spec.files:
        path = Path(root) / file_name
        actual = _sha256(path)
        if actual != sha:
            raise DataError(
                f"{path} has sha256 {actual}, expected {sha}: the file is not the registered copy"
            )
        paths.append(path)
    frame = spec.parse(paths)
    features = spec.features or tuple(c for c in frame.columns if c != spec.target)
    return Dataset(name=name, frame=frame, target=spec.target, features=tuple(features))


def _longer_row(data: bytes, sep: str) -> int | None:
    """The first line (1-based) with more fields than the header row, in a CSV without
    quotes and with a one-character separator (None otherwise, or when every row fits):
    reading only the named columns would pass over such a row, reading every column
    would not (measured: 0.13 s for 80 MB of 10⁵ columns, 0.26 s for 10⁶ rows)."""
    if len(sep) != 1 or b'"' in data:
        return None  # pandas reads such a file whole, and checks every row itself
    mark = sep.encode()
    lines = data.split(b"\n")
    width = lines[0].count(mark)
    return next((n for n, line in enumerate(lines[1:], 2) if line.count(mark) > width), None)


def _width(data: bytes, sep: str) -> int:
    """How many columns the header row of CSV ``data`` names."""
    import csv

    header = data[: data.find(b"\n") if b"\n" in data else len(data)]
    try:
        return len(next(csv.reader([header.decode("utf-8", "replace")], delimiter=sep)))
    except (StopIteration, csv.Error):
        return 0


def load_csv(path: str | Path, *, features: Sequence[str], target: str, sep: str = ",") -> Dataset:
    """A user's own CSV as a data set. The file must be UTF-8 text with a header row and
    data rows; the named feature and target columns must exist, be numeric and hold no
    missing, NaN or infinite value. Errors (:class:`DataError` for a file that is not
    there, :class:`DataFormatError` for one that cannot be used) name the file and the
    column, never the file's contents."""
    import pandas as pd

    p = Path(path)
    shown = repr(str(p)) if len(str(p)) <= 200 else repr(str(p)[:200] + "…")
    try:  # the guarded reader: a regular file (a FIFO never hangs), within the size limit
        data = _data_bytes(p, "CSV file")
    except InputMissingError:
        raise DataError(f"CSV file {shown} does not exist") from None
    except InputKindError as exc:  # a directory, a FIFO, /dev/zero
        raise DataError(f"{exc.problem}; give the path of a .csv file") from None
    except InputTooLargeError as exc:
        raise DataFormatError(str(exc)) from None
    except InputFileError as exc:  # a name too long, a NUL byte, no permission
        raise DataError(f"CSV file {shown} cannot be read ({exc.reason})") from None
    if target in features:
        raise DataFormatError(f"{p}: the target column {target!r} is also a feature")
    try:
        # Only the named columns are parsed: a file of 10^5 columns, 3 of them used, reads
        # in 0.8 s, not 19 s (measured here, 400 rows); a file pandas reads whole (quotes)
        # is checked for long rows by pandas, any other by _longer_row.
        wanted = {*features, target}
        quoted = len(sep) != 1 or b'"' in data
        frame = pd.read_csv(
            io.BytesIO(data),
            sep=sep,
            encoding="utf-8",
            encoding_errors="strict",
            usecols=None if quoted else (lambda column: str(column) in wanted),
        )
        longer = None if quoted else _longer_row(data, sep)
        if longer is not None:
            raise pd.errors.ParserError(f"Expected more fields in line {longer}")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"{p}: not UTF-8 text (undecodable byte at offset {exc.start}); save it as a UTF-8 CSV"
        ) from None
    except pd.errors.EmptyDataError:
        raise DataFormatError(
            f"{p}: the file is empty; it needs a header row and data rows"
        ) from None
    except pd.errors.ParserError as exc:
        line = re.search(r"line (\d+)", str(exc))
        where = f" at line {line.group(1)}" if line else ""
        raise DataFormatError(
            f"{p}: not a well-formed CSV{where} (rows with different numbers of fields?)"
        ) from None
    except (OSError, ValueError, MemoryError) as exc:
        raise DataError(f"CSV file {shown} cannot be read ({type(exc).__name__})") from None
    columns = [str(c) for c in frame.columns]
    missing = [c for c in (*features, target) if c not in columns]
    if missing:
        raise DataFormatError(
            f"{p}: no column(s) {missing} (its header row has {_width(data, sep)} columns); "
            "check the header row and the separator"
        )
    if len(frame) == 0:
        raise DataFormatError(f"{p}: a header but no data rows")
    bad = [c for c in (*features, target) if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise DataFormatError(f"{p}: column(s) {bad} are not numeric; encode them first")
    for c in (*features, target):
        values = frame[c].to_numpy(dtype=np.float64)
        finite = np.isfinite(values)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0]) + 1
            raise DataFormatError(
                f"{p}: column {c!r} has {int((~finite).sum())} missing, NaN or infinite "
                f"value(s) (the first in data row {row}); fill or drop those rows"
            )
    return Dataset(name=p.stem, frame=frame, target=target, features=tuple(features))
