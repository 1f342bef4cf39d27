"""Check what a reader sees: open every page of the built book in headless Chromium.

Serves the built site (``_build/html``) on 127.0.0.1, opens every page listed in ``_toc.yml`` in
headless Chromium through Selenium (Debian's ``chromium`` and ``chromium-driver``), waits for
MathJax (served from the site itself, as on an offline copy), and fails when a page has

- a MathJax error or an undefined TeX command, or TeX left unrendered (a ``.math`` element
  MathJax did not typeset, or TeX source such as ``$x$`` or ``\\frac`` in the text outside code);
- an image that did not load;
- a link or cross-reference to a page or anchor that does not exist in the site;
- a JavaScript error, or a request that failed, or a request for anything not on the site itself;
- horizontal overflow: content wider than the text column (outside the scrollable containers the
  theme provides for code, tables and wide equations), or a page wider than the window;
- an image displayed below 60% of its natural width (a figure too large for the ~690 px column,
  shrunk until its fonts are unreadable), or a table wider than the column even inside its
  scrolling container (either allowed only under an element with class ``full-width``);
- a TeX control word in running text that lost its backslash (``vert``, ``frac``, ...);
- ``nan`` / ``inf`` or a Python warning in a cell's output, unless the cell is tagged
  ``expect-nan`` / ``expect-warning`` (and the text says why).

The last four are *reader findings*: always printed and written to the report, and fatal with
``--strict``, which ``make check-site`` passes: a chapter with such a finding fails the build.

It saves a full-page screenshot of every page to ``<out>/<docname>.png`` and a JSON report to
``<out>/report.json``. Exit status 0 when every page passes, 1 otherwise, 2 when the browser or
the built book is missing.

    python tools/check_rendering.py --html _build/html --out _build/screenshots
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import colab  # tools/colab.py (tools/ is on sys.path when this file runs as a script)
from bs4 import BeautifulSoup

CHROMIUM_CANDIDATES = (
    "/usr/lib/chromium/chromium",
    "chromium",
    "chromium-browser",
    "google-chrome",
)
IGNORED_REQUESTS = ("/favicon.ico",)

# Everything the page can tell us about itself, gathered in one script after MathJax is done.
_INSPECT_JS = r"""
const article = document.querySelector('article.bd-article') || document.querySelector('main')
  || document.body;
const describe = (el) => {
  const cls = (el.getAttribute('class') || '').trim().split(/\s+/).slice(0, 3).join('.');
  const text = (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 80);
  return `<${el.tagName.toLowerCase()}${cls ? '.' + cls : ''}> ${text}`;
};
const out = {mathErrors: [], unrendered: [], rawTex: [], brokenImages: [], links: [],
             overflow: [], external: [], pageOverflow: 0, mathCount: 0, imageCount: 0,
             shrunk: [], wideTables: [], texWords: [], badOutputs: []};
// a reader-facing exception is marked on the element or an ancestor with class "full-width"
const marked = (el) => el.closest('.full-width') !== null;
for (const el of document.querySelectorAll('mjx-merror, [data-mjx-error]')) {
  out.mathErrors.push((el.getAttribute('data-mjx-error') || '') + ' | ' + describe(el));
}
// MathJax's noundefined extension typesets an unknown command as red text instead of failing
for (const el of document.querySelectorAll('mjx-assistive-mml mtext[mathcolor="red"]')) {
  const box = el.closest('mjx-container');
  out.mathErrors.push(`undefined TeX command ${el.textContent} | `
    + describe(box && box.parentElement ? box.parentElement : el));
}
for (const el of article.querySelectorAll('.math')) {
  out.mathCount += 1;
  if (!el.querySelector('mjx-container') && !el.closest('mjx-container')) {
    out.unrendered.push(describe(el));
  }
}
const skip = 'pre, code, script, style, textarea, mjx-container, .highlight, .math, kbd, samp';
const texCommands = ['begin', 'end', 'frac', 'mathbb', 'mathcal', 'mathrm', 'operatorname', 'sum',
  'int', 'sqrt', 'le', 'ge', 'lVert', 'rVert', 'left', 'right', 'cdot', 'alpha', 'beta', 'gamma',
  'delta', 'epsilon', 'varepsilon', 'sigma', 'xi', 'infty'];
const texRe = new RegExp('(^|[^\\\\])\\$\\$?[^$\\s][^$]*\\$|\\\\[\\(\\[]|\\\\('
  + texCommands.join('|') + ')\\b');
// TeX control words that lost their backslash (e.g. "|f vert <= A" from a broken \rvert)
const texWords = ['[lr]?[vV]ert', 'd?frac', 'tfrac', 'mathbb', 'mathcal', 'mathrm', 'mathfrak',
  'mathsf', 'operatorname', 'langle', 'rangle', 'infty', 'leq', 'geq', 'lesssim', 'gtrsim',
  'cdots', 'ldots', 'varepsilon'];
const texWordRe = new RegExp('\\b(' + texWords.join('|') + ')\\b');
const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode;
  const parent = node.parentElement;
  if (!parent || parent.closest(skip)) continue;
  const m = node.textContent.match(texRe);
  if (m) out.rawTex.push(`${m[0].slice(0, 40)} in ${describe(parent)}`);
  const w = node.textContent.match(texWordRe);
  if (w && !m) out.texWords.push(`"${w[0]}" in ${describe(parent)}`);
}
const colWidth = article.getBoundingClientRect().width;
for (const img of article.querySelectorAll('img')) {
  if (marked(img) || img.naturalWidth < 200 || img.clientWidth === 0) continue;
  const f = img.clientWidth / img.naturalWidth;
  if (f < 0.6) {
    out.shrunk.push(`${Math.round(100 * f)}% of its natural width (${img.naturalWidth}px shown `
      + `at ${img.clientWidth}px): ${(img.currentSrc || img.src).split('/').pop().slice(0, 60)}`);
  }
}
for (const t of article.querySelectorAll('table')) {
  const w = t.getBoundingClientRect().width;
  if (!marked(t) && w > colWidth + 1) {
    out.wideTables.push(`${Math.round(w)}px in a ${Math.round(colWidth)}px column: ${describe(t)}`);
  }
}
// outputs: nan / inf / a Python warning, unless the cell is tagged expect-nan / expect-warning
for (const o of article.querySelectorAll('.cell_output')) {
  const cell = o.closest('.cell');
  const tags = cell ? (cell.getAttribute('class') || '') : '';
  const text = o.textContent || '';
  const nan = text.match(/(^|[^\w.,{_])(nan|NaN|-?inf)(?![\w}])/);
  if (nan && !/\btag_expect-nan\b/.test(tags)) {
    out.badOutputs.push(`nan/inf in an output: "${text.slice(Math.max(0, nan.index - 30),
      nan.index + 20).replace(/\s+/g, ' ')}"`);
  }
  const warn = text.match(/\b\w*Warning\b:/);
  if (warn && !/\btag_expect-warning\b/.test(tags)) {
    out.badOutputs.push(`Python warning in an output: "${text.slice(warn.index,
      warn.index + 80).replace(/\s+/g, ' ')}"`);
  }
}
for (const img of document.images) {
  out.imageCount += 1;
  if (!img.complete || img.naturalWidth === 0) out.brokenImages.push(img.currentSrc || img.src);
}
for (const a of document.querySelectorAll('a[href]')) out.links.push(a.href);
const box = article.getBoundingClientRect();
const reported = [];
for (const el of article.querySelectorAll('*')) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  if (r.right <= box.right + 1 && r.left >= box.left - 1) continue;
  if (reported.some((p) => p.contains(el))) continue;
  let p = el.parentElement, contained = false;
  while (p && p !== article) {
    const ox = getComputedStyle(p).overflowX;
    if (ox === 'auto' || ox === 'scroll' || ox === 'hidden' || ox === 'clip') {
      contained = true; break;
    }
    p = p.parentElement;
  }
  if (contained) continue;
  reported.push(el);
  out.overflow.push(`${Math.round(r.right - box.right)}px past the column: ${describe(el)}`);
}
out.pageOverflow = document.documentElement.scrollWidth - document.documentElement.clientWidth;
for (const e of performance.getEntriesByType('resource')) {
  if (!e.name.startsWith(location.origin) && !e.name.startsWith('data:')) out.external.push(e.name);
}
return out;
"""

_WAIT_MATHJAX_JS = r"""
const done = arguments[arguments.length - 1];
const needed = document.querySelector('.math') !== null;
const t0 = Date.now();
(function poll() {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise
      .then(() => done({needed, loaded: true, version: MathJax.version || ''}))
      .catch((e) => done({needed, loaded: false, error: String(e)}));
  } else if (!needed && Date.now() - t0 > 2000) {
    done({needed, loaded: false});
  } else if (Date.now() - t0 > arguments_timeout) {
    done({needed, loaded: false, error: 'MathJax did not start'});
  } else {
    setTimeout(poll, 100);
  }
})();
"""


@dataclass
class PageResult:
    docname: str
    url: str
    screenshot: str = ""
    seconds: float = 0.0
    mathjax: str = ""
    math_count: int = 0
    image_count: int = 0
    errors: list[str] = field(default_factory=list)
    #: what a reader meets that the chapters still have to fix (shrunk images, wide tables,
    #: TeX words, nan/inf/warnings in outputs): reported always, fatal with ``--strict``
    findings: list[str] = field(default_factory=list)


class _QuietHandler(SimpleHTTPRequestHandler):
    failed: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        return

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if urlsplit(self.path).path not in IGNORED_REQUESTS:
            type(self).failed.append(f"{code} {self.path}")
        try:
            super().send_error(code, message, explain)
        except (BrokenPipeError, ConnectionResetError):  # the browser gave up on it: fine
            pass


@contextmanager
def serve(directory: Path) -> Iterator[tuple[str, list[str]]]:
    """Serve ``directory`` on 127.0.0.1 (a free port) for the duration of the block."""
    failed: list[str] = []
    handler = type("Handler", (_QuietHandler,), {"failed": failed})
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(directory))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", failed
    finally:
        server.shutdown()
        server.server_close()


def find_browser() -> tuple[str, str]:
    """Paths of the Chromium binary and of chromedriver; SystemExit(2) with advice if missing."""
    browser = next(
        (p for c in CHROMIUM_CANDIDATES if (p := shutil.which(c) or "") and Path(p).exists()),
        None,
    )
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        missing = [n for n, p in (("chromium", browser), ("chromedriver", driver)) if p is None]
        raise SystemExit(
            f"check_rendering: {', '.join(missing)} not found. Install Debian's packages: "
            "apt-get update && apt-get install -y chromium chromium-driver"
        )
    return browser, driver


def make_driver(width: int, height: int) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = find_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--force-device-scale-factor=1",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(120)
    # record uncaught errors and rejected promises from the very first script on
    driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {
            "source": "window.__pageErrors = [];"
            "addEventListener('error', e => { if (e.message) __pageErrors.push(e.message); });"
            "addEventListener('unhandledrejection', e => __pageErrors.push(String(e.reason)));"
        },
    )
    return driver


class SiteIndex:
    """Which files and anchors exist in the built site (for the link check)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._ids: dict[Path, set[str]] = {}

    def target(self, path: str) -> Path:
        rel = unquote(path).lstrip("/")
        candidate = self.root / rel
        if rel == "" or rel.endswith("/"):
            candidate = candidate / "index.html"
        return candidate

    def ids(self, page: Path) -> set[str]:
        if page not in self._ids:
            soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
            found = {str(t.get("id")) for t in soup.find_all(id=True)}
            found |= {str(t.get("name")) for t in soup.find_all("a", attrs={"name": True})}
            self._ids[page] = found
        return self._ids[page]

    def check(self, url: str, origin: str) -> str | None:
        """None if ``url`` (on ``origin``) resolves in the site, else a description of the fault."""
        parts = urlsplit(url)
        target = self.target(parts.path)
        if not target.resolve().is_relative_to(self.root):
            return f"link leaves the site: {url}"
        if not target.exists():
            return f"broken link: {parts.path} does not exist"
        if parts.fragment and target.suffix == ".html":
            if unquote(parts.fragment) not in self.ids(target):
                return f"broken anchor: {parts.path}#{parts.fragment}"
        return None


def screenshot(driver: Any, path: Path, width: int, height: int) -> None:
    """A full-page PNG of the current page, then the window back to ``width`` x ``height``.

    The window is made as tall as the page, so the page is laid out as a reader's browser lays
    it out (Chrome's capture-beyond-viewport emulation re-laid out some pages without their
    sidebars, scrolled sideways).
    """
    chrome = int(driver.execute_script("return window.outerHeight - window.innerHeight"))
    full = int(driver.execute_script("return document.documentElement.scrollHeight"))
    try:
        driver.set_window_size(width, full + chrome)
        time.sleep(0.5)
        png = driver.get_screenshot_as_png()
    finally:
        driver.set_window_size(width, height)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)


def check_page(
    driver: Any,
    base: str,
    docname: str,
    site: SiteIndex,
    shots: Path,
    size: tuple[int, int] = (1280, 900),
    mathjax_timeout_s: float = 60.0,
) -> PageResult:
    url = f"{base}/{docname}.html"
    result = PageResult(docname=docname, url=url)
    t0 = time.perf_counter()
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)
    mj = driver.execute_async_script(
        _WAIT_MATHJAX_JS.replace("arguments_timeout", str(int(mathjax_timeout_s * 1000)))
    )
    if mj.get("needed"):
        if not mj.get("loaded"):
            result.errors.append(f"MathJax did not typeset the page: {mj.get('error', '')}")
        result.mathjax = str(mj.get("version", ""))
    # let lazily loaded images load: make them eager, then wait until every image settled
    driver.execute_script(
        "document.querySelectorAll('img[loading=lazy]').forEach(i => i.loading = 'eager');"
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not driver.execute_script(
        "return [...document.images].every(i => i.complete)"
    ):
        time.sleep(0.2)
    info = driver.execute_script(_INSPECT_JS)
    result.math_count, result.image_count = info["mathCount"], info["imageCount"]
    result.errors += [f"math error: {e}" for e in info["mathErrors"]]
    result.errors += [f"math not typeset: {e}" for e in info["unrendered"]]
    result.errors += [f"raw TeX in the text: {e}" for e in info["rawTex"]]
    result.errors += [f"image did not load: {e}" for e in info["brokenImages"]]
    result.errors += [f"horizontal overflow: {e}" for e in info["overflow"]]
    result.findings += [f"image shown at {e}" for e in info["shrunk"]]
    result.findings += [f"table wider than the column: {e}" for e in info["wideTables"]]
    result.findings += [f"TeX control word in the text: {e}" for e in info["texWords"]]
    result.findings += info["badOutputs"]
    if info["pageOverflow"] > 0:
        result.errors.append(f"page is {info['pageOverflow']}px wider than the window")
    result.errors += [f"request outside the site (fails offline): {e}" for e in info["external"]]
    for link in sorted(set(info["links"])):
        if link.startswith(base):
            fault = site.check(link, base)
            if fault:
                result.errors.append(fault)
    for err in driver.execute_script("return window.__pageErrors || []"):
        result.errors.append(f"JavaScript error: {err}")
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE" and not any(
            ign in entry.get("message", "") for ign in IGNORED_REQUESTS
        ):
            result.errors.append(f"browser console: {entry['message'][:300]}")
    shot = shots / f"{docname}.png"
    screenshot(driver, shot, *size)
    result.screenshot = str(shot)
    result.seconds = round(time.perf_counter() - t0, 2)
    return result


def run(
    html: Path, out: Path, toc: Path, width: int = 1280, height: int = 900,
    mathjax_timeout_s: float = 60.0,
) -> list[PageResult]:
    html = Path(html)
    if not (html / "index.html").exists():
        raise SystemExit(f"check_rendering: no built book at {html} (run `make book` first)")
    docnames = colab.toc_docnames(toc)
    missing = [d for d in docnames if not (html / f"{d}.html").exists()]
    site = SiteIndex(html)
    results: list[PageResult] = [
        PageResult(docname=d, url="", errors=[f"page not built: {d}.html"]) for d in missing
    ]
    out.mkdir(parents=True, exist_ok=True)
    driver = make_driver(width, height)
    try:
        with serve(html) as (base, failed):
            for doc in docnames:
                if doc in missing:
                    continue
                failed.clear()
                res = check_page(driver, base, doc, site, out, (width, height), mathjax_timeout_s)
                res.errors += [f"server answered {f}" for f in failed]
                results.append(res)
    finally:
        driver.quit()
    (out / "report.json").write_text(json.dumps([asdict(r) for r in results], indent=1))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=Path("_build/html"))
    parser.add_argument("--out", type=Path, default=Path("_build/screenshots"))
    parser.add_argument("--toc", type=Path, default=Path("_toc.yml"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--strict", action="store_true",
                        help="also fail on the reader findings (shrunk images, wide tables, TeX "
                             "words, nan/inf/warnings in outputs)")
    args = parser.parse_args(argv)
    try:
        results = run(args.html, args.out, args.toc, args.width, args.height)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    bad = 0
    for r in results:
        status = "ok  " if not (r.errors or (args.strict and r.findings)) else "FAIL"
        print(
            f"{status} {r.docname}: {r.math_count} math, {r.image_count} images, "
            f"MathJax {r.mathjax or '-'}, {r.seconds} s -> {r.screenshot}"
        )
        for e in r.errors:
            print(f"     {e}")
        for f in r.findings:
            print(f"     {'' if args.strict else 'finding (not yet fatal): '}{f}")
        bad += bool(r.errors) or (args.strict and bool(r.findings))
    n_find = sum(len(r.findings) for r in results)
    print(f"check_rendering: {len(results) - bad} passed, {bad} failed; {n_find} reader findings"
          + ("" if args.strict else " (fatal with --strict)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
