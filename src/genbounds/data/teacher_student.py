"""Teacher–student regression with unbounded inputs (Gaussian, sub-Gaussian, Student-t), the
setting of Section 6 of Li et al. (2026), and their truncation operator (eq. (10))."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from genbounds.data.base import readonly
from genbounds.validation import check_finite_array, check_int

__all__ = [
    "LinearTeacher",
    "TeacherStudentData",
    "teacher_student",
    "TruncationResult",
    "truncate",
]



# --------------------------------------------------------------------------------------------
# teacher–student with unbounded inputs (Li et al. 2026, Section 6)
# --------------------------------------------------------------------------------------------

_DIST_DESCRIPTIONS = {
    "gaussian": "standard Gaussian N(0, 1) entries",
    "rademacher": "Rademacher entries (±1 with probability 1/2 each; sub-Gaussian with variance "
    "proxy 1, not Gaussian)",
    "uniform": "uniform entries on [-√3, √3] (unit variance; sub-Gaussian, not Gaussian)",
    "student_t": "Student-t entries with {df} degrees of freedom scaled by √((df−2)/df) to unit "
    "variance (heavy-tailed: P(|x| > t) ≍ t^(−df))",
}


@dataclass(frozen=True, eq=False)
class LinearTeacher:
    """Linear teacher ``f*(x) = ⟨w, x⟩`` (vectors) or ``f*(X) = ⟨W, X⟩_F = Σ_{t,i} W_ti X_ti``
    (sequences).

    Attributes
    ----------
    weight : np.ndarray
        Shape ``(d,)`` or ``(T, d)``. The default teacher of :func:`teacher_student` draws it
        uniformly on the unit sphere (ℓ2 / Frobenius norm 1), so that ``f*(x)`` has unit
        variance when the input entries are independent with unit variance.
    """

    weight: np.ndarray

    def __post_init__(self) -> None:
        w = check_finite_array(self.weight, "weight")
        if w.ndim not in (1, 2):
            raise ValueError(f"weight must have shape (d,) or (T, d); got {w.shape}")
        object.__setattr__(self, "weight", w)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = check_finite_array(X, "X")
        w = self.weight
        if X.ndim != w.ndim + 1 or X.shape[1:] != w.shape:
            raise ValueError(
                f"X must have shape (n, {', '.join(map(str, w.shape))}); got {X.shape}"
            )
        return X.reshape(X.shape[0], -1) @ w.reshape(-1)


@dataclass(frozen=True, eq=False)
class TeacherStudentData:
    """Inputs and teacher labels: ``y = teacher(X) + ε``, ``ε ~ N(0, noise_std²)`` i.i.d.

    Attributes
    ----------
    X : np.ndarray
        ``(n, d)`` or ``(n, T, d)``, float64, i.i.d. entries of unit variance (law in ``law``).
    y : np.ndarray
        ``(n,)`` float64 noisy labels.
    y_clean : np.ndarray
        ``(n,)`` float64, ``teacher(X)``.
    teacher : Callable
        The teacher (a :class:`LinearTeacher` unless one was passed in). Pass it back as
        ``teacher=`` with another seed to draw test data from the same teacher.
    dist : str
        ``"gaussian"``, ``"rademacher"``, ``"uniform"`` or ``"student_t"`` (``"subgaussian"``
        resolves to ``"rademacher"``).
    law : str
        The input law in words.
    df : float | None
    noise_std : float
    seed : int
    """

    X: np.ndarray
    y: np.ndarray
    y_clean: np.ndarray
    teacher: Callable[[np.ndarray], np.ndarray]
    dist: str
    law: str
    df: float | None
    noise_std: float
    seed: int


def _check_teacher_student_args(
    n: int,
    d: int,
    dist: str,
    df: float | None,
    noise_std: float,
    teacher: Callable[[np.ndarray], np.ndarray] | None,
    seed: int,
    T: int | None,
) -> tuple[int, int, int, int | None, str, float | None, float]:
    """Validate the arguments of :func:`teacher_student` (a ``ValueError`` naming the bad one).

    Returns ``(n, d, seed, T, dist_key, df, noise_std)`` normalised (``"subgaussian"`` resolves
    to ``"rademacher"``; ``df`` and ``noise_std`` become floats).
    """
    n = check_int(n, "n", 1)
    d = check_int(d, "d", 1)
    seed = check_int(seed, "seed", 0)
    if T is not None:
        T = check_int(T, "T", 1)
    dist_key = "rademacher" if dist == "subgaussian" else dist
    if dist_key not in _DIST_DESCRIPTIONS:
        raise ValueError(
            "dist must be 'gaussian', 'subgaussian', 'rademacher', 'uniform' or 'student_t'; "
            f"got {dist!r}"
        )
    if dist_key == "student_t":
        if df is None:
            raise ValueError("df must be given for dist='student_t'")
        if isinstance(df, bool) or not isinstance(df, int | float | np.integer | np.floating):
            raise ValueError(f"df must be a number > 2; got {df!r}")
        df = float(df)
        if not math.isfinite(df) or df <= 2:
            raise ValueError(f"df must be finite and > 2 (finite variance); got {df}")
    elif df is not None:
        raise ValueError(f"df is only used with dist='student_t'; got df={df} with dist={dist!r}")
    if isinstance(noise_std, bool) or not isinstance(noise_std, int | float | np.number):
        raise ValueError(f"noise_std must be a finite number >= 0; got {noise_std!r}")
    noise_std = float(noise_std)
    if not math.isfinite(noise_std) or noise_std < 0:
        raise ValueError(f"noise_std must be a finite number >= 0; got {noise_std}")
    if teacher is not None and not callable(teacher):
        raise ValueError(f"teacher must be callable; got {teacher!r}")
    return n, d, seed, T, dist_key, df, noise_std


def _draw_inputs(
    x_ss: np.random.SeedSequence, dist_key: str, df: float | None, shape: tuple[int, ...]
) -> np.ndarray:
    """The inputs of :func:`teacher_student`: i.i.d. unit-variance entries of law ``dist_key``."""
    rng_x = np.random.default_rng(x_ss)
    if dist_key == "gaussian":
        X = rng_x.standard_normal(shape)
    elif dist_key == "rademacher":
        X = 2.0 * rng_x.integers(0, 2, size=shape).astype(np.float64) - 1.0
    elif dist_key == "uniform":
        X = rng_x.uniform(-math.sqrt(3.0), math.sqrt(3.0), size=shape)
    else:
        assert df is not None
        X = rng_x.standard_t(df, size=shape) * math.sqrt((df - 2.0) / df)
    return X


def teacher_student(
    n: int,
    d: int,
    dist: Literal["gaussian", "subgaussian", "rademacher", "uniform", "student_t"] = "gaussian",
    df: float | None = None,
    noise_std: float = 0.0,
    teacher: Callable[[np.ndarray], np.ndarray] | None = None,
    seed: int = 0,
    T: int | None = None,
) -> TeacherStudentData:
    """Teacher–student data with unbounded inputs, as in Section 6 of Li et al. (2026).

    Inputs: ``n`` i.i.d. samples ``x ∈ R^d`` (or sequences ``X ∈ R^{T×d}`` when ``T`` is
    given) with i.i.d. entries of mean 0 and variance 1 from

    * ``"gaussian"``: N(0, 1);
    * ``"subgaussian"`` (= ``"rademacher"``): uniform on {−1, +1}, a sub-Gaussian law that is
      not Gaussian (bounded, variance proxy 1); ``"uniform"``: uniform on [−√3, √3];
    * ``"student_t"``: Student-t with ``df`` degrees of freedom, multiplied by
      √((df − 2)/df) for unit variance; heavy-tailed (polynomial tail with index ``df``, the
      β of their Assumption 6.8); ``df > 2`` is required for a finite variance (the kurtosis is
      finite only for df > 4).

    Labels: ``y = teacher(X) + ε`` with ε i.i.d. N(0, ``noise_std``²). The default teacher is
    :class:`LinearTeacher` with weight uniform on the unit sphere of R^d (or R^{T×d}).

    Randomness: ``np.random.SeedSequence(seed)`` is split into three independent streams, for
    the teacher weight, the inputs and the noise, so the inputs do not depend on the teacher or
    on ``noise_std``.

    Parameters
    ----------
    n, d : int
        Sample size and input dimension (>= 1).
    dist : str
        Input law (above).
    df : float, optional
        Degrees of freedom; required for (and only allowed with) ``"student_t"``; must be > 2.
    noise_std : float
        Standard deviation of the label noise (>= 0).
    teacher : callable, optional
        Maps X of shape ``(n, d)`` (or ``(n, T, d)``) to an ``(n,)`` array of finite values.
    seed : int
    T : int, optional
        Sequence length; when given, inputs have shape ``(n, T, d)``.

    Returns
    -------
    TeacherStudentData
    """
    n, d, seed, T, dist_key, df, noise_std = _check_teacher_student_args(
        n, d, dist, df, noise_std, teacher, seed, T
    )
    teacher_ss, x_ss, noise_ss = np.random.SeedSequence(seed).spawn(3)
    shape = (n, d) if T is None else (n, T, d)
    X = _draw_inputs(x_ss, dist_key, df, shape)

    if teacher is None:
        w = np.random.default_rng(teacher_ss).standard_normal(shape[1:])
        teacher = LinearTeacher(weight=readonly(w / np.linalg.norm(w)))
    y_clean = np.asarray(teacher(X), dtype=np.float64)
    if y_clean.shape != (n,):
        raise ValueError(f"teacher must return an array of shape ({n},); got {y_clean.shape}")
    if not np.isfinite(y_clean).all():
        raise ValueError("teacher returned non-finite values")
    noise = np.random.default_rng(noise_ss).standard_normal(n) * noise_std
    law = _DIST_DESCRIPTIONS[dist_key].format(df=df)
    return TeacherStudentData(X=readonly(X), y=readonly(y_clean + noise),
                              y_clean=readonly(y_clean), teacher=teacher, dist=dist_key, law=law,
                              df=df, noise_std=noise_std, seed=seed)


@dataclass(frozen=True, eq=False)
class TruncationResult:
    """Output of :func:`truncate`: the truncated data and an account of what was changed.

    Attributes
    ----------
    X : np.ndarray
        Truncated data, same shape as the input.
    n_truncated : int
        Number of samples that were changed.
    fraction_truncated : float
        ``n_truncated / n``.
    mask : np.ndarray
        ``(n,)`` bool, True for the samples that were changed.
    norms : np.ndarray
        ``(n,)``: per-sample Frobenius norms (``mode="norm"``) or max-abs entries
        (``mode="entrywise"``) BEFORE truncation.
    n_entries_clipped : int
        Number of entries changed (``mode="entrywise"``; for ``"norm"`` the entries of the
        changed samples).
    threshold : float
    mode : str
    """

    X: np.ndarray
    n_truncated: int
    fraction_truncated: float
    mask: np.ndarray
    norms: np.ndarray
    n_entries_clipped: int
    threshold: float
    mode: str

    def summary(self) -> str:
        """One line for a notebook: how much was truncated and how."""
        how = "rescaled to Frobenius norm" if self.mode == "norm" else "clipped entrywise at"
        return (
            f"{self.n_truncated} of {self.mask.size} samples ({100 * self.fraction_truncated:.2f}%)"
            f" {how} {self.threshold:g}"
        )


def truncate(
    X: np.ndarray, threshold: float, mode: Literal["norm", "entrywise"] = "norm"
) -> TruncationResult:
    r"""Truncate unbounded inputs, reporting exactly how many samples were changed.

    ``mode="norm"`` is the truncation operator of Li et al. (2026, eq. (10)) applied to each
    sample ``X_i`` (a vector or a ``T × d`` matrix; all axes after the first):

    .. math::

        \mathcal{T}_M(X) = X \ \text{if } \|X\|_F \le M, \qquad
        \mathcal{T}_M(X) = M\,X/\|X\|_F \ \text{if } \|X\|_F > M,

    a radial projection onto the Frobenius ball of radius M (direction kept).
    ``mode="entrywise"`` clips every entry to ``[-M, M]`` instead (the ``max_{ij}|X_ij|`` event
    used in their heavy-tailed proof, Appendix C.2).

    The book never clips or drops silently: the result carries the count and fraction of
    samples changed (and the per-sample norms before truncation); report them.

    Parameters
    ----------
    X : array of shape (n, ...)
        Finite values; the first axis indexes samples.
    threshold : float
        M > 0, finite.
    mode : {"norm", "entrywise"}

    Returns
    -------
    TruncationResult
    """
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2 or X.shape[0] < 1:
        raise ValueError(
            f"X must have shape (n, ...) with n >= 1 and at least 2 axes; got {X.shape}"
        )
    if not np.isfinite(X).all():
        raise ValueError("X contains non-finite values")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float | np.number):
        raise ValueError(f"threshold must be a finite number > 0; got {threshold!r}")
    M = float(threshold)
    if not math.isfinite(M) or M <= 0:
        raise ValueError(f"threshold must be a finite number > 0; got {threshold}")
    if mode not in ("norm", "entrywise"):
        raise ValueError(f"mode must be 'norm' or 'entrywise'; got {mode!r}")
    n = X.shape[0]
    flat = X.reshape(n, -1)
    if mode == "norm":
        norms = np.linalg.norm(flat, axis=1)
        mask = norms > M
        factor = np.ones(n)
        factor[mask] = M / norms[mask]
        out = X * factor.reshape((n,) + (1,) * (X.ndim - 1))
        n_entries = int(np.count_nonzero(flat[mask]))
    else:
        norms = np.abs(flat).max(axis=1)
        mask = norms > M
        out = np.clip(X, -M, M)
        n_entries = int(np.count_nonzero(np.abs(flat) > M))
    n_trunc = int(mask.sum())
    return TruncationResult(
        X=out,
        n_truncated=n_trunc,
        fraction_truncated=n_trunc / n,
        mask=mask,
        norms=norms,
        n_entries_clipped=n_entries,
        threshold=M,
        mode=mode,
    )
