"""Every chapter of the book (every ``chapters:`` entry of _toc.yml whose first page is a
notebook) has the shape of a course chapter, checked on the chapter as a whole: its pages are the
first page and its ``sections:`` (executed notebooks or plain MyST appendix pages).

Learning goals on the first page; formal statements in sphinx-proof directives somewhere in the
chapter; a summary, at least three exercises (sphinx-exercise) each with a folded solution, and a
bibliography with a key prefix on its LAST page (appendix pages, ``book/appendix_*``, may follow
it, as an appendix follows a chapter; they hold no summary or exercises); every executed page
has its own set-up cell (it runs alone: its first code cell imports what it uses) and, where it
cites, its own bibliography with a key prefix no other page uses. New chapters are checked as
soon as they are listed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import colab  # noqa: E402

DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{(?P<name>[\w:-]+)\}(?P<arg>[^\n]*)\n(?P<body>.*?)^\1\s*$",
                       re.M | re.S)
CODE_CELL = re.compile(r"^(`{3,})\{code-cell\}[^\n]*\n(?P<body>.*?)^\1\s*$", re.M | re.S)


def chapters(root: Path) -> dict[str, list[str]]:
    """``{first page: every page}`` of each chapter whose first page is a notebook."""
    return {first: pages for first, pages in colab.toc_chapters(root / "_toc.yml").items()
            if colab.is_notebook(colab.source_path(root, first))}


CHAPTERS = chapters(ROOT)


def _directives(text: str) -> list[tuple[str, str, str]]:
    """Every directive, those nested in another's body (a bibliography in a dropdown) too."""
    out: list[tuple[str, str, str]] = []
    for m in DIRECTIVE.finditer(text):
        out.append((m["name"], m["arg"].strip(), m["body"]))
        out += _directives(m["body"])
    return out


def _headings(text: str) -> list[str]:
    return [h.strip() for h in re.findall(r"^## (.+)$", text, re.M)]


def _body(text: str) -> str:
    """The page without its front matter."""
    return text.split("---", 2)[2] if text.startswith("---") else text


def shape_problems(root: Path, pages: list[str]) -> list[str]:
    """What a chapter of ``pages`` (docnames, first page first) lacks (empty when it has the
    shape of a course chapter)."""
    texts = {d: colab.source_path(root, d).read_text(encoding="utf-8") for d in pages}
    # the chapter's last page: its last page that is not an appendix (plain pages named
    # appendix_*, which may follow it, as a book's appendix follows its chapters)
    end = len(pages)
    while end > 1 and Path(pages[end - 1]).name.startswith("appendix_"):
        end -= 1
    first, last = pages[0], pages[end - 1]
    problems: list[str] = []
    if "Learning goals" not in _headings(texts[first]):
        problems.append(f"{first}: no '## Learning goals' on the chapter's first page")
    heads = _headings(texts[last])
    for required in ("Summary", "Exercises", "References"):
        if required not in heads:
            problems.append(f"{last}: no '## {required}' on the chapter's last page")
    if not problems and not (heads.index("Summary") < heads.index("Exercises")
                             < heads.index("References")):
        problems.append(f"{last}: summary, exercises and references not in that order")
    for doc in [d for d in pages[1:] if d != last]:
        for moved in ("Summary", "Exercises"):
            if moved in _headings(texts[doc]):
                problems.append(f"{doc}: '## {moved}' on a page that is not the chapter's last")
    directives = [d for doc in pages for d in _directives(texts[doc])]
    if not any(n.startswith("prf:") for n, _, _ in directives):
        problems.append(f"{first}: no sphinx-proof statement in the chapter")
    # the directive form and sphinx-exercise's gated form ({exercise-start} ... with code cells)
    exercises = {m["label"] for n, _, body in directives if n in ("exercise", "exercise-start")
                 for m in [re.search(r"^:label:\s*(?P<label>\S+)", body, re.M) or {"label": ""}]}
    exercises.discard("")
    if len(exercises) < 3:
        problems.append(f"{first}: {len(exercises)} labelled exercises in the chapter, need 3")
    solutions = {arg: body for n, arg, body in directives if n in ("solution", "solution-start")}
    for label in sorted(exercises):
        if label not in solutions:
            problems.append(f"{first}: exercise {label} has no solution")
        elif not re.search(r"^:class:\s*dropdown", solutions[label], re.M):
            problems.append(f"{first}: the solution of {label} is not folded (:class: dropdown)")
    prefixes: dict[str, str] = {}
    for doc in pages:
        bibs = [body for n, _, body in _directives(texts[doc]) if n == "bibliography"]
        cites = re.search(r"\{cite(:\w+)?\}`", texts[doc])
        if (cites or doc == last) and not bibs:
            problems.append(f"{doc}: cites or ends the chapter but has no bibliography")
        for body in bibs:
            m = re.search(r"^:keyprefix:\s*(\S+)", body, re.M)
            if not m:
                problems.append(f"{doc}: a bibliography without :keyprefix:")
            elif m[1] in prefixes and prefixes[m[1]] != doc:
                problems.append(f"{doc}: keyprefix {m[1]} is also used by {prefixes[m[1]]}")
            else:
                prefixes[m[1]] = doc
        if colab.is_notebook(colab.source_path(root, doc)):
            cells = [c["body"] for c in CODE_CELL.finditer(_body(texts[doc]))]
            if not cells or not re.search(r"^\s*(import|from)\s", cells[0], re.M):
                problems.append(f"{doc}: the first code cell is not a set-up cell (no import): "
                                "the page does not run alone")
    return problems


def test_there_are_chapters() -> None:
    assert "notebooks/01_foundations" in CHAPTERS


@pytest.mark.parametrize("first", sorted(CHAPTERS))
def test_chapter_has_the_course_shape(first: str) -> None:
    assert shape_problems(ROOT, CHAPTERS[first]) == []


# --- the check itself, on a fixture book whose chapter has an executed section page and a plain
# appendix page ----------------------------------------------------------------------------------

FRONT = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
         "kernelspec:\n  display_name: Python 3\n  name: python3\n---\n")
SETUP = "```{code-cell} ipython3\nimport numpy as np\n```\n\n"
FIRST = FRONT + "# C\n\n## Learning goals\n\n" + SETUP + (
    "```{prf:theorem} T\n:label: thm-c\n\nx\n```\n\nAs {cite:t}`k` shows.\n\n"
    "```{bibliography}\n:filter: docname in docnames\n:keyprefix: c-\n```\n")
SECTION = FRONT + "# C, more\n\n" + SETUP + "## Summary\n\nIt holds.\n\n## Exercises\n\n" + "".join(
    f"```{{exercise}}\n:label: ex-c-{i}\n\nDo {i}.\n```\n\n"
    f"```{{solution}} ex-c-{i}\n:class: dropdown\n\nDone.\n```\n\n" for i in (1, 2, 3)) + (
    "## References\n\n```{bibliography}\n:filter: docname in docnames\n:keyprefix: cm-\n```\n")
APPENDIX = "# Appendix C\n\nThe long proofs.\n"


def _fixture(tmp: Path, first: str = FIRST, section: str = SECTION,
             appendix: str = APPENDIX) -> list[str]:
    (tmp / "notebooks").mkdir(exist_ok=True)
    (tmp / "book").mkdir(exist_ok=True)
    (tmp / "notebooks" / "c.md").write_text(first)
    (tmp / "notebooks" / "c_more.md").write_text(section)
    (tmp / "book" / "appendix_c.md").write_text(appendix)
    (tmp / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: P\n    numbered: 1\n    chapters:\n"
        "      - file: notebooks/c\n        sections:\n          - file: book/appendix_c\n"
        "          - file: notebooks/c_more\n")
    return chapters(tmp)["notebooks/c"]


def test_a_chapter_of_several_pages_passes_as_a_whole(tmp_path: Path) -> None:
    pages = _fixture(tmp_path)
    assert pages == ["notebooks/c", "book/appendix_c", "notebooks/c_more"]
    assert shape_problems(tmp_path, pages) == []


def test_an_appendix_may_follow_the_last_page(tmp_path: Path) -> None:
    pages = _fixture(tmp_path)
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/c\n    sections:\n"
        "      - file: notebooks/c_more\n      - file: book/appendix_c\n")
    pages = chapters(tmp_path)["notebooks/c"]
    assert pages == ["notebooks/c", "notebooks/c_more", "book/appendix_c"]
    assert shape_problems(tmp_path, pages) == []


def test_the_checks_fail_on_a_bad_chapter(tmp_path: Path) -> None:
    # exercises on a page that is not the last: on the appendix, or on a middle page
    pages = _fixture(tmp_path, appendix=APPENDIX + "\n## Exercises\n")
    assert any("book/appendix_c: '## Exercises' on a page that is not the chapter's last" in p
               for p in shape_problems(tmp_path, pages))
    # an unfolded solution, a section page without its set-up cell, a shared keyprefix
    pages = _fixture(tmp_path, section=SECTION.replace(":class: dropdown\n\nDone", "\nDone", 1)
                     .replace(SETUP, "```{code-cell} ipython3\nx = np.ones(2)\n```\n\n")
                     .replace(":keyprefix: cm-", ":keyprefix: c-"))
    problems = shape_problems(tmp_path, pages)
    assert any("ex-c-1 is not folded" in p for p in problems), problems
    assert any("notebooks/c_more: the first code cell is not a set-up cell" in p
               for p in problems), problems
    assert any("keyprefix c- is also used by notebooks/c" in p for p in problems), problems
    # no learning goals on the first page; the chapter's last page without references
    pages = _fixture(tmp_path, first=FIRST.replace("## Learning goals", "## Goals"),
                     section=SECTION.split("## References")[0])
    problems = shape_problems(tmp_path, pages)
    assert "notebooks/c: no '## Learning goals' on the chapter's first page" in problems
    assert "notebooks/c_more: no '## References' on the chapter's last page" in problems
