"""The registry says what the chapters' proof audits say (issue: the registry tells what the
audits found).

Every registered bound (not a measure) carries the audit's :class:`~genbounds.bounds.Verdict` and
the ``prf`` label of the statement whose audit decides it; the chapter states that verdict in one
line, ``**Verdict on {prf:ref}`LABEL`:** *VERDICT*``. These tests read every chapter and compare.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from genbounds.bounds import BoundKind, Verdict, registered

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
_LINE = re.compile(r"\*\*Verdict on \{prf:ref\}`([\w:-]+)`:\*\*\s*\*([a-z ]+)\*")


def chapter_verdicts() -> dict[str, tuple[str, str]]:
    """``label -> (verdict text, notebook name)`` from every verdict line of every chapter."""
    out: dict[str, tuple[str, str]] = {}
    for nb in sorted(NOTEBOOKS.glob("*.md")):
        for label, text in _LINE.findall(nb.read_text(encoding="utf-8")):
            if label in out and out[label][0] != text:
                raise AssertionError(f"{label}: two verdict lines disagree ({out[label]} and "
                                     f"{text!r} in {nb.name})")
            out[label] = (text, nb.name)
    return out


def bounds_with_verdicts():
    return [b for b in registered() if b.kind is not BoundKind.MEASURE]


def test_verdict_line_parser() -> None:
    text = "**Verdict on {prf:ref}`or-thm-4-4`:** *false* (counterexample below)"
    assert _LINE.findall(text) == [("or-thm-4-4", "false")]
    assert {v.value for v in Verdict} == {"holds", "holds with a correction", "does not follow",
                                          "false"}


def test_every_bound_has_a_verdict_and_an_audit_label() -> None:
    missing = [b.key for b in bounds_with_verdicts() if b.verdict is None or not b.audit]
    assert not missing, f"bounds without a verdict or audit label: {missing}"


def test_audited_forms_hold() -> None:
    bad = [b.key for b in bounds_with_verdicts() if b.form == "audited"
           and b.verdict is not Verdict.HOLDS]
    assert not bad, bad


def test_chapters_and_registry_agree() -> None:
    lines = chapter_verdicts()
    problems = []
    for b in bounds_with_verdicts():
        if b.verdict is None or not b.audit:
            continue
        if b.audit not in lines:
            problems.append(f"{b.key}: no line '**Verdict on {{prf:ref}}`{b.audit}`:** *...*' "
                            "in any chapter")
        elif lines[b.audit][0] != b.verdict.value:
            problems.append(f"{b.key}: registry says {b.verdict.value!r}, "
                            f"{lines[b.audit][1]} says {lines[b.audit][0]!r}")
    assert not problems, "\n".join(problems)


def test_measures_have_no_verdict() -> None:
    for b in registered(kind=BoundKind.MEASURE):
        assert b.verdict is None, b.key


@pytest.mark.parametrize("verdict", list(Verdict))
def test_bound_value_proved_only_when_the_statement_holds(verdict: Verdict) -> None:
    from genbounds.bounds import BoundValue

    v = BoundValue(value=0.3, kind=BoundKind.GAP, verdict=verdict)
    assert v.proved is (verdict is Verdict.HOLDS)
    assert BoundValue(value=0.3, kind=BoundKind.GAP, verdict=verdict, valid=False).proved is False
