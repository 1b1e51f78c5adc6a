"""Running a scenario: the checks around a protocol's run function.

:func:`run` looks the protocol up in the registry, runs its preflight (the checks that
read files), calls its run function — a pure function of (scenario, seed) — and refuses
to report a result that holds a NaN. The command line, the Python API and the study
workers all run through it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from privsim import registry
from privsim.kit.result import RunResult
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import forget_known

if TYPE_CHECKING:
    from privsim.sim.ledger import PrivacyLedger

__all__ = ["ResultError", "nan_field", "plan", "run", "validate"]


class ResultError(ValueError):
    """A run produced a value that cannot be right (NaN); ``field`` is its dotted path in
    the result. Never expected: it stops a wrong number from being reported as a result."""

    def __init__(self, field: str, scenario: str) -> None:
        super().__init__(
            f"result field '{field}' of scenario '{scenario}' is NaN: the run went wrong "
            "rather than release a meaningless number. Fix: report this scenario as a bug; "
            "meanwhile change the values it depends on"
        )
        self.field = field


def run(scenario: Scenario, seed: int | None = None, *, preflight: bool = True) -> RunResult:
    """Run ``scenario`` at ``seed`` (default: the scenario's own seed), after the
    protocol's preflight (see :func:`validate`; a study, which preflights every cell
    before any work, skips it per row). A check that fails raises a
    :class:`~privsim.scenarios.errors.ScenarioError` naming the field; a NaN anywhere in
    the result raises :class:`ResultError`."""
    spec = registry.get(scenario.protocol)
    forget_known()  # a run never reuses another run's figures: a pure function of its seed
    try:
        if preflight:
            spec.preflight(scenario)  # the data's files and columns, named before the run
        result = spec.run(scenario, scenario.seed if seed is None else seed)
    except FieldError as exc:  # keeps a user's exception (a user model's) as the cause
        raise ScenarioError(exc.field, exc.problem, exc.fix) from exc.__cause__
    where = nan_field(result, details_name=scenario.protocol)
    if where is not None:
        raise ResultError(where, scenario.name[:60])
    return result


def validate(scenario: Scenario) -> Scenario:
    """Run the protocol's preflight (the checks that read files: a data set's columns,
    types and values; errors name the field), then plan its privacy budget as the run
    will (:func:`plan`: a plan over budget raises the
    :class:`~privsim.sim.ledger.BudgetExceededError` the run would). A scenario that
    passes runs, unless its protocol declares no plan: its budget is checked when it
    runs."""
    try:
        registry.get(scenario.protocol).preflight(scenario)
    except FieldError as exc:
        raise ScenarioError(exc.field, exc.problem, exc.fix) from None
    plan(scenario)
    return scenario


def plan(scenario: Scenario) -> PrivacyLedger | None:
    """The ledger as the scenario's run charges it before anything runs, from the
    protocol's own ``plan`` (:class:`~privsim.kit.spec.ProtocolSpec`); ``None`` when the
    protocol declares none. Raises :class:`~privsim.sim.ledger.BudgetExceededError`,
    with the run's message, exactly when the run would refuse the scenario over its
    budget (under ``privacy.on_overspend = "warn"`` it warns, as the run does)."""
    spec = registry.get(scenario.protocol)
    if spec.plan is None:
        return None
    try:
        return spec.plan(scenario)
    except FieldError as exc:
        raise ScenarioError(exc.field, exc.problem, exc.fix) from None


def nan_field(value: Any, path: str = "", *, details_name: str = "details") -> str | None:
    """The dotted path of the first NaN in a result (dataclasses, mappings, sequences,
    arrays; the input scenario aside), or ``None``."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float | np.floating):
            if math.isnan(item):
                return where or "result"
        elif isinstance(item, np.ndarray):
            if item.dtype.kind in "fc" and np.isnan(item).any():
                first = tuple(int(i) for i in np.argwhere(np.isnan(item))[0])
                return f"{where}{list(first)}"
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for f in reversed(dataclasses.fields(item)):
                if isinstance(item, RunResult) and f.name == "scenario":
                    continue
                name = (
                    details_name if isinstance(item, RunResult) and f.name == "details" else f.name
                )
                stack.append((getattr(item, f.name), f"{where}.{name}" if where else name))
        elif isinstance(item, Mapping):
            for k, v in reversed(list(item.items())):
                stack.append((v, f"{where}.{k}" if where else str(k)))
        elif isinstance(item, list | tuple):
            for i in reversed(range(len(item))):
                stack.append((item[i], f"{where}[{i}]"))
    return None
