"""``make lab``: JupyterLab in the project's environment, with the chapters as notebooks.

The chapters are jupytext MyST files (``notebooks/*.md``). JupyterLab is started from the
repository root with the environment's own kernel (``python3`` of ``.venv``, where ``genbounds``
is installed), and with jupytext's contents manager (enabled by the jupytext package), so a
double-click on a chapter opens it as a notebook (the default viewer for Markdown and MyST files
is set to "Jupytext Notebook" through ``tools/jupyterlab-overrides.json``). Saving writes the cells
back to the ``.md`` file; outputs are not kept in it. The Markdown cells are rendered as MyST by
the front-end extension ``jupyterlab-myst`` (pinned in ``requirements.txt``): theorems, proofs,
admonitions, exercises, equations and cross-references within the chapter are rendered (seen
in headless Chromium). What needs the whole book is not: a citation shows its key, a reference
to another chapter its label, and a glued value (``{glue:text}``, MyST-NB's) its key; the
executed notebook in a chapter page's download menu has all three as text. Any extra argument
goes to ``jupyter lab``:

    python tools/lab.py --no-browser --port 8899

``make lab PORT=8899`` passes the port. Without a display (no ``DISPLAY`` or ``WAYLAND_DISPLAY``
on Linux, or no web browser that Python's :mod:`webbrowser` can find) the server starts with
``--no-browser`` and says to open the URL it prints, instead of JupyterLab's "No web browser
found".
"""

from __future__ import annotations

import os
import shutil
import sys
import webbrowser
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = Path(__file__).resolve().parent / "jupyterlab-overrides.json"


def settings_dir(prefix: str = sys.prefix) -> Path:
    """JupyterLab's application settings directory of this environment (for overrides.json)."""
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings"


def install_overrides(prefix: str = sys.prefix) -> Path:
    target = settings_dir(prefix) / "overrides.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OVERRIDES, target)
    return target


def has_browser(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> bool:
    """True when a web browser can be opened: a display on Linux, and one Python can find."""
    env = os.environ if env is None else env
    if platform.startswith("linux") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def browser_args(extra: list[str], browser: bool) -> list[str]:
    """``--no-browser`` when none can be opened and the caller did not choose."""
    chose = any(a.startswith(("--no-browser", "--browser", "--ServerApp.open_browser"))
                for a in extra)
    return [] if chose or browser else ["--no-browser"]


def command(extra: list[str]) -> list[str]:
    jupyter = Path(sys.executable).parent / "jupyter"
    # a container or CI machine often runs as root, which JupyterLab refuses without this
    root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return [str(jupyter), "lab", f"--ServerApp.root_dir={ROOT}", *root, *extra]


def main(argv: list[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    install_overrides()
    no_browser = browser_args(extra, has_browser())
    if no_browser:
        print("lab: no display or web browser here: open the http://127.0.0.1:... URL that "
              "JupyterLab prints below (with its token) in a browser", flush=True)
    cmd = command([*no_browser, *extra])
    print("lab:", " ".join(cmd), flush=True)
    os.execv(cmd[0], cmd)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
