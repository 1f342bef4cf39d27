"""The read-only loader for chapters: load_stored / stored_units never compute, carry provenance."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
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
from genbounds.plotting import annotate_provenance, label_stored, stored_source  # noqa: E402
from genbounds.results import ResultStore, StaleResultWarning  # noqa: E402
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
    assert "stale" in stored_source(found)


def test_figure_and_panel_labels_name_device_and_date(tmp_path, fake) -> None:
    store = ResultStore(tmp_path, namespace="paper")
    parts = reproduce(fake, "paper", store=store)
    fig, ax = plt.subplots()
    text = annotate_provenance(fig, "fake data", scale="paper", stored=parts)
    date = parts[0].created_utc[:10]
    device = parts[0].device.split(" (")[0]  # "cpu" or "cuda", as recorded
    short = "cpu" if device == "cpu" else parts[0].device.split("(")[1].split(")")[0]
    assert "stored results (3 units)" in text and date in text and short in text
    assert "stale" not in text
    panel = label_stored(ax, load_stored(fake, "paper", store=store), scale="paper")
    assert panel.startswith("paper scale, stored: cpu") and panel.endswith(date)
    assert any(t.get_text() == panel for t in ax.texts)
    with pytest.raises(ValueError, match="stored"):
        stored_source([])
    plt.close(fig)
