"""Count the code lines of a Python package, per folder.

A code line is a line that holds part of a statement: every line of a statement spanning
several lines counts, blank lines and comment-only lines do not, and neither do docstrings of
modules, classes and functions, nor attribute docstrings (a string statement later in a module
or class body). Files are grouped by their first folder under the package (``(top)`` for the
package's own modules).

Usage: ``python tools/count_code_lines.py [PACKAGE_DIR]`` (default ``src/genbounds``); prints
one line per folder and the total.
"""

from __future__ import annotations

import ast
import collections
import io
import sys
import tokenize
from pathlib import Path

_NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENDMARKER)


def _is_string(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def docstring_lines(source: str) -> set[int]:
    """The line numbers (1-based) of the docstrings of ``source``."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            # the docstring, and in a module or a class the attribute docstrings after it
            strings = body[:1] + (body[1:] if isinstance(node, ast.Module | ast.ClassDef) else [])
            for st in strings:
                if _is_string(st):
                    lines.update(range(st.lineno, (st.end_lineno or st.lineno) + 1))
    return lines


def code_lines(source: str) -> int:
    """The number of code lines of ``source`` (see the module docstring)."""
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _NOT_CODE:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstring_lines(source))


def count(root: Path) -> dict[str, int]:
    """Code lines of every ``*.py`` file under ``root``, summed per first folder."""
    per: collections.Counter[str] = collections.Counter()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        per[rel.parts[0] if len(rel.parts) > 1 else "(top)"] += code_lines(path.read_text())
    return dict(sorted(per.items()))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else "src/genbounds")
    if not root.is_dir():
        print(f"count_code_lines: {root} is not a directory", file=sys.stderr)
        return 2
    per = count(root)
    for folder, n in per.items():
        print(f"{folder:12s} {n:6d}")
    print(f"{'total':12s} {sum(per.values()):6d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
