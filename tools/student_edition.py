"""``make student``: the book without its solutions, for a course's students.

Every chapter's exercises keep their text and starter code; every solution is removed: the
directive form (```` ```{solution} label ```` ... ```` ``` ````) and the gated form
(```` ```{solution-start} label ```` ... ```` ```{solution-end} ````, which may hold code cells).
The edition is written to ``_build/student/``:

- ``src/``: a copy of the book's sources (``_config.yml``, ``_toc.yml``, ``book/``, ``tools/``)
  with each chapter as ``notebooks/<chapter>.ipynb``: the chapter with its solutions removed,
  carrying the outputs of the instructor's build (``make book`` executed every chapter into
  ``_build/jupyter_execute/``): every figure, table and glued number of a cell that stays is
  there; the set-up cell (``tools/colab.py``) comes first. The edition is built into ``html/``
  without executing anything; a glue warning (a glued number or figure whose cell is missing)
  fails it;
- ``notebooks/<chapter>.ipynb``: the same notebooks, to download: a student reruns them.

The page for instructors is left out (its table of times becomes ``book/times.md``, under the
same label), and the prose of every page and chapter says nothing of instructors or of solutions
folded on the page (:data:`REWRITES`; what is left of either is an error).

Without the executed notebooks (``--executed`` missing: run ``make book`` first) it stops with
exit status 2; ``--unexecuted`` builds the old way (sources without outputs, no ``-W``).

Checks (any failure exits non-zero, so ``make test`` fails):

- no solution directive remains in the student sources, and no line of a removed solution
  (ignoring short and structural lines, and lines the exercise itself shares with its solution,
  such as starter code) appears in the built HTML;
- no code cell outside a solution uses a name that only a solution defines (the student
  notebook would fail there).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^(`{3,}|:{3,})\{(solution|solution-start|solution-end)\}")
_CODE = re.compile(r"^(`{3,})\{code-cell\}")
NOTE = "% (solution removed in the student edition)"


def _block_end(lines: list[str], i: int, fence: str) -> int:
    """Index of the line that closes the directive opened at ``lines[i]`` with ``fence``."""
    for j in range(i + 1, len(lines)):
        s = lines[j].strip()
        if s and set(s) == {fence[0]} and len(s) >= len(fence):
            return j
    raise ValueError(f"line {i + 1}: the directive opened by {fence!r} is never closed")


def strip_solutions(text: str) -> tuple[str, list[str]]:
    """``(student text, removed blocks)``: every solution directive and gated solution removed."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    removed: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        fence, kind = m.groups()
        if kind == "solution-end":
            raise ValueError(f"line {i + 1}: {{solution-end}} without {{solution-start}}")
        if kind == "solution":
            end = _block_end(lines, i, fence)
        else:  # gated: through the closing fence of the {solution-end} directive
            start = i
            j = i + 1
            while j < len(lines):
                m2 = _FENCE.match(lines[j])
                if m2 and m2.group(2) == "solution-end":
                    break
                if m2 and m2.group(2) == "solution-start":
                    raise ValueError(f"line {j + 1}: nested {{solution-start}} (line {start + 1})")
                j += 1
            if j == len(lines):
                raise ValueError(f"line {i + 1}: {{solution-start}} without {{solution-end}}")
            end = _block_end(lines, j, _FENCE.match(lines[j]).group(1))  # type: ignore[union-attr]
        removed.append("".join(lines[i:end + 1]))
        out.append(NOTE + "\n")
        i = end + 1
    return "".join(out), removed


def leaked_lines(removed: list[str], text: str, allowed: str = "") -> list[str]:
    """Substantive lines of removed solutions that appear in ``text``, except those that also
    stand in ``allowed`` (the student sources: a line that the exercise's own text or starter
    code shares with its solution is not a leak)."""
    leaks = []
    for block in removed:
        for line in block.splitlines():
            s = line.strip()
            if len(s) < 30 or s.startswith((":", "```", "%", "#")) or s in leaks:
                continue
            if s in text and s not in allowed:
                leaks.append(s)
    return leaks


#: What the student edition says differently: nothing of the page for instructors (left out; its
#: table of times becomes a page of its own) and nothing of solutions folded on the page. Applied
#: to the prose of the book's pages and chapters, never to code (a code cell must match the
#: executed one).
REWRITES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^- \*\*An instructor\*\*:[^\n]*\n(?:  [^\n]*\n)*", re.M), ""),
    (re.compile(r"\s*\(with folded solutions\)"), ""),
    (re.compile(r";\s+the\s+solutions\s+are\s+folded\s+beneath\s+them"), ""),
    (re.compile(r"\bexercises with folded solutions\b"), "exercises"),
    (re.compile(r"\binstructors'(\s+)table of times"), r"table of times"),
    (re.compile(r"\binstructors'(\s+)page"), r"page\1of times"),
    (re.compile(r"\{doc\}`instructors`"), "{doc}`times`"),
]
#: Left in the student edition's prose after the rewrites, any of these fails it.
MENTIONS = re.compile(r"folded\s+solution|solutions?\s+(?:are\s+)?folded|instructors'|"
                      r"\{doc\}`instructors`|for\s+instructors", re.I)
TIMES = "(instructors-times)=\n## How long each notebook takes\n"


def _prose_and_code(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into ``(is_code, piece)``: code cells and the prose between them."""
    lines = text.splitlines(keepends=True)
    pieces: list[tuple[bool, str]] = []
    i = start = 0
    while i < len(lines):
        m = _CODE.match(lines[i])
        if m is None:
            i += 1
            continue
        end = _block_end(lines, i, m.group(1))
        pieces += [(False, "".join(lines[start:i])), (True, "".join(lines[i:end + 1]))]
        i = start = end + 1
    pieces.append((False, "".join(lines[start:])))
    return pieces


def rewrite_prose(text: str) -> str:
    """``text`` with :data:`REWRITES` applied to its prose (code cells untouched)."""
    out = []
    for is_code, piece in _prose_and_code(text):
        if not is_code:
            for pattern, repl in REWRITES:
                piece = pattern.sub(repl, piece)
        out.append(piece)
    return "".join(out)


def mentions(text: str) -> list[str]:
    """Lines of prose (not code) that speak of folded solutions or of the instructors."""
    return [ln.strip() for is_code, piece in _prose_and_code(text) if not is_code
            for ln in piece.splitlines() if MENTIONS.search(ln)]


def times_page(instructors: str) -> str:
    """The instructors' page's section of times as a page of its own (same label)."""
    i = instructors.find(TIMES)
    if i < 0:
        raise ValueError(f"book/instructors.md: no section starting {TIMES!r}")
    body = instructors[i + len(TIMES):]
    j = body.find("\n## ")
    body = (body if j < 0 else body[:j + 1]).replace("This section is", "This page is", 1)
    return "(instructors-times)=\n# How long each notebook takes\n" + body


def without_instructors(src: Path) -> list[str]:
    """Leave the page for instructors out of the student sources in ``src``: its table of times
    becomes ``book/times.md``, the table of contents lists that page instead, and the other pages
    say nothing of instructors or folded solutions. Returns the problems found."""
    page = src / "book" / "instructors.md"
    problems: list[str] = []
    toc = (src / "_toc.yml").read_text(encoding="utf-8")
    if page.exists():
        (src / "book" / "times.md").write_text(times_page(page.read_text(encoding="utf-8")),
                                               encoding="utf-8")
        page.unlink()
        toc = (toc.replace("file: book/instructors", "file: book/times")
               .replace("For instructors and contributors", "Running and contributing"))
        (src / "_toc.yml").write_text(toc, encoding="utf-8")
    if "instructors" in re.sub(r"#.*", "", toc).lower():
        problems.append("_toc.yml: the student edition still lists a page for instructors")
    for md in sorted((src / "book").glob("*.md")):
        text = rewrite_prose(md.read_text(encoding="utf-8"))
        md.write_text(text, encoding="utf-8")
        problems += [f"book/{md.name}: {ln[:100]!r}" for ln in mentions(text)]
    return problems


def _code_cells(text: str) -> list[str]:
    """The body of every code cell of ``text``: no fences, no option lines."""
    return ["".join(ln for ln in piece.splitlines(keepends=True)[1:-1]
                    if not re.match(r"^:\w[\w-]*:", ln))
            for is_code, piece in _prose_and_code(text) if is_code]


def _names(code: str) -> tuple[set[str], set[str]]:
    """(names bound, names loaded) by a code cell (IPython magics and shell lines dropped)."""
    src = "\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return set(), set()
    bound: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store | ast.Del) else loaded).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, loaded


def names_only_in_solutions(removed: list[str], student_text: str) -> list[str]:
    """Names that the student notebook's cells use but only a removed solution defines."""
    sol_bound: set[str] = set()
    for block in removed:
        for cell in _code_cells(block):
            sol_bound |= _names(cell)[0]
    bound: set[str] = set()
    loaded: set[str] = set()
    for cell in _code_cells(student_text):
        b, ld = _names(cell)
        bound |= b
        loaded |= ld
    return sorted((loaded & sol_bound) - bound)


def chapter_pages(root: Path) -> dict[str, list[Path]]:
    """``{chapter: the source of each of its pages}`` in reading order, for every chapter of
    ``_toc.yml`` whose first page is a notebook (``notebooks/``): the chapter is named by its
    first page's stem, its pages are that page then its ``sections:`` (executed notebooks
    ``notebooks/*.md`` or plain MyST pages such as ``book/appendix_*.md``)."""
    import colab  # tools/colab.py

    out: dict[str, list[Path]] = {}
    for first, pages in colab.toc_chapters(root / "_toc.yml").items():
        if first.startswith("notebooks/") and (root / f"{first}.md").exists():
            out[Path(first).name] = [root / f"{d}.md" for d in pages
                                     if (root / f"{d}.md").exists()]
    return out


def chapters(root: Path) -> list[Path]:
    """Every executed page of every chapter (``notebooks/*.md``, first pages and section pages),
    in reading order: each becomes a student notebook with its solutions removed."""
    return [p for pages in chapter_pages(root).values() for p in pages
            if p.parent == root / "notebooks"]


def plain_pages(root: Path) -> list[Path]:
    """The chapters' pages that are plain MyST (an appendix under ``book/``): their solutions
    are removed too, in the copied sources."""
    return [p for pages in chapter_pages(root).values() for p in pages
            if p.parent != root / "notebooks"]


def attach_outputs(student: nbformat.NotebookNode, executed: nbformat.NotebookNode) -> int:
    """Give every code cell of ``student`` the outputs of the same cell in ``executed`` (the
    instructor's executed notebook; matched by source, in order: the student cells are the
    executed ones less the solutions). Returns the number of cells matched; ``ValueError``
    naming the cell when one is not found."""
    ex_cells = [c for c in executed.cells if c.cell_type == "code"]
    j = 0
    matched = 0
    for cell in student.cells:
        if cell.cell_type != "code":
            continue
        src = cell.source.strip()
        k = j
        while k < len(ex_cells) and ex_cells[k].source.strip() != src:
            k += 1
        if k == len(ex_cells):
            first = src.splitlines()[0] if src else "(empty)"
            raise ValueError(f"executed: no executed cell matches the student cell {first!r} "
                             "(is the executed notebook older than the chapter?)")
        cell.outputs = ex_cells[k].get("outputs", [])
        cell.execution_count = ex_cells[k].get("execution_count")
        matched += 1
        j = k + 1
    return matched


def attach_glue(student: nbformat.NotebookNode, glue_json: Path) -> int:
    """Put back the glued values that myst-nb took out of the executed notebook.

    myst-nb moves every ``glue(..., display=False)`` output out of the cell into
    ``<chapter>.glue.json`` beside the executed notebook, so the notebook alone cannot fill the
    chapter's ``{glue}`` roles. Those values are appended, as the hidden glue outputs they were
    (their mime prefix restored), to the first code cell: glue is looked up by name in the
    whole document, and hidden outputs show nothing. Displayed glue outputs stay in their own
    cells (myst-nb leaves them there). Returns the number of values attached."""
    if not glue_json.exists():
        return 0
    data = json.loads(glue_json.read_text(encoding="utf-8"))
    hidden = []
    for key, out in data.items():
        meta = out.get("metadata", {}).get("scrapbook", {})
        prefix = meta.get("mime_prefix", "")
        if not prefix:
            continue  # displayed: still in its cell's outputs
        hidden.append(nbformat.from_dict({
            "output_type": "display_data",
            "metadata": {"scrapbook": {"name": key, "mime_prefix": prefix}},
            "data": {prefix + mime: v for mime, v in out.get("data", {}).items()},
        }))
    code = [c for c in student.cells if c.cell_type == "code"]
    if hidden and not code:
        raise ValueError(f"{glue_json.name}: glued values but no code cell to carry them")
    if hidden:
        code[0].outputs = list(code[0].get("outputs", [])) + hidden
    return len(hidden)


def with_setup(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with the set-up cell of the Colab notebooks first (``tools/colab.py``)."""
    import colab  # tools/colab.py

    return colab.with_setup_cell(nb, colab.repository_source(), colab.repository_constraints())


def write_edition(root: Path, out: Path, executed: Path | None = None
                  ) -> tuple[list[str], Path]:
    """Write the student sources and notebooks; return the problems found and the source dir.

    With ``executed`` (the directory of the instructor's executed notebooks, mirroring the
    sources), each chapter becomes an ``.ipynb`` with that build's outputs and the set-up cell;
    without it, a MyST source without outputs (and notebooks with the set-up cell)."""
    src = out / "src"
    if out.exists():
        shutil.rmtree(out)
    for name in ("_config.yml", "_toc.yml"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, src / name)
    for d in ("book", "tools"):
        shutil.copytree(root / d, src / d, ignore=shutil.ignore_patterns("__pycache__"))
    config = (src / "_config.yml").read_text()
    if "execute_notebooks: force" not in config:
        raise ValueError("_config.yml: expected 'execute_notebooks: force' to switch off")
    (src / "_config.yml").write_text(
        config.replace("execute_notebooks: force", 'execute_notebooks: "off"')
        .replace("title: ", "title: (Student edition) ", 1))
    problems: list[str] = without_instructors(src)
    for page in plain_pages(root):
        student, removed = strip_solutions(page.read_text(encoding="utf-8"))
        if removed:
            (src / page.relative_to(root)).write_text(rewrite_prose(student), encoding="utf-8")
            print(f"student edition: {page.name}: {len(removed)} solutions removed")
    (out / "notebooks").mkdir(parents=True)
    for chapter in chapters(root):
        text = chapter.read_text(encoding="utf-8")
        student, removed = strip_solutions(text)
        student = rewrite_prose(student)
        problems += [f"{chapter.name}: {ln[:100]!r}" for ln in mentions(student)]
        if re.search(r"^(`{3,}|:{3,})\{solution", student, re.M):
            problems.append(f"{chapter.name}: a solution directive is left in")
        for name in names_only_in_solutions(removed, student):
            problems.append(f"{chapter.name}: a cell uses {name!r}, which only a solution defines")
        nb = jupytext.reads(student, fmt="md:myst")
        (src / "notebooks").mkdir(parents=True, exist_ok=True)
        note = ""
        if executed is None:
            (src / "notebooks" / chapter.name).write_text(student, encoding="utf-8")
        else:
            ex_path = executed / "notebooks" / f"{chapter.stem}.ipynb"
            if not ex_path.exists():
                problems.append(f"{chapter.name}: no executed notebook {ex_path} (make book)")
                continue
            try:
                n = attach_outputs(nb, nbformat.read(ex_path, as_version=4))
            except ValueError as exc:
                problems.append(f"{chapter.name}: {exc}")
                continue
            g = attach_glue(nb, ex_path.with_name(f"{chapter.stem}.glue.json"))
            note = f", outputs of {n} cells and {g} glued values from {ex_path.name}"
        nb = with_setup(nb)
        if executed is not None:
            nbformat.write(nb, src / "notebooks" / f"{chapter.stem}.ipynb")
        nbformat.write(nb, out / "notebooks" / f"{chapter.stem}.ipynb")
        print(f"student edition: {chapter.name}: {len(removed)} solutions removed{note}")
    return problems, src


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student")
    parser.add_argument("--no-build", action="store_true", help="write the sources only")
    parser.add_argument("--executed", type=Path, default=ROOT / "_build" / "jupyter_execute",
                        help="the instructor's executed notebooks (make book writes them)")
    parser.add_argument("--unexecuted", action="store_true",
                        help="build from the sources without outputs (no figures, no glue)")
    args = parser.parse_args(argv)
    executed = None if args.unexecuted else args.executed
    if executed is not None and not executed.is_dir():
        print(f"student edition: no executed notebooks in {executed}: run `make book` first "
              "(or pass --unexecuted)", file=sys.stderr)
        return 2
    problems, src = write_edition(args.root, args.out, executed)
    if not args.no_build:
        jb = Path(sys.executable).parent / "jupyter-book"
        # unexecuted, every {glue} role warns; from executed notebooks a glue warning means a
        # number or figure missing from a page: that fails the edition (other warnings, e.g. a
        # reference to a removed solution, are printed)
        res = subprocess.run([str(jb), "build", str(src), "--all", "-n", "--keep-going",
                              "--path-output", str(args.out)], capture_output=True, text=True)
        if executed is not None:
            glue = [ln.strip() for ln in (res.stdout + res.stderr).splitlines()
                    if "WARNING" in ln and "glue" in ln.lower()]
            problems += [f"a glued value is missing: {g[:200]}" for g in glue[:10]]
        if res.returncode != 0:
            print(res.stdout[-4000:], res.stderr[-4000:], sep="\n")
            problems.append("the student edition does not build (see above)")
        else:
            html = "\n".join(p.read_text(errors="replace")
                             for p in (args.out / "_build" / "html").rglob("*.html"))
            plain = re.sub(r"<[^>]+>", "", html)
            # a line a solution shares with any student source (another chapter's code, an
            # exercise's starter code) is not a leak; only lines found nowhere but a solution
            stripped = {c: strip_solutions(c.read_text(encoding="utf-8"))
                        for c in chapters(args.root) + plain_pages(args.root)}
            every_student_source = "\n".join(st for st, _ in stripped.values())
            for chapter, (_, removed) in stripped.items():
                problems += [f"{chapter.name}: solution text in the built HTML: {leak[:80]!r}"
                             for leak in leaked_lines(removed, plain,
                                                      allowed=every_student_source)
                             if not re.search(r"[$\\{}]", leak)]
    return report("student edition", problems, f"{args.out} (no solution text in it)")


def report(tool: str, problems: list[str], done: str) -> int:
    """Print each problem (standard error) or, when there is none, ``done``; the exit status."""
    for p in problems:
        print(f"{tool}: ERROR:", p, file=sys.stderr)
    if not problems:
        print(f"{tool}: {done}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
