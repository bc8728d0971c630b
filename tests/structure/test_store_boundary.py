"""Nothing outside `store/` reaches the database under `Store`: callers use its repositories
(`store.runs`, `store.requests`, `store.standing`, `store.audit`, `store.api`) and its
lifecycle (docs/architecture.md). Checked with `ast` over bot/ and bench/, every import
counted (lazy ones too); tests may still open the engine to arrange a fault."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.structure.imports import ROOT

OUTSIDE_STORE = ("bot", "bench")


def _sources() -> list[Path]:
    return [p for top in OUTSIDE_STORE for p in sorted((ROOT / top).rglob("*.py"))]


def _reaches_the_database(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "db":
            found.append((node.lineno, f"{ast.unparse(node)}: use a repository of Store"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name == "store.db"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == "store.db" or (
                node.module == "store" and any(a.name == "db" for a in node.names)
            ):
                found.append((node.lineno, f"from {node.module} import ..."))
    return found


def test_nothing_outside_store_touches_its_database() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in _sources()
        for line, what in _reaches_the_database(ast.parse(path.read_text()))
    ]
    assert offences == []


def test_the_check_sees_what_it_forbids() -> None:
    code = "from store.db import Database\nimport store.db\nasync def f(s):\n    s.store.db\n"
    assert [line for line, _ in _reaches_the_database(ast.parse(code))] == [1, 2, 4]
