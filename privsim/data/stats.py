"""Statistics a data set is standardised by, refused by name when not finite.

Features near ±1.8·10³⁰⁸ overflow their column's sum (the mean is ±inf or NaN) and any
value past about 10¹⁵⁴ overflows its square (the standard deviation is inf): dividing
by such a statistic maps every record of the column to 0 or NaN, silently. A user's
data with such values is refused, naming the field and the column, before any record
is scaled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from privsim.scenarios.errors import FieldError

__all__ = ["finite_mean_and_sd"]

F64 = npt.NDArray[np.float64]


def finite_mean_and_sd(
    x: F64, *, field: str, columns: Sequence[str] = (), where: str = ""
) -> tuple[F64, F64]:
    """Each column's mean and (population) standard deviation over the rows of ``x``
    (n, d), computed without overflow warnings; a :class:`FieldError` naming ``field``
    and the first column (``columns[j]``, else its index) whose statistic is not finite.
    ``where``: the file or set, for the message."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = x.mean(axis=0)
        sd = x.std(axis=0)
    bad = ~(np.isfinite(mean) & np.isfinite(sd))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        name = repr(columns[j]) if j < len(columns) else f"#{j} (counted from 0)"
        statistic = "mean" if not np.isfinite(mean[j]) else "standard deviation"
        with np.errstate(invalid="ignore"):
            largest = float(np.max(np.abs(x[:, j]))) if x.shape[0] else 0.0
        raise FieldError(
            field,
            f"{where + ': ' if where else ''}column {name} cannot be standardised: its "
            f"{statistic} overflows a float (values up to {largest:.3g}); every record "
            "would be scaled by a non-finite number",
            "rescale the column to a smaller unit (values below about 1e150) or drop the "
            "rows with such values",
        )
    return mean, sd
