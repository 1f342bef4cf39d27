"""Every colon fence of a page is closed by its own closer, and no closer stands alone.

Jupytext and MyST-NB read a page differently: a stray ``:::`` (left, say, when a dropdown
around a table is removed) is harmless to jupytext, which still finds every code cell, but
MyST-NB reads it as the opening of a fence that runs to the end of the page, so every later
code cell is nested in it, is not executed and its glued values are missing from the built
page. This test catches it before a build does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_CODE = re.compile(r"^(`{3,}|~{3,})")
_COLON = re.compile(r"^(:{3,})(\{[^}]*\}.*)?\s*$")


def fence_problems(text: str) -> list[str]:
    """Stray or unclosed colon fences (outside backtick code fences), by line number."""
    problems, stack = [], []
    code: str | None = None
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = _CODE.match(s)
        if m:
            mark = m.group(1)
            if code is None:
                code = mark
            elif s.startswith(code) and s == mark[0] * len(s):
                code = None
            continue
        if code is not None:
            continue
        c = _COLON.match(s)
        if not c:
            continue
        if c.group(2):
            stack.append((len(c.group(1)), i))
        elif stack and stack[-1][0] == len(c.group(1)):
            stack.pop()
        else:
            problems.append(f"line {i}: a '{c.group(1)}' closes no open colon fence")
    problems += [f"line {i}: a colon fence opened here is never closed" for _, i in stack]
    return problems


def test_the_check_finds_a_stray_and_an_unclosed_fence() -> None:
    good = ":::{note}\ntext\n:::\n\n```{code-cell} ipython3\nx = 1\n```\n"
    assert fence_problems(good) == []
    assert fence_problems(good + ":::\n") == ["line 8: a ':::' closes no open colon fence"]
    assert fence_problems("::::{dropdown} x\ntext\n") == [
        "line 1: a colon fence opened here is never closed"]
    # a ':::' inside a code fence is code, not a fence
    assert fence_problems("```python\n:::\n```\n") == []


@pytest.mark.parametrize("page", sorted([*(ROOT / "notebooks").glob("*.md"),
                                         *(ROOT / "book").glob("*.md")]),
                         ids=lambda p: p.name)
def test_every_colon_fence_is_closed(page: Path) -> None:
    assert fence_problems(page.read_text()) == []
