from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from genbounds.plotting import annotate_provenance, set_style  # noqa: E402


def test_caption_names_scale_and_data_only(monkeypatch) -> None:
    monkeypatch.delenv("GENBOUNDS_SCALE", raising=False)
    set_style()
    fig, ax = plt.subplots()
    text = annotate_provenance(fig, "synthetic")
    assert text == "scale: quick · data: synthetic"
    assert any(t.get_text() == text for t in fig.texts)
    plt.close(fig)


def test_rejects_non_figure() -> None:
    with pytest.raises(ValueError, match="fig"):
        annotate_provenance("not a figure", "synthetic")


def test_set_style_keeps_text_as_text_in_svg(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    set_style()
    assert mpl.rcParams["svg.fonttype"] == "none"
    fig, ax = plt.subplots()
    ax.set_xlabel("distance from initialisation")
    fig.savefig(tmp_path / "f.svg")
    plt.close(fig)
    assert "distance from initialisation</text>" in (tmp_path / "f.svg").read_text()
