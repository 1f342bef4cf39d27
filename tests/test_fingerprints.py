"""Code fingerprints mean what they say (issue 28 section 2).

* A unit's fingerprint covers **exactly** the ``genbounds`` files its code executes: a tiny unit
  of every kind (task, family, study, dataset...) of every registered experiment, at both
  scales, runs under :func:`sys.setprofile`; every ``genbounds`` file in which a function ran
  must be in the experiment's declared modules (``Experiment.code``, from
  :mod:`genbounds.experiments.code_files`), and every declared file must have run (or be listed
  in :data:`~genbounds.experiments.code_files.NOT_TRACED_HERE` with the reason). Not counted:
  module bodies (they run at import, before the unit; a constant read from a module whose
  functions never run is therefore not seen, the one blind spot of this check), the results
  store (it records numbers, it does not make them) and the top-level ``__init__``.
* The fingerprint ignores what cannot change a number: comments, docstrings, formatting.
* An old (byte-fingerprinted) record migrates only when its own commit reproduces its recorded
  fingerprint and the declared files are, under the new scheme, the same at that commit as now.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import genbounds
from genbounds.experiments.code_files import NOT_TRACED_HERE
from genbounds.experiments.probe import probe_units
from genbounds.experiments.registry import Experiment, registered_experiments
from genbounds.results import provenance as prov

PKG = Path(genbounds.__file__).resolve().parent
REPO = PKG.parents[1]

#: Files never counted as executed by a unit (module docstring).
NOT_COUNTED = ("__init__.py", "results/")


def executed_files(fn: Callable[[], Any]) -> set[str]:
    """The ``genbounds`` files (relative paths) in which a function ran during ``fn()``."""
    found: set[str] = set()
    root = str(PKG) + "/"

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name != "<module>":
            name = frame.f_code.co_filename
            if name.startswith(root):
                found.add(name[len(root):])

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return {f for f in found if not f.startswith(NOT_COUNTED[1]) and f != NOT_COUNTED[0]}


def declared_files(exp: Experiment) -> set[str]:
    return {p.relative_to(PKG).as_posix() for p in prov.module_files(exp.code)}


EXPERIMENTS = {e.name: e for e in registered_experiments()}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_fingerprint_covers_exactly_the_files_a_unit_executes(name: str) -> None:
    exp = EXPERIMENTS[name]
    ran: set[str] = set()
    for small in probe_units(exp):  # one tiny unit per kind, as the study's probe runs them
        ran |= executed_files(lambda small=small: exp.run_unit(small, False))
    declared = declared_files(exp)
    assert ran, f"{name}: no genbounds function ran (the tracer sees nothing)"
    missing = sorted(ran - declared)
    assert not missing, f"{name} executes files its fingerprint does not cover: {missing}"
    extra = sorted(declared - ran - set(NOT_TRACED_HERE.get(name, {})))
    assert not extra, (f"{name}'s fingerprint covers files none of its units executed here "
                       f"(an edit there would mark its results stale for nothing): {extra}")
    # an allowance for a file that did run is stale
    assert not set(NOT_TRACED_HERE.get(name, {})) & ran, NOT_TRACED_HERE.get(name)


def test_the_tracer_sees_what_runs() -> None:
    """The check above fails when a file is left out (the tracer is not blind)."""
    from genbounds import validation

    ran = executed_files(lambda: validation.check_positive(1.0, "x"))
    assert "validation.py" in ran
    assert "validation.py" not in {f for f in ran if f.startswith("results/")}


SOURCE = '''"""Module docstring."""
import math

def f(x):  # a comment
    """Docstring."""
    return math.sqrt(x) * 2
'''


def test_fingerprint_ignores_comments_docstrings_and_formatting(tmp_path: Path,
                                                                monkeypatch: Any) -> None:
    pkg = tmp_path / "genbounds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    target = pkg / "m.py"
    monkeypatch.setattr(prov, "PACKAGE_DIR", pkg)
    target.write_text(SOURCE)
    before = prov.code_fingerprint(["genbounds.m"])
    assert before.startswith(prov.AST_SCHEME + ":")
    same = ('"""Another docstring,\n\nlonger."""\nimport math\n\n\n'
            "def f(x):\n    '''Other words.'''\n    # new comment\n    return (math.sqrt(x)\n"
            "            * 2)\n")
    target.write_text(same)
    assert prov.code_fingerprint(["genbounds.m"]) == before
    target.write_text(SOURCE.replace("    return", "    if x < 0:\n        raise ValueError("
                                     "f'x must be >= 0, got {x}')\n    return"))
    guarded = prov.code_fingerprint(["genbounds.m"])
    assert guarded != before  # a new check is new code
    target.write_text(SOURCE.replace("    return", "    if x < 0:\n        raise ValueError("
                                     "'x: negative')\n    return"))
    assert prov.code_fingerprint(["genbounds.m"]) == guarded  # only its message changed
    ast1_short = prov.code_fingerprint(["genbounds.m"], "ast1")  # ast1 kept the messages
    target.write_text(SOURCE.replace("    return", "    if x < 0:\n        raise ValueError("
                                     "f'x must be >= 0, got {x}')\n    return"))
    assert prov.code_fingerprint(["genbounds.m"], "ast1") != ast1_short
    target.write_text(SOURCE.replace("* 2", "* 3"))  # a number changes
    assert prov.code_fingerprint(["genbounds.m"]) != before
    target.write_text(SOURCE.replace("sqrt(x)", "sqrt(x + 0)"))
    assert prov.code_fingerprint(["genbounds.m"]) != before
    # a function whose body was only a docstring: a body of ``pass``, unlike another function
    target.write_text('def g():\n    """Only a docstring."""\n')
    only_doc = prov.code_fingerprint(["genbounds.m"])
    target.write_text("def g():\n    pass\n")
    assert prov.code_fingerprint(["genbounds.m"]) == only_doc
    target.write_text("def h():\n    pass\n")
    assert prov.code_fingerprint(["genbounds.m"]) != only_doc
    with pytest.raises(ValueError, match="m.py"):
        target.write_text("def broken(:\n")
        prov.code_fingerprint(["genbounds.m"])


def test_old_byte_fingerprints_are_still_read(tmp_path: Path, monkeypatch: Any) -> None:
    pkg = tmp_path / "genbounds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text(SOURCE)
    monkeypatch.setattr(prov, "PACKAGE_DIR", pkg)
    old = prov.legacy_code_fingerprint(["genbounds.m"])
    assert len(old) == 16 and ":" not in old
    assert prov.same_code(old, ("genbounds.m",), ("genbounds.m",))
    (pkg / "m.py").write_text(SOURCE + "# a comment\n")
    # the old scheme saw bytes: a comment made it stale, and it stays so (honestly)
    assert not prov.same_code(old, ("genbounds.m",), ("genbounds.m",))
    new = prov.code_fingerprint(["genbounds.m"])
    assert prov.same_code(new, ("genbounds.m",), ("genbounds.m",))


def _git_ok() -> bool:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                              timeout=10).returncode == 0
    except OSError:
        return False


def _record_at_head(modules: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """HEAD and a provenance record made at HEAD in the byte scheme over ``modules`` (skips
    without git history or when a module's file is missing at HEAD)."""
    if not _git_ok():
        pytest.skip("no git history here (migration reads files at a recorded commit)")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
    at_head = prov.code_fingerprint_at(head, modules, legacy=True)
    if at_head is None:
        pytest.skip(f"a file of {modules} is missing at HEAD")
    return head, {"package_version": "0", "git_commit": head, "git_dirty": False,
                  "code_fingerprint": at_head, "device": "cpu", "wall_time_s": 1.0,
                  "created_utc": "2026-11-26T00:00:00Z", "python": "3",
                  "code_modules": list(modules)}



def test_migration_needs_the_recorded_commit_to_reproduce_the_fingerprint() -> None:
    """On this repository's history: a record made now at HEAD (byte scheme) migrates; the same
    record with a wrong fingerprint, an unknown commit, or a declared file changed since its
    commit, does not."""
    modules = ("genbounds.validation",)
    head, record = _record_at_head(modules)
    at_head = record["code_fingerprint"]
    if at_head != prov.legacy_code_fingerprint(modules):
        pytest.skip("genbounds/validation.py differs from HEAD in this checkout")
    new, why = prov.migrate_record(record, modules)
    assert new is not None, why
    assert new["code_fingerprint"] == prov.code_fingerprint(modules)
    assert new["migrated"]["from_fingerprint"] == at_head
    assert prov.Provenance.from_record(new).is_same_code()
    # the fingerprint is not that of the recorded commit: the code that ran is unknown
    bad, why = prov.migrate_record(dict(record, code_fingerprint="0" * 16), modules)
    assert bad is None and "not that of commit" in why
    bad, why = prov.migrate_record(dict(record, git_commit="f" * 40), modules)
    assert bad is None and "not in this repository" in why
    # dirty tree, the declaration now covers a file the old fingerprint did not, and no
    # commit after the run brackets it (the record is dated after every commit)
    bad, why = prov.migrate_record(dict(record, git_dirty=True,
                                        created_utc="2999-01-01T00:00:00Z"),
                                   modules + ("genbounds.norms",))
    assert bad is None and "dirty" in why
    # the same record made before HEAD: HEAD is a commit after the run, and the file is the same
    if prov.code_fingerprint_at(head, ("genbounds.norms",)) == prov.code_fingerprint(
            ("genbounds.norms",)):
        early = dict(record, git_dirty=True, created_utc="2000-01-01T00:00:00Z")
        first = subprocess.run(["git", "rev-list", "--first-parent", "--reverse", "HEAD"],
                               cwd=REPO, capture_output=True, text=True).stdout.split()[0]
        ok, why = prov.migrate_record(early, modules + ("genbounds.norms",))
        assert (ok is not None) == (prov.code_fingerprint_at(
            first, modules + ("genbounds.norms",)) == prov.code_fingerprint(
            modules + ("genbounds.norms",))), why
    assert prov.migrate_record(new, modules)[0] is None  # already current


def test_a_declared_file_changed_since_the_commit_keeps_the_record_stale(
        monkeypatch: Any) -> None:
    modules = ("genbounds.validation",)
    _, record = _record_at_head(modules)
    real = prov.code_fingerprint
    monkeypatch.setattr(prov, "code_fingerprint", lambda modules=None: "ast1:" + "0" * 16)
    new, why = prov.migrate_record(record, modules)
    monkeypatch.setattr(prov, "code_fingerprint", real)
    assert new is None and "changed since commit" in why


def test_revalidation_compares_within_the_stated_tolerance() -> None:
    from genbounds.results.revalidate import compare_arrays

    old = {"x": np.array([1.0, 2.0, np.nan]), "n": np.array([3, 4])}
    ok, worst = compare_arrays({"x": old["x"] * (1 + 1e-9), "n": old["n"]}, old, 1e-6, 0.0)
    assert ok == [] and 0 < worst < 1e-8
    bad, _ = compare_arrays({"x": old["x"] * (1 + 1e-5), "n": old["n"]}, old, 1e-6, 0.0)
    assert bad and "beyond rtol" in bad[0]
    bad, _ = compare_arrays({"x": old["x"], "n": old["n"] + 1}, old, 1e-6, 0.0)
    assert bad == ["n: differs (compared exactly)"]
    bad, _ = compare_arrays({"x": np.array([1.0, 2.0, 3.0]), "n": old["n"]}, old, 1e-6, 0.0)
    assert bad == ["x: NaN at other places"]
    assert compare_arrays({"n": old["n"]}, old, 1e-6, 0.0)[0] == ["x: no longer computed"]
    # a timing is not a result of the code: never compared
    timed = dict(old, wall_time_s=np.array([3.0]))
    assert compare_arrays(dict(timed, wall_time_s=np.array([9.0])), timed, 1e-6, 0.0)[0] == []
    # nor is a record of where the unit ran (a GPU flag): a unit first computed on a GPU can
    # re-validate on a CPU when every number agrees
    ran = dict(old, device=np.array([1.0, 1.0]))
    assert compare_arrays(dict(ran, device=np.array([0.0, 0.0])), ran, 1e-6, 0.0)[0] == []
    assert compare_arrays(dict(ran, device=np.array([0.0, 0.0]), n=old["n"] + 1), ran, 1e-6,
                          0.0)[0] == ["n: differs (compared exactly)"]
