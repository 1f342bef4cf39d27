"""Every chapter of the book (every notebook in _toc.yml) has the shape of a course chapter.

Learning goals, formal statements in sphinx-proof directives, a summary, at least three exercises
(sphinx-exercise) each with a folded solution, and a per-chapter bibliography with a key prefix.
New chapters are checked as soon as they are listed in _toc.yml.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import colab  # noqa: E402

CHAPTERS = colab.notebook_docnames(ROOT)
DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{(?P<name>[\w:-]+)\}(?P<arg>[^\n]*)\n(?P<body>.*?)^\1\s*$",
                       re.M | re.S)


def _directives(text: str) -> list[tuple[str, str, str]]:
    """Every directive, those nested in another's body (a bibliography in a dropdown) too."""
    out: list[tuple[str, str, str]] = []
    for m in DIRECTIVE.finditer(text):
        out.append((m["name"], m["arg"].strip(), m["body"]))
        out += _directives(m["body"])
    return out


def _headings(text: str) -> list[str]:
    return [h.strip() for h in re.findall(r"^## (.+)$", text, re.M)]


def test_there_are_chapters() -> None:
    assert "notebooks/01_foundations" in CHAPTERS


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_has_the_course_shape(doc: str) -> None:
    text = colab.source_path(ROOT, doc).read_text()
    heads = _headings(text)
    for required in ("Learning goals", "Summary", "Exercises", "References"):
        assert required in heads, f"{doc}: no '## {required}' section"
    assert heads.index("Learning goals") < heads.index("Summary") < heads.index("Exercises")
    assert heads.index("Exercises") < heads.index("References")
    directives = _directives(text)
    names = [n for n, _, _ in directives]
    assert any(n.startswith("prf:") for n in names), f"{doc}: no sphinx-proof statement"
    # the directive form and sphinx-exercise's gated form ({exercise-start} ... with code cells)
    exercises = {m["label"] for n, _, body in directives if n in ("exercise", "exercise-start")
                 for m in [re.search(r"^:label:\s*(?P<label>\S+)", body, re.M) or {"label": ""}]}
    exercises.discard("")
    assert len(exercises) >= 3, f"{doc}: {len(exercises)} labelled exercises, need 3"
    solutions = {arg: body for n, arg, body in directives if n in ("solution", "solution-start")}
    for label in exercises:
        assert label in solutions, f"{doc}: exercise {label} has no solution"
        assert re.search(r"^:class:\s*dropdown", solutions[label], re.M), (
            f"{doc}: the solution of {label} is not folded (:class: dropdown)"
        )
    bib = [body for n, _, body in directives if n == "bibliography"]
    assert bib, f"{doc}: no bibliography"
    assert re.search(r"^:keyprefix:\s*\S+", bib[-1], re.M), f"{doc}: bibliography has no keyprefix"


def test_the_checks_fail_on_a_chapter_without_solutions(tmp_path: Path) -> None:
    text = (
        "## Learning goals\n\n## Summary\n\n## Exercises\n\n"
        "```{exercise}\n:label: ex-1\n\nProve it.\n```\n\n"
        "```{solution} ex-1\n\nUnfolded.\n```\n\n## References\n"
    )
    directives = _directives(text)
    assert [(n, a) for n, a, _ in directives] == [("exercise", ""), ("solution", "ex-1")]
    assert not re.search(r"^:class:\s*dropdown", directives[1][2], re.M)
