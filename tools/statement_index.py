"""The index of statements as a page of the book: the ``{statement-index}`` directive.

Sphinx extension (loaded from ``_config.yml``). The proof domain's index (``prf-prf.html``,
written by ``tools/proof_index.py``) is a generated page, which the table of contents cannot
list. ``book/statements.md`` holds this directive, which is replaced, once every chapter has
been read, by the same list: one section per chapter in reading order, each statement as
"Theorem: <its title>" linking to it. So the index is in the navigation (issue #26).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class statement_index(nodes.General, nodes.Element):  # noqa: N801 (docutils node naming)
    """Placeholder for the list; replaced in ``doctree-resolved``."""


class StatementIndexDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        return [statement_index("")]


def _entries(app: Sphinx) -> list[tuple[str, list[Any]]]:
    import proof_index  # tools/proof_index.py (tools/ is on sys.path for local extensions)

    domain = app.env.get_domain("prf")
    content, _ = proof_index.TitledProofIndex(domain).generate()
    return content


def _resolve(app: Sphinx, doctree: nodes.document, fromdocname: str) -> None:
    for node in list(doctree.findall(statement_index)):
        out: list[nodes.Node] = []
        for chapter, entries in _entries(app):
            para = nodes.paragraph()
            para += nodes.strong(text=chapter)
            items = nodes.bullet_list()
            for e in entries:
                uri = app.builder.get_relative_uri(fromdocname, e.docname) + "#" + e.anchor
                ref = nodes.reference("", "", internal=True, refuri=uri)
                ref += nodes.Text(e.name)
                items += nodes.list_item("", nodes.paragraph("", "", ref))
            out += [para, items]
        node.replace_self(out or [nodes.paragraph(text="(no statements)")])


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(statement_index)
    app.add_directive("statement-index", StatementIndexDirective)
    app.connect("doctree-resolved", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
