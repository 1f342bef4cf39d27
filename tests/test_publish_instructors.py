"""The instructors' edition (tools/instructors_edition.py): a key for every exercise, every
solution in it, numbers and figures from the built book."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import instructors_edition as ie  # noqa: E402

CHAPTER = """\
# Chapter c

```{prf:theorem} The bound
:label: thm-c

Statement.
```

```{code-cell} ipython3
x = 1  # main figure
```

## Exercises

```{exercise}
:label: ex-c-1

Do c.
```

```{solution} ex-c-1
:class: dropdown

Because the numerator never exceeds the denominator.
```

```{exercise-start}
:label: ex-c-2
```

Code ex.

```{exercise-end}
```

```{solution-start} ex-c-2
:class: dropdown
```

The gated solution converges by bisection.

```{code-cell} ipython3
print("gated c")
```

```{solution-end}
```
"""

# the structure sphinx-exercise and sphinx-proof write (a page of a book built with both)
HTML = """<html><body><article>
<h1><span class="section-number">3. </span>Chapter c<a class="headerlink" href="#c">#</a></h1>
<div class="proof theorem admonition" id="thm-c">
<p class="admonition-title"><span class="caption-number">Theorem 3.1 </span> (The bound)</p>
<section class="theorem-content" id="proof-content"><p>Statement.</p></section></div>
<div class="exercise admonition" id="ex-c-1">
<p class="admonition-title"><span class="caption-number">Exercise 3.1 </span></p>
<section id="exercise-content"><p>Do c.</p></section></div>
<div class="solution dropdown admonition" id="notebooks/c-solution-2">
<p class="admonition-title">Solution to<a class="reference internal" href="#ex-c-1">
 Exercise 3.1</a></p>
<section id="solution-content"><p>Because the numerator never exceeds the denominator.</p>
<p>See <a class="reference internal" href="#thm-c">Theorem 3.1</a>.</p>
<img src="../_images/sol.png"></section></div>
<div class="exercise admonition" id="ex-c-2">
<p class="admonition-title"><span class="caption-number">Exercise 3.2 </span></p>
<section id="exercise-content"><p>Code ex.</p></section></div>
<div class="solution dropdown admonition" id="notebooks/c-solution-4">
<p class="admonition-title">Solution to<a class="reference internal" href="#ex-c-2">
 Exercise 3.2</a></p>
<section id="solution-content"><p>The gated solution converges by bisection.</p>
<pre>gated c</pre></section></div>
</article></body></html>
"""
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5"
       "ErkJggg==")


def _grading() -> dict[str, Any]:
    return {"exercises": {"ex-c-1": {"points": 3, "rubric": [[1, "a"], [2, "b"]]},
                          "ex-c-2": {"points": 4, "rubric": [[4, "the cell runs"]]}},
            "exam": ["ex-c-1"]}


def _course() -> dict[str, Any]:
    weeks: list[dict[str, Any]] = [{"lecture": f"lecture {i}", "homework": []}
                                   for i in range(1, 14)]
    weeks[2]["homework"] = ["ex-c-2"]
    return {"weeks": weeks,
            "summaries": {"c": {"statements": ["thm-c"], "figure": "# main figure",
                                "result": "The gap is {glue:gap:.2f} on {glue:runs} runs; "
                                          "$x_1^2$ and {glue:verdict}."}}}


def _book(tmp: Path, html: str = HTML) -> dict[str, Path]:
    """A one-chapter book with its key, built page and executed notebook, in ``tmp``."""
    import jupytext
    import nbformat

    (tmp / "notebooks").mkdir(parents=True)
    (tmp / "notebooks" / "c.md").write_text(CHAPTER)
    (tmp / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n"
                                  "  - file: notebooks/c\n")
    (tmp / "instructors").mkdir()
    (tmp / "instructors" / "grading.yml").write_text(yaml.safe_dump(_grading()))
    (tmp / "instructors" / "course.yml").write_text(yaml.safe_dump(_course()))
    (tmp / "html" / "notebooks").mkdir(parents=True)
    (tmp / "html" / "notebooks" / "c.html").write_text(html)
    nb = jupytext.reads(CHAPTER, fmt="md:myst")
    code = [c for c in nb.cells if c.cell_type == "code"]
    code[0].outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("display_data", data={"text/plain": "np.int64(4)"},
                               metadata={"scrapbook": {"name": "runs", "mime_prefix": ""}}),
    ]
    ex = tmp / "executed" / "notebooks"
    ex.mkdir(parents=True)
    nbformat.write(nb, ex / "c.ipynb")
    prefix = "application/papermill.record/"
    (ex / "c.glue.json").write_text(json.dumps({
        "gap": {"data": {"text/plain": "0.123456"},
                "metadata": {"scrapbook": {"name": "gap", "mime_prefix": prefix}}},
        "verdict": {"data": {"text/markdown": "the norms **rise** with $T$",
                             "text/plain": "<IPython.core.display.Markdown object>"},
                    "metadata": {"scrapbook": {"name": "verdict", "mime_prefix": prefix}}},
    }))
    return {"root": tmp, "html": tmp / "html", "executed": tmp / "executed",
            "out": tmp / "out"}


# --- the key against the book's chapters ------------------------------------------------------


def test_the_book_key_covers_every_exercise_once() -> None:
    grading, course = ie.load(ROOT)
    exercises = ie.chapter_exercises(ROOT)
    assert sum(len(v) for v in exercises.values()) >= 3 * len(exercises)
    assert ie.check_key(grading, course, exercises) == []


def test_every_exercise_of_the_book_has_a_solution() -> None:
    for stem, pages in ie.se.chapter_pages(ROOT).items():
        assert ie.missing_solutions(ie.chapter_text(pages), stem) == []


def test_summaries_name_what_the_chapters_have() -> None:
    _, course = ie.load(ROOT)
    pages = ie.se.chapter_pages(ROOT)
    for chapter, spec in course["summaries"].items():
        text = ie.chapter_text(pages[chapter])  # every page of the chapter
        for label in spec["statements"]:
            assert re.search(rf"^```{{prf:\w+}}.*\n:label: {re.escape(label)}\n", text, re.M), \
                (chapter, label)
        assert spec["figure"] in text, chapter
        glued = set(re.findall(r'glue\(\s*"(\w+)"', text)) | set(
            re.findall(r"\{glue:\w+\}`(\w+)", text))
        for name in ie.glue_names(spec["result"]):
            assert name in glued, (chapter, name)


# --- the key's checks, on a small fixture -----------------------------------------------------


def _problems(grading: dict[str, Any], course: dict[str, Any] | None = None) -> list[str]:
    return ie.check_key(grading, course or _course(), {"c": ie.exercise_labels(CHAPTER)})


def test_fixture_key_is_sound() -> None:
    assert _problems(_grading()) == []


def test_an_exercise_without_points_fails() -> None:
    g = _grading()
    del g["exercises"]["ex-c-2"]
    assert any("ex-c-2 has no points" in p for p in _problems(g))


def test_points_for_an_exercise_that_does_not_exist_fail() -> None:
    g = _grading()
    g["exercises"]["ex-c-9"] = {"points": 2, "rubric": [[2, "x"]]}
    assert any("ex-c-9, which no chapter has" in p for p in _problems(g))


@pytest.mark.parametrize("entry, words", [
    ({"points": 3, "rubric": [[1, "a"], [1, "b"]]}, "adds up to 2 points, not 3"),
    ({"points": 0, "rubric": [[1, "a"]]}, "positive whole number"),
    ({"points": 3, "rubric": [[3, ""]]}, "every rubric line"),
])
def test_a_bad_rubric_fails(entry: dict[str, Any], words: str) -> None:
    g = _grading()
    g["exercises"]["ex-c-1"] = entry
    assert any(words in p for p in _problems(g))


def test_every_exercise_is_assigned_exactly_once() -> None:
    c = _course()
    c["weeks"][0]["homework"] = ["ex-c-1"]  # also in the exam
    assert any("ex-c-1 is assigned 2 times" in p for p in _problems(_grading(), c))
    c = _course()
    c["weeks"][2]["homework"] = []
    assert any("ex-c-2 is assigned neither" in p for p in _problems(_grading(), c))
    c = _course()
    c["weeks"] = c["weeks"][:12]
    assert any("12 weeks, not 13" in p for p in _problems(_grading(), c))


def test_unlabelled_exercise_and_missing_solution_are_named() -> None:
    with pytest.raises(ValueError, match="line 1: an exercise without a :label:"):
        ie.exercise_labels("```{exercise}\nno label\n```\n")
    text = CHAPTER.replace("```{solution} ex-c-1", "```{solution} ex-c-7")
    assert ie.missing_solutions(text) == [
        "chapter: exercise ex-c-1 has no solution",
        "chapter: a solution to ex-c-7, which is not an exercise of the chapter"]


# --- what the edition reads from the built book -----------------------------------------------


def test_numbers_titles_and_solutions_come_from_the_built_page() -> None:
    nums = ie.numbered(HTML)
    assert nums["ex-c-2"] == ("Exercise 3.2", "") and nums["thm-c"] == ("Theorem 3.1", "The bound")
    exercises, solutions = ie.rendered(HTML, "notebooks/c.html")
    assert set(exercises) == set(solutions) == {"ex-c-1", "ex-c-2"}
    assert "converges by bisection" in solutions["ex-c-2"]
    assert 'href="../html/notebooks/c.html#thm-c"' in solutions["ex-c-1"]
    assert 'src="../html/_images/sol.png"' in solutions["ex-c-1"]
    assert ie.chapter_title(HTML) == "3. Chapter c"


def test_glued_values_print_as_in_the_book() -> None:
    assert ie.glue_text({"text/plain": "np.float64(0.5)"}, ".1%") == "50.0%"
    assert ie.glue_text({"text/plain": "'43%'"}) == "43%"
    assert ie.glue_text({"text/markdown": "**x**", "text/plain": "<Markdown>"}) == "**x**"
    with pytest.raises(KeyError, match="c: no glued value 'nope'"):
        ie.fill("{glue:nope}", {}, "c")


def test_the_edition_holds_every_solution(tmp_path: Path) -> None:
    b = _book(tmp_path)
    assert ie.write_edition(b["root"], b["html"], b["executed"], b["out"]) == []
    sols = (b["out"] / "solutions.html").read_text()
    for lab, block in ie.solution_blocks(CHAPTER).items():
        first = [ln for ln in block.splitlines()[1:] if ln and not ln.startswith((":", "`"))][0]
        assert first in sols, lab
        assert f'id="{lab}"' in sols
    assert "Exercise 3.1 (3 points)" in sols and "Exercise 3.2 (4 points)" in sols
    exam = (b["out"] / "exam.html").read_text()
    assert "Exercise 3.1" in exam and "Exercise 3.2" not in exam and "3 points" in exam
    schedule = (b["out"] / "schedule.html").read_text()
    assert schedule.count("<tr><td") == 13 and "Exercise 3.2</a>" in schedule
    index = (b["out"] / "index.html").read_text()
    assert "7 points in all" in index and "the cell runs" in index


def test_a_solution_missing_from_the_built_page_fails(tmp_path: Path) -> None:
    cut = re.sub(r'<div class="solution dropdown admonition" id="notebooks/c-solution-4">.*?'
                 r"</div>", "", HTML, flags=re.S)
    b = _book(tmp_path, cut)
    assert ie.write_edition(b["root"], b["html"], b["executed"], b["out"]) == [
        "exercise ex-c-2: no rendered solution in the built book"]


def test_the_chapter_page_reads_the_executed_chapter(tmp_path: Path) -> None:
    b = _book(tmp_path)
    assert ie.write_edition(b["root"], b["html"], b["executed"], b["out"]) == []
    page = (b["out"] / "summary-c.html").read_text()
    assert "<b>Theorem 3.1</b> The bound" in page
    assert f"data:image/png;base64,{PNG}" in page
    assert "The gap is 0.12 on 4 runs" in page
    assert r"\(x_1^2\)" in page and "<strong>rise</strong>" in page
    assert "@page { size: A4" in page


def test_an_svg_figure_is_embedded() -> None:
    import base64

    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("plot()  # main")])
    nb.cells[0].outputs = [nbformat.v4.new_output(
        "display_data", data={"image/svg+xml": "<svg>x</svg>", "text/plain": "<Figure>"})]
    uri = ie.figure_uri(nb, "# main", "c")
    assert uri.startswith("data:image/svg+xml;base64,")
    assert base64.b64decode(uri.split(",", 1)[1]) == b"<svg>x</svg>"


def test_a_missing_glued_value_or_figure_is_named(tmp_path: Path) -> None:
    b = _book(tmp_path)
    course = _course()
    bad = copy.deepcopy(course)
    bad["summaries"]["c"]["result"] += " {glue:absent}"
    bad["summaries"]["c"]["figure"] = "x = 1  # main figure"
    (b["root"] / "instructors" / "course.yml").write_text(yaml.safe_dump(bad))
    assert ie.write_edition(b["root"], b["html"], b["executed"], b["out"]) == [
        "c: no glued value 'absent' in the executed chapter"]
    bad["summaries"]["c"]["result"] = course["summaries"]["c"]["result"]
    bad["summaries"]["c"]["figure"] = 'print("gated c")'  # a cell without a figure
    (b["root"] / "instructors" / "course.yml").write_text(yaml.safe_dump(bad))
    assert ie.write_edition(b["root"], b["html"], b["executed"], b["out"]) == [
        "c: no executed cell containing 'print(\"gated c\")' shows a figure"]


def test_missing_build_stops_clearly(tmp_path: Path) -> None:
    assert ie.main(["--html", str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 2



# --- a chapter of several pages ---------------------------------------------------------------


def _split_book(tmp: Path) -> dict[str, Path]:
    """The fixture chapter as three pages: the first (statement, figure cell, glue), an
    executed section page (the exercises and solutions, a glued value), a plain appendix."""
    import shutil

    b = _book(tmp)
    head, tail = CHAPTER.split("## Exercises", 1)
    nb_dir, ex = tmp / "notebooks", b["executed"] / "notebooks"
    (nb_dir / "c.md").write_text(head)
    (nb_dir / "c_more.md").write_text("# More c\n\n## Exercises" + tail)
    (tmp / "book").mkdir()
    (tmp / "book" / "appendix_c.md").write_text("# Appendix c\n\nThe long proofs.\n")
    (tmp / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: P\n    numbered: 1\n"
        "    chapters:\n      - file: notebooks/c\n        sections:\n"
        "          - file: notebooks/c_more\n          - file: book/appendix_c\n")
    # the built pages: the statement on the first, the exercises on the section page
    first, rest = HTML.split('<div class="exercise admonition" id="ex-c-1">', 1)
    (b["html"] / "notebooks" / "c.html").write_text(first + "</article></body></html>")
    (b["html"] / "notebooks" / "c_more.html").write_text(
        '<html><body><article><h1>More c</h1><div class="exercise admonition" id="ex-c-1">'
        + rest)
    (b["html"] / "book").mkdir()
    (b["html"] / "book" / "appendix_c.html").write_text("<html><body><h1>A</h1></body></html>")
    # the glued value 'gap' comes from the section page, the rest from the first page
    glue = json.loads((ex / "c.glue.json").read_text())
    (ex / "c_more.glue.json").write_text(json.dumps({"gap": glue.pop("gap")}))
    (ex / "c.glue.json").write_text(json.dumps(glue))
    shutil.copy(ex / "c.ipynb", ex / "c_more.ipynb")
    return b


def test_a_chapter_of_several_pages_is_one_chapter(tmp_path: Path) -> None:
    b = _split_book(tmp_path)
    assert [p.name for p in ie.se.chapter_pages(b["root"])["c"]] == [
        "c.md", "c_more.md", "appendix_c.md"]
    assert [p.name for p in ie.se.chapters(b["root"])] == ["c.md", "c_more.md"]
    assert ie.chapter_exercises(b["root"]) == {"c": ["ex-c-1", "ex-c-2"]}
    assert ie.write_edition(b["root"], b["html"], b["executed"], b["out"]) == []
    page = (b["out"] / "summary-c.html").read_text()
    assert "<b>Theorem 3.1</b> The bound" in page and "The gap is 0.12 on 4 runs" in page
    assert "Because the numerator never exceeds" in (b["out"] / "solutions.html").read_text()
    # the section page's glued value is needed: without that page the summary names it
    (b["executed"] / "notebooks" / "c_more.glue.json").unlink()
    assert ie.write_edition(b["root"], b["html"], b["executed"], b["out"]) == [
        "c: no glued value 'gap' in the executed chapter"]
    # a section page that is not built is named
    (b["html"] / "notebooks" / "c_more.html").unlink()
    assert any("no built page" in p and "c_more.html" in p
               for p in ie.write_edition(b["root"], b["html"], b["executed"], b["out"]))
