"""``make book``'s driver (tools/build_book.py): experiments first, noise filtered, failures
named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from myst_pages import myst_page  # tests/myst_pages.py

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import build_book  # noqa: E402

TIMEOUT_LOG = f"""\
Executing notebook using local CWD [mystnb]
Traceback (most recent call last):
  File ".../nbclient/client.py", line 782, in _async_poll_for_reply
nbclient.exceptions.CellTimeoutError: A cell timed out while it was being executed, after 1800

The message was: Cell execution timed out.
Here is a preview of the cell contents:
-------------------
res = load_or_run("sparse_majority")
-------------------

The above exception was the direct cause of the following exception:
zmq.error.ZMQError: Socket operation on non-socket
myst_nb.core.execute.base.ExecutionError: {ROOT}/notebooks/02_trauger_tewari.md
"""

ERROR_LOG = f"""\
myst_nb.core.execute.base.ExecutionError: {ROOT}/notebooks/04_offset_rademacher.md
nbclient.exceptions.CellExecutionError: An error occurred while executing the following cell:
------------------
x = compute()
assert x > 0  # mutation: x = -1
------------------

AssertionError: x must be positive
"""


def test_timeout_is_named_with_its_chapter() -> None:
    lines = build_book.failure_summary(TIMEOUT_LOG)
    assert lines[0] == "FAILED chapter: notebooks/02_trauger_tewari.md"
    assert any("cell timeout" in ln for ln in lines)
    assert not any("ZMQError" in ln for ln in lines)


def test_failing_cell_and_error_are_shown() -> None:
    lines = build_book.failure_summary(ERROR_LOG)
    assert lines[0] == "FAILED chapter: notebooks/04_offset_rademacher.md"
    assert "    x = compute()" in lines
    assert lines[-1].startswith("  error: AssertionError")


def test_noise_filter() -> None:
    assert build_book.is_noise("[IPKernelApp] WARNING | Kernel is running over TCP without "
                               "encryption. All communication ...")
    assert build_book.is_noise("myst v4.0.1: MdParserConfig(commonmark_only=False, ...)")
    assert build_book.is_noise("\x1b[01mmyst v3.0.1:\x1b[39;49;00m MdParserConfig(gfm_only=False")
    assert build_book.is_noise("\x1b[01mmyst-nb v1.4.0:\x1b[39;49;00m NbParserConfig(custom=1")
    assert not build_book.is_noise("WARNING: undefined label: 'tt-thm'")


def test_make_book_runs_the_driver() -> None:
    out = subprocess.run(["make", "-n", "book"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert "tools/build_book.py" in out


def test_resume_message_on_failure(tmp_path: Path) -> None:
    """A failing first step stops the build with the log's tail and the resume hint."""
    fake = tmp_path / "bin"
    fake.mkdir()
    py = fake / "python"
    py.write_text("#!/bin/sh\necho 'unit 3/5 failed: boom'\nexit 3\n")
    py.chmod(0o755)
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'tools')!r}); import build_book; "
            f"from pathlib import Path; build_book.BIN = Path({str(fake)!r}); "
            f"sys.exit(build_book.main(['--out', {str(tmp_path / 'build')!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "GENBOUNDS_SCALE": "quick"})
    assert res.returncode == 3
    assert "unit 3/5 failed: boom" in res.stdout
    assert "resume" in res.stdout.splitlines()[-1]


PAGE = myst_page("""# A page

```{code-cell} ipython3
x = 6 * 7
print(x)
```
""")


def test_pages_of_the_toc_that_are_notebooks() -> None:
    pages = build_book.notebook_pages()
    names = {p.relative_to(ROOT).as_posix() for p in pages}
    assert "notebooks/01_foundations.md" in names and "notebooks/06_comparison_ranking.md" in names
    assert "book/intro.md" not in names  # a page of prose, not executed
    assert len(names) == len(pages)


def test_executed_pages_are_what_myst_nb_finds_in_its_cache(tmp_path: Path) -> None:
    """A page executed by the parallel step is found by MyST-NB's cache lookup (the same
    reader, the same hash), with its output; a failing page is reported, not cached."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text(PAGE)
    bad.write_text(PAGE.replace("x = 6 * 7", "raise RuntimeError('broken page')"))
    cache_dir = tmp_path / "cache"
    failed = build_book.execute_pages([good, bad], 2, dict(os.environ), tmp_path / "pages.log",
                                      cache_dir=cache_dir, timeout=120)
    assert len(failed) == 1 and "bad.md" in failed[0] and "broken page" in failed[0]
    cache = get_cache(str(cache_dir))
    nb = read_myst_markdown_notebook(good.read_text(), add_source_map=True, path=str(good))
    _, merged = cache.merge_match_into_notebook(nb)
    assert merged.cells[-1].outputs[0]["text"] == "42\n"
    with pytest.raises(KeyError):
        cache.match_cache_notebook(read_myst_markdown_notebook(bad.read_text()))


def test_pages_run_under_the_books_cell_timeout(tmp_path: Path) -> None:
    config = tmp_path / "_config.yml"
    config.write_text("execute:\n  execute_notebooks: force\n  timeout: 77\n")
    assert build_book.cell_timeout(config) == 77
    assert build_book.cell_timeout() == 1800  # the book's own, as _config.yml sets it
