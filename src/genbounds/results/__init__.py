"""Stored experiment results: config keys, atomic writes, provenance, resumable sweeps, repair.

An experiment is a function of a *frozen dataclass* config. Its results are kept under
``<root>/<namespace>/<ConfigClass>/<key>.{json,npz}`` where ``key`` hashes the config together
with the config class's ``PROTOCOL_VERSION`` (``namespace`` is the scale, ``quick`` or
``paper``):

* ``<key>.npz`` holds the arrays (``numpy.savez``, never pickle);
* ``<key>.json`` holds the config, the scalars, the provenance, the SHA-256 of the ``.npz`` and
  of the record itself. It is written last, atomically (temporary file, ``fsync``,
  :func:`os.replace`): a result exists exactly when its JSON exists, so a sweep killed at any
  instant (SIGKILL included) leaves complete results and, at most, leftovers that are never read
  as results and are cleaned by the next write of that unit; :func:`run_sweep` resumes where it
  stopped.

What the store guarantees, and where (see :mod:`genbounds.results.files` for the mechanics):

* **Nothing damaged is used.** A truncated or invalid JSON, a truncated or altered NPZ, one file
  of a pair missing, a record stored under another key or for another config or protocol version
  raises :class:`DamagedResultError` (a :class:`StaleResultError`) naming the file, the problem
  and the repair command; :func:`report_damage` prints it for a command-line user without a
  traceback. :func:`check_store` lists every damaged unit; :func:`quarantine` and
  :func:`repair_store` move damaged files to ``<root>/_damaged/<UTC timestamp>/`` (never
  deleting them); ``ResultStore.run(..., recompute_damaged=True)`` does that and recomputes.
* **Concurrent writers are safe.** Each unit has a lock (:mod:`filelock`, ``flock(2)``) held
  from the decision to compute until the result is committed: processes filling one store never
  leave a torn or mixed pair, and two asking for the same unit compute it once.
* **Nothing stale is shown silently.** A result made by different code (its *code fingerprint*
  over the modules the experiment runs, :func:`code_fingerprint`, differs) is recomputed,
  reported with a :class:`StaleResultWarning` (and ``stale=True``), or refused, as the caller
  chooses; by default recomputed at quick scale and kept with a warning at paper scale, where a
  result recomputed over is moved to ``<root>/_replaced/`` first, never overwritten.
* **Nothing outside the store is touched.** Every file is checked to be a regular file inside
  the store before it is opened (a FIFO is never opened, a symbolic link out of the root never
  followed); a stray name, a file where a directory belongs, a missing record checksum, an
  unreadable file are damage like any other. Files get ``0o666`` less the umask.
* **Arrays are numbers.** NaN, inf and strings are refused unless declared (``nonfinite=``,
  ``text=``; the record lists the ``nonfinite`` arrays, :attr:`StoredResult.nonfinite`). A
  computed result the store refuses is kept in ``<root>/_unsaved/`` and named by an
  :class:`UnsavedResultError`, never thrown away.

``python -m genbounds store check|repair`` (:func:`store_main`) is the command-line side.
"""

from __future__ import annotations

from genbounds.results.cli import store_main
from genbounds.results.errors import (
    DAMAGE_EXIT_CODE,
    Damage,
    DamagedResultError,
    StaleResultError,
    StaleResultWarning,
    UnsavedResultError,
    report_damage,
)
from genbounds.results.files import default_results_dir
from genbounds.results.keys import config_hash, config_to_dict
from genbounds.results.page_note import (
    clear_notes,
    note_sources,
    noted,
    provenance_note,
    results_of,
)
from genbounds.results.provenance import (
    CodeChangedError,
    Provenance,
    code_fingerprint,
    code_modules_of,
    describe_device,
)
from genbounds.results.repair import (
    Repair,
    check_namespace,
    check_store,
    checkpoints_in_progress,
    quarantine,
    repair_store,
)
from genbounds.results.store import (
    OnCodeChange,
    ResultStore,
    StoredResult,
    run_sweep,
    summarize_provenance,
)

__all__ = [
    "DAMAGE_EXIT_CODE",
    "CodeChangedError",
    "Damage",
    "DamagedResultError",
    "OnCodeChange",
    "Provenance",
    "Repair",
    "ResultStore",
    "StaleResultError",
    "StaleResultWarning",
    "StoredResult",
    "UnsavedResultError",
    "check_namespace",
    "check_store",
    "checkpoints_in_progress",
    "clear_notes",
    "code_fingerprint",
    "code_modules_of",
    "config_hash",
    "config_to_dict",
    "default_results_dir",
    "describe_device",
    "note_sources",
    "noted",
    "provenance_note",
    "quarantine",
    "repair_store",
    "report_damage",
    "results_of",
    "run_sweep",
    "store_main",
    "summarize_provenance",
]
