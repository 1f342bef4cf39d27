"""The rendering check finds each fault it promises to find, and passes a clean page.

A small site is written to a temporary directory: one clean page and one page per fault, each
with the same MathJax the book serves (from the sphinx-mathjax-offline package). The check then
runs on it in headless Chromium, as it runs on the book in ``make test``.
"""

from __future__ import annotations

import importlib.util
import io
import shutil
import sys
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import check_rendering as cr  # noqa: E402

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body {{ margin: 0; }} article.bd-article {{ max-width: 600px; margin: 0 auto; }}
.scroll, pre, div.math {{ overflow-x: auto; }}</style>
<script>window.MathJax = {{options: {{processHtmlClass: 'math'}}}};</script>
<script defer src="{prefix}_static/mathjax/tex-chtml.js"></script>
</head><body class="tex2jax_ignore"><article class="bd-article">
<h1 id="top">{title}</h1>
<p>Inline <span class="math">\\(x^2 + \\sum_i a_i\\)</span> and a figure:</p>
<img src="{prefix}_static/figure.png" alt="a figure">
<p><a href="{prefix}good.html#top">back to the clean page</a></p>
<div class="scroll full-width"><table><tr><td style="white-space: nowrap">{wide}</td></tr></table>
</div>
<div class="cell tag_expect-nan"><div class="cell_output"><pre>ratio at n = 0: nan</pre></div></div>
<div class="cell"><div class="cell_output"><pre>info: 0.25; ||W_c||_{{1,inf}} 7.6</pre>
</div></div>
<table><tr><td><code>dist.init</code> (a code name set as code is not a label)</td></tr></table>
{body}
</article></body></html>
"""

#: a cell whose output is folded (MyST-NB's hide-output), holding a numbered, labelled table
FOLDED_OUTPUT = (
    '<div class="cell tag_hide-output"><details class="admonition hide above-output">'
    '<summary><p class="admonition-title">Show code cell outputs</p></summary>'
    '<div class="cell_output"><table id="tab-settings"><caption><span class="caption-number">'
    "Table 3 </span>settings</caption><tr><td>0.25</td></tr></table></div></details></div>"
)

FAULTS = {
    "raw_tex": ("raw TeX in the text", "<p>Unrendered: $\\alpha + 1$ in prose.</p>"),
    "math_error": ("math error", '<p><span class="math">\\(\\frac{1}{2}}\\)</span></p>'),
    "undefined_macro": ("undefined TeX command", '<p><span class="math">\\(\\nosu x\\)</span></p>'),
    "unrendered": ("math not typeset", '<p><span class="math">\\(\\frac{1}{2\\)</span></p>'),
    "broken_image": ("image did not load", '<img src="_static/missing.png" alt="gone">'),
    "broken_link": ("broken link", '<p><a href="nowhere.html">a page that is not there</a></p>'),
    "broken_anchor": ("broken anchor", '<p><a href="good.html#no-such-id">no anchor</a></p>'),
    "js_error": ("JavaScript error", "<script>undefinedFunction();</script>"),
    "overflow": ("horizontal overflow", '<div style="width: 1500px">too wide</div>'),
    "external": ("request outside the site", '<img src="http://127.0.0.2:9/x.png" alt="x">'),
    "shrunk_image": ("image shown at", '<img src="_static/big.png" style="width: 300px" alt="b">'),
    "wide_table": ("table wider than its box",
                   '<div class="scroll"><table><tr><td style="white-space: nowrap">'
                   + "sixteen columns of numbers " * 12 + "</td></tr></table></div>"),
    # narrower than the column, but wider than the admonition it sits in (a scrollbar there)
    "wide_table_in_box": ("table wider than its box",
                          '<div class="admonition" style="max-width: 400px"><div class="scroll">'
                          '<table><tr><td><span style="display: inline-block; width: 500px">'
                          "a 500 px cell</span></td></tr></table></div></div>"),
    "tex_word": ("TeX control word in the text", "<p>so that |f vert &le; A for all f</p>"),
    # a norm's name such as ||W||_{1,inf} is not an infinite value
    "nan_output": ("nan/inf in an output", '<div class="cell"><div class="cell_output">'
                   "<pre>largest exact tail / Hoeffding bound: nan</pre></div></div>"),
    "empty_output": ("empty list in an output", '<div class="cell"><div class="cell_output">'
                     "<pre>settings where the bound is below 1: []</pre></div></div>"),
    "wide_code": ("code cell", '<div class="cell"><div class="cell_input"><pre>'
                  + "result = compute(" + "argument, " * 30 + ")</pre></div></div>"),
    "wide_output": ("printed output", '<div class="cell"><div class="cell_output"><pre>'
                    + "{'bound': 0.25, " * 20 + "}</pre></div></div>"),
    "cut_equation": ("display equation",
                     '<div class="math">\\[' + " + ".join(f"a_{{{i}}}" for i in range(90))
                     + "\\]</div>"),
    "bare_reference": ("reference without number or title",
                       '<p>Verdict on <a href="good.html#top">Lemma </a>: holds.</p>'),
    "tall_page": ("page is", '<div style="height: 6000px">a long page</div>'),
    "phone_scroll": ("page scrolls sideways on a phone",
                     '<div style="width: 500px; min-width: 500px">fixed 500 px</div>'),
    "code_name_table": ("a label shows the code name",
                        "<table><tr><th>measure</th><th>rank correlation</th></tr>"
                        "<tr><td>log.sum.of.spec</td><td>0.31</td></tr></table>"),
    "code_name_svg": ("a label shows the code name 'pacbayes.mag.init'",
                      '<img src="_static/labels.svg" alt="a scatter plot">'),
    "warning_output": ("Python warning in an output",
                       '<div class="cell"><div class="cell_output"><pre>/x.py:3: RuntimeWarning:'
                       " invalid value encountered in divide</pre></div></div>"),
    # a table as pandas shows it: Python's booleans, e-notation, ASCII-TeX labels
    "cell_bool": ("Python True/False", "<table><tr><th>holds</th><th>bound</th></tr>"
                  "<tr><td>True</td><td>0.25</td></tr></table>"),
    "cell_bool_list": ("Python True/False", "<table><tr><td>[True, False]</td></tr></table>"),
    "cell_e_notation": ("e-notation", "<table><tr><td>1.39e+04</td></tr></table>"),
    "cell_e_short": ("e-notation", "<table><tr><th>lr</th></tr><tr><td>1e-05</td></tr></table>"),
    "cell_norm": ("ASCII-TeX", "<table><tr><th>||W_c||_{1,inf}</th></tr>"
                  "<tr><td>7.6</td></tr></table>"),
    "cell_sqrt": ("ASCII-TeX", "<table><tr><td>sqrt(T + 1) x rate</td></tr></table>"),
    "cell_power": ("ASCII-TeX", "<table><tr><td>n^{-1/2}</td></tr></table>"),
    "cell_caret": ("ASCII-TeX", "<table><tr><td>must be c^2 = 9</td></tr></table>"),
    "cell_command": ("ASCII-TeX", "<table><tr><td>\\Psi(x)</td></tr></table>"),
    # an inline formula wider than the proof box that clips it (no page overflow)
    "cut_inline_clipped": ("inline formula", '<div class="proof" style="overflow: hidden">'
                           '<p>So <span class="math">\\(' + " + ".join(
                               f"b_{{{i}}}" for i in range(70)) + "\\)</span>.</p></div>"),
    # wider than its table cell
    "cut_inline_cell": ("inline formula", '<table style="table-layout: fixed; width: 300px">'
                        '<tr><td style="overflow: hidden">so <span class="math">\\('
                        + " + ".join(f"c_{{{i}}}" for i in range(40)) + "\\)</span></td>"
                        "</tr></table>"),
    # prose that sends the reader into a fold
    "fold_pointer_p": ("prose points into a fold",
                       "<p>The audit table is folded below; unfold it to see the steps.</p>"),
    "fold_pointer_li": ("prose points into a fold",
                        "<ul><li>the numbers: press Show code cell outputs</li></ul>"),
    "fold_pointer_caption": ("prose points into a fold",
                             "<figure><figcaption>Open the cell above for the data."
                             "</figcaption></figure>"),
    # a table inside a folded output (hide-output) that the prose names by number or link
    "folded_table_number": ("prose names Table 3",
                            "<p>Table 3 lists every setting.</p>" + FOLDED_OUTPUT),
    "folded_table_link": ("links to a folded output",
                          '<p>As <a href="#tab-settings">the settings table</a> shows.</p>'
                          + FOLDED_OUTPUT),
}

#: pages that must pass: what the formatter prints, and things the new checks must not flag
CLEAN = {
    "clean_cells": (
        "<table><tr><th>setting</th><th>holds</th><th>bound</th>"
        '<th><span class="math">\\(\\|W_c\\|_{1,\\infty}\\)</span></th><th>code</th></tr>'
        "<tr><td>False positives are rare; True to the paper</td><td>\u2713</td>"
        "<td>1.39 \u00d7 10\u2074</td><td>\u22122.50</td><td><code>x_{i} ** 2</code></td></tr>"
        "<tr><td>e.g. 3 epochs, version 2e</td><td>\u2717</td><td>12,345</td><td>0.00123</td>"
        "<td>model 4e</td></tr></table>"
        '<p>A short formula <span class="math">\\(a + b\\)</span> fits its line.</p>'
        '<div class="proof" style="overflow: hidden"><p>And <span class="math">\\('
        + " + ".join(f"d_{{{i}}}" for i in range(8)) + "\\)</span> fits its box.</p></div>"
    ),
    # folds the prose does not point into: a folded input (its output shown), a folded output
    # the prose does not name, a solution in a dropdown that says "folded", "unfold" in code,
    # and "Table 3" named in prose while Table 3 is in view
    "clean_folds": (
        '<div class="cell tag_hide-input"><details class="admonition hide above-input">'
        '<summary><p class="admonition-title">Show code cell source</p></summary>'
        '<div class="cell_input"><pre>x = 1  # folded</pre></div></details>'
        '<div class="cell_output"><table id="tab-shown"><caption><span class="caption-number">'
        "Table 3 </span>shown</caption><tr><td>0.5</td></tr></table></div></div>"
        "<p>Table 3 lists the settings; <code>unfold()</code> is a function, and the provenance"
        ' is below. Fixing <span class="math">\\(a\\)</span>, <span class="math">'
        '\\(b\\)</span> and <span class="math">\\(c\\)</span> decides it.</p>'
        + FOLDED_OUTPUT.replace("Table 3", "Table 4").replace("tab-settings", "tab-prov")
        + '<div class="admonition solution dropdown"><p class="admonition-title">Solution</p>'
        "<p>The proof is folded here, in the fold's own content.</p></div>"
    ),
}


#: faults reported as reader findings (fatal only with --strict); the rest are errors
READER_FINDINGS = {"shrunk_image", "wide_table", "wide_table_in_box", "tex_word",
                   "nan_output", "warning_output", "empty_output", "wide_code", "wide_output",
                   "cut_equation", "bare_reference", "tall_page", "phone_scroll",
                   "code_name_table", "code_name_svg", "cell_bool", "cell_bool_list",
                   "cell_e_notation", "cell_e_short", "cell_norm", "cell_sqrt", "cell_power",
                   "cell_command", "cell_caret", "cut_inline_clipped", "cut_inline_cell",
                   "fold_pointer_p", "fold_pointer_li", "fold_pointer_caption",
                   "folded_table_number", "folded_table_link"}
#: the page budget of the fixture site (the fault page is 6,000 px tall, the others < 2,000)
BUDGET_PX = 5000


def _mathjax_dir() -> Path:
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, cr.PageResult]:
    try:
        cr.find_browser()
    except SystemExit as exc:  # make test needs Chromium; .ci/run installs it
        pytest.fail(str(exc))
    site = tmp_path_factory.mktemp("site")
    static = site / "_static"
    static.mkdir()
    (static / "mathjax").symlink_to(_mathjax_dir())
    buf = io.BytesIO()
    Image.new("RGB", (40, 20), "steelblue").save(buf, format="PNG")
    (static / "figure.png").write_bytes(buf.getvalue())
    buf = io.BytesIO()
    Image.new("RGB", (1000, 400), "darkorange").save(buf, format="PNG")
    (static / "big.png").write_bytes(buf.getvalue())
    (static / "labels.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="100">'
        '<text x="10" y="50" style="font-size: 12px">pacbayes.mag.init</text></svg>')
    wide = "a long table row that scrolls inside its container " * 8
    pages = {"good": ""} | {name: body for name, (_, body) in FAULTS.items()} | CLEAN
    for name, body in pages.items():
        (site / f"{name}.html").write_text(PAGE.format(title=name, prefix="", wide=wide, body=body))
    (site / "index.html").write_text('<meta http-equiv="refresh" content="0; url=good.html">')
    toc = site / "_toc.yml"
    chapters = "".join(f"  - file: {name}\n" for name in [*FAULTS, *CLEAN])
    toc.write_text(f"format: jb-book\nroot: good\nchapters:\n{chapters}")
    results = cr.run(site, site / "shots", toc, width=1000, height=700, mathjax_timeout_s=60,
                     budget_px=BUDGET_PX)
    return {r.docname: r for r in results}


def test_clean_page_passes(report: dict[str, cr.PageResult]) -> None:
    good = report["good"]
    assert good.errors == [] and good.findings == []
    assert good.mathjax.startswith("3.")  # served from the site, no network
    assert good.math_count == 1 and good.image_count == 1


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_tables_and_inline_math_pass(report: dict[str, cr.PageResult], name: str) -> None:
    page = report[name]
    assert page.math_count >= 3 and page.errors == [] and page.findings == [], (
        page.errors, page.findings)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_each_fault_is_found(report: dict[str, cr.PageResult], name: str) -> None:
    expected = FAULTS[name][0]
    found = report[name].findings if name in READER_FINDINGS else report[name].errors
    assert any(expected in e for e in found), (report[name].errors, report[name].findings)


def test_screenshots_are_full_pages(report: dict[str, cr.PageResult]) -> None:
    for r in report.values():
        shot = Image.open(r.screenshot)
        assert shot.size[0] >= 900
        assert shot.size[1] >= 300  # the whole page, not an empty frame
        assert len(shot.convert("L").getcolors(maxcolors=1 << 16) or [0, 0]) > 1


def test_missing_book_is_reported(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="make book"):
        cr.run(tmp_path, tmp_path / "shots", ROOT / "_toc.yml")


def test_site_index_links(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text('<h1 id="x">A</h1><a name="y"></a>')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("<p>sub</p>")
    site = cr.SiteIndex(tmp_path)
    origin = "http://127.0.0.1:1"
    assert site.check(f"{origin}/a.html#x", origin) is None
    assert site.check(f"{origin}/a.html#y", origin) is None
    assert site.check(f"{origin}/sub/", origin) is None
    assert "broken anchor" in (site.check(f"{origin}/a.html#z", origin) or "")
    assert "broken link" in (site.check(f"{origin}/b.html", origin) or "")
    assert "leaves the site" in (site.check(f"{origin}/../etc/passwd", origin) or "")


def test_serve_is_local_and_stops(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    (tmp_path / "p.html").write_text("hello")
    with cr.serve(tmp_path) as (base, failed):
        assert base.startswith("http://127.0.0.1:")
        assert urllib.request.urlopen(f"{base}/p.html", timeout=10).read() == b"hello"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{base}/missing.html", timeout=10)
        assert failed and failed[0].startswith("404")
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{base}/p.html", timeout=2)


def test_missing_browser_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(cr, "CHROMIUM_CANDIDATES", ("/nonexistent/chromium",))
    with pytest.raises(SystemExit, match="apt-get install -y chromium chromium-driver"):
        cr.find_browser()


def test_print_pdf_of_a_single_page(report: dict[str, cr.PageResult], tmp_path: Path) -> None:
    import print_pdf

    site = Path(report["good"].screenshot).parent.parent  # the fixture site (shots/ is inside)
    (site / "book").mkdir(exist_ok=True)
    (site / "book" / "root.html").write_text((site / "good.html").read_text())
    out = tmp_path / "book.pdf"
    size = print_pdf.print_pdf(site, "book/root.html", out, timeout_s=60)
    data = out.read_bytes()
    assert size == len(data) > 1000 and data.startswith(b"%PDF")
    with pytest.raises(SystemExit, match="does not exist"):
        print_pdf.print_pdf(site, "book/missing.html", out)


def test_pending_kinds_are_reported_not_fatal(report: dict[str, cr.PageResult]) -> None:
    assert cr.PENDING <= set(cr.FINDINGS)
    page = report["wide_code"]
    kinds = set(page.counts())
    assert "wide-code" in kinds
    assert page.fatal(strict=False) == []
    assert page.fatal(strict=True, pending=frozenset()) == page.findings
    # pending: not fatal, and the summary names the page with its count
    assert page.fatal(strict=True, pending=frozenset(kinds)) == []
    lines = cr.summary(list(report.values()), frozenset({"wide-code", "tall-page"}))
    assert any(ln.strip().startswith("wide_code:") and "wide-code* 1" in ln for ln in lines)
    # a pending kind that no page fails any more is named for removal
    everything_but = cr.summary([report["good"]], frozenset({"wide-code"}))
    assert "remove from PENDING" in everything_but[-1] and "wide-code" in everything_but[-1]
    with pytest.raises(ValueError, match="kind"):
        page.add("no-such-kind", ["x"])


def test_code_name_labels_are_whole_tokens() -> None:
    names = frozenset({"dist.init", "mnist_shallow"})
    hits = cr.code_name_labels(["distance from initialisation", "dist.init (x)",
                                "best for mnist_shallow.", "mnist_shallower x",
                                "ineq7_min"], names)
    assert hits == [("dist.init (x)", "dist.init"), ("best for mnist_shallow.", "mnist_shallow"),
                    ("ineq7_min", "ineq7_min")]  # a snake_case column name is code too
