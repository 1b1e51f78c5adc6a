"""ε so far, one release at a time: the composition of a growing sequence of events,
updated in O(1) compositions per event rather than recomposed from the start (a
training's curve of ε against the round).

It follows the ledger's rules (:func:`~privsim.sim.ledger.epsilon_of`) with running
state: plain Gaussians in closed form (their precisions add up, Dong, Roth & Su 2019,
Cor. 3.3); otherwise the running sum of the events' RDP curves over
:data:`~privsim.sim.integer_bounds.COMPOSITION_ORDERS`, and, while every event has one,
the running PLD at one fixed discretisation ``interval``; ε is the smaller of the two,
each a valid upper bound. The ledger chooses its PLD interval from the composition it
sees (:func:`~privsim.sim.events.pld_interval`); a running curve fixes it up front
(the interval for the planned number of distinct releases), so its figures can lie a
little above the ledger's (by the discretisation's pessimism, a fraction of a percent),
never below the truth.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_module
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

from privsim.sim.calibration import gaussian_epsilon
from privsim.sim.events import (
    Neighbour,
    composes_by_rdp,
    is_no_op,
    is_non_private,
    leaf_pld,
    leaf_rdp,
)
from privsim.sim.integer_bounds import COMPOSITION_ORDERS, rdp_to_epsilon

__all__ = ["RunningEpsilon"]


class RunningEpsilon:
    """The composition of the events :meth:`add` has seen, at ``delta``."""

    def __init__(self, delta: float, *, neighbour: Neighbour, interval: float) -> None:
        self.delta, self.neighbour, self.interval = delta, neighbour, interval
        self._precision = 0.0  # Σ z⁻² while every event is a plain Gaussian
        self._gaussian_only = True
        self._rdp: np.ndarray | None = np.zeros_like(COMPOSITION_ORDERS)
        self._pld: PrivacyLossDistribution | None = pld_module.identity(interval)
        self._infinite = False
        self._empty = True

    def add(self, event: dp_accounting.DpEvent) -> None:
        """Compose one more release (a no-op changes nothing; a non-private event makes
        ε infinite from here on)."""
        if is_no_op(event):
            return
        self._empty = False
        if is_non_private(event):
            self._infinite = True
            return
        if type(event) is dp_accounting.GaussianDpEvent:
            self._precision += event.noise_multiplier**-2.0
        else:
            self._gaussian_only = False
        if self._rdp is not None:
            curve = leaf_rdp(event, COMPOSITION_ORDERS, self.neighbour)
            self._rdp = None if curve is None else self._rdp + curve
        if self._pld is not None:
            if composes_by_rdp(event):
                self._pld = None
            else:
                try:
                    self._pld = self._pld.compose(leaf_pld(event, 1, self.neighbour, self.interval))
                except (OverflowError, TypeError):
                    self._pld = None

    @property
    def epsilon(self) -> float:
        """ε at δ of everything added so far."""
        if self._empty:
            return 0.0
        if self._infinite:
            return math.inf
        if self._gaussian_only:
            return gaussian_epsilon(self._precision**-0.5, self.delta)
        found = math.inf
        if self._rdp is not None:
            found = rdp_to_epsilon(self._rdp, COMPOSITION_ORDERS, self.delta)[0]
        if self._pld is not None:
            found = min(found, float(self._pld.get_epsilon_for_delta(self.delta)))
        return found
