"""The import graph of bot/ and store/, read with `ast` (no import is executed).

Only imports that run when a module loads count: those at module level, outside
`if TYPE_CHECKING:`. Imports inside functions load lazily (optional integrations, the
composition root choosing what to build) and are not edges of the load-time graph."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("bot", "store")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for source in SOURCES:
        for path in sorted((ROOT / source).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def load_time_imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours that `module` imports when it loads."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If):
                if not _is_type_checking(node):
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path, node)
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    found.add(submodule if submodule in known else target)

    visit(tree.body)
    return {_owner(name, known) for name in found if _owner(name, known)}


def _owner(name: str, known: set[str]) -> str:
    """The module of ours `name` is, or is in (`store.records.RunRecord` -> `store.records`)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return ""


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {
        m: {d for d in load_time_imports(m, p, known) if d != m and not m.startswith(d + ".")}
        for m, p in found.items()
    }
    # an import of the package a module is in adds no edge: Python loads every package
    # before its modules anyway


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found
