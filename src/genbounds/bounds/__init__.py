"""Generalization bounds from the papers, as functions of norms, sizes and explicit constants.

- :mod:`genbounds.bounds.registry`                 :class:`BoundKind`, :class:`BoundValue`,
  :class:`Bound`, :func:`register`, :func:`registered` (the interface every bound follows)
- :mod:`genbounds.bounds.trauger_tewari`           Trauger & Tewari (AISTATS 2024): Lemmas
  3.3/3.4/3.6, Thm 4.1 with Cors 4.1.1, D.0.1, D.0.2, multi-head, Thm 4.2 / Cor 4.2.1, gap
- :mod:`genbounds.bounds.trauger_tewari_notation`  their notation as an adapter over the
  model view, and the norms their bounds need
- :mod:`genbounds.bounds.baselines`                Edelman, Goel, Kakade & Zhang (ICML 2022):
  the single-head norm-based bound that grows with ``log T`` (reconstructed)
- :mod:`genbounds.bounds.shallow_gd`               the shallow-encoder GD paper (Mwigo &
  Dasgupta 2026): Lemmas 1, 2, 4 and Theorem 5, printed and audited
- :mod:`genbounds.bounds.offset_rademacher`        Li et al. (2026): fast-rate excess-risk
  bounds via offset Rademacher complexity (single head, multi-head, multi-layer, norm- and
  rank-based, truncation), printed and audited
- :mod:`genbounds.bounds.effective_rank`           Dhingra (2025): the effective-rank capacity
  bound of Theorem 1, printed and audited (what the proof actually proves)
- :mod:`genbounds.bounds.pac_bayes`                PAC-Bayes certificates (kl / McAllester /
  Catoni, Gaussian posteriors, Monte Carlo, test-set bound) and
  :mod:`genbounds.bounds.compression` the compression (Occam) bound (chapter 07)
- :mod:`genbounds.bounds.measures`                 the generalization measures of Jiang et al.
  (2020) as Dziugaite et al.'s released code defines them, compared in the comparison chapter
  (kind ``MEASURE``: not bounds); :mod:`genbounds.bounds.measures_peer` a transliteration of
  that code, used only to check them

The bounds see models only through the protocols of :mod:`genbounds.protocols`: importing this
package loads no model family, and the binary kl comes from :mod:`genbounds.kl`.

Importing this package registers every bound: ``registered()`` lists them, and
``python -m genbounds bounds`` prints one per line.
"""

from __future__ import annotations

# every paper's bounds, and its adapter from stored norm tables to their inputs (``*_notation``:
# registers the paper's quantities), are registered by importing them here
from genbounds.bounds import (
    baselines,
    compression,
    effective_rank,
    effective_rank_notation,
    measures,
    offset_rademacher,
    offset_rademacher_notation,
    pac_bayes,
    shallow_gd,
    shallow_gd_notation,
    trauger_tewari,
    trauger_tewari_notation,
)
from genbounds.bounds.registry import (
    DUDLEY_C_BARTLETT_2017,
    Bound,
    BoundKind,
    BoundValue,
    Verdict,
    get,
    register,
    registered,
)

__all__ = [
    "DUDLEY_C_BARTLETT_2017",
    "Bound",
    "BoundKind",
    "BoundValue",
    "Verdict",
    "baselines",
    "compression",
    "effective_rank",
    "effective_rank_notation",
    "measures",
    "offset_rademacher",
    "offset_rademacher_notation",
    "pac_bayes",
    "get",
    "register",
    "registered",
    "shallow_gd",
    "shallow_gd_notation",
    "trauger_tewari",
    "trauger_tewari_notation",
]
