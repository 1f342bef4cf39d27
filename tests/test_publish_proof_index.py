"""The index of statements: numbered as the chapters show them, titles typeset, reading order.

Two tools: ``tools/proof_index.py`` (the site's generated index, titles as plain text) and
``tools/statement_index.py`` (the page ``book/statements.md``). The page is checked on a small
fixture book built with Sphinx (three chapters, an appendix nested under one, statements whose
alphabetical order is not their reading order, a title with math), and, when a built book is
there, on ``_build/html``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import proof_index  # noqa: E402
import statement_index  # noqa: E402


def test_titles_as_plain_text() -> None:
    assert proof_index.plain(" (Maurey's lemma (after Pisier, 1981))") == \
        "Maurey's lemma (after Pisier, 1981)"
    assert proof_index.plain(" (A correct $1/\\sqrt m$ rate)") == "A correct 1/√m rate"
    assert proof_index.plain(" (The class $\\mathcal F_R$ (eq. (3)))") == "The class FR (eq. (3))"
    assert "\\" not in proof_index.plain(" ($\\lVert W\\rVert_{1,1}\\le B$)")


def test_registered_in_the_book_config() -> None:
    config = (ROOT / "_config.yml").read_text()
    assert "proof_index: tools/" in config and "statement_index: tools/" in config
    assert "html_use_index: false" in config
    page = (ROOT / "book" / "statements.md").read_text()
    assert page.count("```{statement-index}") == 1


def test_titles_keep_their_math() -> None:
    assert statement_index.source_title(" (TT, Cor. 4.1.1 ($B$, tokens))") == \
        "TT, Cor. 4.1.1 ($B$, tokens)"
    parts = statement_index.title_nodes(r"Bound ($\lVert W\rVert_{1,1}\le B$) and $x$")
    assert [type(p).__name__ for p in parts] == ["Text", "math", "Text", "math"]
    assert parts[1].astext() == r"\lVert W\rVert_{1,1}\le B" and parts[3].astext() == "x"
    assert [type(p).__name__ for p in statement_index.title_nodes("no math")] == ["Text"]


FIXTURE = {
    "conf.py": """
        import sys
        sys.path.insert(0, {tools!r})
        extensions = ["myst_parser", "sphinx_proof", "statement_index"]
        myst_enable_extensions = ["dollarmath"]
        root_doc = "index"
        exclude_patterns = ["_build"]
        """,
    "index.md": """
        # A small book

        ```{toctree}
        :numbered: 1
        alpha
        beta
        ```

        ```{toctree}
        statements
        ```
        """,
    "alpha.md": """
        # Alpha

        ```{prf:theorem} Zeta comes first
        :label: a-zeta

        Text.
        ```

        ```{prf:lemma} A lemma
        :label: a-lemma

        Text.
        ```

        ```{prf:theorem} Bound ($\\lVert W\\rVert_{1,1}\\le B$)
        :label: a-bound

        Text.
        ```

        ```{prf:definition} Middle
        :label: a-def

        Text.
        ```
        """,
    "beta.md": """
        # Beta

        ```{prf:theorem} Beta's theorem
        :label: b-thm

        Text.
        ```

        ```{toctree}
        appendix
        ```
        """,
    "appendix.md": """
        # Appendix to Beta

        ```{prf:theorem} In the appendix
        :label: b-app

        Text.
        ```
        """,
    "statements.md": """
        # Index of statements

        ```{statement-index}
        ```
        """,
}

EXPECTED = [  # (page, anchor, name) in reading order
    ("alpha.html", "a-zeta", "Theorem 1.1"), ("alpha.html", "a-lemma", "Lemma 1.1"),
    ("alpha.html", "a-bound", "Theorem 1.2"), ("alpha.html", "a-def", "Definition 1.1"),
    ("beta.html", "b-thm", "Theorem 2.1"), ("appendix.html", "b-app", "Theorem 2.2"),
]


def _write(src: Path) -> None:
    for name, text in FIXTURE.items():
        (src / name).write_text(textwrap.dedent(text).format(tools=str(ROOT / "tools"))
                                if name == "conf.py" else textwrap.dedent(text))


def _build(src: Path) -> Path:
    out = src / "_build" / "html"
    res = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-q", "-j", "1",
                          str(src), str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("fixture_book")
    _write(src)
    return _build(src)


def test_fixture_index_is_numbered_in_reading_order(built: Path) -> None:
    assert statement_index.read_index(built, "statements.html") == EXPECTED
    assert statement_index.check_html(built, "statements.html") == []


def test_fixture_index_groups_by_chapter_and_typesets_math(built: Path) -> None:
    text = (built / "statements.html").read_text()
    headings = re.findall(r"<h([23])>([^<]+)<a class=\"headerlink\"", text)
    assert headings == [("2", "1. Alpha"), ("2", "2. Beta"), ("3", "Appendix to Beta")]
    # the math is a MathJax span, not flattened text, and the page loads MathJax
    assert '<span class="math notranslate nohighlight">\\(\\lVert W\\rVert_{1,1}\\le B\\)' \
        in text
    script = re.compile(r'<script[^>]*src="[^"]*mathjax[^"]*"', re.I)
    assert script.search(text)
    assert not script.search((built / "beta.html").read_text())  # a page without math: none
    assert "<strong>Theorem 1.1</strong> (Zeta comes first)</a>" in text


def test_check_html_finds_a_wrong_number(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "html"
    shutil.copytree(built, copy)
    page = copy / "statements.html"
    text = page.read_text()
    page.write_text(text.replace("<strong>Theorem 1.2</strong>", "<strong>Theorem 1.3</strong>"))
    assert statement_index.check_html(copy, "statements.html") == [
        "alpha.html#a-bound: the index says 'Theorem 1.3', the page 'Theorem 1.2'"]


def test_a_rebuild_after_a_chapter_changed_renumbers_the_index(tmp_path: Path) -> None:
    _write(tmp_path)
    _build(tmp_path)
    alpha = tmp_path / "alpha.md"
    alpha.write_text(alpha.read_text().replace("# Alpha\n", "# Alpha\n\n```{prf:theorem} New\n"
                                               ":label: a-new\n\nText.\n```\n", 1))
    out = _build(tmp_path)  # incremental: statements.md itself did not change
    found = statement_index.read_index(out, "statements.html")
    assert found[:3] == [("alpha.html", "a-new", "Theorem 1.1"),
                         ("alpha.html", "a-zeta", "Theorem 1.2"),
                         ("alpha.html", "a-lemma", "Lemma 1.1")]
    assert statement_index.check_html(out, "statements.html") == []


_DIRECTIVE = re.compile(r"^(?:`{3,}|:{3,})\{prf:(\w+)\}(.*)$")


def numbers_from_sources(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """``(page, label, "Theorem 4.4")`` of every statement, derived from the sources alone:
    chapters in the order of ``_toc.yml``, numbered on through the numbered parts; within a
    chapter each kind counted on its own, in page order, a nested page (the appendix) after its
    chapter's own statements (the numbering sphinx-proof takes from Sphinx's figure numbers)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    out, chapter_no = [], 0
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            numbered = bool(part.get("numbered"))
            chapter_no += numbered
            counts: dict[str, int] = {}
            for doc in [chapter["file"], *(s["file"] for s in chapter.get("sections", []))]:
                lines = (root / f"{doc}.md").read_text().splitlines()
                for i, line in enumerate(lines):
                    m = _DIRECTIVE.match(line)
                    if not m or m.group(1) == "proof":
                        continue
                    kind = m.group(1)
                    label = next(ln.split(":label:")[1].strip() for ln in lines[i + 1:i + 6]
                                 if ln.startswith(":label:"))
                    counts[kind] = counts.get(kind, 0) + 1
                    number = f"{chapter_no}.{counts[kind]}" if numbered else str(counts[kind])
                    out.append((f"{doc}.html", label, f"{kind.title()} {number}"))
    return out


def test_numbers_from_sources() -> None:
    found = numbers_from_sources()
    assert len(found) == len({label for _, label, _ in found}) > 50  # 96 at the time of writing
    assert found[0][2] == "Definition 1.1" and found[0][0] == "notebooks/01_foundations.html"
    names = [name for _, _, name in found]
    assert "Theorem 2.1" in names and "Theorem 7.1" in names


def test_the_built_book_agrees_with_its_chapters_and_its_sources() -> None:
    html_dir = ROOT / "_build" / "html"
    if not (html_dir / "book" / "statements.html").exists():
        pytest.skip("no built book in _build/html")
    found = statement_index.read_index(html_dir)
    assert statement_index.check_html(html_dir) == []  # the number at each statement
    assert found == numbers_from_sources()  # every statement, in reading order
