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
