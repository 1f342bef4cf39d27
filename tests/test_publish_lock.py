"""The hash-checked lock of the pure-Python dependencies (``requirements.lock``, issue #17).

Offline: the lock pins the same versions as ``requirements.txt``, every entry carries SHA-256
hashes, and every installed distribution that is one platform-independent wheel is in it.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import lock  # noqa: E402

ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}"
                   r"(?: \\)?\n)+)", re.M)


def locked() -> dict[str, str]:
    text = (ROOT / "requirements.lock").read_text()
    entries = ENTRY.findall(text)
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    n_lines = sum(1 + e[2].count("--hash") for e in entries)
    assert n_lines == len(body), "requirements.lock has lines that are not name==version + hashes"
    return {lock._canonical(n): v for n, v, _ in entries}


def test_lock_matches_the_pins() -> None:
    pins = {lock._canonical(n): v for n, v in lock.pins(ROOT / "requirements.txt")}
    got = locked()
    assert got, "requirements.lock is empty"
    wrong = {n: (v, pins.get(n)) for n, v in got.items() if pins.get(n) != v}
    assert not wrong, f"lock and requirements.txt disagree (lock, requirements): {wrong}"


def test_every_installed_pure_wheel_is_locked() -> None:
    pins = {lock._canonical(n) for n, _ in lock.pins(ROOT / "requirements.txt")}
    got = set(locked())
    missing = []
    for dist in md.distributions():
        name = lock._canonical(dist.metadata["Name"])
        wheel = dist.read_text("WHEEL") or ""
        tags = re.findall(r"^Tag:\s*(\S+)", wheel, re.M)
        if name in pins and tags and all(t.endswith("-none-any") for t in tags) \
                and name not in got:
            missing.append(name)
    assert not missing, f"pure-Python pins not in requirements.lock (run tools/lock.py): {missing}"


def test_lock_text_format() -> None:
    text = lock.lock_text([("b-pkg", "1.0", ["a" * 64, "b" * 64]), ("A", "2", ["c" * 64]),
                           ("binary", "3", [])])
    assert "binary" not in text
    assert text.index("A==2") < text.index("b-pkg==1.0")
    assert ENTRY.findall(text)[1][2].count("--hash") == 2
