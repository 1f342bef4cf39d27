r"""Li et al. (2026)'s quantities read from a stored model row, for the comparison chapter's loop.

Every bound of :mod:`genbounds.bounds.offset_rademacher` is an **excess-risk** bound for the
**squared loss** in a **well-specified** regression model: ``y = f*(x) + noise`` with ``f*`` in
(or approximated by) the Transformer class, ``|f*| <= B`` (their Assumptions 4.1-4.3). The
excess risk ``E(f_hat - f*)^2`` is only measurable when the regression function ``f*`` is known,
i.e. in a teacher-student environment.

:func:`li_quantities` is the registered quantities adapter. It checks those hypotheses on the
run's ``context`` **at run time** and raises :class:`~genbounds.bounds.registry.NotApplicable`
naming the one that fails:

* ``context["loss"]`` must be ``"mse"`` (the squared loss the theorems are about);
* ``context["teacher"]`` must be true (a known regression function ``f*``, so that the excess
  risk is defined and measurable).

When both hold, every quantity a bound needs is read from the row's column ``"li.<name>"``
(``n``, ``heads`` and ``layers`` may come from the context: ``m``, ``heads``, ``depth``); a
missing column is reported by name. The classification sweep of the comparison chapter (logistic
loss, 0/1 labels, no teacher) fails the first check, and the chapter prints that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from genbounds.bounds.offset_rademacher import PAPER
from genbounds.bounds.registry import Bound, NotApplicable, register_quantities

__all__ = ["PREFIX", "li_quantities"]

#: Prefix of the stored columns the adapter reads.
PREFIX = "li."
#: Sizes that may come from the context: bound quantity -> context key.
_SIZES: dict[str, str] = {"n": "m", "heads": "heads", "layers": "depth"}
_INTS = ("n", "heads", "layers", "d", "k", "T", "r_QK", "r_v", "r_c")


def li_quantities(row: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """The quantities adapter of ``li2026sharper`` (see the module docstring)."""
    bound: Bound = context["bound"]
    loss = context.get("loss")
    if loss != "mse":
        raise NotApplicable(
            f"an excess-risk bound for the squared loss in a well-specified regression model; "
            f"this model was trained on the {loss!r} loss (task {context.get('task')!r}), "
            f"outside its hypotheses")
    if not context.get("teacher", False):
        raise NotApplicable(
            f"needs a known regression function f* (a teacher) to define the excess risk; "
            f"task {context.get('task')!r} has none")
    out: dict[str, Any] = {}
    missing = []
    for q in bound.needs:
        col = PREFIX + q
        if col in row:
            out[q] = int(row[col]) if q in _INTS else float(row[col])
        elif q in _SIZES and _SIZES[q] in context:
            out[q] = int(context[_SIZES[q]])
        else:
            missing.append(col)
    if missing:
        raise NotApplicable(f"no stored column {missing} for {bound.key}")
    return out


register_quantities(PAPER, li_quantities)
