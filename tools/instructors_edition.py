"""``make instructors``: the instructors' edition, kept off the public site.

It reads the key and the course plan in ``instructors/`` (``grading.yml``: points and a rubric
per exercise, the exam set; ``course.yml``: the 13-week schedule and what each chapter's summary
shows), the built book (``_build/html/``: every exercise's and statement's number as the book
shows it, and the rendered solutions) and the executed chapters (``_build/jupyter_execute/``:
figures and glued numbers), and writes ``_build/instructors/``:

- ``index.html``: the contents and the grading key (points and rubric per exercise, by number);
- ``solutions.html``: the worked solution of every exercise, as the book renders it, with its
  points and rubric;
- ``exam.html``: the exam set, each exercise's statement with its number and points;
- ``schedule.html``: the 13 weeks, lectures and homework by exercise number;
- ``summary-<chapter>.html``: one A4 page per chapter: key statements by number and title, the
  chapter's main figure and its result, whose numbers are the executed chapter's glued values.

Checks (any failure exits non-zero): every exercise of every chapter has points and a rubric
that adds up, and nothing else has; every exercise is assigned once (homework, in class or the
exam); every exercise has a solution in the chapter and in the built page; every statement,
figure and glued number a summary names is found; with ``--check-print`` (as ``make
instructors`` runs it), each chapter's page prints on one A4 page in headless Chromium. Without
the built book it stops with exit status 2 (run ``make book`` first).
"""

from __future__ import annotations

import argparse
import base64
import html
import posixpath
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import nbformat
import student_edition as se  # tools/student_edition.py
import yaml

ROOT = Path(__file__).resolve().parent.parent
_EXERCISE = re.compile(r"^(`{3,}|:{3,})\{(exercise|exercise-start)\}")
_SOLUTION_LABEL = re.compile(r"^(?:`{3,}|:{3,})\{(?:solution|solution-start)\}\s*(\S+)")
_GLUE = re.compile(r"\{glue:([A-Za-z0-9_]+)(?::([^{}]+))?\}")
WEEKS = 13

# ---------------------------------------------------------------------------------------------
# Sources: the exercises and solutions of the chapters, the key and the course plan


def exercise_labels(text: str, name: str = "chapter") -> list[str]:
    """The labels of the exercises of a chapter's MyST source, in order. ``ValueError`` naming
    the line for an exercise without a label (it could not be graded by name)."""
    lines = text.splitlines()
    labels = []
    for i, line in enumerate(lines):
        if not _EXERCISE.match(line):
            continue
        label = None
        for opt in lines[i + 1:]:
            m = re.match(r"^:label:\s*(\S+)", opt)
            if m:
                label = m.group(1)
                break
            if not opt.startswith(":"):
                break
        if label is None:
            raise ValueError(f"{name}, line {i + 1}: an exercise without a :label:")
        labels.append(label)
    return labels


def solution_blocks(text: str) -> dict[str, str]:
    """``{exercise label: the solution's MyST source}`` of a chapter (both solution forms)."""
    _, removed = se.strip_solutions(text)
    out = {}
    for block in removed:
        m = _SOLUTION_LABEL.match(block)
        if m is None:
            raise ValueError(f"a solution without the label of its exercise: {block[:60]!r}")
        out[m.group(1)] = block
    return out


def chapter_text(pages: list[Path]) -> str:
    """The MyST source of a chapter: its pages in reading order, one after the other."""
    return "\n\n".join(p.read_text(encoding="utf-8") for p in pages)


def chapter_exercises(root: Path) -> dict[str, list[str]]:
    """``{chapter: its exercise labels}`` for every chapter of the table of contents (named by
    its first page's stem; the exercises of all its pages, in reading order)."""
    return {stem: exercise_labels(chapter_text(pages), stem)
            for stem, pages in se.chapter_pages(root).items()}


def _docname(root: Path, page: Path) -> str:
    return page.relative_to(root).with_suffix("").as_posix()


def load(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(grading, course)`` read from ``root/instructors``."""
    return tuple(yaml.safe_load((root / "instructors" / f).read_text(encoding="utf-8")) or {}
                 for f in ("grading.yml", "course.yml"))  # type: ignore[return-value]


def check_key(grading: dict[str, Any], course: dict[str, Any],
              exercises: dict[str, list[str]]) -> list[str]:
    """Problems of the key and the plan against the chapters' exercises (empty when sound)."""
    problems: list[str] = []
    known = [lab for labs in exercises.values() for lab in labs]
    for lab, n in Counter(known).items():
        if n > 1:
            problems.append(f"exercise {lab} is labelled {n} times in the chapters")
    keyed = grading.get("exercises") or {}
    for lab in known:
        if lab not in keyed:
            problems.append(f"grading.yml: exercise {lab} has no points")
    for lab, entry in keyed.items():
        if lab not in known:
            problems.append(f"grading.yml: points for {lab}, which no chapter has as an exercise")
            continue
        points = (entry or {}).get("points")
        if not isinstance(points, int) or isinstance(points, bool) or points <= 0:
            problems.append(f"grading.yml: {lab}: points must be a positive whole number, "
                            f"not {points!r}")
            continue
        rubric = entry.get("rubric") or []
        ok = [r for r in rubric if isinstance(r, list) and len(r) == 2 and isinstance(r[0], int)
              and r[0] > 0 and isinstance(r[1], str) and r[1].strip()]
        if not rubric or len(ok) != len(rubric):
            problems.append(f"grading.yml: {lab}: every rubric line must be [points, what earns "
                            "them]")
        elif sum(r[0] for r in rubric) != points:
            problems.append(f"grading.yml: {lab}: the rubric adds up to "
                            f"{sum(r[0] for r in rubric)} points, not {points}")
    exam = grading.get("exam") or []
    weeks = course.get("weeks") or []
    if len(weeks) != WEEKS:
        problems.append(f"course.yml: {len(weeks)} weeks, not {WEEKS}")
    assigned = list(exam)
    for w in weeks:
        if not str(w.get("lecture", "")).strip():
            problems.append("course.yml: a week without its lecture")
        assigned += list(w.get("homework") or []) + list(w.get("in_class") or [])
    for lab, n in Counter(assigned).items():
        if lab not in known:
            problems.append(f"course.yml or grading.yml: {lab} is assigned but is not an "
                            "exercise")
        elif n > 1:
            problems.append(f"course.yml or grading.yml: {lab} is assigned {n} times")
    for lab in known:
        if lab not in assigned:
            problems.append(f"course.yml: exercise {lab} is assigned neither as homework, "
                            "in class nor in the exam")
    summaries = course.get("summaries") or {}
    for chapter in exercises:
        s = summaries.get(chapter)
        if not s:
            problems.append(f"course.yml: no summary for {chapter}")
            continue
        for field in ("statements", "figure", "result"):
            if not s.get(field):
                problems.append(f"course.yml: the summary of {chapter} has no {field}")
    for chapter in summaries:
        if chapter not in exercises:
            problems.append(f"course.yml: a summary for {chapter}, which is not a chapter")
    return problems


def missing_solutions(text: str, name: str = "chapter") -> list[str]:
    """Exercises of a chapter source without a solution, and solutions without an exercise."""
    labels = exercise_labels(text, name)
    sols = solution_blocks(text)
    return ([f"{name}: exercise {lab} has no solution" for lab in labels if lab not in sols]
            + [f"{name}: a solution to {lab}, which is not an exercise of the chapter"
               for lab in sols if lab not in labels])


# ---------------------------------------------------------------------------------------------
# The built book: numbers, titles and rendered solutions


def _soup(page: str) -> Any:
    from bs4 import BeautifulSoup

    return BeautifulSoup(page, "html.parser")


def numbered(page: str) -> dict[str, tuple[str, str]]:
    """``{label: (number, title as HTML)}`` of every numbered exercise and statement of a built
    page, e.g. ``{"ex-found-1": ("Exercise 1.1", ""), "found-thm-dudley": ("Theorem 1.7",
    "Dudley's ...")}``: the numbers as the book shows them."""
    out = {}
    for div in _soup(page).select("div.admonition[id]"):
        title = div.find("p", class_="admonition-title")
        cap = title.find("span", class_="caption-number") if title else None
        if cap is None:
            continue
        number = cap.get_text().strip()
        cap.extract()
        rest = "".join(str(c) for c in title.contents).strip()
        if rest.startswith("(") and rest.endswith(")"):
            rest = rest[1:-1].strip()
        out[div["id"]] = (number, rest)
    return out


def _relink(node: Any, page_path: str) -> None:
    """Make the links and images of a fragment of ``page_path`` (relative to the site's root)
    point into the built site from ``_build/instructors/``."""
    base = posixpath.dirname(page_path)
    for tag, attr in (("a", "href"), ("img", "src")):
        for el in node.find_all(tag):
            url = el.get(attr)
            if not url or re.match(r"^[a-z]+:", url):
                continue
            if url.startswith("#"):
                url = posixpath.basename(page_path) + url
            el[attr] = posixpath.join("..", "html", posixpath.normpath(posixpath.join(base, url)))


def rendered(page: str, page_path: str) -> tuple[dict[str, str], dict[str, str]]:
    """``(exercises, solutions)``: ``{exercise label: HTML}`` of every exercise statement and
    every solution of a built page, with links into the built site."""
    soup = _soup(page)
    exercises, solutions = {}, {}
    for div in soup.select("div.exercise[id]"):
        body = div.find("section") or div
        _relink(body, page_path)
        exercises[div["id"]] = body.decode_contents()
    for div in soup.select("div.solution"):
        title = div.find("p", class_="admonition-title")
        link = title.find("a") if title else None
        if link is None or not str(link.get("href", "")).startswith("#"):
            continue
        body = div.find("section") or div
        _relink(body, page_path)
        solutions[str(link["href"])[1:]] = body.decode_contents()
    return exercises, solutions


def chapter_title(page: str) -> str:
    h1 = _soup(page).find("h1")
    if h1 is None:
        return ""
    for a in h1.find_all("a", class_="headerlink"):
        a.extract()
    return " ".join(h1.get_text().split())


# ---------------------------------------------------------------------------------------------
# The executed chapters: glued values and the main figure


def glue_values(nb: nbformat.NotebookNode, glue_json: Path | None = None) -> dict[str, dict]:
    """``{name: mime bundle}`` of every value the executed chapter glued: those myst-nb moved to
    ``<chapter>.glue.json`` and those still in a cell's outputs."""
    import json

    out: dict[str, dict] = {}
    if glue_json is not None and glue_json.exists():
        for name, o in json.loads(glue_json.read_text(encoding="utf-8")).items():
            out[name] = dict(o.get("data", {}))
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            meta = o.get("metadata", {}).get("scrapbook", {})
            if "name" in meta:
                prefix = meta.get("mime_prefix", "")
                out[meta["name"]] = {k[len(prefix):] if prefix and k.startswith(prefix) else k: v
                                     for k, v in o.get("data", {}).items()}
    return out


def glue_text(bundle: dict, fmt: str | None = None) -> str:
    """A glued value as the book prints it with ``{glue:text}`` (``fmt``: a format spec) or, for
    glued Markdown, ``{glue:md}``."""
    for key in bundle:
        if key.endswith("text/markdown"):
            return str(bundle[key]).strip()
    plain = "".join(bundle.get("text/plain", "")).strip()
    m = re.fullmatch(r"np\.\w+\((.*)\)", plain)
    if m:
        plain = m.group(1)
    if len(plain) >= 2 and plain[0] == plain[-1] and plain[0] in "'\"":
        plain = plain[1:-1]
    if fmt:
        return format(float(plain), fmt)
    return plain


def fill(template: str, values: dict[str, dict], chapter: str) -> str:
    """``template`` with every ``{glue:NAME}`` / ``{glue:NAME:FORMAT}`` replaced by the chapter's
    glued value; ``KeyError`` naming the chapter and the value when one was not glued."""
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise KeyError(f"{chapter}: no glued value {m.group(1)!r} in the executed chapter")
        return glue_text(values[m.group(1)], m.group(2))

    return _GLUE.sub(sub, template)


def glue_names(template: str) -> list[str]:
    return [m.group(1) for m in _GLUE.finditer(template)]


def figure_uri(nb: nbformat.NotebookNode, marker: str, chapter: str) -> str:
    """The figure shown by the first code cell whose source contains ``marker``, as a data URI
    (the book draws SVG; PNG is taken as it is)."""
    for cell in nb.cells:
        if cell.cell_type != "code" or marker not in cell.source:
            continue
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "image/svg+xml" in data:
                svg = "".join(data["image/svg+xml"]).encode("utf-8")
                return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
            if "image/png" in data:
                return "data:image/png;base64," + "".join(data["image/png"]).replace("\n", "")
    raise ValueError(f"{chapter}: no executed cell containing {marker!r} shows a figure")


# ---------------------------------------------------------------------------------------------
# Pages

_CSS = """
@page { size: A4; margin: 14mm 14mm 12mm; }
body { font: 10.5pt/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 46em; margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.45em; margin: 0 0 .4em; } h2 { font-size: 1.2em; margin: 1.2em 0 .4em; }
h3 { font-size: 1.05em; margin: 1em 0 .3em; }
table { border-collapse: collapse; width: 100%; margin: .5em 0; }
th, td { border-bottom: 1px solid #ccc; padding: .25em .4em; text-align: left;
         vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.solution { border-left: 3px solid #4a7; padding: .1em .8em; margin: .5em 0 1.5em; }
.exercise { border-left: 3px solid #47a; padding: .1em .8em; margin: .5em 0 1em; }
.solution, .exercise, .summary { overflow-x: auto; }
.rubric { color: #444; font-size: .95em; }
pre { white-space: pre-wrap; font-size: .85em; background: #f6f6f6; padding: .4em; }
img { max-width: 100%; height: auto; }
.summary img { display: block; max-height: 100mm; margin: .4em auto; }
.summary { font-size: 10pt; } .summary li { margin: .1em 0; }
@media print { body { margin: 0; max-width: none; } a { color: inherit; }
  .exercise, .solution { break-inside: avoid-page; } h2 { break-after: avoid; } }
"""

_MATHJAX = r"""<script>
window.MathJax = { tex: { inlineMath: [["$", "$"], ["\\(", "\\)"]],
  macros: { R: "\\mathbb{R}", E: "\\mathbb{E}", Rad: "\\mathfrak{R}" } } };
</script>
<script defer src="../html/_static/mathjax/tex-chtml.js"></script>"""


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n{_MATHJAX}\n"
            f"</head><body>\n{body}\n</body></html>\n")


def markdown(text: str) -> str:
    """Markdown with ``$...$`` math to HTML (the math left for MathJax)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    def math(content: str, options: dict) -> str:
        esc = html.escape(content)
        if options.get("display_mode"):
            return f'<div class="math">\\[{esc}\\]</div>'
        return f'<span class="math">\\({esc}\\)</span>'

    md = MarkdownIt("commonmark").use(dollarmath_plugin, renderer=math)
    return md.render(text)


class Book:
    """What the edition reads from the built book, chapter by chapter."""

    def __init__(self, root: Path, html_dir: Path, executed: Path) -> None:
        self.root, self.html_dir, self.executed = root, html_dir, executed
        #: ``{chapter: the docnames of its pages}``, in reading order
        self.pages = {stem: [_docname(root, p) for p in pages]
                      for stem, pages in se.chapter_pages(root).items()}
        self.numbers: dict[str, tuple[str, str]] = {}
        self.exercise_html: dict[str, str] = {}
        self.solution_html: dict[str, str] = {}
        self.titles: dict[str, str] = {}
        self.problems: list[str] = []
        for stem, docs in self.pages.items():
            for doc in docs:
                rel = f"{doc}.html"
                path = html_dir / rel
                if not path.exists():
                    self.problems.append(f"{stem}: no built page {path} (make book)")
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
                self.numbers.update(numbered(text))
                ex, sol = rendered(text, rel)
                self.exercise_html.update(ex)
                self.solution_html.update(sol)
                if doc == docs[0]:
                    self.titles[stem] = chapter_title(text)

    def executed_pages(self, chapter: str) -> list[Path]:
        """The executed notebooks of the chapter's pages that exist, in reading order."""
        paths = [self.executed / f"{doc}.ipynb" for doc in self.pages.get(chapter, [chapter])]
        return [p for p in paths if p.exists()]

    def number(self, label: str) -> str:
        return self.numbers.get(label, ("", ""))[0] or label


def _points_cell(entry: dict[str, Any]) -> str:
    return f'<td class="num">{entry["points"]}</td>'


def _rubric(entry: dict[str, Any]) -> str:
    items = "".join(f"<li>{p} {'point' if p == 1 else 'points'}: {html.escape(w)}</li>"
                    for p, w in entry["rubric"])
    return f'<ul class="rubric">{items}</ul>'


def index_page(book: Book, grading: dict[str, Any], exercises: dict[str, list[str]]) -> str:
    keyed = grading["exercises"]
    total = sum(e["points"] for e in keyed.values())
    rows = []
    for chapter, labels in exercises.items():
        rows.append(f'<tr><th colspan="3">{html.escape(book.titles.get(chapter, chapter))}'
                    "</th></tr>")
        for lab in labels:
            e = keyed[lab]
            rows.append(f"<tr><td>{html.escape(book.number(lab))}</td>{_points_cell(e)}"
                        f"<td>{_rubric(e)}</td></tr>")
    summaries = "".join(
        f'<li><a href="summary-{c}.html">{html.escape(book.titles.get(c, c))}</a></li>'
        for c in exercises)
    body = f"""<h1>Instructors' edition</h1>
<p>Not for students: this folder holds the worked solutions and the grading key.</p>
<ul>
<li><a href="solutions.html">Worked solutions</a>, every exercise by its number, with its
points and rubric</li>
<li><a href="exam.html">The exam set</a></li>
<li><a href="schedule.html">The 13-week schedule</a>: lectures and homework</li>
<li>One page per chapter, to project or hand out:<ul>{summaries}</ul></li>
</ul>
<h2>Grading key</h2>
<p>{len(keyed)} exercises, {total} points in all. A coding part earns its points only when the
cell runs as given and its assertion holds.</p>
<table><thead><tr><th>exercise</th><th class="num">points</th><th>what earns them</th></tr>
</thead><tbody>{"".join(rows)}</tbody></table>"""
    return page("Instructors' edition", body)


def solutions_page(book: Book, grading: dict[str, Any],
                   exercises: dict[str, list[str]]) -> str:
    parts = ["<h1>Worked solutions</h1>"]
    for chapter, labels in exercises.items():
        parts.append(f"<h2>{html.escape(book.titles.get(chapter, chapter))}</h2>")
        for lab in labels:
            e = grading["exercises"][lab]
            parts.append(f'<h3 id="{lab}">{html.escape(book.number(lab))} '
                         f'({e["points"]} points)</h3>')
            parts.append(f'<div class="exercise">{book.exercise_html.get(lab, "")}</div>')
            parts.append(f'<div class="solution">{book.solution_html.get(lab, "")}</div>')
            parts.append(_rubric(e))
    return page("Worked solutions", "\n".join(parts))


def exam_page(book: Book, grading: dict[str, Any]) -> str:
    exam = grading.get("exam") or []
    total = sum(grading["exercises"][lab]["points"] for lab in exam)
    parts = [f"<h1>Exam</h1><p>{len(exam)} exercises, {total} points. Pen and paper; answers "
             'and the key: <a href="solutions.html">worked solutions</a>.</p>',
             '<table><thead><tr><th>exercise</th><th class="num">points</th></tr></thead>'
             "<tbody>"]
    parts += [f'<tr><td><a href="solutions.html#{lab}">{html.escape(book.number(lab))}</a></td>'
              f'{_points_cell(grading["exercises"][lab])}</tr>' for lab in exam]
    parts.append("</tbody></table>")
    for lab in exam:
        parts.append(f"<h3>{html.escape(book.number(lab))} "
                     f'({grading["exercises"][lab]["points"]} points)</h3>'
                     f'<div class="exercise">{book.exercise_html.get(lab, "")}</div>')
    return page("Exam", "\n".join(parts))


def schedule_page(book: Book, grading: dict[str, Any], course: dict[str, Any]) -> str:
    rows = []
    for i, w in enumerate(course["weeks"], start=1):
        def names(labs: list[str]) -> str:
            return ", ".join(f'<a href="solutions.html#{lab}">{html.escape(book.number(lab))}'
                             "</a>" for lab in labs)

        hw = list(w.get("homework") or [])
        pts = sum(grading["exercises"][lab]["points"] for lab in hw)
        ic = list(w.get("in_class") or [])
        rows.append(f'<tr><td class="num">{i}</td><td>{html.escape(w["lecture"])}'
                    + (f"<br>in class: {names(ic)}" if ic else "") + "</td>"
                    f"<td>{names(hw) or 'none'}</td>"
                    f'<td class="num">{pts or ""}</td></tr>')
    exam = grading.get("exam") or []
    body = f"""<h1>Schedule: 13 weeks</h1>
<p>One 90-minute lecture a week (the plan on the book's page for instructors). Homework is set
after the lecture and due at the next one; the exam ({len(exam)} exercises, see
<a href="exam.html">the exam set</a>) follows week 13.</p>
<table><thead><tr><th class="num">week</th><th>lecture</th><th>homework</th>
<th class="num">points</th></tr></thead><tbody>{"".join(rows)}</tbody></table>"""
    return page("Schedule", body)


def summary_page(book: Book, chapter: str, spec: dict[str, Any]) -> str:
    """One printable page: key statements, the main figure, the result in glued numbers."""
    paths = book.executed_pages(chapter)
    if not paths:
        raise ValueError(f"{chapter}: no executed notebook of its pages in {book.executed} "
                         "(make book)")
    # the glued values and the main figure may be on any page of the chapter
    notebooks = [nbformat.read(p, as_version=4) for p in paths]
    values: dict[str, dict] = {}
    for nb, path in zip(notebooks, paths, strict=True):
        values.update(glue_values(nb, path.with_name(f"{path.stem}.glue.json")))
    result = markdown(fill(spec["result"], values, chapter))
    uri = ""
    for nb in notebooks:
        try:
            uri = figure_uri(nb, spec["figure"], chapter)
            break
        except ValueError:
            continue
    if not uri:
        raise ValueError(f"{chapter}: no executed cell containing {spec['figure']!r} shows a "
                         "figure")
    items = []
    for lab in spec["statements"]:
        if lab not in book.numbers:
            raise ValueError(f"{chapter}: no numbered statement {lab!r} in the built page")
        number, title = book.numbers[lab]
        items.append(f"<li><b>{html.escape(number)}</b>" + (f" {title}" if title else "")
                     + "</li>")
    title = book.titles.get(chapter, chapter)
    body = f"""<div class="summary"><h1>{html.escape(title)}</h1>
<h2>Key statements</h2><ul>{"".join(items)}</ul>
<h2>The figure</h2><img alt="the chapter's main figure" src="{uri}">
<h2>The result</h2>{result}</div>"""
    return page(title, body)


def write_edition(root: Path, html_dir: Path, executed: Path, out: Path) -> list[str]:
    """Write the edition to ``out``; return the problems found (empty when it is complete)."""
    grading, course = load(root)
    exercises = chapter_exercises(root)
    problems = check_key(grading, course, exercises)
    for stem, sources in se.chapter_pages(root).items():
        problems += missing_solutions(chapter_text(sources), stem)
    if problems:
        return problems
    book = Book(root, html_dir, executed)
    problems += book.problems
    for labels in exercises.values():
        for lab in labels:
            if lab not in book.numbers:
                problems.append(f"exercise {lab}: no number in the built book")
            if lab not in book.solution_html:
                problems.append(f"exercise {lab}: no rendered solution in the built book")
    if problems:
        return problems
    out.mkdir(parents=True, exist_ok=True)
    pages = {"index.html": index_page(book, grading, exercises),
             "solutions.html": solutions_page(book, grading, exercises),
             "exam.html": exam_page(book, grading),
             "schedule.html": schedule_page(book, grading, course)}
    for chapter, spec in course["summaries"].items():
        try:
            pages[f"summary-{chapter}.html"] = summary_page(book, chapter, spec)
        except (KeyError, ValueError) as exc:
            problems.append(str(exc).strip("'\""))
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    return problems


def printed_pages(out: Path, names: list[str]) -> dict[str, int]:
    """``{page: number of A4 pages}`` when headless Chromium prints each page of ``out`` named
    (served beside the built book, ``out.parent/html``, whose MathJax they load)."""
    import check_rendering as cr  # tools/check_rendering.py (Selenium, Chromium)

    pages = {}
    driver = cr.make_driver(1280, 900)
    try:
        with cr.serve(out.parent) as (base, _failed):
            for name in names:
                driver.get(f"{base}/{out.name}/{name}")
                driver.execute_async_script(
                    cr._WAIT_MATHJAX_JS.replace("arguments_timeout", "60000"))
                pdf = base64.b64decode(driver.execute_cdp_cmd(
                    "Page.printToPDF", {"printBackground": True, "preferCSSPageSize": True}
                )["data"])
                pages[name] = len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf))
    finally:
        driver.quit()
    return pages


def check_print(out: Path) -> list[str]:
    """Problems: a chapter's page that does not print on one A4 page."""
    names = sorted(p.name for p in out.glob("summary-*.html"))
    problems = []
    for name, n in printed_pages(out, names).items():
        print(f"instructors' edition: {name} prints on {n} A4 page{'s' if n != 1 else ''}")
        if n != 1:
            problems.append(f"{name} prints on {n} A4 pages, not one")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--executed", type=Path, default=ROOT / "_build" / "jupyter_execute")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "instructors")
    parser.add_argument("--check-print", action="store_true",
                        help="print each chapter's page with headless Chromium: one A4 page")
    args = parser.parse_args(argv)
    for d in (args.html, args.executed):
        if not d.is_dir():
            print(f"instructors' edition: no {d}: run `make book` first", file=sys.stderr)
            return 2
    problems = write_edition(args.root, args.html, args.executed, args.out)
    if args.check_print and not problems:
        problems += check_print(args.out)
    return se.report("instructors' edition", problems, f"{args.out} (index.html)")


if __name__ == "__main__":
    sys.exit(main())
