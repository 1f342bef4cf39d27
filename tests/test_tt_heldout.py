"""The held-out test set of the sparse-majority study (protocol version 2).

The test set must (i) change nothing that protocol version 1 computed: data, training, kept
epoch, norms (checked against numbers produced by the version-1 code, commit 0835874, on two
tiny configurations, and by varying ``n_test``); (ii) come from its own seed stream; (iii) be
evaluated correctly (recomputed here from the stored TT matrices with an independent forward).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from genbounds.bounds.trauger_tewari_notation import tt_forward
from genbounds.data import make_sparse_majority, sparse_majority_labels
from genbounds.experiments.sparse_majority import (
    TEST_STREAM,
    SparseMajorityConfig,
    heldout_seed,
    make_heldout_set,
    run,
    run_seeds,
    train_group,
)
from tests.test_sparse_majority_experiment import TINY

# the configuration of tests/test_sparse_majority_experiment.py (SGD, few epochs) ...
TINY_SGD = dataclasses.replace(TINY, n_test=64)
# ... and one with Adam whose kept epoch is late (training moves the weights a lot)
TINY_ADAM = SparseMajorityConfig(
    T_values=(6, 10), runs_per_T=2, n_train=32, n_val=48, n_test=64, s=3, d=8, heads=2,
    key_dim=4, optimizer="adam", engine="per_T", lr=1e-2, momentum=0.0, lr_decay=1.0,
    lr_floor=0.0, batch_size=16, max_epochs=12, seed=11, device="cpu",
)

# Produced by the protocol-version-1 code (before the test set existed), OMP_NUM_THREADS=1.
GOLDEN_V1 = {
    "TINY_SGD": {
        "train_loss": [0.6851892098784447, 0.6926967278122902, 0.6857706879576048,
                       0.693071703116099],
        "val_loss": [0.6938037946820259, 0.6935025885701179, 0.6989625647664071,
                     0.6886429041624069],
        "val_accuracy": [0.5, 0.5, 0.4, 0.65],
        "best_epoch": [0, 0, 0, 3],
        "model.l1": [69.39047766231663, 71.07028818216314, 69.0313856644341, 65.55955785623777],
        "tt.W_QK_h0_l11": [2.6033624764931282, 2.715995232418095, 2.068963050192565,
                           1.3530379170654212],
    },
    "TINY_ADAM": {
        "train_loss": [0.6721307970583439, 0.6506882850080729, 0.6845311038196087,
                       0.6773794051259756],
        "val_loss": [0.6846875548362732, 0.6647649804751078, 0.6935457549989223,
                     0.6854124901195368],
        "val_accuracy": [0.5625, 0.4583333333333333, 0.5, 0.5416666666666666],
        "best_epoch": [11, 11, 0, 11],
        "model.l1": [77.13798480924977, 85.11531632402534, 72.19226660184933, 79.46007180108927],
        "tt.W_QK_h0_l11": [2.5230110809206963, 4.7083975380519405, 1.9761750700563425,
                           2.5379399370867755],
    },
}
CONFIGS = {"TINY_SGD": TINY_SGD, "TINY_ADAM": TINY_ADAM}


#: The version-1 numbers were written on an x86-64 CPU whose class was not recorded, so they are
#: not a bitwise claim on any machine (the per-class bitwise goldens are in
#: tests/test_train_golden.py). Adam's twelve float32 epochs carry summation-order differences
#: into the weights: on the CI machine, on this repository's 2-core Intel Xeon (AVX-512 and, with
#: ATEN_CPU_CAPABILITY=avx2, AVX2) and on the GPU machine's CPU (torch 2.11) the first TINY_ADAM l1
#: norm departs by 1.1e-6 to 1.5e-6 relative, everything else by at most 2e-7. 1e-5 leaves a
#: factor of about seven above that. What this test guards is that training is untouched: a test
#: set drawn from the shuffling stream instead of a stream of its own moves every configuration's
#: numbers by 1e-4 to 0.5 relative (checked by that mutation).
RTOL = 1e-5


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, np.ndarray]]:
    return {name: run(cfg) for name, cfg in CONFIGS.items()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_version_1_numbers_unchanged(results: dict[str, dict[str, np.ndarray]],
                                     name: str) -> None:
    out = results[name]
    for key, expected in GOLDEN_V1[name].items():
        np.testing.assert_allclose(out[key], expected, rtol=RTOL, atol=1e-9, err_msg=key)


def test_n_test_changes_nothing_else(results: dict[str, dict[str, np.ndarray]]) -> None:
    """Bitwise: a larger test set leaves every other stored number as it was."""
    base = results["TINY_ADAM"]
    other = run(dataclasses.replace(TINY_ADAM, n_test=7))
    assert set(other) == set(base)
    for key in base:
        if key in ("group_wall_time_s", "test_loss", "test_accuracy"):
            continue
        np.testing.assert_array_equal(other[key], base[key], err_msg=key)
    assert not np.array_equal(other["test_loss"], base["test_loss"])


def test_seed_stream_is_separate() -> None:
    for T in (6, 10):
        for r in range(3):
            s = heldout_seed(TINY_ADAM, T, r)
            assert s not in run_seeds(TINY_ADAM, T, r)
            assert s == int(np.random.SeedSequence([TINY_ADAM.seed, T, r, TEST_STREAM])
                            .generate_state(1)[0])
    # runs and lengths get different test sets
    seeds = {heldout_seed(TINY_ADAM, T, r) for T in (6, 10) for r in range(3)}
    assert len(seeds) == 6


def test_test_set_is_the_runs_own_task() -> None:
    _, _, batch = train_group(dataclasses.replace(TINY_ADAM, max_epochs=1), 10)
    bits, labels, seeds = make_heldout_set(TINY_ADAM, 10, batch)
    assert bits.shape == (2, 64, 10) and labels.shape == (2, 64)
    for k, ds in enumerate(batch.datasets):
        np.testing.assert_array_equal(labels[k].numpy(),
                                      sparse_majority_labels(bits[k].numpy(), ds.subset))
        assert seeds[k] == heldout_seed(TINY_ADAM, 10, k)
        # fresh samples, not a copy of the training or validation bits
        assert not np.array_equal(bits[k, :24].numpy(), ds.bits_train[:24])
        assert not np.array_equal(bits[k, :24].numpy(), ds.bits_val[:24])
    with pytest.raises(ValueError, match="config"):
        make_heldout_set({"n_test": 3}, 10, batch)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="T = 10"):
        make_heldout_set(TINY_ADAM, 6, batch)


@pytest.mark.parametrize("i", [0, 3])
def test_test_metrics_recomputed_independently(results: dict[str, dict[str, np.ndarray]],
                                               i: int) -> None:
    """Rebuild run ``i``'s test set from its seeds and evaluate the stored TT matrices."""
    out, cfg = results["TINY_ADAM"], TINY_ADAM
    T, r = int(out["T"][i]), int(out["run"][i])
    data_seed = run_seeds(cfg, T, r)[0]
    ds = make_sparse_majority(T, n_train=cfg.n_train, n_val=cfg.n_val, s=cfg.s, d=cfg.d,
                              seed=data_seed)
    bits = np.random.default_rng(heldout_seed(cfg, T, r)).integers(0, 2, (cfg.n_test, T))
    y = torch.as_tensor(sparse_majority_labels(bits, ds.subset))
    X = ds.tokens(bits, dtype=torch.float64)[None]
    tt = {k: torch.as_tensor(out[f"tt_{k}"][i:i + 1], dtype=torch.float64)
          for k in ("W_QK", "W_v", "W_c", "w", "offset")}
    logits = tt_forward(tt, X)[0]
    loss = F.binary_cross_entropy_with_logits(logits, F.one_hot(y, 2).double(),
                                              reduction="none").mean(-1).mean().item()
    acc = (logits.argmax(-1) == y).double().mean().item()
    assert out["test_loss"][i] == pytest.approx(loss, rel=1e-4)
    assert out["test_accuracy"][i] == pytest.approx(acc, abs=1.5 / cfg.n_test)


def test_n_test_validated() -> None:
    with pytest.raises(ValueError, match="n_test"):
        SparseMajorityConfig(n_test=0)
    assert SparseMajorityConfig.paper().n_test == 10_000
    assert 1000 <= SparseMajorityConfig.quick().n_test <= 10_000
    assert SparseMajorityConfig.PROTOCOL_VERSION >= 2
