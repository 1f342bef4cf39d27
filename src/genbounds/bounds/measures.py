"""Generalization measures that are not a paper's bound: the baselines a reader expects.

Jiang, Neyshabur, Mobahi, Krishnan & Bengio, "Fantastic generalization measures and where to find
them" (ICLR 2020) compared some forty measures on thousands of trained networks; Dziugaite et al.
(NeurIPS 2020) re-implemented them in their released code
(``nitarshan/robust-generalization-measures``, ``data/generation/measures.py``, the **peer code**
below). Every measure here follows the peer code's definition, under its name; a variant that
teaches something is kept under a name of its own. ``d`` is the number of weight matrices,
``gamma`` the margin, ``omega`` the number of weights:

==================================  ========================================================
``measures.n_params``               ``omega`` (``num.params``)
``measures.log_prod_spec``          ``sum_i log ||W_i||_2^2`` (``log.prod.of.spec``)
``measures.log_sum_spec``           ``log d + (1/d) sum_i log ||W_i||_2^2`` (``log.sum.of.spec``)
``measures.log_prod_fro``           ``sum_i log ||W_i||_F^2`` (``log.prod.of.fro``)
``measures.log_sum_fro``            ``log d + (1/d) sum_i log ||W_i||_F^2`` (``log.sum.of.fro``)
``measures.dist_init``              ``||w - w_0||_2`` (the peer's ``L2_DIST``)
``measures.param_norm``             ``sum_i ||W_i||_F^2 = ||w||_2^2`` (``param.norm``)
``measures.inverse_margin``         ``1 / gamma^2`` (``inverse.margin``)
``measures.log_prod_spec_margin``   ``log.prod.of.spec - 2 log gamma``
``measures.log_sum_spec_margin``    ``log d + (1/d)(log.prod.of.spec - 2 log gamma)``
``measures.log_prod_fro_margin``    ``log.prod.of.fro - 2 log gamma``
``measures.log_sum_fro_margin``     ``log d + (1/d)(log.prod.of.fro - 2 log gamma)``
``measures.path_norm``              the model's own forward pass with every trainable parameter
                                    squared, on one input of ones, summed (``path.norm``)
``measures.path_norm_margin``       ``path.norm / gamma^2`` (``path.norm.over.margin``)
``measures.path_norm_paths``        variant: the sum over paths of the product of squared
                                    weights (the forward pass without its normalisations)
``pacbayes.init``                   ``||w - w_0||^2 / (4 s^2) + log(m / s) + 10``
``pacbayes.mag_init``               ``1/4 sum_i log((eps^2 + (s_m^2 + 1) ||w - w_0||^2 / omega) /
                                    (eps^2 + s_m^2 (w_i - w_{0,i})^2)) + log(m / s_m) + 10``
``pacbayes.flatness``               ``1 / s^2``
``pacbayes.mag_flatness``           ``1 / s_m^2``
``pacbayes.init_jiang``             variant: ``pacbayes.init`` in Jiang et al.'s printed noise
                                    convention (``sigma = s^2``, below)
==================================  ========================================================

**Weights.** The peer code's weights are its modules' parameters except those whose name contains
``bias`` or ``bn`` (:func:`weight_parameters` applies the same rule to a view's parameters);
``W_i`` runs over the weight matrices of the model view, one per linear map (a factored head's
``W_Q``, ``W_K``; their product ``W_QK`` then does not count), as the peer's one weight tensor
per module; a vector (a readout ``w``) is the matrix ``(n, 1)``, as the peer's
``p.view(p.shape[0], -1)`` makes it. ``m`` is the number of training samples.

**Margin.** For a scalar output ``f`` and labels ``y`` in {0, 1} the margin of a sample is
``(2y - 1) f(x)``, the logit difference of the two-class logits ``(0, f)``: the peer's "correct
logit minus the largest other logit". ``gamma`` is the ``floor(m/10)``-th smallest margin on the
training set (``kthvalue(m // 10)``), and, as in the peer code, its absolute value enters the
measures (a model with more than 10% training errors has a negative 10th percentile; its
``|gamma|`` is used). ``gamma = 0`` makes every margin measure undefined (``NotApplicable``).

**Path norm (peer convention).** The peer code copies the model, squares every trainable
parameter in place, evaluates the model on one input of ones (``torch.ones([1] + D)``) and sums
the outputs. :func:`path_norm` does exactly that with the model's own forward pass: every
normalisation the model applies (the unit-ball projections of an Edelman Transformer, the mean
pooling of the shallow encoder, a softmax over identical tokens, which is uniform) is applied to
the squared network too. With normalisations the result is *not* the sum over paths of products
of squared weights (Neyshabur et al. 2015's path norm); :func:`path_norm_paths` computes that sum
for the views that have no MLP maps or biases and give every head an output map, which is
what an Edelman Transformer without its projections computes.

**PAC-Bayes noise convention (peer convention).** Jiang et al. print the perturbation as
``u ~ N(0, sigma^2 I)``; the peer code draws ``torch.normal(0, s**2)``, whose second argument is a
*standard deviation*: its isotropic noise has standard deviation ``s^2``, its magnitude-aware
noise standard deviation ``s_m^2 |w_i|^2 + eps^2`` (``eps = 1e-3``), and the measures are written
in the searched parameter ``s`` (``s_m``). The sweep searches in the peer's convention
(:func:`pacbayes_sigma` with ``noise="released"``). The isotropic perturbation of standard
deviation ``s^2`` is the perturbation Jiang et al.'s text calls ``sigma = s^2`` (both searches
move the training accuracy by 0.1), so ``pacbayes.init_jiang`` reads the same search in the
printed convention: ``||w - w_0||^2 / (4 s^4) + log(m / s^2) + 10``; the flatness ``1/s^4`` ranks
exactly as ``1/s^2`` and is not kept. The magnitude-aware family of the printed convention
(variance ``s^2 w_i^2 + eps^2``) is another family of perturbations and is not computed.

**Conventions of the peer code not followed here** (stated): its final step replaces each measure
by ``sqrt(value / m)`` (``(value - log m) / 2`` for the ``log`` measures) before comparing models
trained on different sample sizes (:func:`peer_size_adjusted` computes it; the comparison chapter
reports both); it draws the magnitude-aware noise on the model's device stream (here always the
CPU stream, so a run is the same on every device); it folds batch normalisation into the
preceding convolution (no model here has batch normalisation).

All are registered as :class:`~genbounds.bounds.registry.Bound` of kind
``BoundKind.MEASURE``: they rank models, they do not bound a gap (the PAC-Bayes ones are the
KL-like numerators of a PAC-Bayes bound on a *perturbed* classifier, not a bound on the trained
model's gap), so "vacuous" is not defined for them. :func:`genbounds.labels.label` names each in
words for figures and tables.

Constants of the sigma search (the peer code, ``_pacbayes_sigma``): bisection of ``s`` on
``[0, 2]`` started at the midpoint, ``search_depth = 15`` halvings, ``montecarlo_samples = 10``
perturbations per step, target deviation of the training **accuracy** ``0.1`` with tolerance
``1e-2`` (stop when ``|deviation - 0.1| < 1e-2``), ``eps = 1e-3``, ``+ 10`` and ``log(m / s)``.
"""

from __future__ import annotations

import copy
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
from genbounds.protocols import ModelView
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
    "path_norm_paths",
    "peer_size_adjusted",
    "training_margin",
    "weight_matrices",
    "weight_norms",
    "weight_parameters",
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


def weight_parameters(params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The peer code's weights: every parameter whose name contains neither ``bias`` nor ``bn``."""
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a mapping name -> tensor, got {type(params).__name__}")
    return {n: t for n, t in params.items() if "bias" not in n and "bn" not in n}


def weight_norms(view: ModelView) -> dict[str, np.ndarray]:
    """The peer code's whole-model quantities over its weights (:func:`weight_parameters`).

    ``weights.n`` (``omega``, the peer's ``num_params``), ``weights.l2`` (``||w||_2``),
    ``weights.dist_l2`` (``||w - w_0||_2``, needs ``view.initial``), each of shape ``(K,)``.
    """
    if not isinstance(view, ModelView):
        raise ValueError(f"view must be a ModelView, got {type(view).__name__}")
    v = view.detached(torch.float64)
    K = v.n_models
    w = weight_parameters(v.parameters)
    if not w:
        raise ValueError("view has no weight parameter (every name contains 'bias' or 'bn')")
    flat = torch.cat([t.reshape(K, -1) for t in w.values()], dim=1)
    out = {"weights.n": np.full(K, float(flat.shape[1])),
           "weights.l2": torch.linalg.vector_norm(flat, dim=1).numpy()}
    if v.initial is not None:
        w0 = weight_parameters(v.initial.parameters)
        flat0 = torch.cat([w0[n].reshape(K, -1) for n in w], dim=1)
        out["weights.dist_l2"] = torch.linalg.vector_norm(flat - flat0, dim=1).numpy()
    return out


def measure_quantities(row: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """Every quantity the measures need, from one stored model row (the registered adapter).

    ``row`` must hold the norm table (``<matrix>.spectral`` / ``.fro``), the weight columns of
    :func:`weight_norms` (``weights.n``, ``weights.l2``, ``weights.dist_l2``; a row without them
    falls back to ``model.n_params``, ``model.l2``, ``model.dist_l2``, the same numbers for a model
    without biases) and, for the other measures, the stored columns ``margin.q10``
    (:func:`training_margin`), ``path_norm`` (:func:`path_norm`), ``path_norm_paths``, and the
    sigma searches in the peer's convention ``pacbayes.sigma``, ``pacbayes.mag_sigma`` with
    ``pacbayes.mag_logsum``; ``context["m"]`` is the number of training samples.
    """
    mats = weight_matrices(row)
    spec = np.array([float(row[f"{n}.spectral"]) for n in mats])
    fro = np.array([float(row[f"{n}.fro"]) for n in mats])
    if np.any(spec <= 0) or np.any(fro <= 0):
        raise NotApplicable("a weight matrix is zero: log-products of norms are undefined")

    def col(peer: str, fallback: str) -> float:
        return float(row[peer] if peer in row else row[fallback])

    out: dict[str, Any] = {
        "omega": col("weights.n", "model.n_params"),
        "log_prod_spec": float(np.sum(2 * np.log(spec))),
        "log_prod_fro": float(np.sum(2 * np.log(fro))),
        "n_matrices": len(mats),
        "param_norm_sq": col("weights.l2", "model.l2") ** 2,
    }
    if "weights.dist_l2" in row or "model.dist_l2" in row:
        out["dist_init"] = col("weights.dist_l2", "model.dist_l2")
    if "m" in context:
        out["m"] = int(context["m"])
    if "margin.q10" in row and math.isfinite(float(row["margin.q10"])):
        out["margin"] = abs(float(row["margin.q10"]))  # the peer code's |gamma|
    for c in ("path_norm", "path_norm_paths"):
        if c in row and math.isfinite(float(row[c])):
            out[c] = float(row[c])
    for c in ("sigma", "mag_sigma", "mag_logsum"):
        if f"pacbayes.{c}" in row:
            out[c] = float(row[f"pacbayes.{c}"])
    return out


def peer_size_adjusted(key: str, value: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The peer code's last step: ``(value - log m) / 2`` for a ``log`` measure (registered
    statement starting with ``log.``), else ``sqrt(value / m)`` (``nan`` where ``value < 0``)."""
    from genbounds.bounds.registry import get

    v = np.asarray(value, dtype=np.float64)
    mm = np.asarray(m, dtype=np.float64)
    if np.any(mm < 1):
        raise ValueError("m must be >= 1 (training samples)")
    if get(key).statement.startswith("log."):
        return np.asarray(0.5 * (v - np.log(mm)))
    with np.errstate(invalid="ignore"):
        return np.asarray(np.sqrt(v / mm))


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


def path_norm(model: nn.Module, input_shape: tuple[int, int]) -> np.ndarray:
    """The peer code's ``path.norm`` of each of the ``K`` models of an ensemble, shape ``(K,)``.

    A copy of ``model`` in float64 with every trainable parameter squared, evaluated on one input
    of ones of shape ``input_shape = (T, d)`` (tokens, token dimension; the ensemble input is
    ``(K, 1, T, d)``), its outputs summed per model. ``model`` is any ensemble module mapping
    ``(K, B, T, d)`` to outputs with leading ``(K, B)``; whatever the forward pass normalises
    (projections, pooling, softmax) it normalises here too (see the module docstring).
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if (not isinstance(input_shape, tuple) or len(input_shape) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in input_shape)):
        raise ValueError(f"input_shape must be a pair (T, d) of positive integers, got "
                         f"{input_shape!r}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    K = int(params[0].shape[0])
    sq = copy.deepcopy(model).to(device="cpu", dtype=torch.float64)
    sq.eval()
    with torch.no_grad():
        for p in sq.parameters():
            if p.requires_grad:
                p.pow_(2)
        out = sq(torch.ones((K, 1, *input_shape), dtype=torch.float64))
    if out.ndim < 2 or out.shape[0] != K:
        raise ValueError(f"model must return outputs with leading (K={K}, B=1), got "
                         f"{tuple(out.shape)}")
    return np.asarray(out.reshape(K, -1).sum(1).numpy())


def path_norm_paths(view: ModelView) -> np.ndarray:
    """The sum over paths of the product of squared weights, shape ``(K,)`` (the variant).

    For a view whose layers have no MLP maps and no biases and whose heads all have an output
    map (a sum of attention heads per layer, then a linear readout): ``p_0 = 1`` (length ``d``),
    ``p_{l+1} = sum_h W_O,h^2 (W_V,h^2 p_l)`` (entrywise squares), value ``readout^2 . p_L``;
    ``W_QK`` does not enter (attention over identical tokens is uniform). This is the peer's
    forward pass on squared weights *without* the model's normalisations (for an Edelman
    Transformer: without its unit-ball projections). ``ValueError`` for any other view.
    """
    if not isinstance(view, ModelView):
        raise ValueError(f"view must be a ModelView, got {type(view).__name__}")
    v = view.detached(torch.float64)
    K, d = int(v.readout.shape[0]), int(v.readout.shape[-1])
    p = torch.ones(K, d, dtype=torch.float64)
    for layer in v.layers:
        if layer.mlp or layer.biases:
            raise ValueError("view has MLP maps or biases: the path sum is not implemented")
        q = torch.zeros_like(p)
        for head in layer.heads:
            if head.W_O is None or head.biases:
                raise ValueError("view has a head without its own output map W_O (or with "
                                 "biases): the path sum is not implemented")
            q = q + torch.einsum("kij,kj->ki", head.W_O**2,
                                 torch.einsum("kij,kj->ki", head.W_V**2, p))
        p = q
    if p.shape[1] != v.readout.shape[-1]:
        raise ValueError("view: the last layer's width does not match the readout")
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


def pacbayes_mag_logsum(view: ModelView, mag_sigma: np.ndarray,
                        eps: float = JIANG_EPS) -> np.ndarray:
    """``sum_i log((eps^2 + (s^2 + 1) ||w - w0||^2 / omega) / (eps^2 + s^2 (w_i - w0_i)^2))``
    per model (``(K,)``), the sum in the peer's ``pacbayes.mag.init``, over the weights of
    :func:`weight_parameters` (``omega`` of them), ``s`` = ``mag_sigma`` in the peer's
    convention; ``view`` must carry its initial weights."""
    if not isinstance(view, ModelView):
        raise ValueError(f"view must be a ModelView, got {type(view).__name__}")
    if view.initial is None:
        raise ValueError("view must carry its initial weights (model.view(initial_state=...))")
    check_positive(eps, "eps")
    v = view.detached(torch.float64)
    assert v.initial is not None
    K = v.n_models
    s2 = np.asarray(mag_sigma, dtype=np.float64) ** 2
    if s2.shape != (K,) or not np.all(np.isfinite(s2)):
        raise ValueError(f"mag_sigma must be {K} finite values, got {mag_sigma!r}")
    w, w0 = weight_parameters(v.parameters), weight_parameters(v.initial.parameters)
    D = torch.cat([(w[n] - w0[n]).reshape(K, -1) for n in w], dim=1).numpy()
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


def _path_norm_paths(path_norm_paths: float) -> BoundValue:
    return _value("path.norm (sum over paths)",
                  check_nonnegative(path_norm_paths, "path_norm_paths"))


def _pb_init_jiang(dist_init: float, sigma: float, m: int, offset: float) -> BoundValue:
    """``pacbayes.init`` in the printed convention: the peer's ``s`` is ``sigma = s^2`` there."""
    return _pb_init(dist_init, check_positive(sigma, "sigma") ** 2, m, offset,
                    "pacbayes.init (printed noise)", "sigma")


_PEER = "; the peer code's noise convention (standard deviation s^2)"
_SPECS: list[tuple[str, str, tuple[str, ...], dict[str, float], Callable[..., BoundValue],
                   str]] = [
    ("measures.n_params", "num.params", ("omega",), {}, _n_params,
     "number of weights (parameters that are not biases)"),
    ("measures.log_prod_spec", "log.prod.of.spec", ("log_prod_spec",), {}, _log_prod_spec,
     "log of the product of squared spectral norms of the weight matrices"),
    ("measures.log_sum_spec", "log.sum.of.spec", ("log_prod_spec", "n_matrices"), {},
     _log_sum_spec, "log d + mean log squared spectral norm (Jiang et al.'s sum-of-spec)"),
    ("measures.log_prod_fro", "log.prod.of.fro", ("log_prod_fro",), {}, _log_prod_fro,
     "log of the product of squared Frobenius norms of the weight matrices"),
    ("measures.log_sum_fro", "log.sum.of.fro", ("log_prod_fro", "n_matrices"), {},
     _log_sum_fro, "log d + mean log squared Frobenius norm (Jiang et al.'s sum-of-fro)"),
    ("measures.dist_init", "dist.init", ("dist_init",), {}, _dist_init,
     "l2 distance of the weights from initialisation"),
    ("measures.param_norm", "param.norm", ("param_norm_sq",), {}, _param_norm,
     "squared l2 norm of the weights (sum of squared Frobenius norms)"),
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
     "path norm: the model's forward pass with every parameter squared, on an input of ones"),
    ("measures.path_norm_margin", "path.norm.over.margin", ("path_norm", "margin"), {},
     _path_norm_margin, "path norm over gamma^2"),
    ("measures.path_norm_paths", "path.norm (sum over paths)", ("path_norm_paths",), {},
     _path_norm_paths, "variant: sum over paths of the product of squared weights (the "
     "forward pass on squared weights without the model's normalisations)"),
    ("pacbayes.init", "pacbayes.init", ("dist_init", "sigma", "m"), {"offset": 10.0}, _pb_init,
     "PAC-Bayes numerator ||w-w0||^2/(4 s^2) + log(m/s) + 10, isotropic search" + _PEER),
    ("pacbayes.mag_init", "pacbayes.mag.init", ("mag_logsum", "mag_sigma", "m"),
     {"offset": 10.0}, _pb_mag_init,
     "magnitude-aware PAC-Bayes numerator (eps = 1e-3), magnitude-aware search" + _PEER),
    ("pacbayes.flatness", "pacbayes.flatness", ("sigma",), {}, _pb_flat,
     "1/s^2 of the isotropic search" + _PEER),
    ("pacbayes.mag_flatness", "pacbayes.mag.flatness", ("mag_sigma",), {}, _pb_mag_flat,
     "1/s^2 of the magnitude-aware search" + _PEER),
    ("pacbayes.init_jiang", "pacbayes.init (printed noise)", ("dist_init", "sigma", "m"),
     {"offset": 10.0}, _pb_init_jiang,
     "variant: pacbayes.init in Jiang et al.'s printed convention, sigma = s^2"),
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
