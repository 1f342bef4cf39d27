"""Tests for the results store: keys, atomicity, provenance, staleness, resumable sweeps."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from genbounds import results
from genbounds.results import (
    ResultStore,
    StaleResultError,
    StaleResultWarning,
    config_hash,
    config_to_dict,
    run_sweep,
)


@dataclass(frozen=True)
class Cfg:
    PROTOCOL_VERSION: ClassVar[int] = 1
    n: int
    seed: int = 0
    sizes: tuple[int, ...] = (1, 2)


@dataclass(frozen=True)
class CfgV2:
    PROTOCOL_VERSION: ClassVar[int] = 2
    n: int
    seed: int = 0
    sizes: tuple[int, ...] = (1, 2)


def experiment(cfg: Cfg) -> dict[str, object]:
    rng = np.random.default_rng(cfg.seed)
    x = rng.normal(size=cfg.n)
    return {"x": x, "mean": float(x.mean()), "n": cfg.n}


def test_hash_is_stable_and_sensitive() -> None:
    assert config_hash(Cfg(3)) == config_hash(Cfg(3))
    assert config_hash(Cfg(3)) != config_hash(Cfg(4))
    assert config_hash(Cfg(3)) != config_hash(Cfg(3, sizes=(1, 3)))
    # the protocol version is part of the key
    assert config_hash(Cfg(3)) != config_hash(CfgV2(3))
    assert config_to_dict(Cfg(3))["sizes"] == [1, 2]


def test_bad_configs_are_rejected() -> None:
    @dataclass
    class Mutable:
        PROTOCOL_VERSION: ClassVar[int] = 1
        n: int

    @dataclass(frozen=True)
    class NoVersion:
        n: int

    @dataclass(frozen=True)
    class WithNan:
        PROTOCOL_VERSION: ClassVar[int] = 1
        x: float

    with pytest.raises(ValueError, match="frozen"):
        config_hash(Mutable(1))
    with pytest.raises(ValueError, match="PROTOCOL_VERSION"):
        config_hash(NoVersion(1))
    with pytest.raises(ValueError, match="not finite"):
        config_hash(WithNan(float("nan")))
    with pytest.raises(ValueError, match="dataclass instance"):
        config_hash({"n": 1})


def test_run_stores_and_reloads_with_provenance(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    first = store.run(Cfg(5), experiment, device="cpu")
    assert first.fresh
    assert first.scalars["n"] == 5
    again = store.run(Cfg(5), lambda c: pytest.fail("must not recompute"), device="cpu")
    assert not again.fresh
    np.testing.assert_array_equal(first.arrays["x"], again.arrays["x"])
    p = again.provenance
    assert p.device.startswith("cpu")
    assert p.wall_time_s >= 0
    assert p.created_utc.endswith("Z")
    assert p.code_fingerprint == results.code_fingerprint()
    assert "loaded from" in again.describe() and "same code" in again.describe()
    # files: one JSON, one NPZ, no temporaries
    files = sorted(q.name for q in (tmp_path / "quick" / "Cfg").iterdir())
    assert files == [f"{first.key}.json", f"{first.key}.npz"]


def test_mismatched_config_is_never_shown_silently(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    res = store.run(Cfg(5), experiment, device="cpu")
    meta = json.loads(res.path.read_text())
    meta["config"]["n"] = 6  # an edited or colliding file
    res.path.write_text(json.dumps(meta))
    with pytest.raises(StaleResultError, match="does not match the requested config"):
        store.load(Cfg(5))


def test_corrupted_arrays_are_detected(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    res = store.run(Cfg(5), experiment, device="cpu")
    npz = res.path.with_suffix(".npz")
    npz.write_bytes(npz.read_bytes()[:-3] + b"xyz")
    with pytest.raises(StaleResultError, match="checksum"):
        store.load(Cfg(5))


def test_code_change_policy(tmp_path, monkeypatch) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    store.run(Cfg(5), experiment, device="cpu")
    monkeypatch.setattr(results, "code_fingerprint", lambda: "0000000000000000")
    with pytest.warns(StaleResultWarning, match="different genbounds code"):
        assert store.load(Cfg(5), on_code_change="warn") is not None
    with pytest.raises(StaleResultError, match="different genbounds code"):
        store.load(Cfg(5), on_code_change="error")
    assert store.load(Cfg(5), on_code_change="recompute") is None
    assert store.run(Cfg(5), experiment, device="cpu").fresh


def test_interrupted_write_leaves_no_result(tmp_path, monkeypatch) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    calls = {"n": 0}
    real = results._atomic_write

    def failing(path, data):
        calls["n"] += 1
        if path.suffix == ".json":
            raise KeyboardInterrupt  # killed between the arrays and the commit point
        real(path, data)

    monkeypatch.setattr(results, "_atomic_write", failing)
    with pytest.raises(KeyboardInterrupt):
        store.run(Cfg(5), experiment, device="cpu")
    assert not store.has(Cfg(5))
    assert store.load(Cfg(5)) is None
    leftovers = [q.name for q in (tmp_path / "quick" / "Cfg").iterdir() if q.suffix == ".tmp"]
    assert leftovers == []


def test_interrupted_sweep_resumes_to_identical_results(tmp_path) -> None:
    configs = [Cfg(n, seed=n) for n in (3, 4, 5, 6)]
    reference = run_sweep(ResultStore(tmp_path / "a", "quick"), configs, experiment, device="cpu")

    store = ResultStore(tmp_path / "b", "quick")
    done: list[int] = []

    def flaky(cfg: Cfg) -> dict[str, object]:
        if cfg.n == 5 and not done:
            done.append(1)
            raise KeyboardInterrupt
        return experiment(cfg)

    with pytest.raises(KeyboardInterrupt):
        run_sweep(store, configs, flaky, device="cpu")
    assert [store.has(c) for c in configs] == [True, True, False, False]
    computed: list[int] = []

    def counting(cfg: Cfg) -> dict[str, object]:
        computed.append(cfg.n)
        return experiment(cfg)

    resumed = run_sweep(store, configs, counting, device="cpu")
    assert computed == [5, 6]
    for a, b in zip(reference, resumed, strict=True):
        assert a.key == b.key and a.config == b.config and a.scalars == b.scalars
        np.testing.assert_array_equal(a.arrays["x"], b.arrays["x"])


def test_bad_inputs(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    with pytest.raises(ValueError, match="namespace"):
        ResultStore(tmp_path, namespace="../x")
    with pytest.raises(ValueError, match="configs must not be empty"):
        run_sweep(store, [], experiment)
    with pytest.raises(ValueError, match="duplicate"):
        run_sweep(store, [Cfg(1), Cfg(1)], experiment)
    with pytest.raises(ValueError, match="object"):
        store.save(Cfg(1), {"x": np.array([{}], dtype=object)}, device="cpu", wall_time_s=0.0)
    with pytest.raises(ValueError, match="not finite"):
        store.save(Cfg(1), {}, {"m": float("inf")}, device="cpu", wall_time_s=0.0)
    with pytest.raises(ValueError, match="wall_time_s"):
        store.save(Cfg(1), {}, device="cpu", wall_time_s=-1.0)
    with pytest.raises(ValueError, match="mapping"):
        store.run(Cfg(2), lambda c: [1, 2], device="cpu")
    with pytest.raises(ValueError, match="device"):
        results.describe_device("tpu")
    with pytest.raises(ValueError, match="on_code_change"):
        store.load(Cfg(1), on_code_change="ignore")  # type: ignore[arg-type]


def test_default_dir_honours_env(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GENBOUNDS_RESULTS_DIR", str(tmp_path))
    assert results.default_results_dir() == tmp_path


def test_summarize_provenance(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    first = run_sweep(store, [Cfg(3), Cfg(4)], experiment, device="cpu")
    text = results.summarize_provenance(first)
    assert text.startswith("2 parts computed in this run") and "same code" in text
    again = run_sweep(store, [Cfg(3), Cfg(4), Cfg(5)], experiment, device="cpu")
    text = results.summarize_provenance(again)
    assert text.startswith("1 of 3 parts computed in this run, 2 loaded")
    assert results.summarize_provenance(again[:1]) == again[0].describe()
    with pytest.raises(ValueError, match="results"):
        results.summarize_provenance([])
