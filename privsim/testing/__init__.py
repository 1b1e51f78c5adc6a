"""The contract every protocol keeps, shipped with privsim so that a plug-in can be
checked where it is installed (the way scikit-learn ships ``check_estimator``).

From the command line, for a registered protocol (built-in or plug-in)::

    privsim check-protocol noisy_sum

In a plug-in's own pytest suite, one test per check::

    from privsim.testing import parametrize_with_checks

    @parametrize_with_checks("noisy_sum")
    def test_privsim_contract(protocol, check):
        check(protocol)

From Python: :func:`check_protocol` runs every check and returns a
:class:`CheckResult` for each (PASS, FAIL with the message, or SKIP with the reason when
a check does not apply, e.g. no ``overspend`` declared); :func:`protocol_checks` yields
the checks one by one. A check raises :class:`AssertionError` when the protocol breaks
its part of the contract and :class:`CheckSkipped` (a :class:`unittest.SkipTest`) when
it does not apply. A spec that is not registered is registered for the check only.

Importing this module imports neither pytest nor any protocol.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from privsim.testing.checks import CHECKS as _CHECK_FUNCTIONS
from privsim.testing.checks import CheckSkipped

if TYPE_CHECKING:
    from privsim.kit.spec import ProtocolSpec

__all__ = [
    "CHECKS",
    "Check",
    "CheckResult",
    "CheckSkipped",
    "check_protocol",
    "parametrize_with_checks",
    "protocol_checks",
    "registered",
]

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's outcome on one protocol: ``status`` ``pass``, ``fail`` (``message``
    says what broke) or ``skip`` (``message`` says why it does not apply)."""

    protocol: str
    name: str
    status: Status
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Passed, or skipped because it does not apply."""
        return self.status != "fail"

    def __str__(self) -> str:
        head = f"{self.status.upper():<5} {self.name}"
        if not self.message:
            return head
        first, *rest = self.message.strip().splitlines() or [""]
        return "\n".join([f"{head}: {first}", *(f"      {line}" for line in rest)])


@dataclass(frozen=True, slots=True)
class Check:
    """A named contract check. ``check(protocol)`` (a registered name or a spec) returns
    when the protocol keeps it, raises :class:`AssertionError` saying what broke, or
    :class:`CheckSkipped` when it does not apply; :meth:`result` records the outcome
    instead of raising."""

    name: str
    func: Callable[[ProtocolSpec], None]

    @property
    def doc(self) -> str:
        """What the check asks of a protocol (its function's docstring)."""
        import inspect

        return inspect.getdoc(self.func) or ""

    def __call__(self, protocol: str | ProtocolSpec) -> None:
        spec = _spec(protocol)
        with registered(spec):
            self.func(spec)

    def result(self, protocol: str | ProtocolSpec) -> CheckResult:
        """Run the check and record PASS, FAIL (with the message; any exception the
        protocol raises is a failure, named with where it was raised) or SKIP."""
        spec = _spec(protocol)
        started = time.perf_counter()
        try:
            self(spec)
        except CheckSkipped as skip:
            return self._record(spec, "skip", str(skip), started)
        except AssertionError as exc:
            return self._record(spec, "fail", str(exc) or _where(exc), started)
        except Exception as exc:  # the protocol's own error: a failure of this check
            return self._record(spec, "fail", f"{type(exc).__name__}: {exc}{_where(exc)}", started)
        return self._record(spec, "pass", "", started)

    def _record(
        self, spec: ProtocolSpec, status: Status, message: str, started: float
    ) -> CheckResult:
        return CheckResult(spec.name, self.name, status, message, time.perf_counter() - started)

    def __repr__(self) -> str:
        return self.name


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (raised at {last.filename}:{last.lineno}, in {last.name})"


#: Every check, in the order :func:`check_protocol` runs them.
CHECKS: tuple[Check, ...] = tuple(Check(f.__name__, f) for f in _CHECK_FUNCTIONS)


def _spec(protocol: str | ProtocolSpec) -> ProtocolSpec:
    from privsim import registry

    return registry.get(protocol) if isinstance(protocol, str) else protocol


@contextlib.contextmanager
def registered(spec: ProtocolSpec) -> Iterator[ProtocolSpec]:
    """``spec`` in the registry for the block (scenarios naming it load and run), then
    the registry as it was. A no-op for a spec that is registered already."""
    from privsim import registry

    if registry.specs().get(spec.name) is spec:
        yield spec
        return
    # The lock is held only while swapping: a sweep's forked worker must not inherit it.
    with registry._lock:
        saved = registry._specs, registry._tables
        known = {k: v for k, v in registry.specs().items() if k != spec.name}
        registry._specs, registry._tables = known, registry._merge_tables(known.values())
        try:
            registry.register(spec)
        except BaseException:
            registry._specs, registry._tables = saved
            raise
    try:
        yield spec
    finally:
        with registry._lock:
            registry._specs, registry._tables = saved


def protocol_checks(protocol: str | ProtocolSpec) -> Iterator[Check]:
    """The checks for ``protocol`` (a registered name or a spec), in order. Each says
    itself, when run, whether it applies (a skip) to this protocol."""
    _spec(protocol)  # an unknown name fails here, before any check runs
    yield from CHECKS


def check_protocol(
    protocol: str | ProtocolSpec, *, report: Callable[[CheckResult], Any] | None = None
) -> list[CheckResult]:
    """Run every check on ``protocol``; ``report`` is called with each result as it
    comes (``privsim check-protocol`` prints it). The protocol keeps the contract when
    every result is ``ok``."""
    spec = _spec(protocol)
    results = []
    for check in protocol_checks(spec):
        results.append(check.result(spec))
        if report is not None:
            report(results[-1])
    return results


class _PytestCheck(Check):
    """A check whose skip pytest reports at the test's own line."""

    def __call__(self, protocol: str | ProtocolSpec) -> None:
        import pytest

        try:
            Check.__call__(self, protocol)
        except CheckSkipped as skip:
            try:
                raised = pytest.skip.Exception(str(skip), _use_item_location=True)
            except TypeError:  # a pytest without it: reported where the check skipped
                raise skip from None
            raise raised from None


def parametrize_with_checks(*protocols: str | ProtocolSpec) -> Any:
    """A ``pytest.mark.parametrize`` of ``(protocol, check)`` over every check of each of
    ``protocols`` (registered names or specs; none: every registered protocol), with
    ids ``NAME-CHECK``. The test calls ``check(protocol)``; a check that does not apply
    is skipped."""
    import pytest

    from privsim import registry

    specs = [_spec(p) for p in protocols] or list(registry.specs().values())
    return pytest.mark.parametrize(
        ("protocol", "check"),
        [
            pytest.param(spec, _PytestCheck(check.name, check.func), id=f"{spec.name}-{check.name}")
            for spec in specs
            for check in protocol_checks(spec)
        ],
    )
