"""The proof index lists statements by their titles (tools/proof_index.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import proof_index  # noqa: E402


def test_titles_as_plain_text() -> None:
    assert proof_index.plain(" (Maurey's lemma (after Pisier, 1981))") == \
        "Maurey's lemma (after Pisier, 1981)"
    assert proof_index.plain(" (A correct $1/\\sqrt m$ rate)") == "A correct 1/√m rate"
    assert proof_index.plain(" (The class $\\mathcal F_R$ (eq. (3)))") == "The class FR (eq. (3))"
    assert "\\" not in proof_index.plain(" ($\\lVert W\\rVert_{1,1}\\le B$)")


def test_registered_in_the_book_config() -> None:
    config = (ROOT / "_config.yml").read_text()
    assert "proof_index: tools/" in config
    assert "html_use_index: false" in config
