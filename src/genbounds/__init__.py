"""genbounds: the reusable code behind the executable book *Generalization Bounds for Transformers*.

Modules (each answers one question):

- :mod:`genbounds.validation`  argument checks (a ValueError that names the argument)
- :mod:`genbounds.scale`       which scale (``quick`` or ``paper``) an experiment runs at
- :mod:`genbounds.spectral`    effective rank, stable rank, Schatten and mixed matrix norms
- :mod:`genbounds.complexity`  Rademacher complexity estimators, covers, Dudley integrals, Maurey
- :mod:`genbounds.offset_complexity` offset Rademacher complexity estimators (Li et al. 2026)
- :mod:`genbounds.data`        one module per data family (sparse majority, MNIST, teacher–student)
- :mod:`genbounds.models`      one module per model family (K models at once) + the model view
- :mod:`genbounds.norms`       the norm table of a model view, computed once per run
- :mod:`genbounds.train`       the ensemble engine in parts (config, state, step, stopping,
  memory, evaluate, loop)
- :mod:`genbounds.results`     the results store: config hashing, provenance, resume, repair;
                               each page's provenance note (``results.page_note``)
- :mod:`genbounds.bounds`      the bound registry and one module per paper's bounds
- :mod:`genbounds.experiments` the experiment registry and one module per study
- :mod:`genbounds.cli`         ``python -m genbounds bounds | experiments | reproduce | store``
- :mod:`genbounds.plotting`    the book's figure style and captions
- :mod:`genbounds.tables`      numbers and tables for readers (significant digits, no e-notation)
- :mod:`genbounds.bench`       the benchmark command
"""

from __future__ import annotations

import hashlib as _hashlib
from pathlib import Path as _Path

__version__ = "0.1.0"
__all__ = ["SOURCE_AT_IMPORT", "__version__"]


def _source_snapshot() -> dict[str, str]:
    root = _Path(__file__).parent
    return {p.relative_to(root).as_posix(): _hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.py"))}


#: SHA-256 of every source file of the package when this process imported it (about a
#: millisecond). A stored result's code fingerprint is computed when it is saved; if a file it
#: covers changed on disk since this snapshot, the code that ran may not be the code the
#: fingerprint describes, and the store refuses to save (``genbounds.results.CodeChangedError``).
SOURCE_AT_IMPORT: dict[str, str] = _source_snapshot()
