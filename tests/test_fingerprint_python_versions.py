"""The code fingerprint does not depend on the Python that computes it (issue 34 section 2).

Python 3.12's ``ast.dump`` adds ``type_params=[]`` to every function and class, 3.13's leaves
out empty lists, and 3.12.0-3.12.1 add empty strings to f-strings: a fingerprint over
``ast.dump`` text marked units computed on a lent GPU (Python 3.12.3) as made by different code.
The fingerprint now writes the tree in one canonical form (Python 3.11's ``ast.dump`` text,
written out by :func:`genbounds.results.provenance.canonical_dump`):

* a fixed source text has a pinned fingerprint, and the canonical form equals 3.11's
  ``ast.dump`` on every file of the package (so no record made under 3.11 changed);
* every other Python on this machine (3.12, 3.13 where installed) gives the same text;
* a record that Python 3.12 fingerprinted in its own form migrates without recomputation when its
  commit reproduces the recorded fingerprint in that form, and not otherwise.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import inspect
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import genbounds
from genbounds.results import provenance as prov

PKG = Path(genbounds.__file__).resolve().parent
REPO = PKG.parents[1]

#: A source that exercises what the Pythons write differently: functions and classes (3.12's
#: type_params), empty lists (3.13), an f-string whose format spec ends in a field (3.12.1),
#: optional fields absent and the literal None.
SOURCE = textwrap.dedent('''
    """Module docstring (dropped)."""
    import os.path as p
    from . import y


    def f(a, b=None, *c, d, **e) -> int:
        """Docstring (dropped)."""
        x: int = None
        if a is None:
            raise ValueError(f"a must be given, got {a!r}")  # message dropped
        return f"{a!r:>{b}} {c}" if a else None


    class C(B, metaclass=M):
        def g(self):
            return [v for v in range(3)] or {}
''')
#: Its fingerprint (the ast2 scheme over the one file ``m.py``), pinned: a change to the
#: canonical form, or a Python that writes it differently, fails here.
PINNED = "ast2:ba48198465345b1f"


def _digest(source: str) -> str:
    return prov._ast_digest([("m.py", source.encode())])


def test_a_fixed_source_has_a_pinned_fingerprint() -> None:
    assert _digest(SOURCE) == PINNED
    # and it still sees what changes a number
    assert _digest(SOURCE.replace("range(3)", "range(4)")) != PINNED
    assert _digest(SOURCE.replace("x: int = None", "x: int = 0")) != PINNED
    # but not comments, docstrings or messages
    assert _digest(SOURCE.replace("(dropped)", "(gone)").replace("must be given",
                                                               "is required")) == PINNED


def test_the_canonical_form_is_what_python_3_11_wrote() -> None:
    """Every file of the package: the canonical text equals 3.11's ``ast.dump`` (so every record
    fingerprinted under 3.11 keeps its fingerprint)."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip("compares with Python 3.11's ast.dump")
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_bytes())
        assert prov.canonical_dump(tree) == ast.dump(
            tree, annotate_fields=True, include_attributes=False), path


def _other_pythons() -> list[str]:
    found = {}
    for name in ("python3.11", "python3.12", "python3.13"):
        candidates = [shutil.which(name), *sorted(glob.glob(
            f"/root/.pyenv/versions/{name[6:]}*/bin/{name}"))]
        for exe in candidates:
            if exe and Path(exe).exists():
                ok = subprocess.run([exe, "-c", "import ast"], capture_output=True)
                if ok.returncode == 0:
                    found[name] = exe
                    break
    return sorted(found.values())


#: The canonical form's code, run by another Python without the package (it needs only ``ast``).
_PARTS = (prov._CONSTANT_FIELDS, prov._joined, prov.canonical_dump, prov._strip_docstrings)


def _script() -> str:
    code = [inspect.getsource(f) for f in _PARTS[1:]]
    return "\n".join([
        "import ast, hashlib, sys, json", "from typing import Any",
        f"_CONSTANT_FIELDS = {set(prov._CONSTANT_FIELDS)!r}", *code,
        textwrap.dedent("""
        out = {}
        for rel, path in json.loads(sys.stdin.read()):
            tree = ast.parse(open(path, 'rb').read()); _strip_docstrings(tree)
            out[rel] = hashlib.sha256(canonical_dump(tree).encode()).hexdigest()
        print(json.dumps(out))
        """)])


@pytest.mark.parametrize("exe", _other_pythons() or ["none"])
def test_every_python_writes_the_same_canonical_text(exe: str, tmp_path: Path) -> None:
    """The fixed source and every file of the package, under each Python 3.11-3.13 installed on
    this machine: the same canonical text as here."""
    if exe == "none":
        pytest.skip("no other Python 3.11-3.13 on this machine")
    (tmp_path / "m.py").write_text(SOURCE)
    files = [("m.py", str(tmp_path / "m.py"))] + [
        (p.relative_to(PKG).as_posix(), str(p)) for p in sorted(PKG.rglob("*.py"))]
    done = subprocess.run([exe, "-c", _script()], input=json.dumps(files), text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    for rel, path in files:
        tree = ast.parse(Path(path).read_bytes())
        prov._strip_docstrings(tree)
        assert theirs[rel] == hashlib.sha256(prov.canonical_dump(tree).encode()).hexdigest(), (
            f"{exe} writes {rel} differently")


def test_the_styles_of_other_pythons_are_what_they_wrote() -> None:
    """The 3.12 and 3.13 styles (used only to check old records) reproduce those Pythons'
    ``ast.dump`` text of the fixed source, where they are installed."""
    checked = 0
    for exe in _other_pythons():
        version = subprocess.run([exe, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True).stdout.strip()
        style = prov.dump_style_of(version)
        if style == "canonical":
            continue
        theirs = subprocess.run(
            [exe, "-c", "import ast,sys; t=ast.parse(sys.stdin.read()); "
             "print(ast.dump(t, annotate_fields=True, include_attributes=False))"],
            input=SOURCE.replace('{b}} {c}', '{b}x} {c}'),  # no f-string-spec quirk of 3.12.1
            text=True, capture_output=True).stdout.strip()
        ours = prov.canonical_dump(ast.parse(SOURCE.replace('{b}} {c}', '{b}x} {c}')), style)
        assert ours == theirs, version
        checked += 1
    if not checked:
        pytest.skip("no Python 3.12 or 3.13 on this machine")


def test_dump_style_of_names_the_argument() -> None:
    assert prov.dump_style_of("3.11.7") == "canonical"
    assert prov.dump_style_of("3.12.3") == "3.12"
    assert prov.dump_style_of("3.13.0") == "3.13"
    with pytest.raises(ValueError, match="python"):
        prov.dump_style_of("three")


def _git_ok() -> bool:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO,
                          capture_output=True).returncode == 0


def test_a_record_fingerprinted_by_python_3_12_migrates_only_when_its_commit_agrees() -> None:
    """A record made at HEAD whose fingerprint is what Python 3.12 wrote migrates (nothing
    recomputed); with another fingerprint, or as a 3.11 record, it stays stale."""
    if not _git_ok():
        pytest.skip("no git history here (migration reads files at a recorded commit)")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
    modules = ("genbounds.validation",)
    if prov.code_fingerprint_at(head, modules) != prov.code_fingerprint(modules):
        pytest.skip("genbounds/validation.py differs from HEAD in this checkout")
    as_312 = prov.code_fingerprint_at(head, modules, style="3.12")
    assert as_312 is not None and as_312 != prov.code_fingerprint(modules)
    record: dict[str, Any] = {
        "package_version": "0", "git_commit": head, "git_dirty": False,
        "code_fingerprint": as_312, "device": "cuda", "wall_time_s": 1.0,
        "created_utc": "2026-11-28T00:00:00Z", "python": "3.12.3",
        "code_modules": list(modules)}
    assert not prov.Provenance.from_record(record).is_same_code()
    new, why = prov.migrate_record(record, modules)
    assert new is not None, why
    assert new["code_fingerprint"] == prov.code_fingerprint(modules)
    assert "Python 3.12.3" in new["migrated"]["method"]
    assert prov.Provenance.from_record(new).is_same_code()
    bad, why = prov.migrate_record(dict(record, code_fingerprint="ast2:" + "0" * 16), modules)
    assert bad is None and "not that of commit" in why
    bad, why = prov.migrate_record(dict(record, python="3.11.7"), modules)
    assert bad is None and "code changed" in why
    assert prov.migrate_record(new, modules)[0] is None  # current already
