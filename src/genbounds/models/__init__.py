"""The Transformer families the book analyses, one module per family, K models at once.

- :mod:`genbounds.models.base`                 the ensemble base class and initialisers
- :mod:`genbounds.models.shallow_encoder`      :class:`ShallowEncoder`: the one-layer encoder of
  the shallow-Transformer GD paper (anonymous, 2025; cited as Mwigo & Dasgupta, 2026), itself
  the model of Wu et al. (2024): softmax attention, ``W_H = I``, ReLU, mean pooling, LeCun init
- :mod:`genbounds.models.edelman`              :class:`EdelmanTransformer`: heads and L-layer
  blocks of Edelman et al. (2022) in Trauger & Tewari's (2024, Sec. 2.6) notation
- :mod:`genbounds.models.sparse_majority_mha`  :class:`SparseMajorityMHA`: the authors' Keras
  model of the sparse-majority experiment, reproduced exactly
- :mod:`genbounds.models.li_transformer`       :class:`LiTransformer`: the single-head,
  multi-head and multi-layer classes of Li et al. (2026), factored ``W_QK`` (rank control)
- :mod:`genbounds.models.view`                 :class:`ModelView`: one typed view of the
  weights of every family (per layer and head), in one orientation

Models know nothing of training or of any paper's notation: paper-specific rewritings of the
weights are adapters next to that paper's bounds (:mod:`genbounds.bounds`). Norms are not
computed here: :func:`genbounds.norms.norm_table` measures a :class:`ModelView`.
"""

from __future__ import annotations

from genbounds.models.base import (
    Ensemble,
    keras_compute_fans,
    keras_glorot_uniform_limit,
    project_rows_to_unit_ball,
)
from genbounds.models.edelman import EdelmanTransformer
from genbounds.models.li_transformer import LiTransformer
from genbounds.models.shallow_encoder import ShallowEncoder
from genbounds.models.sparse_majority_mha import SparseMajorityMHA

__all__ = [
    "EdelmanTransformer",
    "Ensemble",
    "LiTransformer",
    "ShallowEncoder",
    "SparseMajorityMHA",
    "keras_compute_fans",
    "keras_glorot_uniform_limit",
    "project_rows_to_unit_ball",
]
