"""A result's possibly infinite numbers (ε = ∞ is the text "inf" in a result: JSON has no
infinity) are printed readably by the report and by `privsim run`'s verdict, never
formatted as numbers (which raised "Unknown format code 'g' for object of type 'str'")."""

from __future__ import annotations

import math

import pytest

from privsim.analysis.report import format_epsilon, format_number, format_report
from privsim.cli import EXIT_NOT_MET, _privacy_verdict
from privsim.runs import run
from tests.conftest import make_scenario


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("inf", "inf"),
        (math.inf, "inf"),
        ("-inf", "-inf"),
        (-math.inf, "-inf"),
        ("nan", "nan"),
        (math.nan, "nan"),
        (None, "n/a"),
        (1.234567, "1.235"),
        (3, "3"),
        (True, "True"),
        ("not a number", "not a number"),
    ],
)
def test_format_number_never_raises(value, shown):
    assert format_number(value) == shown


def test_format_epsilon_marks_infinity_as_no_protection():
    assert format_epsilon("inf") == format_epsilon(math.inf) == "inf (no protection)"
    assert format_epsilon(0.9871) == "0.9871" and format_epsilon("nan") == "nan"
    assert format_number(1e-5, "g") == "1e-05"


@pytest.fixture(scope="module")
def result():
    return run(make_scenario(), 3).to_dict()


def _with_privacy(result, **privacy):
    return {**result, "privacy": {**result["privacy"], **privacy}}


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", None])
def test_the_report_prints_non_finite_privacy_and_duration(result, value):
    broken = _with_privacy(
        result,
        achieved_epsilon=value,
        delta=value,
        target_delta=value,
        guarantee_met=False,
    )
    broken["communication"] = {**result["communication"], "duration": value}
    text = format_report(broken)
    shown = format_number(value)
    assert f"achieved (ε, δ) = ({format_epsilon(value)}, {shown})" in text
    assert f"δ = {shown}: NOT met" in text
    assert "simulated protocol duration " + ("n/a" if value is None else f"{shown} s") in text


@pytest.mark.parametrize(
    ("value", "shown"), [("inf", "inf (no protection)"), ("nan", "nan"), (2.5, "2.5")]
)
def test_the_verdict_warns_for_any_achieved_epsilon(result, value, shown, capsys):
    broken = _with_privacy(result, achieved_epsilon=value, guarantee_met=False)
    assert _privacy_verdict(broken, allowed=False) == EXIT_NOT_MET
    err = capsys.readouterr().err
    assert f"achieved epsilon = {shown} at delta = 1e-05 against the target epsilon = 1 " in err
    assert _privacy_verdict(broken, allowed=True) == 0
    assert "Allowed by the scenario or --allow-overspend" in capsys.readouterr().err
