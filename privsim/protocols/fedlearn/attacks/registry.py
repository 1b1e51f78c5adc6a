"""``threat.attack`` and ``threat.poisoning`` by name: the module that builds each attack
(``build(ctx) -> TrainingAttack``), its checks of a scenario (``check_attack``), and the
run's target, drawn from the run's streams among the honest clients unless named."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from privsim.protocols.fedlearn.attacks import AttackContext, TrainingAttack
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.streams import Streams

__all__ = ["ATTACK_MODULES", "build_attack", "build_poisoner", "check_threats", "target_of"]

#: The module of each ``threat.attack``.
ATTACK_MODULES = {
    "reconstruction": "privsim.protocols.fedlearn.attacks.reconstruction",
    "membership": "privsim.protocols.fedlearn.attacks.membership",
    "dropout_isolation": "privsim.protocols.fedlearn.attacks.isolation",
    "model_inconsistency": "privsim.protocols.fedlearn.attacks.inconsistency",
}

POISONING_MODULE = "privsim.protocols.fedlearn.attacks.poisoning"


def _module(name: str) -> ModuleType:
    return importlib.import_module(ATTACK_MODULES[name])


def _client_index(target: str, n: int) -> int | None:
    head, _, number = target.partition("-")
    if head != "client" or not number.isdecimal() or str(int(number)) != number:
        return None
    i = int(number)
    return i if i < n else None


def check_threats(scenario: Scenario) -> None:
    """The attack's own needs (each module's ``check_attack``), and a ``threat.target``
    that is one of the population's clients outside the named coalition."""
    threat, n = scenario.threat, scenario.population.clients
    if threat.target is not None:
        if threat.attack is None:
            raise FieldError(
                "threat.target",
                "a target without an attack",
                'set threat.attack (e.g. "dropout_isolation") or leave threat.target out',
            )
        if _client_index(threat.target, n) is None:
            raise FieldError(
                "threat.target",
                f"{threat.target!r} is not a client of this population",
                f'name one of "client-0" … "client-{n - 1}"',
            )
        named = threat.colluding_clients
        if not isinstance(named, int) and threat.target in named:
            raise FieldError(
                "threat.target",
                f"{threat.target!r} is in threat.colluding_clients: the target is an honest client",
                "name a client outside the coalition",
            )
    if threat.attack is not None:
        check = getattr(_module(threat.attack), "check_attack", None)
        if check is not None:
            check(scenario)


def target_of(scenario: Scenario, streams: Streams, coalition: frozenset[str]) -> str:
    """``threat.target``, or an honest client drawn from the run's ``("threat", "target")``
    stream."""
    if scenario.threat.target is not None:
        if scenario.threat.target in coalition:  # drawn by a count of colluding clients
            raise FieldError(
                "threat.target",
                f"{scenario.threat.target} is in this run's coalition, drawn at random by "
                f"threat.colluding_clients = {scenario.threat.colluding_clients!r}",
                "name another client, or leave threat.target out (an honest client is drawn)",
            )
        return scenario.threat.target
    n = scenario.population.clients
    honest = [i for i in range(n) if f"client-{i}" not in coalition]
    if not honest:
        raise FieldError(
            "threat.colluding_clients",
            "every client colludes: there is no honest client to target",
            "leave at least one client outside the coalition",
        )
    rng = streams.fresh("threat", "target")
    return f"client-{honest[int(rng.integers(len(honest)))]}"


def build_attack(ctx: AttackContext) -> TrainingAttack | None:
    """The run's ``threat.attack`` (None without one)."""
    name = ctx.scenario.threat.attack
    if name is None:
        return None
    attack: TrainingAttack = _module(name).build(ctx)
    return attack


def build_poisoner(ctx: AttackContext) -> Any:
    """The run's malicious clients (``threat.poisoning``; None without)."""
    if ctx.scenario.threat.poisoning is None:
        return None
    return importlib.import_module(POISONING_MODULE).build(ctx)
