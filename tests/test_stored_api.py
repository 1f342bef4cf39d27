"""The read-only loader for chapters: load_stored / stored_units never compute, carry provenance."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from genbounds.experiments import registry  # noqa: E402
from genbounds.experiments.registry import (  # noqa: E402
    Experiment,
    load_stored,
    register_experiment,
    reproduce,
    stored_units,
)
from genbounds.plotting import annotate_provenance, label_stored  # noqa: E402
from genbounds.results import (  # noqa: E402
    ResultStore,
    StaleResultWarning,
    clear_notes,
    note_sources,
    noted,
    provenance_note,
)
from genbounds.results import provenance as prov  # noqa: E402


@dataclass(frozen=True)
class FakeUnit:
    PROTOCOL_VERSION: ClassVar[int] = 1
    n: int
    seed: int = 0


CALLS: list[int] = []


def _run(u: FakeUnit, progress: bool) -> dict[str, Any]:
    CALLS.append(u.n)
    rng = np.random.default_rng(u.n)
    return {"x": rng.normal(size=(2, 3)), "n": np.full(2, u.n)}


@pytest.fixture()
def fake():
    exp = register_experiment(Experiment(
        name="fake_stored_api", chapter="notebooks/none.md", description="test",
        config=lambda scale: (1, 2, 3) if scale == "paper" else (1,),
        units=lambda cfg: [FakeUnit(n) for n in cfg], run_unit=_run,
        code=("genbounds.scale",)))
    CALLS.clear()
    yield exp
    registry._EXPERIMENTS.pop("fake_stored_api", None)


def test_load_stored_never_computes(tmp_path, fake) -> None:
    store = ResultStore(tmp_path, namespace="paper")
    assert load_stored("fake_stored_api", "paper", store=store) is None
    found = stored_units("fake_stored_api", "paper", store=store)
    assert found.present == [] and len(found.missing) == 3 and not found.complete
    assert CALLS == [] and not (tmp_path / "paper").exists()  # nothing computed or written
    # two of three units stored: still None, the partial set says which are missing
    store.run(FakeUnit(1), lambda u: _run(u, False), device="cpu", code_modules=fake.code)
    store.run(FakeUnit(3), lambda u: _run(u, False), device="cpu", code_modules=fake.code)
    assert load_stored("fake_stored_api", "paper", store=store) is None
    found = stored_units("fake_stored_api", "paper", store=store)
    assert [r.config["n"] for r in found.present] == [1, 3]
    assert found.missing == [FakeUnit(2)]
    assert found.arrays()["n"].tolist() == [1, 1, 3, 3]
    CALLS.clear()
    store.run(FakeUnit(2), lambda u: _run(u, False), device="cpu", code_modules=fake.code)
    arrays, parts = load_stored("fake_stored_api", "paper", store=store)  # type: ignore[misc]
    assert arrays["n"].tolist() == [1, 1, 2, 2, 3, 3] and CALLS == [2]
    p = parts[0]
    assert p.device.startswith("cpu") and p.created_utc[:2] == "20" and p.wall_time_s >= 0
    assert not p.fresh and not p.stale
    with pytest.raises(ValueError, match="scale"):
        load_stored("fake_stored_api", "bogus", store=store)


def test_stale_results_are_flagged_not_dropped(tmp_path, fake, monkeypatch) -> None:
    store = ResultStore(tmp_path, namespace="paper")
    real = prov.code_fingerprint
    monkeypatch.setattr(prov, "code_fingerprint", lambda modules=None: "0" * 16)
    reproduce(fake, "paper", store=store)  # made by "other code"
    monkeypatch.setattr(prov, "code_fingerprint", real)
    with pytest.warns(StaleResultWarning):
        out = load_stored("fake_stored_api", "paper", store=store)
    assert out is not None and all(r.stale for r in out[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = stored_units("fake_stored_api", "paper", store=store, warn=False)
    assert found.complete and found.stale


def test_captions_say_scale_and_data_and_the_page_note_says_the_rest(tmp_path, fake) -> None:
    clear_notes()
    store = ResultStore(tmp_path, namespace="paper")
    parts = reproduce(fake, "paper", store=store)
    fig, ax = plt.subplots()
    text = annotate_provenance(fig, "fake data", scale="paper", stored=parts)
    assert text == "scale: paper · data: fake data"
    panel = label_stored(ax, load_stored(fake, "paper", store=store), scale="paper")
    assert panel == "paper scale, stored results"
    assert any(t.get_text() == panel for t in ax.texts)
    # both named the same three units: under the figure's data and under the panels' label
    assert [len(v) for v in noted().values()] == [3, 3]
    note = provenance_note()
    assert max(len(line) for line in note.splitlines()) <= 64
    note = " ".join(note.split())  # the lines are wrapped for the column
    date = parts[0].created_utc[:10]
    assert "fake data: 3 units (3 computed while this page was built, 0 loaded" in note
    assert date in note and "3 made by the running code" in note and "stale" not in note
    with pytest.raises(ValueError, match="stored"):
        label_stored(ax, [])
    with pytest.raises(TypeError, match="source"):
        annotate_provenance(fig, "fake data", scale="paper", source="old text")  # type: ignore[call-arg]
    plt.close(fig)
    clear_notes()
    assert "stored results: none" in provenance_note()


def test_the_page_note_names_stale_and_probe_carried_units(tmp_path, fake, monkeypatch) -> None:
    clear_notes()
    store = ResultStore(tmp_path, namespace="paper")
    real = prov.code_fingerprint
    monkeypatch.setattr(prov, "code_fingerprint", lambda modules=None: "0" * 16)
    reproduce(fake, "paper", store=store)
    monkeypatch.setattr(prov, "code_fingerprint", real)
    found = stored_units("fake_stored_api", "paper", store=store, warn=False)
    note_sources("old runs", found)
    note = provenance_note(width=200)
    assert "3 made by other code (stale" in note and "made by the running code" not in note
    # a unit carried over by its probe is counted as such, not as the running code's
    r = found.present[0]
    migrated = {"method": "equivalent code (probe): outputs equal"}
    carried = replace(r, stale=False, provenance=replace(
        r.provenance, migrated=migrated, code_fingerprint=real(r.provenance.code_modules)))
    clear_notes()
    note_sources("carried", [carried])
    assert "1 carried over to it by the study's probe" in provenance_note(width=200)
    for bad in ("", "  ", None):
        with pytest.raises(ValueError, match="label"):
            note_sources(bad, found)  # type: ignore[arg-type]
    for bad_stored in ("abc", [1, 2], None):
        with pytest.raises(ValueError, match="stored"):
            note_sources("x", bad_stored)
    clear_notes()
    note_sources("paper-scale runs", [])  # looked for, none stored: said, not dropped
    assert noted() == {"paper-scale runs": ()}
    assert "paper-scale runs: none stored" in provenance_note()
    with pytest.raises(ValueError, match="width"):
        provenance_note(width=10)
    clear_notes()
