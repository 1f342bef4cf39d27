"""Run the deployed Colab notebooks under nbval, in a fresh environment, as a reader would.

``make book`` writes ``_build/html/colab/<docname>.ipynb`` for every chapter (``tools/colab.py``).
This script checks that those files, exactly as they will be deployed, run from top to bottom in
an environment where ``genbounds`` is *not* installed, so that their first cell has to install it:

1. a fresh virtual environment ``_build/colab-env`` (from the same base interpreter as ``.venv``);
2. the packages a fresh Colab runtime has preinstalled (:data:`COLAB_PREINSTALLED`: torch,
   numpy, pandas, matplotlib, ...) and the test harness (pytest, nbval), each with everything it
   depends on, made visible through a ``.pth`` file that points at a directory of links to
   ``.venv``'s copies (CI has no time to download PyTorch again), and **nothing else**: not
   ``genbounds``, not ``myst-nb``, not ``mlxtend``; what the chapters need beyond Colab's set the
   set-up cell must install (the package's extras, :data:`colab.NOTEBOOK_EXTRAS`, from the
   package registry), so a missing declaration fails here as it would on Colab;
3. ``GENBOUNDS_PIP_SOURCE`` set to a copy of the package source (``pyproject.toml``, ``src/``,
   ``README.md``, ``LICENSE``), so the first cell runs ``pip install --quiet <that copy>``, the
   command it runs in Colab with the repository URL;
4. ``pytest --nbval-lax --current-env`` on the notebooks, with this environment's Python as kernel.

Before any of that, every published notebook, the Colab one and the downloadable executed one
(``_sources/<docname>.ipynb``), is opened and its Markdown searched for MyST left over (a role, a
directive fence, a glue, a target: :func:`plain_notebook.myst_leftovers`); any is a failure,
since Colab and plain Jupyter would show it as raw text (:func:`plain_problems`).

Every chapter is executed once here (``make book`` executes them once more for the pages). The
results store (``GENBOUNDS_RESULTS_DIR``) is, by default, a copy of the repository's quick-scale
results **without the committed paper-scale units** (:func:`store_without_paper`): what a reader
has who opens a chapter in Colab without the repository's results. The book build executes the
same chapters against the committed store, so every chapter is run both ways and must say true
things both ways (``--store committed`` runs them against the committed store here too).

    python tools/colab_nbval.py [--site _build/html] [--env _build/colab-env]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import colab  # tools/colab.py

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "genbounds"
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")
#: What a fresh Colab runtime has (its preinstalled scientific stack), by distribution name.
COLAB_PREINSTALLED = ("torch", "numpy", "scipy", "pandas", "matplotlib", "seaborn", "tqdm",
                      "psutil", "filelock", "scikit-learn", "ipython", "ipykernel")
#: What runs the notebooks here (not something a notebook may rely on).
HARNESS = ("pytest", "nbval")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(site_packages: Path, roots: tuple[str, ...]) -> dict[str, Any]:
    """The distributions in ``site_packages`` that ``roots`` need (their requirements,
    transitively, extras left out), by normalised name. ``ValueError`` naming a root that is
    not installed there."""
    from importlib import metadata

    from packaging.requirements import Requirement

    dists = {_norm(d.metadata["Name"]): d
             for d in metadata.distributions(path=[str(site_packages)])}
    missing = [r for r in roots if _norm(r) not in dists]
    if missing:
        raise ValueError(f"roots: not installed in {site_packages}: {missing}")
    seen: dict[str, Any] = {}
    todo = [_norm(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name not in dists:
            continue
        seen[name] = dists[name]
        for req in dists[name].requires or []:
            r = Requirement(req)
            if r.marker is not None and not r.marker.evaluate({"extra": ""}):
                continue
            todo.append(_norm(r.name))
    return seen


def top_level_entries(dist: Any) -> set[str]:
    """The names directly under site-packages that a distribution installed (its packages,
    modules and ``.dist-info``), from its RECORD."""
    out = set()
    for f in dist.files or []:
        parts = Path(str(f)).parts
        if parts and parts[0] not in ("..", "bin") and not parts[0].endswith(".pth"):
            out.add(parts[0])
    return out


def _is_own_package(name: str) -> bool:
    low = name.lower()
    return (
        low == PACKAGE
        or low.startswith(f"{PACKAGE}-")
        or low.startswith(f"__editable__.{PACKAGE}-")
        or low.startswith(f"__editable___{PACKAGE}_")
    )


def link_dependencies(site_packages: Path, target: Path,
                      only: set[str] | None = None) -> int:
    """Fill ``target`` with links to the entries of ``site_packages`` named in ``only`` (all of
    them when None), never this package."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    count = 0
    for entry in sorted(site_packages.iterdir()):
        if _is_own_package(entry.name) or entry.suffix == ".pth":
            continue
        if only is not None and entry.name not in only:
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
    dists = closure(Path(site_src), COLAB_PREINSTALLED + HARNESS)
    keep = set().union(*(top_level_entries(d) for d in dists.values()))
    n = link_dependencies(Path(site_src), env_dir / "deps", keep)
    (site / "project-deps.pth").write_text(f"{(env_dir / 'deps').resolve()}\n")
    absent = (PACKAGE, "myst_nb", "mlxtend")
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util as u; "
         f"print([m for m in {absent!r} if u.find_spec(m) is not None])"],
        check=True, capture_output=True, text=True, cwd=env_dir,
    ).stdout.strip()
    if probe != "[]":
        raise RuntimeError(f"importable in the fresh environment {env_dir}: {probe}")
    print(f"colab_nbval: fresh environment {env_dir}: Colab's preinstalled packages and the "
          f"test harness ({len(dists)} distributions, {n} entries linked); "
          f"{', '.join(absent)} not importable: the set-up cell installs them")
    return python


def store_without_paper(dest: Path, source: Path = ROOT / "results") -> Path:
    """A results store at ``dest`` holding a copy of ``source``'s quick-scale units only (no
    paper-scale unit, no checkpoint, no lock): the store of a reader without the repository's
    committed results. Replaces what ``dest`` held; returns ``dest``."""
    quick = source / "quick"
    if not quick.is_dir():
        raise FileNotFoundError(f"{quick} holds no quick-scale results: run `make book` first")
    if dest.resolve() == source.resolve() or source.resolve() in dest.resolve().parents:
        raise ValueError(f"dest must lie outside the store {source}, got {dest}")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(quick, dest / "quick", symlinks=False,
                    ignore=shutil.ignore_patterns(".*", "_*"))
    return dest


def plain_problems(site: Path, docs: list[str]) -> list[str]:
    """MyST left in the Markdown of the published notebooks of ``docs`` (Colab and download)."""
    import nbformat
    import plain_notebook

    problems = []
    for doc in docs:
        for path in (site / colab.COLAB_DIR / f"{doc}.ipynb", site / "_sources" / f"{doc}.ipynb"):
            if not path.exists():
                problems.append(f"{path}: not built")
                continue
            found = plain_notebook.myst_leftovers(nbformat.read(path, as_version=4))
            problems += [f"{path.relative_to(site)}: {f}" for f in found]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--env", type=Path, default=ROOT / "_build" / "colab-env")
    parser.add_argument("--venv-python", type=Path, default=ROOT / ".venv" / "bin" / "python")
    parser.add_argument("--store", choices=("without-paper", "committed"),
                        default="without-paper",
                        help="the results the chapters read: a copy of the quick-scale units "
                        "only (default), or the repository's committed store")
    parser.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                        help="pytest processes running the notebooks at once (default: the CPU "
                             "count, at most 4); the first notebook runs alone, since its set-up "
                             "cell installs the package")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest")
    args = parser.parse_args(argv)

    site = args.site.resolve()
    docs = colab.notebook_docnames(ROOT)
    notebooks = [site / colab.COLAB_DIR / f"{d}.ipynb" for d in docs]
    missing = [str(p) for p in notebooks if not p.exists()]
    if missing:
        print(f"colab_nbval: not built (run `make book`): {', '.join(missing)}", file=sys.stderr)
        return 2
    leftovers = plain_problems(site, docs)
    if leftovers:
        print(f"colab_nbval: {len(leftovers)} MyST constructs left in the published notebooks "
              "(Colab and plain Jupyter show them as raw text):", file=sys.stderr)
        print("\n".join(f"  {p}" for p in leftovers[:40]), file=sys.stderr)
        return 1
    print(f"colab_nbval: the {2 * len(docs)} published notebooks are plain Markdown", flush=True)
    env_dir = args.env.resolve()
    python = make_env(env_dir, args.venv_python)
    source = copy_source(env_dir / "source")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["GENBOUNDS_PIP_SOURCE"] = str(source)
    # the first cell installs with the pinned dependencies of this checkout, as on Colab
    env["GENBOUNDS_PIP_CONSTRAINTS"] = str(ROOT / "requirements.txt")
    if args.store == "committed":
        env["GENBOUNDS_RESULTS_DIR"] = str(ROOT / "results")
    else:
        store = store_without_paper(env_dir / "results")
        env["GENBOUNDS_RESULTS_DIR"] = str(store)
        print(f"colab_nbval: results store {store}: the quick-scale units only, no paper-scale "
              "unit (the book build read the committed store)", flush=True)
    def cmd(group: list[Path]) -> list[str]:
        return [str(python), "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p",
                "no:cacheprovider", "--rootdir", str(site / colab.COLAB_DIR), *args.pytest_args,
                *[str(p) for p in group]]

    print("colab_nbval:", " ".join(cmd(notebooks)[3:]), flush=True)
    return run_groups(cmd, notebooks, env, env_dir, args.workers)


def worker_groups(notebooks: list[Path], workers: int) -> list[list[Path]]:
    """The notebooks after the first, dealt round-robin to ``workers`` groups (in reading
    order within each group); empty groups dropped. ``ValueError`` naming ``workers`` if < 1."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    groups = [notebooks[1:][i::workers] for i in range(workers)]
    return [g for g in groups if g]


def run_groups(cmd: Any, notebooks: list[Path], env: dict[str, str], cwd: Path,
               workers: int) -> int:
    """Run the first notebook alone (its set-up cell installs genbounds into the fresh
    environment; two notebooks installing at once would race), then the others in ``workers``
    pytest processes at once, each with its output in a log printed whole when it ends; the
    exit status is the first non-zero one."""
    first = subprocess.run(cmd(notebooks[:1]), env=env, cwd=cwd).returncode
    groups = worker_groups(notebooks, workers)
    if first != 0 or not groups:
        return first
    print(f"colab_nbval: the other {len(notebooks) - 1} notebooks in {len(groups)} processes",
          flush=True)
    procs = []
    for i, group in enumerate(groups):
        log = cwd / f"nbval-{i + 1}.log"
        fh = log.open("w")
        procs.append((subprocess.Popen(cmd(group), env=env, cwd=cwd, stdout=fh,
                                       stderr=subprocess.STDOUT, text=True), fh, log))
    status = 0
    for i, (proc, fh, log) in enumerate(procs):
        rc = proc.wait()
        fh.close()
        print(f"---- colab_nbval process {i + 1} (exit status {rc}) ----", flush=True)
        print(log.read_text(errors="replace"), flush=True)
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main())
