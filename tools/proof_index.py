"""A proof index that lists statements by their titles, grouped by chapter.

sphinx-proof's own index page (``prf-prf.html``) lists every theorem, lemma and definition by
its raw label (``er-thm-1-audited``), one group per label. This local extension replaces the
domain's index with one that a reader can use: one group per chapter, in reading order, each
entry "Theorem: <its title>" linking to the statement. Math in a title is written as plain text
(``$\\sqrt m$`` becomes ``√m``): an index entry is not typeset.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.domains import Index, IndexEntry
from sphinx_proof.domain import ProofDomain

_TEX = {"sqrt": "√", "ell": "ℓ", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "infty": "∞",
        "Vert": "‖", "lVert": "‖", "rVert": "‖", "vert": "|", "top": "ᵀ", "log": "log",
        "cdot": "·", "times": "×", "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ",
        "eta": "η", "kappa": "κ", "sigma": "σ", "tau": "τ", "Psi": "Ψ", "rho": "ρ", "to": "→",
        "in": "∈", "epsilon": "ε", "varepsilon": "ε", "Rad": "ℜ", "mathfrak": "", "mathcal": "",
        "mathbb": "", "mathrm": "", "operatorname": "", "rm": "", "left": "", "right": ""}


def plain(title: str) -> str:
    """A title with its ``$...$`` math written as plain text."""
    def math(m: re.Match[str]) -> str:
        tex = re.sub(r"\\([A-Za-z]+)\s*", lambda c: _TEX.get(c.group(1), ""), m.group(1))
        return re.sub(r"[{}^_\\]", "", tex).strip()

    text = re.sub(r"\s+", " ", re.sub(r"\$([^$]+)\$", math, title)).strip()
    # sphinx-proof stores the title as " (<title>)": drop that one pair of parentheses
    return text[1:-1].strip() if text.startswith("(") and text.endswith(")") else text


def reading_order(env: Any) -> list[str]:
    """Documents in the order of the table of contents (root first, depth first)."""
    seen: list[str] = []

    def walk(doc: str) -> None:
        if doc in seen:
            return
        seen.append(doc)
        for child in env.toctree_includes.get(doc, []):
            walk(child)

    walk(env.config.root_doc)
    return seen + sorted(set(env.found_docs) - set(seen))


class TitledProofIndex(Index):
    """Every proof-domain statement by its title, grouped by chapter."""

    name = "prf"
    localname = "Index of theorems, lemmas and definitions"
    shortname = "Statements"

    def generate(self, docnames: Any = None) -> tuple[list[tuple[str, list[IndexEntry]]], bool]:
        env = self.domain.env
        proofs = getattr(env, "proof_list", {})
        titles = getattr(env, "genbounds_proof_titles", {})
        order = {doc: i for i, doc in enumerate(reading_order(env))}
        groups: dict[tuple[int, str], list[IndexEntry]] = defaultdict(list)
        for label, info in proofs.items():
            doc = info["docname"]
            if docnames and doc not in docnames:
                continue
            chapter = env.titles[doc].astext() if doc in env.titles else doc
            title = plain(titles.get(label, "")) or label
            groups[(order.get(doc, 10**6), chapter)].append(IndexEntry(
                f"{info['realtype'].capitalize()}: {title}", 0, doc, label, "", "", ""))
        content = [(chapter, sorted(entries, key=lambda e: e.name))
                   for (_, chapter), entries in sorted(groups.items())]
        return content, True


def _collect_titles(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    store = env.__dict__.setdefault("genbounds_proof_titles", {})
    for node in doctree.findall(nodes.Element):
        label, title = node.get("label"), node.get("title")
        if label and title and type(node).__module__.startswith("sphinx_proof"):
            store[label] = str(title)


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    proofs = getattr(env, "proof_list", {})
    store = getattr(env, "genbounds_proof_titles", {})
    for label in [k for k in store if proofs.get(k, {}).get("docname") == docname]:
        store.pop(label, None)


def _merge(app: Sphinx, env: Any, docnames: Any, other: Any) -> None:
    env.__dict__.setdefault("genbounds_proof_titles", {}).update(
        getattr(other, "genbounds_proof_titles", {}))


def setup(app: Sphinx) -> dict[str, Any]:
    ProofDomain.indices = [TitledProofIndex]  # replaces the label-only index of sphinx-proof
    app.connect("doctree-read", _collect_titles)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
