"""What every model family shares: K independent models held as one module.

Every model holds its parameters with a **leading model dimension** ``K`` (``n_models``): a
parameter that one model would store with shape ``S`` is stored with shape ``(K, *S)``, and
inputs have shape ``(K, B, T, d)`` (model ``k`` sees its own batch ``X[k]``). K independent
models therefore train as one computation (see :mod:`genbounds.train`), and model ``k`` is
initialised from its own ``torch.Generator`` seeded with ``seeds[k]``, so model ``k`` of a
K-ensemble is *the same model* as the single model built with ``seeds=[seeds[k]]``.

``forward`` infers the number of models from ``X.shape[0]`` and requires the parameters to
carry the same leading size, so the training engine may call a model (through
:func:`torch.func.functional_call`) with the parameters of a subset of its members.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import torch
from torch import nn

from genbounds.protocols import ModelView

__all__ = [
    "ACTIVATIONS",
    "Ensemble",
    "check_activation",
    "check_cls_index",
    "keras_compute_fans",
    "keras_glorot_uniform_limit",
    "normal_init",
    "project_rows_to_unit_ball",
    "stack_init",
    "uniform_init",
    "zeros_init",
]



#: The entrywise activations a family may use, by name (``sigma`` of the papers).
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu,
    "identity": lambda x: x,
    "tanh": torch.tanh,
}


def check_activation(activation: object) -> str:
    """``activation`` if it names one of :data:`ACTIVATIONS`, else a ``ValueError``."""
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    return activation


def check_cls_index(cls_index: object) -> int:
    """``cls_index`` if it is an integer (not a bool), else a ``ValueError``."""
    if isinstance(cls_index, bool) or not isinstance(cls_index, int):
        raise ValueError(f"cls_index must be an integer, got {cls_index!r}")
    return cls_index


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






def stack_init(
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


def normal_init(std: float) -> Callable[[torch.Generator, tuple[int, ...]], torch.Tensor]:
    def draw(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64) * std

    return draw


def uniform_init(limit: float) -> Callable[[torch.Generator, tuple[int, ...]], torch.Tensor]:
    def draw(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return (2.0 * torch.rand(shape, generator=gen, dtype=torch.float64) - 1.0) * limit

    return draw


def zeros_init(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.float64)


class Ensemble(nn.Module):
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

    def extract(self, k: int) -> Ensemble:
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

    def view(self, initial_state: Mapping[str, torch.Tensor] | None = None) -> ModelView:
        """The weights as a :class:`~genbounds.models.view.ModelView` (detached, leading K).

        ``initial_state`` (parameter name -> tensor with the same shapes, e.g.
        :attr:`genbounds.train.TrainResult.initial_state`) attaches the view at initialisation.
        """
        params = {name: p.detach() for name, p in self.named_parameters()}
        initial = None
        if initial_state is not None:
            if not isinstance(initial_state, Mapping) or set(initial_state) != set(params):
                raise ValueError(
                    f"initial_state must map exactly the parameter names {sorted(params)}"
                )
            for name, t in initial_state.items():
                if not isinstance(t, torch.Tensor) or t.shape != params[name].shape:
                    raise ValueError(f"initial_state[{name!r}] must have shape "
                                     f"{tuple(params[name].shape)}")
            initial = self.view_from_parameters({n: t.detach() for n, t in initial_state.items()})
        v = self.view_from_parameters(params)
        if initial is None:
            return v
        return ModelView(v.family, v.layers, v.readout, v.readout_bias, v.pooling, v.parameters,
                         initial)

    def view_from_parameters(self, params: Mapping[str, torch.Tensor]) -> ModelView:
        """The view of this architecture holding the given parameters (one per family)."""
        raise NotImplementedError(f"{type(self).__name__} does not define view_from_parameters")

