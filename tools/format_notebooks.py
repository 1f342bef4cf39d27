"""Format the chapters' code cells to the book's column: ``ruff format`` at 75 characters.

The chapters are jupytext MyST files (``notebooks/*.md``). Only the bodies of ``{code-cell}``
blocks change: each is formatted by ``ruff format`` (the version pinned in the environment) at
:data:`LINE_LENGTH` characters, its comment lines longer than that are wrapped, and IPython magics
(``%matplotlib inline``) are kept as they are. The prose, the cells' options (``:tags:``, a
``---`` block) and everything else stay byte for byte.

    python tools/format_notebooks.py notebooks/01_foundations.md   # rewrite in place
    python tools/format_notebooks.py --check notebooks/*.md        # exit 1 if any would change

``--check`` also lists every code line still longer than the limit (long strings, which
``ruff format`` never splits); they fail the check too. A cell whose code does not parse is left
as it is and reported (exit 1).

Why 75: measured in the built book (tools/check_rendering.py, headless Chromium at 1,280 px):
a code cell's box holds 76 characters of the theme's monospace font (8.6 px each); a line of 77
scrolls by 9 px, of 79 by 26 px. One character is kept in reserve.

Every cell's syntax tree is checked to be the same before and after (comments and layout are
all that change); a cell that would change is left as it is and reported.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINE_LENGTH = 75
#: how many characters narrower a cell inside an exercise or solution box is (measured: a
#: 75-character line there scrolled by 59 px, about 7 characters)
BOX_INDENT = 8
_OPEN = re.compile(r"^(`{3,})\{code-cell\}")
_MAGIC = re.compile(r"^(\s*)([%!].*)$")
_MAGIC_MARK = "# __format_notebooks_magic__ "


def formatted_pages(root: Path = ROOT) -> tuple[str, ...]:
    """Every page that must stay formatted: the notebook pages of ``_toc.yml`` in reading order
    (chapters' first pages and their section pages), then any other ``notebooks/*.md`` (a page
    not listed yet), as paths relative to ``root``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import colab  # tools/colab.py

    listed = [f"{d}.md" for d in colab.toc_docnames(root / "_toc.yml")
              if d.startswith("notebooks/") and (root / f"{d}.md").exists()]
    rest = sorted(p.relative_to(root).as_posix() for p in (root / "notebooks").glob("*.md"))
    return tuple(dict.fromkeys([*listed, *rest]))


#: the pages tests/test_publish_format.py checks stay formatted (every notebooks/*.md page)
FORMATTED = formatted_pages()


@dataclass
class Report:
    path: Path
    changed_cells: int = 0
    long_lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _ruff() -> str:
    exe = Path(sys.executable).parent / "ruff"
    found = str(exe) if exe.exists() else shutil.which("ruff")
    if not found:
        raise SystemExit("format_notebooks: ruff not found (it is in requirements.txt)")
    return found


#: a comment line that starts a paragraph of its own: an assert's tag (the test
#: tests/test_notebook_asserts.py reads ``# mutation:`` / ``# sanity:`` on the comment lines
#: right above an assert) or a numbered step
_PARAGRAPH = re.compile(r"^(mutation|sanity|conclusion):|^\d+\.\s")


def _paragraphs(texts: list[str]) -> list[str]:
    """Comment texts split into paragraphs, each joined into one line: a tag line
    (:data:`_PARAGRAPH`) starts a new paragraph, every other line continues the current one."""
    out: list[list[str]] = []
    for text in texts:
        if not out or _PARAGRAPH.match(text.strip()):
            out.append([])
        out[-1].append(text.strip())
    return [" ".join(para) for para in out]


def wrap_comments(code: str, width: int = LINE_LENGTH) -> str:
    """Comment lines (lines that are only a comment) longer than ``width`` wrapped at the same
    indentation. A run of consecutive comment lines with one too long is reflowed paragraph by
    paragraph, so that wrapping never leaves a word or two alone on a line; a tag line
    (``# mutation:``, ``# sanity:``, ``# conclusion:``) or a numbered step starts a paragraph
    of its own, so that a tag is never merged into the comment before it and stays on the
    comment lines right above its assert."""
    lines = code.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)# ?(.*)$", lines[i])
        if m is None or lines[i].strip().startswith("#!"):
            out.append(lines[i])
            i += 1
            continue
        indent, j = m.group(1), i + 1
        texts = [m.group(2)]
        while j < len(lines):
            m2 = re.match(r"^(\s*)# ?(.*)$", lines[j])
            if m2 is None or m2.group(1) != indent or not m2.group(2).strip():
                break
            texts.append(m2.group(2))
            j += 1
        if all(len(ln) <= width for ln in lines[i:j]):
            out += lines[i:j]
        else:
            for para in _paragraphs(texts):
                out += textwrap.wrap(para, width=width, initial_indent=f"{indent}# ",
                                     subsequent_indent=f"{indent}# ", break_long_words=False,
                                     break_on_hyphens=False)
        i = j
    return "\n".join(out)


_STRING_LINE = re.compile(r"""^(?P<head>\s*(?:\w+=|\+ |)?)(?P<pre>[rRbBfFuU]{0,2})(?P<q>["'])"""
                          r"""(?P<body>.*)(?P=q)(?P<tail>[\s,)]*)$""")


def _split_point(body: str, limit: int, fstring: bool) -> int | None:
    """Index just after the last space of ``body`` before ``limit`` that lies outside any
    f-string replacement field and after an even run of backslashes; None if there is none."""
    depth, best, i = 0, None, 0
    while i < len(body) and i < limit:
        c = body[i]
        if fstring and c in "{}" and body[i:i + 2] in ("{{", "}}") and depth == 0:
            i += 2
            continue
        if fstring and c == "{":
            depth += 1
        elif fstring and c == "}":
            depth = max(0, depth - 1)
        elif c == "\\":
            i += 2
            continue
        elif c == " " and depth == 0 and i > 10:
            best = i + 1
        i += 1
    return best


def split_long_strings(code: str, width: int = LINE_LENGTH) -> str:
    """Lines longer than ``width`` that are one string literal (an argument, ``key=...`` or
    ``+ ...``) split at a space into implicitly concatenated literals (the caller checks that
    the code's syntax tree did not change)."""
    out: list[str] = []
    for line in code.split("\n"):
        while len(line) > width:
            m = _STRING_LINE.match(line)
            if m is None or '"""' in line or "\'\'\'" in line:
                break
            head, pre, q, body, tail = m.group("head", "pre", "q", "body", "tail")
            room = width - len(head) - len(pre) - 2
            k = _split_point(body, room, "f" in pre.lower())
            if k is None:
                break
            out.append(f"{head}{pre}{q}{body[:k]}{q}")
            indent = " " * (len(head) - len(head.lstrip()))
            line = f"{indent}{pre}{q}{body[k:]}{q}{tail}"
        out.append(line)
    return "\n".join(out)


def _ruff_format(code: str, width: int, ruff: str) -> str:
    res = subprocess.run(
        [ruff, "format", "--line-length", str(width), "--stdin-filename", "cell.py",
         "--isolated", "-"], input=code, capture_output=True, text=True)
    if res.returncode != 0:
        raise ValueError(res.stderr.strip().splitlines()[-1] if res.stderr.strip() else
                         "ruff format failed")
    return res.stdout


def format_code(code: str, width: int = LINE_LENGTH, ruff: str | None = None) -> str:
    """``code`` (one cell) formatted by ``ruff format`` at ``width``, long comment lines wrapped,
    long string literals split; magics kept. Raises ``ValueError`` when ruff cannot parse it."""
    if width < 40:
        raise ValueError(f"width: at least 40 characters, got {width}")
    ruff = ruff or _ruff()
    hidden = "\n".join(_MAGIC.sub(lambda m: m.group(1) + _MAGIC_MARK + m.group(2), ln)
                       for ln in code.split("\n"))
    body = wrap_comments(_ruff_format(hidden, width, ruff), width)
    split = split_long_strings(body, width)
    if split != body:
        try:
            again = wrap_comments(_ruff_format(split, width, ruff), width)
            if ast.dump(ast.parse(again)) == ast.dump(ast.parse(hidden)):
                body = again
        except (ValueError, SyntaxError):
            pass  # the split changed the meaning or the syntax: keep the long line
    if ast.dump(ast.parse(body)) != ast.dump(ast.parse(hidden)):  # never change the program
        raise ValueError("formatting would change the cell's syntax tree")
    body = body.rstrip("\n")
    return "\n".join(ln.replace(_MAGIC_MARK, "", 1) for ln in body.split("\n"))


_BOX = re.compile(r"^(`{3,}|:{3,})\{(exercise-start|exercise-end|solution-start|solution-end)\}")


def in_box(lines: list[str], index: int) -> bool:
    """Whether line ``index`` lies between an ``{exercise-start}`` or ``{solution-start}`` and
    its end directive (gated exercises and solutions, shown in a box)."""
    inside = False
    for line in lines[:index]:
        m = _BOX.match(line)
        if m:
            inside = m.group(2).endswith("-start")
    return inside


def _cells(lines: list[str]) -> list[tuple[int, int, int]]:
    """``(first code line, end fence line)`` of each code cell, with the option lines skipped:
    ``(open, body_start, close)`` indices."""
    cells = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        fence = m.group(1)
        j = i + 1
        if j < len(lines) and lines[j].strip() == "---":  # a YAML options block
            j += 1
            while j < len(lines) and lines[j].strip() != "---":
                j += 1
            j += 1
        while j < len(lines) and re.match(r"^:[\w-]+:", lines[j]):
            j += 1
        if j > i + 1:  # the blank line between the options and the code stays
            while j < len(lines) and not lines[j].strip():
                j += 1
        k = j
        while k < len(lines) and lines[k].rstrip() != fence:
            k += 1
        if k == len(lines):
            raise ValueError(f"line {i + 1}: the code cell is never closed")
        cells.append((i, j, k))
        i = k + 1
    return cells


def format_text(text: str, width: int = LINE_LENGTH, report: Report | None = None) -> str:
    """The chapter ``text`` with every code cell formatted."""
    ruff = _ruff()
    lines = text.split("\n")
    out: list[str] = []
    last = 0
    for start, body, close in _cells(lines):
        out += lines[last:body]
        code = "\n".join(lines[body:close])
        # a cell inside an exercise or a solution sits in a box: the column is narrower
        w = width - BOX_INDENT if in_box(lines, start) else width
        try:
            new = format_code(code, w, ruff) if code.strip() else code
        except ValueError as exc:
            new = code
            if report is not None:
                report.errors.append(f"line {start + 1}: not formatted: {exc}")
        if report is not None:
            report.changed_cells += new != code
            report.long_lines += [f"line {start + 1}: cell line {n + 1} has {len(ln)} characters"
                                  f" (at most {w} here)"
                                  for n, ln in enumerate(new.split("\n")) if len(ln) > w]
        out += new.split("\n") if new else []
        last = close
    out += lines[last:]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="chapters (default: FORMATTED)")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a chapter would change or has a long line")
    parser.add_argument("--line-length", type=int, default=LINE_LENGTH)
    args = parser.parse_args(argv)
    paths = args.paths or [ROOT / p for p in FORMATTED]
    bad = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        rep = Report(path)
        new = format_text(text, args.line_length, rep)
        if args.check:
            if new != text:
                print(f"{path}: {rep.changed_cells} code cells would be reformatted "
                      f"(run tools/format_notebooks.py {path})")
            problems = (new != text) or rep.long_lines or rep.errors
        else:
            if new != text:
                path.write_text(new, encoding="utf-8")
            print(f"{path}: {rep.changed_cells} code cells reformatted")
            problems = bool(rep.long_lines or rep.errors)
        for msg in rep.errors + rep.long_lines:
            print(f"  {path}: {msg}")
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
