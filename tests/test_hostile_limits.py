"""Hostile sizes, counts, patterns and environment values (issue 29, sections 3–5), as a
property: whatever is drawn, the outcome is a valid result or a named error, never a
traceback and never a hang (SIGALRM, as in ``tests/test_hostile.py``).

Drawn: numeric environment variables (every one privsim reads); audit trial counts up to
10¹⁵; study grids up to 10⁶ cells, with values repeated or equal as numbers; scenario
lists up to 10⁵ ids; tolerance and ignore patterns of up to 10⁴ segments, and entries
that are not text; ``--set`` values with line breaks. Derandomised; the default run
takes well under a minute (``PRIVSIM_HOSTILE_LIMITS_EXAMPLES`` raises the count).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privsim.audit.harness import audit_plan
from privsim.audit.reference import gaussian_plan
from privsim.golden import GoldenError, compare
from privsim.limits import ALLOW_LARGE_ENV, MAX_CELLS, MAX_LIST_ITEMS, EnvError, allow_large
from privsim.overrides import SetError, parse_settings
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.scenarios.checks import MAX_MEMORY_ENV, MAX_TIME_ENV, memory_limit, time_limit
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError
from privsim.sim import workers as round_workers
from privsim.studies.study import MAX_TASKS_ENV, Study, StudyError, max_tasks, study_from_dict
from tests.conftest import BASE
from tests.hostile_helpers import deadline

CI = settings(
    max_examples=int(os.environ.get("PRIVSIM_HOSTILE_LIMITS_EXAMPLES", "40")),
    deadline=None,  # a hang is caught by deadline()
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: Seconds any one drawn input may take before it counts as a hang.
HANG = 60


def _outcome(fn: Callable[[], Any], named: tuple[type[BaseException], ...]) -> str:
    """ "valid" or "named" (an error of ``named`` whose message says what to fix)."""
    with deadline(HANG):
        try:
            fn()
        except named as exc:
            assert str(exc) and "Traceback" not in str(exc)
            return "named"
    return "valid"


@pytest.fixture(autouse=True)
def _clean_environment():
    """Each example sets the variables it draws; they are restored after the test."""
    names = (MAX_TASKS_ENV, MAX_MEMORY_ENV, MAX_TIME_ENV, ALLOW_LARGE_ENV, round_workers.ENV)
    before = {n: os.environ.get(n) for n in names}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


HOSTILE_NUMBERS = [
    "inf", "-inf", "+inf", "Infinity", "nan", "NaN", "1e400", "-1e400", "1e-400", "0",
    "-0", "-1", "2.5", "1e6", "1e18", "1e19", "0x10", "1_000", " 12 ", "٣", "12abc",
    "", "\t", "1" * 500, "9" * 19, "8GiB", "1.5h", "-5GB", "inf GiB", "3d",
]  # fmt: skip
READERS: dict[str, Callable[[], Any]] = {
    MAX_TASKS_ENV: max_tasks,
    MAX_MEMORY_ENV: memory_limit,
    MAX_TIME_ENV: time_limit,
    ALLOW_LARGE_ENV: allow_large,
    round_workers.ENV: round_workers.workers,
}


@CI
@given(
    st.sampled_from(sorted(READERS)),
    st.one_of(st.sampled_from(HOSTILE_NUMBERS), st.text(max_size=30)),
)
def test_an_environment_value_is_read_or_named(name, value):
    if "\x00" in value:
        return  # the environment cannot hold a NUL
    os.environ[name] = value
    outcome = _outcome(READERS[name], (EnvError, FieldError))
    if outcome == "valid" and name != ALLOW_LARGE_ENV:
        got = READERS[name]()
        assert isinstance(got, int | float) and got > 0 and got == got  # finite, positive


@CI
@given(
    st.one_of(
        st.integers(min_value=4, max_value=2_000),
        st.sampled_from([10**6, 10**8, 10**9, 10**12, 10**15]),
    ),
    st.sampled_from(["1", "5"]),  # the limit: what runs, runs in seconds
)
def test_an_audit_of_any_size_answers_or_is_refused(trials, max_seconds):
    os.environ[MAX_TIME_ENV] = max_seconds
    plan = gaussian_plan(1.0, 1e-5)
    outcome = _outcome(lambda: audit_plan(plan, None, trials), (ValueError,))
    if trials >= 10**9:
        assert outcome == "named"  # never attempted: it cannot fit in memory


def _grid(sizes: list[int], twice: str) -> dict[str, list[Any]]:
    fields = ["privacy.epsilon", "dca.tolerated", "seed"]
    grid: dict[str, list[Any]] = {}
    for field, size in zip(fields, sizes, strict=False):
        values: list[Any] = [1.0 + i for i in range(size)] if field == "privacy.epsilon" else []
        values = values or list(range(1, size + 1))
        grid[field] = values
    first = next(iter(grid))
    if twice == "repeat":
        grid[first] = [*grid[first], grid[first][0]]
    elif twice == "as a number":
        v = grid[first][0]  # 1.0 and 1, or 1 and 1.0: the same cell
        grid[first] = [*grid[first], int(v) if isinstance(v, float) else float(v)]
    return grid


@CI
@given(
    st.lists(st.sampled_from([1, 2, 7, 40, 101, MAX_CELLS + 1, 10**6]), min_size=1, max_size=3),
    st.sampled_from(["none", "repeat", "as a number"]),
)
def test_a_grid_of_any_size_validates_or_is_refused(sizes, twice):
    grid = _grid(sizes, twice)
    data = {"name": "hostile", "base": dict(BASE), "grid": grid}
    # Building every cell of a grid within the limit takes its seconds (measured and
    # tested in tests/cli/test_work_limits.py); here, the sizes and values are checked.
    with mock.patch.object(Study, "validate", lambda self: None):
        outcome = _outcome(lambda: study_from_dict(data), (StudyError, EnvError))
    cells = 1
    for values in grid.values():
        cells *= len(values)
    if cells > MAX_CELLS or twice != "none":
        assert outcome == "named"


@CI
@given(
    st.sampled_from([0, 1, 10, 1000, MAX_LIST_ITEMS, MAX_LIST_ITEMS + 1, 10**5]),
    st.sampled_from(
        ["threat.colluding_clients", "faults.absent_parties", "threat.colluding_servers"]
    ),
    st.booleans(),
)
def test_a_scenario_list_of_any_length_validates_or_is_refused(count, field, known):
    clients = max(40, count + 10)
    prefix = "client" if known else "nobody"
    data = set_fields(
        BASE,
        {
            "population.clients": clients,
            "dca.tolerated": min(clients - 2, count + 5),
            field: [f"{prefix}-{i}" for i in range(count)],
        },
    )
    outcome = _outcome(lambda: scenario_from_dict(data), (ScenarioError, FieldError))
    if count > MAX_LIST_ITEMS:
        assert outcome == "named"


SEGMENTS = st.sampled_from(["*", "**", "accuracy", "privacy", "events", "0", "[1]", "x", ""])
RESULT = {
    "accuracy": {"rmse": 1.0},
    "privacy": {"events": [{"eps": 0.5}, {"eps": 0.25}], "delta": 1e-5},
    "status": "released",
}


@CI
@given(
    st.one_of(
        st.lists(SEGMENTS, max_size=60).map(".".join),
        st.integers(1, 10_000).map(lambda n: ".".join(["**"] * n) + ".nowhere"),
        st.integers(1, 5_000).map(lambda n: ".".join(["*", "**"] * n)),
        st.text(max_size=40),
        st.sampled_from([3, 2.5, None, True, ["a"], {"a": 1}]),
    ),
    st.sampled_from(["ignore", "tolerance"]),
)
def test_a_pattern_of_any_shape_answers_or_is_named(pattern, kind):
    if kind == "tolerance" and isinstance(pattern, list | dict):
        return  # not a key a table (or JSON) can hold

    def go() -> Any:
        if kind == "ignore":
            return compare(RESULT, RESULT, ignore=[pattern])
        return compare(RESULT, RESULT, tolerances={pattern: 0.1})

    outcome = _outcome(go, (GoldenError,))
    if not isinstance(pattern, str):
        assert outcome == "named"


@CI
@given(
    st.lists(
        st.sampled_from(["privacy.epsilon", "name", "x", "[t]", "=", "2", '"a"', " "]), max_size=8
    ),
    st.sampled_from(["\n", "\r\n", " ", "\n\n", "#"]),
)
def test_a_set_value_is_one_value_or_named(parts, glue):
    option = "privacy.epsilon=" + glue.join(parts)
    outcome = _outcome(lambda: parse_settings([option]), (SetError,))
    if outcome == "valid":
        assert list(parse_settings([option])) == ["privacy.epsilon"]
