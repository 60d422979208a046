"""The import graph of luisa_nb, read from its source: no cycles, and data flows one way
through the layers of docs/architecture.md §1.

An edge ``a -> b`` is an ``import`` or ``from ... import`` in ``a`` that loads module ``b``
(``from package import name`` loads ``package.name`` when that is a module, else
``package``), wherever it stands: imports inside functions count, since they make the
same dependency, only later. Imports under ``if TYPE_CHECKING:`` do not, since they never
run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOT = ROOT / "luisa_nb"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def module_paths() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement below ``node``, leaving out ``if TYPE_CHECKING:`` bodies
    (their ``else`` branches still run)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif is_type_checking_block(child):
            for statement in child.orelse:
                yield from import_nodes(ast.Module(body=[statement], type_ignores=[]))
        else:
            yield from import_nodes(child)


def imported_modules(name: str, path: Path) -> set[str]:
    """The luisa_nb modules that module ``name`` (at ``path``) imports."""
    modules = module_paths()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        found.update(target for target in targets if target in modules and target != name)
    return found


@cache
def import_graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(imported_modules(name, path)) for name, path in module_paths().items()}


def strongly_connected_components(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; each component sorted, components in name order."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = lowest[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = lowest[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    lowest[node] = min(lowest[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    lowest[parent] = min(lowest[parent], lowest[node])
                if lowest[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return sorted(components)


def describe_cycle(component: list[str], graph: dict[str, frozenset[str]]) -> str:
    members = set(component)
    edges = [
        f"    {source} -> {target}"
        for source in component
        for target in sorted(graph[source] & members)
    ]
    return f"  {len(component)} modules:\n" + "\n".join(edges)


def test_the_graph_sees_imports_inside_functions_and_skips_type_checking_ones():
    graph = import_graph()
    assert "luisa_nb.widgets" in graph["luisa_nb"]  # inside show()
    assert "luisa_nb.analysis" in graph["luisa_nb.report"]  # inside _as_trace()
    assert "luisa_nb.recording.file_paths" in graph["luisa_nb.report"]
    assert "luisa_nb.errors" not in graph["luisa_nb.errors"]


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    graph = {
        "a": frozenset({"b"}),
        "b": frozenset({"c"}),
        "c": frozenset({"a", "d"}),
        "d": frozenset(),
    }
    assert strongly_connected_components(graph) == [["a", "b", "c"], ["d"]]


def test_no_import_cycles():
    graph = import_graph()
    cycles = [c for c in strongly_connected_components(graph) if len(c) > 1]
    message = "\n".join(describe_cycle(component, graph) for component in cycles)
    assert cycles == [], f"{len(cycles)} import cycle(s):\n{message}"


LAYERS = {
    "luisa_nb.runtime": ("luisa_nb.analysis", "luisa_nb.widgets"),
    "luisa_nb.backends": ("luisa_nb.analysis", "luisa_nb.widgets"),
    "luisa_nb.recording": (
        "luisa_nb.runtime",
        "luisa_nb.backends",
        "luisa_nb.analysis",
        "luisa_nb.widgets",
    ),
    "luisa_nb.analysis": ("luisa_nb.runtime", "luisa_nb.backends", "luisa_nb.widgets"),
    "luisa_nb.widgets": ("luisa_nb.runtime", "luisa_nb.backends"),
}
"""For each layer, the packages its modules never import: data flows from the runtime
down to the views, and a view reads a trace with no device."""


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_layer_imports_no_later_layer(layer):
    wrong = sorted(
        f"{source} -> {target}"
        for source, targets in import_graph().items()
        if within(source, layer)
        for target in targets
        if any(within(target, forbidden) for forbidden in LAYERS[layer])
    )
    assert wrong == [], f"{layer} imports what it must not:\n" + "\n".join(wrong)


def test_every_section_reference_in_the_code_points_into_the_architecture_map():
    sections = set(re.findall(r"^## (\d+)\. ", ARCHITECTURE.read_text(encoding="utf-8"), re.M))
    assert sections == {str(number) for number in range(1, len(sections) + 1)}
    wrong = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"([\w./-]*)\s*§\s*(\d+)", text):
            if match[1] != "docs/architecture.md" or match[2] not in sections:
                wrong.append(f"{path.relative_to(ROOT)}: {match[0]!r}")
    assert wrong == [], "section references that are not docs/architecture.md §N:\n" + "\n".join(
        wrong
    )
