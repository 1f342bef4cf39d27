"""The front matter that makes a Markdown file a MyST notebook, for the tests that write pages."""

from __future__ import annotations

FRONT_MATTER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def myst_page(body: str) -> str:
    """A MyST notebook page: the front matter, a blank line, then ``body``."""
    return FRONT_MATTER + "\n" + body
