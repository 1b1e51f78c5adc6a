"""The result builder (:meth:`RunResult.of_world`), the abort every aborted result must
carry, the report's line for it, and the spec's derived defaults (parties, footprint,
report, flatten), on the noisy-sum plug-in (``tests/plugins/noisy_sum``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from privsim.analysis import report
from privsim.kit.result import Abort, MethodResult, Privacy, RunResult, Timing
from privsim.kit.spec import PARTY_BYTES, accuracy_lines, clients_and, detail_columns
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.streams import Streams

PLUGIN = Path(__file__).resolve().parent.parent / "plugins" / "noisy_sum"


@pytest.fixture
def noisy_sum(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN))
    import privsim_noisy_sum

    from privsim import registry

    monkeypatch.setattr(registry, "_specs", dict(registry.specs()))
    monkeypatch.setattr(registry, "_tables", registry.tables())
    if privsim_noisy_sum.PROTOCOL.name not in registry.specs():
        registry.register(privsim_noisy_sum.PROTOCOL)
    return privsim_noisy_sum


def _scenario(module, **changes):
    return scenario_from_dict(set_fields(dict(module.PROTOCOL.example), changes))


def test_the_builder_fills_every_common_section_from_the_world(noisy_sum):
    scenario = _scenario(noisy_sum, **{"threat.colluding_clients": 2})
    result = noisy_sum.run(scenario, 9)
    assert (result.scenario_name, result.protocol, result.seed) == (
        "noisy-sum-example",
        "noisy_sum",
        9,
    )
    assert result.root_entropy == Streams(9).entropy and result.status == "released"
    assert result.abort is None and result.scenario == scenario.to_dict()
    assert result.parties is not None and result.parties.total == 20  # the world's clients
    assert len(result.coalition.members) == 2 and result.coalition.pooled_messages
    assert result.communication is not None and result.communication.messages == 20
    assert result.privacy.details["sigma_per_client"] > 0 and result.privacy.guarantee_met
    assert result.timing.wall_seconds > 0 and result.timing.key_agreement_seconds == 0


def test_an_abort_makes_the_status_and_the_report_says_why(noisy_sum):
    result = noisy_sum.run(_scenario(noisy_sum, **{"faults.absent_parties": ["aggregator"]}), 1)
    assert result.status == "aborted" and result.abort == Abort(
        reason="no_contributions", detail="no aggregator ran"
    )
    lines = report.format_report(result.to_dict()).splitlines()
    assert (
        "Result      ABORTED (no_contributions): no aggregator ran; nothing was released" in lines
    )


def test_a_protocols_own_abort_line_is_not_repeated():
    result = {"status": "aborted", "abort": {"reason": "too_many_dropouts", "detail": "3 of 40"}}
    own = ["Result      ABORTED (too_many_dropouts): 3 of 40"]
    assert report._abort_lines(result, own) == []
    assert report._abort_lines(result, ["Accuracy    n/a"]) == [
        "Result      ABORTED (too_many_dropouts): 3 of 40; nothing was released"
    ]


def test_no_abort_without_a_reason():
    with pytest.raises(ValueError, match=r"Abort needs a reason.*Abort\(reason="):
        Abort(reason=" ")
    privacy = Privacy.of(PrivacyLedger(1.0, 1e-5))
    common = dict(scenario_name="s", protocol="p", seed=1, root_entropy=1, scenario={})
    common |= {"privacy": privacy, "timing": Timing(wall_seconds=0.0)}
    with pytest.raises(ValueError, match=r"status 'aborted' but no abort: give abort=Abort"):
        RunResult(status="aborted", **common)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="status 'released' and an abort"):
        RunResult(status="released", abort=Abort(reason="x"), **common)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a method result has status 'aborted' but no abort"):
        MethodResult(status="aborted", privacy=privacy)
    assert MethodResult(status="refused", privacy=privacy, abort=Abort(reason="refused"))


def test_the_builder_takes_a_start_time_or_a_wall_time(noisy_sum):
    scenario, ledger = _scenario(noisy_sum), PrivacyLedger(1.0, 1e-5)
    for times in ({}, {"started": 0.0, "wall_seconds": 1.0}):
        with pytest.raises(ValueError, match=r"started=time\.perf_counter\(\)"):
            RunResult.of_world(scenario, 1, None, ledger, **times)  # type: ignore[arg-type]


def test_the_specs_derived_defaults(noisy_sum):
    spec = noisy_sum.PROTOCOL
    scenario = _scenario(noisy_sum)
    parties = spec.parties(scenario)
    assert list(parties["client"])[:2] == ["client-0", "client-1"] and parties["aggregator"] == (
        "aggregator",
    )
    # no footprint declared: PARTY_BYTES per party, from the parties
    assert spec.footprint(scenario)[0] == 21 * PARTY_BYTES
    extra = clients_and({"compute": ("c-0", "c-1")})(scenario)
    assert set(extra) == {"client", "compute"} and len(extra["client"]) == 20
    result = noisy_sum.run(scenario, 1).to_dict()
    assert spec.report is accuracy_lines and spec.report(result)[0].startswith("Accuracy    rmse ")
    assert detail_columns("a", "c")({"protocol": "p", "p": {"a": 1, "b": 2}}) == {"p": {"a": 1}}
