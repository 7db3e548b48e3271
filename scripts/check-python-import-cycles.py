#!/usr/bin/env python3
"""Fails when a Python package's own modules import each other in a cycle. Every import counts: at
the top, inside a function, under `if TYPE_CHECKING:` (a cycle of types is still two modules that are
really one, or a type in the wrong home), as the TypeScript check (check-import-cycles.mjs) counts
type-only imports.

    python3 scripts/check-python-import-cycles.py [package dir ...]   (default: sdk/python/src/trace_ingest)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [ROOT / "sdk" / "python" / "src" / "trace_ingest"]


def module_name(package: Path, file: Path) -> str:
    parts = [package.name, *file.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """The absolute names of the modules `tree` (module `name`) imports, relative imports resolved."""
    found: set[str] = set()
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(max(0, node.level - 1)):
                base = base.rpartition(".")[0]
            target = node.module or ""
            origin = f"{base}.{target}".strip(".") if node.level else target
            found.add(origin)
            # `from . import x` and `from .pkg import mod` may name modules, not attributes.
            found.update(f"{origin}.{alias.name}" for alias in node.names)
    return found


def graph_of(package: Path) -> dict[str, set[str]]:
    files = sorted(package.rglob("*.py"))
    modules = {module_name(package, f): f for f in files}
    graph: dict[str, set[str]] = {}
    for name, file in modules.items():
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        graph[name] = {m for m in imported(tree, name, file.name == "__init__.py") if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    packages = [Path(a).resolve() for a in argv] or DEFAULT
    failed = False
    for package in packages:
        graph = graph_of(package)
        # The package's __init__ re-exports its modules; a module importing the package itself is
        # what would close a cycle through it, and that is counted like any other edge.
        for component in cycles(graph):
            failed = True
            print(f"import cycle in {package.relative_to(ROOT) if package.is_relative_to(ROOT) else package}: {' <-> '.join(component)}", file=sys.stderr)
        if not failed:
            print(f"no import cycle among the {len(graph)} modules of {package.name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
