"""The index of statements as a page of the book: the ``{statement-index}`` directive.

Sphinx extension (loaded from ``_config.yml``). ``book/statements.md`` holds this directive.
Once every chapter has been read and numbered, the placeholder is replaced by the list of every
definition, lemma, theorem, corollary, proposition and remark of the book:

- numbered as the chapter shows it ("Theorem 4.4"): the number is the one Sphinx assigned to
  the statement for its page (``env.toc_fignumbers``, which sphinx-proof's own heading reads),
  so the index cannot disagree with the chapter;
- with its title typeset: ``$...$`` in a title becomes a math node (MathJax), as in the chapter;
- in reading order: one section per chapter, chapters in the order of ``_toc.yml``, statements
  in the order of the page; a page nested under a chapter (an appendix) follows its chapter
  under a heading of its own;
- each entry a link to the statement.

:func:`entries` is the model of the page (used by the tests); :func:`check_html` reads a built
site and compares every entry of ``statements.html`` with the heading of the statement it links
to (``python tools/statement_index.py _build/html``).
"""

from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

_MATH = re.compile(r"(?<!\\)\$([^$]+)\$")


class statement_index(nodes.General, nodes.Element):  # noqa: N801 (docutils node naming)
    """Placeholder for the list; replaced in ``doctree-resolved``."""


class StatementIndexDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        pages = self.env.__dict__.setdefault("genbounds_index_pages", set())
        pages.add(self.env.docname)
        return [statement_index("")]


@dataclass(frozen=True)
class Entry:
    """One statement as the index shows it."""

    docname: str
    label: str  # the HTML anchor
    kind: str  # "Theorem"
    number: str  # "4.4"; "" when the statement is not numbered
    title: str  # the source title, math as ``$...$``; "" when untitled

    @property
    def name(self) -> str:
        return f"{self.kind} {self.number}".strip()


@dataclass(frozen=True)
class Group:
    """The statements of one page, under its chapter."""

    chapter: str  # "4. Offset Rademacher complexity"
    chapter_doc: str
    page: str  # the page's own title when it is nested under the chapter, else ""
    docname: str
    entries: tuple[Entry, ...]


def source_title(title: str) -> str:
    """sphinx-proof stores a title as ``" (<title>)"`` (``proof_title_format``): the title."""
    text = title.strip()
    return text[1:-1].strip() if text.startswith("(") and text.endswith(")") else text


def title_nodes(title: str) -> list[nodes.Node]:
    """The title as text and inline math nodes (``$x$`` -> ``nodes.math``)."""
    out: list[nodes.Node] = []
    pos = 0
    for m in _MATH.finditer(title):
        if m.start() > pos:
            out.append(nodes.Text(title[pos:m.start()]))
        out.append(nodes.math(m.group(0), m.group(1).strip()))
        pos = m.end()
    if pos < len(title):
        out.append(nodes.Text(title[pos:]))
    return out


def _chapters(env: Any) -> list[tuple[str, list[str]]]:
    """``(chapter, [chapter, its nested pages...])`` in the order of the table of contents."""
    root = env.config.root_doc
    seen = {root}
    out = []

    def below(doc: str) -> list[str]:
        docs = []
        for child in env.toctree_includes.get(doc, []):
            if child not in seen:
                seen.add(child)
                docs += [child, *below(child)]
        return docs

    for chapter in env.toctree_includes.get(root, []):
        if chapter not in seen:
            seen.add(chapter)
            out.append((chapter, [chapter, *below(chapter)]))
    return out


def _heading(env: Any, doc: str) -> str:
    title = env.titles[doc].astext() if doc in env.titles else doc
    number = env.toc_secnumbers.get(doc, {}).get("")
    return f"{'.'.join(map(str, number))}. {title}" if number else title


def entries(env: Any) -> list[Group]:
    """Every labelled statement of the proof domain, grouped and ordered as the page shows it."""
    proofs: dict[str, dict[str, Any]] = getattr(env, "proof_list", {})
    order: dict[str, list[str]] = getattr(env, "genbounds_statement_order", {})
    titles: dict[str, str] = getattr(env, "genbounds_statement_titles", {})
    groups = []
    for chapter, docs in _chapters(env):
        for doc in docs:
            found = []
            for label in order.get(doc, []):
                info = proofs.get(label)
                if info is None or info["docname"] != doc:
                    continue
                ident = info["ids"][0]
                number = () if info.get("nonumber") else env.toc_fignumbers.get(doc, {}).get(
                    info["countertype"], {}).get(ident, ())
                found.append(Entry(doc, ident, str(info["realtype"]).title(),
                                   ".".join(map(str, number)), titles.get(label, "")))
            if found:
                groups.append(Group(_heading(env, chapter), chapter,
                                    "" if doc == chapter else _heading(env, doc), doc,
                                    tuple(found)))
    return groups


def _collect(app: Sphinx, doctree: nodes.document) -> None:
    """The page's statements in document order, with their source titles."""
    env = app.env
    order = env.__dict__.setdefault("genbounds_statement_order", {})
    titles = env.__dict__.setdefault("genbounds_statement_titles", {})
    labels = []
    for node in doctree.findall(nodes.Element):
        label = node.get("label")
        if label and "realtype" in node and type(node).__module__.startswith("sphinx_proof"):
            labels.append(label)
            titles[label] = source_title(str(node.get("title", "")))
    order[env.docname] = labels


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    labels = getattr(env, "genbounds_statement_order", {}).pop(docname, [])
    for label in labels:
        getattr(env, "genbounds_statement_titles", {}).pop(label, None)
    getattr(env, "genbounds_index_pages", set()).discard(docname)


def _merge(app: Sphinx, env: Any, docnames: Any, other: Any) -> None:
    for attr in ("genbounds_statement_order", "genbounds_statement_titles"):
        env.__dict__.setdefault(attr, {}).update(getattr(other, attr, {}))
    env.__dict__.setdefault("genbounds_index_pages", set()).update(
        getattr(other, "genbounds_index_pages", set()))


def _has_math(app: Sphinx, env: Any) -> None:
    """The index page gets its math after reading: tell the math domain, so that the page
    loads MathJax (``sphinx.ext.mathjax`` asks ``has_equations``)."""
    data = env.get_domain("math").data["has_equations"]
    for doc in getattr(env, "genbounds_index_pages", ()):
        data[doc] = True


def _outdated(app: Sphinx, env: Any, added: Any, changed: Any, removed: Any) -> list[str]:
    """The index page is read again on every build: its list changes with the chapters."""
    return sorted(getattr(env, "genbounds_index_pages", ()))


def _resolve(app: Sphinx, doctree: nodes.document, fromdocname: str) -> None:
    for node in list(doctree.findall(statement_index)):
        out: list[nodes.Node] = []
        chapter_section: nodes.section | None = None
        chapter_doc = None
        for group in entries(app.env):
            if chapter_section is None or group.chapter_doc != chapter_doc:
                chapter_doc = group.chapter_doc
                chapter_section = nodes.section(
                    ids=[f"statements-{len(out) + 1}"], names=[group.chapter],
                    classes=["statement-chapter"])
                chapter_section += nodes.title(text=group.chapter)
                out.append(chapter_section)
            target: nodes.Element = chapter_section
            if group.page:
                target = nodes.section(ids=[f"statements-{len(out)}-{group.docname}"
                                            .replace("/", "-")], names=[group.page])
                target += nodes.title(text=group.page)
                chapter_section += target
            items = nodes.bullet_list(classes=["statement-list"])
            for e in group.entries:
                uri = app.builder.get_relative_uri(fromdocname, e.docname) + "#" + e.label
                ref = nodes.reference("", "", internal=True, refuri=uri)
                ref += nodes.strong(text=e.name)
                if e.title:
                    ref += nodes.Text(" (")
                    ref += title_nodes(e.title)
                    ref += nodes.Text(")")
                items += nodes.list_item("", nodes.paragraph("", "", ref))
            target += items
        node.replace_self(out or [nodes.paragraph(text="(no statements)")])


# -- checking a built site ----------------------------------------------------------------------

_ENTRY = re.compile(r'<a class="reference internal" href="([^"#]*)#([^"]+)"><strong>([^<]+)'
                    r"</strong>(.*?)</a>", re.S)


def read_index(html_dir: Path, page: str = "book/statements.html") -> list[tuple[str, str, str]]:
    """``(target page, anchor, "Theorem 4.4")`` of every entry of the built index page."""
    index = html_dir / page
    text = index.read_text(encoding="utf-8")
    out = []
    for href, anchor, name, _ in _ENTRY.findall(text):
        target = (index.parent / href).resolve() if href else index.resolve()
        out.append((str(target.relative_to(html_dir.resolve())), anchor, html.unescape(name)))
    return out


def shown_number(html_dir: Path, page: str, anchor: str) -> str:
    """The heading sphinx-proof wrote at the statement: ``"Theorem 4.4"``."""
    text = (html_dir / page).read_text(encoding="utf-8")
    at = text.find(f'id="{anchor}"')
    if at < 0:
        raise ValueError(f"{page}: no element with id {anchor!r}")
    m = re.compile(r'<span class="caption-number">([^<]+)</span>').search(text, at)
    if m is None:
        raise ValueError(f"{page}#{anchor}: no caption number after it")
    return html.unescape(m.group(1)).strip()


def check_html(html_dir: Path, page: str = "book/statements.html") -> list[str]:
    """Every index entry whose name differs from the heading of the statement it links to (an
    empty list: the index agrees with the chapters)."""
    bad = []
    for target, anchor, name in read_index(html_dir, page):
        shown = shown_number(html_dir, target, anchor)
        if shown != name:
            bad.append(f"{target}#{anchor}: the index says {name!r}, the page {shown!r}")
    return bad


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(statement_index)
    app.add_directive("statement-index", StatementIndexDirective)
    app.connect("doctree-read", _collect)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-check-consistency", _has_math)
    app.connect("doctree-resolved", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    html_dir = Path(args[0] if args else "_build/html")
    found = read_index(html_dir)
    bad = check_html(html_dir)
    for line in bad:
        print(line)
    print(f"{len(found)} entries, {len(bad)} disagreeing with their page")
    return 1 if bad or not found else 0


if __name__ == "__main__":
    sys.exit(main())
