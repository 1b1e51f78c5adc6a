"""Errors of scenario validation: each names the dotted field and the fix."""

from __future__ import annotations

import math

__all__ = ["FieldError", "ScenarioError", "require_at_least", "require_positive"]


class FieldError(ValueError):
    """A field's value is invalid; ``field`` is its dotted path within the scenario."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        super().__init__(f"{field}: {problem}. Fix: {fix}")
        self.field = field
        self.problem = problem
        self.fix = fix


class ScenarioError(ValueError):
    """A scenario is invalid: ``field`` is the dotted path, the message says the fix."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        where = field or "scenario"
        super().__init__(f"scenario field '{where}': {problem}. Fix: {fix}")
        self.field = field


def require_positive(path: str, value: float, unit: str = "") -> None:
    """``value`` must be a finite number > 0, else a :class:`FieldError` naming ``path``."""
    if not (value > 0 and math.isfinite(value)):
        raise FieldError(
            path, f"must be a finite number > 0{unit}, got {value!r}", "give a positive value"
        )


def require_at_least(path: str, value: int, low: int = 1) -> None:
    """``value`` must be an integer >= ``low``, else a :class:`FieldError` naming ``path``."""
    if value < low:
        raise FieldError(path, f"must be >= {low}, got {value}", f"give {low} or more")
