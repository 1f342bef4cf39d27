"""Chapters as notebooks that read outside Jupyter Book: MyST Markdown turned into plain Markdown.

The chapters' Markdown cells are MyST: roles (``{glue:text}`key:.3f```, ``{cite:t}`key```,
``{prf:ref}`label```), directive fences (```` ```{prf:theorem} Title ````, ``:::{dropdown}``),
targets (``(label)=``) and labelled equations (``$$ ... $$ (label)``). Jupyter Book renders them;
Colab, plain Jupyter and VS Code show them as they are. :func:`plain_notebook` rewrites every
Markdown cell of a notebook into plain Markdown (code cells are not touched):

- glued values are substituted: ``{glue:text}`` / ``{glue}`` by the glued ``text/plain`` with
  its format spec applied as MyST-NB applies it, ``{glue:md}`` by the glued Markdown (itself made
  plain); the ``{glue:figure}`` / ``{glue}`` directives by a sentence naming the code cell that
  draws the figure. The values are those of the executed notebook of the build
  (:func:`glue_values`);
- directives become headed paragraphs: theorems, lemmas, definitions, remarks and admonitions
  a block quote headed by their kind (numbered as on the pages when the build gives the numbers)
  and title, proofs a block quote headed *Proof* and ended by ∎, exercises and solutions a bold
  heading (*Exercise 2*, *Solution to Exercise 2*), ``math`` a display equation,
  ``bibliography`` the list of the works the chapter cites, ``list-table`` a Markdown table;
  what the page folds (a dropdown, class ``dropdown``) is folded in an HTML ``<details>`` block
  when it lies in one cell (the gated exercise and solution forms span cells: not folded);
- citations become author-year text from ``references.bib`` (``{cite:t}``: Author [Year];
  ``{cite:p}``: [Author, Year]); cross-references (``{ref}``, ``{numref}``, ``{prf:ref}``,
  ``{doc}``) become the referenced title, a link to its anchor in the same notebook, or to the
  published page when the book has a public address;
- ``(label)=`` targets become HTML anchors, MyST comments (``% ...``) are dropped, and the label
  of ``$$ ... $$ (label)`` is dropped.

:func:`myst_leftovers` lists whatever MyST syntax remains in a notebook's Markdown (the test of
the published notebooks uses it).
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

GLUE_PREFIX = "application/papermill.record/"

#: ``{name}`text``` roles: the name, then the text between single backticks
ROLE = re.compile(r"\{([A-Za-z][\w:.+-]*)\}`([^`]*)`")
#: a directive's opening fence: indentation, fence (3+ backticks or colons), name, argument
OPEN = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:.+-]+)\}[ \t]*(?P<arg>.*)$")
#: a plain code fence (not a directive): its contents are left as they are
CODE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?!.*\{)")
TARGET = re.compile(r"^[ \t]*\(([^()\s]+)\)=[ \t]*$")
OPTION = re.compile(r"^[ \t]*:([\w-]+):[ \t]*(.*)$")
LABELLED_MATH = re.compile(r"\$\$[ \t]*\(([^()\s]+)\)[ \t]*$")
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)

#: leftovers a plain notebook must not contain (:func:`myst_leftovers`)
LEFTOVERS = (
    ("role", re.compile(r"\{[A-Za-z][\w:.+-]*\}`")),
    ("directive fence", re.compile(r"^[ \t>]*(`{3,}|:{3,})\{[\w:.+-]+\}", re.M)),
    ("glue", re.compile(r"\{glue")),
    ("target", re.compile(r"^[ \t]*\([^()\s]+\)=[ \t]*$", re.M)),
)

KINDS = {
    "prf:theorem": "Theorem", "prf:lemma": "Lemma", "prf:corollary": "Corollary",
    "prf:proposition": "Proposition", "prf:definition": "Definition", "prf:remark": "Remark",
    "prf:conjecture": "Conjecture", "prf:example": "Example", "prf:property": "Property",
    "prf:observation": "Observation", "prf:axiom": "Axiom", "prf:criterion": "Criterion",
    "prf:assumption": "Assumption", "prf:algorithm": "Algorithm", "prf:proof": "Proof",
    "note": "Note", "warning": "Warning", "tip": "Tip", "important": "Important",
    "hint": "Hint", "caution": "Caution", "attention": "Attention", "danger": "Danger",
    "error": "Error", "seealso": "See also", "admonition": "", "dropdown": "",
}


class PlainError(ValueError):
    """MyST that cannot be made plain (an unknown glue key, a reference to no label)."""


@dataclass
class Book:
    """What the conversion needs to know about the whole book.

    ``labels``: label -> (docname, text shown for a reference to it); ``titles``: docname ->
    title; ``bib``: key -> (author-year names, year, full entry); ``url``: the published site
    (``https://owner.github.io/repo/``) or None for a local build; ``numbers``: label -> the
    numbered name the book's pages give a statement or exercise (``"Theorem 2.3"``, from the
    Sphinx build: :func:`book_publish.numbered_labels`), when known.
    """

    labels: dict[str, tuple[str, str]] = field(default_factory=dict)
    numbers: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    bib: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    url: str | None = None


# ----------------------------------------------------------------------------- glue values


def glue_values(executed: nbformat.NotebookNode | Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{key: mime bundle}`` of every value glued in an executed notebook (MyST-NB's ``glue``
    outputs: ``application/papermill.record/<mime>`` from a kernel, plain ``<mime>`` in the
    build's ``jupyter_execute/`` copy, as their ``scrapbook.mime_prefix`` says)."""
    out: dict[str, dict[str, Any]] = {}
    for cell in executed["cells"]:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            meta = output.get("metadata", {}).get("scrapbook", {})
            if "name" not in meta:
                continue
            # a kernel's output has the papermill prefix; MyST-NB's executed copy
            # (jupyter_execute/) drops it and says so: "mime_prefix": ""
            prefix = str(meta.get("mime_prefix", GLUE_PREFIX))
            bundle = {k[len(prefix):]: v for k, v in data.items() if k.startswith(prefix)}
            out[str(meta["name"])] = bundle
    return out


def glue_json_values(path: Path) -> dict[str, dict[str, Any]]:
    """The values MyST-NB wrote to ``<docname>.glue.json`` beside the executed notebook: every
    glued value, including those glued with ``display=False``, which it removes from the
    notebook's outputs (``{key: {"data": {mime: value}, ...}}``); {} when there is no file."""
    if not Path(path).exists():
        return {}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {str(k): dict(v.get("data", {})) for k, v in data.items()}


def executed_glue(executed: Path) -> dict[str, dict[str, Any]]:
    """Every value glued in the build's executed notebook ``executed``
    (``jupyter_execute/<docname>.ipynb``): its displayed glue outputs and its ``.glue.json``."""
    values = glue_json_values(Path(executed).with_suffix(".glue.json"))
    if Path(executed).exists():
        values.update(glue_values(nbformat.read(executed, as_version=4)))
    return values


def format_plain_text(text: str, fmt_spec: str) -> str:
    """A glued ``text/plain`` value with its format spec, exactly as MyST-NB's ``{glue:text}``
    formats it (``myst_nb.core.variables.format_plain_text``)."""
    try:
        value: Any = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if fmt_spec == "":
        return str(value)
    type_char = fmt_spec[-1]
    if type_char == "s":
        value = str(value)
    elif type_char in "bcdoxX":
        value = int(value)
    elif type_char in "eEfFgGn%":
        value = float(value)
    return format(value, fmt_spec)


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


# ----------------------------------------------------------------------------- the book


def _latex_to_text(value: str) -> str:
    """A BibTeX field as text: accents decoded (latexcodec, a pybtex dependency), braces
    dropped; math (``$...$``) is kept as it is, for the notebook's MathJax."""
    import codecs

    import latexcodec  # noqa: F401  (registers the "ulatex" codec)

    parts = re.split(r"(\$[^$]*\$)", value)
    return "".join(p if p.startswith("$") else str(codecs.decode(p, "ulatex"))  # type: ignore[arg-type]
                   .replace("{", "").replace("}", "") for p in parts)


def _full_name(person: Any) -> str:
    return _latex_to_text(" ".join([*person.first_names, *person.middle_names,
                                    *person.prelast_names, *person.last_names]))


def read_bib(path: Path) -> dict[str, tuple[str, str, str]]:
    """``{key: (names for an author-year citation, year, the full entry as text)}``."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        lasts = [_latex_to_text(" ".join(p.prelast_names + p.last_names)) for p in people]
        if len(lasts) >= 3:
            names = f"{lasts[0]} et al."
        elif lasts:
            names = " and ".join(lasts)
        else:
            names = _latex_to_text(entry.fields.get("organization", key))
        year = str(entry.fields.get("year", "n.d."))
        full_names = ", ".join(_full_name(p) for p in people) or names
        title = _latex_to_text(entry.fields.get("title", ""))
        venue = next((_latex_to_text(entry.fields[f]) for f in
                      ("journal", "booktitle", "publisher", "school", "institution", "howpublished")
                      if f in entry.fields), "")
        full = f"{full_names} ({year}). {title}." + (f" *{venue}*." if venue else "")
        out[key] = (names, year, full)
    return out


def _heading_after(lines: list[str], i: int) -> str | None:
    for line in lines[i + 1:]:
        if not line.strip() or TARGET.match(line):
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        return m.group(1) if m else None
    return None


def scan_labels(docname: str, text: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """The title of one document's MyST source and ``{label: (docname, text)}`` of its targets:
    ``(label)=`` before a heading (the heading), labelled statements (kind and title), exercises
    (numbered in the document's order) and labelled equations."""
    lines = text.splitlines()
    title = next((ln[2:].strip() for ln in lines if ln.startswith("# ")), docname)
    labels: dict[str, tuple[str, str]] = {}
    counts: dict[str, int] = {}
    for i, line in enumerate(lines):
        target = TARGET.match(line)
        if target:
            labels[target.group(1)] = (docname, _heading_after(lines, i) or target.group(1))
            continue
        math = LABELLED_MATH.search(line)
        if math:
            labels[math.group(1)] = (docname, f"equation ({math.group(1)})")
        opened = OPEN.match(line)
        if not opened:
            continue
        name, arg = opened.group("name"), opened.group("arg").strip()
        options = {}
        for nxt in lines[i + 1:]:
            m = OPTION.match(nxt)
            if not m:
                break
            options[m.group(1)] = m.group(2).strip()
        if name in ("exercise", "exercise-start"):
            counts["exercise"] = counts.get("exercise", 0) + 1
            shown = f"Exercise {counts['exercise']}"
        elif name in KINDS and name != "prf:proof":
            kind = KINDS[name] or arg
            counts[kind] = counts.get(kind, 0) + 1
            shown = f"{kind} ({arg})" if arg and KINDS[name] else (kind or name)
            if not arg and KINDS[name]:
                shown = f"{kind} {counts[kind]}"
        else:
            shown = arg or name
        if "label" in options:
            labels[options["label"]] = (docname, shown)
    return title, labels


def read_book(root: Path, docnames: Iterable[str], bib: Path | None,
              url: str | None = None) -> Book:
    """The labels and titles of every document of the book (its MyST sources under ``root``)
    and the bibliography."""
    book = Book(url=url.rstrip("/") + "/" if url else None)
    for doc in docnames:
        for suffix in (".md", ".ipynb"):
            path = Path(root) / f"{doc}{suffix}"
            if path.exists():
                break
        else:
            continue
        if suffix == ".ipynb":
            nb = nbformat.read(path, as_version=4)
            text = "\n\n".join(_text(c.source) for c in nb.cells if c.cell_type == "markdown")
        else:
            text = path.read_text()
        title, labels = scan_labels(doc, text)
        book.titles[doc] = title
        for label, value in labels.items():
            book.labels.setdefault(label, value)
    if bib is not None and Path(bib).exists():
        book.bib = read_bib(Path(bib))
    return book


def pages_url(env: Mapping[str, str]) -> str | None:
    """The GitHub Pages address of a book published from GitHub Actions, or None."""
    repo = env.get("GITHUB_REPOSITORY", "").strip()
    if repo.count("/") != 1:
        return None
    owner, name = repo.split("/")
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{name.lower()}/"
    return f"https://{owner.lower()}.github.io/{name}/"


# ----------------------------------------------------------------------------- conversion


@dataclass
class _Chapter:
    book: Book
    docname: str
    glue: Mapping[str, Mapping[str, Any]]
    keyprefixes: list[str]
    cited: list[str] = field(default_factory=list)
    exercises: int = 0
    solutions: dict[str, str] = field(default_factory=dict)


def _anchor(label: str) -> str:
    from docutils.nodes import make_id

    return make_id(label)


def _link(ch: _Chapter, label: str, text: str | None) -> str:
    if label not in ch.book.labels:
        raise PlainError(f"reference: no target labelled {label!r} in the book "
                         f"(from {ch.docname})")
    doc, shown = ch.book.labels[label]
    shown = text or ch.book.numbers.get(label) or shown
    if doc == ch.docname:
        return f"[{shown}](#{label})"
    where = ch.book.titles.get(doc, doc)
    if ch.book.url:
        return f"[{shown}]({ch.book.url}{doc}.html#{_anchor(label)})"
    return f"{shown} (in *{where}*)"


def _doc(ch: _Chapter, target: str, text: str | None) -> str:
    base = posixpath.dirname(ch.docname)
    doc = posixpath.normpath(posixpath.join(base, target)) if not target.startswith("/") \
        else target.lstrip("/")
    doc = re.sub(r"\.(md|ipynb)$", "", doc)
    shown = text or ch.book.titles.get(doc, doc)
    if ch.book.url:
        return f"[{shown}]({ch.book.url}{doc}.html)"
    return f"*{shown}*"


def _bib_key(ch: _Chapter, key: str) -> str:
    key = key.strip()
    if key in ch.book.bib:
        return key
    for prefix in ch.keyprefixes:
        if key.startswith(prefix) and key[len(prefix):] in ch.book.bib:
            return key[len(prefix):]
    raise PlainError(f"citation: no entry {key!r} in the bibliography (from {ch.docname})")


def _cite(ch: _Chapter, kind: str, text: str) -> str:
    keys = [_bib_key(ch, k) for k in text.split(",") if k.strip()]
    for k in keys:
        if k not in ch.cited:
            ch.cited.append(k)
    parts = [ch.book.bib[k] for k in keys]
    if kind == "cite:t":
        return "; ".join(f"{names} [{year}]" for names, year, _ in parts)
    if kind in ("cite:author", "cite:ts"):
        return "; ".join(names for names, _, _ in parts)
    if kind == "cite:year":
        return "; ".join(year for _, year, _ in parts)
    return "[" + "; ".join(f"{names}, {year}" for names, year, _ in parts) + "]"


def _glue(ch: _Chapter, key: str) -> Mapping[str, Any]:
    key = key.split("::", 1)[-1].strip()
    if key not in ch.glue:
        raise PlainError(f"glue: no value glued as {key!r} in the executed {ch.docname}")
    return ch.glue[key]


def _role(ch: _Chapter, name: str, text: str) -> str:
    explicit = EXPLICIT.match(text)
    shown, target = (explicit.group("text"), explicit.group("target")) if explicit else (None, text)
    if name in ("glue", "glue:", "glue:text", "glue:any"):
        key, _, spec = text.rpartition(":") if ":" in text.split("::")[-1] else (text, "", "")
        data = _glue(ch, key)
        if "text/plain" not in data:
            raise PlainError(f"glue: {key!r} has no text/plain value (from {ch.docname})")
        return format_plain_text(_text(data["text/plain"]).strip(), spec)
    if name == "glue:md":
        key = text.rsplit(":", 1)[0] if ":" in text.split("::")[-1] else text
        data = _glue(ch, key)
        if "text/markdown" not in data:
            raise PlainError(f"glue: {key!r} has no text/markdown value (from {ch.docname})")
        return _inline(ch, _text(data["text/markdown"]).strip())
    if name.startswith("cite"):
        return _cite(ch, name, text)
    if name in ("ref", "numref", "prf:ref", "eq", "term"):
        if name == "eq":
            return f"({target})"
        return _link(ch, target.strip(), shown)
    if name == "doc":
        return _doc(ch, target.strip(), shown)
    if name == "math":
        return f"${text}$"
    if name in ("sub", "sup"):
        return f"<{name}>{text}</{name}>"
    if name in ("code", "literal", "samp", "file", "kbd", "command"):
        return f"`{text}`"
    return shown or text


def _inline(ch: _Chapter, text: str) -> str:
    return ROLE.sub(lambda m: _role(ch, m.group(1), m.group(2)), text)


def _quote(lines: list[str]) -> list[str]:
    return [f"> {ln}" if ln.strip() else ">" for ln in lines]


def _list_table(body: list[str], header_rows: int) -> list[str]:
    rows: list[list[str]] = []
    for line in body:
        m = re.match(r"^\*\s+-\s*(.*)$", line.strip())
        n = re.match(r"^-\s*(.*)$", line.strip())
        if m:
            rows.append([m.group(1)])
        elif n and rows:
            rows[-1].append(n.group(1))
        elif line.strip() and rows:
            rows[-1][-1] += " " + line.strip()
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    head = rows[0] if header_rows else [""] * width
    rest = rows[1:] if header_rows else rows
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * width]
    return out + ["| " + " | ".join(r) + " |" for r in rest]


def _references(ch: _Chapter) -> list[str]:
    keys = sorted(ch.cited, key=lambda k: (ch.book.bib[k][0].lower(), ch.book.bib[k][1]))
    return [f"- {ch.book.bib[k][2]}" for k in keys]


def _folded(name: str, options: dict[str, str]) -> bool:
    """Folded on the page: a dropdown, or a directive of class ``dropdown`` that is whole in
    its cell (the gated ``exercise-start`` / ``solution-start`` span cells: never folded)."""
    return not name.endswith("-start") and (
        name == "dropdown" or "dropdown" in options.get("class", "").split())


def _details(summary: str, inner: list[str]) -> list[str]:
    """A folded block, as Jupyter, Colab and VS Code render HTML's ``<details>`` (the blank
    lines keep its body Markdown)."""
    summary = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", summary) or "Details"
    return ["<details>", f"<summary>{summary}</summary>", "", *inner, "", "</details>"]


def _directive(ch: _Chapter, name: str, arg: str, options: dict[str, str],
               body: list[str]) -> list[str]:
    anchor = [f'<a id="{options["label"]}"></a>', ""] if "label" in options else []
    inner = _block(ch, body)
    while inner and not inner[0].strip():
        inner.pop(0)
    while inner and not inner[-1].strip():
        inner.pop()
    number = ch.book.numbers.get(options.get("label", ""))
    if name in ("exercise", "exercise-start"):
        ch.exercises += 1
        number = number or f"Exercise {ch.exercises}"
        if "label" in options:
            ch.solutions[options["label"]] = number
        title = f"**{number}**" + (f" ({_inline(ch, arg)})" if arg else "")
        if _folded(name, options):
            return [*anchor, *_details(title, inner)]
        return [*anchor, title, *([""] if inner else []), *inner]
    if name in ("solution", "solution-start"):
        target = arg.split()[0] if arg else ""
        which = ch.solutions.get(target) or ch.book.numbers.get(target) \
            or ch.book.labels.get(target, ("", target))[1]
        if _folded(name, options):
            return [*anchor, *_details(f"**Solution to {which}**", inner)]
        return [*anchor, f"**Solution to {which}**", *([""] if inner else []), *inner]
    if name in ("exercise-end", "solution-end"):
        return []
    if name == "prf:proof":
        return [*anchor, *_quote(["*Proof.*", "", *inner, "", "∎"])]
    if name == "math":
        return [*anchor, "$$", *body, "$$"]
    if name in ("glue:figure", "glue", "glue:any", "glue:math"):
        key = arg.split("::")[-1].strip()
        _glue(ch, key)  # it must exist
        caption = " ".join(inner).strip()
        return [*anchor, f'*(The figure is drawn by the code cell that runs `glue("{key}", ...)`'
                + (f": {caption}" if caption else "") + ".)*"]
    if name == "bibliography":
        return _references(ch) or ["*(No works are cited in this chapter.)*"]
    if name == "list-table":
        header = int(options.get("header-rows", "0") or 0)
        table = _list_table(inner, header)
        return [*anchor, *([f"**{_inline(ch, arg)}**", ""] if arg else []), *table]
    if name in ("figure", "image"):
        alt = options.get("alt", "")
        return [*anchor, f"![{alt}]({arg})", *inner]
    kind = number or KINDS.get(name, name.split(":")[-1].replace("-", " ").capitalize())
    if not number and not arg and KINDS.get(name) and "label" in options:
        kind = ch.book.labels.get(options["label"], ("", kind))[1]  # "Theorem 2", as referred to
    title = _inline(ch, arg)
    head = f"**{kind} ({title}).**" if kind and title else f"**{kind or title}.**" \
        if (kind or title) else ""
    if _folded(name, options):
        return [*anchor, *_details(head.rstrip(".*") + "**" if head else "", inner)]
    return [*anchor, *_quote([*([head, ""] if head else []), *inner])]


def _block(ch: _Chapter, lines: list[str]) -> list[str]:
    """Plain Markdown of a run of MyST lines (directives converted recursively)."""
    out: list[str] = []
    i = 0
    in_math = False
    while i < len(lines):
        line = lines[i]
        code = CODE.match(line)
        opened = OPEN.match(line)
        if code and not opened and not in_math:  # a code fence: copied as it is
            fence, j = code.group("fence"), i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            out += lines[i:j + 1]
            i = j + 1
            continue
        if opened and not in_math:
            fence = opened.group("fence")
            j, options = i + 1, {}
            while j < len(lines) and OPTION.match(lines[j]):
                m = OPTION.match(lines[j])
                assert m is not None  # sanity: matched just above
                options[m.group(1)] = m.group(2).strip()
                j += 1
            start, depth = j, 1
            while j < len(lines):
                s = lines[j].strip()
                inner = OPEN.match(lines[j])
                if inner and inner.group("fence")[0] == fence[0] \
                        and len(inner.group("fence")) == len(fence):
                    depth += 1
                elif re.fullmatch(re.escape(fence[0]) + f"{{{len(fence)},}}", s) \
                        and (fence[0] == ":" or len(s) == len(fence)):
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            indent = opened.group("indent")
            body = [ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[start:j]]
            converted = _directive(ch, opened.group("name"), opened.group("arg").strip(),
                                   options, body)
            out += [indent + ln if ln else ln for ln in converted]
            i = j + 1
            continue
        if TARGET.match(line) and not in_math:
            out.append(f'<a id="{TARGET.match(line).group(1)}"></a>')  # type: ignore[union-attr]
            i += 1
            continue
        if line.lstrip().startswith("%") and not in_math:  # a MyST comment
            i += 1
            continue
        if line.count("$$") % 2 == 1:
            in_math = not in_math
        # a role whose text runs on to the next line ({doc}`the experiment\npage <x>`): read
        # it whole (up to three lines), as MyST does
        joined = 0
        while not in_math and joined < 2 and i + 1 < len(lines) and lines[i + 1].strip() \
                and _OPEN_ROLE.search(_SPAN.sub("", line)):
            i += 1
            joined += 1
            line = f"{line}\n{lines[i]}"
        out.append(LABELLED_MATH.sub("$$", _inline(ch, line)))
        i += 1
    return out


def plain_markdown(text: str, book: Book, docname: str,
                   glue: Mapping[str, Mapping[str, Any]] | None = None,
                   keyprefixes: Iterable[str] = ()) -> str:
    """One MyST Markdown text as plain Markdown (see the module's docstring)."""
    ch = _Chapter(book, docname, glue or {}, list(keyprefixes))
    return "\n".join(_block(ch, text.split("\n")))


def _keyprefixes(cells: Iterable[Any]) -> list[str]:
    found = []
    for cell in cells:
        if cell.cell_type == "markdown":
            found += re.findall(r"^[ \t]*:keyprefix:[ \t]*(\S+)", _text(cell.source), re.M)
    return sorted(set(found), key=len, reverse=True)


def plain_notebook(nb: nbformat.NotebookNode, book: Book, docname: str,
                   glue: Mapping[str, Mapping[str, Any]] | None = None) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose Markdown cells are plain Markdown (code cells untouched).
    Exercises are numbered across cells, and the bibliography lists what the cells before it
    cite. Raises :class:`PlainError` naming what cannot be resolved."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    ch = _Chapter(book, docname, glue or {}, _keyprefixes(nb.cells))
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = "\n".join(_block(ch, _text(cell.source).split("\n"))).strip("\n")
    return nb


_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})(?!`*\{)")
_SPAN = re.compile(r"(?<![}`])(`+)(?!\{)[^`]*?\1(?!`)")
#: a role opened on a line and not closed on it
_OPEN_ROLE = re.compile(r"\{[A-Za-z][\w:.+-]*\}`[^`]*$")


def _without_code(text: str) -> str:
    """``text`` less its fenced code blocks and code spans (a role's backticks, right after
    ``{name}``, are kept)."""
    kept, fence = [], ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip(" \t>")[len(m.group(1)):].strip():
                fence = ""
            continue
        if m:
            fence = m.group(1)
            continue
        kept.append(_SPAN.sub("", line))
    return "\n".join(kept)


def myst_leftovers(nb: nbformat.NotebookNode | Mapping[str, Any]) -> list[str]:
    """``"cell N: <what>: <excerpt>"`` for every MyST role, directive fence, glue or target
    left in the notebook's Markdown cells (code spans and code fences are skipped)."""
    found = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        text = _without_code(_text(cell["source"]))
        for what, pattern in LEFTOVERS:
            for m in pattern.finditer(text):
                excerpt = text[max(0, m.start() - 20):m.end() + 30].replace("\n", " ")
                found.append(f"cell {index}: {what}: ...{excerpt}...")
    return found
