"""What can be wrong with a stored result, as exceptions and records that say how to repair it.

* :class:`StaleResultError`: a stored result does not match the config or code asked for.
* :class:`DamagedResultError` (a :class:`StaleResultError`, so old ``except`` clauses still
  catch it): a stored result cannot be trusted: invalid or truncated JSON, a truncated or altered
  arrays file, one file of the pair missing, a record that does not match its key or the requested
  config. It names the file, says what is wrong, and gives the command that repairs it.
* :class:`Damage`: the same facts as a record, as :func:`genbounds.results.check_store` lists them.
* :func:`report_damage`: what a command-line entry point does with a :class:`DamagedResultError`:
  print its message (no traceback) and return :data:`DAMAGE_EXIT_CODE`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

__all__ = [
    "DAMAGE_EXIT_CODE",
    "Damage",
    "DamagedResultError",
    "StaleResultError",
    "StaleResultWarning",
    "UnsavedResultError",
    "report_damage",
]

DAMAGE_EXIT_CODE = 3
"""Exit status of a command that stopped on (or found) a damaged result; 1 stays for crashes."""

DamageKind = Literal["damaged", "leftover"]


class StaleResultError(RuntimeError):
    """A stored result does not match the config or code it is asked for."""


class StaleResultWarning(UserWarning):
    """A stored result was computed by different package code than the running one."""


@dataclass(frozen=True)
class Damage:
    """One unit of the store that cannot be used as it is.

    ``kind`` is ``"damaged"`` for a committed result that cannot be trusted (the unit must be
    recomputed) and ``"leftover"`` for files of a write that never committed (temporary files, an
    arrays file without its JSON): harmless, never read as a result, cleaned up by the next write
    of that unit or by ``store repair``.
    """

    path: Path
    """The file at fault."""
    problem: str
    """What is wrong, in words."""
    repair: str
    """The command that repairs it."""
    files: tuple[Path, ...] = ()
    """Every file of the unit (moved aside together by :func:`genbounds.results.quarantine`)."""
    kind: DamageKind = "damaged"

    @property
    def paths(self) -> tuple[Path, ...]:
        """The files of the unit, the file at fault first."""
        rest = tuple(p for p in self.files if p != self.path)
        return (self.path, *rest)

    def message(self) -> str:
        """The three facts on three lines: file, problem, repair command."""
        what = "damaged result" if self.kind == "damaged" else "leftover of an interrupted write"
        return f"{what}: {self.path}\n  problem: {self.problem}\n  repair:  {self.repair}"


class UnsavedResultError(ValueError):
    """A unit was computed but its result cannot be stored as it is (an undeclared NaN, a
    string, an unsupported type): nothing is committed, and what was computed is kept under
    :attr:`kept` (``<root>/_unsaved/<UTC time>/<namespace>/<ConfigClass>/<key>.npz``, arrays
    saved as they are, pickle for what numpy cannot save) so that hours of compute are not lost.
    """

    def __init__(self, problem: str, kept: Path | None) -> None:
        self.problem = problem
        self.kept = kept
        where = (f"; the computed result is kept in {kept}" if kept is not None
                 else "; the computed result could not be kept either")
        super().__init__(f"{problem}{where} (nothing was committed to the store)")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problem, self.kept))


class DamagedResultError(StaleResultError):
    """A stored result is damaged; the message says which file, what is wrong and how to repair it.

    Attributes
    ----------
    path:
        The file at fault.
    problem:
        What is wrong, in words.
    repair:
        The exact command that repairs it.
    files:
        Every file of the damaged unit.
    """

    def __init__(
        self, path: Path, problem: str, repair: str, files: tuple[Path, ...] = ()
    ) -> None:
        self.path = Path(path)
        self.problem = problem
        self.repair = repair
        self.files = tuple(files) if files else (self.path,)
        super().__init__(self.damage.message())

    @property
    def damage(self) -> Damage:
        """The same facts as a :class:`Damage` record."""
        return Damage(self.path, self.problem, self.repair, self.files, "damaged")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across processes
        return (type(self), (self.path, self.problem, self.repair, self.files))


def report_damage(
    err: DamagedResultError, *, repair: str | None = None, stream: TextIO | None = None
) -> int:
    """Print ``err`` for a command-line user (no traceback) and return :data:`DAMAGE_EXIT_CODE`.

    ``repair`` replaces the error's repair command, for a caller that knows a better one (the
    ``reproduce`` command knows the experiment and scale). Use as::

        try:
            ...
        except DamagedResultError as err:
            return report_damage(err)
    """
    out = sys.stderr if stream is None else stream
    damage = err.damage
    if repair is not None:
        damage = Damage(damage.path, damage.problem, repair, damage.files, damage.kind)
    print(f"error: {damage.message()}", file=out)
    return DAMAGE_EXIT_CODE
