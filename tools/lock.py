"""Write ``requirements.lock``: every pin of ``requirements.txt`` with the SHA-256 of its wheels.

``make`` installs the whole environment from this file in one hash-checked step (see the
Makefile)::

    pip install --require-hashes --no-deps --only-binary :all: -r requirements.lock

so every wheel it installs, platform-specific ones (torch, numpy, scipy...) included, is checked
against a hash recorded here and a changed or substituted file is refused. Each entry lists the
hashes of *all* the wheels of the pinned version (one per platform and Python version, as PyPI
publishes them), so one lock serves every platform; the lock is refused unless every pin has a
wheel for the CI platform (:data:`CI_PLATFORM`: Linux x86-64, CPython 3.11, glibc 2.36 of
Debian 12).

torch is the exception: PyPI's Linux wheels of torch are CUDA builds that need a dozen
unpinned ``nvidia-*`` packages, so they are left out, and torch's Linux wheels come from the
CPU build instead, read from ``--find-links`` sources: a directory of wheels (hashed here) or a
PEP 503 page such as ``https://download.pytorch.org/whl/cpu/torch/`` (hashes from its links).
The default source is pip's own ``find-links`` setting (``PIP_FIND_LINKS`` / ``pip config``).

Run after any change to ``requirements.txt`` (it reads PyPI's simple index page of each
pinned package and the ``--find-links`` sources, nothing else)::

    .venv/bin/python tools/lock.py            # rewrites requirements.lock
    .venv/bin/python tools/lock.py --check    # exit 1 if requirements.lock is out of date

``tools/venv_check.py`` checks an installed ``.venv`` against the lock (``make`` runs it before
every target); ``tests/test_publish_lock.py`` checks, offline, that the lock pins exactly what
``requirements.txt`` pins and covers the CI platform.
"""

from __future__ import annotations

import argparse
import hashlib
import html.parser
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)\s*$")
HEADER = """\
# Hash-checked lock of every pin in requirements.txt: the SHA-256 of each wheel of the pinned
# version (written by tools/lock.py; do not edit). make installs it in one step with
# `pip install --require-hashes --no-deps --only-binary :all: -r requirements.lock`.
# torch: PyPI's wheels except its Linux (CUDA) builds, plus the CPU build's Linux wheels.
"""
#: The CI platform, for which every pin must have a wheel: Debian 12 on x86-64 (glibc 2.36),
#: CPython 3.11. ``(python_version, glibc (major, minor), machine)``.
CI_PLATFORM = ((3, 11), (2, 36), "x86_64")
#: Packages whose PyPI Linux wheels are CUDA builds: their Linux wheels come from --find-links.
CPU_FROM_FIND_LINKS = {"torch"}


def pins(requirements: Path) -> list[tuple[str, str]]:
    """``(name, version)`` of every ``name==version`` line (comments and blanks skipped)."""
    out = []
    for n, line in enumerate(requirements.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = PIN.match(line)
        if m is None:
            raise ValueError(f"requirements: line {n} is not a 'name==version' pin: {line!r}")
        out.append((m.group(1), m.group(2)))
    return out


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _public(version: str) -> str:
    """The public part of a version (``2.13.0+cpu`` -> ``2.13.0``), which ``==2.13.0`` matches."""
    return version.split("+", 1)[0]


def wheel_parts(filename: str) -> tuple[str, str, list[str]] | None:
    """``(canonical name, version, tags)`` of a wheel file name, or None if it is not a wheel.

    Tags are ``python-abi-platform`` triples, compressed tag sets expanded."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[:-4].split("-")
    if len(parts) not in (5, 6):
        return None
    name, version = parts[0], parts[1]
    py, abi, plat = parts[-3:]
    tags = [f"{p}-{a}-{q}" for p in py.split(".") for a in abi.split(".") for q in plat.split(".")]
    return _canonical(name), version, tags


def ci_tags() -> set[str]:
    """Every wheel tag a CPython 3.11 on Linux x86-64 with glibc 2.36 installs (pip's order
    does not matter here, only membership)."""
    (major, minor), (g_major, g_minor), arch = CI_PLATFORM
    plats = [f"manylinux_{g_major}_{m}_{arch}" for m in range(5, g_minor + 1)]
    plats += [f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}",
              f"linux_{arch}"]
    cp = f"cp{major}{minor}"
    tags = {f"{cp}-{cp}-{p}" for p in plats} | {f"{cp}-none-{p}" for p in plats}
    tags |= {f"cp{major}{m}-abi3-{p}" for m in range(2, minor + 1) for p in plats}
    pys = [cp, f"py{major}{minor}", f"py{major}"] + [f"py{major}{m}" for m in range(minor)]
    tags |= {f"{py}-none-{p}" for py in pys for p in [*plats, "any"]}
    return tags


def is_linux(tag: str) -> bool:
    return "linux" in tag.rsplit("-", 1)[-1]


def index_wheels(name: str, version: str, index: str) -> list[tuple[str, str]]:
    """``(filename, sha256)`` of every non-yanked wheel of ``name==version`` on the index, read
    from its PEP 691 JSON simple page (torch: without its Linux builds)."""
    url = f"{index.rstrip('/')}/{_canonical(name)}/"
    req = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 (a fixed https URL)
        files = json.load(resp)["files"]
    out = []
    for f in files:
        parsed = wheel_parts(f["filename"])
        if parsed is None or f.get("yanked") or "sha256" not in f.get("hashes", {}):
            continue
        wname, wversion, tags = parsed
        if wname != _canonical(name) or wversion != version:
            continue
        if wname in CPU_FROM_FIND_LINKS and all(is_linux(t) for t in tags):
            continue
        out.append((f["filename"], f["hashes"]["sha256"]))
    return out


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def find_links_wheels(source: str) -> list[tuple[str, str]]:
    """``(filename, sha256)`` of the wheels in a find-links source: a directory (each file
    hashed) or an HTML page whose links carry ``#sha256=`` (links without one are skipped)."""
    if "://" not in source or source.startswith("file://"):
        path = Path(urllib.parse.urlparse(source).path if "://" in source else source)
        if not path.is_dir():
            raise ValueError(f"--find-links: {source!r} is not a directory")
        out = []
        for f in sorted(path.glob("*.whl")):
            h = hashlib.sha256()
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            out.append((f.name, h.hexdigest()))
        return out
    with urllib.request.urlopen(source, timeout=60) as resp:  # noqa: S310 (given by the user)
        parser = _Links()
        parser.feed(resp.read().decode())
    out = []
    for href in parser.hrefs:
        url, _, frag = href.partition("#")
        fname = urllib.parse.unquote(url.rsplit("/", 1)[-1])
        if frag.startswith("sha256=") and fname.endswith(".whl"):
            out.append((fname, frag[len("sha256="):]))
    return out


def pip_find_links() -> list[str]:
    """pip's configured ``find-links`` (environment first, then ``pip config``)."""
    value = os.environ.get("PIP_FIND_LINKS", "")
    if not value:
        try:
            value = subprocess.run(
                [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
                capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            value = ""
    return value.split()


def entries_for(wanted: list[tuple[str, str]], index_files: list[list[tuple[str, str]]],
                local: list[tuple[str, str]]) -> list[tuple[str, str, list[str]]]:
    """Each pin with the sorted hashes of its wheels (index + matching find-links wheels);
    ValueError naming the pins that have no wheel for the CI platform."""
    ci = ci_tags()
    entries, missing = [], []
    for (name, version), files in zip(wanted, index_files, strict=True):
        chosen = list(files)
        for fname, sha in local:
            parsed = wheel_parts(fname)
            if parsed and parsed[0] == _canonical(name) and _public(parsed[1]) == version:
                chosen.append((fname, sha))
        if not any(set(wheel_parts(f)[2]) & ci for f, _ in chosen):  # type: ignore[index]
            missing.append(f"{name}=={version}")
        entries.append((name, version, sorted({sha for _, sha in chosen})))
    if missing:
        raise ValueError(
            "no wheel for the CI platform (CPython 3.11, Linux x86-64) of: " + ", ".join(missing)
            + " (torch: pass --find-links with its CPU wheel, a directory or "
              "https://download.pytorch.org/whl/cpu/torch/)")
    return entries


def lock_text(entries: list[tuple[str, str, list[str]]]) -> str:
    """The lock file: one ``name==version --hash=...`` entry per pin (pins without hashes are
    an error: every pin must be installed hash-checked)."""
    lines = [HEADER]
    for name, version, hashes in sorted(entries, key=lambda e: _canonical(e[0])):
        if not hashes:
            raise ValueError(f"{name}=={version}: no wheel hash to lock")
        cont = " \\"
        lines.append(f"{name}=={version}{cont}\n")
        lines += [f"    --hash=sha256:{h}{cont if i < len(hashes) - 1 else ''}\n"
                  for i, h in enumerate(hashes)]
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--out", type=Path, default=ROOT / "requirements.lock")
    parser.add_argument("--index", default="https://pypi.org/simple")
    parser.add_argument("--find-links", action="append", default=None,
                        help="a directory or PEP 503 page with torch's CPU wheels (repeatable; "
                             "default: pip's find-links setting)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    wanted = pins(args.requirements)
    sources = args.find_links if args.find_links is not None else pip_find_links()
    local = [w for s in sources for w in find_links_wheels(s)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        files = list(pool.map(lambda p: index_wheels(p[0], p[1], args.index), wanted))
    try:
        text = lock_text(entries_for(wanted, files, local))
    except ValueError as exc:
        print(f"tools/lock.py: {exc}", file=sys.stderr)
        return 2
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        state = "up to date" if same else "OUT OF DATE: run tools/lock.py"
        print(f"requirements.lock is {state}")
        return 0 if same else 1
    args.out.write_text(text)
    n = sum(text.count("--hash=") for _ in [0])
    print(f"{args.out}: {len(wanted)} pins, {n} wheel hashes "
          f"(find-links: {', '.join(sources) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
