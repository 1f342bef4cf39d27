"""Tests for the results store: keys, atomicity, provenance, staleness, resumable sweeps.

Damage and repair are tested in ``test_store_damage.py``, killed and concurrent worker processes
in ``test_store_processes.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from genbounds import results
from genbounds.results import (
    DamagedResultError,
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
    # what the result depends on: a module nobody else edits in a shared checkout, so that no
    # stored result of these tests is recomputed as "made by other code" while they run
    CODE_MODULES: ClassVar[tuple[str, ...]] = ("genbounds.results.keys",)
    n: int
    seed: int = 0
    sizes: tuple[int, ...] = (1, 2)


@dataclass(frozen=True)
class CfgV2:
    PROTOCOL_VERSION: ClassVar[int] = 2
    CODE_MODULES: ClassVar[tuple[str, ...]] = ("genbounds.results.keys",)
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
    assert p.code_fingerprint == results.code_fingerprint(Cfg.CODE_MODULES)
    assert p.code_modules == Cfg.CODE_MODULES
    stored = json.loads(again.path.read_text())["provenance"]["code_modules"]
    assert stored == ["genbounds.results.keys"]
    assert "loaded from" in again.describe() and "same code" in again.describe()
    # files: one JSON, one NPZ, no temporaries
    files = sorted(q.name for q in (tmp_path / "quick" / "Cfg").iterdir())
    assert files == [f"{first.key}.json", f"{first.key}.npz"]


def test_mismatched_config_is_never_shown_silently(tmp_path, monkeypatch) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    res = store.run(Cfg(5), experiment, device="cpu")
    meta = json.loads(res.path.read_text())
    meta["config"]["n"] = 6  # an edited file
    res.path.write_text(json.dumps(meta))
    with pytest.raises(StaleResultError, match="altered after it was written"):
        store.load(Cfg(5))
    # a colliding key (simulated): the record is sound but for another config
    other = ResultStore(tmp_path / "b", namespace="quick")
    stored6 = other.run(Cfg(6), experiment, device="cpu")
    monkeypatch.setattr(results.store, "config_hash", lambda c: stored6.key)
    with pytest.raises(DamagedResultError, match="does not match the requested config"):
        other.load(Cfg(5))


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
    monkeypatch.setattr(results.provenance, "code_fingerprint", lambda modules=None: "0" * 16)
    with pytest.warns(StaleResultWarning, match="different genbounds code"):
        assert store.load(Cfg(5), on_code_change="warn") is not None
    with pytest.raises(StaleResultError, match="different genbounds code"):
        store.load(Cfg(5), on_code_change="error")
    assert store.load(Cfg(5), on_code_change="recompute") is None
    assert store.run(Cfg(5), experiment, device="cpu").fresh


def test_interrupted_write_leaves_no_result(tmp_path, monkeypatch) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    calls = {"n": 0}
    real = results.files.write_temporary

    def failing(path, data):
        calls["n"] += 1
        if path.suffix == ".json":
            raise KeyboardInterrupt  # interrupted between the arrays and the commit point
        return real(path, data)

    monkeypatch.setattr(results.files, "write_temporary", failing)
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


# ----------------------------------------------------------------------- provenance per experiment


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A stand-in for the genbounds source tree, so tests can edit "package" files."""
    pkg = tmp_path / "src" / "genbounds"
    files = {
        "__init__.py": '__version__ = "0"\n',
        "a.py": "def f():\n    from genbounds import b\n    return b.g()\n",
        "b.py": "from genbounds.sub import c\n\ndef g():\n    return c.h()\n",
        "lonely.py": "X = 1\n",
        "sub/__init__.py": "from genbounds.sub.c import h\n",
        "sub/c.py": "from . import d\n\ndef h():\n    return d.K\n",
        "sub/d.py": "K = 2\n",
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    monkeypatch.setattr(results.provenance, "PACKAGE_DIR", pkg)
    # these tests edit "package" files between runs, each run standing for a new process: the
    # check against the files as this process imported them does not apply to the stand-in
    monkeypatch.setattr(results.provenance, "check_source_unchanged", lambda modules=None: None)
    return pkg


def test_code_fingerprint_covers_the_named_modules_only(fake_package) -> None:
    fp = results.code_fingerprint
    assert fp(["genbounds"]) == fp() == fp(None)
    assert fp(["genbounds.a", "genbounds.b"]) == fp(("genbounds.b", "genbounds.a", "genbounds.a"))
    parts = ["genbounds.sub.__init__", "genbounds.sub.c", "genbounds.sub.d"]
    assert fp(["genbounds.sub"]) == fp(parts)
    before = {m: fp([m]) for m in ("genbounds.a", "genbounds.sub", "genbounds.lonely")}
    (fake_package / "sub" / "d.py").write_text("K = 3\n")
    assert fp(["genbounds.a"]) == before["genbounds.a"]  # a file outside the list changed
    assert fp(["genbounds.lonely"]) == before["genbounds.lonely"]
    assert fp(["genbounds.sub"]) != before["genbounds.sub"]  # a file inside the package changed
    for bad in ("genbounds.a", [], ["numpy"], ["genbounds.nope"], [3]):
        with pytest.raises(ValueError, match="modules"):
            fp(bad)  # type: ignore[arg-type]


def test_code_modules_of_follows_imports_transitively(fake_package) -> None:
    assert results.code_modules_of("genbounds.lonely") == ("genbounds.lonely",)
    # a imports b inside a function; b imports c from sub (not sub's __init__); c imports d
    assert results.code_modules_of("genbounds.a") == (
        "genbounds.a", "genbounds.b", "genbounds.sub.c", "genbounds.sub.d")
    # importing the package runs its __init__, which imports c
    assert results.code_modules_of("genbounds.sub.__init__") == (
        "genbounds.sub.__init__", "genbounds.sub.c", "genbounds.sub.d")
    assert results.code_modules_of("genbounds.a", exclude=("genbounds.sub",)) == (
        "genbounds.a", "genbounds.b")
    with pytest.raises(ValueError, match="modules"):
        results.code_modules_of()


@dataclass(frozen=True)
class NoModules:
    PROTOCOL_VERSION: ClassVar[int] = 1
    n: int
    seed: int = 0


def test_edits_outside_an_experiments_modules_keep_its_results(tmp_path, fake_package) -> None:
    store = ResultStore(tmp_path / "store", namespace="quick")
    a_only = ("genbounds.a",)
    first = store.run(Cfg(5), experiment, device="cpu", code_modules=a_only)
    assert first.provenance.code_modules == a_only
    whole = store.run(NoModules(5), experiment, device="cpu")  # no list: the whole package
    assert whole.provenance.code_modules is None
    (fake_package / "lonely.py").write_text("X = 2\n")  # an edit elsewhere in the package
    assert not store.run(Cfg(5), experiment, device="cpu", code_modules=a_only).fresh
    assert store.run(NoModules(5), experiment, device="cpu").fresh
    # asking for more modules than the stored fingerprint covered: cannot be vouched for
    assert store.load(Cfg(5), code_modules=("genbounds.a", "genbounds.b"),
                      on_code_change="recompute") is None
    (fake_package / "a.py").write_text("def f():\n    return 0\n")  # an edit inside the list
    with pytest.raises(StaleResultError, match="different genbounds code"):
        store.load(Cfg(5), code_modules=a_only, on_code_change="error")
    assert store.run(Cfg(5), experiment, device="cpu", code_modules=a_only).fresh
    # the class attribute CODE_MODULES is used when no list is given
    with pytest.raises(ValueError, match="Cfg.CODE_MODULES"):
        store.run(Cfg(6), experiment, device="cpu")  # genbounds.results.keys: not in the fake


def test_records_from_before_code_modules_still_load(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    res = store.run(NoModules(3), experiment, device="cpu")
    meta = json.loads(res.path.read_text())
    for name in ("meta_sha256", "format"):
        del meta[name]
    del meta["provenance"]["code_modules"]
    # a record without a module list (the whole package), sealed with its checksum
    res.path.write_text(json.dumps(results.files.seal(meta)))
    old = store.load(NoModules(3), on_code_change="error")
    assert old is not None and old.provenance.code_modules is None
    np.testing.assert_array_equal(old.arrays["x"], res.arrays["x"])
    assert "same code" in old.describe()


def test_provenance_takes_the_commit_from_the_environment_when_given(monkeypatch
                                                                               ) -> None:
    from genbounds.results import provenance as prov

    monkeypatch.setattr(prov, "_git", lambda *args: None)
    monkeypatch.delenv(prov.GIT_COMMIT_ENV, raising=False)
    assert prov.Provenance.now(device="cpu", wall_time_s=1.0).git_commit == "unknown"
    monkeypatch.setattr(prov, "_git", lambda *args: "d230b26" if args[0] == "rev-parse" else "M x")
    assert prov.Provenance.now(device="cpu", wall_time_s=1.0).git_commit == "d230b26"
    given = "f8949ab" + "0" * 33  # a copy whose .git is stale
    monkeypatch.setenv(prov.GIT_COMMIT_ENV, given)
    p = prov.Provenance.now(device="cpu", wall_time_s=1.0)
    assert p.git_commit == given and not p.git_dirty
    monkeypatch.setenv(prov.GIT_DIRTY_ENV, "1")
    assert prov.Provenance.now(device="cpu", wall_time_s=1.0).git_dirty


def test_a_source_edited_after_import_is_not_stored(tmp_path, monkeypatch) -> None:
    import genbounds
    from genbounds.results import CodeChangedError, ResultStore, describe_device

    @dataclass(frozen=True)
    class EditedUnit:
        PROTOCOL_VERSION: ClassVar[int] = 1
        n: int = 1

    key = "experiments/registry.py"
    monkeypatch.setitem(genbounds.SOURCE_AT_IMPORT, key, "0" * 64)  # as if edited since import
    store = ResultStore(tmp_path, namespace="quick")
    with pytest.raises(CodeChangedError, match="experiments/registry.py changed on disk"):
        store.save(EditedUnit(), {"x": np.ones(2)}, device=describe_device("cpu"),
                   wall_time_s=1.0, code_modules=("genbounds.experiments.registry",))
    assert not store.has(EditedUnit())
    # a result whose fingerprint does not cover the edited file is stored
    store.save(EditedUnit(), {"x": np.ones(2)}, device=describe_device("cpu"), wall_time_s=1.0,
               code_modules=("genbounds.scale",))
    assert store.has(EditedUnit())
