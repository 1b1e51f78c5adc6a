"""Named random streams derived from one root ``SeedSequence`` per replication.

Every consumer of randomness asks for a stream *by name* (purpose and index, e.g.
``("agent", "client-17", "noise")``). The name is hashed into the ``spawn_key`` of a
child ``SeedSequence``, so streams do not depend on the order in which they are
requested: adding a consumer never shifts another stream's draws, and two scenario
variants that share a party share that party's draws.

For populations, :meth:`Streams.keystream` gives a counter-based family keyed by name
and addressed by party index (:mod:`privsim.sim.keystream`): the same idea, computable
for many parties at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

import numpy as np

from privsim.sim.keystream import KeyStream

__all__ = ["Streams", "stream_key"]


def stream_key(*name: Hashable) -> tuple[int, ...]:
    """Four 32-bit words that identify a stream name, stable across runs and platforms."""
    text = "/".join(str(part) for part in name).encode("utf-8")
    digest = hashlib.blake2b(text, digest_size=16, person=b"privsim-stream").digest()
    return tuple(int(w) for w in np.frombuffer(digest, dtype="<u4"))


class Streams:
    """Factory of independent generators, one per name, under a root seed."""

    __slots__ = ("_cache", "_keystreams", "root")

    def __init__(self, seed: int | np.random.SeedSequence) -> None:
        if isinstance(seed, np.random.SeedSequence):
            self.root = seed
        else:
            if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
                raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
            self.root = np.random.SeedSequence(seed)
        self._cache: dict[tuple[Hashable, ...], np.random.Generator] = {}
        self._keystreams: dict[tuple[Hashable, ...], KeyStream] = {}

    @property
    def entropy(self) -> int:
        """The root entropy, recorded in every result so the run can be replayed."""
        entropy = self.root.entropy
        assert isinstance(entropy, int)
        return entropy

    def seed_sequence(self, *name: Hashable) -> np.random.SeedSequence:
        """The child ``SeedSequence`` for ``name``."""
        return np.random.SeedSequence(
            self.root.entropy, spawn_key=(*self.root.spawn_key, *stream_key(*name))
        )

    def generator(self, *name: Hashable) -> np.random.Generator:
        """The generator for ``name``; asking twice returns the same (stateful) object."""
        gen = self._cache.get(name)
        if gen is None:
            gen = np.random.Generator(np.random.PCG64(self.seed_sequence(*name)))
            self._cache[name] = gen
        return gen

    def keystream(self, *name: Hashable) -> KeyStream:
        """The counter-based family of party streams for ``name`` (one per party index)."""
        ks = self._keystreams.get(name)
        if ks is None:
            ks = KeyStream.derive(self.entropy, tuple(self.root.spawn_key), *name)
            self._keystreams[name] = ks
        return ks

    def fresh(self, *name: Hashable) -> np.random.Generator:
        """A new generator for ``name`` at its initial state (not cached)."""
        return np.random.Generator(np.random.PCG64(self.seed_sequence(*name)))
