"""Write ``docs/reference/protocol-api.md``, the reference of what a protocol is written
against, from the code itself: ``ProtocolSpec``'s fields (each field's own
``metadata["doc"]``), the result builder and sections, messages, agents, the world, the
ledger's calls and :mod:`privsim.testing`, with ``inspect`` signatures and docstrings.

    python docs/gen_reference.py           # (re)write the page
    python docs/gen_reference.py --check   # exit 1 if the page is stale

tests/test_reference_page.py fails when the committed page differs from what this
writes, so the page cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ForwardRef

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "protocol-api.md"
COMMAND = "python docs/gen_reference.py"

sys.path.insert(0, str(Path(__file__).resolve().parent))  # page_io, beside this script
from page_io import finish, write_or_check  # noqa: E402

#: A whole protocol, shown on the page; tests/test_reference_page.py runs the contract
#: checks on it, so the page's example keeps working.
SKELETON = """\
import time
from dataclasses import dataclass

import dp_accounting
import numpy as np
from privsim.kit.budget import ledger_for
from privsim.kit.result import Abort, RunResult
from privsim.kit.spec import ProtocolSpec, clients_and
from privsim.kit.world import build_world
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.messages import Message, message
from privsim.sim.streams import Streams


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalMeanConfig:
    \"\"\"The scenario's [local_mean] table: how long the aggregator waits.\"\"\"

    timeout: float = 1.0


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Noisy(Message):
    \"\"\"Client -> aggregator: its value in [0, 1] plus its own Gaussian noise.\"\"\"

    value: float


def client(agent: Agent, x: float, sigma: float) -> Behaviour:
    agent.send("aggregator", Noisy(value=x + agent.rng("noise").normal(0.0, sigma)))
    yield from ()  # a client waits for nothing


def aggregator(agent: Agent, n: int, timeout: float) -> Behaviour:
    got = yield from agent.receive_all(Noisy, count=n, deadline=timeout)
    return [g.src for g in got], sum(g.message.value for g in got)


def sigma(scenario: Scenario) -> float:
    \"\"\"Each client's σ: the whole (ε, δ) at sensitivity 1 (one value in [0, 1]).\"\"\"
    return gaussian_sigma(scenario.privacy.epsilon, scenario.privacy.delta, 1.0)


def plan(scenario: Scenario) -> PrivacyLedger:
    \"\"\"The ledger as run charges it: one Gaussian release, trusting nobody.\"\"\"
    event = dp_accounting.GaussianDpEvent(sigma(scenario))  # noise multiplier σ/Δ, Δ = 1
    return ledger_for(scenario, {"local-noise": event})


def run(scenario: Scenario, seed: int) -> RunResult:
    started, ledger = time.perf_counter(), plan(scenario)
    cfg = scenario.table("local_mean", LocalMeanConfig)
    streams = Streams(seed)
    clients = [f"client-{i}" for i in range(scenario.population.clients)]
    x = streams.generator("data", "local-mean").random(len(clients))
    world = build_world(scenario, streams, [*clients, "aggregator"])
    for i, agent in enumerate(world.add_parties("client", clients)):
        world.start(agent, client(agent, float(x[i]), sigma(scenario)))
    out = world.add_party("aggregator", "aggregator")
    world.start(out, aggregator(out, len(clients), cfg.timeout))
    world.run()
    included, total = out.result or ([], 0.0)  # no result: the aggregator was absent
    abort, accuracy = None, None
    if included:
        error = total / len(included) - x[np.isin(clients, included)].mean()
        accuracy = {"abs_error": abs(error)}
    else:
        ledger.withhold("local-noise")  # nothing released: nothing spent
        abort = Abort(reason="no_contributions", detail="no client's value arrived")
    return RunResult.of_world(
        scenario, seed, world, ledger, included=included, abort=abort, accuracy=accuracy,
        privacy={"sigma": sigma(scenario)}, output_party="aggregator", started=started,
    )


PROTOCOL = ProtocolSpec(  # registered by the entry point local_mean = "my_package:PROTOCOL"
    name="local_mean",
    summary="each client adds its own Gaussian noise; one aggregator averages",
    tables={"local_mean": LocalMeanConfig},
    run=run,
    plan=plan,
    parties=clients_and({"aggregator": "aggregator"}),
    example={
        "name": "local-mean-example",
        "protocol": "local_mean",
        "population": {"clients": 20},
        "privacy": {"epsilon": 2.0, "delta": 1e-5},
        "network": {"encryption": "none"},
    },
)
"""


# -- from reStructuredText docstrings to Markdown -------------------------------------------
_ROLE = re.compile(r":(?:class|meth|func|data|mod|attr|exc|obj):`([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(1)
    shown = re.match(r"(.*?)\s*<(.+)>$", target)
    if shown:  # :func:`text <target>`
        return f"`{shown.group(1)}`"
    target = re.sub(r"\s+", "", target)  # a target may wrap onto the next line
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target}`"


def markdown(doc: str) -> str:
    """A cleaned docstring as Markdown: ``code`` as `code`, roles as their target's
    name, and ``::`` literal blocks fenced."""
    lines = _ROLE.sub(_role, inspect.cleandoc(doc)).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            text = line.rstrip()[:-2].rstrip()
            if text:
                out.append(_inline(text + ":"))
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            # "text": a docstring's example is shown, not run by the docs test
            # (tests/test_docs.py), which may lack what it names (a plug-in).
            out += ["", "```text", *inspect.cleandoc("\n".join(block)).splitlines(), "```", ""]
            continue
        out.append(_inline(line))
        i += 1
    return "\n".join(out).strip()


def _inline(text: str) -> str:
    text = _ROLE.sub(_role, text)
    return re.sub(r"``(.+?)``", r"`\1`", text)


def _one_line(doc: str) -> str:
    return " ".join(markdown(doc).split())


# -- signatures -------------------------------------------------------------------------------
def _annotation(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, ForwardRef):  # a NamedTuple's, under postponed annotations
        return annotation.__forward_arg__
    return inspect.formatannotation(annotation)


def _default(value: Any) -> str:
    if callable(value) and hasattr(value, "__name__"):
        return str(value.__name__)
    return repr(value)


def signature(name: str, obj: Callable[..., Any]) -> str:
    """``name(params) -> return`` with the annotations as written in the source (one
    parameter a line when it is long)."""
    sig = inspect.signature(obj)
    params: list[str] = []
    star = False
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        text = p.name
        if p.kind is p.VAR_POSITIONAL:
            text, star = f"*{p.name}", True
        elif p.kind is p.VAR_KEYWORD:
            text = f"**{p.name}"
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += (
                f" = {_default(p.default)}"
                if p.annotation is not p.empty
                else f"={_default(p.default)}"
            )
        params.append(text)
    returns = ""
    if sig.return_annotation is not sig.empty and not isinstance(obj, type):
        returns = f" -> {_annotation(sig.return_annotation)}"
    one = f"{name}({', '.join(params)}){returns}"
    if len(one) <= 88:
        return one
    return f"{name}(\n" + "".join(f"    {p},\n" for p in params) + f"){returns}"


# -- page sections ----------------------------------------------------------------------------
#: Before a signature's block: the docs test (tests/test_docs.py) runs every Python block,
#: and a signature is not a statement.
SIGNATURE = "<!-- docs-test: skip a signature, not a statement -->"


def _code(text: str, *, runs: bool = False) -> list[str]:
    """A Python block: a signature (skipped by the docs test) or, with ``runs``, code."""
    return [*(() if runs else (SIGNATURE,)), "```python", text, "```"]


def function(title: str, obj: Callable[..., Any], *, level: str = "###") -> list[str]:
    """A function or method: its signature and docstring."""
    doc = inspect.getdoc(obj)
    return [
        f"{level} `{title}`",
        "",
        *_code(signature(title, obj)),
        "",
        *([markdown(doc), ""] if doc else []),
    ]


def _field_default(f: dataclasses.Field[Any]) -> str:
    from privsim.version import __version__

    if f.default == __version__ and isinstance(f.default, str):  # not the release's number
        return "`privsim.version.__version__`"
    if f.default is not dataclasses.MISSING:
        return f"`{_default(f.default)}`"
    if f.default_factory is not dataclasses.MISSING:
        return f"`{_default(f.default_factory)}()`"
    return "required"


def fields(cls: type) -> list[str]:
    """Each dataclass field: name, type, default (and its own documentation if any)."""
    out = []
    for f in dataclasses.fields(cls):
        doc = f.metadata.get("doc")
        head = f"- `{f.name}`: `{_annotation(f.type)}`, {_field_default(f)}"
        out.append(f"{head}.{' ' + _one_line(doc) if doc else ''}")
    return out


def dataclass_section(cls: type, *, level: str = "###") -> list[str]:
    """A dataclass: its docstring and its fields."""
    doc = inspect.getdoc(cls) or ""
    return [f"{level} `{cls.__name__}`", "", markdown(doc), "", *fields(cls), ""]


def class_section(
    cls: type, methods: Iterable[str], *, level: str = "###", constructor: bool = False
) -> list[str]:
    """A class: its docstring, its constructor (if asked) and the named methods."""
    doc = inspect.getdoc(cls) or ""
    out = [f"{level} `{cls.__name__}`", "", markdown(doc), ""]
    if constructor:
        out += [*_code(signature(cls.__name__, cls)), ""]
    for name in methods:
        attr = inspect.getattr_static(cls, name)
        if isinstance(attr, property):
            doc = inspect.getdoc(attr) or ""
            out += [f"- `{cls.__name__}.{name}` (property){': ' + _one_line(doc) if doc else ''}"]
            continue
        out += function(f"{cls.__name__}.{name}", getattr(cls, name), level=level + "#")
    if out[-1] != "":
        out.append("")
    return out


def module_doc(module: Any) -> list[str]:
    return [markdown(inspect.getdoc(module) or ""), ""]


def render() -> str:
    """The page's Markdown."""
    from privsim import testing
    from privsim.kit import budget, spec
    from privsim.kit import world as kit_world
    from privsim.kit.result import (
        Abort,
        Coalition,
        Communication,
        MethodResult,
        Parties,
        Privacy,
        RunResult,
        Timing,
    )
    from privsim.scenarios import errors, schema
    from privsim.sim import agent, calibration, ledger, messages, streams
    from privsim.sim import world as sim_world

    page = [
        "# Protocol API reference",
        "",
        f"<!-- Generated by `{COMMAND}` from privsim's docstrings and signatures; do not",
        "edit: tests/test_reference_page.py fails when this page differs from the code. -->",
        "",
        "What a protocol is written against: the spec it registers, the builder of its "
        "result and the result's sections, its messages, agents and world, the ledger it "
        "charges, and the contract checks it must pass. A protocol's shape, in order: "
        "pure functions for the maths; one behaviour (a generator) per role that sends "
        "and receives messages; a `plan(scenario)` that charges the ledger; a "
        "`run(scenario, seed)` that builds the world, starts the behaviours, runs, and "
        "returns `RunResult.of_world(...)`; and a `ProtocolSpec` exported through the "
        "`privsim.protocols` entry-point group. Check it with "
        "`privsim check-protocol NAME`.",
        "",
        "A whole protocol (a local-noise mean that passes `privsim check-protocol`), to be "
        "registered in a package's `pyproject.toml`:",
        "",
        "```toml",
        '[project.entry-points."privsim.protocols"]',
        'local_mean = "my_package:PROTOCOL"',
        "```",
        "",
        *_code(SKELETON.rstrip(), runs=True),
        "",
        "Contents: [ProtocolSpec](#protocolspec) · [Spec helpers](#spec-helpers) · "
        "[Results](#results) · "
        "[Scenarios, randomness and calibration](#scenarios-randomness-and-calibration) · "
        "[Messages](#messages) · [Agents](#agents) · "
        "[The world](#the-world) · [The ledger](#the-ledger) · "
        "[Contract checks](#contract-checks-privsimtesting)",
        "",
        "## ProtocolSpec",
        "",
        "`from privsim.kit.spec import ProtocolSpec`",
        "",
        markdown((inspect.getdoc(spec.ProtocolSpec) or "").split("\n\n- ``")[0]),
        "",
        "Fields (keyword-only; type, default, meaning):",
        "",
        *fields(spec.ProtocolSpec),
        "",
        "## Spec helpers",
        "",
        "`from privsim.kit.spec import ...`",
        "",
        *function("clients_and", spec.clients_and),
        *function("party_footprint", spec.party_footprint),
        *function("detail_columns", spec.detail_columns),
        *function("accuracy_lines", spec.accuracy_lines),
        *class_section(spec.Numbered, (), constructor=True),
        *dataclass_section(spec.StudyView),
        f"### `Footprint`\n\n{markdown(inspect.getdoc(spec.Footprint) or '')}\n",
        *_code(signature("Footprint", spec.Footprint)),
        "",
        f"`PARTY_BYTES = {spec.PARTY_BYTES}`: memory per simulated party, for footprints.",
        "",
        "## Results",
        "",
        "`from privsim.kit.result import RunResult, Abort, ...`",
        "",
        *function("RunResult.of_world", RunResult.of_world),
        *dataclass_section(RunResult),
        *dataclass_section(Privacy),
        *dataclass_section(Communication),
        *dataclass_section(Parties),
        *dataclass_section(Coalition),
        *dataclass_section(Timing),
        *dataclass_section(Abort),
        *dataclass_section(MethodResult),
        "## Scenarios, randomness and calibration",
        "",
        "`from privsim.scenarios.schema import Scenario`; "
        "`from privsim.sim.streams import Streams`; "
        "`from privsim.sim.calibration import gaussian_sigma`; "
        "`from privsim.scenarios.errors import FieldError, require_positive, require_at_least`",
        "",
        *dataclass_section(schema.Scenario),
        *function("Scenario.table", schema.Scenario.table),
        *function("Scenario.replace", schema.Scenario.replace),
        *dataclass_section(schema.PopulationConfig),
        *dataclass_section(schema.PrivacyConfig),
        *class_section(streams.Streams, ("generator", "fresh"), constructor=True),
        *function("gaussian_sigma", calibration.gaussian_sigma),
        *class_section(errors.FieldError, (), constructor=True),
        *function("require_positive", errors.require_positive),
        *function("require_at_least", errors.require_at_least),
        "## Messages",
        "",
        "`from privsim.sim.messages import Message, message`",
        "",
        *module_doc(messages),
        *class_section(messages.Message, ()),
        *function("message", messages.message),
        *function("wire_size", messages.wire_size),
        "## Agents",
        "",
        "`from privsim.sim.agent import Agent, Behaviour`",
        "",
        *module_doc(agent),
        *class_section(
            agent.Agent,
            ("send", "receive", "receive_all", "receive_batch", "rng", "remember", "now"),
        ),
        *dataclass_section(agent.Delivery),
        "## The world",
        "",
        "`from privsim.kit.world import build_world`",
        "",
        *function("build_world", kit_world.build_world),
        *class_section(
            sim_world.World,
            ("add_parties", "add_party", "start", "run", "results", "coalition_view"),
        ),
        "## The ledger",
        "",
        "`from privsim.kit.budget import ledger_for`; "
        "`from privsim.sim.ledger import PrivacyLedger, Trust, NoiseShares`",
        "",
        *function("ledger_for", budget.ledger_for),
        *class_section(
            ledger.PrivacyLedger,
            ("charge", "checked_together", "settle", "withhold", "non_private", "guarantee"),
            constructor=True,
        ),
        *class_section(ledger.Trust, ("nobody", "each", "one_of", "fewer_than")),
        *dataclass_section(ledger.NoiseShares),
        *class_section(ledger.BudgetExceededError, ()),
        "## Contract checks (privsim.testing)",
        "",
        *module_doc(testing),
        *function("check_protocol", testing.check_protocol),
        *function("protocol_checks", testing.protocol_checks),
        *function("parametrize_with_checks", testing.parametrize_with_checks),
        *function("registered", testing.registered),
        *class_section(testing.Check, ("result",)),
        *dataclass_section(testing.CheckResult),
        *class_section(testing.CheckSkipped, ()),
        "### The checks",
        "",
        "In the order they run; each runs the spec's `example`.",
        "",
        *(f"- `{c.name}`: {_one_line(c.doc)}" for c in testing.CHECKS),
        "",
    ]
    return finish(page)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(PAGE, render(), COMMAND, argv)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # the privsim of this checkout, not another installed one
    raise SystemExit(main())
