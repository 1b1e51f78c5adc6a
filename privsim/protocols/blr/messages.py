"""Messages of distributed BLR with projection (Algorithm 2): two DCA rounds, each with its
own message classes, and the aggregator's publication of the projection bounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum.messages import DcaKinds, NodeAbort, NodeSum, ReceivedSet, Share
from privsim.sim.messages import Message, message

__all__ = ["MOMENT_KINDS", "STATISTIC_KINDS", "ProjectionBounds"]


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class MomentShare(Share):
    """Round 1 (step 2): a share of the client's squared, clipped values (x², y²)."""


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class MomentReceivedSet(ReceivedSet):
    """Round 1: the clients whose moment share a node received."""


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class MomentSum(NodeSum):
    """Round 1: a node's sum of moment shares."""


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class MomentAbort(NodeAbort):
    """Round 1: a node will not release its moment sum."""


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class StatisticShare(Share):
    """Round 2 (step 4): a share of the unique entries of x̂x̂ᵀ and x̂ŷ."""


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class StatisticReceivedSet(ReceivedSet):
    """Round 2: the clients whose statistic share a node received."""


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class StatisticSum(NodeSum):
    """Round 2: a node's sum of statistic shares."""


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class StatisticAbort(NodeAbort):
    """Round 2: a node will not release its statistic sum."""


#: Round 1 (marginal second moments) and round 2 (sufficient statistics).
MOMENT_KINDS = DcaKinds(
    name="moments",
    share=MomentShare,
    received_set=MomentReceivedSet,
    node_sum=MomentSum,
    node_abort=MomentAbort,
)
STATISTIC_KINDS = DcaKinds(
    name="statistics",
    share=StatisticShare,
    received_set=StatisticReceivedSet,
    node_sum=StatisticSum,
    node_abort=StatisticAbort,
)


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectionBounds(Message):
    """Aggregator -> every client and node (step 3): project to ±``bounds`` (features,
    then target) and start round 2 at simulated time ``start_at``; or ``abort``."""

    bounds: npt.NDArray[np.float64]
    start_at: float
    abort: bool = False
