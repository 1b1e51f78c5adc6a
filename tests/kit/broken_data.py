"""Client data whose rows fail, in a module light enough for a worker process to import."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class BrokenData:
    """Client data whose rows fail (picklable: a worker imports this module)."""

    n: int = 4
    dimension: int = 3

    def rows(self, clients: npt.ArrayLike) -> npt.NDArray[np.float64]:
        raise ValueError("rows of a broken data set")

    def sum(self, mask: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.float64]:
        raise ValueError("rows of a broken data set")
