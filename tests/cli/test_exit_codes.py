"""`privsim run`'s exit status: 0 released, 2 invalid or refused over budget, 3 guarantee
not met, 4 aborted, each with its opt-in, for every built-in protocol; `privsim check`'s 1
(documented in docs/reference/exit-codes.md and in `privsim run --help`)."""

from __future__ import annotations

import json

import pytest

from privsim.cli import (
    EXIT_ABORTED,
    EXIT_DIFFERS,
    EXIT_INVALID,
    EXIT_NOT_MET,
    build_parser,
    main,
)
from privsim.scenarios import builtin_scenario_path
from tests.cli.helpers import scenario_file

#: 90% of the 40 clients never show up, with T = 5 tolerated: DCA aborts.
ABORTING = {"faults": {"absent": 0.9}, "dca": {"tolerated": 5, "on_excess_dropout": "abort"}}


def test_an_aborted_run_exits_4_and_still_writes_its_result(tmp_path, capsys):
    path = scenario_file(tmp_path, **ABORTING)
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == EXIT_ABORTED == 4
    err = capsys.readouterr().err
    assert "the run aborted (too_many_dropouts" in err and "--allow-abort" in err
    [written] = (tmp_path / "out").glob("test-*-seed11.json")
    assert json.loads(written.read_text())["status"] == "aborted"


def test_allow_abort_accepts_an_aborted_run(tmp_path, capsys):
    path = scenario_file(tmp_path, **ABORTING)
    assert main(["run", str(path), "--out", str(tmp_path), "--allow-abort"]) == 0
    assert "Allowed by --allow-abort" in capsys.readouterr().err


def test_a_released_run_exits_0(tmp_path):
    assert main(["run", str(scenario_file(tmp_path)), "--out", str(tmp_path)]) == 0


def test_a_guarantee_not_met_still_exits_3_and_abort_does_not_hide_it(tmp_path):
    # 30 of 40 clients collude with T = 5: the realised noise is below the target.
    path = scenario_file(
        tmp_path, threat={"colluding_clients": 30}, privacy={"on_overspend": "warn"}
    )
    assert main(["run", str(path), "--out", str(tmp_path)]) == EXIT_NOT_MET == 3
    assert main(["run", str(path), "--out", str(tmp_path), "--allow-abort"]) == 3


@pytest.mark.parametrize("command", ["run", "check"])
def test_help_documents_every_exit_status(command, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = capsys.readouterr().out
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "130", "141"):
        assert f"\n  {code}" in text, code
    assert "--allow-abort" in text or command == "check"


# Every status docs/reference/exit-codes.md lists, for every built-in protocol that can reach it, through
# its built-in scenario made small with --set. Covered elsewhere, not repeated here:
# 1 from `privsim replay` (test_golden.py::test_replay_prints_the_fields_that_differ),
# 130 and 141 (test_signals.py: Ctrl-C and a closed stdout are handled in main(), the
# same for every protocol).

#: Each built-in protocol: its built-in scenario and the --set options that make a run
#: small and fast (tens of clients, small d, no encryption, no faults or colluders of
#: its own), so that it releases and meets its guarantee.
SMALL: dict[str, tuple[str, tuple[str, ...]]] = {
    "dca": (
        "quickstart",
        (
            "population.clients=40",
            "population.compute_nodes=3",
            "data.dimension=5",
            "dca.tolerated=5",
            "baseline=false",
            "threat.colluding_clients=0",
            "faults.absent=0.0",
            "faults.crash=0.0",
        ),
    ),
    "trusted_aggregator": (
        "quickstart",
        (
            'protocol="trusted_aggregator"',
            "population.clients=40",
            "population.compute_nodes=3",
            "data.dimension=5",
            "baseline=false",
            "threat.colluding_clients=0",
            "faults.absent=0.0",
            "faults.crash=0.0",
        ),
    ),
    "blr": (
        "blr",
        (
            "population.clients=60",
            "blr.synthetic_records=200",
            "blr.test=60",
            "blr.synthetic_dimension=3",
            "blr.grid_points=4",
            "blr.grid_repeats=2",
        ),
    ),
    "bcd": ("bcd", ("bcd.records=200", "bcd.predictors=3", "bcd.iterations=2")),
    "race": (
        "race",
        ("race.synthetic_records=2000", "race.rows=10", "race.width=50", "race.queries=20"),
    ),
    "secagg": (
        "secagg",
        (
            "population.clients=20",
            "secagg.dimension=5",
            "secagg.threshold=8",
            "secagg.tolerated=3",
            "faults.absent=0.0",
            "faults.crash=0.0",
        ),
    ),
    "secagg_plus": (
        "secagg_plus",
        (
            "population.clients=30",
            "secagg.dimension=5",
            "secagg.tolerated=3",
            "faults.absent=0.0",
            "faults.crash=0.0",
        ),
    ),
    "fedlearn": (
        "fedlearn",
        (
            "population.clients=60",
            "training.cohort=20",
            "training.rounds=3",
            'availability.model="always"',
            "faults.crash=0.0",
            'network.encryption="none"',
            "dataset.synthetic_features=10",
            "dataset.synthetic_classes=3",
        ),
    ),
    "summarization": (
        "summarization",
        (
            "summarization.synthetic_records=400",
            "summarization.summary_size=5",
            "summarization.dimension=10",
            "summarization.t_init=5",
            "summarization.seed_size=10",
        ),
    ),
}

#: Classic calibration where it under-noises (ε = 31.62 at δ = 1e-4 delivers ε ≈ 52.8).
CLASSIC_OVER = ('privacy.calibration="classic"', "privacy.epsilon=31.62", "privacy.delta=1e-4")

#: Plans over the budget, refused under the default privacy.on_overspend = "refuse"
#: (exit 2). Not BLR: it refuses method by method (status "refused") and releases the
#: others; a run whose every method is refused ends "aborted" (exit 4, see ABORTS).
OVER_BUDGET: dict[str, tuple[str, ...]] = {
    "dca": CLASSIC_OVER,
    "trusted_aggregator": CLASSIC_OVER,
    "bcd": ('bcd.step_budget="whole"',),  # every step spends the whole ε: 4 ε over 2·2 steps
    "race": ('race.noise="gaussian"', *CLASSIC_OVER),
    "secagg": ("secagg.noise_multiplier=0.1",),
    "secagg_plus": ("secagg.noise_multiplier=0.1",),
    "summarization": ("privacy.epsilon=0.1",),  # the small run composes to ε = 0.28 (PLD)
    # 3 rounds at z = 0.5: ε ≈ 14 ≫ 4 (z = 0.1, ε ≈ 200, tests the same refusal at 6× the
    # accounting: a sampled round's PLD spans a privacy loss of about 1/z²)
    "fedlearn": ("training.noise_multiplier=0.5",),
}

#: Runs that release but whose achieved guarantee is not met (exit 3): (protocol, id,
#: --set options, whether ε = ∞). BCD has no ∞ case: it trusts no party (each party's
#: step is private against the other), so no coalition breaks its guarantee; it is over
#: only when it plans more than its budget and on_overspend lets it run.
NOT_MET: list[tuple[str, str, tuple[str, ...], bool]] = [
    ("dca", "colluders-beyond-T", ("threat.colluding_clients=30",), False),
    (
        "dca",
        "every-compute-node",
        ('threat.colluding_servers=["compute-0","compute-1","compute-2"]',),
        True,
    ),
    ("dca", "classic-warn", (*CLASSIC_OVER, 'privacy.on_overspend="warn"'), False),
    ("trusted_aggregator", "curator", ('threat.colluding_servers=["aggregator"]',), True),
    ("trusted_aggregator", "classic-warn", (*CLASSIC_OVER, 'privacy.on_overspend="warn"'), False),
    ("blr", "curator", ('threat.colluding_servers=["aggregator"]',), True),
    (
        "blr",
        "every-compute-node",
        ('threat.colluding_servers=["compute-0","compute-1","compute-2"]',),
        True,
    ),
    ("blr", "classic-warn", (*CLASSIC_OVER, 'privacy.on_overspend="warn"'), False),
    ("bcd", "whole-step-warn", ('bcd.step_budget="whole"', 'privacy.on_overspend="warn"'), False),
    (
        "race",
        "every-compute-node",
        ('threat.colluding_servers=["compute-0","compute-1","compute-2"]',),
        True,
    ),
    ("race", "colluders-beyond-T", ("threat.colluding_clients=2",), True),
    (
        "race",
        "curator",
        ('race.mode="curator"', 'threat.colluding_servers=["aggregator"]'),
        True,
    ),
    ("secagg", "colluders-beyond-T", ("threat.colluding_clients=10",), False),
    (
        "secagg",
        "server-and-t-holders",
        ('threat.colluding_servers=["server"]', "threat.colluding_clients=8"),
        True,
    ),
    ("secagg_plus", "colluders-beyond-T", ("threat.colluding_clients=20",), False),
    (
        "secagg_plus",
        "server-and-t-holders",
        ('threat.colluding_servers=["server"]', "threat.colluding_clients=20"),
        True,
    ),
    ("summarization", "curator", ('threat.colluding_servers=["curator"]',), True),
    (
        "fedlearn",
        "every-compute-node",
        ('threat.colluding_servers=["compute-0","compute-1","compute-2"]',),
        True,
    ),
    (
        "fedlearn",
        "over-warn",
        ("training.noise_multiplier=0.5", 'privacy.on_overspend="warn"'),  # ε ≈ 14
        False,
    ),
    ("summarization", "over-warn", ("privacy.epsilon=0.1", 'privacy.on_overspend="warn"'), False),
]

#: Runs that abort and release nothing (exit 4), one per protocol.
ABORTS: dict[str, tuple[str, ...]] = {
    "dca": ("faults.absent=0.9",),  # 36 of 40 missing, T = 5: too_many_dropouts
    "trusted_aggregator": ('faults.roles=["aggregator"]', "faults.absent=1.0"),
    "blr": ('blr.methods=["DDP","proj_DDP"]', "faults.absent=0.9"),  # both sums abort
    "bcd": ("bcd.gamma=1.0001",),  # the first step's loss exceeds ξ: the abort rule
    "race": ("faults.absent=0.5",),  # more owners missing than T = 1
    "secagg": ("faults.absent=0.7",),  # fewer than t = 8 live share holders
    "secagg_plus": ("faults.absent=0.7",),
    "summarization": ('faults.roles=["curator"]', "faults.absent=1.0"),
    "fedlearn": ("faults.absent=1.0",),  # every picked client absent: no round releases
}


def _argv(command: str, protocol: str, settings: tuple[str, ...], *flags: str) -> list[str]:
    """``privsim COMMAND`` on the protocol's small built-in scenario with ``settings``
    (which replace the small scenario's own setting of the same field)."""
    name, small = SMALL[protocol]
    options = {option.partition("=")[0]: option for option in (*small, *settings)}
    argv = [command, str(builtin_scenario_path(name)), "--no-progress"]
    for option in options.values():
        argv += ["--set", option]
    return [*argv, *flags]


def _run(protocol: str, out, *settings: str, flags: tuple[str, ...] = ()) -> int:
    """``privsim run`` of the small scenario, its result file written to ``out``."""
    return main(_argv("run", protocol, settings, "--out", str(out), "--encryption", "none", *flags))


def _results(out) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))] if out.exists() else []


def test_every_built_in_protocol_has_a_small_scenario_here():
    from privsim import registry

    built_in = {
        name
        for name in registry.names()
        if registry.get(name).run.__module__.startswith("privsim.protocols.")
    }
    assert built_in == set(SMALL) == set(ABORTS)
    assert set(OVER_BUDGET) == built_in - {"blr"}
    assert {p for p, *_ in NOT_MET} == built_in


@pytest.mark.parametrize("protocol", sorted(SMALL))
def test_a_small_released_run_exits_0(protocol, tmp_path, capsys):
    assert _run(protocol, tmp_path) == 0
    [result] = _results(tmp_path)
    assert result["protocol"] == protocol and result["status"] == "released"
    err = capsys.readouterr().err
    assert "warning" not in err and "error" not in err


@pytest.mark.parametrize("protocol", sorted(SMALL))
def test_invalid_input_exits_2_naming_the_field(protocol, tmp_path, capsys):
    # a party the protocol does not create: its own parties() decides, before any run
    assert _run(protocol, tmp_path, 'threat.colluding_servers=["nobody"]') == EXIT_INVALID == 2
    err = capsys.readouterr().err
    assert err.startswith("privsim: error: --set threat.colluding_servers=")
    assert "no party 'nobody'" in err and "Traceback" not in err
    assert _results(tmp_path) == []


@pytest.mark.parametrize("protocol", sorted(OVER_BUDGET))
def test_over_budget_is_refused_with_2_and_on_overspend_opts_in(protocol, tmp_path, capsys):
    over = OVER_BUDGET[protocol]
    assert _run(protocol, tmp_path / "refused", *over) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "over the budget" in err and "privacy.on_overspend = 'warn'" in err
    assert _results(tmp_path / "refused") == []  # refused before anything ran
    # --allow-overspend accepts a guarantee not met after a run; it does not lift a refusal
    assert _run(protocol, tmp_path / "refused", *over, flags=("--allow-overspend",)) == 2
    # the opt-in is the scenario's: "warn" runs it (guarantee not met: 3), "allow" accepts it
    assert _run(protocol, tmp_path / "warn", *over, 'privacy.on_overspend="warn"') == EXIT_NOT_MET
    assert _run(protocol, tmp_path / "allow", *over, 'privacy.on_overspend="allow"') == 0
    [warned] = _results(tmp_path / "warn")
    assert warned["privacy"]["guarantee_met"] is False


@pytest.mark.parametrize(
    ("protocol", "settings", "infinite"),
    [pytest.param(p, s, inf, id=f"{p}-{case}") for p, case, s, inf in NOT_MET],
)
def test_a_guarantee_not_met_exits_3_with_a_warning_and_allow_overspend_opts_in(
    protocol, settings, infinite, tmp_path, capsys
):
    assert _run(protocol, tmp_path / "plain", *settings) == EXIT_NOT_MET == 3
    err = capsys.readouterr().err
    assert "privsim: warning: the privacy guarantee is NOT met: achieved epsilon = " in err
    assert "Exit status 3; pass --allow-overspend" in err and "error" not in err
    # ε = ∞ is the text "inf" in the result file and "inf (no protection)" on stderr
    assert ("achieved epsilon = inf (no protection) at delta" in err) is infinite
    [result] = _results(tmp_path / "plain")  # the result file is written
    assert result["status"] == "released" and result["privacy"]["guarantee_met"] is False
    assert (result["privacy"]["achieved_epsilon"] == "inf") is infinite
    assert _run(protocol, tmp_path / "flag", *settings, flags=("--allow-overspend",)) == 0
    assert "Allowed by the scenario or --allow-overspend" in capsys.readouterr().err
    allow = 'privacy.on_overspend="allow"'
    unwarned = tuple(s for s in settings if not s.startswith("privacy.on_overspend"))
    assert _run(protocol, tmp_path / "scenario", *unwarned, allow) == 0
    # --allow-abort is for aborts: it does not hide a guarantee not met
    assert _run(protocol, tmp_path / "abort", *settings, flags=("--allow-abort",)) == 3


@pytest.mark.parametrize("protocol", sorted(ABORTS))
def test_an_aborted_run_exits_4_and_allow_abort_opts_in(protocol, tmp_path, capsys):
    assert _run(protocol, tmp_path / "plain", *ABORTS[protocol]) == EXIT_ABORTED
    err = capsys.readouterr().err
    assert "privsim: the run aborted (" in err and "nothing was released" in err
    assert "Exit status 4; pass --allow-abort" in err and "error" not in err
    [result] = _results(tmp_path / "plain")  # the result file is written
    assert result["status"] == "aborted" and result["abort"]["reason"]
    assert _run(protocol, tmp_path / "flag", *ABORTS[protocol], flags=("--allow-abort",)) == 0
    assert "Allowed by --allow-abort" in capsys.readouterr().err
    # --allow-overspend is for guarantees not met: it does not hide an abort
    assert _run(protocol, tmp_path / "other", *ABORTS[protocol], flags=("--allow-overspend",)) == 4


def test_blr_refuses_method_by_method_so_an_all_refused_run_exits_4(tmp_path, capsys):
    # BLR's over-budget methods are refused (spending nothing) and the others release
    assert _run("blr", tmp_path / "some", *CLASSIC_OVER) == 0
    [result] = _results(tmp_path / "some")
    assert result["methods"]["TA"]["status"] == "refused"
    # with only private methods every one is refused: nothing released, exit 4
    only = ('blr.methods=["TA","DDP"]', *CLASSIC_OVER)
    assert _run("blr", tmp_path / "all", *only) == EXIT_ABORTED
    assert "nothing_released: TA: refused; DDP: refused" in capsys.readouterr().err
    assert _run("blr", tmp_path / "allowed", *only, flags=("--allow-abort",)) == 0


@pytest.mark.parametrize("protocol", sorted(SMALL))
def test_check_exits_1_when_a_field_differs(protocol, tmp_path, capsys):
    golden = str(tmp_path / "golden.json")
    assert main([*_argv("check", protocol, ()), "--golden", golden, "--update"]) == 0
    assert main([*_argv("check", protocol, ()), "--golden", golden]) == 0
    assert "matches golden file" in capsys.readouterr().out
    # the same scenario with another budget: privacy.target_epsilon differs, at least
    changed = main([*_argv("check", protocol, ("privacy.epsilon=7",)), "--golden", golden])
    assert changed == EXIT_DIFFERS == 1
    out = capsys.readouterr().out
    assert "differ from golden file" in out and "privacy.target_epsilon: stored" in out
