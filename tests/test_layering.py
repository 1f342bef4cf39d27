"""The data flows one way (the design's picture): the results store knows no study.

Nothing under ``genbounds/results/`` imports ``genbounds.experiments`` (anywhere in a file,
inside functions too): a study's probe or registry reaches the store as arguments from its caller
(the command line or the experiments layer), never by an import (issue 36 section 3).
"""

from __future__ import annotations

import ast
from pathlib import Path

import genbounds

PKG = Path(genbounds.__file__).resolve().parent


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_the_store_imports_no_study() -> None:
    offenders = {p.relative_to(PKG).as_posix(): sorted(
        m for m in imports_of(p) if m.startswith("genbounds.experiments"))
        for p in sorted((PKG / "results").rglob("*.py"))}
    assert not {k: v for k, v in offenders.items() if v}


def test_the_check_sees_an_import(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from genbounds.experiments.registry import get_experiment\n")
    assert "genbounds.experiments.registry" in imports_of(f)
