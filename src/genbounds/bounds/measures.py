"""Generalization measures that are not a paper's bound: the baselines a reader expects.

Jiang, Neyshabur, Mobahi, Krishnan & Bengio, "Fantastic generalization measures and where to find
them" (ICLR 2020) compared some forty measures on thousands of trained networks; Dziugaite et al.
(NeurIPS 2020) re-implemented them in their released code
(``nitarshan/robust-generalization-measures``, ``data/generation/measures.py``). The comparison
chapter puts the ones every reader asks about next to the papers' bounds, on the same models.
Names are Jiang et al.'s; ``d`` is the number of weight matrices, ``gamma`` the margin (below):

==================================  ========================================================
``measures.n_params``               number of trainable parameters ``omega`` (``num.params``)
``measures.log_prod_spec``          ``sum_i log ||W_i||_2^2`` (``log.prod.of.spec``)
``measures.log_sum_spec``           ``log d + (1/d) sum_i log ||W_i||_2^2`` (``log.sum.of.spec``:
                                    the log of ``d (prod_i ||W_i||_2^2)^(1/d)``, the smallest
                                    ``sum_i ||W_i||_2^2`` over rescalings of the layers)
``measures.log_prod_fro``           ``sum_i log ||W_i||_F^2`` (``log.prod.of.fro``)
``measures.log_sum_fro``            ``log d + (1/d) sum_i log ||W_i||_F^2`` (``log.sum.of.fro``)
``measures.dist_init``              ``||w - w_0||_2`` over every trainable parameter
``measures.param_norm``             ``||w||_2^2`` (``param.norm``)
``measures.inverse_margin``         ``1 / gamma^2`` (``inverse.margin``)
``measures.log_prod_spec_margin``   ``log.prod.of.spec - 2 log gamma`` (``.over.margin``)
``measures.log_sum_spec_margin``    ``log d + (1/d)(log.prod.of.spec - 2 log gamma)``
``measures.log_prod_fro_margin``    ``log.prod.of.fro - 2 log gamma``
``measures.log_sum_fro_margin``     ``log d + (1/d)(log.prod.of.fro - 2 log gamma)``
``measures.path_norm``              ``f_{w^2}(1)``: the network with every weight squared, on an
                                    input of ones (``path.norm``; see :func:`path_norm`)
``measures.path_norm_margin``       ``path.norm / gamma^2`` (``path.norm.over.margin``)
``pacbayes.init``                   ``||w - w_0||^2 / (4 sigma^2) + log(m / sigma) + 10``
``pacbayes.mag_init``               ``1/4 sum_i log((eps^2 + (s^2 + 1) ||w - w_0||^2 / omega) /
                                    (eps^2 + s^2 (w_i - w_{0,i})^2)) + log(m / s) + 10``
``pacbayes.flatness``               ``1 / sigma^2``
``pacbayes.mag_flatness``           ``1 / s^2``
``pacbayes.init_released``          ``pacbayes.init`` in the released code's noise convention
``pacbayes.flatness_released``      ``pacbayes.flatness`` in the released code's convention
==================================  ========================================================

``W_i`` runs over the trainable weight matrices of the model view (a factored head's ``W_Q``,
``W_K`` count, their product ``W_QK`` then does not), ``m`` is the number of training samples.

**Margin.** For a scalar output ``f`` and labels ``y`` in {0, 1} the margin of a sample is
``(2y - 1) f(x)``, the logit difference of the two-class logits ``(0, f)``: Jiang et al.'s
"correct logit minus the largest other logit". ``gamma`` is the ``floor(m/10)``-th smallest margin
on the training set (their 10th percentile; the released code's ``kthvalue(m // 10)``), and, as
in the released code, its absolute value enters the measures (a model with more than 10% training
errors has a negative 10th percentile; its ``|gamma|`` is used, and the chapter says how many
such models there are). ``gamma = 0`` makes every margin measure undefined (``NotApplicable``).

**Path norm.** Jiang et al. (after Neyshabur et al. 2015) square every weight and evaluate the
network on an input of ones. On an :class:`~genbounds.models.EdelmanTransformer` the unit-ball
projections are left out (with them the "network of squared weights" is not the sum over paths
of products of squared weights), and on identical tokens the attention is uniform whatever
``W_QK`` is, so ``W_QK`` drops out: the value is ``w^2 . prod_l (sum_h W_c,h^2 ... W_v,h^2) 1``,
the sum over every path input coordinate -> value -> output -> ... -> readout of the product of
its squared weights (entrywise squares, ``W^2``). Other families have no path norm here.

**PAC-Bayes noise convention (stated).** Jiang et al. define the perturbation as
``u ~ N(0, sigma^2 I)`` (standard deviation ``sigma``; magnitude-aware: variance
``s^2 w_i^2 + eps^2``). The released code draws ``torch.normal(0, sigma**2)``, whose second
argument is a *standard deviation*: its noise has standard deviation ``sigma^2`` (magnitude-aware:
``sigma^2 |w_i|^2 + eps^2``). Both conventions are implemented (:func:`pacbayes_sigma`,
``noise="paper"`` or ``"released"``). The comparison sweep runs the search in the paper's
convention only and reads the *same* isotropic perturbation in the released code's parameter,
``sigma_released = sqrt(sigma)`` (both searches look for the noise level that moves the training
accuracy by 0.1; the released search bisects ``sigma`` on ``[0, 2]``, i.e. the standard deviation
on ``[0, 4]``, so the two agree up to the search tolerance while the paper's deviation stays below
2). ``1/sigma^2`` then ranks models identically under both, ``pacbayes.init`` does not. The
released magnitude-aware noise (std ``s^2 |w_i|^2 + eps^2``) is a different family of
perturbations, not a reparametrisation of the paper's, and is not computed in the sweep.

**Other conventions of the released code, not followed here** (stated): it excludes biases from
every norm (the Edelman models have none), replaces each measure by ``sqrt(value / m)`` (or
``(value - log m) / 2`` for ``log`` measures) before comparing models trained on different
sample sizes, and draws the magnitude-aware noise on the model's device stream.

All are registered as :class:`~genbounds.bounds.registry.Bound` of kind
``BoundKind.MEASURE``: they rank models, they do not bound a gap (the PAC-Bayes ones are the
KL-like numerators of a PAC-Bayes bound on a *perturbed* classifier, in Jiang et al.'s form, not
a bound on the trained model's gap), so "vacuous" is not defined for them.

Constants of the sigma search (Jiang et al. 2020, Appendix C, and the released code):
bisection of ``sigma`` on ``[0, 2]`` started at the midpoint, ``search_depth = 15`` halvings,
``montecarlo_samples = 10`` perturbations per step, target deviation of the training **accuracy**
``0.1`` with tolerance ``1e-2`` (stop when ``|deviation - 0.1| < 1e-2``), ``eps = 1e-3``,
``+ 10`` and ``log(m / sigma)`` as printed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

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
from genbounds.validation import (
    check_choice,
    check_finite_tensor,
    check_int,
    check_nonnegative,
    check_number,
    check_positive,
)

__all__ = [
    "JIANG_EPS",
    "MEASURE_KEYS",
    "PAPER",
    "measure_quantities",
    "pacbayes_mag_logsum",
    "pacbayes_sigma",
    "path_norm",
    "training_margin",
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
    ``<matrix>.spectral`` / ``.fro``) and, for the other measures, the stored columns
    ``margin.q10`` (:func:`training_margin`), ``path_norm`` (:func:`path_norm`), the sigma
    searches ``pacbayes.sigma``, ``pacbayes.mag_sigma``, ``pacbayes.mag_logsum`` (Jiang et al.'s
    convention; ``sigma_released = sqrt(sigma)`` is the same isotropic perturbation in the
    released code's parameter); ``context["m"]`` is the number of training samples.
    """
    mats = weight_matrices(row)
    spec = np.array([float(row[f"{n}.spectral"]) for n in mats])
    fro = np.array([float(row[f"{n}.fro"]) for n in mats])
    if np.any(spec <= 0) or np.any(fro <= 0):
        raise NotApplicable("a weight matrix is zero: log-products of norms are undefined")
    out: dict[str, Any] = {
        "omega": float(row["model.n_params"]),
        "log_prod_spec": float(np.sum(2 * np.log(spec))),
        "log_prod_fro": float(np.sum(2 * np.log(fro))),
        "n_matrices": len(mats),
        "param_norm_sq": float(row["model.l2"]) ** 2,
    }
    if "model.dist_l2" in row:
        out["dist_init"] = float(row["model.dist_l2"])
    if "m" in context:
        out["m"] = int(context["m"])
    if "margin.q10" in row and math.isfinite(float(row["margin.q10"])):
        out["margin"] = abs(float(row["margin.q10"]))  # the released code's |gamma|
    if "path_norm" in row and math.isfinite(float(row["path_norm"])):
        out["path_norm"] = float(row["path_norm"])
    for col in ("sigma", "mag_sigma", "mag_logsum"):
        if f"pacbayes.{col}" in row:
            out[col] = float(row[f"pacbayes.{col}"])
    if "sigma" in out and out["sigma"] > 0:
        # the same perturbation in the released code's parameter (its noise has std sigma^2)
        out["sigma_released"] = math.sqrt(out["sigma"])
    return out


# --------------------------------------------------------------------- margin and path norm
def training_margin(outputs: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    """Jiang et al.'s margin ``gamma`` of each of ``K`` binary classifiers, shape ``(K,)``.

    ``outputs`` ``(K, m)`` are the scalar outputs ``f(x)`` on the ``m`` training samples,
    ``labels`` ``(K, m)`` in {0, 1}. The margin of a sample is ``(2y - 1) f(x)`` (the logit
    difference of the two-class logits ``(0, f)``); ``gamma`` is the ``floor(m/10)``-th smallest
    (the released code's ``kthvalue(m // 10)``), **signed** (the measures use ``|gamma|``).
    """
    f = check_finite_tensor(outputs, "outputs", ndim=2, shape_hint="(K, m)")
    if not isinstance(labels, torch.Tensor) or tuple(labels.shape) != tuple(f.shape):
        raise ValueError(f"labels must be a tensor of shape {tuple(f.shape)}")
    if not bool(((labels == 0) | (labels == 1)).all()):
        raise ValueError("labels must be 0 or 1")
    m = int(f.shape[1])
    if m < 10:
        raise ValueError(f"outputs must have at least 10 samples per model, got {m}")
    marg = (2 * labels.to(f.dtype) - 1) * f
    return np.asarray(marg.detach().double().cpu().kthvalue(m // 10, dim=1).values.numpy())


def path_norm(view: Any) -> np.ndarray:
    """Jiang et al.'s ``path.norm`` of each model of an Edelman-family view, shape ``(K,)``.

    Every weight squared, evaluated on an input of ones, with the unit-ball projections left out
    (see the module docstring): ``p_0 = 1`` (length ``d``), ``p_{l+1} = sum_h W_O,h^2 (W_V,h^2
    p_l)`` (entrywise squares, view orientation), value ``readout^2 . p_L``. ``W_QK`` does not
    enter (attention over identical tokens is uniform). ``ValueError`` for other families.
    """
    family = getattr(view, "family", None)
    if family != "EdelmanTransformer":
        raise ValueError(f"view must be an EdelmanTransformer view, got family {family!r}")
    v = view.detached(torch.float64)
    K, d = int(v.readout.shape[0]), int(v.readout.shape[-1])
    p = torch.ones(K, d, dtype=torch.float64)
    for layer in v.layers:
        if layer.mlp or layer.biases:
            raise ValueError("view has MLP maps or biases: path norm not implemented for them")
        q = torch.zeros_like(p)
        for head in layer.heads:
            if head.W_O is None:
                raise ValueError("view has a head without W_O")
            q = q + torch.einsum("kij,kj->ki", head.W_O**2,
                                 torch.einsum("kij,kj->ki", head.W_V**2, p))
        p = q
    return np.asarray(torch.einsum("koi,ki->k", v.readout**2, p).numpy())


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
    noise: Literal["paper", "released"] = "paper",
) -> np.ndarray:
    """Jiang et al.'s sigma search, for the ``K`` models of an ensemble at once.

    For each model, bisect ``sigma`` on ``[0, upper]``: perturb every parameter by Gaussian
    noise of standard deviation ``sigma`` (``noise="paper"``: Jiang et al.'s ``N(0, sigma^2)``)
    or ``sigma^2`` (``noise="released"``: the released code's ``torch.normal(0, sigma**2)``);
    magnitude-aware (``magnitude_eps`` given): ``sqrt(sigma^2 w_i^2 + eps^2)`` (paper) or
    ``sigma^2 w_i^2 + eps^2`` (released) per entry. Measure the training accuracy
    ``montecarlo_samples`` times, and compare the mean's deviation from the unperturbed accuracy
    with ``accuracy_displacement``: stop when within ``displacement_tolerance``, else move the upper
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
    released = check_choice(noise, "noise", ("paper", "released")) == "released"
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer, got {seed!r}")
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
                        if magnitude_eps is None:
                            std = s**2 if released else s
                        elif released:
                            std = s**2 * p0**2 + magnitude_eps**2
                        else:
                            std = torch.sqrt(s**2 * p0**2 + magnitude_eps**2)
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
           constants: Mapping[str, float] | None = None, args: tuple[str, ...] = ()
           ) -> BoundValue:
    if not math.isfinite(value):
        who = ", ".join(args) if args else "the inputs"
        raise ValueError(f"{who} of {key} give a non-finite value ({value!r}): overflow")
    return BoundValue(value, BoundKind.MEASURE, terms=terms or {}, constants=constants or {},
                      name=key, reference=f"Jiang et al. 2020, {key}")


def _n_params(omega: float) -> BoundValue:
    return _value("num.params", check_positive(omega, "omega"))


def _log_prod_spec(log_prod_spec: float) -> BoundValue:
    return _value("log.prod.of.spec", check_number(log_prod_spec, "log_prod_spec"))


def _log_sum(name: str, log_prod: float, n_matrices: int, log_margin: float = 0.0
             ) -> BoundValue:
    d = check_int(n_matrices, "n_matrices")
    log_prod = check_number(log_prod, "log_prod_spec" if "spec" in name else "log_prod_fro")
    return _value(name, math.log(d) + (log_prod - 2 * log_margin) / d,
                  {"log_d": math.log(d), "mean_log_sq_norm": (log_prod - 2 * log_margin) / d},
                  {"d": d})


def _log_sum_spec(log_prod_spec: float, n_matrices: int) -> BoundValue:
    return _log_sum("log.sum.of.spec", log_prod_spec, n_matrices)


def _log_prod_fro(log_prod_fro: float) -> BoundValue:
    return _value("log.prod.of.fro", check_number(log_prod_fro, "log_prod_fro"))


def _log_sum_fro(log_prod_fro: float, n_matrices: int) -> BoundValue:
    return _log_sum("log.sum.of.fro", log_prod_fro, n_matrices)


def _dist_init(dist_init: float) -> BoundValue:
    return _value("dist.init", check_nonnegative(dist_init, "dist_init"))


def _param_norm(param_norm_sq: float) -> BoundValue:
    return _value("param.norm", check_nonnegative(param_norm_sq, "param_norm_sq"))


def _gamma(margin: float) -> float:
    if check_nonnegative(margin, "margin") == 0:
        raise NotApplicable("the margin is 0: the margin measures are undefined")
    return float(margin)


def _inverse_margin(margin: float) -> BoundValue:
    return _value("inverse.margin", 1 / _gamma(margin) ** 2, args=("margin",))


def _log_prod_spec_margin(log_prod_spec: float, margin: float) -> BoundValue:
    lp = check_number(log_prod_spec, "log_prod_spec")
    return _value("log.prod.of.spec.over.margin", lp - 2 * math.log(_gamma(margin)))


def _log_sum_spec_margin(log_prod_spec: float, n_matrices: int, margin: float) -> BoundValue:
    return _log_sum("log.sum.of.spec.over.margin", log_prod_spec, n_matrices,
                    math.log(_gamma(margin)))


def _log_prod_fro_margin(log_prod_fro: float, margin: float) -> BoundValue:
    lp = check_number(log_prod_fro, "log_prod_fro")
    return _value("log.prod.of.fro.over.margin", lp - 2 * math.log(_gamma(margin)))


def _log_sum_fro_margin(log_prod_fro: float, n_matrices: int, margin: float) -> BoundValue:
    return _log_sum("log.sum.of.fro.over.margin", log_prod_fro, n_matrices,
                    math.log(_gamma(margin)))


def _path_norm(path_norm: float) -> BoundValue:
    return _value("path.norm", check_nonnegative(path_norm, "path_norm"))


def _path_norm_margin(path_norm: float, margin: float) -> BoundValue:
    pn = check_nonnegative(path_norm, "path_norm")
    return _value("path.norm.over.margin", pn / _gamma(margin) ** 2,
                  args=("path_norm", "margin"))


def _pb_init(dist_init: float, sigma: float, m: int, offset: float,
             name: str = "pacbayes.init", arg: str = "sigma") -> BoundValue:
    sg = check_positive(sigma, arg)
    kl = check_nonnegative(dist_init, "dist_init")**2 / (4 * sg**2)
    log_term = math.log(check_int(m, "m") / sg)
    offset = check_number(offset, "offset")
    return _value(name, kl + log_term + offset, {"kl": kl, "log_m_over_sigma": log_term},
                  {"offset": offset, "sigma": sg}, args=("dist_init", arg, "m", "offset"))


def _pb_mag_init(mag_logsum: float, mag_sigma: float, m: int, offset: float,
                 name: str = "pacbayes.mag.init", suffix: str = "") -> BoundValue:
    sg = check_positive(mag_sigma, "mag_sigma" + suffix)
    kl = check_number(mag_logsum, "mag_logsum" + suffix) / 4
    log_term = math.log(check_int(m, "m") / sg)
    offset = check_number(offset, "offset")
    return _value(name, kl + log_term + offset,
                  {"kl": kl, "log_m_over_sigma": log_term}, {"offset": offset, "sigma": sg,
                                                             "eps": JIANG_EPS},
                  args=("mag_logsum" + suffix, "mag_sigma" + suffix, "m", "offset"))


def _pb_flat(sigma: float, name: str = "pacbayes.flatness", arg: str = "sigma") -> BoundValue:
    return _value(name, 1 / check_positive(sigma, arg) ** 2, args=(arg,))


def _pb_mag_flat(mag_sigma: float, name: str = "pacbayes.mag.flatness",
                 arg: str = "mag_sigma") -> BoundValue:
    return _value(name, 1 / check_positive(mag_sigma, arg) ** 2, args=(arg,))


def _pb_init_r(dist_init: float, sigma_released: float, m: int, offset: float) -> BoundValue:
    return _pb_init(dist_init, sigma_released, m, offset, "pacbayes.init (released noise)",
                    "sigma_released")


def _pb_flat_r(sigma_released: float) -> BoundValue:
    return _pb_flat(sigma_released, "pacbayes.flatness (released noise)", "sigma_released")


_REL = "; released code's noise convention (std sigma^2)"
_SPECS: list[tuple[str, str, tuple[str, ...], dict[str, float], Callable[..., BoundValue],
                   str]] = [
    ("measures.n_params", "num.params", ("omega",), {}, _n_params,
     "number of trainable parameters"),
    ("measures.log_prod_spec", "log.prod.of.spec", ("log_prod_spec",), {}, _log_prod_spec,
     "log of the product of squared spectral norms of the weight matrices"),
    ("measures.log_sum_spec", "log.sum.of.spec", ("log_prod_spec", "n_matrices"), {},
     _log_sum_spec, "log d + mean log squared spectral norm (Jiang et al.'s sum-of-spec)"),
    ("measures.log_prod_fro", "log.prod.of.fro", ("log_prod_fro",), {}, _log_prod_fro,
     "log of the product of squared Frobenius norms of the weight matrices"),
    ("measures.log_sum_fro", "log.sum.of.fro", ("log_prod_fro", "n_matrices"), {},
     _log_sum_fro, "log d + mean log squared Frobenius norm (Jiang et al.'s sum-of-fro)"),
    ("measures.dist_init", "dist.init", ("dist_init",), {}, _dist_init,
     "l2 distance of all parameters from initialisation"),
    ("measures.param_norm", "param.norm", ("param_norm_sq",), {}, _param_norm,
     "squared l2 norm of all parameters"),
    ("measures.inverse_margin", "inverse.margin", ("margin",), {}, _inverse_margin,
     "1 / gamma^2, gamma the 10th-percentile training margin"),
    ("measures.log_prod_spec_margin", "log.prod.of.spec.over.margin",
     ("log_prod_spec", "margin"), {}, _log_prod_spec_margin,
     "log of the product of squared spectral norms over gamma^2"),
    ("measures.log_sum_spec_margin", "log.sum.of.spec.over.margin",
     ("log_prod_spec", "n_matrices", "margin"), {}, _log_sum_spec_margin,
     "log d + (log.prod.of.spec - 2 log gamma) / d"),
    ("measures.log_prod_fro_margin", "log.prod.of.fro.over.margin",
     ("log_prod_fro", "margin"), {}, _log_prod_fro_margin,
     "log of the product of squared Frobenius norms over gamma^2"),
    ("measures.log_sum_fro_margin", "log.sum.of.fro.over.margin",
     ("log_prod_fro", "n_matrices", "margin"), {}, _log_sum_fro_margin,
     "log d + (log.prod.of.fro - 2 log gamma) / d"),
    ("measures.path_norm", "path.norm", ("path_norm",), {}, _path_norm,
     "path norm: every weight squared, on an input of ones (projections left out)"),
    ("measures.path_norm_margin", "path.norm.over.margin", ("path_norm", "margin"), {},
     _path_norm_margin, "path norm over gamma^2"),
    ("pacbayes.init", "pacbayes.init", ("dist_init", "sigma", "m"), {"offset": 10.0}, _pb_init,
     "PAC-Bayes numerator ||w-w0||^2/(4 sigma^2) + log(m/sigma) + 10, isotropic sigma search"),
    ("pacbayes.mag_init", "pacbayes.mag.init", ("mag_logsum", "mag_sigma", "m"),
     {"offset": 10.0}, _pb_mag_init,
     "magnitude-aware PAC-Bayes numerator, magnitude-aware sigma search (eps = 1e-3)"),
    ("pacbayes.flatness", "pacbayes.flatness", ("sigma",), {}, _pb_flat,
     "1/sigma^2 of the isotropic sigma search"),
    ("pacbayes.mag_flatness", "pacbayes.mag.flatness", ("mag_sigma",), {}, _pb_mag_flat,
     "1/s^2 of the magnitude-aware sigma search"),
    ("pacbayes.init_released", "pacbayes.init", ("dist_init", "sigma_released", "m"),
     {"offset": 10.0}, _pb_init_r, "PAC-Bayes numerator, isotropic sigma search" + _REL),
    ("pacbayes.flatness_released", "pacbayes.flatness", ("sigma_released",), {}, _pb_flat_r,
     "1/sigma^2 of the isotropic sigma search" + _REL),
]

#: Keys of every registered measure, in registration order.
MEASURE_KEYS: tuple[str, ...] = tuple(s[0] for s in _SPECS)



def _guarded(fn: Callable[..., BoundValue], key: str) -> Callable[..., BoundValue]:
    """``fn`` with float overflow / underflow to zero turned into a ``ValueError``."""
    def wrapped(**kw: Any) -> BoundValue:
        try:
            return fn(**kw)
        except (OverflowError, ZeroDivisionError) as e:
            raise ValueError(f"the inputs {sorted(kw)} of {key} overflow ({e})") from e
    wrapped.__name__ = getattr(fn, "__name__", key)
    wrapped.__doc__ = fn.__doc__
    return wrapped


for _key, _stmt, _needs, _consts, _fn, _desc in _SPECS:
    register(Bound(key=_key, paper=PAPER, statement=_stmt, kind=BoundKind.MEASURE,
                   form="printed", needs=_needs, constants=_consts, fn=_guarded(_fn, _key),
                   description=f"{_desc} (a measure, not a bound)"))
register_quantities(PAPER, measure_quantities)
