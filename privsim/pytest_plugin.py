"""The ``privsim_golden`` pytest fixture, for scenario regression tests in users' suites.

Registered through the ``pytest11`` entry point, so installing privsim is enough::

    def test_my_scenario(privsim_golden):
        privsim_golden("scenarios/my.toml", "my.json", tolerances={"accuracy.*": 0.01})

Relative paths are read from the test file's directory (golden files from its
``golden/`` folder). A differing result fails the test with every differing field and
both values; ``pytest --privsim-update-golden`` (re)writes the golden files instead.
This module imports nothing heavy: pytest loads it in every session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from privsim.golden import GoldenReport
    from privsim.scenarios.schema import Scenario

__all__ = ["UPDATE_OPTION", "privsim_golden"]

UPDATE_OPTION = "--privsim-update-golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        UPDATE_OPTION,
        action="store_true",
        default=False,
        help="privsim: (re)write the golden files of privsim_golden instead of comparing",
    )


GoldenCheck = Callable[..., "GoldenReport"]


@pytest.fixture
def privsim_golden(request: pytest.FixtureRequest) -> GoldenCheck:
    """``privsim_golden(scenario, golden, *, seed=None, tolerances=None, ignore=())``:
    run ``scenario`` (a Scenario, or a TOML path relative to the test file) and compare
    it with ``golden`` (relative to the test file's ``golden/`` folder), failing the test
    with the differing fields."""
    from privsim.golden import GoldenMismatch, check_golden

    here = Path(request.path).parent
    update = bool(request.config.getoption(UPDATE_OPTION))

    def check(
        scenario: Scenario | str | Path,
        golden: str | Path,
        *,
        seed: int | None = None,
        tolerances: Mapping[str, Any] | None = None,
        ignore: Sequence[str] = (),
    ) -> GoldenReport:
        __tracebackhide__ = True  # the failure is the test's, not the plugin's
        if isinstance(scenario, str | Path) and not Path(scenario).is_absolute():
            scenario = here / scenario
        path = Path(golden) if Path(golden).is_absolute() else here / "golden" / golden
        report = check_golden(
            scenario, path, seed=seed, tolerances=tolerances, ignore=ignore, update=update
        )
        if not report.ok:
            raise GoldenMismatch(report)
        return report

    return check
