"""How a release's contributors were picked, and the amplification that buys while the
party that picked them keeps its choice hidden.

A mechanism run on a random sample of the population protects everyone more than the
same mechanism run on everyone: a target that was not sampled is not in the release, and
the adversary does not know whether it was (privacy amplification by sampling, Balle,
Barthe & Gaboardi 2018). The amplification rests on that ignorance: the party that drew
the sample (``sampler``, e.g. the server that picks a training round's cohort) knows who
is in it, so against a coalition holding the sampler the ledger counts the release
unamplified (:meth:`~privsim.sim.ledger.LedgerEntry.event_against`).

Two samplings, each with the neighbouring relation it amplifies under (the relations
dp-accounting's sampled events and their RDP bounds are defined for):

- :meth:`Sampling.poisson`: each member independently with probability q;
  ``dp_accounting.PoissonSampledDpEvent(q, e)``, add/remove-one neighbours, so the
  inner event's multiplier is σ over the add/remove-one sensitivity (the norm bound of
  one contribution);
- :meth:`Sampling.fixed`: m of n members uniformly without replacement, q = m/n;
  ``dp_accounting.SampledWithoutReplacementDpEvent(n, m, e)``, replace-one neighbours
  (n is public), so the multiplier is σ over the replace-one sensitivity.

The ledger composes them as :mod:`privsim.sim.events` describes (PLD for a sampled
Gaussian, a fixed-size cohort's by the dominating pair of :mod:`privsim.sim.wor_pld`,
with RDP as a cross-check; RDP bounds for sampled integer noise).
"""

from __future__ import annotations

import enum
import math
import numbers
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

import dp_accounting

from privsim.sim.events import Neighbour, check_sampled, is_no_op, is_non_private

__all__ = ["Sampling", "SamplingKind"]


class SamplingKind(enum.StrEnum):
    POISSON = "poisson"  # each member independently with probability q
    FIXED = "fixed"  # m of n without replacement


@dataclass(frozen=True, slots=True, kw_only=True)
class Sampling:
    """A release's contributors as a random sample drawn by ``sampler``. Build with
    :meth:`poisson` (``rate``) or :meth:`fixed` (``population``, ``size``)."""

    kind: SamplingKind
    sampler: str
    rate: float | None = None
    population: int | None = None
    size: int | None = None
    #: Parties other than the sampler that see who took part (DCA's compute nodes
    #: receive a share from every sampled client): the amplification rests on their
    #: ignorance too.
    observers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.kind, SamplingKind):
            try:
                object.__setattr__(self, "kind", SamplingKind(self.kind))
            except ValueError:
                raise ValueError(f"kind must be 'poisson' or 'fixed', got {self.kind!r}") from None
        if not isinstance(self.sampler, str) or not self.sampler:
            raise ValueError(
                "sampler must name the party that draws the sample (a non-empty string), "
                f"got {self.sampler!r}"
            )
        if self.kind is SamplingKind.POISSON:
            self._check_poisson()
        else:
            self._check_fixed()
        observers = self.observers
        if isinstance(observers, str) or not all(isinstance(o, str) and o for o in observers):
            raise ValueError(f"observers must be party names, got {observers!r}")
        object.__setattr__(self, "observers", tuple(observers))

    def known_to(self, coalition: Collection[str]) -> bool:
        """Whether ``coalition`` knows who was sampled: it holds the sampler or an observer."""
        return self.sampler in coalition or any(o in coalition for o in self.observers)

    def who_knows(self, coalition: Collection[str]) -> str:
        """The members of ``coalition`` that know who was sampled, in words."""
        if self.sampler in coalition:
            return f"sampler colluding ({self.sampler})"
        seen = [o for o in self.observers if o in coalition]
        plural = "s" if len(seen) > 1 else ""
        return f"observer{plural} of the sample colluding ({', '.join(seen)})"

    def _check_poisson(self) -> None:
        rate = self.rate
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 < rate <= 1:
            raise ValueError(f"rate must be a sampling probability q with 0 < q <= 1, got {rate!r}")
        if self.population is not None or self.size is not None:
            raise ValueError("Poisson sampling takes a rate, not a population and size")
        object.__setattr__(self, "rate", float(rate))

    def _check_fixed(self) -> None:
        n, m = self.population, self.size
        if not _is_int(n) or n < 1:  # type: ignore[operator]
            raise ValueError(f"population must be an integer n >= 1, got {n!r}")
        if not _is_int(m) or not 1 <= m <= n:  # type: ignore[operator]
            raise ValueError(
                f"size must be an integer m with 1 <= m <= population = {n}, got {m!r}"
            )
        if self.rate is not None:
            raise ValueError("a fixed-size sample takes a population and size, not a rate")
        object.__setattr__(self, "population", int(n))  # type: ignore[arg-type]
        object.__setattr__(self, "size", int(m))  # type: ignore[arg-type]

    @classmethod
    def poisson(cls, rate: float, sampler: str, observers: Iterable[str] = ()) -> Sampling:
        """Each member of the population independently with probability q = ``rate``."""
        return cls(
            kind=SamplingKind.POISSON, sampler=sampler, rate=rate, observers=tuple(observers)
        )

    @classmethod
    def fixed(
        cls, population: int, size: int, sampler: str, observers: Iterable[str] = ()
    ) -> Sampling:
        """``size`` = m members of ``population`` = n, uniformly without replacement."""
        return cls(
            kind=SamplingKind.FIXED,
            sampler=sampler,
            population=population,
            size=size,
            observers=tuple(observers),
        )

    @property
    def q(self) -> float:
        """The probability that a given member is in the sample: the rate, or m/n."""
        if self.kind is SamplingKind.POISSON:
            return float(self.rate)  # type: ignore[arg-type]
        return self.size / self.population  # type: ignore[operator]

    @property
    def neighbour(self) -> Neighbour:
        """The neighbouring relation the amplification holds for: add/remove-one for
        Poisson sampling, replace-one for a fixed size (n public)."""
        return "add_remove" if self.kind is SamplingKind.POISSON else "replace_one"

    def amplifies(self, event: dp_accounting.DpEvent) -> bool:
        """Whether :meth:`wrap` changes ``event``: not for a no-op or a non-private event
        (sampling cannot make an unbounded loss finite), nor at q = 1."""
        return self.q < 1 and not _trivial(event)

    def wrap(self, event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
        """``event`` run on this sample: ``PoissonSampledDpEvent(q, event)`` or
        ``SampledWithoutReplacementDpEvent(n, m, event)``. A composition of Gaussians
        on the same sample is first one Gaussian of multiplier (Σ count/m_i²)^(−1/2)
        (the same noisy vector, Dong, Roth & Su 2019, Cor. 3.3). Unchanged when
        :meth:`amplifies` is false. TypeError for an event whose sampled form the ledger
        cannot account (:func:`~privsim.sim.events.check_sampled`)."""
        if not self.amplifies(event):
            return event
        inner = _one_gaussian(event) or event
        wrapped: dp_accounting.DpEvent
        if self.kind is SamplingKind.POISSON:
            wrapped = dp_accounting.PoissonSampledDpEvent(self.q, inner)
        else:
            wrapped = dp_accounting.SampledWithoutReplacementDpEvent(
                self.population, self.size, inner
            )
        check_sampled(wrapped)
        return wrapped

    def description(self) -> str:
        """The amplification in words, for reports."""
        honest = f"while {', '.join((self.sampler, *self.observers))} "
        honest += "are honest" if self.observers else "is honest"
        if self.kind is SamplingKind.POISSON:
            return f"amplified by Poisson sampling at q = {self.q:.3g} ({honest})"
        return (
            f"amplified by sampling {self.size} of {self.population} without replacement "
            f"(q = {self.q:.3g}, {honest})"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _parts(
    event: dp_accounting.DpEvent, count: int = 1
) -> Iterator[tuple[dp_accounting.DpEvent, int]]:
    """The leaves of a (nested) composition with their counts."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        yield from _parts(event.event, count * event.count)
    elif isinstance(event, dp_accounting.ComposedDpEvent):
        for inner in event.events:
            yield from _parts(inner, count)
    elif count > 0:
        yield event, count


def _trivial(event: dp_accounting.DpEvent) -> bool:
    """No-op throughout, or non-private somewhere: sampling leaves it as it is."""
    parts = list(_parts(event))
    return all(is_no_op(leaf) for leaf, _ in parts) or any(
        is_non_private(leaf) for leaf, _ in parts
    )


def _one_gaussian(event: dp_accounting.DpEvent) -> dp_accounting.GaussianDpEvent | None:
    """A composition (on one sample) of plain Gaussians and no-ops as one Gaussian of
    multiplier (Σ count/m_i²)^(−1/2); None for a single event or anything else."""
    if not isinstance(event, dp_accounting.ComposedDpEvent | dp_accounting.SelfComposedDpEvent):
        return None
    precision = 0.0
    for leaf, n in _parts(event):
        if type(leaf) is dp_accounting.GaussianDpEvent:
            precision += n * leaf.noise_multiplier**-2.0
        elif not is_no_op(leaf):
            return None
    if precision <= 0:  # pragma: no cover - all no-ops: _trivial caught it
        return None
    return dp_accounting.GaussianDpEvent(math.sqrt(1.0 / precision))
