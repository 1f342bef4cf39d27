"""What the pages of the comparison chapter share: the stored sweep loaded once, every registered
bound evaluated on its models, the ranking statistics, and the names in words.

The chapter's section pages (ranking, vacuity, measures, certificates, other kinds, conclusions)
each execute on their own; each calls :func:`load` once and reads the quantities it discusses
from the returned :class:`ComparisonView`. Nothing here is computed for the results store (it
is not part of any study's code fingerprint): it reads the stored units of
:data:`genbounds.experiments.comparison.EXPERIMENT` and evaluates the bound registry on them,
exactly as the pages did cell by cell.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from genbounds.bounds.registry import BoundKind, get
from genbounds.experiments import comparison as cmp
from genbounds.labels import PAPERS
from genbounds.labels import label as words
from genbounds.scale import SCALES
from genbounds.stats import bootstrap_interval, granulated_tau
from genbounds.tables import format_frame

__all__ = [
    "FACTOR_WORDS", "GAP_KINDS", "PAPER_NAME", "TASK_WORDS", "ComparisonView", "env_words",
    "in_words", "kind_of", "label", "load", "say", "tidy",
]

#: BibTeX key -> the paper in words (the book's naming map, :data:`genbounds.labels.PAPERS`).
PAPER_NAME: dict[str, str] = dict(PAPERS)

#: The tasks of the sweep in words.
TASK_WORDS: dict[str, str] = {
    "sparse_majority": "sparse majority",
    "mnist01": "MNIST 0/1",
    "mnist01_shallow": "MNIST 0/1, shallow encoder",
    "teacher_student": "teacher-student",
}

#: The factors of the sweep in words (legends and tables).
FACTOR_WORDS: dict[str, str] = {
    "n": "sample size n",
    "T": "sequence length T",
    "width": "width dₕ",
    "heads": "heads H",
    "depth": "depth L",
    "epochs": "epochs",
    "lr": "learning rate",
    "seed": "seed",
    "base": "base setting",
    "joint": "two factors",
}

#: The kinds scored against the gap: bounds on a gap or a Rademacher complexity, and measures.
GAP_KINDS = (BoundKind.GAP, BoundKind.RADEMACHER, BoundKind.MEASURE)

#: Bootstrap resamples of the ranking statistics at each scale.
N_BOOT = {"quick": 100, "paper": 1000}


def in_words(text: str) -> str:
    """A reason computed by the registry, its BibTeX keys put in words."""
    for key, name in PAPER_NAME.items():
        text = text.replace(f"'{key}'", name).replace(key, name)
    return text


def label(k: str) -> str:
    """A registered bound or measure in words (paper, statement, form), for tables and plots;
    measures by the book's naming map (:func:`genbounds.labels.label`), never their keys."""
    b = get(k)
    if b.kind is BoundKind.MEASURE:
        return words(k)
    paper, stmt = PAPER_NAME.get(b.paper, b.paper), b.statement
    if stmt.endswith(")"):  # "Sec. 4 (reconstructed)" -> "... (reconstructed; audited)"
        return f"{paper} {stmt[:-1]}; {b.form})"
    return f"{paper} {stmt} ({b.form})"


def kind_of(k: str) -> BoundKind:
    """The kind of the registered bound or measure ``k``."""
    return get(k).kind


def say(text: str) -> None:
    """Print a sentence wrapped to the book's 75-character column."""
    print(textwrap.fill(text, 75, break_on_hyphens=False))


def tidy(df: pd.DataFrame) -> Any:
    """What a table shows (:func:`genbounds.tables.format_frame`): numbers to 3 significant
    digits, "—" where a cell does not apply (nan, or an empty string); the table itself, which
    the asserts read, is left unchanged."""
    return format_frame(df.map(lambda x: None if x == "" else x), na_rep="—")


def env_words(env: str) -> str:
    """An environment ``task/factor`` in words."""
    task, _, factor = env.partition("/")
    if not factor:
        return env
    return f"{TASK_WORDS.get(task, task)}, varying {FACTOR_WORDS.get(factor, factor)}"


@dataclass(frozen=True)
class ComparisonView:
    """The stored sweep at one scale and every registered bound on its models.

    ``rows_all`` has one row per stored model (:func:`cmp.model_rows`); ``rows`` the Edelman
    Transformers only (the ranking study), ``shallow_rows`` and ``li_rows`` the other
    families; ``M`` is ``rows`` as a table with the task in words and the factor that varies
    from the task's base setting (``varied``); ``bt_all`` and ``bt`` the bound tables
    (:func:`cmp.evaluate_bounds`) of ``rows_all`` and ``rows``; ``applied`` the bounds on a gap
    and the measures that apply to some Edelman model; ``status`` and ``group`` each one's
    proof status; :attr:`stats` their rank statistics against the gap (computed on first
    use)."""

    scale: str
    config: cmp.ComparisonConfig
    n_boot: int
    parts: Sequence[Any] = field(repr=False)
    rows_all: list[dict[str, float]] = field(repr=False)
    family: np.ndarray = field(repr=False)
    rows: list[dict[str, float]] = field(repr=False)
    shallow_rows: list[dict[str, float]] = field(repr=False)
    li_rows: list[dict[str, float]] = field(repr=False)
    M: pd.DataFrame = field(repr=False)
    bt_all: cmp.BoundTable = field(repr=False)
    bt: cmp.BoundTable = field(repr=False)

    @property
    def is_sh(self) -> np.ndarray:
        return np.asarray(self.family == "ShallowEncoder")

    @property
    def is_li(self) -> np.ndarray:
        return np.asarray(self.family == "LiTransformer")

    @property
    def is_ed(self) -> np.ndarray:
        return np.asarray(self.family == "EdelmanTransformer")

    @property
    def gap(self) -> np.ndarray:
        """The measured 0-1 gap of each Edelman model."""
        return np.asarray(self.M["gap"].to_numpy())

    @property
    def SM(self) -> cmp.Setting:
        """The base setting of sparse majority (the presets list it first)."""
        return self.config.bases[0]

    @property
    def bases(self) -> dict[str, dict[str, Any]]:
        """Each task's base setting, factor by factor."""
        return {b.task: b.factor_values() for b in self.config.bases}

    @cached_property
    def noise(self) -> np.ndarray:
        """The Monte Carlo noise of each pair's gap difference (:func:`cmp.noise_matrix`)."""
        return np.asarray(cmp.noise_matrix(self.rows))

    @cached_property
    def status(self) -> dict[str, str]:
        return {k: cmp.proof_status(get(k)) for k in self.bt_all.values}

    @cached_property
    def group(self) -> dict[str, str]:
        """``"measure"``, ``"proved"`` or ``"unproved"`` for each registered bound."""
        return {k: (s if s in ("measure", "proved") else "unproved")
                for k, s in self.status.items()}

    @cached_property
    def applied_all(self) -> list[str]:
        return [k for k, v in self.bt_all.values.items() if np.isfinite(v).any()]

    @cached_property
    def applied(self) -> list[str]:
        return [k for k, v in self.bt.values.items()
                if np.isfinite(v).any() and kind_of(k) in GAP_KINDS]

    @cached_property
    def stats(self) -> dict[str, cmp.RankStats]:
        """The rank statistics of every applied bound and measure against the gap."""
        return {k: cmp.rank_stats(self.rows, self.bt.values[k], n_boot=self.n_boot,
                                  noise=self.noise) for k in self.applied}

    @cached_property
    def proved_keys(self) -> list[str]:
        """The applied bounds that are proved on every model where they are finite."""
        return [k for k in self.applied
                if self.group[k] == "proved" and kind_of(k) is not BoundKind.MEASURE
                and self.bt.proved[k][np.isfinite(self.bt.values[k])].all()]

    def vacuous_fraction(self, k: str) -> float:
        """Fraction of the Edelman models where the bound is valid and >= 1 (a 0-1 gap is at
        most 1: such a bound says nothing); nan for measures, log-coverings and bounds valid
        nowhere."""
        ok = np.isfinite(self.bt.values[k]) & self.bt.valid[k]
        if kind_of(k) in (BoundKind.MEASURE, BoundKind.LOG_COVERING) or not ok.any():
            return float("nan")
        return float(np.mean(self.bt.values[k][ok] >= 1.0))

    def ranking_holds(self, hi_key: str, lo_key: str,
                      values: Mapping[str, np.ndarray] | None = None,
                      n_boot: int | None = None) -> tuple[float, float]:
        """Bootstrap interval of ``Psi(hi) - Psi(lo)`` over the models where both apply."""
        vals = self.bt.values if values is None else values
        for name, key in (("hi_key", hi_key), ("lo_key", lo_key)):
            if key not in vals:
                raise ValueError(f"{name}: no bound {key!r} in the table")
        both = np.flatnonzero(np.isfinite(vals[hi_key]) & np.isfinite(vals[lo_key]))
        R = [self.rows[i] for i in both]
        fac = {f: np.array([r[f] for r in R]) for f in ("task", *cmp.FACTORS)}
        a, b, g_ = vals[hi_key][both], vals[lo_key][both], self.gap[both]

        def diff(idx: np.ndarray) -> float:
            sub = {k: v[idx] for k, v in fac.items()}
            return (granulated_tau(a[idx], g_[idx], sub).overall
                    - granulated_tau(b[idx], g_[idx], sub).overall)

        return bootstrap_interval(diff, len(R), n_boot=self.n_boot if n_boot is None else n_boot,
                                  strata=cmp.setting_ids(R))

    def psi_ci(self, k: str) -> str:
        """``Psi`` of ``k`` against the gap with its bootstrap interval, as printed."""
        lo, hi = self.stats[k].Psi_ci
        return f"{self.stats[k].Psi:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def load(scale: str, config: cmp.ComparisonConfig | None = None,
         n_boot: int | None = None) -> ComparisonView:
    """The stored sweep at ``scale`` (``"quick"`` or ``"paper"``; its preset unless ``config``
    is given) and every registered bound on its models; ``n_boot`` bootstrap resamples for the
    ranking statistics (default: 100 at quick scale, 1,000 at paper scale). Missing units are
    computed, as :func:`genbounds.experiments.registry.reproduce` does."""
    from genbounds.experiments.registry import reproduce

    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if n_boot is not None and (isinstance(n_boot, bool) or not isinstance(n_boot, int)
                               or n_boot < 10):
        raise ValueError(f"n_boot must be an integer >= 10, got {n_boot!r}")
    cfg = config if config is not None else (
        cmp.ComparisonConfig.paper() if scale == "paper" else cmp.ComparisonConfig.quick())
    if cfg.bases[0].task != "sparse_majority":
        raise ValueError("config: its first base setting must be sparse majority's")
    parts = reproduce(cmp.EXPERIMENT, scale, config=cfg)
    rows_all = cmp.model_rows(parts)
    family = np.array([cmp.FAMILIES[int(r["family"])] for r in rows_all])
    rows = [r for r, f in zip(rows_all, family, strict=True) if f == "EdelmanTransformer"]
    M = pd.DataFrame(rows)
    M["task"] = [cmp.TASKS[int(t)] for t in M["task"]]
    bases = {b.task: b.factor_values() for b in cfg.bases}

    def varied(r: pd.Series) -> str:
        d = [f for f, v in bases[r["task"]].items() if r[f] != v]
        return "base" if not d else (d[0] if len(d) == 1 else "joint")

    M["varied"] = M.apply(varied, axis=1)
    cmp.import_bound_modules()
    return ComparisonView(
        scale=scale, config=cfg, n_boot=N_BOOT[scale] if n_boot is None else n_boot,
        parts=parts, rows_all=rows_all, family=family, rows=rows,
        shallow_rows=[r for r, f in zip(rows_all, family, strict=True) if f == "ShallowEncoder"],
        li_rows=[r for r, f in zip(rows_all, family, strict=True) if f == "LiTransformer"],
        M=M, bt_all=cmp.evaluate_bounds(rows_all), bt=cmp.evaluate_bounds(rows))
