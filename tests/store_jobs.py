"""A tiny unit of work for the results-store tests (shared by several test files).

``Job`` depends on one module that no other work in a shared checkout edits
(``genbounds.results.keys``), so that no stored result of these tests is recomputed as "made by
other code" while they run; ``compute`` draws its arrays from the job's seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass(frozen=True)
class Job:
    PROTOCOL_VERSION: ClassVar[int] = 1
    CODE_MODULES: ClassVar[tuple[str, ...]] = ("genbounds.results.keys",)
    n: int
    seed: int = 0


def compute(cfg: Job) -> dict[str, object]:
    x = np.random.default_rng(cfg.seed).normal(size=(cfg.n, 2))
    return {"x": x, "total": float(x.sum())}
