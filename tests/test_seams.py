"""The package's seams (issue 28, section 7): what each layer may import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "genbounds"


def _loaded_after(statement: str) -> set[str]:
    code = (f"import sys; {statement}; "
            "print('\\n'.join(m for m in sys.modules if m.startswith('genbounds')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return set(out.stdout.split())


def test_importing_the_bounds_loads_no_model_family() -> None:
    loaded = _loaded_after("import genbounds.bounds")
    assert "genbounds.bounds.measures" in loaded  # the bounds were imported
    assert "genbounds.protocols" in loaded
    assert not {m for m in loaded if m.startswith("genbounds.models")}, loaded
    assert not {m for m in loaded if m.startswith("genbounds.experiments")}, loaded


def test_the_foundations_toolkit_stands_below_the_bounds() -> None:
    loaded = _loaded_after("import genbounds.complexity; "
                           "genbounds.complexity.kl_inverse_upper(0.1, 0.2); "
                           "genbounds.complexity.binary_kl(0.1, 0.2)")
    assert not {m for m in loaded if m.startswith("genbounds.bounds")}, loaded
    assert "genbounds.kl" in loaded


def test_kl_is_one_implementation() -> None:
    from genbounds import complexity, kl
    from genbounds.bounds import pac_bayes

    assert pac_bayes.binary_kl is kl.binary_kl
    assert pac_bayes.kl_inverse_upper is kl.kl_inverse_upper
    assert complexity.binary_kl(0.1, 0.3) == kl.binary_kl(0.1, 0.3)


def test_measures_never_name_a_model_family() -> None:
    """bounds/measures.py reads models through protocols and capabilities, never by family."""
    tree = ast.parse((SRC / "bounds" / "measures.py").read_text())
    names = {"EdelmanTransformer", "ShallowEncoder", "LiTransformer", "SparseMajorityMHA"}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str) and n.value in names}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and n.attr == "family"}
    imports = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               and n.module and n.module.startswith("genbounds.models")}
    assert not strings and not attrs and not imports, (strings, attrs, imports)
