"""The protocol API reference (docs/reference/protocol-api.md) is generated from the code
by docs/gen_reference.py: the committed page must be what the generator writes today,
every ProtocolSpec field must carry its own documentation, and the page's example
protocol must keep the contract."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from privsim.kit.spec import ProtocolSpec
from privsim.testing import check_protocol

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "docs" / "gen_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_what_the_generator_writes(generator):
    page = ROOT / "docs" / "reference" / "protocol-api.md"
    assert page.is_file(), (
        "docs/reference/protocol-api.md is missing: run python docs/gen_reference.py"
    )
    if page.read_text(encoding="utf-8") != generator.render():
        pytest.fail("docs/reference/protocol-api.md is stale: run python docs/gen_reference.py")


@pytest.mark.parametrize("field", dataclasses.fields(ProtocolSpec), ids=lambda f: f.name)
def test_every_protocol_spec_field_is_documented(field):
    doc = field.metadata.get("doc", "")
    assert len(doc.split()) >= 5, (
        f"ProtocolSpec.{field.name} has no documentation: give it "
        'field(..., metadata=_doc("what it is, its default and who reads it"))'
    )


def test_the_page_covers_every_protocol_spec_field_and_the_kit(generator):
    page = generator.render()
    for f in dataclasses.fields(ProtocolSpec):
        assert f"- `{f.name}`: " in page, f.name
    for name in (
        "RunResult.of_world",
        "Agent.receive_all",
        "World.add_parties",
        "PrivacyLedger.charge",
        "PrivacyLedger.settle",
        "PrivacyLedger.withhold",
        "Trust.fewer_than",
        "ledger_for",
        "build_world",
        "check_protocol",
        "parametrize_with_checks",
    ):
        assert f"### `{name}`" in page or f"#### `{name}`" in page, name


def test_the_pages_example_protocol_keeps_the_contract(generator, monkeypatch):
    module = ModuleType("local_mean_example")  # as if imported from a plug-in package
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(generator.SKELETON, "protocol-api.md", "exec", dont_inherit=True), vars(module))
    results = check_protocol(module.PROTOCOL)  # registered for each check only
    assert all(r.ok for r in results), [str(r) for r in results if not r.ok]
    assert sum(r.status == "pass" for r in results) >= 9


def test_the_generator_checks_the_page_from_the_command_line(generator):
    assert generator.main(["--check"]) == 0
