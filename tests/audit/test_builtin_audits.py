"""Every built-in scenario (``privsim scenario``) whose protocol declares an audit plan,
each of its audited releases: the audit runs and its 95 % lower bound stays at or below
the ledger's claim. Few trials by default (the bound is then weak, but the plan, its
claim and its trials are exercised end to end); ``-m slow`` repeats it at 10⁵ a side."""

from __future__ import annotations

import warnings

import pytest

from privsim import registry
from privsim.audit import audit
from privsim.kit.audit import AuditReleases
from privsim.scenarios.loader import builtin_scenario, builtin_scenarios

#: Trials a side by default: the integer-noise SecAgg+ scenario draws 1,000 discrete
#: Gaussian shares per trial (about 1 µs each), the others are cheap at these counts.
FAST_TRIALS = {"secagg_plus": 2_000, "secagg": 10_000}
DEFAULT_FAST_TRIALS = 20_000
SLOW_TRIALS = 100_000

#: Built-in scenarios whose correct implementation is known to exceed its claim (docs/explanation/audits.md,
#: "Every protocol, correct and with injected bugs"): DP-BCD's abort rule gives its
#: released coefficients a bounded support, an (ε, δ > 0) mechanism, not pure ε-DP.
KNOWN_EXCEEDING = {"bcd"}


def _cases() -> list[object]:
    cases: list[object] = []
    for name in builtin_scenarios():
        scenario = builtin_scenario(name)
        plans = registry.get(scenario.protocol).audit
        if plans is None:
            continue
        releases = plans.names if isinstance(plans, AuditReleases) else (None,)
        for release in releases:
            if name in KNOWN_EXCEEDING:  # held to its label instead, below
                continue
            label = name if release is None else f"{name}-{release}"
            cases.append(pytest.param(name, release, id=label))
    return cases


def _check(name: str, release: str | None, trials: int) -> None:
    scenario = builtin_scenario(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration warnings belong to `privsim run`
        result = audit(scenario, trials, seed=11, release=release)
    assert result.lower_bound <= result.claimed_epsilon, (
        f"{name} ({release or 'default'}): bound {result.lower_bound:.4g} above the claim "
        f"{result.claimed_epsilon:.4g} at δ = {result.claimed_delta:g}"
    )


def test_every_protocol_with_a_plan_has_a_builtin_scenario_audited():
    audited = {builtin_scenario(n).protocol for n in builtin_scenarios()}
    with_plans = {s.name for s in registry.specs().values() if s.audit is not None}
    # trusted_aggregator is DCA's baseline, audited by DCA's tests on its example
    assert with_plans - audited <= {"trusted_aggregator"}


@pytest.mark.parametrize(("name", "release"), _cases())
def test_builtin_scenario_audit_stays_at_or_below_its_claim(name, release):
    trials = FAST_TRIALS.get(builtin_scenario(name).protocol, DEFAULT_FAST_TRIALS)
    _check(name, release, trials)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "release"), _cases())
def test_builtin_scenario_audit_stays_at_or_below_its_claim_at_1e5_trials(name, release):
    _check(name, release, SLOW_TRIALS)


def test_the_bcd_builtin_exceeds_its_claim_in_standard_dp_and_says_it_is_not_standard_dp():
    # DP-BCD's guarantee is the paper's locally sensitive DP (Definition 2), which the
    # result labels "not standard (epsilon, delta)-DP"; against a standard neighbour the
    # abort rule's bounded support pushes the audited bound over the claim (measured
    # 0.19 against 0.1 per step at 20,000 trials a side, seed 11). The day this stops
    # holding, the label and the finding of docs/explanation/audits.md must be revisited.
    from privsim.api import run

    scenario = builtin_scenario("bcd")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit(scenario, DEFAULT_FAST_TRIALS, seed=11)
        notion = run(scenario).privacy.notion
    assert result.lower_bound > result.claimed_epsilon
    assert "not standard" in notion and "Definition 2" in notion
