"""Every option of the command line that takes a value checks it (issue #37 item 3, the command
line's part): ``--budget-minutes inf``, ``1e400`` and ``2**70`` were accepted; an empty
``--results-dir`` or ``--root`` meant the current directory. A property over every option: each
typed option has a checking function, refuses every bad value of its kind with exit status 2 and
its own name in the message, and accepts the values real use needs."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from genbounds import cli
from genbounds.results import cli as store_cli

BAD_NUMBERS = ["", " ", "nan", "NaN", "inf", "-inf", "1e400", "-1e400", "-1", "0", "-0.0",
               str(2**70), "2**70", "1e308", "x", "\0", "0x10"]
BAD_PATHS = ["", "\0", "a\0b"]


def _options() -> Iterator[tuple[list[str], argparse.Action]]:
    """(the subcommand's argv prefix, the option) for every option that takes a typed value."""
    top = cli._parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in subs.choices.items():
        for action in parser._actions:
            if action.option_strings and action.type is not None:
                yield [name], action
    store = store_cli._parser()
    subs = next(a for a in store._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in subs.choices.items():
        for action in parser._actions:
            if action.option_strings and action.type is not None:
                yield ["store", name], action


KINDS = {cli._budget_minutes: (BAD_NUMBERS, ["0.5", "90", "1440", "527040"]),
         cli.directory_path: (BAD_PATHS, ["results", "."]),
         store_cli.directory_path: (BAD_PATHS, ["results", "."])}
CASES = [(prefix, action.option_strings[0], bad, good)
         for prefix, action in _options() for bad, good in [KINDS.get(action.type, ([], []))]]


def test_every_typed_option_has_a_checking_function() -> None:
    typed = list(_options())
    assert {a.option_strings[0] for _, a in typed} >= {"--budget-minutes", "--results-dir",
                                                       "--root"}
    for prefix, action in typed:
        assert action.type in KINDS, (f"{' '.join(prefix)} {action.option_strings[0]} takes "
                                      f"{action.type}: give it a checking function and cases here")


def _parse(prefix: list[str], option: str, value: str) -> argparse.Namespace:
    if prefix[0] == "store":
        return store_cli._parser().parse_args([*prefix[1:], option, value])
    return cli._parser().parse_args([*prefix, option, value])


@pytest.mark.parametrize("prefix,option,bad,good", CASES,
                         ids=[f"{' '.join(c[0])} {c[1]}" for c in CASES])
def test_each_option_refuses_bad_values_by_name(prefix, option, bad, good, capsys) -> None:
    for value in bad:
        with pytest.raises(SystemExit) as info:
            _parse(prefix, option, value)
        assert info.value.code == 2, (option, value)
        err = capsys.readouterr().err
        assert f"argument {option}" in err and "Traceback" not in err, (option, value, err)
    for value in good:
        args = _parse(prefix, option, value)
        assert getattr(args, option.lstrip("-").replace("-", "_")) is not None


def test_budget_minutes_limits() -> None:
    for value in ("inf", "1e400", str(2**70), "nan", "527041"):
        with pytest.raises(argparse.ArgumentTypeError, match="at most 527040"):
            cli._budget_minutes(value)
    assert cli._budget_minutes("527040") == 527040.0  # a year: more than any study needs
    assert cli._budget_minutes("0.01") == 0.01
    assert cli.directory_path("results") == Path("results")
