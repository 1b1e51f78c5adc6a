"""Tolerance and ignore patterns never hang (issue 29, section 4): a pattern is matched
segment by segment over the dotted path (``*`` one segment, ``**`` any number), in time
O(len(pattern) · len(path)) whatever the pattern; an entry that is not text is a named
error, in ``--rel``/``--abs``/``--ignore``, a golden file and the Python functions."""

from __future__ import annotations

import itertools
import json
import time

import pytest

from privsim.cli import EXIT_INVALID, main
from privsim.golden import GoldenError, _matches, _pattern, check_golden, compare
from tests.cli.helpers import golden_files
from tests.hostile_helpers import deadline

RESULT = {
    "status": "released",
    "accuracy": {"rmse": 7.0, "mae": 2.0},
    "methods": {"a": {"accuracy": {"mae": 1.0}}, "b": {"accuracy": {"mae": 3.0}}},
    "privacy": {"events": [{"eps": 0.5, "label": "x"}, {"eps": 0.25, "label": "y"}]},
}
#: The hostile pattern of the issue: ** many times over, which a backtracking regular
#: expression (or a recursive matcher) takes exponential time to give up on.
STARS = ".".join(["**"] * 5000) + ".nowhere"
ALTERNATING = ".".join(["*", "**"] * 2000) + ".x"


def _reference(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """The documented semantics, written the obvious (exponential) way: for small cases."""
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_reference(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and head in ("*", path[0]) and _reference(rest, path[1:])


def test_the_matcher_agrees_with_the_documented_semantics_on_every_small_case():
    segments = ("a", "b", "*", "**")
    paths = [p for n in range(5) for p in itertools.product("abc", repeat=n)]
    for n in range(6):
        for pattern in itertools.product(segments, repeat=n):
            text = ".".join(pattern)
            for path in paths:
                assert _matches(_pattern(text), path) == _reference(pattern, path), (text, path)


@pytest.mark.parametrize("pattern", [STARS, ALTERNATING, "**." * 20000 + "**"])
def test_a_hostile_pattern_answers_at_once(pattern):
    with deadline(30):
        started = time.perf_counter()
        compare(RESULT, RESULT, tolerances={pattern: 0.1}, ignore=[pattern])
        assert time.perf_counter() - started < 10


def test_the_documented_semantics_hold():
    now = json.loads(json.dumps(RESULT))
    now["methods"]["a"]["accuracy"]["mae"] = 1.05
    now["privacy"]["events"][1]["eps"] = 0.26
    assert {d.path for d in compare(RESULT, now)} == {
        "methods.a.accuracy.mae",
        "privacy.events[1].eps",
    }
    assert compare(RESULT, now, ignore=["methods.*.accuracy", "privacy.**.eps"]) == ()
    assert compare(RESULT, now, ignore=["**.mae", "privacy.events[1]"]) == ()
    assert compare(RESULT, now, ignore=["**.**.mae", "privacy.events.1.eps"]) == ()
    assert len(compare(RESULT, now, ignore=["*.mae"])) == 2  # * is one segment only
    # the most specific pattern wins: the exact path over the wildcards
    loose = {"**": 0.5, "methods.a.accuracy.mae": 0.001, "privacy.**": 0.1}
    assert [d.path for d in compare(RESULT, now, tolerances=loose)] == ["methods.a.accuracy.mae"]


@pytest.mark.parametrize("bad", [3, 2.5, None, True, ["a"], {"a": 1}])
def test_an_ignore_entry_that_is_not_text_is_named(bad):
    with pytest.raises(GoldenError, match=r"ignore pattern .* not text"):
        compare(RESULT, RESULT, ignore=["status", bad])


def test_ignore_and_tolerances_of_the_wrong_shape_are_named():
    with pytest.raises(GoldenError, match="ignore must be a list of patterns, got str"):
        compare(RESULT, RESULT, ignore="accuracy.rmse")  # type: ignore[arg-type]
    with pytest.raises(GoldenError, match="tolerances must be a table"):
        compare(RESULT, RESULT, tolerances=["accuracy.*"])  # type: ignore[arg-type]
    with pytest.raises(GoldenError, match="tolerance pattern 7 is int"):
        compare(RESULT, RESULT, tolerances={7: 0.1})  # type: ignore[dict-item]


@pytest.fixture
def golden(tmp_path):
    """A small scenario and its golden file, written by ``privsim check --update``."""
    return golden_files(tmp_path)


@pytest.mark.parametrize("flag", ["--rel", "--abs", "--ignore"])
def test_privsim_check_answers_a_hostile_pattern(golden, capsys, flag):
    scenario, path = golden
    value = STARS if flag == "--ignore" else f"{STARS}=0.1"
    with deadline(60):
        code = main(["check", str(scenario), "--golden", str(path), flag, value])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    assert "matches no field" in err  # it is reported, not silently ignored


@pytest.mark.parametrize("entry", [3, None, ["a"], {"b": 1}])
def test_a_golden_file_with_an_ignore_entry_that_is_not_text_is_named(golden, capsys, entry):
    scenario, path = golden
    data = json.loads(path.read_text())
    data["ignore"] = ["communication.duration", entry]
    path.write_text(json.dumps(data))
    assert main(["check", str(scenario), "--golden", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "ignore pattern" in err and "not text" in err and "Traceback" not in err


def test_a_golden_file_with_a_hostile_ignore_list_answers(golden, capsys):
    scenario, path = golden
    data = json.loads(path.read_text())
    data["ignore"] = [STARS, ALTERNATING]
    data["tolerances"] = {STARS: 0.1}
    path.write_text(json.dumps(data))
    with deadline(60):
        assert main(["check", str(scenario), "--golden", str(path)]) == 0


def test_check_golden_names_a_bad_pattern_before_the_run(golden, monkeypatch):
    scenario, path = golden
    ran: list[int] = []
    monkeypatch.setattr("privsim.runs.run", lambda *a, **k: ran.append(1))
    with pytest.raises(GoldenError, match="ignore pattern 5 is int"):
        check_golden(scenario, path, ignore=[5])  # type: ignore[list-item]
    assert ran == []
