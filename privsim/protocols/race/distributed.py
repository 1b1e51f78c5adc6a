"""Distributed private sketching on the bus: K data owners each sketch their shard under
shared (public) LSH functions, and the merged sketch is released in one of three ways.

- ``local``: every owner adds Laplace(R/ε) to its own sketch and sends it to the
  aggregator, which sums them: no trust needed, but the released noise has K times the
  variance of one curator's.
- ``dca``: a DCA secure sum of the count arrays (Heikkilä et al. 2017, Algorithm 1):
  each owner adds a share of the noise — Gaussian, σ²/(K − T − 1) each, for (ε, δ) with
  L2 sensitivity √R; or Laplace split into Gamma differences for pure ε:
  Lap(b) = Σ_{k=1}^{K−T} (G_k − G'_k), G ~ Gamma(1/(K − T), b), so any K − T honest
  owners' shares add up to one curator's Laplace noise. Same error as a curator, no
  curator.
- ``curator``: owners send raw sketches over AES-GCM channels to a trusted curator, who
  adds Laplace(R/ε) once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum.inputs import ClientMessages
from privsim.kit.securesum.maths import complete_shares, encode_fixed
from privsim.kit.securesum.outcome import SumOutcome
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.keystream import KeyStream
from privsim.sim.messages import Message, message

__all__ = [
    "OwnerSketch",
    "SketchShares",
    "collector",
    "gamma_noise",
    "owner",
]

F64 = npt.NDArray[np.float64]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerSketch(Message):
    """An owner's R × W counts (raw for a curator, noisy in ``local`` mode), flattened."""

    values: npt.NDArray[np.float64]


def owner(agent: Agent, counts: F64, noise_scale: float, collector_id: str) -> Behaviour:
    """``local`` (noise_scale > 0) or ``curator`` (0) owner: send the sketch once."""
    values = counts.reshape(-1).copy()
    if noise_scale > 0:
        values += agent.rng("laplace").laplace(0.0, noise_scale, size=values.size)
    agent.remember("input", counts)
    agent.send(collector_id, OwnerSketch(values=values))
    yield from ()


def collector(
    agent: Agent, owners: tuple[str, ...], size: int, deadline: float, noise_scale: float
) -> Behaviour:
    """Sum the sketches that arrive by ``deadline``; a curator adds Laplace once. The
    outcome is the sum over the owners that arrived (the ``included`` mask)."""
    total = np.zeros(size)
    got: set[str] = set()
    while len(got) < len(owners):
        delivery = yield from agent.receive(OwnerSketch, deadline=deadline)
        if delivery is None:
            break
        if delivery.src in owners and delivery.src not in got:
            got.add(delivery.src)
            total += delivery.message.values
    if noise_scale > 0:
        total += agent.rng("laplace").laplace(0.0, noise_scale, size=size)
    included = np.array([o in got for o in owners])
    return SumOutcome(released=total, included=included)


def gamma_noise(rng: np.random.Generator, size: int, scale: float, parts: int) -> F64:
    """One owner's share of Laplace(scale) split over ``parts`` owners: G − G',
    G, G' ~ Gamma(1/parts, scale); the sum of ``parts`` shares is Laplace(scale)."""
    shape = 1.0 / parts
    return np.asarray(
        rng.gamma(shape, scale, size) - rng.gamma(shape, scale, size), dtype=np.float64
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SketchShares:
    """DCA client inputs for owners (duck-typed like ``ClientInputs``): z_i is owner i's
    flattened sketch, η_i its noise share (Gaussian or Gamma-difference)."""

    counts: tuple[F64, ...]
    noise: Literal["gaussian", "laplace"]
    noise_std: float  # gaussian: σ per owner
    laplace_scale: float  # laplace: b of the total
    parts: int  # laplace: K − T
    randomness: KeyStream
    seed_rngs: tuple[np.random.Generator, ...]
    fraction_bits: int
    n_nodes: int

    def messages(self, clients: npt.ArrayLike) -> ClientMessages:
        idx = np.atleast_1d(np.asarray(clients, dtype=np.int64))
        z = np.stack([self.counts[i].reshape(-1) for i in idx.tolist()])
        if self.noise == "gaussian":
            eta = np.stack(
                [self.seed_rngs[i].normal(0.0, self.noise_std, z.shape[1]) for i in idx.tolist()]
            )
        else:
            eta = np.stack(
                [
                    gamma_noise(self.seed_rngs[i], z.shape[1], self.laplace_scale, self.parts)
                    for i in idx.tolist()
                ]
            )
        x = encode_fixed(z + eta, self.fraction_bits)
        m, d = self.n_nodes, z.shape[1]
        shares = np.empty((idx.size, m, d), dtype=np.uint64)
        self.randomness.words_into(idx, 0, shares.reshape(idx.size, m * d)[:, : (m - 1) * d])
        complete_shares(x, shares)
        return ClientMessages(clients=idx, z=z, eta=eta, shares=shares)
