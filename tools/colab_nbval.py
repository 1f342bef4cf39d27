"""Run the deployed Colab notebooks under nbval, in a fresh environment, as a reader would.

``make book`` writes ``_build/html/colab/<docname>.ipynb`` for every chapter (``tools/colab.py``).
This script checks that those files, exactly as they will be deployed, run from top to bottom in
an environment where ``genbounds`` is *not* installed, so that their first cell has to install it:

1. a fresh virtual environment ``_build/colab-env`` (from the same base interpreter as ``.venv``);
2. the project's pinned third-party packages made visible to it through a ``.pth`` file that
   points at a directory of links to ``.venv``'s packages, leaving out ``genbounds`` itself (CI
   has neither the time nor the network to download PyTorch again; Colab has these packages
   preinstalled);
3. ``GENBOUNDS_PIP_SOURCE`` set to a copy of the package source (``pyproject.toml``, ``src/``,
   ``README.md``, ``LICENSE``), so the first cell runs ``pip install --quiet <that copy>``, the
   command it runs in Colab with the repository URL;
4. ``pytest --nbval-lax --current-env`` on the notebooks, with this environment's Python as kernel.

Every chapter is executed once here (``make book`` executes them once more for the pages). The
results store is the repository's ``results/`` (``GENBOUNDS_RESULTS_DIR``), as for the book build.

    python tools/colab_nbval.py [--site _build/html] [--env _build/colab-env]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import colab  # tools/colab.py

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "genbounds"
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")


def _is_own_package(name: str) -> bool:
    low = name.lower()
    return (
        low == PACKAGE
        or low.startswith(f"{PACKAGE}-")
        or low.startswith(f"__editable__.{PACKAGE}-")
        or low.startswith(f"__editable___{PACKAGE}_")
    )


def link_dependencies(site_packages: Path, target: Path) -> int:
    """Fill ``target`` with links to everything in ``site_packages`` except this package."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    count = 0
    for entry in sorted(site_packages.iterdir()):
        if _is_own_package(entry.name) or entry.suffix == ".pth":
            continue
        (target / entry.name).symlink_to(entry)
        count += 1
    return count


def copy_source(target: Path) -> Path:
    """A copy of the package source to install from (pip builds in the source tree)."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(
        ROOT / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    return target


def make_env(env_dir: Path, venv_python: Path) -> Path:
    """A fresh virtual environment whose Python sees ``.venv``'s packages but not genbounds."""
    base = subprocess.run(
        [str(venv_python), "-c", "import sys; print(sys._base_executable)"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    site_src = subprocess.run(
        [str(venv_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    if env_dir.exists():
        shutil.rmtree(env_dir)
    subprocess.run([base, "-m", "venv", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )
    n = link_dependencies(Path(site_src), env_dir / "deps")
    (site / "project-deps.pth").write_text(f"{(env_dir / 'deps').resolve()}\n")
    probe = subprocess.run(
        [str(python), "-c", f"import importlib.util as u; print(u.find_spec('{PACKAGE}') is None)"],
        check=True, capture_output=True, text=True, cwd=env_dir,
    ).stdout.strip()
    if probe != "True":
        raise RuntimeError(f"{PACKAGE} is importable in the fresh environment {env_dir}")
    print(f"colab_nbval: fresh environment {env_dir} ({n} dependency entries linked, "
          f"{PACKAGE} not importable)")
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--env", type=Path, default=ROOT / "_build" / "colab-env")
    parser.add_argument("--venv-python", type=Path, default=ROOT / ".venv" / "bin" / "python")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest")
    args = parser.parse_args(argv)

    site = args.site.resolve()
    docs = colab.notebook_docnames(ROOT)
    notebooks = [site / colab.COLAB_DIR / f"{d}.ipynb" for d in docs]
    missing = [str(p) for p in notebooks if not p.exists()]
    if missing:
        print(f"colab_nbval: not built (run `make book`): {', '.join(missing)}", file=sys.stderr)
        return 2
    env_dir = args.env.resolve()
    python = make_env(env_dir, args.venv_python)
    source = copy_source(env_dir / "source")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["GENBOUNDS_PIP_SOURCE"] = str(source)
    # the first cell installs with the pinned dependencies of this checkout, as on Colab
    env["GENBOUNDS_PIP_CONSTRAINTS"] = str(ROOT / "requirements.txt")
    env.setdefault("GENBOUNDS_RESULTS_DIR", str(ROOT / "results"))
    cmd = [
        str(python), "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider",
        "--rootdir", str(site / colab.COLAB_DIR), *args.pytest_args,
        *[str(p) for p in notebooks],
    ]
    print("colab_nbval:", " ".join(cmd[3:]), flush=True)
    return subprocess.run(cmd, env=env, cwd=env_dir).returncode


if __name__ == "__main__":
    sys.exit(main())
