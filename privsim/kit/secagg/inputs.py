"""What each client of a SecAgg round sums: its row of the round's inputs and its
integer noise share, encoded mod 2^b (Bonawitz et al. 2017, x_u ∈ Z_R^d).

A round's inputs are the rows of an (n, d) array, or a function giving the rows of the
clients at some indices (the rows are then made for blocks of clients at once and each
is handed out once, so that a large population's vectors are never all in memory).
Real rows are encoded as round(z·2^f) (fixed point, f the round's ``fraction_bits``);
integer rows are taken as they are (inputs a protocol already clipped, scaled and
rounded). Either way the client adds its noise share η_u and reduces mod 2^b.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.secagg.behaviours import ClientInput
from privsim.kit.secagg.maths import encode
from privsim.kit.secagg.noise import Noise

__all__ = ["INPUT_BLOCK_ELEMENTS", "Rows", "client_inputs"]

#: The clients' inputs: an (n, d) array, or the rows (m, d) of the clients at m indices.
Rows = npt.NDArray[Any] | Callable[[npt.NDArray[np.int64]], npt.NDArray[Any]]

#: Coordinates of the client vectors made together (one block of clients).
INPUT_BLOCK_ELEMENTS = 1 << 18


def row_source(
    rows: Rows, clients: int, dimension: int
) -> Callable[[npt.NDArray[np.int64]], npt.NDArray[Any]]:
    """The rows (m, d) of the clients at m indices, from a table (n, d) or a function,
    checked: real or integer rows of the round's dimension (else ValueError)."""
    if callable(rows):
        source = rows
    else:
        table = np.asarray(rows)
        if table.shape != (clients, dimension):
            raise ValueError(
                f"the inputs have shape {table.shape}, not (clients, dimension) = "
                f"({clients}, {dimension})"
            )
        source = table.__getitem__

    def of(wanted: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        got = np.asarray(source(wanted))
        if got.shape != (wanted.size, dimension) or got.dtype.kind not in "biuf":
            raise ValueError(
                f"the inputs of {wanted.size} clients came as a {got.dtype} array of "
                f"shape {got.shape}, not real or integer rows of shape "
                f"({wanted.size}, {dimension})"
            )
        return got

    return of


def client_inputs(
    rows: Rows,
    *,
    clients: int,
    dimension: int,
    bits: int,
    fraction_bits: int,
    noise: Noise | None,
) -> ClientInput:
    """Client u's (z_u, η_u, x_u): its row of ``rows``, its noise share (drawn from the
    generator the client gives; zero without ``noise``) and the encoded sum of the two
    mod 2^``bits``."""
    source = row_source(rows, clients, dimension)
    zero = np.zeros(dimension, dtype=np.int64)
    zero.flags.writeable = False
    block = max(1, min(1024, INPUT_BLOCK_ELEMENTS // max(1, dimension)))
    made: set[int] = set()
    waiting: dict[int, npt.NDArray[Any]] = {}

    def inputs(
        index: int, rng: Callable[[], np.random.Generator]
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        start = index - index % block
        if start not in made:
            made.add(start)
            got = source(np.arange(start, min(start + block, clients)))
            # copies: the block goes at once, each row when its client has taken it
            waiting.update((start + j, row.copy()) for j, row in enumerate(got))
        z = waiting.pop(index)
        eta = zero if noise is None else noise.sample(rng(), dimension)
        return z, eta, encode(z, fraction_bits, bits, eta)

    return inputs
