from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from genbounds.plotting import annotate_provenance, set_style  # noqa: E402


def test_caption_names_scale_data_and_source(monkeypatch) -> None:
    monkeypatch.delenv("GENBOUNDS_SCALE", raising=False)
    set_style()
    fig, ax = plt.subplots()
    text = annotate_provenance(fig, "synthetic", source="loaded from abc.json")
    assert text == "scale: quick · data: synthetic · loaded from abc.json"
    assert any(t.get_text() == text for t in fig.texts)
    plt.close(fig)


def test_rejects_non_figure() -> None:
    with pytest.raises(ValueError, match="fig"):
        annotate_provenance("not a figure", "synthetic")
