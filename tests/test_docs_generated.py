"""The generated reference pages cannot drift from the code: each is regenerated in memory
and compared with the committed page (run ``python docs/gen_pages.py`` to rewrite them),
every scenario field carries its meaning, and the hand-written reference pages name what
the code declares (exit statuses, environment variables, result sections, exposure keys).

docs/reference/protocol-api.md is checked the same way by tests/test_reference_page.py.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FIX = "run python docs/gen_pages.py"


def _generator(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclass and typing introspection look modules up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def schema() -> ModuleType:
    return _generator("gen_schema")


@pytest.fixture(scope="module")
def cli() -> ModuleType:
    return _generator("gen_cli")


@pytest.mark.parametrize("name", ["gen_schema", "gen_cli"])
def test_the_committed_page_is_what_its_generator_writes(name):
    generator = _generator(name)
    page = generator.PAGE
    where = page.relative_to(ROOT)
    assert page.is_file(), f"{where} is missing: {FIX}"
    if page.read_text(encoding="utf-8") != generator.render():
        pytest.fail(f"{where} is stale: {FIX} (or python docs/{name}.py)")


def _config_classes() -> list[type]:
    from privsim.scenarios.convert import LATENCY_MODELS
    from privsim.scenarios.schema import (
        NetworkConfig,
        PopulationConfig,
        PrivacyConfig,
        ScenarioFields,
        ThreatConfig,
    )
    from privsim.sim.faults import FaultSpec
    from privsim.sim.network import LinkOverride, LinkSpec

    schema = _generator("gen_schema")
    tables = [cls for cls, _ in schema.builtin_tables().values()]
    common = [ScenarioFields, PopulationConfig, PrivacyConfig, ThreatConfig, NetworkConfig]
    return [*common, FaultSpec, LinkSpec, LinkOverride, *LATENCY_MODELS.values(), *tables]


@pytest.mark.parametrize("cls", _config_classes(), ids=lambda c: c.__name__)
def test_every_scenario_field_says_what_it_means(cls, schema):
    docs = schema.attribute_docs(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        doc = docs.get(f.name, "")
        assert len(doc.split()) >= 3, (
            f"{cls.__module__}.{cls.__qualname__}.{f.name} has no meaning on the scenario "
            'schema page: write a """docstring""" line under the field, then ' + FIX
        )


def test_the_schema_page_lists_every_builtin_table(schema):
    page = schema.render()
    for name in ("population", "privacy", "threat", "faults", "network", *schema.builtin_tables()):
        assert f"[{name}]" in page, name


def test_the_cli_page_has_every_command(cli):
    from privsim.cli import build_parser

    page = cli.render()
    parser = build_parser()
    commands = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    for name in commands.choices:
        assert f"## privsim {name}\n" in page, name


def test_every_environment_variable_privsim_reads_is_listed(cli):
    read = set()
    for path in (ROOT / "privsim").rglob("*.py"):
        read |= set(re.findall(r"\bPRIVSIM_[A-Z_]+\b", path.read_text(encoding="utf-8")))
    listed = {name for name, _ in cli.ENVIRONMENT}
    assert read <= listed, f"not on docs/reference/cli.md: {sorted(read - listed)} ({FIX})"


def test_the_exit_codes_page_lists_every_status():
    from privsim.cli import EXIT_CODES

    page = (DOCS / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    statuses = re.findall(r"^\s+(\d+)\s", EXIT_CODES, flags=re.M)
    assert statuses
    for status in statuses:
        assert re.search(rf"^\| {status} \|", page, flags=re.M), status


def test_the_result_fields_page_names_every_result_section():
    from privsim.kit.result import Privacy, RunResult

    page = (DOCS / "reference" / "result-fields.md").read_text(encoding="utf-8")
    names = {f.name for f in dataclasses.fields(RunResult)} - {"details"}
    names |= {f.name for f in dataclasses.fields(Privacy)}
    missing = sorted(n for n in names if f"`{n}`" not in page)
    assert not missing, f"docs/reference/result-fields.md does not describe {missing}"


def test_the_threat_models_page_explains_every_exposure_key():
    from privsim import registry

    page = (DOCS / "explanation" / "threat-models.md").read_text(encoding="utf-8")
    missing = sorted(
        f"{name}.{key}"
        for name, spec in registry.specs().items()
        if spec.run.__module__.startswith("privsim.")
        for key in dict(spec.exposure)
        if f"`{key}`" not in page
    )
    assert not missing, f"docs/explanation/threat-models.md does not explain {missing}"
