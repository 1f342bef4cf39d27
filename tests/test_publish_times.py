"""One source of times (issue #26): the study-times table of the instructors' page."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import study_times as st  # noqa: E402


def test_devices_in_words() -> None:
    assert st._device("cpu (x86_64, 2 cores, 1 threads), torch 2.13.0") == "CPU, 2 cores, 1 thread"
    assert st._device("cpu (x86_64, 16 cores, 4 threads), torch 2") == "CPU, 16 cores, 4 threads"
    assert st._device("cuda:0 (NVIDIA H100 80GB HBM3), torch 2.11") == "NVIDIA H100 80GB HBM3"
    assert st._duration(78.4) == "78 s" and st._duration(247) == "4.1 min"


def test_table_has_one_row_per_study_and_sums_the_stored_times(
        tmp_path: Path, monkeypatch: object) -> None:
    import genbounds.experiments  # noqa: F401
    from genbounds.experiments.registry import registered_experiments

    monkeypatch.setenv("GENBOUNDS_RESULTS_DIR", str(tmp_path))  # type: ignore[attr-defined]
    text = st.table("quick")
    rows = [ln for ln in text.splitlines()[2:] if ln.startswith("|")]
    assert len(rows) == len(registered_experiments())
    assert all("not stored" in r and "0 of" in r for r in rows)  # an empty store
    # the chapter column is narrow: "chapter 2" linking to the chapter's first page
    assert "{doc}`chapter 2 <../notebooks/02_trauger_tewari>`" in text
    assert all(name in st.CHAPTER and name in st.TITLE
               for name in (e.name for e in registered_experiments()))


def test_pages_use_the_one_source() -> None:
    instructors = (ROOT / "book" / "instructors.md").read_text()
    assert "{{ study_times }}" in instructors and "(instructors-times)=" in instructors
    assert "instructors-times" in (ROOT / "book" / "intro.md").read_text()
    assert "each notebook a few minutes" not in (ROOT / "README.md").read_text()
    config = (ROOT / "_config.yml").read_text()
    assert "study_times: tools/" in config and "statement_index: tools/" in config
    assert "book/statements" in (ROOT / "_toc.yml").read_text()
