"""Numbered party names (``client-0``, ``client-1`` …) without a list of strings.

A population's names follow one pattern, so a protocol can hand ``PartyNames("client-",
n)`` wherever a sequence of names is expected: it makes a name when one is read, pickles
as its prefix and size (a shard sent to another process does not carry the population's
names), and compares equal to the tuple of the same names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
import numpy.typing as npt

__all__ = ["PartyNames", "Picked"]


class PartyNames(Sequence[str]):
    """The names ``prefix + str(i)`` for i in 0 … n − 1."""

    __slots__ = ("n", "prefix")

    def __init__(self, prefix: str, n: int) -> None:
        if n < 0:
            raise ValueError(f"a population of {n} parties")
        self.prefix, self.n = prefix, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        if isinstance(i, slice):
            return tuple(map(f"{self.prefix}{{}}".format, range(self.n)[i]))
        if not -self.n <= i < self.n:
            raise IndexError(f"party {i} of {self.n}")
        return f"{self.prefix}{i % self.n}"

    def __iter__(self) -> Iterator[str]:
        return map(f"{self.prefix}{{}}".format, range(self.n))

    def __contains__(self, name: object) -> bool:
        return self._number(name) is not None

    def index(self, name: object, start: int = 0, stop: int | None = None) -> int:
        i = self._number(name)
        if i is None or i < start or (stop is not None and i >= stop):
            raise ValueError(f"{name!r} is not one of the {self.n} parties {self.prefix}*")
        return i

    def _number(self, name: object) -> int | None:
        if not isinstance(name, str) or not name.startswith(self.prefix):
            return None
        digits = name[len(self.prefix) :]
        if not digits.isdigit() or not digits.isascii() or str(int(digits)) != digits:
            return None
        i = int(digits)
        return i if i < self.n else None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PartyNames):
            return (self.prefix, self.n) == (other.prefix, other.n) or (self.n == other.n == 0)
        if isinstance(other, (tuple, list)):
            return len(other) == self.n and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"PartyNames({self.prefix!r}, {self.n})"

    def __reduce__(self) -> tuple[type[PartyNames], tuple[str, int]]:
        return (PartyNames, (self.prefix, self.n))


class Picked(Sequence[str]):
    """Some parties of a numbered population, by their indices: a view that makes a
    name only when one is read, and tells membership without a list of names (the
    contributors of a release of 10⁷ clients, against a coalition of a few)."""

    __slots__ = ("names", "picked")

    def __init__(self, names: PartyNames, picked: npt.ArrayLike) -> None:
        self.names = names
        self.picked = np.asarray(picked, dtype=np.int64)
        if self.picked.size > 1 and not bool(np.all(np.diff(self.picked) > 0)):
            raise ValueError("picked indices must be increasing")

    def __len__(self) -> int:
        return int(self.picked.size)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        if isinstance(i, slice):
            return tuple(self.names[int(k)] for k in self.picked[i])
        return self.names[int(self.picked[i])]

    def __iter__(self) -> Iterator[str]:
        return map(self.names.__getitem__, self.picked.tolist())

    def __contains__(self, name: object) -> bool:
        i = self.names._number(name)
        if i is None:
            return False
        k = int(np.searchsorted(self.picked, i))
        return k < self.picked.size and int(self.picked[k]) == i

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Picked):
            return self.names == other.names and np.array_equal(self.picked, other.picked)
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.names.prefix, self.names.n, self.picked.tobytes()))

    def __repr__(self) -> str:
        return f"Picked({self.names!r}, {self.picked.size} of them)"
