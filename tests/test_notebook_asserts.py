"""Every assert in a paper chapter says what it is: a conclusion with the mutation that breaks it,
or a sanity check that is not counted as evidence (issue #21 §6).

Convention: the assert's first line, or the block of comment lines right above it (a tag
comment wrapped to the column by ``tools/format_notebooks.py`` continues on the next comment
lines), carries ``# mutation: <the change that makes it fail>`` or
``# sanity: <why it is only a sanity check>``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = sorted(p for p in NOTEBOOKS.glob("*.md") if re.match(r"0[2-9]_|[1-9]\d_", p.name))
_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
_TAG = re.compile(r"#\s*(mutation|sanity):\s*\S")


def _comments_above(lines: list[str], i: int) -> list[str]:
    """The contiguous comment lines directly above line ``i`` (nearest first)."""
    out = []
    for line in reversed(lines[:i]):
        if not line.strip().startswith("#"):
            break
        out.append(line)
    return out


def untagged_asserts(text: str) -> list[str]:
    """The first lines of asserts in code cells that carry neither tag."""
    out = []
    for cell in _CELL.findall(text):
        lines = cell.splitlines()
        for i, line in enumerate(lines):
            if not re.match(r"\s*assert\b", line):
                continue
            if _TAG.search(line) or any(_TAG.search(c) for c in _comments_above(lines, i)):
                continue
            out.append(line.strip())
    return out


def test_parser_finds_untagged_asserts() -> None:
    text = ("```{code-cell} ipython3\nx = 1\nassert x == 1\n"
            "assert x > 0  # sanity: by construction\n"
            "# mutation: x = -1 fails\nassert x > 0\n```\n")
    assert untagged_asserts(text) == ["assert x == 1"]
    wrapped = ("```{code-cell} ipython3\n# mutation: x = -1, a comment wrapped to\n"
               "# the column\nassert x > 0\nx = 2\n# not a tag\nassert x > 1\n```\n")
    assert untagged_asserts(wrapped) == ["assert x > 1"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_assert_is_tagged(chapter: Path) -> None:
    missing = untagged_asserts(chapter.read_text(encoding="utf-8"))
    assert not missing, (f"{chapter.name}: asserts without '# mutation:' or '# sanity:' "
                         f"({len(missing)}): {missing[:10]}")
