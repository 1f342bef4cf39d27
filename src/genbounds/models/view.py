"""The weight view of every model family: re-exported from :mod:`genbounds.protocols`.

The protocol lives in :mod:`genbounds.protocols` (outside the ``models`` package) so that the
bounds can read models through it without importing a model family; this module keeps the older
import path ``genbounds.models.view`` working.
"""

from __future__ import annotations

from genbounds.protocols import AttentionModel, HeadView, LayerView, ModelView

__all__ = ["AttentionModel", "HeadView", "LayerView", "ModelView"]
