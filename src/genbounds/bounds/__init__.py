"""Generalization bounds from the papers, as functions of norms, sizes and explicit constants.

- :mod:`genbounds.bounds.common`          :class:`BoundValue`, validation, Dudley closed forms
- :mod:`genbounds.bounds.trauger_tewari`  Trauger & Tewari (AISTATS 2024): Lemmas 3.3/3.4/3.6,
  Thm 4.1 with Cors 4.1.1, D.0.1, D.0.2, multi-head, Thm 4.2 / Cor 4.2.1, generalization gap
- :mod:`genbounds.bounds.baselines`       Edelman, Goel, Kakade & Zhang (ICML 2022): the
  single-head norm-based bound that grows with ``log T`` (reconstructed)

Every bound returns a :class:`BoundValue` (value, named terms, every constant, reference,
assumptions).
"""

from __future__ import annotations

from genbounds.bounds import baselines, trauger_tewari
from genbounds.bounds.common import DUDLEY_C_BARTLETT_2017, BoundValue, dudley_inverse_square

__all__ = [
    "DUDLEY_C_BARTLETT_2017",
    "BoundValue",
    "baselines",
    "dudley_inverse_square",
    "trauger_tewari",
]
