"""The table and number formatter: what a reader sees for each kind of value, and bad input."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from genbounds.tables import format_bool, format_frame, format_number

E_NOTATION = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize(("x", "shown"), [
    (13912.3, "1.39 × 10⁴"),
    (9999.6, "1.00 × 10⁴"),  # rounded first, then placed
    (1234.5, "1,230"),
    (0.00123, "0.00123"),
    (0.000999, "9.99 × 10⁻⁴"),
    (1e-5, "1.00 × 10⁻⁵"),
    (-2.5, "\u22122.50"),
    (0.1, "0.100"),
    (123.456, "123"),
    (0.0, "0"),
    (12345, "12,345"),
    (np.int64(-7), "\u22127"),
    (np.float32(0.5), "0.500"),
    (np.float64(3e20), "3.00 × 10²⁰"),
    (float("nan"), "undefined"),
    (float("inf"), "infinite"),
    (-np.inf, "\u2212infinite"),
])
def test_format_number(x: object, shown: str) -> None:
    assert format_number(x) == shown
    assert not E_NOTATION.search(format_number(x))


def test_format_number_options() -> None:
    assert format_number(0.123456, sig=5) == "0.12346"
    assert format_number(13912.3, hi=1e6) == "13,900"
    assert format_number(0.25, plus=True) == "+0.250"
    assert format_number(3, plus=True) == "+3"
    assert format_number(np.array(2.0)) == "2.00"


@pytest.mark.parametrize(("call", "name"), [
    (lambda: format_number("1.0"), "x must be a real number"),
    (lambda: format_number(True), "x must be a real number"),
    (lambda: format_number(None), "x must be a real number"),
    (lambda: format_number(1.0, sig=0), "sig must be"),
    (lambda: format_number(1.0, sig=2.5), "sig must be"),
    (lambda: format_number(1.0, lo=1.0, hi=0.5), "lo and hi"),
    (lambda: format_bool(1), "b must be a bool"),
    (lambda: format_bool("yes"), "b must be a bool"),
    (lambda: format_frame([1, 2]), "df must be a pandas DataFrame"),
    (lambda: format_frame(pd.DataFrame({"a": [1.0]}), sig={"b": 2}), "sig: \\['b'\\]"),
    (lambda: format_frame(pd.DataFrame({"a": [1.0]}), sig={"a": 0}), "sig\\['a'\\] must be"),
    (lambda: format_frame(pd.DataFrame({"a": [1.0]}), index="yes"), "index must be"),
    (lambda: format_frame(pd.DataFrame({"a": [1.0]}), na_rep=0), "na_rep must be"),
    (lambda: format_frame(pd.DataFrame({"a": [[1, 2]]})), "df: a cell holds a list"),
])
def test_bad_input_is_named(call: object, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()  # type: ignore[operator]


def test_format_bool() -> None:
    assert (format_bool(True), format_bool(np.bool_(False))) == ("✓", "✗")


def test_format_frame_cells_and_layout() -> None:
    df = pd.DataFrame({"setting": ["small", None], "holds": [True, np.False_],
                       "bound": [13912.3, np.nan], "n": [3, 40_000]})
    styler = format_frame(df, sig={"bound": 2})
    shown = styler.data
    assert shown.to_dict("list") == {"setting": ["small", "—"], "holds": ["✓", "✗"],
                                     "bound": ["1.4 × 10⁴", "undefined"],
                                     "n": ["3", "40,000"]}
    html = styler.to_html()
    # pandas names the table's CSS ids with a random hexadecimal uuid ("T_5e5aa"), which can
    # look like e-notation: the check reads the html without them
    text = re.sub(r"T_[0-9a-f]+", "T_", html)
    assert "True" not in text and "False" not in text and not E_NOTATION.search(text)
    assert "text-align: right" in html and "text-align: left" in html and "padding" in html
    # a 0..n-1 index is hidden; a meaningful one is shown, formatted
    assert "row_heading" not in html
    named = format_frame(df.set_index(pd.Index([1000, 2000], name="N"))).to_html()
    assert 'class="row_heading' in named and "1,000" in named
    assert "row_heading" in format_frame(df, index=True).to_html()
    assert "row_heading" not in format_frame(df.set_index("n"), index=False).to_html()


def test_format_frame_multiindex_entries_are_formatted() -> None:
    df = pd.DataFrame({"slope": [0.5, -1.25]},
                      index=pd.MultiIndex.from_tuples([("a", 1000), ("$b$", 2)],
                                                      names=["task", "n"]))
    shown = format_frame(df).data
    assert list(shown.index) == [("a", "1,000"), ("\\(b\\)", "2")]
    assert list(shown.index.names) == ["task", "n"]
    assert shown["slope"].tolist() == ["0.500", "\u22121.25"]


def test_format_frame_na_rep() -> None:
    df = pd.DataFrame({"a": [np.nan, 1.0], "b": ["x", None]})
    assert format_frame(df, na_rep="not run").data.to_dict("list") == {
        "a": ["not run", "1.00"], "b": ["x", "not run"]}


def test_format_frame_leaves_input_alone() -> None:
    df = pd.DataFrame({"a": [0.123456, 2.0]})
    format_frame(df)
    assert df["a"].tolist() == [0.123456, 2.0]


def test_format_frame_math_is_typeset() -> None:
    df = pd.DataFrame({"$\\|W\\|_F$": [1.0], "weights": ["$W_Q$ and $W_K$"]},
                      index=pd.Index(["$a$"], name="$n$"))
    styler = format_frame(df)
    assert list(styler.data.columns) == ["\\(\\|W\\|_F\\)", "weights"]
    assert styler.data.iloc[0, 1] == "\\(W_Q\\) and \\(W_K\\)"
    assert list(styler.data.index) == ["\\(a\\)"] and styler.data.index.name == "\\(n\\)"
    assert 'class="mathjax_process"' in styler.to_html()
    assert "mathjax_process" not in format_frame(pd.DataFrame({"a": ["no math"]})).to_html()
