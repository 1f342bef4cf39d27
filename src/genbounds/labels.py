"""Words for readers: one map from the code's names to what figures and tables show.

The code names things for programs: registry keys (``"trauger_tewari.cor_4_1_1.audited"``),
Jiang et al.'s measure names (``"log.sum.of.spec"``), BibTeX keys (``"catoni2007pac"``), task
and family codes (``"mnist_shallow"``), snake_case columns. A reader should see words. Every
figure label, legend entry, title, table row and column of the book goes through :func:`label`
(or :func:`readable` for a whole table), and the rendering check
(``tools/check_rendering.py``) fails a page that shows one of :func:`code_names` instead.

    >>> label("log.sum.of.spec")
    'log sum of spectral norms (balanced)'
    >>> label("trauger_tewari.cor_4_1_1.audited")
    'Trauger & Tewari, Cor. 4.1.1 (audited)'

A name the map does not know raises ``ValueError`` naming it: add it to :data:`LABELS` (one
place), rather than showing the code name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["LABELS", "PAPERS", "code_names", "is_code_name", "label", "readable"]

#: The papers, by BibTeX key (``book/references.bib``), as a reader cites them in a label.
PAPERS: dict[str, str] = {
    "trauger2024sequence": "Trauger & Tewari",
    "edelman2022inductive": "Edelman et al.",
    "dhingra2025provable": "Dhingra",
    "mwigo2026shallow": "Mwigo & Dasgupta",
    "li2026sharper": "Li et al.",
    "jiang2020fantastic": "Jiang et al.",
    "catoni2007pac": "Catoni",
    "dziugaite2017computing": "Dziugaite & Roy",
    "langford2005tutorial": "Langford",
    "lotfi2022pac": "Lotfi et al.",
    "maurer2004note": "Maurer",
    "mcallester1999pac": "McAllester",
    "perezortiz2021tighter": "Pérez-Ortiz et al.",
}

#: Every other code name a reader may meet, with its words. Keys are exact code names.
LABELS: dict[str, str] = {
    # Jiang et al.'s (2020) generalization measures, by the names their released code uses
    "num.params": "number of parameters",
    "log.prod.of.spec": "log product of spectral norms",
    "log.sum.of.spec": "log sum of spectral norms (balanced)",
    "log.prod.of.fro": "log product of Frobenius norms",
    "log.sum.of.fro": "log sum of Frobenius norms (balanced)",
    "log.prod.of.spec.over.margin": "log product of spectral norms / margin",
    "log.sum.of.spec.over.margin": "log sum of spectral norms (balanced) / margin",
    "log.prod.of.fro.over.margin": "log product of Frobenius norms / margin",
    "log.sum.of.fro.over.margin": "log sum of Frobenius norms (balanced) / margin",
    "dist.init": "distance from initialisation",
    "param.norm": "parameter norm",
    "inverse.margin": "inverse margin",
    "path.norm": "path norm",
    "path.norm.over.margin": "path norm / margin",
    "pacbayes.init": "PAC-Bayes (prior at initialisation)",
    "pacbayes.mag.init": "PAC-Bayes, magnitude-aware (prior at initialisation)",
    "pacbayes.flatness": "PAC-Bayes flatness",
    "pacbayes.mag.flatness": "PAC-Bayes flatness, magnitude-aware",
    "pacbayes.init (released noise)": "PAC-Bayes (prior at initialisation; released code's noise)",
    "pacbayes.flatness (released noise)": "PAC-Bayes flatness (released code's noise)",
    "pacbayes.init (printed noise)":
        "PAC-Bayes (prior at initialisation; Jiang et al.'s printed noise)",
    "path.norm (sum over paths)": "path norm (sum over paths)",
    # the certificates of chapter 07
    "certificates.pac_bayes_kl.audited": "PAC-Bayes-kl certificate",
    "certificates.pac_bayes_mcallester.audited": "McAllester's PAC-Bayes certificate",
    "certificates.pac_bayes_catoni.audited": "Catoni's PAC-Bayes certificate",
    "certificates.gaussian_init_prior.audited": "PAC-Bayes, Gaussian prior at initialisation",
    "certificates.gaussian_data_prior.audited": "PAC-Bayes, data-dependent Gaussian prior",
    "certificates.test_set.audited": "test-set bound",
    "certificates.occam.audited": "Occam bound",
    # spectral quantities
    "stable_rank": "stable rank",
    "nuclear_rank_ratio": "nuclear rank ratio",
    "participation_ratio": "participation ratio",
    "energy_rank": "energy rank",
    "effective_rank": "effective rank",
    "erank": "effective rank",
    "erank_max": "largest effective rank",
    "spectral_norm": "spectral norm",
    "frobenius_norm": "Frobenius norm",
    # tasks and model families (chapters 06 and 07)
    "sparse_majority": "sparse majority",
    "mnist01": "MNIST 0/1",
    "mnist01_shallow": "MNIST 0/1, shallow encoder",
    "mnist_shallow": "MNIST 0/1, shallow encoder",
    "fashion_shallow": "Fashion-MNIST stand-in, shallow encoder",
    "teacher_student": "teacher–student",
    "EdelmanTransformer": "Edelman et al.'s Transformer",
    "ShallowEncoder": "shallow encoder",
    "LiTransformer": "Li et al.'s Transformer",
    # the studies (results store names)
    "certificates": "certificates",
    "comparison": "comparison of bounds",
    "offset_rademacher": "offset Rademacher rates",
    "offset_rademacher_complexity": "offset Rademacher complexity",
    "shallow_gd": "shallow encoder trained by gradient descent",
    # columns of the studies' tables
    "train_error": "training error",
    "test_error": "test error",
    "train_loss": "training loss",
    "test_loss": "test loss",
    "gap": "generalization gap",
    "n_train": "training examples",
    "n_test": "test examples",
    "n_params": "parameters",
    "seed": "seed",
    # chapter 04 (offset Rademacher): columns of its tables
    "closed_form": "closed form",
    "rel_diff": "relative difference",
    "monte_carlo": "Monte Carlo",
    "ci_low": "95% CI, low",
    "ci_high": "95% CI, high",
    "threshold_exp_scipy": "threshold exponent (scipy)",
    "rate_scipy": "rate (scipy)",
    "rate_claimed": "rate (audited)",
    "printed_bound": "printed bound",
    "erm_excess": "excess risk of the ERM",
    "excess_ci_low": "excess risk, 95% CI low",
    "linear_offset": "linear class, offset",
    "linear_rank_over_4cn": "linear class, rank/(4cn)",
    "linear_global": "linear class, global",
    "net_offset": "one head, offset",
    "net_global": "one head, global",
    "paper_rate": "paper's rate",
    # the sparse-majority protocol (chapter 02): configuration fields and per-run columns
    "T_values": "sequence lengths T",
    "runs_per_T": "runs per length",
    "n_val": "validation examples",
    "key_dim": "key dimension",
    "lr_decay": "learning-rate decay per epoch",
    "lr_floor": "smallest learning rate",
    "batch_size": "batch size",
    "max_epochs": "epoch cap",
    "test_gap": "held-out gap (test minus training loss)",
    "val_accuracy": "validation accuracy",
    "test_accuracy": "test accuracy",
}

_FORMS = {"printed": "as printed", "audited": "audited", "reconstructed": "reconstructed"}
_STATEMENT = re.compile(r"^(thm|cor|lemma|lem|prop|eq)_?(\w+)$")
_STATEMENT_WORDS = {"thm": "Thm.", "cor": "Cor.", "lemma": "Lemma", "lem": "Lemma",
                    "prop": "Prop.", "eq": "eq."}
#: The first part of a registry key, as a paper
_KEY_PAPER = {"trauger_tewari": "Trauger & Tewari", "edelman": "Edelman et al.",
              "dhingra": "Dhingra", "shallow_gd": "Mwigo & Dasgupta",
              "offset_rademacher": "Li et al.", "measures": "Jiang et al.",
              "pacbayes": "Jiang et al.", "certificates": "certificate"}


def _registered_keys() -> dict[str, Any]:
    """The bound registry, ``{key: Bound}`` (imported lazily: the registry imports torch)."""
    import genbounds.bounds  # noqa: F401  (registers every bound)
    from genbounds.bounds.registry import registered

    return {b.key: b for b in registered()}


def _statement_words(part: str) -> str:
    if part.startswith("gap_"):
        return f"gap from {_statement_words(part[4:])}"
    m = _STATEMENT.match(part)
    if m is None:
        return part.replace("_", " ")
    kind, rest = m.groups()
    return f"{_STATEMENT_WORDS[kind]} {rest.replace('_', '.').upper()}"


def _key_label(key: str, bound: Any) -> str:
    """Words for a registry key: the paper, the statement, the form."""
    if key.startswith(("measures.", "pacbayes.")):
        if str(bound.statement) not in LABELS:
            raise ValueError(f"name: no reader's label for the measure {key!r} "
                             f"({bound.statement!r}); add one to genbounds.labels.LABELS")
        return LABELS[str(bound.statement)]
    parts = key.split(".")
    paper = _KEY_PAPER.get(parts[0], PAPERS.get(str(bound.paper), parts[0]))
    form = _FORMS.get(parts[-1], parts[-1])
    middle = ", ".join(_statement_words(p) for p in parts[1:-1])
    return f"{paper}, {middle} ({form})"


def label(name: str) -> str:
    """The words a reader sees for the code name ``name``.

    Known names: :data:`LABELS`, :data:`PAPERS` (BibTeX keys) and every key of the bound
    registry (``"<paper>.<statement>.<form>"``). Raises ``ValueError`` naming ``name`` for any
    other name (add it to :data:`LABELS`), ``TypeError`` when it is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"name: expected a str, got {type(name).__name__}")
    if name in LABELS:
        return LABELS[name]
    if name in PAPERS:
        return PAPERS[name]
    bounds = _registered_keys()
    if name in bounds:
        return _key_label(name, bounds[name])
    raise ValueError(f"name: no reader's label for {name!r}; add one to genbounds.labels.LABELS")


def is_code_name(text: str) -> bool:
    """True when ``text`` looks like a name for programs: a dotted or snake_case identifier
    (``log.sum.of.spec``, ``mnist_shallow``) or a BibTeX key (``catoni2007pac``)."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    s = text.strip()
    return bool(re.fullmatch(r"[a-z][a-z0-9]*([._][a-z0-9]+)+", s)
                or re.fullmatch(r"[a-z]+(19|20)\d\d[a-z]+", s))


def code_names() -> frozenset[str]:
    """Every code name that must not reach a reader: the keys of the map, the BibTeX keys of
    the papers, and every registry key. Words such as ``"seed"`` or ``"gap"`` that are also
    plain English are left out."""
    names = {k for k in LABELS if is_code_name(k)} | set(PAPERS) | set(_registered_keys())
    return frozenset(names)


def readable(frame: Any, names: Iterable[str] = ()) -> Any:
    """A copy of the pandas ``frame`` with its index, columns and the cells of the columns
    ``names`` in words (:func:`label`); a name without a label stays as it is only when it is
    not a code name (plain words, numbers), else ``ValueError``. Show it without pandas'
    ``0..n-1`` index: ``readable(df).style.hide(axis="index")``."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame: expected a pandas DataFrame, got {type(frame).__name__}")

    def word(x: Any) -> Any:
        if not isinstance(x, str):
            return x
        try:
            return label(x)
        except ValueError:
            if is_code_name(x):
                raise
            return x

    out = frame.copy()
    for col in names:
        if col not in out.columns:
            raise ValueError(f"names: {col!r} is not a column of the frame")
        out[col] = out[col].map(word)
    out.columns = [word(c) for c in out.columns]
    if not isinstance(out.index, pd.RangeIndex):
        out.index = out.index.map(word)
    return out
