"""genbounds: the reusable code behind the executable book *Generalization Bounds for Transformers*.

Modules (each answers one question):

- :mod:`genbounds.scale`       which scale (``quick`` or ``paper``) an experiment runs at
- :mod:`genbounds.spectral`    effective rank, stable rank, Schatten and mixed matrix norms
- :mod:`genbounds.complexity`  Rademacher complexity estimators, covers, Dudley integrals, Maurey
- :mod:`genbounds.data`        sparse majority, MNIST 0/1 tokens, teacher–student data
- :mod:`genbounds.models`      the Transformer families the papers analyse (K models at once)
- :mod:`genbounds.train`       the ensemble training engine (GD / SGD, early stopping, best epoch)
- :mod:`genbounds.results`     config hashing, atomic result store with provenance, resumable sweeps
- :mod:`genbounds.bounds`      one module per paper's bounds, plus baselines
- :mod:`genbounds.experiments` one module per study
- :mod:`genbounds.plotting`    the book's figure style and captions
- :mod:`genbounds.bench`       the benchmark command
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
