"""Small statistics for the book's conclusions: is there a trend, and how sure are we?

The papers often claim that a quantity "shows no trend" in some size (sequence length, width).
A plot of maxima over five runs cannot settle that. :func:`linear_trend` fits an ordinary
least-squares line through *every run* and returns the slope with a t-based confidence interval
and a permutation p-value, so a chapter can say "the slope is s (95% CI [a, b])" and assert on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as _st

__all__ = [
    "CensoredRankTrend",
    "CoupledPairs",
    "EnvironmentSignErrors",
    "GranulatedTau",
    "GroupIntervals",
    "KaplanMeier",
    "TrendResult",
    "bootstrap_interval",
    "censored_rank_trend",
    "coupled_pairs",
    "dziugaite_sign_errors",
    "granulated_tau",
    "group_intervals",
    "hoeffding_weight",
    "jiang_tau",
    "kaplan_meier",
    "kendall_tau",
    "linear_trend",
    "mc_noise_threshold",
    "proportion_interval",
    "robust_sign_error",
]


@dataclass(frozen=True)
class TrendResult:
    """OLS slope of ``y`` on ``x`` with its confidence interval and a permutation p-value."""

    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    level: float
    p_value_t: float
    p_value_permutation: float
    n: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the confidence interval excludes a zero slope."""
        return self.ci_low > 0 or self.ci_high < 0

    def describe(self, per: float = 1.0, unit: str = "") -> str:
        """Human-readable summary, the slope expressed per ``per`` units of ``x``."""
        from genbounds.tables import format_number as f

        s = f"slope {f(self.slope * per, 4, plus=True)}{unit} per {f(per)}"
        ci = (f"{self.level:.0%} CI [{f(self.ci_low * per, 4, plus=True)}, "
              f"{f(self.ci_high * per, 4, plus=True)}]")
        tests = f"t-test p = {f(self.p_value_t)}, permutation p = {f(self.p_value_permutation)}"
        return f"{s} ({ci}; {tests}; {self.n} runs)"


def linear_trend(
    x: np.ndarray,
    y: np.ndarray,
    *,
    level: float = 0.95,
    n_permutations: int = 10_000,
    seed: int = 0,
) -> TrendResult:
    """Fit ``y = a + b x`` by ordinary least squares and test ``b = 0``.

    Parameters
    ----------
    x, y:
        One-dimensional arrays of equal length (one entry per run), at least 3 points and at
        least two distinct ``x`` values.
    level:
        Confidence level of the t-interval for the slope, in (0, 1).
    n_permutations:
        Number of random permutations of ``y`` for the two-sided permutation p-value.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of equal length, got shapes {x.shape} and {y.shape}")
    if x.size < 3:
        raise ValueError(f"x must have at least 3 points, got {x.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite")
    if np.ptp(x) == 0:
        raise ValueError("x must take at least two distinct values")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    n = x.size
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean()) / sxx)
    intercept = float(y.mean() - slope * x.mean())
    resid = y - intercept - slope * x
    dof = n - 2
    sigma2 = float(resid @ resid) / dof
    se = np.sqrt(sigma2 / sxx)
    if se == 0:
        p_t = 0.0 if slope != 0 else 1.0
        half = 0.0
    else:
        p_t = float(2 * _st.t.sf(abs(slope) / se, dof))
        half = float(_st.t.ppf(0.5 + level / 2, dof) * se)
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((n_permutations, n)), axis=1)
    slopes = (y[perms] - y.mean()) @ xc / sxx
    p_perm = float((1 + np.sum(np.abs(slopes) >= abs(slope) - 1e-12)) / (n_permutations + 1))
    return TrendResult(slope, intercept, slope - half, slope + half, level, p_t, p_perm, n)


# ------------------------------------------------------------------------ rank correlations
def _vec(a: object, name: str) -> np.ndarray:
    v = np.asarray(a, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    return v


def _pair_signs(x: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    """``sgn(x_i - x_j)`` and ``sgn(y_i - y_j)`` over the pairs ``i < j`` of two equally long
    samples of at least 2 points (ValueError naming ``x``/``y`` otherwise)."""
    xv, yv = _vec(x, "x"), _vec(y, "y")
    if xv.shape != yv.shape:
        raise ValueError(f"x and y must have equal length, got {xv.size} and {yv.size}")
    if xv.size < 2:
        raise ValueError(f"x must have at least 2 points, got {xv.size}")
    iu = np.triu_indices(xv.size, k=1)
    return np.sign(xv[:, None] - xv[None, :])[iu], np.sign(yv[:, None] - yv[None, :])[iu]


def kendall_tau(x: object, y: object) -> float:
    r"""Kendall's rank correlation :math:`\tau_b` of two equally long samples.

    .. math:: \tau_b = \frac{\sum_{i<j} \operatorname{sgn}(x_i - x_j)\operatorname{sgn}(y_i - y_j)}
       {\sqrt{(n_0 - n_x)(n_0 - n_y)}},

    with :math:`n_0 = n(n-1)/2` and :math:`n_x, n_y` the numbers of pairs tied in ``x`` /
    ``y`` (without ties this is Kendall's original :math:`\tau`, the version Jiang et al. 2020
    use). Equal to ``scipy.stats.kendalltau(x, y).statistic`` (tested). ``nan`` when ``x`` or
    ``y`` is constant (the statistic is undefined).
    """
    sx, sy = _pair_signs(x, y)
    n0 = sx.size
    nx, ny = int(np.sum(sx == 0)), int(np.sum(sy == 0))
    if nx == n0 or ny == n0:
        return float("nan")
    return float(np.sum(sx * sy) / np.sqrt(float(n0 - nx) * float(n0 - ny)))


def _factor_arrays(factors: Mapping[str, object], n: int) -> dict[str, np.ndarray]:
    if not isinstance(factors, Mapping) or not factors:
        raise ValueError("factors must be a non-empty mapping from factor names to arrays")
    out = {}
    for name, a in factors.items():
        v = np.asarray(a)
        if v.shape != (n,):
            raise ValueError(f"factors[{name!r}] must have shape ({n},), got {v.shape}")
        out[str(name)] = v
    return out


def _factorize(values: object) -> np.ndarray:
    """An integer label per entry of ``values`` (numbers compared as floats, other values by
    equality)."""
    v = np.asarray(values)
    try:
        return np.unique(v.astype(np.float64), return_inverse=True)[1].reshape(-1)
    except (TypeError, ValueError):  # non-numeric factor values
        seen: dict[object, int] = {}
        return np.array([seen.setdefault(x, len(seen)) for x in v.tolist()], dtype=np.int64)


def _codes(keys: Sequence[object], n: int, factorized: bool = False) -> np.ndarray:
    """An integer label per model, numbered in first-seen order: two models share a label iff
    they share every value of ``keys`` (``factorized``: the keys are already
    :func:`_factorize`'s labels)."""
    code = np.zeros(n, dtype=np.int64)
    for k in keys:
        inv = np.asarray(k) if factorized else _factorize(k)
        code = code * (int(inv.max()) + 1 if n else 1) + inv
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inv.reshape(-1)]


def _groups(keys: Sequence[np.ndarray], n: int) -> list[np.ndarray]:
    """Index sets of the models sharing every value of ``keys`` (in first-seen order)."""
    code = _codes(keys, n)
    order = np.argsort(code, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(code[order])) + 1) if n else []


def jiang_tau(x: object, y: object) -> float:
    r"""Jiang et al.'s (2020, eq. (3)) Kendall coefficient: the mean over ordered pairs
    :math:`i \ne j` of :math:`\operatorname{sgn}(x_i - x_j)\operatorname{sgn}(y_i - y_j)`.

    A tied pair counts 0 (Kendall's :math:`\tau_a`), so a constant ``x`` scores exactly 0 (where
    :func:`kendall_tau`, :math:`\tau_b`, is undefined). Without ties it equals :func:`kendall_tau`.
    """
    sx, sy = _pair_signs(x, y)
    return float(np.mean(sx * sy))


@dataclass(frozen=True)
class GranulatedTau:
    """Jiang et al.'s (2020, Sec. 2.2) granulated Kendall coefficient.

    ``per_factor[i]`` is :math:`\\psi_i`, the mean over every setting of the *other* factors of
    Kendall's tau across the models that differ only in factor ``i``; ``overall`` is
    :math:`\\Psi`, the mean of the :math:`\\psi_i` over the factors that vary somewhere;
    ``n_groups[i]`` how many settings entered :math:`\\psi_i`, ``n_constant[i]`` how many of them
    had a constant measure (scored 0 with ``tau="jiang"``, left out with ``tau="b"``).
    """

    per_factor: dict[str, float]
    overall: float
    n_groups: dict[str, int] = field(default_factory=dict)
    n_constant: dict[str, int] = field(default_factory=dict)


def _group_range(values: np.ndarray, code: np.ndarray, n_groups: int) -> np.ndarray:
    """``max - min`` of ``values`` within each group of ``code`` (labels ``0 .. n_groups-1``)."""
    v = np.asarray(values, dtype=np.float64)
    hi = np.full(n_groups, -np.inf)
    lo = np.full(n_groups, np.inf)
    np.maximum.at(hi, code, v)
    np.minimum.at(lo, code, v)
    return hi - lo


def granulated_tau(measure: object, gap: object, factors: Mapping[str, object],
                   tau: str = "jiang") -> GranulatedTau:
    r"""The granulated Kendall coefficient of Jiang et al. (2020, eq. (4)-(5)).

    .. math:: \psi_i = \frac{1}{m_i} \sum_{\theta_{-i}} \tau\big(\{(\mu(\theta), g(\theta)) :
       \theta_i \in \Theta_i\}\big), \qquad \Psi = \frac{1}{n_f}\sum_i \psi_i,

    where the sum runs over the :math:`m_i` settings :math:`\theta_{-i}` of the other factors at
    which factor ``i`` takes at least two values (our sweeps are not full grids, so settings
    where factor ``i`` does not vary are skipped). ``tau="jiang"`` (default) is their eq. (3),
    :func:`jiang_tau`: a group where the measure (or the gap) is constant scores 0, as in their
    paper; ``tau="b"`` uses :func:`kendall_tau` and leaves such groups out. ``factors`` maps each
    factor name to its value per model (several models with the same setting, e.g. seeds, all
    enter the tau of their group).
    """
    m, g = _vec(measure, "measure"), _vec(gap, "gap")
    if m.shape != g.shape:
        raise ValueError(f"measure and gap must have equal length, got {m.size} and {g.size}")
    if tau not in ("jiang", "b"):
        raise ValueError(f"tau must be 'jiang' or 'b', got {tau!r}")
    fac = _factor_arrays(factors, m.size)
    n = m.size
    iu, ju = np.triu_indices(n, k=1)  # every pair once; a group's pairs are those it holds
    sm, sg = np.sign(m[iu] - m[ju]), np.sign(g[iu] - g[ju])
    per: dict[str, float] = {}
    count: dict[str, int] = {}
    const: dict[str, int] = {}
    levels = {name: _factorize(values) for name, values in fac.items()}
    for name in fac:
        code = _codes([v for k, v in levels.items() if k != name], n, factorized=True)
        G = int(code.max()) + 1 if n else 0
        level = levels[name]
        varies = _group_range(level, code, G) > 0  # the factor takes >= 2 values in the group
        flat = _group_range(m, code, G) == 0
        same = code[iu] == code[ju]
        pc = code[iu][same]
        pairs = np.bincount(pc, minlength=G).astype(np.float64)
        agree = np.bincount(pc, weights=(sm * sg)[same], minlength=G)
        if tau == "jiang":  # mean over the group's pairs, a tied pair counting 0
            use = varies
            taus = agree[use] / pairs[use]
        else:  # tau_b: undefined (left out) where the measure or the gap is constant
            tx = np.bincount(pc, weights=(sm == 0)[same], minlength=G)
            ty = np.bincount(pc, weights=(sg == 0)[same], minlength=G)
            use = varies & (tx < pairs) & (ty < pairs)
            taus = agree[use] / np.sqrt((pairs[use] - tx[use]) * (pairs[use] - ty[use]))
        if taus.size:
            per[name] = float(np.mean(taus))
            count[name] = int(taus.size)
            const[name] = int(np.sum(varies & flat))
    overall = float(np.mean(list(per.values()))) if per else float("nan")
    return GranulatedTau(per, overall, count, const)


# ------------------------------------------------------------------ coupled pairs, sign error
def mc_noise_threshold(err_a: object, err_b: object, n_a: object, n_b: object,
                       z: float = 1.96) -> np.ndarray:
    r"""Monte-Carlo noise of a difference of two test errors measured on held-out sets.

    ``z * sqrt(p_a (1 - p_a) / n_a + p_b (1 - p_b) / n_b)``: ``z`` standard errors of the
    difference of two independent binomial proportions (the two models' test errors on
    ``n_a``, ``n_b`` test samples). The training error is exact (not estimated), so the noise of
    a difference of gaps is the noise of the difference of test errors.
    """
    pa, pb = np.asarray(err_a, dtype=np.float64), np.asarray(err_b, dtype=np.float64)
    na, nb = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    if np.any((pa < 0) | (pa > 1) | (pb < 0) | (pb > 1)):
        raise ValueError("err_a and err_b must lie in [0, 1]")
    if np.any(na < 1) or np.any(nb < 1):
        raise ValueError("n_a and n_b must be >= 1")
    if not z >= 0:
        raise ValueError(f"z must be >= 0, got {z}")
    return np.asarray(z * np.sqrt(pa * (1 - pa) / na + pb * (1 - pb) / nb))


@dataclass(frozen=True)
class CoupledPairs:
    """Every coupled pair of models (equal in every factor but one) and its sign error.

    Arrays are aligned, one entry per pair: ``a``, ``b`` (model indices, ``a < b``),
    ``factor`` (the one factor that differs), ``environment`` (``"<group>/<factor>"``: the
    pair's task or other grouping, and the factor), ``error`` (the sign error, see
    :func:`coupled_pairs`) and ``kept`` (False for pairs whose gap difference is within the
    Monte-Carlo noise: left out of every average).
    """

    a: np.ndarray
    b: np.ndarray
    factor: np.ndarray
    environment: np.ndarray
    error: np.ndarray
    kept: np.ndarray

    @property
    def n_kept(self) -> int:
        return int(np.sum(self.kept))


def coupled_pairs(
    measure: object,
    gap: object,
    factors: Mapping[str, object],
    *,
    group: object | None = None,
    noise: object | None = None,
) -> CoupledPairs:
    r"""Coupled pairs and their sign errors (Dziugaite et al. 2020, Sec. 3-4).

    A pair ``(a, b)`` is *coupled* when the two models agree in every factor but one (and in
    ``group``, e.g. the task). Its sign error is

    .. math:: \tfrac12\big(1 - \operatorname{sgn}(\mu_a - \mu_b)\,\operatorname{sgn}(g_a - g_b)\big)
       \in \{0, \tfrac12, 1\},

    0 when the measure orders the pair as the gap does, 1 when it orders it the other way, and
    1/2 when the measure ties. ``noise[a, b]`` (a matrix, e.g. from :func:`mc_noise_threshold`)
    is the Monte-Carlo noise of ``g_a - g_b``; pairs with ``|g_a - g_b| <= noise`` are marked
    ``kept = False`` (the sign of their gap difference is not known).
    """
    m, g = _vec(measure, "measure"), _vec(gap, "gap")
    if m.shape != g.shape:
        raise ValueError(f"measure and gap must have equal length, got {m.size} and {g.size}")
    n = m.size
    fac = _factor_arrays(factors, n)
    grp = np.zeros(n, dtype=object) if group is None else np.asarray(group, dtype=object)
    if grp.shape != (n,):
        raise ValueError(f"group must have shape ({n},), got {grp.shape}")
    nz = None
    if noise is not None:
        nz = np.asarray(noise, dtype=np.float64)
        if nz.shape != (n, n):
            raise ValueError(f"noise must have shape ({n}, {n}), got {nz.shape}")
    names = list(fac)
    F = np.stack([fac[k].astype(object) for k in names], axis=1)
    A, B, fs, envs, errs, kept = [], [], [], [], [], []
    for a in range(n):
        for b in range(a + 1, n):
            if grp[a] != grp[b]:
                continue
            diff = [j for j in range(len(names)) if F[a, j] != F[b, j]]
            if len(diff) != 1:
                continue
            f = names[diff[0]]
            dg = g[a] - g[b]
            err = 0.5 * (1.0 - np.sign(m[a] - m[b]) * np.sign(dg))
            A.append(a)
            B.append(b)
            fs.append(f)
            envs.append(f"{grp[a]}/{f}" if group is not None else f)
            errs.append(err)
            kept.append(bool(abs(dg) > (nz[a, b] if nz is not None else 0.0)))
    return CoupledPairs(np.array(A, dtype=np.int64), np.array(B, dtype=np.int64),
                        np.array(fs, dtype=object), np.array(envs, dtype=object),
                        np.array(errs, dtype=np.float64), np.array(kept, dtype=bool))


def robust_sign_error(pairs: CoupledPairs, min_pairs: int = 1
                      ) -> tuple[float, float, dict[str, float]]:
    """``(average, worst, per_environment)`` sign error over the kept pairs, **pooled** by factor.

    ``average`` is the mean over every kept pair; ``per_environment`` the mean within each
    pooled environment (``group/factor``: every coupled same-seed pair of one task that differs
    in that factor, whatever the two values) that has at least ``min_pairs`` kept pairs;
    ``worst`` the largest of those. This is *not* Dziugaite et al.'s (2020) robust sign error:
    theirs (:func:`dziugaite_sign_errors`) takes the maximum over the finer environments (one
    pair of settings each), and a pooled mean is an average of the finer means, so it can only
    be smaller than their maximum when the same pairs and weights enter: a measure that ranks
    well on average can still fail completely in one environment. (With ``min_pairs = 1`` an
    environment of one pair has error 0 or 1; a larger ``min_pairs`` keeps the worst case from
    being a coin flip.)
    ``nan`` when no pair (no environment) qualifies.
    """
    if not isinstance(pairs, CoupledPairs):
        raise ValueError(f"pairs must be CoupledPairs, got {type(pairs).__name__}")
    if isinstance(min_pairs, bool) or not isinstance(min_pairs, int) or min_pairs < 1:
        raise ValueError(f"min_pairs must be an integer >= 1, got {min_pairs!r}")
    k = pairs.kept
    if not np.any(k):
        return float("nan"), float("nan"), {}
    per = {}
    for e in dict.fromkeys(pairs.environment[k].tolist()):
        sel = k & (pairs.environment == e)
        if int(np.sum(sel)) >= min_pairs:
            per[str(e)] = float(np.mean(pairs.error[sel]))
    return float(np.mean(pairs.error[k])), (max(per.values()) if per else float("nan")), per


# ------------------------------------------------------- Dziugaite et al.'s environments
def hoeffding_weight(delta_gap: object, n: object) -> np.ndarray:
    r"""Dziugaite et al.'s (2020) Monte-Carlo weight of a pair of measured gaps.

    :math:`w = \max\big(0, 1 - 2\exp(-2n(|\Delta g|/2)^2)\big)^2`: a Hoeffding bound on the
    probability that two gaps estimated on ``n`` held-out samples each, ``|delta_gap|`` apart,
    are really ordered as measured (their released ``hoeffding_weight``; ``n`` the test size).
    """
    dg = np.abs(np.asarray(delta_gap, dtype=np.float64))
    nn = np.asarray(n, dtype=np.float64)
    if not np.all(np.isfinite(dg)):
        raise ValueError("delta_gap must be finite")
    if not np.all(np.isfinite(nn)) or np.any(nn < 1):
        raise ValueError("n must be finite and >= 1")
    phi = 2 * np.exp(-2 * nn * (dg / 2) ** 2)
    return np.asarray(np.maximum(0.0, 1.0 - phi) ** 2)


@dataclass(frozen=True)
class EnvironmentSignErrors:
    """Sign errors per environment, Dziugaite et al.'s (2020) way (see
    :func:`dziugaite_sign_errors`).

    ``environments`` is one dict per environment (a pair of settings ``a``, ``b`` that differ in
    one factor ``factor``, within one ``group``), with its weighted sign error ``loss``, its
    effective sample size ``ess`` and ``kept`` (``ess >= min_ess``); ``robust`` is the largest
    ``loss`` over the kept environments (``nan`` if none), ``per_factor`` the largest per factor,
    ``average`` the mean ``loss`` over the kept environments.
    """

    environments: list[dict[str, Any]]
    robust: float
    worst: str
    per_factor: dict[str, float]
    average: float
    n_kept: int
    min_ess: float


def dziugaite_sign_errors(
    measure: object,
    gap: object,
    factors: Mapping[str, object],
    n_test: object,
    *,
    seed_factor: str = "seed",
    group: object | None = None,
    min_ess: float = 12.0,
    min_weight: float = 0.5,
) -> EnvironmentSignErrors:
    r"""Dziugaite et al.'s (2020) robust sign error over environments.

    A *setting* is a value of every factor except ``seed_factor``. An *environment* is an
    (unordered) pair of settings that differ in exactly one factor (within one ``group``,
    e.g. one task); its runs are every pair (model of ``a``, model of ``b``), seeds crossed. Each
    pair gets the weight ``(w - min_weight)_+`` with ``w`` the :func:`hoeffding_weight` of its
    gap difference at ``n = min(n_test_a, n_test_b)``; the environment's loss is the weighted
    mean sign error (:func:`coupled_pairs`'s 0 / 1/2 / 1), its effective sample size
    ``(sum w)^2 / sum w^2``. Environments with effective sample size below ``min_ess`` are not
    kept; the robust sign error is the largest loss over the kept ones. This is their released
    ``create_environments`` / ``get_all_losses`` (filter on, minimum ESS 12), with the maximum
    taken over environments as in their paper's robust risk.
    """
    m, g = _vec(measure, "measure"), _vec(gap, "gap")
    if m.shape != g.shape:
        raise ValueError(f"measure and gap must have equal length, got {m.size} and {g.size}")
    n = m.size
    fac = _factor_arrays(factors, n)
    nt = _vec(n_test, "n_test")
    if nt.shape != (n,) or np.any(nt < 1):
        raise ValueError(f"n_test must have shape ({n},) with entries >= 1")
    if not (math.isfinite(float(min_ess)) and min_ess > 0):
        raise ValueError(f"min_ess must be finite and > 0, got {min_ess!r}")
    if not 0 <= min_weight < 1:
        raise ValueError(f"min_weight must be in [0, 1), got {min_weight!r}")
    if seed_factor not in fac:
        raise ValueError(f"seed_factor {seed_factor!r} is not among the factors {list(fac)}")
    grp = np.zeros(n, dtype=object) if group is None else np.asarray(group, dtype=object)
    if grp.shape != (n,):
        raise ValueError(f"group must have shape ({n},), got {grp.shape}")
    names = [k for k in fac if k != seed_factor]
    keys = [tuple([grp[i]] + [fac[k][i].item() if hasattr(fac[k][i], "item") else fac[k][i]
                              for k in names]) for i in range(n)]
    members: dict[tuple[Any, ...], list[int]] = {}
    for i, k in enumerate(keys):
        members.setdefault(k, []).append(i)
    settings_ = list(members)
    envs: list[dict[str, Any]] = []
    for ia, sa in enumerate(settings_):
        for sb in settings_[ia + 1:]:
            if sa[0] != sb[0]:
                continue
            diff = [j for j in range(len(names)) if sa[j + 1] != sb[j + 1]]
            if len(diff) != 1:
                continue
            A, B = np.array(members[sa]), np.array(members[sb])
            dg = g[A][:, None] - g[B][None, :]
            w = hoeffding_weight(dg, np.minimum(nt[A][:, None], nt[B][None, :]))
            w = np.where(w > min_weight, w - min_weight, 0.0)
            err = 0.5 * (1.0 - np.sign(m[A][:, None] - m[B][None, :]) * np.sign(dg))
            sw, sw2 = float(w.sum()), float((w**2).sum())
            ess = sw**2 / sw2 if sw2 > 0 else 0.0
            loss = float((w * err).sum() / sw) if sw > 0 else float("nan")
            kept = bool(ess >= min_ess or math.isclose(ess, min_ess))
            label = f"{sa[0]}/{names[diff[0]]}: {sa[diff[0] + 1]} vs {sb[diff[0] + 1]}"
            envs.append({"group": sa[0], "factor": names[diff[0]], "a": sa[1:], "b": sb[1:],
                         "label": label, "pairs": int(w.size), "loss": loss, "ess": ess,
                         "kept": kept})
    kept_envs = [e for e in envs if e["kept"]]
    if not kept_envs:
        return EnvironmentSignErrors(envs, float("nan"), "", {}, float("nan"), 0, float(min_ess))
    worst = max(kept_envs, key=lambda e: e["loss"])
    per: dict[str, float] = {}
    for e in kept_envs:
        key = f"{e['group']}/{e['factor']}" if group is not None else str(e["factor"])
        per[key] = max(per.get(key, 0.0), e["loss"])
    return EnvironmentSignErrors(envs, float(worst["loss"]), str(worst["label"]), per,
                                 float(np.mean([e["loss"] for e in kept_envs])),
                                 len(kept_envs), float(min_ess))


# ------------------------------------------------------------------------------- bootstrap
def bootstrap_interval(
    statistic: Callable[[np.ndarray], float],
    n: int,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    strata: object | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(indices)`` over resampled model indices.

    ``statistic`` receives an index array (a resample with replacement of ``range(n)``, or of
    each stratum separately when ``strata`` gives a label per model) and returns a number;
    resamples where it is ``nan`` are dropped (``ValueError`` if more than half are).
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 10:
        raise ValueError(f"n_boot must be an integer >= 10, got {n_boot!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    if strata is None:
        parts = [np.arange(n)]
    else:
        st = np.asarray(strata, dtype=object)
        if st.shape != (n,):
            raise ValueError(f"strata must have shape ({n},), got {st.shape}")
        parts = [np.flatnonzero(st == s) for s in dict.fromkeys(st.tolist())]
    vals = []
    for _ in range(n_boot):
        idx = np.concatenate([p[rng.integers(0, p.size, p.size)] for p in parts])
        vals.append(float(statistic(idx)))
    v = np.array(vals)
    v = v[np.isfinite(v)]
    if v.size < n_boot / 2:
        raise ValueError("the statistic is undefined on more than half of the resamples")
    a = (1 - level) / 2
    return float(np.quantile(v, a)), float(np.quantile(v, 1 - a))


# ------------------------------------------------------------- groups, proportions, censoring
@dataclass(frozen=True)
class GroupIntervals:
    """Per-group summaries of one quantity (e.g. one entry per sequence length, runs as members).

    Arrays are aligned with ``groups`` (the distinct group labels, sorted): ``n`` members,
    ``mean`` with its Student-t interval ``ci_low``, ``ci_high`` at ``level`` (``nan`` for a
    group of one), standard deviation ``sd`` (``ddof=1``; ``nan`` for a group of one), and the
    extremes ``minimum``, ``maximum``.
    """

    groups: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    sd: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    level: float


def group_intervals(groups: object, values: object, *, level: float = 0.95) -> GroupIntervals:
    """The mean of ``values`` within each group with a Student-t interval, and the extremes.

    When each member of a group is an independent draw of everything random (its seed, its
    training data, its own finite evaluation set), the t-interval of the group mean covers all
    those sources of variation at once: their spread is the spread of the members.
    """
    g = np.asarray(groups)
    v = _vec(values, "values")
    if g.shape != v.shape:
        raise ValueError(f"groups and values must have equal length, got {g.shape} and {v.shape}")
    if v.size == 0:
        raise ValueError("values must not be empty")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    labels = np.unique(g)
    cols: dict[str, list[float]] = {k: [] for k in ("n", "mean", "lo", "hi", "sd", "min", "max")}
    for lab in labels:
        x = v[g == lab]
        m = float(x.mean())
        sd = float(x.std(ddof=1)) if x.size > 1 else float("nan")
        half = (float(_st.t.ppf(0.5 + level / 2, x.size - 1)) * sd / math.sqrt(x.size)
                if x.size > 1 else float("nan"))
        for k, val in zip(cols, (x.size, m, m - half, m + half, sd, x.min(), x.max()),
                          strict=True):
            cols[k].append(float(val))
    a = {k: np.array(val) for k, val in cols.items()}
    return GroupIntervals(labels, a["n"].astype(np.int64), a["mean"], a["lo"], a["hi"], a["sd"],
                          a["min"], a["max"], float(level))


def proportion_interval(successes: object, n: object, *, level: float = 0.95
                        ) -> tuple[np.ndarray, np.ndarray]:
    r"""Wilson's score interval of a binomial proportion, elementwise.

    For ``k`` successes in ``n`` trials and :math:`z` the normal quantile of ``level``:
    :math:`\big(\hat p + \tfrac{z^2}{2n} \pm z\sqrt{\hat p(1-\hat p)/n + z^2/(4n^2)}\big)
    / (1 + z^2/n)`. Used for an accuracy measured on a finite evaluation set.
    """
    k = np.asarray(successes, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(nn))):
        raise ValueError("successes and n must be finite")
    if np.any(nn < 1) or np.any(k < 0) or np.any(k > nn):
        raise ValueError("n must be >= 1 and successes must lie in [0, n]")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    z = float(_st.norm.ppf(0.5 + level / 2))
    p = k / nn
    centre = (p + z**2 / (2 * nn)) / (1 + z**2 / nn)
    half = z * np.sqrt(p * (1 - p) / nn + z**2 / (4 * nn**2)) / (1 + z**2 / nn)
    return np.asarray(np.clip(centre - half, 0.0, 1.0)), np.asarray(np.clip(centre + half, 0, 1))


@dataclass(frozen=True)
class KaplanMeier:
    """The Kaplan-Meier estimate of a survival curve from right-censored times.

    ``times`` are the distinct times at which an event was observed, ``survival[i]`` the
    estimated probability that the event has not happened by ``times[i]`` (inclusive);
    ``median`` the first time at which the survival is at most 1/2, ``nan`` when it never gets
    there (more than half of the mass is censored: the median lies beyond the data).
    """

    times: np.ndarray
    survival: np.ndarray
    n: int
    n_events: int
    n_censored: int
    median: float


def kaplan_meier(time: object, observed: object) -> KaplanMeier:
    """Kaplan-Meier estimate from ``time`` (when the event happened, or when observation
    stopped) and ``observed`` (True: the event happened at ``time``; False: censored, the event
    had not happened by ``time``). At equal times events are counted before censorings."""
    t = _vec(time, "time")
    obs = np.asarray(observed)
    if obs.shape != t.shape or obs.dtype != bool:
        raise ValueError(f"observed must be a boolean array of shape {t.shape}")
    if t.size == 0:
        raise ValueError("time must not be empty")
    times = np.unique(t[obs])
    surv, s = [], 1.0
    for u in times:
        at_risk = int(np.sum(t >= u))
        s *= 1.0 - int(np.sum((t == u) & obs)) / at_risk
        surv.append(s)
    sv = np.array(surv)
    below = np.flatnonzero(sv <= 0.5 + 1e-12)
    median = float(times[below[0]]) if below.size else float("nan")
    return KaplanMeier(times, sv, int(t.size), int(obs.sum()), int((~obs).sum()), median)


@dataclass(frozen=True)
class CensoredRankTrend:
    """Kendall's tau-b between ``x`` and a right-censored time, with a permutation p-value
    (see :func:`censored_rank_trend`)."""

    tau: float
    p_value_permutation: float
    n: int
    n_censored: int


def censored_rank_trend(x: object, time: object, observed: object, *,
                        n_permutations: int = 10_000, seed: int = 0) -> CensoredRankTrend:
    """Does a time to an event grow with ``x``, when some times are censored?

    Valid when every censored time is at least every observed one (censoring by a common cap
    that no observed event exceeds): then each censored time is known to be longer than every
    observed one, and only two censored times cannot be ordered. They are ranked as ties above
    all observed times, and Kendall's tau-b between ``x`` and the ranks is exact for the known
    order. The two-sided p-value permutes ``x``. ``ValueError`` when a censored time lies below
    an observed time (the order of that pair is unknown).
    """
    xv, t = _vec(x, "x"), _vec(time, "time")
    obs = np.asarray(observed)
    if xv.shape != t.shape or obs.shape != t.shape or obs.dtype != bool:
        raise ValueError("x, time and observed (boolean) must have equal length")
    if t.size < 3:
        raise ValueError(f"at least 3 points are needed, got {t.size}")
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    if np.ptp(xv) == 0 or np.ptp(t) == 0:
        raise ValueError("x and time must each take at least two distinct values")
    if np.any(~obs) and np.any(obs) and t[~obs].min() < t[obs].max():
        raise ValueError("a censored time lies below an observed time: the order is unknown")
    y = np.where(obs, t, t.max() + 1.0) if np.any(~obs) else t
    iu = np.triu_indices(t.size, k=1)
    sy = np.sign(y[:, None] - y[None, :])[iu]
    tau = kendall_tau(xv, y)
    nx = int(np.sum(xv[iu[0]] == xv[iu[1]]))
    norm = math.sqrt(float(sy.size - nx) * float(sy.size - int(np.sum(sy == 0))))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_permutations, 1000):  # in blocks: memory O(1000 n^2)
        xp = xv[np.argsort(rng.random((min(1000, n_permutations - start), t.size)), axis=1)]
        taus = (np.sign(xp[:, iu[0]] - xp[:, iu[1]]) @ sy) / norm
        hits += int(np.sum(np.abs(taus) >= abs(tau) - 1e-12))
    p = float((1 + hits) / (n_permutations + 1))
    return CensoredRankTrend(float(tau), p, int(t.size), int((~obs).sum()))
