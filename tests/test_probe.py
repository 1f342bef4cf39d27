"""Changes that keep behaviour keep their results; changes that change a number are caught
(issue 36 section 1).

A paper-scale unit records its study's probe (:mod:`genbounds.experiments.probe`); when the
study's code is edited, ``revalidate`` reruns the probe and carries the unit over to the edited
code only when the probe's outputs are unchanged. Both directions are tested on a real study
(the rates study of chapter 04, whose probe runs in seconds): an edit that changes no number
(the fingerprint changes, the code behaves the same) keeps the units, marked "equivalent code
(probe)"; a changed constant in the training path (the learning rate scaled by 1 + 1e-6 inside
the Adam step) keeps them stale.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from genbounds.experiments import probe as probe_module
from genbounds.experiments import registry
from genbounds.experiments.probe import probe_units, run_probe, same_probe, summarize
from genbounds.results import ResultStore
from genbounds.results import provenance as prov
from genbounds.results.revalidate import migrate_units
from genbounds.train import step as step_module


@pytest.fixture(scope="module")
def exp() -> Any:
    """Chapter 04's teacher-student study: its probe (every kind of unit, tiny) takes seconds."""
    return registry.get_experiment("offset_rademacher")


@pytest.fixture(scope="module")
def recorded(exp: Any) -> dict[str, Any]:
    return run_probe(exp)


def _nudge_adam(monkeypatch: Any) -> None:
    """A changed constant in the training path: Adam's learning rate times 1 + 1e-6 (the
    study trains with Adam)."""
    real = step_module.adam_step

    def nudged(p: Any, m: Any, v: Any, g: Any, idx_t: Any, lr: float, cfg: Any,
               t: int) -> None:
        real(p, m, v, g, idx_t, lr * (1 + 1e-6), cfg, t)

    monkeypatch.setattr(step_module, "adam_step", nudged)


def test_the_probe_is_deterministic(exp: Any, recorded: dict[str, Any]) -> None:
    again = run_probe(exp)
    equal, how = same_probe(recorded, again)
    assert equal and "bitwise" in how, how
    assert len(recorded["units"]) == len(probe_units(exp)) >= 2  # every kind of unit
    assert all("cpu" in u for u in recorded["units"])


def test_a_changed_constant_in_the_training_path_changes_the_probe(
        exp: Any, recorded: dict[str, Any], monkeypatch: Any) -> None:
    _nudge_adam(monkeypatch)
    equal, how = same_probe(recorded, run_probe(exp))
    assert not equal, "a learning rate changed by 1e-6 went unnoticed"
    assert "recorded" in how and "now" in how


def test_same_probe_compares_bitwise_on_one_class_and_within_tolerance_across(
        recorded: dict[str, Any]) -> None:
    name = next(k for k, v in recorded["values"].items()
                if not isinstance(v, str) and v[0] != 0)
    moved = json.loads(json.dumps(recorded))
    moved["values"][name][0] *= 1 + 1e-12
    assert not same_probe(recorded, moved)[0]  # same CPU class: bitwise
    other = dict(moved, cpu_class_key="another class")
    equal, how = same_probe(recorded, other)
    assert equal and "another CPU class" in how
    far = json.loads(json.dumps(other))
    far["values"][name][0] *= 1 + 1e-6
    assert not same_probe(recorded, far)[0]
    assert not same_probe(recorded, dict(recorded, units=["other"]))[0]
    assert not same_probe(recorded, {"values": {}})[0]


def test_summarize_sees_values_order_and_text() -> None:
    a = summarize(np.array([1.0, 2.0, np.nan]))
    assert a[-1] == 1.0 and a[0] == 3.0
    assert summarize(np.array([1.0, 2.0])) != summarize(np.array([2.0, 1.0]))
    assert summarize(np.array(["a", "b"])) != summarize(np.array(["a", "c"]))


def _stored_paper_unit(exp: Any, tmp_path: Any, probe: dict[str, Any]) -> tuple[Any, Any]:
    """One real unit of ``exp`` (tiny) stored at paper scale with ``probe`` recorded."""
    unit = probe_units(exp)[0]
    store = ResultStore(tmp_path, "paper")
    with prov.recorded_probe(probe):
        store.run(unit, lambda u: exp.run_unit(u, False), code_modules=exp.code)
    return unit, store


def _one_unit(exp: Any, unit: Any) -> Any:
    import dataclasses

    return dataclasses.replace(exp, units=lambda cfg: [unit], config=lambda scale: None)


def test_an_edit_that_changes_no_number_keeps_the_units(exp: Any, recorded: dict[str, Any],
                                                        tmp_path: Any,
                                                        monkeypatch: Any) -> None:
    unit, store = _stored_paper_unit(exp, tmp_path, recorded)
    one = _one_unit(exp, unit)
    record = json.loads(store.unit(unit).json.read_text())
    assert record["provenance"]["probe"]["values"] == recorded["values"]
    # the edit: every file of the study gets another fingerprint, the code behaves the same
    real = prov.code_fingerprint
    monkeypatch.setattr(prov, "code_fingerprint",
                        lambda modules=None, scheme=prov.AST_SCHEME: "ast2:" + "e" * 16)
    import genbounds.results.revalidate as reval

    monkeypatch.setattr(reval, "code_fingerprint", prov.code_fingerprint)
    rows = migrate_units(one, "paper", store, probe=(lambda: run_probe(exp), same_probe))
    ((key, why, current),) = rows
    assert current and why.startswith("equivalent code (probe)"), why
    after = json.loads(store.unit(unit).json.read_text())["provenance"]
    assert after["code_fingerprint"] == "ast2:" + "e" * 16
    assert after["migrated"]["method"].startswith("equivalent code (probe)")
    assert after["migrated"]["from_fingerprint"] == record["provenance"]["code_fingerprint"]
    monkeypatch.setattr(prov, "code_fingerprint", real)


def test_a_changed_constant_keeps_the_units_stale(exp: Any, recorded: dict[str, Any],
                                                   tmp_path: Any, monkeypatch: Any) -> None:
    unit, store = _stored_paper_unit(exp, tmp_path, recorded)
    one = _one_unit(exp, unit)
    before = store.unit(unit).json.read_bytes()
    monkeypatch.setattr(prov, "code_fingerprint",
                        lambda modules=None, scheme=prov.AST_SCHEME: "ast2:" + "c" * 16)
    _nudge_adam(monkeypatch)
    ((key, why, current),) = migrate_units(one, "paper", store,
                                           probe=(lambda: run_probe(exp), same_probe))
    assert not current and "the probe differs" in why, why
    assert store.unit(unit).json.read_bytes() == before  # nothing written


def test_a_unit_stored_at_paper_scale_records_its_probe(tmp_path: Any, monkeypatch: Any) -> None:
    """Through the sweep (not only by hand): the record keeps the probe of the code that ran."""
    exp = registry.get_experiment("offset_rademacher")
    unit = probe_units(exp)[0]
    one = _one_unit(exp, unit)
    calls: list[str] = []
    monkeypatch.setattr(registry, "probe_of",
                        lambda e: calls.append(e.name) or {"values": {"x": [1.0]}, "units": [],
                                                           "cpu_class_key": "k"})
    registry.reproduce(one, "paper", store=ResultStore(tmp_path, "paper"))
    record = json.loads(ResultStore(tmp_path, "paper").unit(unit).json.read_text())
    assert record["provenance"]["probe"] == {"values": {"x": [1.0]}, "units": [],
                                             "cpu_class_key": "k"}
    assert calls == ["offset_rademacher"]
    registry.reproduce(one, "quick", store=ResultStore(tmp_path, "quick"))
    quick = json.loads(ResultStore(tmp_path, "quick").unit(unit).json.read_text())
    assert quick["provenance"]["probe"] is None and calls == ["offset_rademacher"]
    assert probe_module.PROBE_RTOL == 1e-9


def test_the_command_line_revalidates_through_the_experiments_layer(tmp_path: Any,
                                                                   capsys: Any) -> None:
    from genbounds import cli

    assert cli.main(["revalidate", "--scale", "paper", "--only", "offset_rademacher",
                     "--dry-run", "--results-dir", str(tmp_path)]) == 0
    assert "[offset_rademacher] 0 of 0 stored units current" in capsys.readouterr().out
    assert cli.main(["revalidate", "--recompute", "--only", "offset_rademacher",
                     "--results-dir", str(tmp_path)]) == 2
    assert "--match" in capsys.readouterr().err


def test_the_revalidate_options_are_checked_by_name(tmp_path: Any, capsys: Any) -> None:
    from genbounds import cli

    for argv, name in ((["--results-dir", ""], "results"), (["--rtol", "nan"], "--rtol"),
                       (["--atol-frac", "2"], "--atol-frac"), (["--rtol", "x"], "--rtol")):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["revalidate", "--dry-run", *argv])
        assert exit_.value.code == 2
        assert name in capsys.readouterr().err


def test_records_of_where_a_unit_ran_are_not_part_of_the_probe() -> None:
    """The sparse-majority protocol's ``segments`` name the commit that ran: a probe that
    hashed them would differ at every commit."""
    record = run_probe(registry.get_experiment("sparse_majority"))
    assert not any("segments" in name for name in record["values"])


def test_a_unit_whose_fields_moved_is_the_same_probe_unit(recorded: dict[str, Any]) -> None:
    """Fields moved into a base class change a dataclass's repr (their order), not the unit;
    another value, another field or another class is another unit."""
    reordered = dict(recorded, units=["Unit(b=(1, 2), a='x', c=0.5)"])
    original = dict(recorded, units=["Unit(a='x', c=0.5, b=(1, 2))"])
    assert same_probe(original, reordered)[0]
    for other in ("Unit(a='x', c=0.25, b=(1, 2))", "Unit(a='x', c=0.5, b=(1, 2), d=1)",
                  "Other(a='x', c=0.5, b=(1, 2))", "not a call ("):
        assert not same_probe(original, dict(recorded, units=[other]))[0], other


def test_a_field_added_at_its_old_value_is_the_same_probe_unit(
        recorded: dict[str, Any]) -> None:
    """A field added with OMIT_FROM_KEY (the value every earlier unit had implicitly) is absent
    from a probe recorded before it existed: still the same unit; at another value, or a field
    not declared so, it is another unit."""
    before = dict(recorded, units=["Unit(a='x', c=0.5)"])
    now = dict(recorded, units=["Unit(a='x', c=0.5, digits=(0, 1))"],
               omitted=[[["digits", "(0, 1)"]]])
    assert same_probe(before, now)[0]
    assert not same_probe(before, dict(now, units=["Unit(a='x', c=0.5, digits=(6, 7))"]))[0]
    assert not same_probe(before, dict(now, omitted=[[]]))[0]
    assert not same_probe(before, dict(now, units=["Unit(a='y', c=0.5, digits=(0, 1))"]))[0]
