"""`privsim check-protocol NAME`: every contract check (privsim.testing) on a registered
protocol, one line each (PASS, FAIL with its message, SKIP with why), exit status 0 only
when none fails, 1 when one does (each failing check named), 2 for an unknown name."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from privsim import registry
from privsim.cli import EXIT_CHECKS_FAILED, EXIT_INVALID, build_parser, main
from privsim.testing import CHECKS, check_protocol, registered
from tests.test_contract import PLUGINS


def test_a_built_in_protocol_passes_every_check(capsys):
    assert main(["check-protocol", "trusted_aggregator"]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if line[:4] in ("PASS", "FAIL", "SKIP")]
    assert [line.split()[1] for line in lines] == [c.name for c in CHECKS]
    assert all(line.startswith("PASS ") for line in lines), lines
    assert (
        out[-1] == f"trusted_aggregator: {len(CHECKS)} passed, 0 failed, 0 skipped (not applicable)"
    )


def test_a_check_that_does_not_apply_is_skipped_with_its_reason(capsys):
    # BCD adds its noise where the data is: no event trusts anyone
    assert main(["check-protocol", "bcd"]) == 0
    out = capsys.readouterr().out
    assert (
        "SKIP  a_coalition_of_every_trusted_party_leaves_no_guarantee: bcd: every event "
        "trusts nobody" in out
    )


@pytest.fixture
def broken():
    """The noisy-sum plug-in (tests/plugins), renamed, with a run that changes its seed
    at every call (the same seed no longer gives the same result) and an exposure metric
    it never reports; not registered."""
    base = PLUGINS["noisy_sum"]
    calls = itertools.count()

    def run(scenario: Any, seed: int) -> Any:
        return base.run(scenario, seed + next(calls))

    spec = dataclasses.replace(
        base,
        name="broken_sum",
        run=run,
        example={**base.example, "protocol": "broken_sum"},
        exposure={**base.exposure, "made_up_metric": "reported by no run"},
    )
    return spec


def test_a_broken_protocol_fails_naming_each_failing_check(broken, capsys):
    with registered(broken):  # as a plug-in's entry point would
        assert main(["check-protocol", broken.name]) == EXIT_CHECKS_FAILED == 1
    captured = capsys.readouterr()
    lines = {
        line.split()[1].rstrip(":"): line
        for line in captured.out.splitlines()
        if line[:4] in ("PASS", "FAIL", "SKIP")
    }
    failing = {
        "the_example_runs_from_the_command_line": "coalition.exposure lacks the metrics "
        "ProtocolSpec.exposure declares: ['made_up_metric']",
        "the_same_seed_gives_the_same_result": "two runs of the same seed differ",
    }
    for name, message in failing.items():
        assert lines[name].startswith(f"FAIL  {name}: {message}"), lines[name]
    others = [line[:4] for n, line in lines.items() if n not in failing]
    assert len(others) == len(CHECKS) - 2 and set(others) == {"PASS", "SKIP"}
    assert f"{others.count('PASS')} passed, 2 failed" in captured.out
    assert (
        "privsim: broken_sum fails the checks the_example_runs_from_the_command_line, "
        "the_same_seed_gives_the_same_result" in captured.err
    )


def test_the_python_api_checks_an_unregistered_spec_and_leaves_the_registry(broken):
    before = registry.specs()
    results = {r.name: r for r in check_protocol(broken)}
    assert {n for n, r in results.items() if not r.ok} == {
        "the_example_runs_from_the_command_line",
        "the_same_seed_gives_the_same_result",
    }
    assert registry.specs() == before and broken.name not in before


def test_an_unknown_protocol_is_invalid_input(capsys):
    assert main(["check-protocol", "no_such_protocol"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "unknown protocol 'no_such_protocol'" in err and "trusted_aggregator" in err


def test_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["check-protocol", "--help"])
    text = capsys.readouterr().out
    assert "check-protocol: a contract check failed" in text and "\n  0 " in text
