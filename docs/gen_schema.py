"""Write ``docs/reference/scenario-schema.md``, every field of a scenario file with its
type, default and meaning, from the config dataclasses themselves: the common tables
(:mod:`privsim.scenarios.schema`, the engine's fault, link and latency classes) and every
built-in protocol's table. A field's meaning is its attribute docstring (the string
literal under the field), so the page cannot drift from the code.

    python docs/gen_schema.py           # (re)write the page
    python docs/gen_schema.py --check   # exit 1 if the page is stale

``python docs/gen_pages.py`` writes every generated page; tests/test_docs_generated.py
fails when a committed page differs from what its generator writes, or a field has no
docstring.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "scenario-schema.md"
COMMAND = "python docs/gen_schema.py"

sys.path.insert(0, str(Path(__file__).resolve().parent))  # page_io, beside this script
from page_io import finish, write_or_check  # noqa: E402

INTRO = """\
A scenario is one TOML file: a few top-level keys, the common tables every protocol
reads (`[population]`, `[privacy]`, `[threat]`, `[faults]`, `[network]`) and the tables
of its protocol (`[dca]`, `[blr]`, …, or a plug-in's own). `privsim scenario NAME`
prints a built-in scenario with comments, to copy and edit; `privsim validate FILE`
checks one and names the field and the fix of the first problem.

The quickstart is `privsim/scenarios/quickstart.toml`. Copy it, edit it, run it:

```bash
privsim scenario quickstart > my.toml     # the built-in scenario, commented
privsim validate my.toml                  # check it (errors name the field and the fix)
privsim run my.toml --seed 7 --out results/
privsim run my.toml --encryption none     # same accuracy and privacy, faster (no ciphertext overhead on the wire)
privsim run my.toml --set privacy.epsilon=2 --set dca.tolerated=300   # change fields
```

`privsim scenario bcd` prints the vertical-partitioning scenario (`[bcd]`: method, data
set or CSV with column blocks per party, k, T, γ, stopping rule); `privsim scenario blr`
prints the regression scenario (its `[blr]` table: data set or your own CSV with
`features` and `target`, methods, budget share, bounds, threshold grid). The common
tables: `population` (N clients, M compute nodes), `privacy` (ε, δ, neighbour relation,
`calibration = "exact"` or `"classic"`, `on_overspend`), `threat` (colluding clients
and servers), `faults` and `network` (default link, per-role and per-party overrides,
topology, encryption). The tables of the protocols: `data` (DCA's synthetic vectors),
`dca` (T, fixed-point bits, timeouts, `on_excess_dropout = "abort"` or `"release"`; read
by every protocol that sums through DCA), `blr`, `bcd`, `race`, `secagg`,
`summarization`, or a plug-in's own.

`--set PATH=VALUE` (on `run`, `validate`, `check` and `sweep`, repeatable) sets a dotted
field to a TOML value: `--set network.link.latency.median=0.2`,
`--set 'faults.crash_window=[0, 0.1]'`,
`--set 'network.link.latency={ model = "constant", value = 0.01 }'`; a bare word is a
string (`--set network.encryption=none`). An unknown field, a path through a value
(`privacy.epsilon.x`), a wrong value or a value holding a second assignment is an error
naming the option, the field and the fix. A list in a scenario holds at most 10⁴ entries
(colluding ids, absent parties, features: write a large coalition as a count;
`--allow-large` goes past it).

The result file of `privsim run` is `NAME-HASH-seedSEED.json`, HASH a short hash of the
effective scenario (after `--set`, its default seed aside), so an edited copy of a
built-in scenario, or a `--set`, never overwrites another scenario's result.

Each table below lists its fields: the TOML type, the default ("required" when there is
none; "unset" when leaving the field out means a documented fallback) and the meaning.
A protocol's table is read only when the scenario's `protocol` reads it; another
protocol's table in the same file is checked and otherwise inert."""


# -- reading the classes ---------------------------------------------------------------


def attribute_docs(cls: type) -> dict[str, str]:
    """Each field's attribute docstring (the string literal right under it), for ``cls``
    and the dataclasses it inherits from."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass) or klass is object:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        body = tree.body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def init_fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.init]


def markdown(text: str) -> str:
    """A docstring's reST as Markdown: ``x`` and :role:`x` become `x`."""
    text = re.sub(r":[a-z]+:`~?\.?([^`]+)`", r"`\1`", text)
    return re.sub(r"``(.+?)``", r"`\1`", text, flags=re.S)


def cell(text: str) -> str:
    return " ".join(markdown(text).split()).replace("|", "\\|")


# -- types and defaults ----------------------------------------------------------------

_SCALARS = {bool: "boolean", int: "integer", float: "float", str: "string"}


def type_name(hint: Any) -> str:
    """A field's annotation as a TOML type."""
    if hint in _SCALARS:
        return _SCALARS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return " or ".join(f'`"{a}"`' for a in args)
    if origin in (types.UnionType, typing.Union):
        kept = [a for a in args if a is not type(None)]
        return " or ".join(type_name(a) for a in kept)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            inner = type_name(args[0])
            return f"list of ({inner})" if " " in inner else f"list of {inner}"
        return "[" + ", ".join(type_name(a) for a in args) + "]"
    if isinstance(hint, type) and typing.Protocol in getattr(hint, "__mro__", ()):
        return "latency table"  # LatencyModel, the only protocol type in a scenario
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return "table"
    if typing.get_origin(hint) is typing.Union or hint is Any:
        return "any"
    return str(hint)


def toml_value(value: Any) -> str:
    """A default as an inline TOML value."""
    from privsim.scenarios.convert import to_plain

    value = to_plain(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return repr(value)


def default_text(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if value is None:
        return "unset"
    return f"`{toml_value(value)}`"


# -- the page --------------------------------------------------------------------------


def field_table(cls: type, skip: tuple[str, ...] = ()) -> list[str]:
    hints = typing.get_type_hints(cls)
    docs = attribute_docs(cls)
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for f in init_fields(cls):
        if f.name in skip:
            continue
        doc = docs.get(f.name, "")
        if not doc:
            raise SystemExit(
                f"{cls.__module__}.{cls.__qualname__}.{f.name} has no docstring: add a "
                '"""meaning""" line under the field'
            )
        rows.append(
            f"| `{f.name}` | {cell(type_name(hints[f.name]))} | {cell(default_text(f))} "
            f"| {cell(doc)} |"
        )
    return [*rows, ""]


def class_doc(cls: type) -> list[str]:
    doc = inspect.getdoc(cls) or ""
    return [markdown(doc), ""] if doc else []


def builtin_tables() -> dict[str, tuple[type, list[str]]]:
    """Each built-in protocol table: its class and the protocols that read it."""
    from privsim import registry

    found: dict[str, tuple[type, list[str]]] = {}
    for spec in registry.specs().values():
        for name, cls in dict(spec.tables).items():
            if not cls.__module__.startswith("privsim."):
                continue  # a plug-in's table (installed for tests) is not privsim's
            found.setdefault(name, (cls, []))[1].append(spec.name)
    specs = registry.specs()
    return {
        name: (cls, sorted(p for p in readers if specs[p].run.__module__.startswith("privsim.")))
        for name, (cls, readers) in sorted(found.items())
    }


def render() -> str:
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

    tables = ("population", "privacy", "network", "faults", "threat")
    page = [
        "# Scenario schema",
        "",
        f"<!-- Generated by {COMMAND} from the config dataclasses; do not edit. -->",
        "",
        INTRO,
        "",
        "## Top level",
        "",
        *field_table(ScenarioFields, skip=tables),
        "## [population]",
        "",
        *class_doc(PopulationConfig),
        *field_table(PopulationConfig),
        "## [privacy]",
        "",
        *class_doc(PrivacyConfig),
        *field_table(PrivacyConfig),
        "## [threat]",
        "",
        *class_doc(ThreatConfig),
        *field_table(ThreatConfig),
        "## [faults]",
        "",
        *class_doc(FaultSpec),
        *field_table(FaultSpec),
        "## [network]",
        "",
        *class_doc(NetworkConfig),
        *field_table(NetworkConfig),
        "### [network.link]",
        "",
        *class_doc(LinkSpec),
        *field_table(LinkSpec),
        "### [[network.overrides]]",
        "",
        *class_doc(LinkOverride),
        *field_table(LinkOverride),
        "### Latency models",
        "",
        "A `latency` value is an inline table whose `model` key picks the model, e.g. "
        '`latency = { model = "lognormal", median = 0.05, sigma = 0.5 }`.',
        "",
    ]
    for name, cls in LATENCY_MODELS.items():
        page += [f'#### model = "{name}"', "", *class_doc(cls), *field_table(cls)]
    page += [
        "## Protocol tables",
        "",
        "Each built-in protocol reads the tables below (`privsim protocols` lists the "
        "protocols; a plug-in documents its own table).",
        "",
    ]
    for name, (cls, readers) in builtin_tables().items():
        who = ", ".join(f"`{r}`" for r in readers)
        page += [
            f"### [{name}]",
            "",
            f"Read by {who}. Class `{cls.__module__}.{cls.__qualname__}`.",
            "",
            *class_doc(cls),
            *field_table(cls),
        ]
    return finish(page)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(PAGE, render(), COMMAND, argv)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # the privsim of this checkout, not another installed one
    raise SystemExit(main())
