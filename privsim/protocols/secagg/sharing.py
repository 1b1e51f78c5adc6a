"""Shamir sharing of every client's mask secrets at once (Bonawitz et al. 2017, ShareKeys),
over F_p with p = 2^61 − 1 (:mod:`privsim.kit.shamir`), vectorised across clients.

Client u shares the words of (b_u, s_u^SK) with the holders h ∈ H(u) (its closed
neighbourhood) as f_u(h + 1), f_u(x) = secret_u + Σ_{k=1}^{t−1} a_{u,k} x^k; the
coefficients come from u's own stream (position u of a counter-based family), so a
client's shares do not depend on any other client. The server reconstructs each
secret from t shares by Lagrange interpolation at 0,

    secret = Σ_j λ_j f(x_j),   λ_j = Π_{l ≠ j} x_l / (x_l − x_j)   (mod p),

with the inverses by Fermat's little theorem (y⁻¹ = y^(p−2)), for all owners at once.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from privsim.kit import shamir
from privsim.sim.keystream import KeyStream

__all__ = ["ShareBook", "bytes_to_words", "interpolate_at_zero", "words_to_bytes"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_CHUNK = 7  # bytes per field element (56 bits < 61)


def bytes_to_words(raw: npt.NDArray[np.uint8]) -> U64:
    """Rows of bytes (shape (n, L)) as field elements, 7 bytes big-endian per element,
    the last zero-padded (as :func:`privsim.kit.shamir.encode_bytes`, for many rows)."""
    n, length = raw.shape
    pad = -length % _CHUNK
    padded = np.concatenate([raw, np.zeros((n, pad), dtype=np.uint8)], axis=1)
    chunks = padded.reshape(n, -1, _CHUNK).astype(np.uint64)
    weights = np.uint64(256) ** np.arange(_CHUNK - 1, -1, -1, dtype=np.uint64)
    return np.asarray((chunks * weights).sum(axis=2, dtype=np.uint64), dtype=np.uint64)


def words_to_bytes(words: U64, length: int) -> npt.NDArray[np.uint8]:
    """Inverse of :func:`bytes_to_words` for rows of ``length`` bytes."""
    w = np.asarray(words, dtype=np.uint64)
    shifts = np.uint64(8) * np.arange(_CHUNK - 1, -1, -1, dtype=np.uint64)
    out = ((w[..., None] >> shifts) & np.uint64(0xFF)).astype(np.uint8)
    return out.reshape(w.shape[0], w.shape[1] * _CHUNK)[:, :length]


def _power(base: U64, exponent: int) -> U64:
    """base^exponent mod p, elementwise, by square and multiply."""
    result = np.ones_like(base)
    square = base.copy()
    while exponent:
        if exponent & 1:
            result = shamir.mul(result, square)
        exponent >>= 1
        if exponent:
            square = shamir.mul(square, square)
    return result


def interpolate_at_zero(xs: I64, ys: U64) -> U64:
    """f(0) for many polynomials at once: ``xs`` (m, t) distinct abscissas per row,
    ``ys`` (m, t, w) the shares; returns (m, w)."""
    x = np.asarray(xs, dtype=np.uint64)
    m, t = x.shape
    num = np.ones((m, t), dtype=np.uint64)
    den = np.ones((m, t), dtype=np.uint64)
    for col in range(t):
        xl = x[:, col : col + 1]
        same = np.arange(t) == col
        num = shamir.mul(num, np.where(same, np.uint64(1), xl))
        den = shamir.mul(den, np.where(same, np.uint64(1), shamir.sub(xl, x)))
    lam = shamir.mul(num, _power(den, shamir.PRIME - 2))
    terms = shamir.mul(lam[:, :, None], np.asarray(ys, dtype=np.uint64))
    total = np.zeros((m, terms.shape[2]), dtype=np.uint64)
    for col in range(t):
        total = shamir.add(total, terms[:, col])
    return total


class ShareBook:
    """Every client's shares for its holders, made on first use in one vectorised pass.

    ``secrets`` (n, w): each client's secret words; ``holders`` (n, h): each client's
    holders (client indices, abscissa = index + 1); ``coefficients``: the family of
    client streams the polynomial coefficients are read from."""

    __slots__ = ("_holders", "_lock", "_secrets", "_shares", "_stream", "threshold")

    def __init__(self, secrets: U64, holders: I64, threshold: int, coefficients: KeyStream) -> None:
        self._secrets = secrets
        self._holders = holders
        self._stream = coefficients
        self._shares: U64 | None = None
        self._lock = threading.Lock()  # the round's key book may ask from its own thread
        self.threshold = threshold

    def _make(self) -> U64:
        n, w = self._secrets.shape
        t = self.threshold
        words = self._stream.words(np.arange(n), 0, max(t - 1, 0) * w)
        coeffs = shamir.residues_from_words(words).reshape(n, max(t - 1, 0), w)
        x = (self._holders + 1).astype(np.uint64)[:, :, None]
        acc = np.zeros((n, x.shape[1], w), dtype=np.uint64)
        for k in range(t - 2, -1, -1):  # Horner: (…(a_{t−1} x + a_{t−2}) x + …) x + s
            acc = shamir.add(shamir.mul(acc, x), coeffs[:, None, k, :])
        return shamir.add(shamir.mul(acc, x), self._secrets[:, None, :])

    def table(self) -> tuple[I64, U64]:
        """(holders (n, h), shares (n, h, w)) of every client (made on first use)."""
        with self._lock:
            if self._shares is None:
                self._shares = self._make()
        return self._holders, self._shares

    def shares(self, client: int) -> tuple[I64, U64]:
        """(holders, shares) of ``client``: row j is holder j's share f_u(holder_j + 1)."""
        holders, shares = self.table()
        return holders[client], shares[client]
