"""``python -m genbounds store check|repair``: verify a results store and move damage aside."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from genbounds.results.errors import DAMAGE_EXIT_CODE
from genbounds.results.files import default_results_dir
from genbounds.results.repair import (
    checkpoints_in_progress,
    default_repair_command,
    repair_store,
    scan_with_committed,
)
from genbounds.scale import SCALES

__all__ = ["directory_path", "store_main"]


def directory_path(text: str) -> Path:
    """An argument that names a directory: a non-empty path without NUL bytes (an empty path
    would be the current directory, which no one means by it)."""
    if not text:
        raise argparse.ArgumentTypeError("must be a directory's path, got '' (an empty path "
                                         "is not \"here\"; write . for this directory)")
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"must be a directory's path, got {text!r}")
    return Path(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m genbounds store",
        description="Verify every stored result (check) or move damaged ones aside (repair).",
        epilog=f"Exit status: 0 when every result is sound, {DAMAGE_EXIT_CODE} when damage "
               "is found (check) or remains (repair), 2 for bad arguments.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("check", "verify every stored result and list the damaged ones and leftovers"),
        ("repair", "move damaged results and leftovers to <root>/_damaged/<UTC time>/ (never "
                   "deletes); the next run of the experiment recomputes them"),
    ):
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--root", type=directory_path, default=None,
                       help="the store's directory (default: the book's results/, or "
                            "$GENBOUNDS_RESULTS_DIR); a directory that is not a results store "
                            "(no .genbounds-store marker) is refused")
        p.add_argument("--scale", default=None, choices=SCALES,
                       help="only this scale's namespace; default: all")
    return parser


def _table(root: Path, rows: list[tuple[str, str, str]]) -> str:
    width = max(len(r[1]) for r in rows)
    lines = [f"{'status':<9} {'file':<{width}}  problem"]
    lines += [f"{s:<9} {f:<{width}}  {p}" for s, f, p in rows]
    return "\n".join(lines)


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def store_main(argv: list[str] | None = None) -> int:
    """Entry point of the ``store`` subcommand; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        root: Path = args.root if args.root is not None else default_results_dir()
    except ValueError as err:  # an empty $GENBOUNDS_RESULTS_DIR
        print(f"error: {err}", file=sys.stderr)
        return 2
    where = f"store {root}" + (f" (scale {args.scale})" if args.scale else "")
    try:
        if args.command == "repair":
            for repair in repair_store(root, args.scale):
                if repair.action == "completed":
                    print(f"completed {_rel(root, repair.damage.path)}: a recompute stopped "
                          f"between its two renames; its new record {repair.moved_to.name} "
                          "is now in place")
                    continue
                print(f"moved {repair.damage.kind} {_rel(root, repair.damage.path)} "
                      f"({repair.damage.problem}) -> {repair.moved_to}")
        n_units, found, committed = scan_with_committed(root, args.scale)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a repair that cannot move (read-only store, permissions)
        print(f"error: {where}: {err}", file=sys.stderr)
        return DAMAGE_EXIT_CODE
    damaged = [d for d in found if d.kind == "damaged"]
    leftovers = [d for d in found if d.kind == "leftover"]
    print(f"{where}: {n_units} unit(s) checked, {n_units - len(found)} sound, "
          f"{len(damaged)} damaged, {len(leftovers)} with leftovers of interrupted writes")
    for folder, n in committed.items():
        print(f"committed, not results (never moved by a repair): {folder}/ ({n} file(s))")
    busy = checkpoints_in_progress(root, args.scale)
    if busy:
        print(f"in progress (a time budget stopped them; `python -m genbounds reproduce` "
              f"resumes them): {len(busy)} unit(s)")
        for path in busy:
            print(f"  {_rel(root, path)}")
    if found:
        print(_table(root, [(d.kind, _rel(root, d.path), d.problem) for d in found]))
        print(f"repair: {default_repair_command(root, args.scale)} (entries tracked by git "
              "that are not a unit's files are never moved: remove them with git)")
    return DAMAGE_EXIT_CODE if damaged else 0
