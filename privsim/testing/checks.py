"""The contract checks, one plain function each: ``check(spec)`` returns when the protocol
keeps that part of the contract, raises :class:`AssertionError` with a message saying
what broke, or :class:`CheckSkipped` when the check does not apply to it.

Every check runs the protocol's own small ``example`` scenario (with no colluding
clients unless the check adds them), in a temporary folder; whatever the command line
prints is captured, so a check says nothing unless it fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import tempfile
import typing
import unittest
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privsim.kit.spec import ProtocolSpec

__all__ = [
    "CHECKS",
    "COMMON_RESULT_KEYS",
    "COMMON_ROW_COLUMNS",
    "CheckSkipped",
]


class CheckSkipped(unittest.SkipTest):
    """A check that does not apply to the protocol (e.g. it declares no ``overspend``):
    reported as SKIP with the reason. A :class:`unittest.SkipTest`, so pytest skips it."""


#: The keys of every result file (``RunResult.to_dict``), besides the protocol's own.
COMMON_RESULT_KEYS = frozenset(
    {
        "privsim_version",
        "scenario_name",
        "protocol",
        "seed",
        "root_entropy",
        "status",
        "abort",
        "privacy",
        "accuracy",
        "parties",
        "communication",
        "coalition",
        "methods",
        "timing",
        "scenario",
    }
)
#: The columns every study row has, whatever the protocol.
COMMON_ROW_COLUMNS = (
    "protocol",
    "status",
    "privacy.target_epsilon",
    "privacy.achieved_epsilon",
    "privacy.delta",
    "privacy.guarantee_met",
    "timing.wall_seconds",
    "coalition.members",
)

#: Exit statuses of ``privsim run`` and ``validate`` the checks expect (privsim.cli).
_EXIT_INVALID, _EXIT_NOT_MET, _EXIT_ABORTED = 2, 3, 4


# -- helpers ------------------------------------------------------------------------------
def _example(spec: ProtocolSpec, **changes: Any) -> dict[str, Any]:
    """The spec's example with no colluding clients, and ``changes`` (dotted fields)."""
    from privsim.scenarios.convert import set_fields

    base = set_fields(spec.example, {"threat.colluding_clients": 0})
    return set_fields(base, changes)


def _run(data: Mapping[str, Any]) -> dict[str, Any]:
    """``privsim.api.run`` of a plain scenario, warnings silenced, as a result dict."""
    from privsim.api import run
    from privsim.scenarios import scenario_from_dict

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(data)).to_dict()


@contextlib.contextmanager
def _folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="privsim-check-") as name:
        yield Path(name)


def _toml(folder: Path, data: Mapping[str, Any], name: str = "scenario.toml") -> str:
    import tomli_w

    path = folder / name
    path.write_text(tomli_w.dumps(dict(data)))
    return str(path)


def _privsim_command() -> Callable[[list[str]], int]:
    """The installed ``privsim`` command's entry point (``console_scripts``), what a
    shell runs: the checks sit above the command line, and ``privsim check-protocol``
    (in the command line) runs them, so they reach it by its entry point, not an import."""
    from importlib.metadata import entry_points

    found = entry_points(group="console_scripts", name="privsim")
    if not found:
        raise RuntimeError("the privsim command is not installed: pip install privsim")
    main: Callable[[list[str]], int] = next(iter(found)).load()
    return main


def _cli(*argv: str) -> tuple[int, str, str]:
    """``privsim ARGV`` in this process: (exit status, stdout, stderr)."""
    main = _privsim_command()
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(),
    ):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _one_result(folder: Path) -> dict[str, Any]:
    written = sorted(folder.glob("*.json"))
    assert len(written) == 1, f"expected one result file in {folder}, found {len(written)}"
    result: dict[str, Any] = json.loads(written[0].read_text())
    return result


def _guarantees(result: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The run's privacy section and each method's, by where they are."""
    return [("privacy", result["privacy"])] + [
        (f"methods.{m}.privacy", v["privacy"]) for m, v in result["methods"].items()
    ]


def _events(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [e for _, privacy in _guarantees(result) for e in privacy["events"]]


def _data_holders(spec: ProtocolSpec) -> list[str]:
    """The roles whose parties hold the data: ``client`` where the protocol has clients
    (or declares no parties), else every role it declares (BCD's ``party``)."""
    from privsim.scenarios import scenario_from_dict

    if spec.parties is None:
        return ["client"]
    roles = sorted(spec.parties(scenario_from_dict(_example(spec))))
    return ["client"] if "client" in roles else roles


def _needs_overspend(spec: ProtocolSpec) -> None:
    if not spec.overspend:
        raise CheckSkipped(
            f"{spec.name} declares no way to plan past its budget (ProtocolSpec.overspend)"
        )


# -- the checks ---------------------------------------------------------------------------
def the_example_runs_from_the_command_line(spec: ProtocolSpec) -> None:
    """``privsim run`` of the example exits 0, prints the common report and writes a
    result file with the common keys, the protocol's own section, status ``released``
    and every exposure metric the spec declares."""
    with _folder() as tmp:
        code, out, err = _cli("run", _toml(tmp, _example(spec)), "--out", str(tmp / "out"))
        assert code == 0, f"privsim run of the example exited {code}, not 0:\n{_tail(err)}"
        assert f"protocol {spec.name}" in out and "Privacy" in out, (
            f"the report of privsim run lacks the common header ('protocol {spec.name}') "
            f"or the Privacy line:\n{_tail(out, 12)}"
        )
        result = _one_result(tmp / "out")
    missing = sorted(COMMON_RESULT_KEYS - set(result))
    assert not missing, f"the result file lacks the common keys {missing}"
    assert spec.name in result, f"the result file has no section named {spec.name!r}"
    assert result["status"] == "released", (
        f"the example's status is {result['status']!r}, not 'released' "
        f"(abort: {result.get('abort')}); the example must release"
    )
    undeclared = sorted(set(spec.exposure) - set(result["coalition"]["exposure"]))
    assert not undeclared, (
        f"coalition.exposure lacks the metrics ProtocolSpec.exposure declares: {undeclared}"
    )


def a_one_cell_sweep_flattens_the_common_fields(spec: ProtocolSpec) -> None:
    """A study of the example (one cell, one replication) runs without error and its
    row has every common column, the protocol's name and status ``released``."""
    from privsim.studies.store import load
    from privsim.studies.study import study_from_dict
    from privsim.studies.sweep import sweep

    study = study_from_dict(
        {"name": f"contract-{spec.name}", "seed": 1, "replications": 1, "base": _example(spec)}
    )
    with _folder() as tmp:
        summary = sweep(study, tmp / "out", workers=1, progress=None)
        frame = load(tmp / "out")
    if (summary.total, summary.errors) != (1, 0):
        errors = frame["error"].dropna().tolist() if "error" in frame else []
        raise AssertionError(
            f"the one-cell sweep gave {summary.total} rows and {summary.errors} errors, "
            f"not 1 and 0: {errors}"
        )
    missing = [column for column in COMMON_ROW_COLUMNS if column not in frame]
    assert not missing, f"the study row lacks the common columns {missing}"
    row = frame.iloc[0]
    assert row["protocol"] == spec.name and row["status"] == "released", (
        f"the study row says protocol {row['protocol']!r}, status {row['status']!r}"
    )


def every_client_absent_aborts_naming_why(spec: ProtocolSpec) -> None:
    """With every data holder absent (``faults.absent = 1``) nothing is released:
    ``privsim run`` exits 4 saying so, and the result is ``aborted`` with no accuracy
    and an ``Abort`` whose reason and detail say why."""
    roles = _data_holders(spec)
    _aborts_naming_why(_example(spec, **_absent(roles)), roles)
    for name, fields in spec.training_threats.items():  # an attack never conjures data
        try:
            _aborts_naming_why(_example(spec, **fields, **_absent(roles)), roles)
        except AssertionError as exc:
            raise AssertionError(f"with the attack on training {name!r}: {exc}") from None
    for option in _releasing_options(spec):  # releasing beyond a threshold, never nothing
        try:
            _aborts_naming_why(_example(spec, **option, **_absent(roles)), roles)
        except AssertionError as exc:
            raise AssertionError(f"with {option}: {exc}") from None


def _releasing_options(spec: ProtocolSpec) -> list[dict[str, Any]]:
    """The options of ``spec``'s tables that release past a dropout threshold (each
    must still release nothing when nothing reached the sum)."""
    return [{"dca.on_excess_dropout": "release"}] if "dca" in spec.tables else []


def _absent(roles: Sequence[str]) -> dict[str, Any]:
    return {"faults.absent": 1.0, "faults.roles": list(roles)}


def _aborts_naming_why(absent: Mapping[str, Any], roles: Sequence[str]) -> None:
    """``privsim run`` of ``absent`` exits 4 saying nothing was released, its result
    aborted with a reason and no accuracy."""
    with _folder() as tmp:
        code, _, err = _cli("run", _toml(tmp, absent), "--out", str(tmp / "out"))
        assert code == _EXIT_ABORTED, (
            f"with every {'/'.join(roles)} absent, privsim run exited {code}, not "
            f"{_EXIT_ABORTED} (aborted):\n{_tail(err)}"
        )
        assert "nothing was released" in err, f"privsim run did not say why:\n{_tail(err)}"
        result = _one_result(tmp / "out")
    assert result["status"] == "aborted", f"status {result['status']!r}, not 'aborted'"
    assert result["accuracy"] is None, f"an aborted run reports accuracy {result['accuracy']}"
    abort = result["abort"] or {}
    assert abort.get("reason") and abort.get("detail"), (
        f"an aborted run must give Abort(reason=..., detail=...), got {abort}"
    )


def the_same_seed_gives_the_same_result(spec: ProtocolSpec) -> None:
    """Two runs of the example at its seed agree on every field but the timings."""
    from privsim.kit.result import without_timing

    first, second = (without_timing(_run(_example(spec))) for _ in range(2))
    if first != second:
        differ = sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))
        raise AssertionError(
            f"two runs of the same seed differ in {differ} (timings aside): a run must draw "
            "every random number from the streams of its seed (agent.rng, Streams)"
        )


def no_coalition_keeps_every_private_release_within_its_target(spec: ProtocolSpec) -> None:
    """The example charges its mechanisms to the ledger, and with no coalition every
    private guarantee (the run's and each method's) is met, its ε within the target."""
    result = _run(_example(spec))
    assert _events(result), (
        "the result lists no privacy events: a protocol must charge its mechanisms to the "
        "ledger (ledger.charge, or kit.budget.ledger_for)"
    )
    for where, privacy in _guarantees(result):
        if privacy["non_private"]:
            continue
        achieved, target = privacy["achieved_epsilon"], privacy["target_epsilon"]
        assert privacy["guarantee_met"] is True, f"{where}: guarantee not met (ε {achieved})"
        assert achieved != "inf" and achieved <= target * (1 + 1e-6), (
            f"{where}: achieved ε = {achieved} exceeds the target {target}"
        )


def a_pure_composition_reports_the_tighter_of_basic_and_pld(spec: ProtocolSpec) -> None:
    """Every guarantee says how it was composed. Pure events: the basic theorem's
    (Σ ε, 0) unless the PLD at δ is more than ``PURE_MARGIN`` below it; then the PLD,
    with the basic figure beside it."""
    from privsim.sim.ledger import PURE_MARGIN

    for where, privacy in _guarantees(_run(_example(spec))):
        found = privacy["details"].get("composition")
        if privacy["non_private"] or found is None:
            continue
        if found["method"] == "pld":
            assert privacy["achieved_epsilon"] == found["pld_epsilon"], where
            assert found["pld_epsilon"] < (1 - PURE_MARGIN) * found["basic_epsilon"], (
                f"{where}: the PLD's ε {found['pld_epsilon']} is reported though within "
                f"{PURE_MARGIN:.0%} of the basic theorem's {found['basic_epsilon']}"
            )
            assert privacy["delta"] == found["pld_delta"] > 0, where
        elif found["method"] == "basic":
            reported = (privacy["achieved_epsilon"], privacy["delta"])
            assert reported == (found["basic_epsilon"], 0.0), (
                f"{where}: reports (ε, δ) = {reported}, not the basic theorem's "
                f"({found['basic_epsilon']}, 0)"
            )
            if found.get("pld_epsilon") is not None:
                assert found["pld_epsilon"] >= (1 - PURE_MARGIN) * found["basic_epsilon"], (
                    f"{where}: the basic figure is reported though the PLD's "
                    f"{found['pld_epsilon']} is tighter by more than {PURE_MARGIN:.0%}"
                )


def a_coalition_of_every_trusted_party_leaves_no_guarantee(spec: ProtocolSpec) -> None:
    """A coalition of every party some event trusts (read from the ledger's own event
    records) breaks those events: each guarantee with a broken event reports ε = ∞,
    not met."""
    honest = _run(_example(spec))
    trusted = sorted(
        {
            party
            for event in _events(honest)
            if event["trust_kind"] != "nobody"
            for party in event["trusted_parties"]
        }
    )
    if not trusted:
        raise CheckSkipped(
            f"{spec.name}: every event trusts nobody (noise added where the data is)"
        )
    clients = [p for p in trusted if p.startswith("client-")]
    servers = [p for p in trusted if not p.startswith("client-")]
    coalition = {"threat.colluding_servers": servers, "threat.colluding_clients": clients or 0}
    broken = _run(_example(spec, **coalition))
    checked = 0
    for where, privacy in _guarantees(broken):
        if any(e["broken"] for e in privacy["events"]):
            assert privacy["achieved_epsilon"] == "inf", (
                f"{where}: the coalition {trusted} breaks an event's trust, yet ε = "
                f"{privacy['achieved_epsilon']}, not inf"
            )
            assert privacy["guarantee_met"] is False, f"{where}: broken trust, guarantee met"
            checked += 1
    assert checked >= 1, (
        f"no event is marked broken by the coalition of every trusted party {trusted}"
    )
    assert broken["privacy"]["guarantee_met"] is False, "privacy: broken trust, guarantee met"


def _wrong_value(tp: Any) -> Any:
    """A value of the wrong type for a field of type ``tp``."""
    return {"not": "a value"} if typing.get_origin(tp) is not dict else 3


def _named_error(data: Mapping[str, Any], field: str, exact: bool) -> None:
    from privsim.scenarios import ScenarioError, scenario_from_dict

    try:
        scenario_from_dict(data)
    except ScenarioError as exc:
        named = exc.field == field if exact else exc.field.startswith(field)
        assert named, f"{field}: the error names field {exc.field!r} instead: {exc}"
        assert "Fix:" in str(exc), f"{field}: the error does not say the fix: {exc}"
    else:
        raise AssertionError(f"{field}: a bad value was accepted, not a named ScenarioError")


def bad_values_in_the_protocol_tables_are_named_errors(spec: ProtocolSpec) -> None:
    """A value of the wrong type in each of the first three fields of each of the
    protocol's tables, and an unknown key in each, is a ``ScenarioError`` naming the
    field and saying the fix."""
    if not spec.tables:
        raise CheckSkipped(f"{spec.name} declares no config tables")
    for table, cls in spec.tables.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls)[:3]:
            path = f"{table}.{f.name}"
            _named_error(_example(spec, **{path: _wrong_value(hints[f.name])}), path, False)
        path = f"{table}.no_such_field"
        _named_error(_example(spec, **{path: 1}), path, True)


def the_default_refuses_a_planned_overspend_and_warn_reports_it(spec: ProtocolSpec) -> None:
    """The example with ``ProtocolSpec.overspend`` is refused under the default
    ``on_overspend = "refuse"`` (the run, or each private method alone), and under
    ``"warn"`` it runs and reports the guarantee not met."""
    from privsim.api import run
    from privsim.scenarios import scenario_from_dict
    from privsim.scenarios.convert import set_fields
    from privsim.sim.ledger import BudgetExceededError

    _needs_overspend(spec)
    over = _example(spec, **spec.overspend)
    scenario = scenario_from_dict(over)
    assert scenario.privacy.on_overspend == "refuse", (
        f"ProtocolSpec.overspend sets privacy.on_overspend = {scenario.privacy.on_overspend!r}: "
        "leave the default, 'refuse'"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            refused = run(scenario).to_dict()
        except BudgetExceededError as exc:
            assert "on_overspend" in str(exc), f"the refusal does not name on_overspend: {exc}"
        else:  # methods side by side: each one that would overspend is refused alone
            private = {
                m: v for m, v in refused["methods"].items() if not v["privacy"]["non_private"]
            }
            assert private, (
                f"the overspend {dict(spec.overspend)} ran under on_overspend = 'refuse' "
                "without a BudgetExceededError (status "
                f"{refused['status']!r}, ε {refused['privacy']['achieved_epsilon']})"
            )
            assert all(v["status"] == "refused" for v in private.values()), (
                f"methods not refused: {[m for m, v in private.items() if v['status'] != 'refused']}"
            )
            assert all("on_overspend" in v["abort"]["detail"] for v in private.values())
    warned = _run(set_fields(over, {"privacy.on_overspend": "warn"}))
    achieved, target = warned["privacy"]["achieved_epsilon"], warned["privacy"]["target_epsilon"]
    assert warned["privacy"]["guarantee_met"] is False, (
        f"under 'warn' the overspend reports the guarantee met (ε {achieved} of {target})"
    )
    assert achieved == "inf" or achieved > target, f"under 'warn': ε {achieved} ≤ target {target}"


def run_exits_nonzero_when_the_guarantee_is_not_met(spec: ProtocolSpec) -> None:
    """The overspend under ``warn``: ``privsim run`` exits 3 saying the guarantee is
    NOT met, writes its result all the same, and exits 0 with ``--allow-overspend``."""
    _needs_overspend(spec)
    over = _example(spec, **spec.overspend, **{"privacy.on_overspend": "warn"})
    with _folder() as tmp:
        path = _toml(tmp, over)
        code, _, err = _cli("run", path, "--out", str(tmp / "a"))
        assert code == _EXIT_NOT_MET, (
            f"privsim run of the overspend exited {code}, not {_EXIT_NOT_MET}:\n{_tail(err)}"
        )
        assert "NOT met" in err, f"privsim run did not say the guarantee is NOT met:\n{_tail(err)}"
        assert list((tmp / "a").glob("*.json")), "no result file was written"
        code, _, err = _cli("run", path, "--out", str(tmp / "b"), "--allow-overspend")
        assert code == 0, f"with --allow-overspend, privsim run exited {code}:\n{_tail(err)}"


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error" in line]


def validate_agrees_with_run(spec: ProtocolSpec) -> None:
    """``privsim validate`` refuses exactly what ``run`` refuses (exit 2, word for word
    the same error): the example is valid and runs; with ``overspend``, under
    ``refuse`` and under ``warn``. A protocol with no ``plan`` is said to have its
    budget checked at run time, never called valid."""
    cases: list[tuple[str, dict[str, Any]]] = [("the example", _example(spec))]
    if spec.overspend:
        for policy in ("refuse", "warn"):
            over = {**spec.overspend, "privacy.on_overspend": policy}
            cases.append((f"the overspend under {policy!r}", _example(spec, **over)))
    with _folder() as tmp:
        for i, (what, data) in enumerate(cases):
            path = _toml(tmp, data, f"case{i}.toml")
            validated, said, verr = _cli("validate", path)
            ran, _, rerr = _cli("run", path, "--out", str(tmp / f"out{i}"), "--no-progress")
            assert (validated == _EXIT_INVALID) is (ran == _EXIT_INVALID), (
                f"{what}: privsim validate exited {validated} but run exited {ran}:\n"
                f"validate: {_tail(verr or said, 3)}\nrun: {_tail(rerr, 3)}"
            )
            if ran == _EXIT_INVALID:
                assert _error_lines(verr) == _error_lines(rerr), (
                    f"{what}: validate and run refuse with different errors:\n"
                    f"validate: {_error_lines(verr)}\nrun: {_error_lines(rerr)}"
                )
                continue
            assert validated == 0, f"{what}: privsim validate exited {validated}:\n{_tail(verr)}"
            if spec.plan is None:
                assert "checked at run time" in said and "valid scenario" not in said, (
                    f"{what}: validate of a protocol with no plan must say the budget is "
                    f"checked at run time:\n{_tail(said)}"
                )
            else:
                assert "valid scenario" in said, f"{what}: validate said:\n{_tail(said)}"
            if what == "the example":
                assert ran == 0, f"the example: privsim run exited {ran}:\n{_tail(rerr)}"
            elif "refuse" in what:
                assert spec.plan is None, (
                    f"{what}: protocol {spec.name!r} declares a plan, yet run did not refuse "
                    f"the overspend (exit {ran})"
                )


def the_plan_charges_what_the_run_charges(spec: ProtocolSpec) -> None:
    """``ProtocolSpec.plan`` on the example holds the run's ledger entries: the same
    labels, planned events and trust, in the same order."""
    from privsim.scenarios import scenario_from_dict

    if spec.plan is None:
        raise CheckSkipped(f"{spec.name} declares no plan of its ledger (ProtocolSpec.plan)")
    data = _example(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planned = spec.plan(scenario_from_dict(data)).guarantee(()).events
    charged = _run(data)["privacy"]["events"]
    keys = ("label", "planned", "trust", "trusted_parties")
    plan = [tuple(getattr(e, k) for k in keys) for e in planned]
    ran = [tuple(e[k] if k != "trusted_parties" else tuple(e[k]) for k in keys) for e in charged]
    assert plan == ran, (
        "the plan's ledger differs from the run's (label, planned event, trust, parties):\n"
        f"plan: {plan}\nrun:  {ran}"
    )


#: Every check, in the order they run and are reported.
CHECKS: tuple[Callable[[ProtocolSpec], None], ...] = (
    the_example_runs_from_the_command_line,
    a_one_cell_sweep_flattens_the_common_fields,
    every_client_absent_aborts_naming_why,
    the_same_seed_gives_the_same_result,
    no_coalition_keeps_every_private_release_within_its_target,
    a_pure_composition_reports_the_tighter_of_basic_and_pld,
    a_coalition_of_every_trusted_party_leaves_no_guarantee,
    bad_values_in_the_protocol_tables_are_named_errors,
    the_default_refuses_a_planned_overspend_and_warn_reports_it,
    run_exits_nonzero_when_the_guarantee_is_not_met,
    validate_agrees_with_run,
    the_plan_charges_what_the_run_charges,
)
