"""The orchestrator's core/ imports in one direction: no module reaches itself through others.

The graph is read from the sources (every ``from orchestrator.core...`` import, those under
``TYPE_CHECKING`` too), so a circle fails here before it fails at import time.
"""

import ast
from pathlib import Path

import orchestrator.core

CORE = Path(orchestrator.core.__file__).parent


def core_imports() -> dict[str, set[str]]:
    """Each core module and the core modules it imports."""
    graph: dict[str, set[str]] = {}
    for source in CORE.glob("*.py"):
        imported: set[str] = set()
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "orchestrator.core":
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "orchestrator.core."
            ):
                imported.add(node.module.split(".")[2])  # type: ignore[union-attr]
            elif isinstance(node, ast.Import):
                imported.update(
                    alias.name.split(".")[2]
                    for alias in node.names
                    if alias.name.startswith("orchestrator.core.")
                )
        graph[source.stem] = imported
    return graph


def a_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (its modules in order, the first again at the end), or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for imported in sorted(graph.get(module, ())):
            found = visit(imported, [*path, module])
            if found is not None:
                return found
        done.add(module)
        return None

    for module in sorted(graph):
        found = visit(module, [])
        if found is not None:
            return found
    return None


def test_the_core_modules_import_each_other_without_a_circle() -> None:
    graph = core_imports()
    assert {"turn", "actions", "routes", "runtime", "dispatch"} <= graph.keys()
    assert a_circle(graph) is None, " -> ".join(a_circle(graph) or [])


def test_a_circle_of_imports_is_found() -> None:
    graph = {"turn": {"offer"}, "offer": {"desk"}, "desk": {"routes"}, "routes": {"turn"}}
    assert a_circle(graph) == ["desk", "routes", "turn", "offer", "desk"]
    assert a_circle({"turn": {"runtime"}, "routes": {"runtime"}, "runtime": set()}) is None
