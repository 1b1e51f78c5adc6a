"""The residual-vector reconstruction that motivates DP-BCD (de Jong, Kamphorst & Kroes
2022, §2.3): a party that sent the remainder v and receives the next remainder v_out
from its neighbour learns that neighbour's contribution X β̃ = v − v_out.

In plain BCD (Algorithm 1) β̃ = β̂ and v − v_out = X(XᵀX)⁻¹Xᵀv: the neighbour's fitted
part, exactly. In DP-BCD (Algorithm 2) β̃ = (XᵀX)⁻¹Xᵀ(v − b) and the estimate is off
by X(XᵀX)⁻¹Xᵀb = P b, of norm l·‖Qᵀs‖ with l = |N(0, σ_l²)|, σ_l = ξ/√ε_step: the error
falls as ε grows (E‖Pb‖² = σ_l²·m/N for m columns of N records).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.protocols.bcd.maths import LocalBlock
from privsim.protocols.bcd.messages import Remainder
from privsim.sim.coalition import CoalitionView

__all__ = ["ATTACKS", "contribution_error", "neighbour_contributions"]

F64 = npt.NDArray[np.float64]


def neighbour_contributions(view: CoalitionView, member: str, neighbour: str) -> list[F64]:
    """The estimates v − v_out of ``neighbour``'s fitted part, one per step it took on
    a remainder ``member`` (in the coalition) sent it: each sent remainder is paired
    with the neighbour's first remainder back after it (the ring's order)."""
    sent = sorted(
        (
            (m.send_time, m.message.values)
            for m in view.messages_of(Remainder)
            if m.src == member and m.dst == neighbour and isinstance(m.message, Remainder)
        ),
        key=lambda t: t[0],
    )
    back = sorted(
        (
            (m.send_time, m.message.values)
            for m in view.messages_of(Remainder)
            if m.src == neighbour and m.dst == member and isinstance(m.message, Remainder)
        ),
        key=lambda t: t[0],
    )
    out = []
    for when, v in sent:
        reply = next((values for t, values in back if t > when), None)
        if reply is not None:
            out.append(np.asarray(v - reply, dtype=np.float64))
    return out


def contribution_error(view: CoalitionView, blocks: dict[str, F64]) -> float:
    """Mean relative error ‖(v − v_out) − X(XᵀX)⁻¹Xᵀv‖/‖X(XᵀX)⁻¹Xᵀv‖ of the coalition's
    estimates of each honest neighbour's fitted part (``blocks``: party -> its columns,
    the ground truth); 0 for plain BCD, NaN when the coalition received nothing."""
    errors = []
    for member in sorted(view.members):
        for neighbour, x in blocks.items():
            if neighbour in view.members:
                continue
            sent = sorted(
                (
                    (m.send_time, m.message.values)
                    for m in view.messages_of(Remainder)
                    if m.src == member and m.dst == neighbour and isinstance(m.message, Remainder)
                ),
                key=lambda t: t[0],
            )
            fit = LocalBlock.of(x)
            for est, (_, v) in zip(
                neighbour_contributions(view, member, neighbour), sent, strict=False
            ):
                truth = fit.fitted(v)
                scale = float(np.linalg.norm(truth))
                if scale > 0:
                    errors.append(float(np.linalg.norm(est - truth)) / scale)
    return float(np.mean(errors)) if errors else float("nan")


#: The attacks a BCD coalition can run, by name.
ATTACKS: dict[str, Callable[..., Any]] = {
    "residual_reconstruction": neighbour_contributions,
    "contribution_error": contribution_error,
}
