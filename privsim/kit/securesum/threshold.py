"""Shamir-threshold DCA: node sums and their reconstruction (pure functions).

Client i shares its encoded noisy input x_i ∈ F_p (p = 2^61 − 1, signed values centred)
with a random polynomial f_i of degree t − 1, f_i(0) = x_i; node k holds f_i(k + 1).
Shares are linear, so node k's sum over the agreed set A,

    q_k = Σ_{i ∈ A} f_i(k + 1) = F(k + 1),   F = Σ_{i ∈ A} f_i,

is a share of F(0) = Σ_{i ∈ A} x_i, and the output party interpolates it from any t
nodes' sums: Σ_{i ∈ A} x_i = Σ_{k ∈ S} λ_k q_k (Lagrange at zero, |S| = t). So the round
survives the loss of up to M − t nodes, and any t colluding nodes recover every x_i.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from privsim.kit import shamir

__all__ = ["abscissa", "decode_residues", "node_total", "reconstruct_sum"]

U64 = npt.NDArray[np.uint64]


def abscissa(node_index: int) -> int:
    """Node k's evaluation point x = k + 1 (zero is the secret's)."""
    return node_index + 1


def node_total(shares: Sequence[U64] | U64, dimension: int) -> U64:
    """q_k = Σ_i f_i(k + 1) mod p over the given shares (residues)."""
    stacked = np.asarray(shares, dtype=np.uint64).reshape(-1, dimension)
    if stacked.shape[0] == 0:
        return np.zeros(dimension, dtype=np.uint64)
    return shamir.sum_mod(stacked)


def reconstruct_sum(sums_by_node: Mapping[int, U64], threshold: int) -> U64:
    """F(0) from the sums of at least ``threshold`` nodes (node index → q_k); the first
    ``threshold`` by index are used."""
    return shamir.reconstruct(
        {abscissa(k): q for k, q in sums_by_node.items()}, threshold=threshold
    )


def decode_residues(total: U64, fraction_bits: int) -> npt.NDArray[np.float64]:
    """A sum in F_p read as a signed fixed-point value: centred, divided by 2^f."""
    return shamir.decode_signed(total).astype(np.float64) / float(2**fraction_bits)
