"""Integer noise in a DCA scenario: exact sums mod 2^b, the ledger charged by the
integer accountant, and a modulus narrower than the plan refused with a named error."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
import pytest

from privsim.kit.intnoise.accounting import epsilon
from privsim.kit.intnoise.dca import IntegerClientInputs, IntegerSetup
from privsim.kit.intnoise.modulus import ModulusTooSmallError
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.maths import decode_sum
from privsim.protocols.dca import EXAMPLE
from privsim.protocols.dca.run import Simulation, simulate
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario

FRACTION_BITS = 10


def _scenario(
    noise: str | None, clients: int = 30, threat: dict[str, Any] | None = None, **dca: Any
) -> Scenario:
    data = copy.deepcopy(EXAMPLE)
    data["population"]["clients"] = clients
    if threat is not None:
        data["threat"] = threat
    data["dca"] = {"tolerated": 3, "fraction_bits": FRACTION_BITS, **dca}
    if noise is not None:
        data["dca"]["noise"] = noise
    return Scenario.from_dict(data)


def _setup(sim: Simulation) -> IntegerSetup:
    setup = securesum.integer_setup(
        sim.scenario,
        len(sim.clients),
        sim.data.dimension,
        1.0,
        replace_one=sim.scenario.privacy.neighbour == "replace_one",
    )
    assert setup is not None
    return setup


def _messages(sim: Simulation, setup: IntegerSetup) -> Any:
    """Every included client's messages, recomputed from the run's streams."""
    inputs = IntegerClientInputs(
        data=sim.data,
        noise=sim.world.streams.keystream("dca", "noise"),
        randomness=sim.world.streams.keystream("dca", "shares"),
        noise_std=setup.client_std,
        fraction_bits=FRACTION_BITS,
        n_nodes=len(sim.nodes),
        setup=setup,
    )
    assert sim.outcome.included is not None
    return inputs.messages(np.flatnonzero(sim.outcome.included))


def test_without_integer_noise_the_table_reads_and_writes_as_before() -> None:
    scenario = _scenario(None)
    new = {"noise", "modulus_bits", "wrap_probability", "rounding_beta"}
    assert not new & set(scenario.to_dict()["dca"])  # the plain form is unchanged
    assert securesum.integer_setup(scenario, 30, 4, 1.0, replace_one=False) is None
    with pytest.raises(FieldError, match="continuous Gaussian") as err:
        DcaConfig(modulus_bits=20)
    assert err.value.field == "dca.modulus_bits"


@pytest.mark.parametrize("kind", ["discrete_gaussian", "skellam"])
def test_released_sum_is_exact_mod_2b_and_the_ledger_reports_the_accountant(kind) -> None:
    sim = simulate(_scenario(kind))
    assert sim.outcome.ok and sim.outcome.released is not None
    setup = _setup(sim)
    assert setup.bits < 64 and setup.account.honest_clients == 30 - 3 - 1
    # The protocol's sum is exactly Σ_i (x̃_i + ν_i) / s over the included clients.
    mine = _messages(sim, setup)
    total = mine.shares.sum(axis=(0, 1), dtype=np.uint64)
    np.testing.assert_array_equal(
        sim.outcome.released, decode_sum(total, FRACTION_BITS, setup.bits)
    )
    # The ledger's ε (no coalition) is the integer accountant's at the H − 1 honest
    # included shares (the target's own uncredited): no fewer than planned, so within
    # the budget. 1e-6: the round trip through the equivalent Gaussian's σ.
    honest = int(sim.outcome.included.sum())  # type: ignore[union-attr]
    assert honest >= 30 - 3
    realised = epsilon(
        kind,
        setup.parameter,
        honest_clients=honest - 1,
        sensitivity=setup.account.sensitivity,
        dimension=setup.account.dimension,
        delta=setup.account.delta,
    )
    guarantee = sim.ledger.guarantee()
    assert guarantee.epsilon == pytest.approx(realised, rel=1e-6)
    assert guarantee.epsilon <= setup.account.epsilon * (1 + 1e-6)
    assert guarantee.met


def test_noise_off_gives_the_exact_sum_of_the_rounded_inputs(monkeypatch) -> None:
    real = securesum.integer_setup

    def silent(*args: Any, **kwargs: Any) -> IntegerSetup | None:
        setup = real(*args, **kwargs)
        return None if setup is None else dataclasses.replace(setup, parameter=0.0)

    monkeypatch.setattr(securesum, "integer_setup", silent)
    sim = simulate(_scenario("discrete_gaussian"))
    assert sim.outcome.released is not None
    setup = silent(sim.scenario, len(sim.clients), sim.data.dimension, 1.0, replace_one=False)
    assert setup is not None
    mine = _messages(sim, setup)
    assert not mine.eta.any()  # no noise at all
    # Randomised rounding moves each coordinate by less than one step 2^-f per client.
    included = sim.included_sum()
    assert included is not None
    n = int(sim.outcome.included.sum())  # type: ignore[union-attr]
    assert np.all(np.abs(sim.outcome.released - included) < n * 2.0**-FRACTION_BITS)
    scaled = sim.outcome.released * 2**FRACTION_BITS
    np.testing.assert_array_equal(scaled, np.rint(scaled))  # an integer sum, decoded


def test_batched_and_per_message_delivery_release_the_same_sum() -> None:
    a = simulate(_scenario("skellam", clients=120, delivery="batched"))
    b = simulate(_scenario("skellam", clients=120, delivery="per_message"))
    assert a.delivery == "batched" and b.delivery == "per_message"
    np.testing.assert_array_equal(a.outcome.released, b.outcome.released)


def test_a_modulus_below_the_plan_is_refused_naming_the_field() -> None:
    planned = _setup(simulate(_scenario("discrete_gaussian"))).bits
    simulate(_scenario("discrete_gaussian", modulus_bits=planned + 4))  # wider is fine
    with pytest.raises(FieldError, match=f"needs {planned} bits") as err:
        simulate(_scenario("discrete_gaussian", modulus_bits=planned - 1))
    assert err.value.field == "dca.modulus_bits"
    assert isinstance(err.value.__cause__, ModulusTooSmallError)


def test_colluding_clients_beyond_t_weaken_but_do_not_void_the_integer_guarantee() -> None:
    # T = 3: up to 3 colluders leave N − T honest included clients (credited N − T − 1);
    # one more leaves one share fewer: a finite ε above the budget (the papers' bound at
    # N − T − 2 shares), not ∞ (tests/kit/test_intnoise_realised.py checks the values).
    ok = simulate(_scenario("skellam", threat={"colluding_clients": 3}))
    assert ok.privacy().achieved_epsilon <= 1.0 + 1e-6
    over = simulate(_scenario("skellam", threat={"colluding_clients": 4}))
    assert 1.0 < over.privacy().achieved_epsilon < 1.2


def test_integer_noise_needs_additive_shares() -> None:
    with pytest.raises(FieldError, match="not in Shamir's prime field") as err:
        DcaConfig(noise="skellam", shares="shamir", threshold=2)
    assert err.value.field == "dca.shares"


@pytest.mark.parametrize("delivery", ["per_message", "batched"])
def test_seed_compressed_shares_release_the_same_integer_sum(delivery: str) -> None:
    full = simulate(_scenario("discrete_gaussian", clients=40, delivery=delivery))
    seeded = simulate(
        _scenario("discrete_gaussian", clients=40, delivery=delivery, shares="seeded")
    )
    assert full.outcome.released is not None
    np.testing.assert_array_equal(full.outcome.released, seeded.outcome.released)
    assert seeded.ledger.guarantee().epsilon == full.ledger.guarantee().epsilon


def test_a_round_forced_below_the_plan_wraps_around(monkeypatch) -> None:
    # Every client's vector is (0.5, 0.5, 0.5, 0.5) after clipping (mean 10, no spread):
    # each coordinate of the sum is 30 · 0.5 = 15.36 units (15 360 steps of 2^-10) plus
    # noise of σ ≈ 1.2 units at ε = 8.
    def aligned() -> Scenario:
        scenario = _scenario("skellam")
        return scenario.replace({"data.mean": 10.0, "data.scale": 0.0, "privacy.epsilon": 8.0})

    planned = simulate(aligned())
    assert planned.outcome.released is not None
    assert _setup(planned).bits > 14
    # At the planned modulus the error is the noise alone (10 σ ≈ 12 units).
    assert np.all(np.abs(planned.outcome.released - planned.included_sum()) < 12)

    real = securesum.integer_setup

    def narrow(*args: Any, **kwargs: Any) -> IntegerSetup | None:
        found = real(*args, **kwargs)
        return None if found is None else dataclasses.replace(found, bits=14)

    monkeypatch.setattr(securesum, "integer_setup", narrow)
    wrapped = simulate(aligned())
    assert wrapped.outcome.released is not None
    # Same draws, reduced mod 2^14: the centred range is ±8 units, every coordinate
    # (15.36 ± 12) leaves it, and the decoded sum is off by whole moduli 2^14/2^10 = 16.
    off = (wrapped.outcome.released - planned.outcome.released) / 16.0
    np.testing.assert_array_equal(off, np.rint(off))
    assert np.all(off != 0)


def test_protocols_summing_with_gaussian_noise_refuse_an_integer_kind() -> None:
    from privsim import registry

    spec = registry.get("race")
    example = copy.deepcopy(spec.example)
    example.setdefault("dca", {})["noise"] = "skellam"
    with pytest.raises(FieldError, match="continuous Gaussian noise only") as err:
        spec.run(Scenario.from_dict(example), 0)
    assert err.value.field == "dca.noise"
