"""The Keras model of Trauger & Tewari's sparse-majority experiment, reproduced exactly."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from genbounds.models.base import (
    Ensemble,
    check_cls_index,
    keras_glorot_uniform_limit,
    normal_init,
    stack_init,
    uniform_init,
    zeros_init,
)
from genbounds.models.view import HeadView, LayerView, ModelView
from genbounds.validation import check_int, check_seeds

__all__ = ['SparseMajorityMHA']

class SparseMajorityMHA(Ensemble):
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
    e_1 + a_T e_cls``. That is a combination, with per-sample coefficients ``(a_0, ..., a_T,
    s_0, s_1)``, of ``T + 3`` rows that are the same for every sample of a model, so the value
    and output projections are applied to those rows once per forward pass, and the attention
    layer's output is one ``B x heads (T + 3)`` times ``heads (T + 3) x d`` product per model
    (:meth:`_forward_bits`). No token matrix and no per-sample ``(heads, d)`` tensor is ever
    formed; the per-sample cost is ``O(T heads + heads T d + d^2)``. Same numbers up to
    rounding (tested against :meth:`forward_full`: 1e-12 in float64; in float32 at the paper's
    sizes 1e-5 of the largest logit and 1e-4 of the largest gradient entry).
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
        self.d = check_int(d, "d")
        self.heads = check_int(heads, "heads")
        self.key_dim = check_int(key_dim, "key_dim")
        self.n_outputs = check_int(n_outputs, "n_outputs")
        check_cls_index(cls_index)
        if not (isinstance(final_init_std, int | float) and final_init_std >= 0):
            raise ValueError(f"final_init_std must be >= 0, got {final_init_std!r}")
        self.cls_index = cls_index
        self.seeds = check_seeds(seeds, "seeds", n_models)
        self.n_models = n_models
        H, kd = heads, key_dim
        qkv = (d, H, kd)
        out = (H, kd, d)
        draws = [
            ("query_kernel", qkv, uniform_init(keras_glorot_uniform_limit(qkv))),
            ("query_bias", (H, kd), zeros_init),
            ("key_kernel", qkv, uniform_init(keras_glorot_uniform_limit(qkv))),
            ("key_bias", (H, kd), zeros_init),
            ("value_kernel", qkv, uniform_init(keras_glorot_uniform_limit(qkv))),
            ("value_bias", (H, kd), zeros_init),
            ("output_kernel", out, uniform_init(keras_glorot_uniform_limit(out))),
            ("output_bias", (d,), zeros_init),
            ("dense_kernel", (d, d), uniform_init(keras_glorot_uniform_limit((d, d)))),
            ("dense_bias", (d,), zeros_init),
            ("head_kernel", (d, n_outputs), normal_init(float(final_init_std))),
            ("head_bias", (n_outputs,), zeros_init),
        ]
        self._register(stack_init(self.seeds, draws, dtype))
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
            return self._forward_bits(X)
        self._check(X)
        a = self._cls_attention(X)  # (K, B, H, T)
        z = torch.einsum("kbht,kbtd->kbhd", a, X)  # sum_t a_t x_t
        return self._from_attended(a, z)

    def _cls_attention_bits(self, bits: torch.Tensor) -> torch.Tensor:
        """[CLS] attention ``(K, B, H, T+1)`` from bits and the token tables."""
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
        return torch.softmax(torch.cat([body, last], dim=-1), dim=-1)  # (K, B, H, T+1)

    def _forward_bits(self, bits: torch.Tensor) -> torch.Tensor:
        """Logits from bits: the attended token is a combination of ``T + 3`` fixed rows.

        With ``a`` the [CLS] attention, ``s_1 = sum_{t < T, b_t = 1} a_t`` and ``s_0 =
        sum_{t < T} a_t - s_1``, the attended token of head ``h`` is ``sum_t a_t x_t = C R``
        with coefficients ``C = (a_0, ..., a_T, s_0, s_1)`` and rows ``R = (P_0, ...,
        P_{T-1}, P_T + e_cls, e_0, e_1)``, the same for every sample of a model. Hence the
        head's output ``(sum_t a_t x_t) W^V_h + (sum_t a_t) b^V_h`` followed by ``W^O_h`` is
        ``C M_h`` with ``M_h = (R W^V_h + [b^V_h on the T + 1 attention rows]) W^O_h``
        ``(T + 3, d)``, computed once per forward pass, and the attention layer's output is one
        batched product ``[C_1 ... C_H] [M_1; ...; M_H] + b^O`` per model. No per-sample
        ``(B, heads, d)`` tensor is formed. Exact algebra; the floating-point rounding differs
        from :meth:`forward_full` (products reassociated), tested to 1e-5 relative in float32.
        """
        E = self.token_bit_embeddings  # (K, 2, d)
        e_cls = self.token_cls_embedding  # (K, d)
        P = self.token_positional  # (K, T+1, d)
        assert E is not None and e_cls is not None and P is not None
        K, B, T = bits.shape
        H = self.heads
        a = self._cls_attention_bits(bits)  # (K, B, H, T+1)
        b = bits.to(P.dtype)
        a_body = a[..., :-1]
        s1 = (a_body * b[:, :, None, :]).sum(dim=-1)  # attention on tokens with bit 1
        s0 = a_body.sum(dim=-1) - s1
        coef = torch.cat([a, s0[..., None], s1[..., None]], dim=-1)  # (K, B, H, T+3)
        rows = torch.cat([P[:, :-1], (P[:, -1] + e_cls)[:, None], E], dim=1)  # (K, T+3, d)
        kd = self.key_dim
        # R W^V for both heads in one product (the kernel (K, d, H, kd) viewed as (K, d, H kd))
        vals = torch.bmm(rows, self.value_kernel.reshape(K, self.d, H * kd))
        vals = vals.view(K, T + 3, H, kd).transpose(1, 2)  # (K, H, T+3, kd)
        vals = torch.cat([vals[:, :, :T + 1] + self.value_bias[:, :, None, :],
                          vals[:, :, T + 1:]], dim=2)
        M = torch.matmul(vals, self.output_kernel)  # (K, H, T+3, d)
        mha = torch.baddbmm(self.output_bias[:, None, :], coef.reshape(K, B, H * (T + 3)),
                            M.reshape(K, H * (T + 3), self.d))
        hidden = torch.baddbmm(self.dense_bias[:, None, :], torch.relu(mha), self.dense_kernel)
        return torch.baddbmm(self.head_bias[:, None, :], hidden, self.head_kernel)

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

    def view_from_parameters(self, params: Mapping[str, torch.Tensor]) -> ModelView:
        """Keras kernels (row convention ``x W``) transposed into the column orientation.

        Head ``h``: ``W_Q = query_kernel[:, :, h, :]^T`` ``(K, key_dim, d)`` (likewise ``W_K``,
        ``W_V``), ``W_O = output_kernel[:, h]^T`` ``(K, d, key_dim)``, ``score_scale =
        1/sqrt(key_dim)``, biases ``b_Q, b_K, b_V``. The layer sums the heads, adds the shared
        output bias ``b_O``, applies ReLU, then the dense map ``mlp[0] = dense_kernel^T`` with
        bias ``b_mlp0``; the readout is ``head_kernel^T`` ``(K, n_outputs, d)`` at [CLS].
        """
        scale = 1.0 / math.sqrt(self.key_dim)
        heads = []
        for h in range(self.heads):
            W_Q = params["query_kernel"][:, :, h, :].mT
            W_K = params["key_kernel"][:, :, h, :].mT
            heads.append(HeadView(
                W_QK=scale * torch.einsum("kei,kej->kij", W_Q, W_K),
                W_V=params["value_kernel"][:, :, h, :].mT, W_O=params["output_kernel"][:, h].mT,
                W_Q=W_Q, W_K=W_K, score_scale=scale,
                biases={"b_Q": params["query_bias"][:, h], "b_K": params["key_bias"][:, h],
                        "b_V": params["value_bias"][:, h]},
            ))
        layer = LayerView(
            tuple(heads), combine="heads summed with the shared output bias b_O, then ReLU, "
            "then the dense map", activation="relu", mlp=(params["dense_kernel"].mT,),
            biases={"b_O": params["output_bias"], "b_mlp0": params["dense_bias"]})
        return ModelView("SparseMajorityMHA", (layer,), params["head_kernel"].mT,
                         params["head_bias"], "cls", dict(params))
