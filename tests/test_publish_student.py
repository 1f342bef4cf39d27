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
        assert "{solution" not in (src / "notebooks" / chapter.name).read_text()
        assert (tmp_path / "student" / "notebooks" / f"{chapter.stem}.ipynb").exists()


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
