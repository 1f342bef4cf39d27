"""Every chapter page imports only what it uses: each page, read as a script (jupytext's
percent format), passes ruff's unused-import check (F401). A set-up cell that carries imports a
page no longer needs reads as if the page used them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "notebooks").glob("*.md"))
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_a_page_imports_only_what_it_uses(page: Path) -> None:
    script = jupytext.writes(jupytext.read(page), fmt="py:percent")
    res = subprocess.run([str(RUFF), "check", "--no-cache", "--isolated", "--select", "F401",
                          "--output-format", "concise", "--stdin-filename", f"{page.stem}.py",
                          "-"], input=script, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"{page.name}: unused imports\n{res.stdout}{res.stderr}"


def test_the_check_sees_an_unused_import() -> None:
    if RUFF is None:
        pytest.skip("ruff is not installed")
    res = subprocess.run([str(RUFF), "check", "--no-cache", "--isolated", "--select", "F401",
                          "--stdin-filename", "x.py", "-"], input="import math\n",
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "F401" in res.stdout
