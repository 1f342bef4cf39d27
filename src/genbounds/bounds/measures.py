"""Generalization measures that are not a paper's bound: the baselines a reader expects.

Jiang, Neyshabur, Mobahi, Krishnan & Bengio, "Fantastic generalization measures and where to find
them" (ICLR 2020) compared some forty measures on thousands of trained networks; the comparison
chapter puts the ones every reader asks about next to the papers' bounds, on the same models:

==========================  ================================================================
``measures.n_params``       number of trainable parameters ``omega``
``measures.log_prod_spec``  ``sum_i log ||W_i||_2^2`` (log of the product of squared spectral
                            norms, Jiang et al.'s ``log.prod.of.spec``)
``measures.sum_spec``       ``sum_i ||W_i||_2``
``measures.log_prod_fro``   ``sum_i log ||W_i||_F^2`` (``log.prod.of.fro``)
``measures.sum_fro``        ``sum_i ||W_i||_F``
``measures.dist_init``      ``||w - w_0||_2`` over every trainable parameter (``dist.init``)
``measures.param_norm``     ``||w||_2^2`` (``param.norm``)
``pacbayes.init``           ``||w - w_0||^2 / (4 sigma^2) + log(m / sigma) + 10``
``pacbayes.mag_init``       ``1/4 sum_i log((eps^2 + (s^2 + 1) ||w - w_0||^2 / omega) /
                            (eps^2 + s^2 (w_i - w_{0,i})^2)) + log(m / s) + 10``
``pacbayes.flatness``       ``1 / sigma^2``
``pacbayes.mag_flatness``   ``1 / s^2``
==========================  ================================================================

Here ``W_i`` runs over the trainable weight matrices of the model view (a factored head's
``W_Q``, ``W_K`` count, their product ``W_QK`` then does not), ``m`` is the number of training
samples, ``sigma`` and ``s`` come from the sigma searches of :func:`pacbayes_sigma` (isotropic
and magnitude-aware perturbations) with ``eps = 1e-3``. Jiang et al. report the sharpness-based
PAC-Bayes measures, the magnitude-aware ones (``pacbayes.mag.flatness``, ``pacbayes.mag.init``)
in particular, among the most predictive of the measures they tested on convolutional networks;
Dziugaite et al. (NeurIPS 2020) found no measure robust across all environments.

All are registered as :class:`~genbounds.bounds.registry.Bound` of kind
``BoundKind.MEASURE``: they rank models, they do not bound a gap (the PAC-Bayes ones are the
KL-like numerators of a PAC-Bayes bound on a *perturbed* classifier, in Jiang et al.'s form, not
a bound on the trained model's gap), so "vacuous" is not defined for them.

Constants (Jiang et al. 2020, Appendix C, and the authors' sigma search as released with
Dziugaite et al.'s 2020 code): bisection of ``sigma`` on ``[0, 2]`` started at the midpoint,
``search_depth = 15`` halvings, ``montecarlo_samples = 10`` perturbations per step, target
deviation of the training **accuracy** ``0.1`` with tolerance ``1e-2`` (stop when
``|deviation - 0.1| < 1e-2``), ``eps = 1e-3``, ``+ 10`` and ``log(m / sigma)`` as printed.
One deliberate difference from that code: a perturbation ``u ~ N(0, sigma^2 I)`` has standard
deviation ``sigma`` here, as Jiang et al. define it (the released code draws with standard
deviation ``sigma^2``); the magnitude-aware one has variance ``s^2 w_i^2 + eps^2``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from genbounds.bounds.registry import (
    Bound,
    BoundKind,
    BoundValue,
    NotApplicable,
    register,
    register_quantities,
)
from genbounds.validation import check_int, check_positive

__all__ = [
    "JIANG_EPS",
    "MEASURE_KEYS",
    "PAPER",
    "measure_quantities",
    "pacbayes_mag_logsum",
    "pacbayes_sigma",
    "weight_matrices",
]

#: BibTeX key of Jiang et al. (2020), the paper whose definitions these are.
PAPER = "jiang2020fantastic"
#: Jiang et al.'s ``epsilon`` of the magnitude-aware perturbation.
JIANG_EPS: float = 1e-3

_MATRIX = re.compile(r"^(?!tt\.)(?P<name>.+)\.(?P<norm>spectral|fro)$")


def weight_matrices(row: Mapping[str, Any]) -> list[str]:
    """The trainable weight matrices of a norm-table row (names without the norm suffix).

    Every ``"<matrix>.spectral"`` column of :func:`genbounds.norms.norm_table`, except a head's
    ``W_QK`` when the head is factored (its ``W_Q`` and ``W_K`` are the trainable matrices) and
    except paper adapters' prefixed columns (``tt.``).
    """
    names = [m.group("name") for k in row if (m := _MATRIX.match(k)) and m.group("norm")
             == "spectral"]
    out = []
    for n in names:
        if n.endswith(".W_QK") and f"{n[:-len('W_QK')]}W_Q" in names:
            continue
        out.append(n)
    if not out:
        raise ValueError("row has no '<matrix>.spectral' column: pass a norm_table row")
    return out


def measure_quantities(row: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """Every quantity the measures need, from one stored model row (the registered adapter).

    ``row`` must hold the norm table (``model.n_params``, ``model.l2``, ``model.dist_l2``,
    ``<matrix>.spectral`` / ``.fro``) and, for the PAC-Bayes measures, the stored sigma searches
    ``pacbayes.sigma``, ``pacbayes.mag_sigma`` and ``pacbayes.mag_logsum``; ``context["m"]`` is
    the number of training samples.
    """
    mats = weight_matrices(row)
    spec = np.array([float(row[f"{n}.spectral"]) for n in mats])
    fro = np.array([float(row[f"{n}.fro"]) for n in mats])
    if np.any(spec <= 0) or np.any(fro <= 0):
        raise NotApplicable("a weight matrix is zero: log-products of norms are undefined")
    out: dict[str, Any] = {
        "omega": float(row["model.n_params"]),
        "log_prod_spec": float(np.sum(2 * np.log(spec))),
        "sum_spec": float(np.sum(spec)),
        "log_prod_fro": float(np.sum(2 * np.log(fro))),
        "sum_fro": float(np.sum(fro)),
        "param_norm_sq": float(row["model.l2"]) ** 2,
    }
    if "model.dist_l2" in row:
        out["dist_init"] = float(row["model.dist_l2"])
    if "m" in context:
        out["m"] = int(context["m"])
    for col, name in (("pacbayes.sigma", "sigma"), ("pacbayes.mag_sigma", "mag_sigma"),
                      ("pacbayes.mag_logsum", "mag_logsum")):
        if col in row:
            out[name] = float(row[col])
    return out


# ---------------------------------------------------------------------------- sigma search
def pacbayes_sigma(
    model: nn.Module,
    accuracy: Callable[[nn.Module], np.ndarray],
    *,
    magnitude_eps: float | None = None,
    search_depth: int = 15,
    montecarlo_samples: int = 10,
    accuracy_displacement: float = 0.1,
    displacement_tolerance: float = 1e-2,
    upper: float = 2.0,
    seed: int = 0,
) -> np.ndarray:
    """Jiang et al.'s sigma search, for the ``K`` models of an ensemble at once.

    For each model, bisect ``sigma`` on ``[0, upper]``: perturb every parameter by Gaussian
    noise (standard deviation ``sigma``; or ``sqrt(sigma^2 w_i^2 + magnitude_eps^2)`` per
    entry when ``magnitude_eps`` is given), measure the training accuracy ``montecarlo_samples``
    times, and compare the mean's deviation from the unperturbed accuracy with
    ``accuracy_displacement``: stop when within ``displacement_tolerance``, else move the upper
    end down (too much noise) or the lower end up. Returns the last ``sigma`` of each model,
    shape ``(K,)``. ``accuracy(model)`` returns the ``(K,)`` training accuracies of the model's
    current parameters; the parameters are restored on return.
    """
    depth = check_int(search_depth, "search_depth")
    mc = check_int(montecarlo_samples, "montecarlo_samples")
    disp = check_positive(accuracy_displacement, "accuracy_displacement")
    tol = check_positive(displacement_tolerance, "displacement_tolerance")
    hi0 = check_positive(upper, "upper")
    if magnitude_eps is not None:
        check_positive(magnitude_eps, "magnitude_eps")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    K = int(params[0].shape[0])
    if any(int(p.shape[0]) != K for p in params):
        raise ValueError("every parameter must have the leading model dimension K")
    saved = [p.detach().clone() for p in params]
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed))
    with torch.no_grad():
        base = np.asarray(accuracy(model), dtype=np.float64)
        if base.shape != (K,):
            raise ValueError(f"accuracy must return shape ({K},), got {base.shape}")
        lower, upper_ = np.zeros(K), np.full(K, hi0)
        sigma = np.full(K, hi0 / 2)
        done = np.zeros(K, dtype=bool)
        try:
            for _ in range(depth):
                sigma = np.where(done, sigma, (lower + upper_) / 2)
                accs = []
                for _ in range(mc):
                    for p, p0 in zip(params, saved, strict=True):
                        s = torch.as_tensor(sigma, dtype=p0.dtype, device=p0.device).reshape(
                            (K,) + (1,) * (p0.ndim - 1))
                        z = torch.randn(p0.shape, generator=gen, dtype=p0.dtype)  # CPU stream
                        std = (s if magnitude_eps is None
                               else torch.sqrt(s**2 * p0**2 + magnitude_eps**2))
                        p.copy_(p0 + std * z.to(p0.device))
                    accs.append(np.asarray(accuracy(model), dtype=np.float64))
                for p, p0 in zip(params, saved, strict=True):
                    p.copy_(p0)
                dev = np.abs(np.mean(accs, axis=0) - base)
                hit = np.abs(dev - disp) < tol
                done |= hit
                upper_ = np.where(~done & (dev > disp), sigma, upper_)
                lower = np.where(~done & (dev <= disp), sigma, lower)
                if done.all():
                    break
        finally:
            for p, p0 in zip(params, saved, strict=True):
                p.copy_(p0)
    return sigma


def pacbayes_mag_logsum(model: nn.Module, initial_state: Mapping[str, torch.Tensor],
                        mag_sigma: np.ndarray, eps: float = JIANG_EPS) -> np.ndarray:
    """``sum_i log((eps^2 + (s^2 + 1) ||w - w0||^2 / omega) / (eps^2 + s^2 (w_i - w0_i)^2))``
    per model (``(K,)``), the sum in ``pacbayes.mag_init`` (Jiang et al.'s released code)."""
    s2 = np.asarray(mag_sigma, dtype=np.float64) ** 2
    check_positive(eps, "eps")
    diffs = []
    for name, p in model.named_parameters():
        if name not in initial_state:
            raise ValueError(f"initial_state has no parameter {name!r}")
        d = (p.detach().to(torch.float64).cpu() - initial_state[name].to(torch.float64).cpu())
        diffs.append(d.reshape(d.shape[0], -1))
    D = torch.cat(diffs, dim=1).numpy()
    omega = D.shape[1]
    num = eps**2 + (s2 + 1) * np.sum(D**2, axis=1) / omega
    den = eps**2 + s2[:, None] * D**2
    return np.asarray(np.sum(np.log(num[:, None] / den), axis=1))


# ------------------------------------------------------------------------------- registry
def _value(key: str, value: float, terms: Mapping[str, float] | None = None,
           constants: Mapping[str, float] | None = None) -> BoundValue:
    return BoundValue(value, BoundKind.MEASURE, terms=terms or {}, constants=constants or {},
                      name=key, reference=f"Jiang et al. 2020, {key}")


def _n_params(omega: float) -> BoundValue:
    return _value("num.params", omega)


def _log_prod_spec(log_prod_spec: float) -> BoundValue:
    return _value("log.prod.of.spec", log_prod_spec)


def _sum_spec(sum_spec: float) -> BoundValue:
    return _value("sum of spectral norms", sum_spec)


def _log_prod_fro(log_prod_fro: float) -> BoundValue:
    return _value("log.prod.of.fro", log_prod_fro)


def _sum_fro(sum_fro: float) -> BoundValue:
    return _value("sum of Frobenius norms", sum_fro)


def _dist_init(dist_init: float) -> BoundValue:
    return _value("dist.init", dist_init)


def _param_norm(param_norm_sq: float) -> BoundValue:
    return _value("param.norm", param_norm_sq)


def _pb_init(dist_init: float, sigma: float, m: int, offset: float) -> BoundValue:
    sg = check_positive(sigma, "sigma")
    kl = dist_init**2 / (4 * sg**2)
    log_term = math.log(check_int(m, "m") / sg)
    return _value("pacbayes.init", kl + log_term + offset, {"kl": kl, "log_m_over_sigma": log_term},
                  {"offset": offset, "sigma": sg})


def _pb_mag_init(mag_logsum: float, mag_sigma: float, m: int, offset: float) -> BoundValue:
    sg = check_positive(mag_sigma, "mag_sigma")
    kl = mag_logsum / 4
    log_term = math.log(check_int(m, "m") / sg)
    return _value("pacbayes.mag.init", kl + log_term + offset,
                  {"kl": kl, "log_m_over_sigma": log_term}, {"offset": offset, "sigma": sg,
                                                             "eps": JIANG_EPS})


def _pb_flat(sigma: float) -> BoundValue:
    return _value("pacbayes.flatness", 1 / check_positive(sigma, "sigma") ** 2)


def _pb_mag_flat(mag_sigma: float) -> BoundValue:
    return _value("pacbayes.mag.flatness", 1 / check_positive(mag_sigma, "mag_sigma") ** 2)


_SPECS: list[tuple[str, str, tuple[str, ...], dict[str, float], Callable[..., BoundValue],
                   str]] = [
    ("measures.n_params", "num.params", ("omega",), {}, _n_params,
     "number of trainable parameters"),
    ("measures.log_prod_spec", "log.prod.of.spec", ("log_prod_spec",), {}, _log_prod_spec,
     "log of the product of squared spectral norms of the weight matrices"),
    ("measures.sum_spec", "sum of spectral norms", ("sum_spec",), {}, _sum_spec,
     "sum of the spectral norms of the weight matrices"),
    ("measures.log_prod_fro", "log.prod.of.fro", ("log_prod_fro",), {}, _log_prod_fro,
     "log of the product of squared Frobenius norms of the weight matrices"),
    ("measures.sum_fro", "sum of Frobenius norms", ("sum_fro",), {}, _sum_fro,
     "sum of the Frobenius norms of the weight matrices"),
    ("measures.dist_init", "dist.init", ("dist_init",), {}, _dist_init,
     "l2 distance of all parameters from initialisation"),
    ("measures.param_norm", "param.norm", ("param_norm_sq",), {}, _param_norm,
     "squared l2 norm of all parameters"),
    ("pacbayes.init", "pacbayes.init", ("dist_init", "sigma", "m"), {"offset": 10.0}, _pb_init,
     "PAC-Bayes numerator ||w-w0||^2/(4 sigma^2) + log(m/sigma) + 10, isotropic sigma search"),
    ("pacbayes.mag_init", "pacbayes.mag.init", ("mag_logsum", "mag_sigma", "m"),
     {"offset": 10.0}, _pb_mag_init,
     "magnitude-aware PAC-Bayes numerator, magnitude-aware sigma search (eps = 1e-3)"),
    ("pacbayes.flatness", "pacbayes.flatness", ("sigma",), {}, _pb_flat,
     "1/sigma^2 of the isotropic sigma search"),
    ("pacbayes.mag_flatness", "pacbayes.mag.flatness", ("mag_sigma",), {}, _pb_mag_flat,
     "1/s^2 of the magnitude-aware sigma search"),
]

#: Keys of every registered measure, in registration order.
MEASURE_KEYS: tuple[str, ...] = tuple(s[0] for s in _SPECS)

for _key, _stmt, _needs, _consts, _fn, _desc in _SPECS:
    register(Bound(key=_key, paper=PAPER, statement=_stmt, kind=BoundKind.MEASURE,
                   form="printed", needs=_needs, constants=_consts, fn=_fn,
                   description=f"{_desc} (a measure, not a bound)"))
register_quantities(PAPER, measure_quantities)
