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

import functools
import math
import operator
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


#: Abscissas up to this bound take their inverses from a table (:func:`_inverses`);
#: larger ones (never a client index + 1 in a simulated round) are inverted by Fermat.
TABLE_LIMIT = 1 << 20
_inverse_table: list[U64] = [np.ones(1, dtype=np.uint64)]
_inverse_lock = threading.Lock()


def _inverses(limit: int) -> U64:
    """The signed table: entry ``L + d`` is 1/d mod p for d = −L … L (1 at d = 0), with
    L ≥ ``limit``; a pure function of p, grown as needed and kept (1/a by the recurrence
    1/a = −⌊p/a⌋ · 1/(p mod a), 1/(−a) = p − 1/a)."""
    table = _inverse_table[0]
    if table.size > 2 * limit:
        return table
    with _inverse_lock:
        table = _inverse_table[0]
        if table.size <= 2 * limit:
            size = max(limit, table.size, 512)  # at least doubles: L grows geometrically
            p = shamir.PRIME
            inv = [1, 1]  # inv[0] stands for d = 0
            for a in range(2, size + 1):
                inv.append((p - (p // a) * inv[p % a] % p) % p)
            pos = np.array(inv, dtype=np.uint64)
            neg = np.where(pos[:0:-1] == 0, pos[:0:-1], np.uint64(shamir.PRIME) - pos[:0:-1])
            table = np.concatenate([neg, pos])
            _inverse_table[0] = table
    return table


def lagrange_at_zero(xs: I64) -> U64:
    """λ_j = Π_{l ≠ j} x_l / (x_l − x_j) (mod p) for each row of ``xs`` (m, t) of
    distinct abscissas in [1, p): (Π_l x_l) · 1/x_j · Π_{l ≠ j} 1/(x_l − x_j), the
    inverses of the small differences from a table (the same residues as by Fermat)."""
    x = np.asarray(xs, dtype=np.int64)
    t = x.shape[1]
    top = int(x.max()) if x.size else 0
    if top >= TABLE_LIMIT or (x.size and int(x.min()) < 1) or _repeats(x):
        return _lagrange_by_fermat(x)  # (the same residues, where the table has none)
    table = _inverses(top)
    half = table.size // 2  # entry half + d is 1/d
    product = x.astype(np.uint64)  # Π_l x_l, multiplied pairwise
    while product.shape[1] > 1:
        if product.shape[1] % 2:
            product = np.concatenate([product, np.ones_like(product[:, :1])], axis=1)
        product = shamir.mul(product[:, 0::2], product[:, 1::2])
    lam = shamir.mul(table[half + x], product)  # Π_{l ≠ j} x_l = Π_l x_l / x_j
    for col in range(t):  # × 1/(x_l − x_j) for every l (the table gives 1 at l = j)
        lam = shamir.mul(lam, table[half + x[:, col : col + 1] - x])
    return lam


def _repeats(x: I64) -> bool:
    """Whether some row of ``x`` repeats an abscissa."""
    if x.shape[1] < 2 or not x.size:
        return False
    ordered = np.sort(x, axis=1)
    return bool((ordered[:, 1:] == ordered[:, :-1]).any())


def _lagrange_by_fermat(xs: I64) -> U64:
    x = np.asarray(xs, dtype=np.uint64)
    m, t = x.shape
    num = np.ones((m, t), dtype=np.uint64)
    den = np.ones((m, t), dtype=np.uint64)
    for col in range(t):
        xl = x[:, col : col + 1]
        same = np.arange(t) == col
        num = shamir.mul(num, np.where(same, np.uint64(1), xl))
        den = shamir.mul(den, np.where(same, np.uint64(1), shamir.sub(xl, x)))
    return shamir.mul(num, _power(den, shamir.PRIME - 2))


#: Interpolations of at most this many (rows × t × t) run on Python integers: below it
#: the array calls' overhead dominates (a small round's few reconstructions).
SMALL_INTERPOLATION = 512


def interpolate_at_zero(xs: I64, ys: U64) -> U64:
    """f(0) for many polynomials at once: ``xs`` (m, t) distinct abscissas per row,
    ``ys`` (m, t, w) the shares; returns (m, w)."""
    small = _interpolate_small(xs, ys)
    if small is not None:
        return small
    lam = lagrange_at_zero(xs)
    terms = shamir.mul(lam[:, :, None], np.asarray(ys, dtype=np.uint64))
    total = np.zeros((lam.shape[0], terms.shape[2]), dtype=np.uint64)
    for col in range(lam.shape[1]):
        total = shamir.add(total, terms[:, col])
    return total


def _interpolate_small(xs: I64, ys: U64) -> U64 | None:
    """:func:`interpolate_at_zero` exactly, on Python integers, for a few small rows of
    table-sized abscissas and residue shares (None otherwise: the array path)."""
    x = np.asarray(xs)
    y = np.asarray(ys)
    if x.ndim != 2 or y.ndim != 3 or x.shape != y.shape[:2] or not x.size:
        return None
    m, t = x.shape
    if m * t * t > SMALL_INTERPOLATION or x.dtype.kind not in "iu" or y.dtype.kind != "u":
        return None
    top, low = int(x.max()), int(x.min())
    if top >= TABLE_LIMIT or low < 1 or int(y.max()) >= shamir.PRIME:
        return None
    p = shamir.PRIME
    out = []
    for row, shares in zip(x.tolist(), y.tolist(), strict=True):
        key = tuple(row)
        if len(set(key)) < t:
            return None  # a repeated abscissa: the array path's residues
        lams = _lagrange_small(key)
        # (exact integer sums, reduced mod p once: the same residues)
        out.append(
            [sum(map(operator.mul, lams, column)) % p for column in zip(*shares, strict=True)]
        )
    return np.array(out, dtype=np.uint64).reshape(m, y.shape[2])


@functools.lru_cache(maxsize=4096)
def _lagrange_small(xs: tuple[int, ...]) -> tuple[int, ...]:
    """:func:`lagrange_at_zero` of one row of distinct abscissas in [1, TABLE_LIMIT), on
    Python integers (exact products, reduced mod p once: the same residues). A pure
    function of public values, cached: a round's reconstructions, and the next round's,
    meet the same sets of holders again."""
    table = _inverse_list(max(xs))
    half = len(table) // 2
    product = math.prod(xs)
    return tuple(
        math.prod([table[half + xl - xj] for xl in xs], start=product * table[half + xj])
        % shamir.PRIME  # 1/(x_l − x_j) is 1 at l = j
        for xj in xs
    )


_inverse_lists: list[list[int]] = [[1]]


def _inverse_list(limit: int) -> list[int]:
    """:func:`_inverses` as a list of Python integers."""
    table = _inverse_lists[0]
    if len(table) <= 2 * limit:
        table = _inverses(limit).tolist()
        _inverse_lists[0] = table
    return table


_P = np.uint64(shamir.PRIME)
_SMALL = 1 << 31  # abscissas below it: x·a splits into two products under 2^61
_LOW30 = np.uint64((1 << 30) - 1)
_LOW31 = np.uint64((1 << 31) - 1)
#: Elements per block of the in-place Horner pass: the block and its scratch stay in
#: cache (whole-array temporaries of 10^5 words cost several times more per element).
HORNER_BLOCK = 1 << 16


def _horner_small(x: U64, coeffs: U64, secrets: U64) -> U64:
    """Every client's shares f_u(x) = s_u + Σ_k a_{u,k} x^k (mod p) by Horner's rule, in
    place over blocks of clients: the residues of the array path (``shamir.mul`` and
    ``shamir.add``), for abscissas x < 2^31 and residues a, s < p.

    ``x`` (n, h, 1), ``coeffs`` (n, t − 1, w), ``secrets`` (n, w); returns (n, h, w).
    The accumulator a is kept below 2⁶² + 4, congruent to the exact value, and reduced
    once at the end. With a = a₁2³¹ + a₀ (a₁ ≤ 2³¹): a·x = a₁x·2³¹ + a₀x, and with c =
    a₁x = c₁2³⁰ + c₀ (below 2⁶²), c·2³¹ ≡ c₁ + c₀2³¹ (2⁶¹ ≡ 1); the sum is below 2⁶³,
    one fold (2⁶¹ ≡ 1) brings it below 2⁶¹ + 4, and adding the next residue below
    2⁶² + 4; a last fold and a conditional subtraction give the residue."""
    n, h = x.shape[0], x.shape[1]
    w = secrets.shape[1]
    out = np.empty((n, h, w), dtype=np.uint64)
    rows = max(1, HORNER_BLOCK // max(1, h * w))
    shape = (min(rows, n), h, w)
    a0, a1, tmp = (np.empty(shape, dtype=np.uint64) for _ in range(3))
    flag = np.empty(shape, dtype=bool)
    for lo in range(0, n, rows):
        m = min(rows, n - lo)
        acc, b0, b1, t0 = out[lo : lo + m], a0[:m], a1[:m], tmp[:m]
        ge = flag[:m]
        xs = x[lo : lo + m]
        acc.fill(0)
        for k in range(coeffs.shape[1] - 1, -2, -1):  # a_{t−1}, …, a_1, then s
            add = coeffs[lo : lo + m, None, k, :] if k >= 0 else secrets[lo : lo + m, None, :]
            np.bitwise_and(acc, _LOW31, out=b0)
            np.right_shift(acc, np.uint64(31), out=b1)
            np.multiply(b1, xs, out=b1)  # c = a₁x < 2^62
            np.right_shift(b1, np.uint64(30), out=t0)  # c₁
            np.bitwise_and(b1, _LOW30, out=b1)
            np.left_shift(b1, np.uint64(31), out=b1)  # c₀·2^31
            np.multiply(b0, xs, out=acc)  # a₀x < 2^62
            acc += t0
            acc += b1  # < 2^63
            np.right_shift(acc, np.uint64(61), out=t0)  # fold 2^61 ≡ 1
            acc &= _P
            acc += t0  # < 2^61 + 4
            acc += add  # < 2^62 + 4
        np.right_shift(acc, np.uint64(61), out=t0)
        acc &= _P
        acc += t0  # < p + 4
        np.greater_equal(acc, _P, out=ge)
        np.subtract(acc, _P, out=acc, where=ge)
    return out


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

    def _make(self, clients: I64 | None = None) -> U64:
        """The shares of ``clients`` (all by default): each a pure function of its own
        secret and coefficient stream, so any subset is the same rows as the table's."""
        rows = np.arange(self._secrets.shape[0]) if clients is None else clients
        secrets, holders = self._secrets[rows], self._holders[rows]
        n, w = secrets.shape
        t = self.threshold
        words = self._stream.words(rows, 0, max(t - 1, 0) * w)
        coeffs = shamir.residues_from_words(words).reshape(n, max(t - 1, 0), w)
        x = (holders + 1).astype(np.uint64)[:, :, None]
        if n and int(x.max()) < _SMALL and int(secrets.max()) < shamir.PRIME:
            return _horner_small(x, coeffs, secrets)
        acc = np.zeros((n, x.shape[1], w), dtype=np.uint64)
        for k in range(t - 2, -1, -1):  # Horner: (…(a_{t−1} x + a_{t−2}) x + …) x + s
            acc = shamir.add(shamir.mul(acc, x), coeffs[:, None, k, :])
        return shamir.add(shamir.mul(acc, x), secrets[:, None, :])

    @property
    def holders(self) -> I64:
        """(n, h): each client's holders."""
        return self._holders

    def rows(self, clients: I64) -> U64:
        """The shares (m, h, w) of ``clients`` only: from the table if it is made, else
        computed for them alone (a batched round's memory holds a shard's, not all)."""
        if self._shares is not None:
            return self._shares[clients]
        return self._make(clients)

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
