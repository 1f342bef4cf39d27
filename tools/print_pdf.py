"""``make pdf``: print the single-page HTML build of the book to one PDF with headless Chromium.

The page is served on 127.0.0.1, MathJax is waited for (as in the rendering check), folded
solutions are opened, and Chromium's print-to-PDF writes A4 pages with backgrounds.

    python tools/print_pdf.py --site _build/singlehtml --out _build/book.pdf
"""

from __future__ import annotations

import argparse
import base64
import shutil
import sys
import time
from pathlib import Path

import check_rendering as cr  # tools/check_rendering.py
import colab  # tools/colab.py

A4_INCH = (8.27, 11.69)


def print_pdf(site: Path, page: str, out: Path, timeout_s: float = 110.0) -> int:
    """Write the PDF of ``site/page`` to ``out``; return its number of bytes."""
    if not (site / page).exists():
        raise SystemExit(f"print_pdf: {site / page} does not exist (build the single-page HTML)")
    # Sphinx writes the single page at the root document's path (book/intro.html) but with links
    # relative to the top of the site (_static/, _images/): open a copy placed at the top
    top = site / "_book_single_page.html"
    shutil.copyfile(site / page, top)
    driver = cr.make_driver(1280, 900)
    try:
        with cr.serve(site) as (base, _failed):
            driver.get(f"{base}/{top.name}")
            mj = driver.execute_async_script(
                cr._WAIT_MATHJAX_JS.replace("arguments_timeout", str(int(timeout_s * 1000)))
            )
            if mj.get("needed") and not mj.get("loaded"):
                raise SystemExit(f"print_pdf: MathJax did not typeset the book: {mj}")
            # open folded solutions and code cells, so the PDF shows them
            driver.execute_script(
                "document.querySelectorAll('details').forEach(d => d.open = true);"
                "window.dispatchEvent(new Event('beforeprint'));"
            )
            time.sleep(1)
            # Chrome DevTools' printToPDF (WebDriver's print command times out on a long book)
            pdf = base64.b64decode(
                driver.execute_cdp_cmd(
                    "Page.printToPDF",
                    {
                        "printBackground": True,
                        "paperWidth": A4_INCH[0],
                        "paperHeight": A4_INCH[1],
                        "marginTop": 0.6,
                        "marginBottom": 0.6,
                        "marginLeft": 0.6,
                        "marginRight": 0.6,
                    },
                )["data"]
            )
    finally:
        driver.quit()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pdf)
    return len(pdf)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=Path("_build/singlehtml"))
    parser.add_argument("--toc", type=Path, default=Path("_toc.yml"))
    parser.add_argument("--out", type=Path, default=Path("_build/book.pdf"))
    args = parser.parse_args(argv)
    # the single-page builder writes the whole book into the root document's page
    root = colab.toc_docnames(args.toc)[0]
    size = print_pdf(args.site, f"{root}.html", args.out)
    print(f"print_pdf: {args.out} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
