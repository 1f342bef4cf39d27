"""Publishing: the downloadable and Colab notebooks read outside Jupyter Book (plain Markdown).

A fixture chapter with every kind of MyST the chapters use (glue roles with format specs, glued
Markdown, statements, proofs, exercises and solutions split over cells, citations with a key
prefix, references, targets, labelled equations, a bibliography) is published as the build
publishes it (``colab.write_colab_notebooks`` with the executed notebook's glued values), and
every Markdown cell is searched for MyST leftovers; the real chapters are converted too (their
labels, citations and documents must all resolve).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import jupytext
import nbformat
import pytest
from myst_nb.core.variables import format_plain_text as myst_nb_format
from myst_pages import myst_page  # tests/myst_pages.py

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import colab  # noqa: E402
import plain_notebook as pn  # noqa: E402

CHAPTER = myst_page(textwrap.dedent(
    """\
    # A chapter

    (ch-goals)=
    ## Goals

    The rate is {glue:text}`rate:.3f` and the count {glue:text}`count`; as
    {cite:t}`ch-smith2020` show {cite:p}`ch-smith2020,ch-doe2021`. See {ref}`ch-goals`,
    {prf:ref}`ch-thm`, {doc}`../book/intro` and {prf:ref}`the lemma <other-lem>`.
    {glue:md}`summary:myst`

    % a comment the reader must not see

    ```{prf:theorem} A bound
    :label: ch-thm

    For all $n$, $a_n \\le {glue:text}`rate:.1f`$.
    ```

    ```{prf:proof}
    By induction.
    ```

    $$
    x = 1
    $$ (ch-eq)

    :::{admonition} Key result
    :class: dropdown
    ```{note}
    Nested, with code:
    ```
    ```python
    print("{cite:t}`not-a-role-in-code`")
    ```
    :::

    ```{code-cell} ipython3
    from myst_nb import glue
    glue("rate", 0.123456)
    ```

    ```{exercise-start}
    :label: ex-ch-1
    :class: dropdown
    ```

    Compute it.

    ```{code-cell} ipython3
    x = 1  # your turn
    ```

    ```{exercise-end}
    ```

    ```{solution-start} ex-ch-1
    :class: dropdown
    ```

    It is 1.

    ```{solution-end}
    ```

    ```{exercise}
    :label: ex-ch-2
    :class: dropdown

    Show it.
    ```

    ```{solution} ex-ch-2
    :class: dropdown

    Shown.
    ```

    ## References

    :::{dropdown} The works cited
    ```{bibliography}
    :filter: docname in docnames
    :keyprefix: ch-
    ```
    :::
    """
))

OTHER = textwrap.dedent(
    """\
    # Another page

    ```{prf:lemma} Other
    :label: other-lem

    Text.
    ```
    """
)

BIB = textwrap.dedent(
    """\
    @article{smith2020,
      author = {Smith, Ann and Jones, Bob},
      title = {A Paper on {B}ounds},
      journal = {Journal},
      year = {2020},
    }
    @article{doe2021,
      author = {Doe, Jane and Roe, Rick and Poe, Edgar},
      title = {Another},
      journal = {Journal},
      year = {2021},
    }
    """
)


def _glued(name: str, data: dict[str, str], prefix: str = "") -> nbformat.NotebookNode:
    """A display output as MyST-NB's ``glue(name, value)`` writes it: with the papermill
    prefix from a kernel, without it (``mime_prefix: ""``) in the build's jupyter_execute/."""
    return nbformat.v4.new_output(
        "display_data", data={f"{prefix}{k}": v for k, v in data.items()},
        metadata={"scrapbook": {"name": name, "mime_prefix": prefix}})


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A book with one chapter, another page, a bibliography and an executed notebook."""
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# The introduction\n")
    (tmp_path / "book" / "other.md").write_text(OTHER)
    (tmp_path / "book" / "references.bib").write_text(BIB)
    (tmp_path / "notebooks" / "01_a.md").write_text(CHAPTER)
    (tmp_path / "_config.yml").write_text("bibtex_bibfiles:\n  - book/references.bib\n")
    (tmp_path / "_toc.yml").write_text(textwrap.dedent(
        """\
        format: jb-book
        root: book/intro
        chapters:
          - file: notebooks/01_a
          - file: book/other
        """))
    executed = jupytext.read(tmp_path / "notebooks" / "01_a.md")
    code = next(c for c in executed.cells if c.cell_type == "code")
    code.outputs = [
        _glued("rate", {"text/plain": "0.123456"}),
        _glued("count", {"text/plain": "'12,345'"}, pn.GLUE_PREFIX),
        _glued("summary", {"text/plain": "<IPython.core.display.Markdown object>",
                           "text/markdown": "All **fine**, as {prf:ref}`ch-thm` says."}),
    ]
    out = tmp_path / "_build" / "jupyter_execute" / "notebooks"
    out.mkdir(parents=True)
    nbformat.write(executed, out / "01_a.ipynb")
    return tmp_path


def _published(book: Path, url: str | None = None) -> nbformat.NotebookNode:
    site = book / "_build" / "html"
    [path] = colab.write_colab_notebooks(book, site, None,
                                         executed_dir=book / "_build" / "jupyter_execute",
                                         url=url)
    return nbformat.read(path, as_version=4)


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_the_source_has_myst_and_the_published_notebook_has_none(book: Path) -> None:
    source = jupytext.read(book / "notebooks" / "01_a.md")
    found = pn.myst_leftovers(source)
    for what in ("role", "directive fence", "glue", "target"):  # the check sees each kind
        assert any(f": {what}: " in f for f in found), what
    nb = _published(book)
    assert pn.myst_leftovers(nb) == []


def test_glued_values_are_substituted_as_the_page_shows_them(book: Path) -> None:
    text = _markdown(_published(book))
    assert "The rate is 0.123 and the count 12,345;" in text
    assert r"$a_n \le 0.1$" in text  # inside a statement, in math
    # glued Markdown is itself made plain
    assert "All **fine**, as [Theorem (A bound)](#ch-thm) says." in text


@pytest.mark.parametrize("text, spec", [("0.123456", ".3f"), ("0.123456", ".1%"),
                                        ("12", "d"), ("'12,345'", ""), ("1234567.0", ",.0f"),
                                        ("'abc'", "s"), ("3", ".2e")])
def test_format_spec_is_applied_as_myst_nb_applies_it(text: str, spec: str) -> None:
    assert pn.format_plain_text(text, spec) == myst_nb_format(text, spec)


def test_statements_exercises_and_citations(book: Path) -> None:
    nb = _published(book)
    text = _markdown(nb)
    assert '<a id="ch-thm"></a>\n\n> **Theorem (A bound).**\n>\n> For all $n$' in text
    assert "> *Proof.*\n>\n> By induction.\n>\n> ∎" in text
    assert "as\nSmith and Jones [2020] show [Smith and Jones, 2020; Doe et al., 2021]." in text
    assert "[Goals](#ch-goals)" in text and "*The introduction*" in text
    assert "the lemma (in *Another page*)" in text
    assert "**Exercise 1**\n\nCompute it." in text
    assert "**Solution to Exercise 1**\n\nIt is 1." in text
    assert "$$\nx = 1\n$$" in text and "(ch-eq)" not in text
    assert "a comment the reader must not see" not in text
    # what the page folds is folded (a directive inside it converted too)
    assert "<details>\n<summary><b>Key result</b></summary>\n\n> **Note.**" in text
    assert "<details>\n<summary><b>Exercise 2</b></summary>\n\nShow it.\n\n</details>" in text
    assert "<summary><b>Solution to Exercise 2</b></summary>\n\nShown." in text
    assert 'print("{cite:t}`not-a-role-in-code`")' in text  # code fences are left alone
    # the bibliography lists what the chapter cites, in full
    assert "- Jane Doe, Rick Roe, Edgar Poe (2021). Another. *Journal*." in text
    assert "- Ann Smith, Bob Jones (2020). A Paper on Bounds. *Journal*." in text
    # code cells are untouched (the set-up cell first)
    source = jupytext.read(book / "notebooks" / "01_a.md")
    assert [c.source for c in nb.cells if c.cell_type == "code"][1:] == [
        c.source for c in source.cells if c.cell_type == "code"]


def test_published_links_point_at_the_pages(book: Path) -> None:
    text = _markdown(_published(book, url="https://o.github.io/r"))
    assert "[the lemma](https://o.github.io/r/book/other.html#other-lem)" in text
    assert "[The introduction](https://o.github.io/r/book/intro.html)" in text
    assert pn.pages_url({"GITHUB_REPOSITORY": "Alice/Book"}) == "https://alice.github.io/Book/"
    assert pn.pages_url({"GITHUB_REPOSITORY": "alice/alice.github.io"}) == \
        "https://alice.github.io/"
    assert pn.pages_url({}) is None


@pytest.mark.parametrize("change, named", [
    ("{glue:text}`count`", "'nothing'"),
    ("{prf:ref}`ch-thm`", "'nowhere'"),
    ("{cite:t}`ch-smith2020`", "'ch-nobody'"),
])
def test_what_cannot_be_resolved_is_named(book: Path, change: str, named: str) -> None:
    path = book / "notebooks" / "01_a.md"
    new = change.replace(change.split("`")[1], named.strip("'"))
    path.write_text(path.read_text().replace(change, new, 1))
    with pytest.raises(pn.PlainError, match=named):
        _published(book)


def test_the_executed_notebook_keeps_its_outputs(book: Path) -> None:
    executed = nbformat.read(book / "_build" / "jupyter_execute" / "notebooks" / "01_a.ipynb",
                             as_version=4)
    nb = pn.plain_notebook(executed, colab.read_book(book), "notebooks/01_a",
                           pn.glue_values(executed))
    assert pn.myst_leftovers(nb) == []
    assert [c.get("outputs") for c in nb.cells] == [c.get("outputs") for c in executed.cells]


def test_every_chapter_of_the_book_converts() -> None:
    """The real chapters: every label, citation and document resolves and nothing is left
    (glued values are stand-ins here: they exist only after execution; the colab-test step
    checks the built notebooks with their real values)."""
    book = colab.read_book(ROOT)
    for doc in colab.notebook_docnames(ROOT):
        nb = jupytext.read(colab.source_path(ROOT, doc))
        assert pn.myst_leftovers(nb), doc  # the source is MyST
        keys = {k.rsplit(":", 1)[0] if k.count(":") else k for k in _glue_keys(nb)}
        glue = {k: {"text/plain": "1.5", "text/markdown": "stand-in"} for k in keys}
        plain = pn.plain_notebook(nb, book, doc, glue)
        assert pn.myst_leftovers(plain) == [], doc


def _glue_keys(nb: nbformat.NotebookNode) -> set[str]:
    import re

    text = _markdown(nb)
    return set(re.findall(r"\{glue(?::\w+)?\}`([^`]+)`", text))


def test_the_colab_test_step_refuses_myst_in_published_notebooks(book: Path) -> None:
    """``tools/colab_nbval.py`` opens every built notebook (Colab and download) first."""
    import colab_nbval

    site = book / "_build" / "html"
    _published(book)
    executed = nbformat.read(book / "_build" / "jupyter_execute" / "notebooks" / "01_a.ipynb",
                             as_version=4)
    download = site / "_sources" / "notebooks" / "01_a.ipynb"
    download.parent.mkdir(parents=True)
    nbformat.write(executed, download)  # as published before: the MyST as it is
    found = colab_nbval.plain_problems(site, ["notebooks/01_a"])
    assert found and all(f.startswith("_sources/notebooks/01_a.ipynb: cell ") for f in found)
    nbformat.write(pn.plain_notebook(executed, colab.read_book(book), "notebooks/01_a",
                                     pn.glue_values(executed)), download)
    assert colab_nbval.plain_problems(site, ["notebooks/01_a"]) == []
    assert colab_nbval.plain_problems(site, ["notebooks/02_b"]) == [
        f"{site}/colab/notebooks/02_b.ipynb: not built",
        f"{site}/_sources/notebooks/02_b.ipynb: not built"]


def test_statements_carry_the_numbers_of_the_pages(book: Path) -> None:
    """With the build's numbers (read from Sphinx as sphinx-proof and sphinx-exercise read
    them), headings and references use the page's names: "Theorem 2.1", "Exercise 2.1"."""
    from types import SimpleNamespace

    import book_publish

    env = SimpleNamespace(
        toc_fignumbers={"notebooks/01_a": {"theorem": {"ch-thm": (2, 1)},
                                           "exercise": {"ex-ch-1": (2, 1)}},
                        "book/other": {"lemma": {"other-lem": (3,)}}},
        proof_list={"ch-thm": {"docname": "notebooks/01_a", "countertype": "theorem",
                               "realtype": "theorem", "nonumber": False},
                    "other-lem": {"docname": "book/other", "countertype": "lemma",
                                  "realtype": "lemma", "nonumber": True}},
        sphinx_exercise_registry={"ex-ch-1": {"type": "exercise-start",
                                              "docname": "notebooks/01_a",
                                              "node": {"ids": ["ex-ch-1"]}}})
    numbers = book_publish.numbered_labels(env)
    assert numbers == {"ch-thm": "Theorem 2.1", "ex-ch-1": "Exercise 2.1"}
    site = book / "_build" / "html"
    [path] = colab.write_colab_notebooks(book, site, None, numbers=numbers,
                                         executed_dir=book / "_build" / "jupyter_execute")
    text = _markdown(nbformat.read(path, as_version=4))
    assert "> **Theorem 2.1 (A bound).**" in text and "[Theorem 2.1](#ch-thm)," in text
    assert "**Exercise 2.1**\n\nCompute it." in text
    assert "**Solution to Exercise 2.1**" in text
    assert pn.myst_leftovers(nbformat.read(path, as_version=4)) == []


def test_a_sphinx_build_publishes_plain_notebooks(book: Path) -> None:
    """End to end: Sphinx with MyST-NB, sphinx-proof, sphinx-exercise, sphinxcontrib-bibtex and
    ``book_publish`` builds the fixture chapter (its stored outputs, nothing executed); the
    downloadable and the Colab notebook carry the page's numbers and no MyST."""
    import shutil

    from sphinx.application import Sphinx

    executed = book / "_build" / "jupyter_execute" / "notebooks" / "01_a.ipynb"
    nb = nbformat.read(executed, as_version=4)
    nb.metadata.pop("jupytext", None)
    nbformat.write(nb, book / "notebooks" / "01_a.ipynb")  # the chapter with its outputs
    (book / "notebooks" / "01_a.md").unlink()
    shutil.rmtree(book / "_build")
    (book / "book" / "intro.md").write_text(
        "# The introduction\n\n```{toctree}\n../notebooks/01_a\nother\n```\n")
    (book / "conf.py").write_text(textwrap.dedent(
        f"""\
        import sys
        sys.path.insert(0, {str(ROOT / "tools")!r})
        extensions = ["myst_nb", "sphinx_proof", "sphinx_exercise", "sphinxcontrib.bibtex",
                      "book_publish"]
        root_doc = "book/intro"
        nb_execution_mode = "off"
        myst_enable_extensions = ["amsmath", "colon_fence", "dollarmath"]
        bibtex_bibfiles = ["book/references.bib"]
        bibtex_reference_style = "author_year"
        exclude_patterns = ["_build"]
        """))
    app = Sphinx(str(book), str(book), str(book / "_build" / "html"),
                 str(book / "_build" / "doctrees"), "html", status=None, warning=None,
                 freshenv=True)
    app.build()
    page = (book / "_build" / "html" / "notebooks" / "01_a.html").read_text()
    assert ">Theorem 1</a>" in page and "Exercise 1</a>" in page  # what the page calls them
    for path in (book / "_build" / "html" / "_sources" / "notebooks" / "01_a.ipynb",
                 book / "_build" / "html" / "colab" / "notebooks" / "01_a.ipynb"):
        published = nbformat.read(path, as_version=4)
        assert pn.myst_leftovers(published) == [], path
        text = _markdown(published)
        assert "> **Theorem 1 (A bound).**" in text and "[Theorem 1](#ch-thm)," in text
        assert "The rate is 0.123 and the count 12,345;" in text
        assert "**Exercise 1**" in text and "<summary><b>Exercise 2</b></summary>" in text
        assert published.cells[0].metadata["tags"][0] == colab.SETUP_TAG


def test_a_role_whose_text_runs_on_to_the_next_line(book: Path) -> None:
    """MyST reads a role across a line break ({doc}`the\\nintroduction <...>`); so does the
    conversion (chapters of several pages link their pages so)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "See {doc}`the\nintroduction <../book/intro>` and `code` then {doc}`the other\n"
        "page <../book/other>`.\n\nNext paragraph.")])
    out = pn.plain_notebook(nb, colab.read_book(book), "notebooks/01_a", {})
    text = _markdown(out)
    # without a site URL a page is named in italics (with one, linked)
    assert "See *the\nintroduction* and `code` then *the other\npage*." in text, text
    assert pn.myst_leftovers(out) == [], text
