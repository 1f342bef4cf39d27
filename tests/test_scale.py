from __future__ import annotations

import pytest

from genbounds.scale import get_scale, scale_banner


def test_default_is_quick(monkeypatch) -> None:
    monkeypatch.delenv("GENBOUNDS_SCALE", raising=False)
    assert get_scale() == "quick"


def test_paper_and_case(monkeypatch) -> None:
    monkeypatch.setenv("GENBOUNDS_SCALE", " Paper ")
    assert get_scale() == "paper"


def test_bad_value_names_the_variable(monkeypatch) -> None:
    monkeypatch.setenv("GENBOUNDS_SCALE", "huge")
    with pytest.raises(ValueError, match="GENBOUNDS_SCALE"):
        get_scale()


def test_banner(monkeypatch) -> None:
    monkeypatch.delenv("GENBOUNDS_SCALE", raising=False)
    assert scale_banner("synthetic") == "scale: quick · data: synthetic"
    with pytest.raises(ValueError, match="data"):
        scale_banner("  ")
    with pytest.raises(ValueError, match="scale"):
        scale_banner("x", scale="big")  # type: ignore[arg-type]
