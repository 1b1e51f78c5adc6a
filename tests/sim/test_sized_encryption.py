"""``network.encryption = "sized"``: every message charged exactly what AES-GCM charges
(the envelope's bytes, so the same queueing, departure and arrival times) with nothing
encrypted and no channel keys derived. The same scenario and seed give the same trace,
message for message, and the same result as ``aes-gcm``; ``none`` differs by exactly
the envelope's bytes per message."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privsim import registry
from privsim.analysis.report import format_report
from privsim.api import run
from privsim.protocols.bcd.experiment import simulate_bcd
from privsim.protocols.dca.run import simulate as simulate_dca
from privsim.protocols.secagg.run import simulate as simulate_secagg
from privsim.scenarios import Scenario, ScenarioError, scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.sim.channels import OVERHEAD_BYTES
from privsim.sim.trace import TraceArrays
from privsim.sim.world import World
from tests.conftest import make_scenario

COLUMNS = ("src", "dst", "kind", "wire_bytes", "send_time", "depart_time", "recv_time", "status")

#: Lossy links with spread-out latencies and a narrow uplink, so that every message's
#: bytes move its departure and arrival (an envelope's 28 bytes are 0.14 ms at 200 kB/s).
LINK = {
    "latency": {"model": "lognormal", "median": 0.02, "sigma": 0.8},
    "loss": 0.02,
    "bandwidth": 2e5,
}
DCA_FAULTS = {
    "absent": 0.05,
    "crash": 0.05,
    "crash_window": [0.0, 0.002],
    "straggler_fraction": 0.2,
    "straggler_slowdown": 30.0,
}


def _dca(encryption: str, delivery: str, link: dict[str, Any] = LINK) -> Scenario:
    return make_scenario(
        population={"clients": 120, "compute_nodes": 4},
        dca={"tolerated": 60, "share_timeout": 0.3, "delivery": delivery},
        faults=DCA_FAULTS,
        network={
            "encryption": encryption,
            "link": link,
            "overrides": [{"source": "compute", "target": "*", "loss": 0.0}],
        },
    )


def _example(protocol: str, encryption: str, link: dict[str, Any] = LINK) -> Scenario:
    data = set_fields(
        registry.get(protocol).example,
        {"network.encryption": encryption, "network.link": link},
    )
    return scenario_from_dict(data)


def _same_trace(a: TraceArrays, b: TraceArrays) -> None:
    assert len(a) == len(b) > 0
    assert (a.parties, a.kinds) == (b.parties, b.kinds)
    for column in COLUMNS:  # NaN receive times (never arrived) compare equal
        np.testing.assert_array_equal(getattr(a, column), getattr(b, column), err_msg=column)


def _without_wall_time(result: dict[str, Any]) -> dict[str, Any]:
    """The result's dict less what may differ: the wall time and the mode's own name."""
    out = {k: v for k, v in result.items() if k not in ("timing", "scenario")}
    scenario = {**result["scenario"], "network": dict(result["scenario"]["network"])}
    del scenario["network"]["encryption"]
    return {**out, "scenario": scenario}


def _check_modes(simulate, build, released) -> None:
    """``aes-gcm`` and ``sized`` give the same trace, released values and result;
    ``sized`` seals nothing and derives no keys."""
    sims = {mode: simulate(build(mode)) for mode in ("aes-gcm", "sized")}
    sealed, sized = sims["aes-gcm"].world, sims["sized"].world
    assert (sealed.bus.encrypt, sealed.bus.envelope) == (True, True)
    assert (sized.bus.encrypt, sized.bus.envelope) == (False, True)
    assert sealed.channels.pairs_agreed > 0 and sized.channels.pairs_agreed == 0
    _same_trace(sealed.trace.arrays(), sized.trace.arrays())
    a, b = (released(sims[mode]) for mode in ("aes-gcm", "sized"))
    assert a is not None
    np.testing.assert_array_equal(a, b)
    results = {mode: run(build(mode)).to_dict() for mode in ("aes-gcm", "sized")}
    assert results["sized"]["scenario"]["network"]["encryption"] == "sized"
    assert (
        results["sized"]["privacy"]["achieved_epsilon"]
        == (results["aes-gcm"]["privacy"]["achieved_epsilon"])
    )
    assert _without_wall_time(results["sized"]) == _without_wall_time(results["aes-gcm"])


def _check_envelope_only(simulate, build) -> None:
    """``none`` sends the same messages, each exactly ``OVERHEAD_BYTES`` smaller."""
    sized, none = (simulate(build(mode)).world.trace.arrays() for mode in ("sized", "none"))
    assert len(sized) == len(none) > 0
    assert (sized.parties, sized.kinds) == (none.parties, none.kinds)
    for column in ("src", "dst", "kind", "status"):  # times move with the bytes
        np.testing.assert_array_equal(getattr(sized, column), getattr(none, column))
    assert np.all(sized.wire_bytes - none.wire_bytes == OVERHEAD_BYTES)


# -- DCA, batched and per-message -------------------------------------------------------


@pytest.mark.parametrize("delivery", ["batched", "per_message"])
def test_dca_sized_is_aes_gcm_message_for_message(delivery):
    def released(sim):
        assert sim.delivery == delivery and sim.outcome.ok
        assert 0 < int(sim.outcome.included.sum()) < 120  # faults and deadlines bit
        return sim.outcome.released

    _check_modes(simulate_dca, lambda mode: _dca(mode, delivery), released)


@pytest.mark.parametrize("delivery", ["batched", "per_message"])
def test_dca_without_the_envelope_is_28_bytes_lighter_per_message(delivery):
    roomy = {"latency": {"model": "constant", "value": 0.01}, "bandwidth": 1e9, "loss": 0.0}
    _check_envelope_only(simulate_dca, lambda mode: _dca(mode, delivery, roomy))


def test_sized_keeps_no_envelope_and_says_so_in_the_report():
    sim = simulate_dca(_dca("sized", "per_message"), keep_envelopes=True)
    assert sim.world.bus.envelopes == {}  # nothing was sealed: nothing to keep
    text = format_report(run(_dca("sized", "per_message")).to_dict())
    assert "encryption sized (not encrypted)" in text
    assert "nothing encrypted" in text
    assert "not encrypted" not in format_report(run(_dca("aes-gcm", "per_message")).to_dict())


# -- SecAgg+ and BCD --------------------------------------------------------------------


def test_secagg_plus_sized_is_aes_gcm_message_for_message():
    def released(sim):
        assert sim.outcome.ok, sim.outcome.detail
        return sim.outcome.released

    _check_modes(simulate_secagg, lambda mode: _example("secagg_plus", mode), released)
    roomy = {"latency": {"model": "constant", "value": 0.01}}
    _check_envelope_only(simulate_secagg, lambda mode: _example("secagg_plus", mode, roomy))


def test_bcd_sized_is_aes_gcm_message_for_message():
    def released(sim):
        return np.concatenate([np.ravel(o.beta) for o in sim.outcomes])

    _check_modes(simulate_bcd, lambda mode: _example("bcd", mode), released)
    roomy = {"latency": {"model": "constant", "value": 0.01}}
    _check_envelope_only(simulate_bcd, lambda mode: _example("bcd", mode, roomy))


def test_a_study_page_says_when_its_channels_are_sized():
    import pandas as pd

    from privsim.analysis.html import _channel_note

    one = pd.DataFrame({"seed": [1]})
    assert "nothing encrypted" in _channel_note(one, {"overrides": {"network.encryption": "sized"}})
    assert "every cell" in _channel_note(one, {"base": {"network": {"encryption": "sized"}}})
    grid = pd.DataFrame({"grid.network.encryption": ["sized", "aes-gcm"]})
    assert "some cells" in _channel_note(grid, {})
    assert _channel_note(one, {"base": "quickstart"}) == ""
    assert _channel_note(grid.iloc[1:], {"overrides": {"network.encryption": "sized"}}) == ""


# -- the engine's flags -----------------------------------------------------------------


def test_the_envelope_defaults_to_encryption_and_a_sealed_bus_always_has_it():
    assert World(seed=1).bus.envelope is True
    assert World(seed=1, encryption=False).bus.envelope is False
    bus = World(seed=1, encryption=False, envelope=True).bus
    assert (bus.encrypt, bus.envelope) == (False, True)
    with pytest.raises(ValueError, match="envelope"):
        World(seed=1, encryption=True, envelope=False)


# -- hostile input ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["Sized", "aes", "AES-GCM", "", 1, None])
def test_an_unknown_encryption_mode_is_a_named_error(value):
    with pytest.raises(ScenarioError) as info:
        make_scenario(network={"encryption": value})
    assert info.value.field == "network.encryption"
    assert "Fix:" in str(info.value) and "'sized'" in str(info.value)


def test_sized_is_accepted_by_the_schema_and_the_cli():
    from privsim.cli import build_parser

    assert make_scenario(network={"encryption": "sized"}).network.encryption == "sized"
    args = build_parser().parse_args(["run", "--encryption", "sized"])
    assert args.encryption == "sized"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--encryption", "Sized"])
