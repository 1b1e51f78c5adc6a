"""Every registered party's position, without a string per party of a population.

Explicit names are kept in a dict; a numbered population
(:class:`~privsim.sim.names.PartyNames`: ``client-0`` … ``client-(n−1)``) is kept as its
pattern and its first position, and a name is parsed when it is looked up. Registering
10⁷ clients then costs a few bytes, not a string and a dict entry each, and iterating
gives the names in registration order, made as they are read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from privsim.sim.names import PartyNames

__all__ = ["PartyIndex"]


class PartyIndex(Mapping[str, int]):
    """Parties by registration position."""

    def __init__(self) -> None:
        self._named: dict[str, int] = {}
        self._numbered: list[tuple[PartyNames, int]] = []
        self._segments: list[Sequence[str]] = []
        self._size = 0

    def add(self, parties: Sequence[str]) -> int:
        """Register ``parties`` after those already registered; returns the first one's
        position. Raises ValueError, registering none, if one is already registered or
        repeats."""
        first = self._size
        if isinstance(parties, PartyNames):
            if len(parties) and (
                any(name in parties for name in self._named)
                or any(_overlap(parties, other) for other, _ in self._numbered)
            ):
                raise ValueError("a party is registered twice")
            self._numbered.append((parties, first))
            self._segments.append(parties)
        else:
            names = list(parties)
            if len(set(names)) != len(names) or any(name in self for name in names):
                raise ValueError("a party is registered twice")
            self._named.update(zip(names, range(first, first + len(names)), strict=True))
            self._segments.append(names)
        self._size += len(parties)
        return first

    def get(self, name: str, default: int | None = None) -> int | None:  # type: ignore[override]
        position = self._named.get(name)
        if position is not None:
            return position
        for names, first in self._numbered:
            i = names._number(name)
            if i is not None:
                return first + i
        return default

    def __getitem__(self, name: str) -> int:
        position = self.get(name)
        if position is None:
            raise KeyError(name)
        return position

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        for segment in self._segments:
            yield from segment


def _overlap(a: PartyNames, b: PartyNames) -> bool:
    """Whether two numbered populations share a name (only when one prefix starts the
    other: ``client-`` and ``client-1`` share ``client-10``)."""
    if not (a.prefix.startswith(b.prefix) or b.prefix.startswith(a.prefix)):
        return False
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(large) > 0 and any(name in large for name in small)
