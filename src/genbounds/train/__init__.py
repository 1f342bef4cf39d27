"""The ensemble training engine: K independent models trained as one batched computation.

The engine in parts (each module's docstring is its contract):

* :mod:`genbounds.train.config`: :class:`TrainConfig`, :class:`TrainResult`,
  :class:`TrainingDivergedError`, :data:`LOSSES`, :func:`lr_schedule`, :func:`resolve_device`;
* :mod:`genbounds.train.losses`: :func:`per_sample_loss` and the label checks;
* :mod:`genbounds.train.inputs`: input sets (tensors or lazy :data:`InputFn`);
* :mod:`genbounds.train.state`: one :class:`~genbounds.train.state.ModelRecord` per model, the
  tensors of the ensemble, the history;
* :mod:`genbounds.train.memory`: micro-batch and evaluation-chunk sizes from a memory budget read
  from the device and a measured per-sample activation cost;
* :mod:`genbounds.train.step`: the batch gradient (exactly, by micro-batches) and the SGD / Adam
  updates;
* :mod:`genbounds.train.stopping`: early stopping and the kept (best-validation) epoch;
* :mod:`genbounds.train.evaluate`: no-grad evaluation in chunks;
* :mod:`genbounds.train.precision`: opt-in reduced precision (TF32, bfloat16) behind
  ``TrainConfig.precision``;
* :mod:`genbounds.train.loop`: :func:`train_ensemble`, the orchestration;
* :mod:`genbounds.train.checkpoint`: checkpoints inside a unit and its time budget.

Checkpoints inside a unit
-------------------------
A unit of an experiment run under :func:`unit_checkpoint` (``reproduce --budget-minutes`` does
this) can stop at any epoch and resume bit for bit (on the same device):

* :func:`train_ensemble` needs nothing from the experiment: each call is one *stage* of the
  unit's :class:`UnitCheckpoint`; a call finished by an earlier run returns its stored result
  (and loads the kept weights into the model), an interrupted one resumes at its epoch with its
  parameters, optimiser moments, step counter, kept weights, stopping records, history,
  shuffling generators and memory plan; when the budget is spent it saves and raises
  :class:`BudgetExhausted`. A unit that calls it several times (segments, students, widths) is
  resumable as long as it makes the same calls in the same order.
* A loop of one's own (a ``torch.optim`` optimiser, say) asks ``ckpt.stage(tag)`` for its stage
  (``tag`` from :func:`fingerprint` of its configuration and inputs), restores
  ``stage.partial`` with :func:`restore_state`, calls ``stage.boundary(epoch, total,
  lambda: checkpoint_state(model, optimizer, extra))`` after every epoch and
  ``stage.finish(result)`` at the end; ``extra`` holds the epoch, curves, random-number states
  and best-so-far values (numpy arrays are fine: :func:`to_storable`). The example is in
  :func:`checkpoint_state`.

The engine imports no model family: a model is anything whose parameters and buffers carry a
leading model dimension K and whose forward maps ``(K, B, ...)`` to ``(K, B)`` or ``(K, B, C)``.
"""

from genbounds.train import checkpoint as _checkpoint
from genbounds.train import config as _config
from genbounds.train.checkpoint import *  # noqa: F403 - its __all__, re-exported
from genbounds.train.config import *  # noqa: F403 - its __all__, re-exported
from genbounds.train.evaluate import evaluate_ensemble, evaluate_models
from genbounds.train.inputs import InputFn, InputSet
from genbounds.train.loop import train_ensemble
from genbounds.train.losses import per_sample_loss
from genbounds.train.memory import MemoryPlan, plan_memory
from genbounds.train.step import adam_step, sgd_step

__all__ = ["InputFn", "InputSet", "MemoryPlan", "adam_step", "evaluate_ensemble",
           "evaluate_models", "per_sample_loss", "plan_memory", "sgd_step", "train_ensemble"]
__all__ += _checkpoint.__all__
__all__ += _config.__all__
