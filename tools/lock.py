"""Write ``requirements.lock``: the pure-Python pins of ``requirements.txt`` with their hashes.

``make`` installs the environment in two steps (see the Makefile):

1. ``pip install --require-hashes --no-deps -r requirements.lock``: every pinned package that
   PyPI ships as one platform-independent wheel (``*-none-any.whl``), each checked against the
   SHA-256 recorded here, so a changed or substituted file is refused;
2. ``pip install -r requirements.txt``: the rest, whose wheels are built per platform (torch,
   numpy, scipy...) and so cannot share one hash across machines: pinned by version only. Step 1
   has installed the pure-Python ones already, so step 2 takes nothing else in their place.

Run after any change to ``requirements.txt`` (it reads PyPI's simple index page of each
pinned package, nothing else)::

    .venv/bin/python tools/lock.py            # rewrites requirements.lock
    .venv/bin/python tools/lock.py --check    # exit 1 if requirements.lock is out of date

``tests/test_publish_lock.py`` checks, offline, that the lock covers exactly the pure-Python pins.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)\s*$")
HEADER = """\
# Hash-checked lock of the pure-Python packages pinned in requirements.txt (written by
# tools/lock.py; do not edit). Installed first with `pip install --require-hashes --no-deps`.
"""


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


def pure_wheel_hashes(name: str, version: str, index: str) -> list[str]:
    """SHA-256 of the platform-independent wheels the index has for ``name==version`` (may be
    []), read from its PEP 691 JSON simple page."""
    url = f"{index.rstrip('/')}/{_canonical(name)}/"
    req = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 (a fixed https URL)
        files = json.load(resp)["files"]
    out = []
    for f in files:
        fn = f["filename"]
        if not fn.endswith("-none-any.whl") or f.get("yanked"):
            continue
        parts = fn[:-4].split("-")
        if _canonical(parts[0]) == _canonical(name) and parts[1] == version:
            out.append(f["hashes"]["sha256"])
    return sorted(out)


def lock_text(entries: list[tuple[str, str, list[str]]]) -> str:
    """The lock file: one ``name==version --hash=...`` entry per pure-Python pin."""
    lines = [HEADER]
    for name, version, hashes in sorted(entries, key=lambda e: e[0].lower()):
        if not hashes:
            continue
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
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    wanted = pins(args.requirements)
    with ThreadPoolExecutor(max_workers=8) as pool:
        hashes = list(pool.map(lambda p: pure_wheel_hashes(p[0], p[1], args.index), wanted))
    text = lock_text([(n, v, h) for (n, v), h in zip(wanted, hashes, strict=True)])
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        state = "up to date" if same else "OUT OF DATE: run tools/lock.py"
        print(f"requirements.lock is {state}")
        return 0 if same else 1
    args.out.write_text(text)
    n = sum(1 for h in hashes if h)
    print(f"{args.out}: {n} of {len(wanted)} pins are pure-Python wheels, locked by hash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
