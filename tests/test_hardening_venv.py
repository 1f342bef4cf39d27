"""The environment check lists files in ``site-packages`` that no ``RECORD`` lists (issue #37
item 6): a new ``.pth`` (its ``import`` lines run at every interpreter start), a new module, a
symbolic link, a file added to a locked distribution's dist-info, a bytecode cache that is not
its source compiled. Python's own cache of a listed source is accepted."""

from __future__ import annotations

import importlib.util
import marshal
import py_compile
import sys
from pathlib import Path

import pytest

from tests.test_publish_lock import _fake_venv, venv_check

ROOT = Path(__file__).resolve().parents[1]


def _problems(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    venv, sp, lock_file, pyproject = _fake_venv(tmp_path)
    assert venv_check.check(venv, lock_file, pyproject) == []
    return venv, sp, [str(lock_file), str(pyproject)]


def _check(venv: Path, paths: list[str], files: bool = True) -> list[str]:
    return venv_check.check(venv, Path(paths[0]), Path(paths[1]), files=files)


def test_a_new_pth_file_is_listed(tmp_path) -> None:
    venv, sp, paths = _problems(tmp_path)
    (sp / "zz_hook.pth").write_text("import os; os.system('id')\n")
    found = _check(venv, paths)
    assert found == ["site-packages/zz_hook.pth: a .pth file (its import lines run at every "
                     "interpreter start) that no installed distribution's RECORD lists"]
    assert _check(venv, paths, files=False) == found  # listed even without hashing


def test_a_new_module_a_link_and_a_file_in_a_dist_info_are_listed(tmp_path) -> None:
    venv, sp, paths = _problems(tmp_path)
    (sp / "evil.py").write_text("X = 1\n")
    (sp / "pkg").mkdir()
    (sp / "pkg" / "__init__.py").write_text("")
    (sp / "linked").symlink_to(tmp_path)
    (sp / "gbtoy-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nx = evil\n")
    found = sorted(_check(venv, paths))
    assert [f.split(":")[0] for f in found] == [
        "site-packages/evil.py", "site-packages/gbtoy-1.0.dist-info/entry_points.txt",
        "site-packages/linked", "site-packages/pkg/__init__.py"]
    assert "symbolic link" in found[2]


def test_a_bytecode_cache_is_accepted_only_when_it_is_its_source_compiled(tmp_path) -> None:
    venv, sp, paths = _problems(tmp_path)
    source = sp / "gbtoy.py"
    cache = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(cache), doraise=True)
    assert _check(venv, paths) == []  # Python's own cache of a listed, unchanged source
    data = cache.read_bytes()
    other = compile("import os\nX = 1\n", str(source), "exec", dont_inherit=True)
    cache.write_bytes(data[:16] + marshal.dumps(other))  # same header, other code
    found = _check(venv, paths)
    assert len(found) == 1 and found[0].startswith(
        f"site-packages/{cache.relative_to(sp).as_posix()}: a file")
    cache.unlink()
    stray = cache.with_name("evil." + sys.implementation.cache_tag + ".pyc")  # no source
    py_compile.compile(str(source), cfile=str(stray), doraise=True)
    assert len(_check(venv, paths)) == 1


def test_the_running_environment_has_no_unexpected_file() -> None:
    venv = Path(sys.prefix)
    if not (venv / venv_check.MANIFEST).is_file():
        pytest.skip(f"{venv} was not installed by the Makefile's hash-checked step")
    sp = venv_check.site_packages(venv)
    infos = [info for _, info in venv_check.installed(sp).values()]
    assert venv_check.unexpected_files(sp, infos) == []
