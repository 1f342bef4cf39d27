"""One module per study of the book; each has a frozen config dataclass and ``run(config)``.

- :mod:`genbounds.experiments.sparse_majority`: Trauger & Tewari's (2024) sparse-majority
  sweep over sequence lengths, with the authors' protocol (``SparseMajorityConfig.paper()``)
  and a CPU-sized version (``SparseMajorityConfig.quick()``).
"""

from __future__ import annotations

__all__: list[str] = []
