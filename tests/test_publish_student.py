"""The student edition (tools/student_edition.py): solutions removed, nothing leaks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import student_edition as se  # noqa: E402

CHAPTER = """\
# A chapter

```{exercise}
:label: ex-a
Show that the bound is at most one for every sample size n.
```

```{solution} ex-a
:class: dropdown

Because the numerator never exceeds the denominator at any sample size.
```

````{exercise-start}
:label: ex-b
````
Compute the kl inverse.
```{code-cell} ipython3
q = 0.1  # starter
```
````{exercise-end}
````

````{solution-start} ex-b
:class: dropdown
````
The inversion is monotone in the empirical error, so bisection converges.
```{code-cell} ipython3
answer_from_the_solution = kl_inverse_upper(q, 0.05)
assert answer_from_the_solution > q  # mutation: return q
```
````{solution-end}
````

After the exercises.
"""


def test_both_forms_removed_exercises_kept() -> None:
    student, removed = se.strip_solutions(CHAPTER)
    assert len(removed) == 2
    assert "numerator never exceeds" not in student
    assert "bisection converges" not in student and "answer_from_the_solution" not in student
    assert "Show that the bound is at most one" in student and "q = 0.1  # starter" in student
    assert "After the exercises." in student
    assert student.count(se.NOTE) == 2
    assert se.leaked_lines(removed, student, allowed=student) == []


def test_leaks_and_solution_only_names_are_found() -> None:
    student, removed = se.strip_solutions(CHAPTER)
    leaky = student + "\nBecause the numerator never exceeds the denominator at any sample size.\n"
    assert se.leaked_lines(removed, leaky)
    assert not se.leaked_lines(removed, leaky, allowed=leaky)  # shared with the exercise: fine
    uses = student + "\n```{code-cell} ipython3\nprint(answer_from_the_solution)\n```\n"
    assert se.names_only_in_solutions(removed, uses) == ["answer_from_the_solution"]
    assert se.names_only_in_solutions(removed, student) == []


@pytest.mark.parametrize("bad", [
    "```{solution} ex\ntext never closed\n",
    "````{solution-start} ex\n````\ntext\n",
    "````{solution-end}\n````\n",
])
def test_malformed_solutions_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="line"):
        se.strip_solutions(bad)


def test_every_chapter_strips_cleanly(tmp_path: Path) -> None:
    problems, src = se.write_edition(ROOT, tmp_path / "student")
    assert problems == []
    for chapter in se.chapters(ROOT):
        text = (src / "notebooks" / chapter.name).read_text()
        assert "{solution" not in text
        assert se.mentions(text) == []
        assert (tmp_path / "student" / "notebooks" / f"{chapter.stem}.ipynb").exists()
    # no page for instructors: its table of times is a page of its own, under the same label
    assert not (src / "book" / "instructors.md").exists()
    toc = (src / "_toc.yml").read_text()
    assert "file: book/times" in toc and "book/instructors" not in toc
    times = (src / "book" / "times.md").read_text()
    assert times.startswith("(instructors-times)=\n# How long each notebook takes\n")
    assert "{{ study_times }}" in times and "Running it live" not in times
    for page in (src / "book").glob("*.md"):
        assert se.mentions(page.read_text()) == [], page.name
        assert "{doc}`instructors`" not in page.read_text()


PAGE = """\
- **A researcher**: skim the summary.
- **An instructor**: see {doc}`instructors` for a term plan, which exercises suit homework and
  which an exam.
- **Looking for a statement**: the index.

6. **Summary, exercises (with folded solutions) and references.**

Five exercises, each folded under its title; the solutions are folded
beneath them. Times are on the instructors' page ({doc}`instructors`).

```{code-cell} ipython3
print("the instructors' page")  # code is left as it is
```
"""


def test_instructors_and_folded_solutions_are_not_mentioned() -> None:
    out = se.rewrite_prose(PAGE)
    assert "An instructor" not in out and "- **Looking for a statement**" in out
    assert "6. **Summary, exercises and references.**" in out
    assert "each folded under its title." in out
    assert "Times are on the page of times ({doc}`times`)." in out
    assert 'print("the instructors\' page")' in out  # code untouched (it must match its outputs)
    assert se.mentions(out) == []
    assert se.mentions(PAGE.replace("with folded solutions", "with hidden solutions")) != []
    assert se.mentions("For instructors: the key.\n") == ["For instructors: the key."]


def test_times_page_needs_its_section(tmp_path: Path) -> None:
    page = "# For instructors\n\n(instructors-times)=\n## How long each notebook takes\n\n" \
        "This section is the source.\n\n## Running it live in class\n\nL.\n"
    assert se.times_page(page) == ("(instructors-times)=\n# How long each notebook takes\n\n"
                                   "This page is the source.\n\n")
    with pytest.raises(ValueError, match="book/instructors.md: no section"):
        se.times_page("# For instructors\n")


def _executed(text: str) -> object:
    import jupytext
    import nbformat

    nb = jupytext.reads(text, fmt="md:myst")
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"output {i}\n")]
        cell.execution_count = i + 1
    return nb


def test_student_notebook_keeps_the_outputs_and_starts_with_set_up() -> None:
    import jupytext

    student, _ = se.strip_solutions(CHAPTER)
    nb = jupytext.reads(student, fmt="md:myst")
    assert se.attach_outputs(nb, _executed(CHAPTER)) == 1  # the starter cell; not the solution
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].outputs[0]["text"] == "output 0\n" and code[0].execution_count == 1
    nb = se.with_setup(nb)
    assert "genbounds-setup" in nb.cells[0].metadata["tags"]
    assert "import genbounds" in nb.cells[0].source
    assert se.with_setup(nb).cells[1].source == nb.cells[1].source  # not added twice


def test_student_cell_missing_from_the_executed_notebook_is_named() -> None:
    import jupytext

    student, _ = se.strip_solutions(CHAPTER.replace("q = 0.1  # starter", "q = 0.2  # edited"))
    nb = jupytext.reads(student, fmt="md:myst")
    with pytest.raises(ValueError, match="q = 0.2  # edited"):
        se.attach_outputs(nb, _executed(CHAPTER))


def test_missing_executed_notebooks_stop_clearly(tmp_path: Path) -> None:
    assert se.main(["--out", str(tmp_path / "s"), "--executed", str(tmp_path / "none")]) == 2


def test_a_chapter_of_several_pages_loses_every_solution(tmp_path: Path) -> None:
    """A chapter whose exercises are on an executed section page and on a plain appendix page:
    every page is in the edition, no solution is left on any of them."""
    root = tmp_path / "root"
    for d in ("notebooks", "book", "tools"):
        (root / d).mkdir(parents=True)
    (root / "_config.yml").write_text("title: t\nexecute:\n  execute_notebooks: force\n")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: P\n    numbered: 1\n"
        "    chapters:\n      - file: notebooks/c\n        sections:\n"
        "          - file: notebooks/c_more\n          - file: book/appendix_c\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    front = ("---\njupytext:\n  text_representation:\n    extension: .md\n"
             "    format_name: myst\nkernelspec:\n  display_name: Python 3\n  name: python3\n"
             "---\n")
    exercise = ("```{{exercise}}\n:label: ex-{0}\n\nShow {0}.\n```\n\n```{{solution}} ex-{0}\n"
                ":class: dropdown\n\nThe secret of {0} is bisection.\n```\n")
    (root / "notebooks" / "c.md").write_text(
        front + "# C\n\n```{code-cell} ipython3\nimport math\n```\n")
    (root / "notebooks" / "c_more.md").write_text(
        front + "# C, more\n\n```{code-cell} ipython3\nimport math\n```\n\n"
        + exercise.format("more"))
    (root / "book" / "appendix_c.md").write_text("# Appendix C\n\n" + exercise.format("app"))
    assert [p.name for p in se.chapters(root)] == ["c.md", "c_more.md"]
    assert [p.name for p in se.plain_pages(root)] == ["appendix_c.md"]
    problems, src = se.write_edition(root, tmp_path / "student")
    assert problems == []
    for rel in ("notebooks/c_more.md", "book/appendix_c.md"):
        text = (src / rel).read_text()
        assert "{solution" not in text and "secret" not in text and "{exercise}" in text, rel
    assert (tmp_path / "student" / "notebooks" / "c_more.ipynb").exists()
