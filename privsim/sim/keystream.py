"""Counter-based random streams for whole populations of parties.

A :class:`KeyStream` is a pseudo-random function: AES-128 under a key derived from the
root seed and a purpose name, applied to the 128-bit counter block ``(party, block)``.
Party ``i``'s stream is the AES-CTR keystream that starts at counter ``i · 2^64``, read as
little-endian 64-bit words. A word is addressed by ``(party, position)``, so

- every party has its own stream per purpose, derived by name (as with
  :class:`~privsim.sim.streams.Streams`), and adding parties never shifts another's draws;
- the draws of many parties can be computed in one vectorised call (AES-ECB over the
  counter blocks) or one party's long run in one AES-CTR call — the same words either
  way — which is what lets batched delivery reproduce the per-message path exactly.

AES-CTR is a cryptographically secure generator, as secret shares require (Heikkilä et
al. 2017, §3.1.4). Gaussian draws are exact: Box–Muller on word pairs for short vectors,
the ziggurat of a PCG64 generator seeded from the party's words for long ones (the rule
depends only on the vector length, never on how the draws are computed).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from privsim.sim import portable

__all__ = ["BOX_MULLER_MAX", "KeyStream", "uniforms"]

U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]
IntArray = npt.ArrayLike

#: Vectors up to this length get Gaussians by Box–Muller (vectorised across parties);
#: longer ones by a per-party ziggurat.
BOX_MULLER_MAX = 64
# A party's run of at least this many AES blocks is generated with one CTR call.
_CTR_MIN_BLOCKS = 256
# ECB calls work on about 1 MiB at a time, to stay in cache.
# Box–Muller works on about this many pairs at a time (32 KiB per temporary).
_BOX_MULLER_BLOCK = 4096
_ECB_CHUNK_BLOCKS = 65536
# Up to this many AES blocks, one ECB call returns a new buffer (no scratch to manage).
_ECB_SMALL_BLOCKS = 1024


def uniforms(words: U64) -> F64:
    """Map 64-bit words to doubles uniform on [0, 1) (the top 53 bits)."""
    return (words >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


class KeyStream:
    """The family of party streams for one purpose."""

    __slots__ = ("_key", "_local", "name")

    def __init__(self, key: bytes, name: str = "") -> None:
        if len(key) != 16:
            raise ValueError("a keystream key is 16 bytes")
        self._key = key
        self.name = name
        # Cipher contexts and scratch buffers are per thread: batched rounds run on threads.
        self._local = threading.local()

    def __reduce__(self) -> tuple[type[KeyStream], tuple[bytes, str]]:
        """Pickle as key and name (a worker process rebuilds its own cipher contexts)."""
        return (KeyStream, (self._key, self.name))

    def _ecb(self) -> Any:
        """This thread's AES-ECB context under the stream's key."""
        try:
            return self._local.ecb
        except AttributeError:
            ecb = self._local.ecb = Cipher(algorithms.AES(self._key), modes.ECB()).encryptor()
            return ecb

    def _scratch(self, nbytes: int) -> bytearray:
        # update_into wants room for one block more than it writes.
        local = self._local
        buffer: bytearray | None = getattr(local, "buffer", None)
        if buffer is None or len(buffer) < nbytes + 16:
            buffer = local.buffer = bytearray(nbytes + 16)
        return buffer

    @classmethod
    def derive(cls, root_entropy: int, spawn_key: tuple[int, ...], *name: object) -> KeyStream:
        label = "/".join(str(p) for p in name)
        material = f"{root_entropy}|{','.join(map(str, spawn_key))}|{label}".encode()
        key = hashlib.blake2b(material, digest_size=16, person=b"privsim-keystrm").digest()
        return cls(key, label)

    # -- raw words ------------------------------------------------------------------------
    def words(self, parties: IntArray, start: int, count: int) -> U64:
        """Words ``start .. start+count-1`` of each party's stream: shape ``(n, count)``."""
        idx = np.atleast_1d(np.asarray(parties, dtype=np.uint64))
        out = np.empty((idx.size, count), dtype=np.uint64)
        self._words_into(idx, start, out)
        return out

    def words_into(self, parties: IntArray, start: int, out: U64) -> None:
        """Write words ``start ..`` of each party's stream into the rows of ``out``
        (shape ``(n, count)``, C-contiguous rows), without temporaries for long runs."""
        self._words_into(np.atleast_1d(np.asarray(parties, dtype=np.uint64)), start, out)

    def _words_into(self, idx: U64, start: int, out: U64) -> None:
        """:meth:`words_into` for ``idx``, the parties as a 1-d uint64 array."""
        count = out.shape[1]
        if count <= 0 or idx.size == 0:
            return
        first_block = start // 2
        offset = start - 2 * first_block
        n_blocks = (start + count + 1) // 2 - first_block
        if n_blocks >= _CTR_MIN_BLOCKS and offset == 0 and count % 2 == 0 and out.strides[1] == 8:
            zeros = self._zeros(16 * n_blocks)
            for row, party in enumerate(idx.tolist()):
                nonce = ((party << 64) | first_block).to_bytes(16, "big")
                ctr = Cipher(algorithms.AES(self._key), modes.CTR(nonce)).encryptor()
                ctr.update_into(zeros, out[row].data.cast("B"))
            return
        block_ids = np.arange(first_block, first_block + n_blocks, dtype=np.uint64)
        ecb = self._ecb()
        if idx.size * n_blocks <= _ECB_SMALL_BLOCKS:  # one short call (a party's next draws)
            counters = np.empty((idx.size, n_blocks, 2), dtype=">u8")
            counters[:, :, 0] = idx[:, None]
            counters[:, :, 1] = block_ids
            words = np.frombuffer(ecb.update(counters.data.cast("B")), dtype="<u8")
            out[:] = words.reshape(idx.size, 2 * n_blocks)[:, offset : offset + count]
            return
        rows_per_chunk = max(1, _ECB_CHUNK_BLOCKS // n_blocks)
        for lo in range(0, idx.size, rows_per_chunk):
            hi = min(idx.size, lo + rows_per_chunk)
            counters = np.empty((hi - lo, n_blocks, 2), dtype=">u8")
            counters[:, :, 0] = idx[lo:hi, None]
            counters[:, :, 1] = block_ids
            nbytes = counters.nbytes
            buffer = self._scratch(nbytes)
            ecb.update_into(counters.data.cast("B"), buffer)
            words = np.frombuffer(buffer, dtype="<u8", count=nbytes // 8).reshape(
                hi - lo, 2 * n_blocks
            )
            out[lo:hi] = words[:, offset : offset + count]

    def _zeros(self, nbytes: int) -> bytes | memoryview:
        local = self._local
        zero = getattr(local, "zero", b"")
        if len(zero) < nbytes:
            zero = local.zero = bytes(nbytes)
        return zero if len(zero) == nbytes else memoryview(zero)[:nbytes]

    def word(self, party: int, position: int) -> int:
        """One word, for a single party's next draw."""
        return int(self.words([party], position, 1)[0, 0])

    # -- distributions --------------------------------------------------------------------
    def uniform(self, parties: IntArray, start: int, count: int) -> F64:
        return uniforms(self.words(parties, start, count))

    def normal(self, parties: IntArray, count: int) -> F64:
        """``count`` standard normal draws per party (its stream from position 0)."""
        idx = np.atleast_1d(np.asarray(parties, dtype=np.uint64))
        if count <= BOX_MULLER_MAX:
            pairs = (count + 1) // 2
            w = self.words(idx, 0, 2 * pairs).reshape(idx.size, pairs, 2)
            z = np.empty((idx.size, pairs, 2))
            # In blocks of parties whose temporaries stay in cache (the elementwise
            # functions make a few dozen passes over them): the same values, 40% faster.
            step = max(1, _BOX_MULLER_BLOCK // pairs)
            for lo in range(0, idx.size, step):
                part = w[lo : lo + step]
                # ln(1 − u) and the angle 2πu through privsim.sim.portable: the same bits
                # on any CPU (NumPy's log1p differs in the last bit between AVX-512 and
                # others).
                radius = np.sqrt(-2.0 * portable.log(1.0 - uniforms(part[:, :, 0])))
                sin, cos = portable.sin_cos_turns(uniforms(part[:, :, 1]))
                np.multiply(radius, cos, out=z[lo : lo + step, :, 0])
                np.multiply(radius, sin, out=z[lo : lo + step, :, 1])
            return z.reshape(idx.size, 2 * pairs)[:, :count]
        seeds = self.words(idx, 0, 4)
        bitgen, gen = _pcg64()
        out = np.empty((idx.size, count))
        for row in range(idx.size):
            s = seeds[row]
            bitgen.state = {
                "bit_generator": "PCG64",
                "state": {
                    "state": (int(s[0]) << 64) | int(s[1]),
                    "inc": (int(s[2]) << 64) | int(s[3]) | 1,
                },
                "has_uint32": 0,
                "uinteger": 0,
            }
            gen.standard_normal(out=out[row])
        return out


_PCG = threading.local()


def _pcg64() -> tuple[np.random.PCG64, np.random.Generator]:
    """This thread's PCG64 bit generator and a generator over it, made once (whoever uses
    them sets the whole state first)."""
    try:
        return _PCG.pair  # type: ignore[no-any-return]
    except AttributeError:
        bitgen = np.random.PCG64(0)
        _PCG.pair = bitgen, np.random.Generator(bitgen)
        return _PCG.pair  # type: ignore[no-any-return]
