"""The notebook formatter: code cells to the column, prose untouched; formatted chapters stay so."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import format_notebooks as fmt  # noqa: E402

CHAPTER = """\
# A chapter

Prose with a very long line that the formatter must leave exactly as it is, however long it is.

```{code-cell} ipython3
:tags: [hide-input]

%matplotlib inline
import math
x = {'alpha':1,'beta':[1,2,3]}
# a comment line that is much longer than the column of the book, so it has to be wrapped somewhere
print(f"largest exact tail / Hoeffding bound: {math.exp(x['alpha']):.3f} and then some more words")
```

More prose.

```{code-cell} ipython3
y = "a top-level string assignment that is far too long to fit in the column of the book ok"
```
"""


def test_format_text_keeps_prose_and_options(tmp_path: Path) -> None:
    rep = fmt.Report(tmp_path / "x.md")
    out = fmt.format_text(CHAPTER, 79, rep)
    before, after = CHAPTER.split("\n"), out.split("\n")
    assert after[:7] == before[:7]  # title, prose, fence, options, the blank line after them
    assert "%matplotlib inline" in after  # the magic is kept as it is
    assert "x = {\"alpha\": 1, \"beta\": [1, 2, 3]}" in after
    assert "More prose." in after and after[-1] == ""
    assert rep.changed_cells == 1  # the second cell's long string cannot be split safely
    # the only long line left is the top-level string (splitting it would change the program)
    assert [ln for ln in after if len(ln) > 79 and not ln.startswith("Prose")] == [
        before[-3]]
    assert len(rep.long_lines) == 1
    assert fmt.format_text(out, 79) == out  # idempotent


def test_split_strings_keep_the_program() -> None:
    code = ('print(\n    f"largest exact tail / Hoeffding bound: {math.exp(x[\'a\']):.3f} and '
            'then some more words {y:>{w}}"\n)\n')
    out = fmt.format_code(code, 60)
    assert all(len(ln) <= 60 for ln in out.split("\n"))
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(code))
    # never inside a replacement field
    assert fmt._split_point("ab {x: >10} cd", 8, fstring=True) is None
    assert fmt._split_point("abcdefghijkl mn {x}", 18, fstring=True) == 16  # after "mn "


def test_wrap_comments_and_bad_input() -> None:
    wrapped = fmt.wrap_comments("    # " + "word " * 30, 40)
    assert all(len(ln) <= 40 and ln.startswith("    # ") for ln in wrapped.split("\n"))
    with pytest.raises(ValueError, match="width"):
        fmt.format_code("x = 1", 10)
    rep = fmt.Report(Path("x.md"))
    fmt.format_text("```{code-cell} ipython3\nx = (\n```\n", 79, rep)
    assert rep.errors and "not formatted" in rep.errors[0]
    with pytest.raises(ValueError, match="never closed"):
        fmt.format_text("```{code-cell} ipython3\nx = 1\n", 79)


@pytest.mark.parametrize("chapter", fmt.FORMATTED)
def test_formatted_chapters_stay_formatted(chapter: str) -> None:
    """Every notebook page (FORMATTED: those of _toc.yml and every notebooks/*.md) is
    formatted: rerun `python tools/format_notebooks.py <page>` after editing one."""
    assert fmt.main(["--check", str(ROOT / chapter)]) == 0


def test_comment_runs_reflow_without_orphans() -> None:
    code = ("# mutation: C = 0.001 in the printed bound (the last cell) puts some runs below 1\n"
            "# and fails\nx = 1\n")
    out = fmt.wrap_comments(code, 75)
    assert out.split("\n") == [
        "# mutation: C = 0.001 in the printed bound (the last cell) puts some runs",
        "# below 1 and fails", "x = 1", ""]
    assert fmt.wrap_comments(out, 75) == out  # short runs stay as they are


def test_cells_in_exercise_boxes_are_narrower() -> None:
    long_call = "result = compute(alpha_value, beta_value, gamma_value, delta_value, eps)\n"
    text = ("```{code-cell} ipython3\n" + long_call + "```\n\n"
            "````{exercise-start}\n:label: ex-x\n````\n\n"
            "```{code-cell} ipython3\n" + long_call + "```\n\n````{exercise-end}\n````\n")
    lines = text.split("\n")
    assert not fmt.in_box(lines, 0) and fmt.in_box(lines, 8)
    out = fmt.format_text(text, 75).split("```{code-cell} ipython3\n")
    assert long_call.strip() in out[1]  # 73 characters fit the column
    assert long_call.strip() not in out[2]  # but not a box (75 - BOX_INDENT)


def test_formatted_pages_come_from_the_toc_and_the_folder(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    for name in ("c.md", "c_more.md", "d.md", "unlisted.md"):
        (tmp_path / "notebooks" / name).write_text("# x\n")
    (tmp_path / "book" / "appendix_c.md").write_text("# A\n")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/appendix_c\nchapters:\n  - file: notebooks/d\n"
        "  - file: notebooks/c\n    sections:\n      - file: notebooks/c_more\n"
        "      - file: book/appendix_c\n")
    assert fmt.formatted_pages(tmp_path) == (
        "notebooks/d.md", "notebooks/c.md", "notebooks/c_more.md", "notebooks/unlisted.md")
    assert set(fmt.FORMATTED) == {p.relative_to(ROOT).as_posix()
                                  for p in (ROOT / "notebooks").glob("*.md")}
