"""``make lab``: JupyterLab starts on localhost and serves a chapter (.md) as a notebook.

The server is started with the same launcher ``make lab`` uses (``tools/lab.py``), on a free
port of 127.0.0.1 with a random token, asked over its REST API, and stopped again; the whole test
is bounded in time.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import colab  # noqa: E402
import lab  # noqa: E402

START_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    port, token = _free_port(), secrets.token_hex(16)
    runtime = tmp_path_factory.mktemp("jupyter-runtime")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime), JUPYTER_TOKEN=token)
    args = [
        "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
    ]
    log = (runtime / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "lab.py"), *args],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited ({proc.returncode}):\n{_tail(runtime)}")
            try:
                if requests.get(f"{base}/api/status", params={"token": token}, timeout=5).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not start in {START_TIMEOUT_S} s:\n{_tail(runtime)}")
            time.sleep(1)
        yield base, token
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


def _tail(runtime: Path) -> str:
    return (runtime / "server.log").read_text()[-3000:]


def _get(server: tuple[str, str], path: str, **params: str) -> requests.Response:
    base, token = server
    return requests.get(f"{base}{path}", params={"token": token, **params}, timeout=60)


def test_chapter_opens_as_a_notebook(server: tuple[str, str]) -> None:
    doc = colab.notebook_docnames(ROOT)[0]
    res = _get(server, f"/api/contents/{doc}.md", type="notebook", content="1")
    assert res.status_code == 200, res.text[:500]
    model = res.json()
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    assert sum(c["cell_type"] == "code" for c in cells) >= 1
    assert sum(c["cell_type"] == "markdown" for c in cells) >= 1
    assert model["content"]["metadata"]["kernelspec"]["name"] == "python3"


def test_kernel_is_the_project_environment(server: tuple[str, str]) -> None:
    specs = _get(server, "/api/kernelspecs").json()
    assert specs["default"] == "python3"
    argv0 = specs["kernelspecs"]["python3"]["spec"]["argv"][0]
    # the kernel runs this environment's Python (where genbounds is installed)
    assert Path(argv0).resolve() == Path(sys.executable).resolve() or argv0 == "python"
    probe = subprocess.run(
        [sys.executable, "-c", "import genbounds"], capture_output=True, timeout=120
    )
    assert probe.returncode == 0


def test_markdown_opens_with_jupytext_by_default(server: tuple[str, str]) -> None:
    res = _get(server, "/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
    assert res.status_code == 200, res.text[:500]
    # overrides.json changes the schema's defaults (user settings stay empty)
    viewers = res.json()["schema"]["properties"]["defaultViewers"]["default"]
    assert viewers["markdown"] == "Jupytext Notebook"
    page = _get(server, "/lab")
    assert page.status_code == 200
    assert "jupyterlab-jupytext" in page.text  # the front-end extension that provides the viewer


def test_markdown_cells_render_myst(server: tuple[str, str]) -> None:
    """jupyterlab-myst (pinned in requirements.txt) is a front-end extension of the server, so
    a chapter's Markdown cells show theorems, glued values and citations, not raw MyST."""
    import json
    import re

    page = _get(server, "/lab")
    assert page.status_code == 200
    config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">'
                                  r"(.*?)</script>", page.text, re.S).group(1))  # type: ignore[union-attr]
    myst = [e for e in config["federated_extensions"] if e["name"] == "jupyterlab-myst"]
    assert myst, [e["name"] for e in config["federated_extensions"]]
    assert "jupyterlab-myst" not in config.get("disabledExtensions", [])
    entry = _get(server, f"/lab/extensions/jupyterlab-myst/{myst[0]['load']}")
    assert entry.status_code == 200 and len(entry.content) > 1000


def test_overrides_go_to_the_environment(tmp_path: Path) -> None:
    target = lab.install_overrides(str(tmp_path))
    assert target == tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert "Jupytext Notebook" in target.read_text()
    cmd = lab.command(["--no-browser"])
    assert cmd[1] == "lab" and f"--ServerApp.root_dir={ROOT}" in cmd and cmd[-1] == "--no-browser"


def test_no_browser_without_a_display() -> None:
    """Headless: JupyterLab starts with --no-browser (not "No web browser found")."""
    assert lab.has_browser({}, platform="linux") is False
    assert lab.browser_args([], browser=False) == ["--no-browser"]
    assert lab.browser_args(["--port", "8899"], browser=False) == ["--no-browser"]
    assert lab.browser_args(["--browser=firefox"], browser=False) == []
    assert lab.browser_args([], browser=True) == []


def test_make_lab_passes_the_port() -> None:
    out = subprocess.run(["make", "-n", "lab", "PORT=8899"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "tools/lab.py --port 8899" in out
