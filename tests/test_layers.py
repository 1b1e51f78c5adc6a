"""The package's layering, checked from the import graph (every ``import`` in every
module, function-local ones included; ``if TYPE_CHECKING:`` blocks excluded, since they
never run)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "privsim"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a.b import c`: the submodule a.b.c if there is one, else a.b
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                for a in node.names
            ]
        else:
            continue
        for name in names:
            if not name.startswith("privsim"):
                continue
            # the longest prefix that is a module of the package
            parts = name.split(".")
            while parts and ".".join(parts) not in MODULES:
                parts.pop()
            if parts:
                found.add(".".join(parts))
    return found


GRAPH = nx.DiGraph()
for _name, _path in MODULES.items():
    GRAPH.add_node(_name)
    for _target in _imports(_path):
        if _target != _name:
            GRAPH.add_edge(_name, _target)


def _in(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def test_there_is_no_import_cycle():
    cycles = [sorted(c) for c in nx.strongly_connected_components(GRAPH) if len(c) > 1]
    assert cycles == []


FORBIDDEN = {
    "privsim.sim": (
        "privsim.protocols",
        "privsim.analysis",
        "privsim.studies",
        "privsim.kit",
        "privsim.scenarios",
        "privsim.registry",
        "privsim.api",
        "privsim.cli",
    ),
    "privsim.scenarios": (
        "privsim.protocols",
        "privsim.analysis",
        "privsim.studies",
        "privsim.kit",
        "privsim.api",
        "privsim.cli",
    ),
    "privsim.kit": (
        "privsim.protocols",
        "privsim.analysis",
        "privsim.studies",
        "privsim.registry",
        "privsim.api",
        "privsim.cli",
    ),
    "privsim.protocols": (
        "privsim.analysis",
        "privsim.studies",
        "privsim.registry",
        "privsim.api",
        "privsim.cli",
    ),
    "privsim.analysis": ("privsim.studies", "privsim.api", "privsim.cli"),
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layers_import_only_downwards(layer):
    bad = [
        (src, dst)
        for src, dst in GRAPH.edges
        if _in(src, layer) and any(_in(dst, forbidden) for forbidden in FORBIDDEN[layer])
    ]
    assert bad == []


def test_a_protocol_imports_no_other_protocol():
    def folder(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "protocols" else None

    bad = [
        (src, dst)
        for src, dst in GRAPH.edges
        if folder(src) and folder(dst) and folder(src) != folder(dst)
    ]
    assert bad == []


def test_the_shared_code_names_no_protocol():
    """Runner, loader, schema, report, study worker, summaries, figures and CLI look
    protocols up in the registry; none imports a protocol's folder."""
    shared = [m for m in MODULES if not _in(m, "privsim.protocols")]
    bad = [(m, d) for m in shared for d in GRAPH.successors(m) if _in(d, "privsim.protocols")]
    assert bad == []


def test_the_graph_is_not_empty():
    # guards the checks above against a parser that finds nothing
    assert GRAPH.number_of_edges() > 100
    assert ("privsim.scenarios.schema", "privsim.registry") in GRAPH.edges
