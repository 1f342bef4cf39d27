"""Calling a function with one bad argument, for the bad-input sweeps of several test files.

:func:`call_with_bad` runs ``fn(**kwargs)`` with one argument replaced, warnings turned into
errors and a 3-second limit (SIGALRM), and sorts the outcome: an output to inspect, a
``ValueError`` that names the argument (:data:`REJECTED`), or a message saying what went wrong.
"""

from __future__ import annotations

import signal
import warnings
from collections.abc import Callable
from typing import Any

REJECTED = object()
"""What :func:`call_with_bad` returns when the call raised a ValueError naming the argument."""


class Hang(Exception):
    """The call took longer than its limit."""


def _alarm(*_: object) -> None:
    raise Hang


def call_with_bad(fn: Callable[..., Any], kwargs: dict[str, Any], name: str, bad: object,
                  then: Callable[[Any], Any] | None = None,
                  seconds: int = 3) -> tuple[Any, str | None]:
    """``(output, None)`` when ``fn(**kwargs with name=bad)`` returns (``then(output)`` when
    given, called under the same limit); ``(REJECTED, None)`` when it raises a ValueError whose
    message contains ``name``; ``(None, what went wrong)`` for any other exception, a warning or
    a hang of more than ``seconds``."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = fn(**{**kwargs, name: bad})
            if then is not None:
                out = then(out)
    except ValueError as exc:
        if name in str(exc):
            return REJECTED, None
        return None, f"ValueError without {name!r}: {exc}"
    except Hang:
        return None, f"hang (> {seconds} s)"
    except Exception as exc:  # noqa: BLE001 - any other exception is the failure reported
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return out, None
