"""One notation, kept: no page gives a symbol of the introduction's table another meaning.

The introduction (book/intro.md, section "Notation") fixes one meaning per symbol. A chapter's
own notation tables (Markdown tables whose header has a "meaning" column, in notebooks/*.md and
book/*.md) may list

* symbols the introduction does not define (the chapter's own), freely;
* in a two-column table (symbol | meaning), a symbol of the introduction only in a row whose
  meaning starts with "as in the introduction" or says what "the book writes" instead (a paper's
  symbol that the chapter translates and does not use);
* in a translation table (paper symbol | meaning | book symbol), a symbol of the introduction
  where the book column names the book's symbol that replaces it; a row whose book column is
  "—" (or only a remark in parentheses) keeps the paper's symbol in the chapter, so it must not
  be a symbol of the introduction with another meaning.

A row "agrees" with the introduction when its meaning shares a content word with the
introduction's meaning of that symbol (generic words such as "number" or "function" aside).

Symbols are compared as the TeX of each item of a cell's ``$…$`` (items split at top-level
commas and semicolons, the part before ``=``, ``\\in``, ``\\le``, ``:``, ``(`` kept, spaces and
``\\rm``/``\\mathrm`` dropped), so ``$W_Q,W_K\\in\\mathbb R^{d\\times d}$`` names ``W_Q`` and
``W_K``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INTRO = ROOT / "book" / "intro.md"

_HEAD_STOP = re.compile(r"=|\\in\b|\\le\b|\\ge\b|\\leq\b|\\geq\b|:|\\colon|\(|<|>|\\sim\b")


def _split_top(text: str) -> list[str]:
    """Split at commas/semicolons outside braces."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch in ",;" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _norm(sym: str) -> str:
    s = re.sub(r"\\(mathrm|rm|text|operatorname)\s*", "", sym)
    s = re.sub(r"\\(,|;|!|quad|\s)", "", s)
    s = s.replace("{", "").replace("}", "").replace(" ", "")
    return s.strip(".")


def symbols(cell: str) -> set[str]:
    """The symbols a table cell names (see the module docstring)."""
    found: set[str] = set()
    for math in re.findall(r"\$([^$]+)\$", cell):
        for item in _split_top(math):
            head = _HEAD_STOP.split(item, maxsplit=1)[0]
            s = _norm(head)
            if s and s not in {"\\dots", "\\ldots", "…", "\\cdots"}:
                found.add(s)
    return found


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table outside code fences: (header cells, body rows of cells)."""
    out: list[tuple[list[str], list[list[str]]]] = []
    lines = text.splitlines()
    fence = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            mark = m.group(1)[0] * 3
            if fence is None:
                fence = mark
            elif line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
                fence = None
            i += 1
            continue
        if (fence is None and line.startswith("|") and i + 1 < len(lines)
                and re.match(r"^\|\s*:?-{3,}", lines[i + 1])):
            header = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.append((header, rows))
            continue
        i += 1
    return out


def _cells(line: str) -> list[str]:
    # split at | not inside $…$ (|x| and \lvert in math) and not escaped
    cells, cur, in_math = [], "", False
    body = line.strip()[1:]
    if body.endswith("|"):
        body = body[:-1]
    prev = ""
    for ch in body:
        if ch == "$" and prev != "\\":
            in_math = not in_math
        if ch == "|" and not in_math and prev != "\\":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
        prev = ch
    cells.append(cur.strip())
    return cells


def intro_symbols() -> dict[str, str]:
    text = INTRO.read_text()
    section = text[text.index("## Notation"):]
    section = section[: section.index("\n## ", 5)]
    (header, rows), = tables(section)
    assert header[:2] == ["symbol", "meaning"], header
    return {s: row[1] for row in rows for s in symbols(row[0])}


def _pages() -> list[Path]:
    return sorted([*(ROOT / "notebooks").glob("*.md"),
                   *(p for p in (ROOT / "book").glob("*.md") if p != INTRO)])


_GENERIC = {"number", "numbers", "function", "functions", "size", "value", "values", "bound",
            "bounds", "constant", "matrix", "matrices", "their", "with", "from", "that", "this",
            "each", "which", "over", "into", "of", "the", "and", "for", "book", "here", "paper",
            "chapter", "code", "same", "also", "other", "used", "where", "when", "only"}


def _words(text: str) -> set[str]:
    text = re.sub(r"\$[^$]*\$|\{[a-z:]+\}`[^`]*`|`[^`]*`", " ", text.lower())
    return {w.rstrip("s") for w in re.findall(r"[a-z]{4,}", text)} - _GENERIC


def _agrees(meaning: str, book_meaning: str) -> bool:
    """Whether a page's meaning of a symbol shares a content word with the introduction's."""
    return bool(_words(meaning) & _words(book_meaning))


def notation_problems(path: Path, book: dict[str, str]) -> list[str]:
    """The rows of ``path``'s notation tables that give a symbol of the introduction another
    meaning (see the module docstring)."""
    problems = []
    for header, rows in tables(path.read_text()):
        if len(header) < 2 or "meaning" not in header[1].lower():
            continue
        translation = len(header) >= 3 and "book" in header[2].lower()
        for row in rows:
            if len(row) < 2:
                continue
            meaning = row[1]
            if (meaning.lower().startswith("as in the introduction")
                    or "the book writes" in meaning.lower()):
                continue
            if (translation and len(row) >= 3 and symbols(row[2])
                    and not row[2].lstrip().startswith(("—", "–", "-", "("))):
                continue  # a paper symbol and the book's symbol that replaces it
            bad = [s for s in sorted(symbols(row[0]) & book.keys())
                   if not _agrees(meaning, book[s])]
            problems.extend(
                f"{path.relative_to(ROOT)}: ${s}$ means {meaning[:60]!r} here; the "
                f"introduction's ${s}$ is {book[s][:60]!r}" for s in bad)
    return problems


def test_the_symbol_parser() -> None:
    assert symbols(r"$W_Q,W_K\in\mathbb R^{d\times d}$, $w_O$") == {"W_Q", "W_K", "w_O"}
    assert symbols(r"$L=\log(\max(d,d_m)Nd_s)$") == {"L"}
    assert symbols(r"$d_{\rm h}$") == symbols(r"$d_h$") == {"d_h"}
    assert symbols(r"$H$, $L$") == {"H", "L"}
    assert symbols("no math") == set()


def test_the_introduction_defines_the_core_symbols() -> None:
    book = intro_symbols()
    for s in ("n", "m", "T", "d", "\\kappa", "\\xi_1", "\\pi", "\\alpha", "c_D", "\\tau_K"):
        assert s in book, s


def test_a_clash_is_found_and_a_translation_is_not(tmp_path) -> None:
    book = intro_symbols()
    page = tmp_path / "x.md"
    page.write_text("| here (paper) | meaning | book |\n|---|---|---|\n"
                    "| $N$ | number of examples | $n$ |\n"
                    "| $L=\\log N$ | a log factor | — |\n"
                    "| $d$ | token dimension | $d$ |\n\n"
                    "| symbol | meaning |\n|---|---|\n| $\\kappa$ | Edelman's constant |\n"
                    "| $m$ | as in the introduction |\n| $\\gamma_j$ | a weight |\n"
                    "| $n$, $m$ | sample size; number of Monte Carlo draws |\n"
                    "| $N$ | number of training examples |\n")
    found = _problems_at(page, book)
    assert len(found) == 3, found
    assert "$L$" in found[0] and "$\\kappa$" in found[1] and "$N$" in found[2]


def _problems_at(page: Path, book: dict[str, str]) -> list[str]:
    global ROOT
    saved = ROOT
    ROOT = page.parent
    try:
        return notation_problems(page, book)
    finally:
        ROOT = saved


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_no_page_redefines_a_symbol_of_the_introduction(page: Path) -> None:
    problems = notation_problems(page, intro_symbols())
    assert not problems, "\n".join(problems)
