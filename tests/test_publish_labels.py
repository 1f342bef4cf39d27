"""The naming map: code names to words for readers (``genbounds.labels``)."""

from __future__ import annotations

import pandas as pd
import pytest

from genbounds import labels
from genbounds.bounds.registry import registered


def test_known_names_have_words() -> None:
    assert labels.label("log.sum.of.spec") == "log sum of spectral norms (balanced)"
    assert labels.label("catoni2007pac") == "Catoni"
    assert labels.label("trauger_tewari.cor_4_1_1.audited") == (
        "Trauger & Tewari, Cor. 4.1.1 (audited)")
    assert labels.label("offset_rademacher.thm_b_1.printed") == "Li et al., Thm. B.1 (as printed)"


def test_every_registered_bound_has_a_label_without_code_names() -> None:
    names = labels.code_names()
    for bound in registered():
        words = labels.label(bound.key)
        assert words and words != bound.key
        assert not labels.is_code_name(words), (bound.key, words)
        assert not any(tok in names for tok in words.split()), (bound.key, words)


def test_unknown_and_bad_names_fail_clearly() -> None:
    with pytest.raises(ValueError, match="name: no reader's label for 'no_such.name'"):
        labels.label("no_such.name")
    with pytest.raises(TypeError, match="name"):
        labels.label(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text"):
        labels.is_code_name(None)  # type: ignore[arg-type]


def test_code_names() -> None:
    names = labels.code_names()
    assert {"log.sum.of.spec", "mnist_shallow", "catoni2007pac", "dist.init"} <= names
    assert "seed" not in names and "gap" not in names  # plain words
    assert labels.is_code_name("pacbayes.mag.init") and labels.is_code_name("nuclear_rank_ratio")
    assert not labels.is_code_name("log sum of spectral norms (balanced)")
    assert not labels.is_code_name("Thm. 4.1")


def test_readable_frame() -> None:
    df = pd.DataFrame({"measure": ["dist.init", "a plain word"], "test_error": [0.1, 0.2]})
    out = labels.readable(df, ["measure"])
    assert list(out.columns) == ["measure", "test error"]
    assert list(out["measure"]) == ["distance from initialisation", "a plain word"]
    assert list(df["measure"]) == ["dist.init", "a plain word"]  # the input is not changed
    with pytest.raises(ValueError, match="no reader's label for 'unknown_code'"):
        labels.readable(pd.DataFrame({"m": ["unknown_code"]}), ["m"])
    with pytest.raises(ValueError, match="names"):
        labels.readable(df, ["no column"])
    with pytest.raises(TypeError, match="frame"):
        labels.readable([1, 2])
