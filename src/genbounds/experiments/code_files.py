"""Which ``genbounds`` files each experiment's units execute: the code fingerprint's coverage.

A stored result is marked stale when a file its experiment declares here changes (as a
normalised syntax tree: comments, docstrings and formatting do not count,
:func:`genbounds.results.provenance.code_fingerprint`). The lists are what a tiny unit of every
kind of the experiment, at both scales, executes (functions run, traced with
:func:`sys.setprofile`; ``tests/test_fingerprints.py`` repeats the trace and fails if a file
that ran is missing here, or a file listed here did not run and is not in
:data:`NOT_TRACED_HERE` with its reason). Too narrow, and an edit to code a unit runs would go
unnoticed; too broad, and an edit elsewhere marks results stale for nothing (issue 28: 22 of 27
paper units were stale by edits to code they never call).
"""

from __future__ import annotations

__all__ = ["CODE", "NOT_TRACED_HERE", "code_of"]

_TRAIN = ("genbounds.train.config", "genbounds.train.evaluate", "genbounds.train.inputs",
          "genbounds.train.loop", "genbounds.train.losses", "genbounds.train.memory",
          "genbounds.train.precision", "genbounds.train.state", "genbounds.train.step",
          "genbounds.train.stopping")
"""The training engine's files that every ``train_ensemble`` call runs."""

CODE: dict[str, tuple[str, ...]] = {
    "sparse_majority": (
        *_TRAIN, "genbounds.bounds.trauger_tewari_notation", "genbounds.data.base",
        "genbounds.data.sparse_majority", "genbounds.experiments.sparse_majority",
        "genbounds.models.base", "genbounds.models.sparse_majority_mha", "genbounds.norms",
        "genbounds.protocols", "genbounds.spectral", "genbounds.train.checkpoint",
        "genbounds.train.fused_protocol", "genbounds.validation"),
    "shallow_gd": (
        *_TRAIN, "genbounds.bounds.shallow_gd", "genbounds.data.base", "genbounds.data.mnist",
        "genbounds.experiments.shallow_gd", "genbounds.models.base",
        "genbounds.models.shallow_encoder", "genbounds.norms", "genbounds.protocols",
        "genbounds.spectral", "genbounds.validation"),
    "offset_rademacher": (
        *_TRAIN, "genbounds.data.base", "genbounds.data.teacher_student",
        "genbounds.experiments.offset_rademacher", "genbounds.models.base",
        "genbounds.models.li_transformer", "genbounds.norms", "genbounds.protocols",
        "genbounds.spectral", "genbounds.train.checkpoint", "genbounds.validation"),
    "offset_rademacher_complexity": (
        "genbounds.complexity", "genbounds.experiments.offset_rademacher",
        "genbounds.models.base", "genbounds.models.li_transformer",
        "genbounds.offset_complexity", "genbounds.validation"),
    "effective_rank": (
        *_TRAIN, "genbounds.bounds.effective_rank", "genbounds.data.base",
        "genbounds.data.mnist", "genbounds.data.retrieval", "genbounds.data.sparse_majority",
        "genbounds.experiments.effective_rank", "genbounds.models.base",
        "genbounds.models.edelman", "genbounds.models.edelman_fast", "genbounds.protocols",
        "genbounds.spectral", "genbounds.train.checkpoint", "genbounds.validation"),
    "comparison": (
        *_TRAIN, "genbounds.bounds.effective_rank", "genbounds.bounds.effective_rank_notation",
        "genbounds.bounds.measures", "genbounds.bounds.pac_bayes",
        "genbounds.bounds.shallow_gd", "genbounds.bounds.shallow_gd_notation",
        "genbounds.data.base", "genbounds.data.mnist", "genbounds.data.sparse_majority",
        "genbounds.data.teacher_student", "genbounds.experiments.comparison",
        "genbounds.experiments.offset_rademacher", "genbounds.kl", "genbounds.models.base",
        "genbounds.models.edelman", "genbounds.models.li_transformer",
        "genbounds.models.shallow_encoder", "genbounds.norms", "genbounds.protocols",
        "genbounds.spectral", "genbounds.train.checkpoint", "genbounds.validation"),
    "certificates": (
        "genbounds.bounds.compression", "genbounds.bounds.derandomise",
        "genbounds.bounds.effective_rank",
        "genbounds.bounds.effective_rank_notation",
        "genbounds.bounds.offset_rademacher_notation", "genbounds.bounds.pac_bayes",
        "genbounds.bounds.registry", "genbounds.bounds.shallow_gd",
        "genbounds.bounds.shallow_gd_notation", "genbounds.bounds.trauger_tewari",
        "genbounds.bounds.trauger_tewari_notation", "genbounds.complexity",
        "genbounds.data.base", "genbounds.data.mnist", "genbounds.data.sparse_majority",
        "genbounds.data.teacher_student", "genbounds.experiments.certificates",
        "genbounds.experiments.comparison", "genbounds.kl", "genbounds.models.base",
        "genbounds.models.edelman", "genbounds.models.li_transformer",
        "genbounds.models.shallow_encoder", "genbounds.norms", "genbounds.protocols",
        "genbounds.spectral", "genbounds.validation"),
    "preregistered_certificate": (  # certificates' run_unit on MNIST units only
        "genbounds.bounds.compression", "genbounds.bounds.derandomise",
        "genbounds.bounds.effective_rank_notation",
        "genbounds.bounds.offset_rademacher_notation", "genbounds.bounds.pac_bayes",
        "genbounds.bounds.registry", "genbounds.bounds.shallow_gd",
        "genbounds.bounds.shallow_gd_notation", "genbounds.bounds.trauger_tewari_notation",
        "genbounds.data.base", "genbounds.data.mnist", "genbounds.experiments.certificates",
        "genbounds.experiments.comparison", "genbounds.kl", "genbounds.models.base",
        "genbounds.models.shallow_encoder", "genbounds.norms", "genbounds.protocols",
        "genbounds.spectral", "genbounds.validation"),
    "margin_certificates": (
        "genbounds.bounds.margin", "genbounds.bounds.pac_bayes", "genbounds.bounds.registry",
        "genbounds.data.base", "genbounds.data.mnist", "genbounds.experiments.certificates",
        "genbounds.experiments.margin_certificates", "genbounds.kl", "genbounds.models.base",
        "genbounds.models.shallow_encoder", "genbounds.validation"),
}

NOT_TRACED_HERE: dict[str, dict[str, str]] = {
    "margin_certificates": {
        "bounds/registry.py": "declared when the committed paper units were computed (5d117d7) "
                              "although no unit runs it; dropping it changes the fingerprint and "
                              "would mark those four units (31-34 CPU-min each) stale for a file "
                              "they never ran: drop it when they are next recomputed",
    },
}
"""Per experiment, declared files a tiny unit on a CPU does not execute, with the reason they
are declared all the same (e.g. a branch only a GPU or a paper-scale size takes)."""


def code_of(name: str) -> tuple[str, ...]:
    """The declared modules of experiment ``name`` (``ValueError`` naming it if unknown)."""
    if name not in CODE:
        raise ValueError(f"name: no code declaration for experiment {name!r}; known: "
                         f"{sorted(CODE)}")
    return CODE[name]
