"""One formatter for every table and printed number of the book.

A reader sees numbers with a few significant digits, thousands separators and a true minus sign,
never e-notation (``1.39 × 10⁴`` instead of ``1.39e+04``), yes/no as ✓ / ✗ instead of Python's
``True`` / ``False``, and ``nan`` / ``inf`` in words. :func:`format_frame` applies this to a whole
pandas frame and returns what a chapter displays: a Styler with right-aligned, padded columns,
without pandas' ``0..n-1`` index.

    display(format_frame(readable(df)))        # in a chapter
    print(f"bound {format_number(b)}")          # in a printed result
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["format_bool", "format_frame", "format_number"]

MINUS = "\u2212"  # the minus sign, not the hyphen
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
#: words for the values that are not finite numbers
NOT_FINITE = {"nan": "undefined", "inf": "infinite", "-inf": f"{MINUS}infinite"}
#: what an empty cell (None, NaN in a column of text) shows
EMPTY = "—"
#: ``$...$`` in a header or a cell of text: inline math, typeset by MathJax in the table
_DOLLAR = re.compile(r"\$([^$\n]+)\$")


def _check_sig(sig: Any, name: str = "sig") -> int:
    if isinstance(sig, bool) or not isinstance(sig, numbers.Integral) or not 1 <= int(sig) <= 15:
        raise ValueError(f"{name} must be an integer from 1 to 15, got {sig!r}")
    return int(sig)


def format_number(x: Any, sig: int = 3, *, lo: float = 1e-3, hi: float = 1e4,
                  plus: bool = False) -> str:
    """``x`` for a reader: ``sig`` significant digits, thousands separators, a true minus sign.

    Integers (Python or NumPy) are shown whole (``12,345``). A float with ``lo <= |x| < hi``
    (after rounding) is shown positionally (``0.00123``, ``13.9``, ``1,390``), any other as
    ``1.39 × 10⁴`` / ``1.39 × 10⁻⁵``; zero as ``0``. NaN and infinities are words (``undefined``,
    ``infinite``). ``plus`` puts a ``+`` before positive numbers (for differences).
    """
    sig = _check_sig(sig)
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        import numpy as np

        if not (isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iuf"):
            raise ValueError(f"x must be a real number (not a bool), got {type(x).__name__}"
                             f" {x!r:.40}")
        x = x.item()
    if not (isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real) and 0 < lo < hi):
        raise ValueError(f"lo and hi must satisfy 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    sign = "+" if plus else ""
    if isinstance(x, numbers.Integral):
        n = int(x)
        return (MINUS if n < 0 else sign if n > 0 else "") + f"{abs(n):,}"
    v = float(x)
    if math.isnan(v):
        return NOT_FINITE["nan"]
    if math.isinf(v):
        return NOT_FINITE["inf"] if v > 0 else NOT_FINITE["-inf"]
    if v == 0:
        return "0"
    head = MINUS if v < 0 else sign
    mantissa, exp_s = f"{abs(v):.{sig - 1}e}".split("e")  # rounded to sig digits first
    exp = int(exp_s)
    rounded = float(f"{mantissa}e{exp}")
    if lo <= rounded < hi:
        decimals = max(sig - 1 - exp, 0)
        return head + f"{rounded:,.{decimals}f}"
    return f"{head}{mantissa} × 10{str(exp).translate(_SUPERSCRIPT)}"


def format_bool(b: Any) -> str:
    """``"✓"`` for true, ``"✗"`` for false (Python or NumPy booleans only)."""
    import numpy as np

    if not isinstance(b, bool | np.bool_):
        raise ValueError(f"b must be a bool, got {type(b).__name__} {b!r:.40}")
    return "✓" if b else "✗"


def _cell(x: Any, sig: int) -> str:
    """One cell of a table as text."""
    import numpy as np

    if x is None:
        return EMPTY
    if isinstance(x, bool | np.bool_):
        return format_bool(x)
    if isinstance(x, numbers.Real):
        return format_number(x, sig)
    if isinstance(x, str):
        return x
    raise ValueError(f"df: a cell holds a {type(x).__name__} ({x!r:.40}); a table shows "
                     "numbers, booleans and text only")


def _label(x: Any) -> str:
    """An index entry as text: numbers and booleans formatted, anything else as ``str``."""
    try:
        return _cell(x, 3)
    except ValueError:
        return str(x)


def format_frame(df: Any, sig: int | Mapping[Any, int] = 3, *,
                 index: bool | None = None, na_rep: str | None = None) -> Any:
    """What a chapter displays for the pandas frame ``df``: a Styler of text cells.

    Every number goes through :func:`format_number` (``sig`` significant digits, or a mapping
    from column to digits, 3 for the columns it leaves out), every boolean through
    :func:`format_bool`; missing values show ``—`` in a column of text and ``undefined`` in one
    of numbers, or ``na_rep`` in both; text stays as it is. Number columns are
    right-aligned, text columns left-aligned, every cell padded. The index is hidden when it is
    pandas' ``0..n-1`` range (``index=None``), or as ``index`` says (a MultiIndex keeps its
    levels, each entry formatted). ``$...$`` in a header, an
    index entry or a cell of text is typeset by MathJax (the table is marked for it: a book's
    cell outputs are not typeset otherwise). The Styler's ``.data`` is the frame of strings (for
    tests and asserts that read the table as shown), with ``$...$`` as ``\\(...\\)``.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if isinstance(sig, Mapping):
        unknown = [c for c in sig if c not in df.columns]
        if unknown:
            raise ValueError(f"sig: {unknown!r} not among the columns of df")
        digits = {c: _check_sig(sig.get(c, 3), f"sig[{c!r}]") for c in df.columns}
    else:
        digits = dict.fromkeys(df.columns, _check_sig(sig))
    if na_rep is not None and not isinstance(na_rep, str):
        raise ValueError(f"na_rep must be a str or None, got {type(na_rep).__name__}")
    if index is not None and not isinstance(index, bool):
        raise ValueError(f"index must be True, False or None, got {index!r}")
    if not df.columns.is_unique:
        raise ValueError("df: its column names must be unique")

    out = pd.DataFrame(index=df.index)
    numeric: list[Any] = []
    for pos, col in enumerate(df.columns):
        series = df.iloc[:, pos]
        is_text = any(isinstance(v, str) for v in series)
        cells = []
        for v in series.tolist():
            if v is None or (isinstance(v, float) and math.isnan(v)):
                # a missing entry: a dash in a column of words, "undefined" in one of numbers
                cells.append(na_rep if na_rep is not None else EMPTY if is_text or v is None
                             else NOT_FINITE["nan"])
            else:
                cells.append(_cell(v, digits[col]))
        out[col] = cells
        if not is_text:
            numeric.append(col)
    show_index = (not isinstance(df.index, pd.RangeIndex)
                  or not df.index.equals(pd.RangeIndex(len(df)))) if index is None else index
    if show_index:
        if isinstance(df.index, pd.MultiIndex):
            out.index = pd.MultiIndex.from_tuples(
                [tuple(_label(u) for u in v) for v in df.index], names=df.index.names)
        else:
            out.index = pd.Index([_label(v) for v in df.index], name=df.index.name)
    has_math = False

    def tex(text: Any) -> Any:
        nonlocal has_math
        if not isinstance(text, str) or not _DOLLAR.search(text):
            return text
        has_math = True
        return _DOLLAR.sub(r"\\(\1\\)", text)

    out = out.map(tex)
    out.columns = [tex(c) for c in out.columns]
    if show_index and isinstance(out.index, pd.MultiIndex):
        out.index = pd.MultiIndex.from_tuples([tuple(tex(u) for u in v) for v in out.index],
                                              names=[tex(n) for n in out.index.names])
    elif show_index:
        out.index = pd.Index(out.index.map(tex), name=tex(out.index.name))
    numeric = [tex(c) for c in numeric]
    styler = out.style
    if has_math:
        styler = styler.set_table_attributes('class="mathjax_process"')
    if not show_index:
        styler = styler.hide(axis="index")
    pad = [("padding", "0.1em 0.45em")]
    styler = styler.set_table_styles([{"selector": "td, th", "props": pad}], overwrite=False)
    text_cols = [c for c in out.columns if c not in numeric]
    if numeric:  # numbers never break inside, and line up on the right (text may wrap)
        styler = styler.set_properties(subset=numeric,
                                       **{"text-align": "right", "white-space": "nowrap"})
        styler = styler.set_table_styles(
            {c: [{"selector": "th", "props": [("text-align", "right")]}] for c in numeric},
            overwrite=False)
    if text_cols:
        styler = styler.set_properties(subset=text_cols, **{"text-align": "left"})

    return styler
