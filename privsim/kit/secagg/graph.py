"""The communication graph of SecAgg+ and its parameters (Bell et al., CCS 2020, §3).

SecAgg+ replaces SecAgg's complete graph by a random Harary graph H(n, k): the clients
are placed on a ring in a random order and each is joined to the k/2 nearest on either
side. A client shares its secrets with its closed neighbourhood (itself and its k
neighbours, k + 1 holders) and masks only with its neighbours. SecAgg is the same
protocol on the complete graph (k = n − 1).

Parameter choice (:func:`choose_parameters`), for n clients, a corrupted fraction γ,
a dropout fraction δ, a security parameter σ and a correctness parameter η; for the
smallest even k that admits a threshold t:

- security: no honest client has t or more corrupted neighbours, except with
  probability 2^-σ. The corrupted neighbours of a client are hypergeometric, whose
  upper tail is at most the binomial's (Hoeffding 1963, Thm 4), so we require
  n · P[Bin(k, γ) ≥ t] ≤ 2^-σ, and t is the smallest such value;
- correctness: every client keeps t live holders of its shares, except with
  probability 2^-η: n · P[Bin(k + 1, δ) > k + 1 − t] ≤ 2^-η;
- connectivity: the graph of honest surviving clients stays connected (so each honest
  input is only ever revealed summed with every other honest survivor's), except with
  probability 2^-σ. On the ring, removing parties disconnects it only if k/2
  consecutive positions are removed, so n · (γ + δ)^(k/2) ≤ 2^-σ suffices.

Where the paper leaves a choice we made one and say so: the binomial bound in place of
the exact hypergeometric tail, shares held by the closed neighbourhood, the ring-gap
bound for connectivity, and defaults σ = 40, η = 20.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = ["MAX_DEGREE", "Graph", "Parameters", "choose_parameters", "harary", "threshold_for"]

#: The largest degree the parameter search tries (and the largest complete graph whose
#: threshold it computes).
MAX_DEGREE = 4096


@dataclass(frozen=True, slots=True)
class Graph:
    """A Harary graph over clients 0 … n−1: ``order[p]`` is the client at ring position
    p, ``position[c]`` the position of client c. ``half`` neighbours on each side; the
    complete graph when 2·half ≥ n − 1."""

    order: npt.NDArray[np.int64]
    position: npt.NDArray[np.int64]
    half: int
    #: Row c: the neighbours of client c, sorted (shape (n, k); empty when complete).
    matrix: npt.NDArray[np.int64]

    @property
    def n(self) -> int:
        return int(self.order.size)

    @property
    def complete(self) -> bool:
        return 2 * self.half >= self.n - 1

    @property
    def degree(self) -> int:
        return self.n - 1 if self.complete else 2 * self.half

    def neighbours(self, client: int) -> npt.NDArray[np.int64]:
        """The k neighbours of ``client``, sorted (without the client itself)."""
        if self.complete:
            return np.delete(np.arange(self.n, dtype=np.int64), client)
        return self.matrix[client]

    def holders(self, client: int) -> npt.NDArray[np.int64]:
        """The closed neighbourhood: the k + 1 holders of ``client``'s shares, sorted."""
        if self.complete:
            return np.arange(self.n, dtype=np.int64)
        row = self.matrix[client]
        at = int(np.searchsorted(row, client))
        out = np.empty(row.size + 1, dtype=np.int64)
        out[:at], out[at], out[at + 1 :] = row[:at], client, row[at:]
        return out

    def holder_matrix(self) -> npt.NDArray[np.int64]:
        """Row c: :meth:`holders` of client c (shape (n, k + 1); not for the complete
        graph, whose holders are every client)."""
        n = self.n
        return np.sort(np.concatenate([self.matrix, np.arange(n)[:, None]], axis=1), axis=1)


def harary(n: int, degree: int, rng: np.random.Generator) -> Graph:
    """H(n, k) with a uniformly random placement of the clients on the ring."""
    order = rng.permutation(n).astype(np.int64)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n, dtype=np.int64)
    if degree >= n - 1:
        empty = np.empty((n, 0), dtype=np.int64)
        return Graph(order=order, position=position, half=n // 2, matrix=empty)
    half = degree // 2
    offsets = np.concatenate([np.arange(-half, 0), np.arange(1, half + 1)])
    matrix = np.sort(order[(position[:, None] + offsets[None, :]) % n], axis=1)
    return Graph(order=order, position=position, half=half, matrix=matrix)


@dataclass(frozen=True, slots=True, kw_only=True)
class Parameters:
    """The chosen degree k and threshold t, with the failure probabilities they give
    (log2), for the report."""

    degree: int
    threshold: int
    log2_security: float
    log2_correctness: float
    log2_disconnect: float
    complete: bool


def _log2_sf(k: int, p: float, at_least: int) -> float:
    """log2 P[Bin(k, p) ≥ at_least]."""
    if at_least <= 0:
        return 0.0
    if at_least > k or p <= 0.0:
        return -math.inf
    return float(stats.binom.logsf(at_least - 1, k, p)) / math.log(2.0)


def threshold_for(n: int, degree: int, corruption: float, security_bits: int) -> int:
    """The smallest t with n · P[Bin(k, γ) ≥ t] ≤ 2^-σ (k + 1 if no smaller t does: k
    neighbours never reach it)."""
    target = -security_bits - math.log2(n)
    if corruption <= 0.0:
        return 1
    # log2 P[Bin(k, γ) ≥ t] for t = 1 … k (decreasing in t); t = k + 1 has probability 0
    tails = stats.binom.logsf(np.arange(degree), degree, corruption) / math.log(2.0)
    meets = np.flatnonzero(tails <= target)
    return int(meets[0]) + 1 if meets.size else degree + 1


def _evaluate(n: int, degree: int, t: int, dropout: float, corruption: float) -> Parameters:
    holders = degree + 1
    complete = degree >= n - 1
    gap = math.inf if complete else degree / 2
    removed = dropout + corruption
    return Parameters(
        degree=degree,
        threshold=t,
        log2_security=math.log2(n) + _log2_sf(degree, corruption, t),
        log2_correctness=math.log2(n) + _log2_sf(holders, dropout, holders - t + 1),
        log2_disconnect=-math.inf
        if complete or removed <= 0
        else math.log2(n) + gap * math.log2(removed),
        complete=complete,
    )


@functools.lru_cache(maxsize=256)
def choose_parameters(
    n: int,
    *,
    dropout: float,
    corruption: float,
    security_bits: int,
    correctness_bits: int,
    degree: int = 0,
    threshold: int = 0,
    complete: bool = False,
) -> Parameters | None:
    """(k, t) as in the module docstring; ``degree``/``threshold`` > 0 are taken as given
    (and only evaluated); ``complete`` fixes k = n − 1 (SecAgg). None if no k ≤ n − 1
    admits a t meeting the security and correctness bounds. A pure function of its
    arguments, cached (its binomial tails cost more than a small round's protocol)."""
    if complete or degree >= n - 1:
        candidates = [n - 1]
    elif degree:
        candidates = [degree]
    else:  # degrees beyond MAX_DEGREE are never needed at σ, η <= 128 and γ + δ < 1/2
        candidates = [*range(2, min(n - 1, MAX_DEGREE + 1), 2)]
        candidates += [n - 1] if n - 1 <= MAX_DEGREE else []
    for k in candidates:
        t = threshold or threshold_for(n, k, corruption, security_bits)
        if t > k + 1:
            continue
        params = _evaluate(n, k, t, dropout, corruption)
        fixed = bool(threshold or degree)
        ok = (
            params.log2_security <= -security_bits
            and params.log2_correctness <= -correctness_bits
            and params.log2_disconnect <= -security_bits
        )
        if ok or (fixed and len(candidates) == 1):
            return params
    return None
