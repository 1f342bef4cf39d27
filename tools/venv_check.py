"""Check an installed virtual environment against ``requirements.lock`` (``make`` runs it first).

pip checks a wheel's hash only when it downloads and installs it: a package already present in
a reused or cached ``.venv`` is skipped unchecked. So ``make`` does not trust a stamp file;
before every target it runs::

    python3 tools/venv_check.py --venv .venv

which exits 0 only if

1. ``requirements.lock`` pins exactly the versions of ``requirements.txt`` (else exit 2: run
   ``tools/lock.py``);
2. the environment was installed from this very lock and this ``pyproject.toml``: the install
   manifest (``.venv/.lock-manifest.json``, written right after the hash-checked install from
   pip's ``--report``) records their SHA-256;
3. every installed distribution is a locked pin at its locked version, installed from a wheel
   whose SHA-256 (from pip's report) is one of the lock's hashes for it, and every locked pin is
   installed; besides them only pip itself (bundled with Python) and ``genbounds`` (editable,
   from this checkout) may be present;
4. every installed file listed in a distribution's ``RECORD`` still has the SHA-256 and size
   recorded there, and each ``RECORD`` still has the SHA-256 the manifest recorded for it;
5. ``site-packages`` holds no file that no distribution's ``RECORD`` lists (a ``.pth`` file,
   whose ``import`` lines run at every interpreter start, or a module dropped there would
   otherwise pass unseen), and no symbolic link; the one exception is Python's own bytecode
   cache of a listed source (``__pycache__/<name>.<tag>.pyc``), accepted only when it is that
   source compiled by this interpreter (:func:`unexpected_files`).

Otherwise it exits 1 saying what differs, and ``make`` rebuilds ``.venv`` from the lock. The
manifest lives inside ``.venv``: the check catches a stale, reused or edited environment, not an
attacker who rewrites the manifest along with the files.

After an install, ``--write-manifest REPORT`` writes the manifest from pip's report, then checks.
With ``--adopt`` (``make`` passes it), an environment that has no manifest (installed before the
check existed, or restored from an older cache) is compared file by file with the lock's
hash-checked wheels and, if it is their installation, given a manifest instead of being
rebuilt (:func:`adopt`).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import json
import marshal
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import lock  # noqa: E402

MANIFEST = ".lock-manifest.json"
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)"
                   r"((?:\s*\\\n\s+--hash=sha256:[0-9a-f]{64})+)", re.M)
#: Present in the environment without being locked: pip (``python -m venv`` installs the copy
#: bundled with Python) and this project, installed editable.
UNLOCKED = {"pip", "genbounds"}


def parse_lock(path: Path) -> dict[str, tuple[str, set[str]]]:
    """``{canonical name: (version, hashes)}``; ValueError if a line is not part of an entry."""
    text = path.read_text()
    out: dict[str, tuple[str, set[str]]] = {}
    used = 0
    for m in ENTRY.finditer(text):
        hashes = set(re.findall(r"sha256:([0-9a-f]{64})", m.group(3)))
        out[lock._canonical(m.group(1))] = (m.group(2), hashes)
        used += m.group(0).count("\n") + 1
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if used != len(body):
        raise ValueError(f"{path}: has lines that are not 'name==version' + '--hash=sha256:' "
                         f"({len(body) - used} such)")
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if len(found) != 1:
        raise FileNotFoundError(f"{venv}: no single lib/python3*/site-packages")
    return found[0]


def installed(sp: Path) -> dict[str, tuple[str, Path]]:
    """``{canonical name: (version, dist-info directory)}`` of the distributions in ``sp``."""
    out = {}
    for info in sp.glob("*.dist-info"):
        meta = info / "METADATA"
        if not meta.is_file():
            continue
        head = meta.read_text(errors="replace").split("\n\n", 1)[0]
        name = re.search(r"^Name:\s*(\S+)", head, re.M)
        version = re.search(r"^Version:\s*(\S+)", head, re.M)
        if name and version:
            out[lock._canonical(name.group(1))] = (version.group(1), info)
    return out


def _record_problems(sp: Path, info: Path) -> list[str]:
    """Files listed in ``info/RECORD`` whose content differs from the hash recorded there."""
    problems = []
    for line in (info / "RECORD").read_text().splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) != 3 or not parts[1]:
            continue  # RECORD itself, .pyc files and INSTALLER-written files carry no hash
        rel, digest, size = parts
        algo, _, want = digest.partition("=")
        path = (sp / rel).resolve()
        if algo != "sha256":
            problems.append(f"{info.name}: {rel}: unsupported hash {algo!r}")
            continue
        try:
            if size and path.stat().st_size != int(size):
                problems.append(f"{info.name}: {rel}: size differs from RECORD")
                continue
            h = hashlib.sha256(path.read_bytes()).digest()
        except OSError:
            problems.append(f"{info.name}: {rel}: missing")
            continue
        if base64.urlsafe_b64encode(h).rstrip(b"=").decode() != want:
            problems.append(f"{info.name}: {rel}: content differs from RECORD")
    return problems


def _listed(sp: Path, infos: list[Path]) -> set[str]:
    """Every path (normalised, absolute) that the ``RECORD`` of a distribution in ``infos``
    lists, hashed or not (``.pyc`` files and pip's own files carry no hash)."""
    out = set()
    for info in infos:
        try:
            text = (info / "RECORD").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            rel = line.rsplit(",", 2)[0]
            if rel:
                out.add(os.path.normpath(sp / rel))
    return out


def _is_cache_of(path: Path, listed: set[str]) -> bool:
    """Whether ``path`` is ``__pycache__/<name>.<tag>[.opt-N].pyc`` of a listed ``<name>.py``
    and holds exactly that source compiled by this interpreter (same magic number, same code
    object): Python writes such a file when it imports a source pip did not compile."""
    parts = path.name.split(".")
    if path.parent.name != "__pycache__" or parts[-1] != "pyc" or len(parts) not in (3, 4):
        return False
    source = path.parent.parent / f"{parts[0]}.py"
    if os.path.normpath(source) not in listed or parts[1] != sys.implementation.cache_tag:
        return False
    optimize = 0
    if len(parts) == 4:
        if not re.fullmatch(r"opt-[12]", parts[2]):
            return False
        optimize = int(parts[2][4:])
    try:
        data = path.read_bytes()
        if data[:4] != importlib.util.MAGIC_NUMBER or len(data) < 16:
            return False
        code = marshal.loads(data[16:])
        want = compile(source.read_bytes(), str(source), "exec", dont_inherit=True,
                       optimize=optimize)
    except (OSError, ValueError, EOFError, TypeError, SyntaxError):
        return False
    return bool(code == want)


def unexpected_files(sp: Path, infos: list[Path], reported: list[Path] | None = None
                     ) -> list[str]:
    """Files (and symbolic links) in ``sp`` that no ``RECORD`` of ``infos`` lists, except the
    bytecode cache of a listed source that is that source compiled (:func:`_is_cache_of`).
    The dist-info folders in ``reported`` (distributions already named as not locked) are not
    listed file by file.

    A ``.pth`` file among them is named as such: each of its ``import`` lines runs at every
    start of the environment's interpreter."""
    listed = _listed(sp, infos)
    skip = {os.path.normpath(p) for p in reported or ()}
    problems = []
    for dirpath, dirnames, filenames in os.walk(sp, followlinks=False):
        dirnames[:] = [d for d in dirnames if os.path.normpath(Path(dirpath) / d) not in skip]
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(sp).as_posix()
            if path.is_symlink():
                if os.path.normpath(path) not in listed:
                    problems.append(f"site-packages/{rel}: a symbolic link that no RECORD lists")
                if name in dirnames:
                    dirnames.remove(name)
                continue
            if name in dirnames or os.path.normpath(path) in listed:
                continue
            if _is_cache_of(path, listed):
                continue
            what = ("a .pth file (its import lines run at every interpreter start)"
                    if name.endswith(".pth") else "a file")
            problems.append(f"site-packages/{rel}: {what} that no installed distribution's "
                            "RECORD lists")
    return problems


def write_manifest(venv: Path, report: Path, lock_path: Path, pyproject: Path) -> None:
    """The install manifest from pip's ``--report``: the wheel hash of each installed pin and
    the hash of its RECORD, with the hashes of the lock and pyproject it was installed from."""
    data = json.loads(report.read_text())
    sp = site_packages(venv)
    have = installed(sp)
    dists = {}
    for item in data["install"]:
        name = lock._canonical(item["metadata"]["name"])
        sha = item.get("download_info", {}).get("archive_info", {}).get("hashes", {})
        if name not in have or "sha256" not in sha:
            continue
        dists[name] = {"version": item["metadata"]["version"], "wheel_sha256": sha["sha256"],
                       "record_sha256": sha256_file(have[name][1] / "RECORD")}
    manifest = {"lock_sha256": sha256_file(lock_path), "pyproject_sha256": sha256_file(pyproject),
                "dists": dists}
    (venv / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


#: Files pip writes into an installed distribution that are not in its wheel.
PIP_WRITTEN = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def _record(text: str) -> dict[str, str]:
    """``{path: "sha256=..."}`` of the RECORD entries that carry a hash."""
    out = {}
    for line in text.splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[1]:
            out[parts[0]] = parts[1]
    return out


def wheel_problems(wheel: Path, info: Path) -> list[str]:
    """How the distribution installed at ``info`` (its dist-info directory) differs from the
    files of ``wheel`` as the wheel's own RECORD lists them ([] when it is that wheel's
    installation): every file of the wheel installed with its hash, no hashed file that is not
    the wheel's except the scripts pip writes into ``bin/`` and pip's own dist-info files."""
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        records = [n for n in z.namelist() if n.endswith(".dist-info/RECORD") and n.count("/") == 1]
        if len(records) != 1:
            return [f"{wheel.name}: no single .dist-info/RECORD"]
        inside = _record(z.read(records[0]).decode())
    installed = _record((info / "RECORD").read_text())
    # where each file of the wheel lands, relative to site-packages, and its hash (None: a
    # script, whose first line pip rewrites)
    expected: dict[str, str | None] = {}
    headers: dict[str, str] = {}
    for path, digest in inside.items():
        top, _, rest = path.partition("/")
        if not top.endswith(".data"):
            expected[path] = digest
            continue
        kind, _, sub = rest.partition("/")
        if kind in ("purelib", "platlib"):
            expected[sub] = digest
        elif kind == "data":
            expected["../../../" + sub] = digest
        elif kind == "scripts":
            expected["../../../bin/" + sub] = None
        else:  # headers, under include/site/pythonX.Y/<name>/
            headers[sub] = digest
    problems = [f"{info.name}: {path} is not the wheel's" for path, digest in expected.items()
                if digest is not None and installed.get(path) != digest]
    for path, digest in installed.items():
        name = path.rsplit("/", 1)[-1]
        if path in expected or path.startswith("../../../bin/") or (
                path.startswith(info.name + "/") and name in PIP_WRITTEN):
            continue
        if path.startswith("../../../include/") and any(
                path.endswith("/" + h) and digest == d for h, d in headers.items()):
            continue
        problems.append(f"{info.name}: {path} is installed but not in the wheel")
    return problems


def _is_pure(info: Path) -> bool:
    tags = re.findall(r"^Tag:\s*(\S+)", (info / "WHEEL").read_text(errors="replace"), re.M)
    return bool(tags) and all(tag.endswith("-none-any") for tag in tags)


def _download(venv: Path, lock_path: Path, dest: Path, *, pure: bool
              ) -> tuple[dict[str, tuple[Path, str]], list[str]]:
    """The wheels of ``lock_path`` fetched hash-checked by the environment's pip (pure-Python
    ones only with ``pure``): ``{name: (file, sha256)}`` and what went wrong."""
    import subprocess

    cmd = [str(venv / "bin" / "python"), "-m", "pip", "download", "--disable-pip-version-check",
           "--require-hashes", "--no-deps", "--only-binary", ":all:", "--progress-bar", "off",
           "--quiet", "-d", str(dest), "-r", str(lock_path)]
    if pure:
        version = site_packages(venv).parent.name.removeprefix("python")  # e.g. 3.11
        cmd += ["--platform", "any", "--implementation", "cp", "--abi", "none",
                "--python-version", version]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return {}, [f"pip download of the locked wheels failed: "
                    f"{(res.stderr.strip().splitlines() or ['?'])[-1]}"]
    wheels: dict[str, tuple[Path, str]] = {}
    for w in dest.glob("*.whl"):
        parsed = lock.wheel_parts(w.name)
        if parsed is not None:
            wheels[parsed[0]] = (w, sha256_file(w))
    return wheels, []


def _compare(locked: dict[str, tuple[str, set[str]]], have: dict[str, tuple[str, Path]],
             wheels: dict[str, tuple[Path, str]]) -> dict[str, list[str]]:
    """For each locked name: what differs between its installation and its fetched wheel."""
    out: dict[str, list[str]] = {}
    for name, (version, hashes) in sorted(locked.items()):
        if name not in have:
            out[name] = [f"{name}: locked but not installed"]
        elif name not in wheels or wheels[name][1] not in hashes:
            out[name] = [f"{name}: no hash-checked wheel was fetched"]
        elif lock._public(have[name][0]) != version:
            out[name] = [f"{name}: {have[name][0]} installed, lock pins {version}"]
        else:
            out[name] = wheel_problems(wheels[name][0], have[name][1])
    return out


def adopt(venv: Path, lock_path: Path, pyproject: Path) -> list[str]:
    """Write the manifest of an environment installed without one (by an older Makefile, or a
    cache made before it) when every locked distribution in it is, file for file, the
    installation of a wheel whose hash is in the lock: the wheels are fetched by the
    environment's pip with ``--require-hashes`` (from pip's cache when it is warm), each
    hashed again here, and compared with what is installed (:func:`wheel_problems`). Returns
    what differs ([] once adopted); the full :func:`check` runs afterwards."""
    import tempfile

    locked = parse_lock(lock_path)
    sp = site_packages(venv)
    have = installed(sp)
    extra = sorted(set(have) - set(locked) - UNLOCKED)
    if extra:
        return [f"{n}: installed but not in the lock" for n in extra]
    with tempfile.TemporaryDirectory(prefix="venv-adopt-") as tmp:
        wheels, problems = _download(venv, lock_path, Path(tmp) / "first", pure=False)
        found = _compare(locked, have, wheels)
        # pip prefers a compiled wheel to a pure one of the same version; an environment may
        # hold the pure one (both are locked): compare those with the pure wheel as well
        pure = sorted(n for n, p in found.items() if p and _is_pure(have[n][1]))
        if pure:
            text = lock_path.read_text()
            mini = Path(tmp) / "pure.lock"
            mini.write_text("".join(m.group(0) + "\n" for m in ENTRY.finditer(text)
                                    if lock._canonical(m.group(1)) in pure))
            more, more_problems = _download(venv, mini, Path(tmp) / "pure", pure=True)
            problems += more_problems
            found.update({n: p for n, p in _compare(locked, have, more).items() if n in pure})
            wheels.update({n: w for n, w in more.items() if n in pure})
        for found_problems in found.values():
            problems += found_problems
        dists = {name: {"version": have[name][0], "wheel_sha256": wheels[name][1],
                        "record_sha256": sha256_file(have[name][1] / "RECORD")}
                 for name in found if name in wheels}
    if problems:
        return problems
    manifest = {"lock_sha256": sha256_file(lock_path), "pyproject_sha256": sha256_file(pyproject),
                "dists": dists, "adopted": True}
    (venv / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return []


def check(venv: Path, lock_path: Path, pyproject: Path, *, files: bool = True) -> list[str]:
    """What differs between ``venv`` and the lock ([] when nothing does)."""
    if not (venv / "bin" / "python").exists():
        return [f"{venv}: no environment"]
    manifest_path = venv / MANIFEST
    if not manifest_path.is_file():
        return [f"{manifest_path}: missing (not installed by this Makefile's hash-checked step)"]
    try:
        manifest = json.loads(manifest_path.read_text())
        dists = manifest["dists"]
        if manifest["lock_sha256"] != sha256_file(lock_path):
            return [f"{venv} was installed from a different lock than {lock_path}"]
        if manifest["pyproject_sha256"] != sha256_file(pyproject):
            return [f"{venv} was installed with a different {pyproject}"]
    except (ValueError, KeyError, TypeError) as exc:
        return [f"{manifest_path}: unreadable ({exc})"]
    locked = parse_lock(lock_path)
    sp = site_packages(venv)
    have = installed(sp)
    problems = [f"{n}: locked but not installed" for n in sorted(set(locked) - set(have))]
    to_hash, unlocked = [], []
    for name, (version, info) in sorted(have.items()):
        if name in UNLOCKED:  # pip, this project: their files must match their own RECORD
            if files:
                to_hash.append(info)
            continue
        if name not in locked:
            problems.append(f"{name}=={version}: installed but not in the lock")
            unlocked.append(info)
            continue
        want_version, hashes = locked[name]
        entry = dists.get(name, {})
        if lock._public(version) != want_version:
            problems.append(f"{name}: {version} installed, lock pins {want_version}")
        elif entry.get("wheel_sha256") not in hashes:
            problems.append(f"{name}=={version}: installed from a wheel whose hash is not "
                            "in the lock")
        elif entry.get("record_sha256") != sha256_file(info / "RECORD"):
            problems.append(f"{name}: its RECORD changed since the install")
        elif files:
            to_hash.append(info)
    if files:
        with ThreadPoolExecutor(max_workers=4) as pool:
            for found in pool.map(lambda i: _record_problems(sp, i), to_hash):
                problems += found
    problems += unexpected_files(sp, [info for _, info in have.values()], unlocked)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv")
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements.lock")
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument("--write-manifest", type=Path, metavar="REPORT",
                        help="pip's --report of the install: write the manifest, then check")
    parser.add_argument("--adopt", action="store_true",
                        help="an environment without a manifest: compare it file by file with "
                             "the hash-checked wheels of the lock and, if equal, write one")
    parser.add_argument("--no-files", action="store_true",
                        help="skip hashing the installed files (versions and wheels only)")
    args = parser.parse_args(argv)
    try:
        locked = parse_lock(args.lock)
        pinned = {lock._canonical(n): v for n, v in lock.pins(args.requirements)}
    except (OSError, ValueError) as exc:
        print(f"venv_check: {exc}", file=sys.stderr)
        return 2
    if pinned != {n: v for n, (v, _) in locked.items()}:
        diff = sorted(set(pinned.items()) ^ {(n, v) for n, (v, _) in locked.items()})
        print(f"venv_check: {args.lock.name} does not pin what {args.requirements.name} pins "
              f"(run tools/lock.py): {diff[:6]}", file=sys.stderr)
        return 2
    if args.write_manifest:
        write_manifest(args.venv, args.write_manifest, args.lock, args.pyproject)
    elif args.adopt and (args.venv / "bin" / "python").exists() \
            and not (args.venv / MANIFEST).exists():
        print(f"venv_check: {args.venv} has no manifest: comparing it with the locked wheels",
              file=sys.stderr)
        found = adopt(args.venv, args.lock, args.pyproject)
        if found:
            print(f"venv_check: {args.venv} is not the lock's installation:", file=sys.stderr)
            for p in found[:10]:
                print(f"  {p}", file=sys.stderr)
            return 1
    problems = check(args.venv, args.lock, args.pyproject, files=not args.no_files)
    if problems:
        print(f"venv_check: {args.venv} does not match {args.lock.name}:", file=sys.stderr)
        for p in problems[:10]:
            print(f"  {p}", file=sys.stderr)
        if len(problems) > 10:
            print(f"  ... and {len(problems) - 10} more", file=sys.stderr)
        return 1
    print(f"venv_check: {args.venv} matches {args.lock.name} ({len(locked)} pins, "
          f"{'files hashed' if not args.no_files else 'files not hashed'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
