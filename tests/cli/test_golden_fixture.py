"""The `privsim_golden` fixture, as a user's test suite uses it (through pytester)."""

from __future__ import annotations

from privsim.scenarios import scenario_to_toml
from tests.conftest import make_scenario

pytest_plugins = ["pytester"]

USER_TEST = """
def test_my_scenario(privsim_golden):
    privsim_golden("my.toml", "my.json", tolerances={"accuracy.*": 1e-6})
"""


def test_fixture_writes_then_checks_then_fails_naming_each_field(pytester):
    scenario = pytester.path / "my.toml"
    scenario.write_text(scenario_to_toml(make_scenario()))
    pytester.makepyfile(test_user=USER_TEST)

    first = pytester.runpytest_inprocess()  # no golden file yet: fails and says how to write it
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(["*no golden file*--privsim-update-golden*"])

    written = pytester.runpytest_inprocess("--privsim-update-golden")
    written.assert_outcomes(passed=1)
    assert (pytester.path / "golden" / "my.json").is_file()

    pytester.runpytest_inprocess().assert_outcomes(passed=1)

    scenario.write_text(scenario_to_toml(make_scenario(privacy={"epsilon": 2.0, "delta": 1e-5})))
    failed = pytester.runpytest_inprocess()
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        [
            "*fields differ from golden file*my.json (seed 11, timings aside)*",
            "*privacy.target_epsilon: stored 1.0, now 2.0*",
        ]
    )
    assert "privsim/golden.py" not in failed.stdout.str()  # the failure is the test's
