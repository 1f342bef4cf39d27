"""The hash-checked lock of every dependency (``requirements.lock``, issues #17 and #28 §4) and
the check of an installed environment against it (``tools/venv_check.py``).

Offline: the lock pins exactly what ``requirements.txt`` pins, every entry carries SHA-256
hashes; pip refuses a wheel whose hash is not the locked one; ``venv_check`` refuses an
environment installed from another lock, from a wheel whose hash is not locked, with an edited
file, an unlocked package or a missing one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import lock  # noqa: E402
import venv_check  # noqa: E402

ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}"
                   r"(?: \\)?\n)+)", re.M)


def test_lock_pins_exactly_the_requirements() -> None:
    pins = {lock._canonical(n): v for n, v in lock.pins(ROOT / "requirements.txt")}
    got = {n: v for n, (v, _) in venv_check.parse_lock(ROOT / "requirements.lock").items()}
    assert got, "requirements.lock is empty"
    assert got == pins, (f"lock and requirements.txt disagree (run tools/lock.py): "
                         f"{sorted(set(got.items()) ^ set(pins.items()))[:6]}")


def test_torch_is_locked_with_several_wheels() -> None:
    """torch has a wheel per platform; the Linux ones are the CPU build's (from find-links)."""
    locked = venv_check.parse_lock(ROOT / "requirements.lock")
    assert len(locked["torch"][1]) >= 2


def test_ci_tags() -> None:
    tags = lock.ci_tags()
    for t in ("cp311-cp311-manylinux_2_28_x86_64", "cp311-cp311-manylinux2014_x86_64",
              "py3-none-any", "cp38-abi3-manylinux_2_17_x86_64",
              "py3-none-manylinux_2_5_x86_64"):
        assert t in tags, t
    for t in ("cp312-cp312-manylinux_2_28_x86_64", "cp311-cp311-macosx_14_0_arm64",
              "cp311-cp311-manylinux_2_39_x86_64", "cp311-cp311-manylinux_2_28_aarch64"):
        assert t not in tags, t


def test_wheel_parts() -> None:
    assert lock.wheel_parts("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl") == (
        "torch", "2.13.0+cpu", ["cp311-cp311-manylinux_2_28_x86_64"])
    assert lock.wheel_parts("a_b-1.0-py2.py3-none-any.whl") == (
        "a-b", "1.0", ["py2-none-any", "py3-none-any"])
    assert lock.wheel_parts("x-1.0.tar.gz") is None


def test_a_pin_without_a_wheel_for_the_ci_platform_is_refused() -> None:
    mac = [("numpy-2.4.6-cp311-cp311-macosx_14_0_arm64.whl", "a" * 64)]
    with pytest.raises(ValueError, match="numpy==2.4.6"):
        lock.entries_for([("numpy", "2.4.6")], [mac], [])
    local = [("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "b" * 64)]
    got = lock.entries_for([("torch", "2.13.0")], [mac], local)
    assert got == [("torch", "2.13.0", ["a" * 64, "b" * 64])]
    with pytest.raises(ValueError, match="no wheel hash"):
        lock.lock_text([("binary", "3", [])])


def test_lock_text_format() -> None:
    text = lock.lock_text([("b-pkg", "1.0", ["a" * 64, "b" * 64]), ("A", "2", ["c" * 64])])
    assert text.index("A==2") < text.index("b-pkg==1.0")
    assert ENTRY.findall(text)[1][2].count("--hash") == 2


# ------------------------------------------------------------------ pip refuses a wrong hash
def _wheel(directory: Path, name: str = "gbtoy", version: str = "1.0",
           body: bytes = b"X = 1\n") -> Path:
    """A minimal pure-Python wheel (one module) in ``directory``."""
    def rec(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
            b"=").decode()

    info = f"{name}-{version}.dist-info"
    files = {f"{name}.py": body,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 .encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n"}
    record = "".join(f"{k},{rec(v)},{len(v)}\n" for k, v in files.items()) + f"{info}/RECORD,,\n"
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(f"{info}/RECORD", record)
    return path


def _pip_install(lock_file: Path, links: Path, target: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no machine-wide index, find-links or constraints
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-index",
         "--find-links", str(links), "--require-hashes", "--no-deps", "--only-binary", ":all:",
         "--target", str(target), "-r", str(lock_file)],
        capture_output=True, text=True, timeout=300, env=env)


def test_pip_refuses_a_wheel_whose_hash_is_not_locked(tmp_path) -> None:
    """What the Makefile's install relies on: the same options, a one-byte different wheel."""
    links = tmp_path / "links"
    links.mkdir()
    wheel = _wheel(links)
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    bad = hashlib.sha256(wheel.read_bytes() + b"\0").hexdigest()
    for sha, ok in ((bad, False), (good, True)):
        lock_file = tmp_path / f"{ok}.lock"
        lock_file.write_text(f"gbtoy==1.0 \\\n    --hash=sha256:{sha}\n")
        res = _pip_install(lock_file, links, tmp_path / f"site-{ok}")
        assert (res.returncode == 0) == ok, res.stdout + res.stderr
        if not ok:
            assert "DO NOT MATCH THE HASHES" in res.stdout + res.stderr
            assert not (tmp_path / f"site-{ok}" / "gbtoy.py").exists()


# -------------------------------------------------- venv_check refuses what the lock did not
def _fake_venv(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A venv holding gbtoy 1.0 as pip installs it, its manifest, and the lock it came from."""
    links = tmp_path / "links"
    links.mkdir()
    wheel = _wheel(links)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    venv = tmp_path / "venv"
    sp = venv / "lib" / "python3.11" / "site-packages"
    sp.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").write_text("")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(sp)
    lock_file = tmp_path / "requirements.lock"
    lock_file.write_text(f"gbtoy==1.0 \\\n    --hash=sha256:{sha}\n")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[project]\nname = 'x'\n")
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"install": [{
        "metadata": {"name": "gbtoy", "version": "1.0"},
        "download_info": {"archive_info": {"hashes": {"sha256": sha}}}}]}))
    venv_check.write_manifest(venv, report, lock_file, pyproject)
    return venv, sp, lock_file, pyproject


def test_venv_check_accepts_what_it_installed_and_refuses_every_difference(tmp_path) -> None:
    venv, sp, lock_file, pyproject = _fake_venv(tmp_path)

    def problems() -> list[str]:
        return venv_check.check(venv, lock_file, pyproject)

    assert problems() == []
    # the lock's hash changes (the wrong-hash case of issue #28: a cached venv was trusted)
    text = lock_file.read_text()
    h = re.findall(r"sha256:([0-9a-f]{64})", text)[0]
    lock_file.write_text(text.replace(h, ("0" if h[0] != "0" else "1") + h[1:]))
    assert "installed from a different lock" in problems()[0]
    lock_file.write_text(text)
    assert problems() == []
    # the manifest claims a wheel whose hash is not the locked one
    manifest = json.loads((venv / venv_check.MANIFEST).read_text())
    saved = json.dumps(manifest)
    manifest["dists"]["gbtoy"]["wheel_sha256"] = "0" * 64
    (venv / venv_check.MANIFEST).write_text(json.dumps(manifest))
    assert "whose hash is not in the lock" in problems()[0]
    (venv / venv_check.MANIFEST).write_text(saved)
    # an installed file is edited (same size: the content hash catches it)
    module = sp / "gbtoy.py"
    module.write_bytes(b"X = 2\n")
    assert problems() == ["gbtoy-1.0.dist-info: gbtoy.py: content differs from RECORD"]
    assert venv_check.check(venv, lock_file, pyproject, files=False) == []
    module.write_bytes(b"X = 1\n")
    # a package that is not locked
    extra = sp / "evil-1.0.dist-info"
    extra.mkdir()
    (extra / "METADATA").write_text("Name: evil\nVersion: 1.0\n")
    assert problems() == ["evil==1.0: installed but not in the lock"]
    (extra / "METADATA").unlink()
    extra.rmdir()
    # a locked package that is missing, and no manifest at all
    lock_file.write_text(text + "other==2 \\\n    --hash=sha256:" + "1" * 64 + "\n")
    assert "installed from a different lock" in problems()[0]
    lock_file.write_text(text)
    (venv / venv_check.MANIFEST).unlink()
    assert "missing" in problems()[0]


def test_the_running_environment_matches_the_lock() -> None:
    """On CI the environment was installed by the Makefile: it must pass its own check."""
    venv = Path(sys.prefix)
    if not (venv / venv_check.MANIFEST).is_file():
        pytest.skip(f"{venv} was not installed by the Makefile's hash-checked step")
    assert venv_check.check(venv, ROOT / "requirements.lock", ROOT / "pyproject.toml",
                            files=False) == []


def test_adoption_compares_the_installed_files_with_the_wheel(tmp_path) -> None:
    """An environment made before the manifest existed is kept only if each distribution is,
    file for file, the installation of the hash-checked wheel (tools/venv_check.py --adopt)."""
    venv, sp, lock_file, pyproject = _fake_venv(tmp_path)
    wheel = next((tmp_path / "links").glob("*.whl"))
    info = sp / "gbtoy-1.0.dist-info"
    assert venv_check.wheel_problems(wheel, info) == []
    record = (info / "RECORD").read_text()
    # another file installed in its place, with a RECORD to match
    other = base64.urlsafe_b64encode(hashlib.sha256(b"X = 2\n").digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(re.sub(r"gbtoy.py,sha256=[^,]+,", f"gbtoy.py,sha256={other},",
                                        record))
    assert venv_check.wheel_problems(wheel, info) == [
        "gbtoy-1.0.dist-info: gbtoy.py is not the wheel's"]
    # a file the wheel does not have, with a hash in RECORD
    (info / "RECORD").write_text(record + "evil.py,sha256=" + other + ",6\n")
    assert venv_check.wheel_problems(wheel, info) == [
        "gbtoy-1.0.dist-info: evil.py is installed but not in the wheel"]
    # what pip adds itself is not a difference
    (info / "RECORD").write_text(record + "../../../bin/gbtoy,sha256=" + other + ",6\n"
                                 + "gbtoy-1.0.dist-info/INSTALLER,sha256=" + other + ",4\n")
    assert venv_check.wheel_problems(wheel, info) == []
