"""tools/count_code_lines.py counts statement lines, not blanks, comments or docstrings."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import count_code_lines as ccl  # noqa: E402

FIXTURE = '''"""Module docstring,
two lines."""

import math  # 1

X = 1  # 2
"""Attribute docstring."""


# a comment
class A:  # 3
    """Class docstring."""

    y: int = 2  # 4
    """Attribute docstring."""

    def f(self, a: int,  # 5
          b: int) -> str:  # 6
        """Function docstring."""
        s = """a string that is
not a docstring"""  # 7, 8
        return s + str(math.pi)  # 9


async def g() -> None:  # 10
    """Async docstring."""
    return None  # 11
'''


def test_counts_statement_lines_only() -> None:
    assert ccl.code_lines(FIXTURE) == 11
    assert ccl.docstring_lines(FIXTURE) == {1, 2, 7, 12, 15, 19, 26}
    assert ccl.code_lines("") == 0
    assert ccl.code_lines("# only a comment\n\n") == 0


def test_counts_per_folder(tmp_path: Path, capsys: object) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Doc."""\nA = 1\n')
    (pkg / "sub" / "m.py").write_text(FIXTURE)
    (pkg / "sub" / "notes.txt").write_text("x = 1\n")
    assert ccl.count(pkg) == {"(top)": 1, "sub": 11}
    assert ccl.main([str(pkg)]) == 0
    assert ccl.main([str(tmp_path / "missing")]) == 2
