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

Then each statement's own setting is checked against the model, again with a reason:

* the offset-complexity theorems (4.4, 4.7, 4.11) need ``offset_complexity`` (and, audited,
  ``noise_offset_complexity``), offset complexities of the class at this ``n``: refused unless
  the row stores ``li.offset_complexity`` (the comparison sweep does not estimate them per
  model);
* the cover corollaries (4.5, 4.8, 4.13) need a log covering number of the class at a chosen
  scale, which no row stores: refused with that reason (their printed form is also false,
  chapter 4's one-token counterexample; the norm- and rank-based theorems below are their
  evaluated instances);
* the truncated-input theorems (6.4-6.6, they need ``M``) apply only to ERMs trained on inputs
  truncated at ``M`` (context ``truncated``), the heavy-tail theorems (6.9-6.11, they need
  ``beta``) only to the robust loss on heavy-tailed inputs (context ``robust``);
* the architecture must be the statement's: a one-head statement (needs neither ``heads`` nor
  ``layers``) needs ``heads = depth = 1``; an ``H``-head statement (needs ``heads``) one layer;
  an ``L``-layer statement (needs ``layers``) at least two layers.

When all hold, every quantity a bound needs is read from the row's column ``"li.<name>"``
(``n``, ``heads`` and ``layers`` may come from the context: ``m``, ``heads``, ``depth``; the
noise standard deviation ``sigma`` that every *audited* form needs, from ``li.sigma`` or the
context's ``noise_std``: the teacher-student task knows it). The printed forms do not read
``sigma``: their statistical term has no noise term, which is why chapter 4 finds them false. The
weight-norm bounds ``B_c, B_v, B_QK`` are different norms in the two families of statements:
``l_{1,1}`` norms in the norm-based theorems (B.1, B.2, 5.3, 6.4-6.6) and spectral norms in the
rank-based ones (B.4, B.5, 5.8, 6.9-6.11, recognised by needing ``r_QK``), read from
``li.l11.<name>`` and ``li.spectral.<name>`` respectively (as chapter 4 evaluates them). A missing
column is reported by name. The classification tasks of the comparison chapter (logistic loss,
0/1 labels, no teacher) fail the first check, and the chapter prints that reason.
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
_SIZES: dict[str, str] = {"n": "m", "heads": "heads", "layers": "depth", "sigma": "noise_std"}
_INTS = ("n", "heads", "layers", "d", "k", "T", "r_QK", "r_v", "r_c")
#: Weight-norm bounds read as l_{1,1} (norm-based statements) or spectral (rank-based) norms.
_WEIGHT_NORMS = ("B_c", "B_v", "B_QK")


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
    _check_statement(bound, row, context)
    out: dict[str, Any] = {}
    missing = []
    norms = "spectral." if "r_QK" in bound.needs else "l11."
    for q in bound.needs:
        col = PREFIX + (norms + q if q in _WEIGHT_NORMS else q)
        if col in row:
            out[q] = int(row[col]) if q in _INTS else float(row[col])
        elif q in _SIZES and _SIZES[q] in context:
            out[q] = int(context[_SIZES[q]]) if q in _INTS else float(context[_SIZES[q]])
        else:
            missing.append(col)
    if missing:
        raise NotApplicable(f"no stored column {missing} for {bound.key}")
    return out


def _check_statement(bound: Bound, row: Mapping[str, Any], context: Mapping[str, Any]) -> None:
    """Refuse, with the reason, a statement whose own setting is not the model's (module
    docstring)."""
    needs = set(bound.needs)
    if "offset_complexity" in needs:
        if PREFIX + "offset_complexity" not in row:
            raise NotApplicable(
                f"needs the offset Rademacher complexity of the class at this n "
                f"({PREFIX}offset_complexity), which is not estimated per model")
        return
    if "log_covering" in needs:
        raise NotApplicable(
            "needs a log covering number of the class at a chosen scale, which is not stored "
            "per model (the norm- and rank-based theorems are its evaluated instances); the "
            "printed corollary has no noise term and is false (chapter 4's one-token "
            "counterexample)")
    if "beta" in needs and not context.get("robust", False):
        raise NotApplicable("about a robust loss on heavy-tailed inputs; these students were "
                            "trained on the squared loss")
    if "M" in needs and not context.get("truncated", False):
        raise NotApplicable("about the ERM on inputs truncated at M; these students were "
                            "trained on raw inputs")
    heads, depth = int(context.get("heads", 1)), int(context.get("depth", 1))
    if "layers" in needs:
        if depth < 2:
            raise NotApplicable("an L-layer statement (L >= 2); this model has one layer")
    elif "heads" in needs:
        if depth != 1:
            raise NotApplicable(f"an H-head one-layer statement; this model has {depth} layers")
    elif heads != 1 or depth != 1:
        raise NotApplicable(f"a one-head one-layer statement; this model has {heads} heads and "
                            f"{depth} layers")


register_quantities(PAPER, li_quantities)
