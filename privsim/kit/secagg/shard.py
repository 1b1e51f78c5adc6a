"""The clients' work of a batched SecAgg round for one shard of clients, as pure
functions of plain arrays that run on the engine's workers (or a cluster's): the sums of
the inputs with their noise shares and of the masks of MaskedInputCollection, and the
sealing and opening of ShareKeys (Bonawitz et al. 2017, Figure 4).

A batched round (:mod:`.population`) never makes a client's messages: it charges their
exact sizes on the bus. What those messages carry is still computed, here, once per
client and pair, so that its cost is the deployment's and a wrong key, share or mask
shows: every sealed share is opened by its holder's key and checked, and the server's
masked sum is the sum of these inputs and masks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.kit.intnoise.samplers import sample_share
from privsim.kit.secagg.bulk import mask_sums
from privsim.kit.secagg.crypto import open_share, seal_share
from privsim.kit.secagg.maths import encode, pack_records
from privsim.sim.streams import Streams

__all__ = ["input_total", "mask_total", "seal_and_open"]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]


def input_total(
    rows: npt.NDArray[Any],
    names: list[str],
    root: np.random.SeedSequence,
    noise: tuple[str, float] | None,
    fraction_bits: int,
    bits: int,
) -> U64:
    """Σ x_u over the shard's clients (mod 2^64): x_u = its row of ``rows`` (real, in
    fixed point with ``fraction_bits``, or integer) plus its noise share (``noise``:
    the kind and parameter of :meth:`~privsim.kit.secagg.noise.Noise.sample`), drawn
    from its own ``("agent", name, "noise")`` stream of the run's ``root`` seed, mod
    2^``bits``, as its behaviour makes it
    (:func:`~privsim.kit.secagg.inputs.client_inputs`)."""
    streams = Streams(root)
    dimension = rows.shape[1]
    eta = np.zeros(rows.shape, dtype=np.int64)
    if noise is not None:
        kind, parameter = noise
        for i, name in enumerate(names):
            eta[i] = sample_share(kind, parameter, streams.fresh("agent", name, "noise"), dimension)
    x = encode(rows, fraction_bits, bits, eta)
    return x.sum(axis=0, dtype=np.uint64)  # type: ignore[no-any-return]


def mask_total(
    self_seeds: npt.NDArray[np.uint8],
    pair_seeds: npt.NDArray[np.uint8],
    signs: npt.NDArray[np.int8],
    dimension: int,
    bits: int,
) -> U64:
    """Σ_u [PRG(b_u) + Σ_j signs[u, j] · PRG(s_{u, v_j})] over the shard's clients (the
    masks of their y_u; mod 2^64, meaningful mod 2^b): one row per client of
    ``self_seeds`` (m, 16), ``pair_seeds`` (m, k, 16), ``signs`` (m, k) in {−1, 0, +1}."""
    rows = mask_sums(self_seeds, pair_seeds, signs, dimension, bits)
    return rows.sum(axis=0, dtype=rows.dtype).astype(np.uint64)  # type: ignore[no-any-return]


def seal_and_open(
    owners: I64,
    peers: I64,
    present: npt.NDArray[np.bool_],
    shares: U64,
    keys: npt.NDArray[np.uint8],
) -> int:
    """ShareKeys for a shard: owner u = ``owners[i]`` seals e_{u,v} = AE.enc(k_{u,v},
    u ‖ v ‖ share of u for v) for each peer v = ``peers[i, j]`` with ``present[i, j]``
    (``shares`` (m, k, w), ``keys`` (m, k, 16) the pair's KA value), and v opens it with
    its own cipher and reads back u's record. Returns the number of shares sealed;
    raises ValueError if a record does not come back as it was sealed."""
    sealed = 0
    ciphers: dict[bytes, AESGCM] = {}  # u's share for v and v's for u: the pair's one key
    for i, owner in enumerate(owners.tolist()):
        cols = np.flatnonzero(present[i])
        if cols.size == 0:
            continue
        to = peers[i, cols]
        records = pack_records(owner, to, shares[i, cols])
        for j, v in enumerate(to.tolist()):
            key = keys[i, cols[j]].tobytes()
            cipher = ciphers.get(key)
            if cipher is None:
                cipher = ciphers[key] = AESGCM(key)
            plain = records[j].tobytes()
            ciphertext = seal_share(cipher, owner, v, plain)
            if open_share(cipher, owner, v, ciphertext) != plain:
                raise ValueError(f"client {v} opened a share of client {owner} that differs")
        sealed += int(cols.size)
    return sealed
