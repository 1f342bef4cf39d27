"""The Transformer families the book analyses, each as an *ensemble* of K independent models.

Every model here holds its parameters with a **leading model dimension** ``K`` (``n_models``):
a parameter that one model would store with shape ``S`` is stored with shape ``(K, *S)``, and
inputs have shape ``(K, B, T, d)`` (model ``k`` sees its own batch ``X[k]``). K independent
models therefore train as one computation (see :mod:`genbounds.train`), and model ``k`` is
initialised from its own ``torch.Generator`` seeded with ``seeds[k]``, so model ``k`` of a
K-ensemble is *the same model* as the single model built with ``seeds=[seeds[k]]``.

``forward`` infers the number of models from ``X.shape[0]`` and requires the parameters to
carry the same leading size, so the training engine may call a model (through
:func:`torch.func.functional_call`) with the parameters of a subset of its members.

Families
--------
:class:`ShallowEncoder`
    The one-layer encoder of the shallow-Transformer GD paper (anonymous, 2025, Section 3.1;
    cited as Mwigo & Dasgupta, 2026), itself the model of Wu et al. (2024): softmax
    attention, ``W_H = I``, ReLU, mean pooling over tokens, scalar readout ``w_O``, LeCun
    initialisation.
:class:`EdelmanTransformer`
    The heads and L-layer blocks of Edelman et al. (2022) in the notation of Trauger & Tewari
    (2024, Section 2.6): ``sigma(RowSoftmax(X W_QK X^T) X W_v) W_c``, heads summed, rows
    projected onto the unit l2 ball between layers, [CLS] readout ``w``.
:class:`SparseMajorityMHA`
    The Keras model of Trauger & Tewari's sparse-majority experiment, reproduced exactly
    (``tf.keras.layers.MultiHeadAttention`` with its default initialisers, ReLU, ``Dense``,
    a [CLS] linear head); see the authors' public experiment script.

Norms of the weights are not computed here: :meth:`named_weight_matrices` exposes the
matrices and :mod:`genbounds.spectral` measures them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn

__all__ = [
    "EdelmanTransformer",
    "ShallowEncoder",
    "SparseMajorityMHA",
    "keras_compute_fans",
    "keras_glorot_uniform_limit",
    "project_rows_to_unit_ball",
]


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def keras_compute_fans(shape: Sequence[int]) -> tuple[int, int]:
    """Fan-in and fan-out of a kernel exactly as Keras computes them.

    Keras (``keras.initializers``' ``compute_fans``, identical in tf.keras 2.x and Keras 3):
    a 1-d shape ``(n,)`` has ``fan_in = fan_out = n``; a 2-d shape ``(a, b)`` has
    ``fan_in = a``, ``fan_out = b``; a shape with more than two dimensions has
    ``receptive_field_size = prod(shape[:-2])``, ``fan_in = shape[-2] * receptive_field_size``
    and ``fan_out = shape[-1] * receptive_field_size``.
    """
    shape = tuple(int(s) for s in shape)
    if any(s < 1 for s in shape):
        raise ValueError(f"shape must have positive entries, got {shape}")
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def keras_glorot_uniform_limit(shape: Sequence[int]) -> float:
    """Half-width ``sqrt(6 / (fan_in + fan_out))`` of Keras' ``glorot_uniform`` for ``shape``.

    Glorot & Bengio (2010) uniform initialisation with the fans of :func:`keras_compute_fans`.
    """
    fan_in, fan_out = keras_compute_fans(shape)
    return math.sqrt(6.0 / (fan_in + fan_out))


def project_rows_to_unit_ball(Y: torch.Tensor) -> torch.Tensor:
    """Row-wise Euclidean projection onto the unit ball, ``Pi_norm`` of Trauger & Tewari (2024).

    Each row ``y`` (last dimension) is mapped to ``y / max(1, ||y||_2)``: rows inside the unit
    l2 ball are unchanged, rows outside are rescaled onto its boundary (Edelman et al., 2022;
    Trauger & Tewari, 2024, Section 2.6).
    """
    norms = torch.linalg.vector_norm(Y, ord=2, dim=-1, keepdim=True)
    return Y / torch.clamp(norms, min=1.0)


def _check_seeds(n_models: int, seeds: Sequence[int] | None) -> list[int]:
    if not isinstance(n_models, int) or isinstance(n_models, bool) or n_models < 1:
        raise ValueError(f"n_models must be an integer >= 1, got {n_models!r}")
    if seeds is None:
        return list(range(n_models))
    seeds = list(seeds)
    if len(seeds) != n_models:
        raise ValueError(f"seeds must have length n_models = {n_models}, got {len(seeds)}")
    for s in seeds:
        if not isinstance(s, int) or isinstance(s, bool) or s < 0:
            raise ValueError(f"seeds must be non-negative integers, got {s!r}")
    return seeds


def _check_pos_int(value: int, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _stack_init(
    seeds: Sequence[int],
    draws: Sequence[tuple[str, tuple[int, ...], Callable[[torch.Generator, tuple[int, ...]],
                                                          torch.Tensor]]],
    dtype: torch.dtype,
) -> dict[str, torch.Tensor]:
    """Draw every tensor of every model from that model's own generator, in a fixed order.

    Draws are made in float64 on the CPU and then cast to ``dtype``, so a float32 and a float64
    model built from the same seed agree up to rounding.
    """
    per_model: dict[str, list[torch.Tensor]] = {name: [] for name, _, _ in draws}
    for seed in seeds:
        gen = torch.Generator(device="cpu")
        gen.manual_seed(int(seed))
        for name, shape, fn in draws:
            per_model[name].append(fn(gen, shape))
    return {name: torch.stack(ts).to(dtype) for name, ts in per_model.items()}


def _normal(std: float) -> Callable[[torch.Generator, tuple[int, ...]], torch.Tensor]:
    def draw(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64) * std

    return draw


def _uniform(limit: float) -> Callable[[torch.Generator, tuple[int, ...]], torch.Tensor]:
    def draw(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return (2.0 * torch.rand(shape, generator=gen, dtype=torch.float64) - 1.0) * limit

    return draw


def _zeros(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.float64)


class _Ensemble(nn.Module):
    """Shared bookkeeping: parameters with a leading model dimension, input checks."""

    n_models: int
    seeds: list[int]
    d: int
    _first_param: str

    def _register(self, tensors: dict[str, torch.Tensor]) -> None:
        self._first_param = next(iter(tensors))
        for name, t in tensors.items():
            self.register_parameter(name, nn.Parameter(t))

    def _check_input(self, X: torch.Tensor, min_tokens: int = 1) -> tuple[int, int, int]:
        if not isinstance(X, torch.Tensor):
            raise ValueError(f"X must be a torch.Tensor, got {type(X).__name__}")
        if X.ndim != 4:
            raise ValueError(f"X must have shape (K, B, T, d); got {tuple(X.shape)}")
        K, B, T, d = X.shape
        # attribute access (not self.parameters()) so that torch.func.functional_call's
        # substituted parameters, possibly for a subset of the models, are the ones checked
        k_params = getattr(self, self._first_param).shape[0]
        if K != k_params:
            raise ValueError(
                f"X must have leading size K = {k_params} (one batch per model); "
                f"got shape {tuple(X.shape)}"
            )
        if d != self.d:
            raise ValueError(f"X must have last dimension d = {self.d}; got {tuple(X.shape)}")
        if T < min_tokens:
            raise ValueError(f"X must have at least {min_tokens} tokens; got T = {T}")
        return K, B, T

    def state_for_model(self, k: int) -> dict[str, torch.Tensor]:
        """The parameters of model ``k`` alone, each with a leading dimension of size 1.

        The result can be loaded (``load_state_dict``) into the same class built with
        ``n_models=1``; see also :meth:`extract`.
        """
        if not isinstance(k, int) or not 0 <= k < self.n_models:
            raise ValueError(f"k must be an integer in [0, {self.n_models}), got {k!r}")
        return {name: p.detach()[k : k + 1].clone() for name, p in self.named_parameters()}

    def buffers_for_model(self, k: int) -> dict[str, torch.Tensor]:
        """The (per-model, leading K) buffers of model ``k``, leading dimension 1."""
        if not isinstance(k, int) or not 0 <= k < self.n_models:
            raise ValueError(f"k must be an integer in [0, {self.n_models}), got {k!r}")
        return {name: b.detach()[k : k + 1].clone() for name, b in self.named_buffers()}

    def extract(self, k: int) -> _Ensemble:
        """A new single-model instance (``n_models=1``) holding a copy of model ``k``."""
        import copy

        state = self.state_for_model(k)
        bufs = self.buffers_for_model(k)
        clone = copy.deepcopy(self)
        for name, value in state.items():
            setattr(clone, name, nn.Parameter(value))
        for name, value in bufs.items():
            setattr(clone, name, value)
        clone.n_models = 1
        clone.seeds = [self.seeds[k]]
        return clone


# ---------------------------------------------------------------------------------------------
# (a) shallow encoder of the GD paper
# ---------------------------------------------------------------------------------------------


class ShallowEncoder(_Ensemble):
    r"""One-layer encoder of the shallow-Transformer GD paper (Section 3.1), K models at once.

    For one input ``X`` of shape ``(d_s, d)`` (``d_s`` tokens of dimension ``d``)

    .. math::

        f(X) = \frac{1}{d_s} w_O^\top \sum_{i=1}^{d_s}
            \sigma_r\Big(W_V X^\top \sigma_s\big(X W_K^\top W_Q X^{(i,:)\top} / \sqrt{d_m}\big)
            \Big),

    i.e. self-attention ``A_1 = softmax((X W_Q^T)(X W_K^T)^T / sqrt(d_m)) (X W_V^T)`` with
    ``W_Q, W_K, W_V`` of shape ``(d_m, d)``, the feed-forward map ``W_H = I`` followed by the
    ReLU ``sigma_r``, column-wise mean pooling over the ``d_s`` tokens, and the scalar readout
    ``w_O`` of length ``d_m``. No biases.

    Initialisation (LeCun, as stated in the paper's Section 3.1.3, following Wu et al., 2024):
    every entry of ``W_Q, W_K, W_V`` is ``N(0, 1/d)`` and every entry of ``w_O`` is
    ``N(0, 1/d_m)``; drawn in the order ``W_Q, W_K, W_V, w_O`` from model ``k``'s generator.

    Parameters (leading model dimension ``K``): ``W_Q, W_K, W_V`` of shape ``(K, d_m, d)``,
    ``w_O`` of shape ``(K, d_m)``. ``forward(X)`` maps ``(K, B, d_s, d)`` to ``(K, B)``.
    """

    def __init__(
        self,
        d: int,
        d_m: int,
        n_models: int = 1,
        seeds: Sequence[int] | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.d = _check_pos_int(d, "d")
        self.d_m = _check_pos_int(d_m, "d_m")
        self.seeds = _check_seeds(n_models, seeds)
        self.n_models = n_models
        self.heads = 1
        draws = [
            ("W_Q", (d_m, d), _normal(1.0 / math.sqrt(d))),
            ("W_K", (d_m, d), _normal(1.0 / math.sqrt(d))),
            ("W_V", (d_m, d), _normal(1.0 / math.sqrt(d))),
            ("w_O", (d_m,), _normal(1.0 / math.sqrt(d_m))),
        ]
        self._register(_stack_init(self.seeds, draws, dtype))

    W_Q: nn.Parameter
    W_K: nn.Parameter
    W_V: nn.Parameter
    w_O: nn.Parameter

    def _scores(self, X: torch.Tensor) -> torch.Tensor:
        Q = torch.einsum("kbtd,kmd->kbtm", X, self.W_Q)
        Kx = torch.einsum("kbtd,kmd->kbtm", X, self.W_K)
        return torch.einsum("kbtm,kbsm->kbts", Q, Kx) / math.sqrt(self.d_m)

    def attention(self, X: torch.Tensor) -> torch.Tensor:
        """Row-stochastic ``softmax(X W_Q^T W_K X^T / sqrt(d_m))``, shape ``(K, B, 1, T, T)``."""
        self._check_input(X)
        return torch.softmax(self._scores(X), dim=-1).unsqueeze(2)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scalar outputs ``f(X)`` of shape ``(K, B)`` for inputs ``(K, B, d_s, d)``."""
        self._check_input(X)
        A = torch.softmax(self._scores(X), dim=-1)
        V = torch.einsum("kbtd,kmd->kbtm", X, self.W_V)
        Z = torch.relu(torch.einsum("kbts,kbsm->kbtm", A, V))
        return torch.einsum("kbm,km->kb", Z.mean(dim=2), self.w_O)

    def named_weight_matrices(self) -> dict[str, torch.Tensor]:
        """``{"W_Q", "W_K", "W_V": (K, d_m, d), "w_O": (K, d_m)}`` (detached views)."""
        return {name: p.detach() for name, p in self.named_parameters()}


# ---------------------------------------------------------------------------------------------
# (b) Edelman et al. / Trauger-Tewari heads and blocks
# ---------------------------------------------------------------------------------------------

_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu,
    "identity": lambda x: x,
    "tanh": torch.tanh,
}


class EdelmanTransformer(_Ensemble):
    r"""L-layer, H-head Transformer block of Edelman et al. (2022) / Trauger & Tewari (2024).

    Notation of Trauger & Tewari (2024, Section 2.6), rows are tokens. One head applied to
    ``Y`` (shape ``(T, d)``) is ``f_h(Y) = RowSoftmax(Y W_QK,h Y^T) Y W_v,h`` with ``W_QK,h``
    of shape ``(d, d)`` **parametrised directly** (the product ``W_Q W_K^T`` of the paper,
    combined into one trainable matrix as the paper does for its analysis) and ``W_v,h`` of
    shape ``(d, k)``; ``W_c,h`` has shape ``(k, d)``. Layer ``i`` maps ``Y^(i)`` to

    .. math::

        Y^{(i+1)} = \Pi_{norm}\Big(\sum_{h=1}^H \sigma\big(\Pi_{norm}(f_h(Y^{(i)}))\big)
            W^{(i)}_{c,h}\Big), \qquad Y^{(1)} = X,

    where ``Pi_norm`` projects every row onto the unit l2 ball
    (:func:`project_rows_to_unit_ball`) and ``sigma`` is applied entrywise. For ``H = 1`` this
    is exactly the paper's ``g_block``; for ``H > 1`` the heads are summed inside the outer
    projection, as the paper's multi-head layer ``sum_h sigma(...) W_c,h`` suggests (the paper
    writes the projected block only for one head). The scalar output is
    ``w^T Y^(L+1)_[CLS]`` with ``w`` of length ``d`` and the [CLS] row at ``cls_index``.

    Initialisation (not specified by either paper; LeCun-style, fan-in scaled Gaussians drawn
    per layer in the order ``W_QK, W_v, W_c`` and finally ``w``): ``W_QK ~ N(0, 1/d)``,
    ``W_v ~ N(0, 1/d)``, ``W_c ~ N(0, 1/k)``, ``w ~ N(0, 1/d)``.

    Parameters (leading ``K``): ``W_QK (K, L, H, d, d)``, ``W_v (K, L, H, d, k)``,
    ``W_c (K, L, H, k, d)``, ``w (K, d)``. ``forward(X)`` maps ``(K, B, T, d)`` to ``(K, B)``.
    """

    def __init__(
        self,
        d: int,
        k: int,
        heads: int = 1,
        layers: int = 1,
        n_models: int = 1,
        seeds: Sequence[int] | None = None,
        activation: str = "relu",
        cls_index: int = -1,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.d = _check_pos_int(d, "d")
        self.k = _check_pos_int(k, "k")
        self.heads = _check_pos_int(heads, "heads")
        self.layers = _check_pos_int(layers, "layers")
        if activation not in _ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}"
            )
        if not isinstance(cls_index, int) or isinstance(cls_index, bool):
            raise ValueError(f"cls_index must be an integer, got {cls_index!r}")
        self.activation = activation
        self.cls_index = cls_index
        self.seeds = _check_seeds(n_models, seeds)
        self.n_models = n_models
        L, H = layers, heads

        per_model: dict[str, list[torch.Tensor]] = {"W_QK": [], "W_v": [], "W_c": [], "w": []}
        for seed in self.seeds:
            gen = torch.Generator(device="cpu")
            gen.manual_seed(int(seed))
            qk, v, c = [], [], []
            for _ in range(L):
                qk.append(_normal(1.0 / math.sqrt(d))(gen, (H, d, d)))
                v.append(_normal(1.0 / math.sqrt(d))(gen, (H, d, k)))
                c.append(_normal(1.0 / math.sqrt(k))(gen, (H, k, d)))
            per_model["W_QK"].append(torch.stack(qk))
            per_model["W_v"].append(torch.stack(v))
            per_model["W_c"].append(torch.stack(c))
            per_model["w"].append(_normal(1.0 / math.sqrt(d))(gen, (d,)))
        self._register({n: torch.stack(ts).to(dtype) for n, ts in per_model.items()})

    W_QK: nn.Parameter
    W_v: nn.Parameter
    W_c: nn.Parameter
    w: nn.Parameter

    def _layer(self, Y: torch.Tensor, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        sigma = _ACTIVATIONS[self.activation]
        S = torch.einsum("kbtd,khde,kbse->kbhts", Y, self.W_QK[:, i], Y)
        A = torch.softmax(S, dim=-1)
        Fh = torch.einsum("kbhts,kbsd,khde->kbhte", A, Y, self.W_v[:, i])
        G = torch.einsum("kbhte,khed->kbtd", sigma(project_rows_to_unit_ball(Fh)), self.W_c[:, i])
        return project_rows_to_unit_ball(G), A

    def _check_cls(self, T: int) -> None:
        if not -T <= self.cls_index < T:
            raise ValueError(f"cls_index {self.cls_index} is out of range for T = {T} tokens")

    def block_output(self, X: torch.Tensor) -> torch.Tensor:
        """``g_block^(L+1)(X)``: the last layer's output for every token, ``(K, B, T, d)``."""
        self._check_input(X)
        Y = X
        for i in range(self.layers):
            Y, _ = self._layer(Y, i)
        return Y

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scalar outputs ``w^T Y_[CLS]`` of shape ``(K, B)`` for inputs ``(K, B, T, d)``."""
        _, _, T = self._check_input(X)
        self._check_cls(T)
        Y = self.block_output(X)
        return torch.einsum("kbd,kd->kb", Y[:, :, self.cls_index], self.w)

    def attention(self, X: torch.Tensor, layer: int = 0) -> torch.Tensor:
        """Row-stochastic attention of layer ``layer`` (0-based): ``(K, B, heads, T, T)``."""
        self._check_input(X)
        if not isinstance(layer, int) or not 0 <= layer < self.layers:
            raise ValueError(f"layer must be in [0, {self.layers}), got {layer!r}")
        Y = X
        for i in range(layer):
            Y, _ = self._layer(Y, i)
        return self._layer(Y, layer)[1]

    def named_weight_matrices(self) -> dict[str, torch.Tensor]:
        """Per-layer, per-head matrices in the row convention of Section 2.6 (detached).

        Keys ``"layer{i}.head{h}.W_QK"`` ``(K, d, d)``, ``"layer{i}.head{h}.W_v"``
        ``(K, d, k)``, ``"layer{i}.head{h}.W_c"`` ``(K, k, d)`` and ``"w"`` ``(K, d)``.
        Trauger & Tewari's norm conditions are stated for ``W_v^T`` and ``W_c^T`` (the maps
        ``x -> W x`` on column vectors): transpose before taking mixed norms.
        """
        out: dict[str, torch.Tensor] = {}
        for i in range(self.layers):
            for h in range(self.heads):
                out[f"layer{i}.head{h}.W_QK"] = self.W_QK.detach()[:, i, h]
                out[f"layer{i}.head{h}.W_v"] = self.W_v.detach()[:, i, h]
                out[f"layer{i}.head{h}.W_c"] = self.W_c.detach()[:, i, h]
        out["w"] = self.w.detach()
        return out


# ---------------------------------------------------------------------------------------------
# (c) the authors' Keras model for sparse majority
# ---------------------------------------------------------------------------------------------


class SparseMajorityMHA(_Ensemble):
    r"""The sparse-majority model of Trauger & Tewari (2024), a faithful port of their Keras code.

    Architecture (one model, input ``X`` of shape ``(T+1, d)``, [CLS] at ``cls_index``, the
    authors put it last): ``tf.keras.layers.MultiHeadAttention(num_heads=heads,
    key_dim=key_dim)`` used as self-attention ``mha(X, X)`` with its defaults (value_dim =
    key_dim, biases on the query/key/value/output projections, no dropout, output dimension
    ``d``), then ReLU, then ``Dense(d)`` with bias and no activation, then the [CLS] row through a
    linear map ``d -> 2`` with bias. Per head ``h``:

    .. math::

        Q_h = X W^Q_h + b^Q_h,\quad K_h = X W^K_h + b^K_h,\quad V_h = X W^V_h + b^V_h,\qquad
        A_h = \mathrm{RowSoftmax}(Q_h K_h^\top / \sqrt{\text{key\_dim}}),

    ``MHA(X) = sum_h A_h V_h W^O_h + b^O``, ``logits = (relu(MHA(X)) W^D + b^D)_[CLS] W^L + b^L``.

    Keras parameter shapes (here with a leading ``K``): ``query_kernel``, ``key_kernel``,
    ``value_kernel`` ``(d, heads, key_dim)`` with biases ``(heads, key_dim)``;
    ``output_kernel`` ``(heads, key_dim, d)`` with bias ``(d,)``; ``dense_kernel`` ``(d, d)``,
    ``dense_bias`` ``(d,)``; ``head_kernel`` ``(d, 2)``, ``head_bias`` ``(2,)``.

    Initialisation, exactly Keras' defaults (Glorot & Bengio, 2010, uniform; fans from
    :func:`keras_compute_fans`; drawn in the order query, key, value, output, dense, head):

    * query/key/value kernels ``(d, heads, key_dim)``: receptive field ``d``, so
      ``fan_in = heads * d`` and ``fan_out = key_dim * d``; the uniform half-width is
      ``sqrt(6 / (d * (heads + key_dim)))`` (0.03769 for d = 64, heads = 2, key_dim = 64);
    * output kernel ``(heads, key_dim, d)``: receptive field ``heads``, ``fan_in =
      heads * key_dim``, ``fan_out = heads * d``, half-width ``sqrt(6 / (heads * (key_dim +
      d)))`` (0.15309 for the defaults);
    * dense kernel ``(d, d)``: ``sqrt(6 / (2 d))`` (0.21651 for d = 64);
    * all biases zero; the final ``d -> 2`` kernel ``N(0, 0.05^2)`` (Keras ``random_normal``,
      stddev 0.05, as in the authors' ``Last_Linear`` layer).

    Evaluation: only the [CLS] row reaches the output, so :meth:`forward` computes attention
    for the [CLS] query alone and reassociates the products (``q^T (x W^K) = (W^K q)^T x`` and
    ``sum_t a_t (x_t W^V + b^V) = (sum_t a_t x_t) W^V + (sum_t a_t) b^V``): exact algebraic
    identities that cost ``O(T d heads)`` per sample instead of ``O(T d heads key_dim)`` and
    ``O(T^2)``. :meth:`forward_full` is the straightforward full-attention computation; the two
    agree to floating-point tolerance in values and gradients (tested).

    Token tables (optional, for sparse majority): after :meth:`set_token_tables`, ``forward``
    also accepts **bits** ``(K, B, T)`` (0/1, any real dtype) instead of tokens ``(K, B, T+1,
    d)``. Token ``t`` is then ``e_{b_t} + P_t`` and the [CLS] token (last row) ``e_cls + P_T``,
    exactly :meth:`genbounds.data.SparseMajorityData.tokens`. Linearity splits every product
    with a token into a product with the embedding and one with the positional row: the [CLS]
    query is the same for all samples of a model, the key scores are ``(P W^K q)_t +
    (e_{b_t} W^K q)``, and ``sum_t a_t x_t = a P + (sum_{b_t=0} a_t) e_0 + (sum_{b_t=1} a_t)
    e_1 + a_T e_cls``. No token matrix is ever formed; the per-sample cost is ``O(T heads)``
    plus one dense ``(B heads) x T x d`` product per model. Same numbers up to rounding
    (tested against :meth:`forward_full`).
    """

    def __init__(
        self,
        d: int = 64,
        heads: int = 2,
        key_dim: int = 64,
        n_models: int = 1,
        seeds: Sequence[int] | None = None,
        cls_index: int = -1,
        n_outputs: int = 2,
        final_init_std: float = 0.05,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.d = _check_pos_int(d, "d")
        self.heads = _check_pos_int(heads, "heads")
        self.key_dim = _check_pos_int(key_dim, "key_dim")
        self.n_outputs = _check_pos_int(n_outputs, "n_outputs")
        if not isinstance(cls_index, int) or isinstance(cls_index, bool):
            raise ValueError(f"cls_index must be an integer, got {cls_index!r}")
        if not (isinstance(final_init_std, int | float) and final_init_std >= 0):
            raise ValueError(f"final_init_std must be >= 0, got {final_init_std!r}")
        self.cls_index = cls_index
        self.seeds = _check_seeds(n_models, seeds)
        self.n_models = n_models
        H, kd = heads, key_dim
        qkv = (d, H, kd)
        out = (H, kd, d)
        draws = [
            ("query_kernel", qkv, _uniform(keras_glorot_uniform_limit(qkv))),
            ("query_bias", (H, kd), _zeros),
            ("key_kernel", qkv, _uniform(keras_glorot_uniform_limit(qkv))),
            ("key_bias", (H, kd), _zeros),
            ("value_kernel", qkv, _uniform(keras_glorot_uniform_limit(qkv))),
            ("value_bias", (H, kd), _zeros),
            ("output_kernel", out, _uniform(keras_glorot_uniform_limit(out))),
            ("output_bias", (d,), _zeros),
            ("dense_kernel", (d, d), _uniform(keras_glorot_uniform_limit((d, d)))),
            ("dense_bias", (d,), _zeros),
            ("head_kernel", (d, n_outputs), _normal(float(final_init_std))),
            ("head_bias", (n_outputs,), _zeros),
        ]
        self._register(_stack_init(self.seeds, draws, dtype))
        self.register_buffer("token_bit_embeddings", None)
        self.register_buffer("token_cls_embedding", None)
        self.register_buffer("token_positional", None)

    query_kernel: nn.Parameter
    query_bias: nn.Parameter
    key_kernel: nn.Parameter
    key_bias: nn.Parameter
    value_kernel: nn.Parameter
    value_bias: nn.Parameter
    output_kernel: nn.Parameter
    output_bias: nn.Parameter
    dense_kernel: nn.Parameter
    dense_bias: nn.Parameter
    head_kernel: nn.Parameter
    head_bias: nn.Parameter

    token_bit_embeddings: torch.Tensor | None
    token_cls_embedding: torch.Tensor | None
    token_positional: torch.Tensor | None

    def set_token_tables(
        self,
        bit_embeddings: torch.Tensor,
        cls_embedding: torch.Tensor,
        positional: torch.Tensor,
    ) -> None:
        """Register per-model token tables so that ``forward`` accepts bits ``(K, B, T)``.

        Parameters
        ----------
        bit_embeddings:
            ``(K, 2, d)``: rows ``e_0, e_1`` of every model's data set.
        cls_embedding:
            ``(K, d)``: ``e_cls``.
        positional:
            ``(T + 1, d)`` (shared) or ``(K, T + 1, d)``: positional rows, [CLS] last.

        The tables are buffers with a leading K (they follow the model to its device and are
        subset with it by the training engine); they are cast to the parameters' dtype. The
        [CLS] token must be the last row (``cls_index`` -1).
        """
        K = self.query_kernel.shape[0]
        ref = self.query_kernel
        tabs = []
        for name, t in (("bit_embeddings", bit_embeddings), ("cls_embedding", cls_embedding),
                        ("positional", positional)):
            if not isinstance(t, torch.Tensor):
                t = torch.as_tensor(t)
            if not torch.isfinite(t).all():
                raise ValueError(f"{name} contains non-finite values")
            tabs.append(t.detach().to(device=ref.device, dtype=ref.dtype))
        bit, cls, pos = tabs
        if bit.shape != (K, 2, self.d):
            raise ValueError(f"bit_embeddings must have shape ({K}, 2, {self.d}); got "
                             f"{tuple(bit.shape)}")
        if cls.shape != (K, self.d):
            raise ValueError(f"cls_embedding must have shape ({K}, {self.d}); got "
                             f"{tuple(cls.shape)}")
        if pos.ndim == 2:
            pos = pos.unsqueeze(0).expand(K, -1, -1)
        if pos.ndim != 3 or pos.shape[0] != K or pos.shape[2] != self.d or pos.shape[1] < 2:
            raise ValueError(f"positional must have shape (T + 1, {self.d}) or ({K}, T + 1, "
                             f"{self.d}) with T >= 1; got {tuple(positional.shape)}")
        if self.cls_index not in (-1, pos.shape[1] - 1):
            raise ValueError(f"token tables need the [CLS] token last; cls_index is "
                             f"{self.cls_index}")
        self.token_bit_embeddings = bit.contiguous()
        self.token_cls_embedding = cls.contiguous()
        self.token_positional = pos.contiguous()

    def _check_bits(self, X: torch.Tensor) -> tuple[int, int, int]:
        if self.token_positional is None:
            raise ValueError(
                "X of shape (K, B, T) means bits, which needs set_token_tables() first; "
                f"otherwise X must have shape (K, B, T, d); got {tuple(X.shape)}"
            )
        K, B, T = X.shape
        k_params = self.query_kernel.shape[0]
        if K != k_params or self.token_positional.shape[0] != K:
            raise ValueError(
                f"X must have leading size K = {k_params} (one batch per model); "
                f"got shape {tuple(X.shape)}"
            )
        if T + 1 != self.token_positional.shape[1]:
            raise ValueError(
                f"bits must have T = {self.token_positional.shape[1] - 1} positions (the token "
                f"tables' length minus [CLS]); got shape {tuple(X.shape)}"
            )
        return K, B, T + 1

    def tokens_from_bits(self, bits: torch.Tensor) -> torch.Tensor:
        """Tokens ``(K, B, T+1, d)`` for bits ``(K, B, T)`` from the registered tables."""
        if not isinstance(bits, torch.Tensor) or bits.ndim != 3:
            raise ValueError("bits must be a tensor of shape (K, B, T)")
        self._check_bits(bits)
        assert self.token_bit_embeddings is not None and self.token_cls_embedding is not None
        assert self.token_positional is not None
        P = self.token_positional
        e0 = self.token_bit_embeddings[:, 0, None, None, :]
        e1 = self.token_bit_embeddings[:, 1, None, None, :]
        body = torch.where(bits[..., None] != 0, e1 + P[:, None, :-1], e0 + P[:, None, :-1])
        cls = (self.token_cls_embedding + P[:, -1])[:, None, None, :]
        return torch.cat([body, cls.expand(-1, bits.shape[1], -1, -1)], dim=2)

    def _as_tokens(self, X: torch.Tensor) -> torch.Tensor:
        if isinstance(X, torch.Tensor) and X.ndim == 3:
            return self.tokens_from_bits(X)
        return X

    def _check(self, X: torch.Tensor) -> tuple[int, int, int]:
        K, B, T = self._check_input(X)
        if not -T <= self.cls_index < T:
            raise ValueError(f"cls_index {self.cls_index} is out of range for T = {T} tokens")
        return K, B, T

    def _readout(self, mha_cls: torch.Tensor) -> torch.Tensor:
        hidden = torch.einsum("kbd,kde->kbe", torch.relu(mha_cls), self.dense_kernel)
        hidden = hidden + self.dense_bias[:, None, :]
        logits = torch.einsum("kbd,kdo->kbo", hidden, self.head_kernel)
        return logits + self.head_bias[:, None, :]

    def cls_attention(self, X: torch.Tensor) -> torch.Tensor:
        """Attention of the [CLS] query over all tokens, ``(K, B, heads, T)`` (rows sum to 1)."""
        X = self._as_tokens(X)
        self._check(X)
        return self._cls_attention(X)

    def _cls_attention(self, X: torch.Tensor) -> torch.Tensor:
        x_cls = X[:, :, self.cls_index]  # (K, B, d)
        q = torch.einsum("kbd,kdhe->kbhe", x_cls, self.query_kernel) + self.query_bias[:, None]
        q = q * (1.0 / math.sqrt(self.key_dim))
        u = torch.einsum("kbhe,kdhe->kbhd", q, self.key_kernel)  # W^K_h q_h
        c = torch.einsum("kbhe,khe->kbh", q, self.key_bias)  # q_h . b^K_h, same for every key
        scores = torch.einsum("kbtd,kbhd->kbht", X, u) + c[..., None]
        return torch.softmax(scores, dim=-1)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Logits ``(K, B, n_outputs)`` computed with the exact O(T) [CLS]-only shortcut.

        ``X`` is tokens ``(K, B, T, d)`` or, after :meth:`set_token_tables`, bits ``(K, B, T)``.
        """
        if isinstance(X, torch.Tensor) and X.ndim == 3:
            self._check_bits(X)
            a, z = self._cls_attend_bits(X)
        else:
            self._check(X)
            a = self._cls_attention(X)  # (K, B, H, T)
            z = torch.einsum("kbht,kbtd->kbhd", a, X)  # sum_t a_t x_t
        return self._from_attended(a, z)

    def _cls_attend_bits(self, bits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[CLS] attention ``(K, B, H, T+1)`` and ``sum_t a_t x_t`` ``(K, B, H, d)`` from bits."""
        E = self.token_bit_embeddings  # (K, 2, d)
        e_cls = self.token_cls_embedding  # (K, d)
        P = self.token_positional  # (K, T+1, d)
        assert E is not None and e_cls is not None and P is not None
        b = bits.to(P.dtype)  # (K, B, T)
        x_cls = e_cls + P[:, -1]  # the same [CLS] token for every sample of a model
        q = torch.einsum("kd,kdhe->khe", x_cls, self.query_kernel) + self.query_bias
        q = q * (1.0 / math.sqrt(self.key_dim))
        u = torch.einsum("khe,kdhe->khd", q, self.key_kernel)  # W^K_h q_h
        c = torch.einsum("khe,khe->kh", q, self.key_bias)
        Pu = torch.einsum("ktd,khd->kht", P, u) + c[..., None]  # (K, H, T+1)
        Eu = torch.einsum("kvd,khd->khv", E, u)  # (K, H, 2)
        cls_u = torch.einsum("kd,khd->kh", e_cls, u)
        body = (Pu[:, None, :, :-1] + Eu[:, None, :, 0, None]
                + b[:, :, None, :] * (Eu[:, None, :, 1] - Eu[:, None, :, 0])[..., None])
        last = (Pu[:, :, -1] + cls_u)[:, None, :, None].expand(-1, b.shape[1], -1, -1)
        a = torch.softmax(torch.cat([body, last], dim=-1), dim=-1)  # (K, B, H, T+1)
        a_body = a[..., :-1]
        s1 = torch.einsum("kbht,kbt->kbh", a_body, b)  # attention on tokens with bit 1
        s0 = a_body.sum(dim=-1) - s1
        z = (torch.einsum("kbht,ktd->kbhd", a, P)
             + s0[..., None] * E[:, None, None, 0] + s1[..., None] * E[:, None, None, 1]
             + a[..., -1, None] * e_cls[:, None, None, :])
        return a, z

    def _from_attended(self, a: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        v = torch.einsum("kbhd,kdhe->kbhe", z, self.value_kernel)
        v = v + a.sum(dim=-1, keepdim=True) * self.value_bias[:, None]
        mha = torch.einsum("kbhe,khed->kbd", v, self.output_kernel) + self.output_bias[:, None]
        return self._readout(mha)

    def mha_full(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keras' ``MultiHeadAttention(X, X)`` for every row: ``((K, B, T, d), attention)``.

        The attention has shape ``(K, B, heads, T, T)``; straightforward O(T^2) computation
        in the order Keras uses (scaled queries, scores, softmax, weighted values, output
        projection). ``X`` may be bits after :meth:`set_token_tables`.
        """
        X = self._as_tokens(X)
        self._check(X)
        scale = 1.0 / math.sqrt(self.key_dim)
        Q = torch.einsum("kbtd,kdhe->kbhte", X, self.query_kernel)
        Q = (Q + self.query_bias[:, None, :, None]) * scale
        Kx = torch.einsum("kbtd,kdhe->kbhte", X, self.key_kernel)
        Kx = Kx + self.key_bias[:, None, :, None]
        V = torch.einsum("kbtd,kdhe->kbhte", X, self.value_kernel)
        V = V + self.value_bias[:, None, :, None]
        A = torch.softmax(torch.einsum("kbhse,kbhte->kbhst", Q, Kx), dim=-1)
        heads_out = torch.einsum("kbhst,kbhte->kbhse", A, V)
        out = torch.einsum("kbhse,khed->kbsd", heads_out, self.output_kernel)
        return out + self.output_bias[:, None, None, :], A

    def forward_full(self, X: torch.Tensor) -> torch.Tensor:
        """Logits ``(K, B, n_outputs)`` from full self-attention (reference implementation)."""
        mha, _ = self.mha_full(X)
        return self._readout(mha[:, :, self.cls_index])

    def attention(self, X: torch.Tensor) -> torch.Tensor:
        """Full row-stochastic attention matrices ``(K, B, heads, T, T)``."""
        return self.mha_full(X)[1]

    def named_weight_matrices(self) -> dict[str, torch.Tensor]:
        """All trainable tensors (kernels and biases) by Keras-like name, detached, leading K."""
        return {name: p.detach() for name, p in self.named_parameters()}

    def tt_correspondence(self, augment_bias: bool = True) -> dict[str, torch.Tensor]:
        r"""The weights rewritten in Trauger & Tewari's head notation (Section 2.6 / 4.1).

        The [CLS] output of this model, for each logit ``s``, is

        .. math::

            \ell_s(X) = w_s^\top W_c^\top \sigma\Big(\sum_h W_{v,h}^\top \tilde X^\top
                \mathrm{softmax}\big(\tilde X W_{QK,h}^\top \tilde x_{[CLS]}\big)\Big) + o_s,

        with ``sigma = ReLU`` and the matrices returned here:

        * ``W_QK`` ``(K, heads, d', d')``: ``W^Q_h (W^K_h)^T / sqrt(key_dim)``, the combined
          matrix of Section 2.6 in its row convention (scores ``X W_QK X^T``; the [CLS] row
          is ``softmax(X W_QK^T x_[CLS])`` as in TT Section 4.1);
        * ``W_v`` ``(K, heads, d', d)``: ``W^V_h W^O_h`` (value then output projection; the
          ReLU comes after the output projection, so the TT value map has ``k = d``);
        * ``W_c`` ``(K, d, d)``: the ``Dense`` kernel ``W^D``, shared by the heads;
        * ``w`` ``(K, d, n_outputs)``: the final kernel, column ``s`` is ``w_s``;
        * ``offset`` ``(K, n_outputs)``: ``o_s = (b^D)^T w_s + b^L_s``.

        With ``augment_bias=True`` (default) every token gets a constant last coordinate 1,
        ``x~ = (x, 1)`` and ``d' = d + 1``, and the biases are absorbed exactly: the query
        bias into the last column of ``W_QK``; the key bias adds the same number
        ``q_h . b^K_h`` to every score of a row and cancels in the softmax, so it is dropped;
        the value bias and output bias enter the last row of ``W_v`` (allowed because the
        attention weights sum to one; the output bias is put in head 0). The dense and final
        biases cannot be absorbed into a head and remain as the constant ``offset``. With
        ``augment_bias=False`` only the kernels are used (``d' = d``) and the biases are
        ignored, which describes the trained model only when they are small.

        What does *not* match TT's class, and is not hidden by this rewriting: (i) the ReLU
        acts on the **sum** of the heads (Keras adds the heads in the output projection before
        the activation), whereas TT's multi-head layer sums ``sigma(...) W_c,h`` per head, so
        for ``heads > 1`` the model is outside TT's class (for ``heads = 1`` it is inside);
        (ii) the constant ``offset`` is outside the class (it adds at most ``|o_s| /
        sqrt(m)`` to a Rademacher complexity); (iii) with ``augment_bias=True`` the inputs are
        the augmented tokens, whose norm bound is ``B_x + 1`` (l1) or ``sqrt(B_x^2 + 1)``
        (l2); (iv) the two logits are handled as in TT Section 5 (Theorem 5.1).
        """
        p = {n: t.detach() for n, t in self.named_parameters()}
        Wq = p["query_kernel"].permute(0, 2, 1, 3)  # (K, H, d, kd)
        Wk = p["key_kernel"].permute(0, 2, 1, 3)
        Wv = p["value_kernel"].permute(0, 2, 1, 3)
        Wo = p["output_kernel"]  # (K, H, kd, d)
        if augment_bias:
            Wq = torch.cat([Wq, p["query_bias"][:, :, None, :]], dim=2)  # (K, H, d+1, kd)
            Wk = torch.cat([Wk, torch.zeros_like(p["key_bias"][:, :, None, :])], dim=2)
            Wv = torch.cat([Wv, p["value_bias"][:, :, None, :]], dim=2)
        W_qk_row = torch.einsum("khae,khbe->khab", Wq, Wk) / math.sqrt(self.key_dim)
        W_v = torch.einsum("khae,khed->khad", Wv, Wo)
        if augment_bias:
            W_v = W_v.clone()
            W_v[:, 0, -1, :] += p["output_bias"]
        offset = torch.einsum("kd,kds->ks", p["dense_bias"], p["head_kernel"]) + p["head_bias"]
        return {
            "W_QK": W_qk_row,
            "W_v": W_v,
            "W_c": p["dense_kernel"].clone(),
            "w": p["head_kernel"].clone(),
            "offset": offset,
        }

    @staticmethod
    def tt_forward(tt: dict[str, torch.Tensor], X: torch.Tensor, cls_index: int = -1,
                   augment_bias: bool = True) -> torch.Tensor:
        """Evaluate the formula of :meth:`tt_correspondence` (a check that it is exact).

        Returns logits ``(K, B, n_outputs)`` for inputs ``(K, B, T, d)``.
        """
        if augment_bias:
            X = torch.cat([X, torch.ones_like(X[..., :1])], dim=-1)
        x_cls = X[:, :, cls_index]
        scores = torch.einsum("kbtd,khed,kbe->kbht", X, tt["W_QK"], x_cls)
        a = torch.softmax(scores, dim=-1)
        pre = torch.einsum("kbht,kbtd,khde->kbe", a, X, tt["W_v"])
        hidden = torch.einsum("kbd,kde->kbe", torch.relu(pre), tt["W_c"])
        return torch.einsum("kbd,kds->kbs", hidden, tt["w"]) + tt["offset"][:, None, :]
