# Two commands do all set-up on a fresh machine (Python 3.11+ and make):
#   make book   -> creates .venv, installs requirements.txt and the package, builds the HTML book
#                  (with the executed .ipynb of every chapter and its Colab notebook)
#   make test   -> same set-up, then lint + type-check, the unit tests, the rendering check of the
#                  built book in headless Chromium, and every chapter's Colab notebook under nbval
# Also: make lab (JupyterLab on the chapters), make pdf (the whole book as one PDF), make bench.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SITE   := _build/html
export PYTHONHASHSEED := 0

.PHONY: book test unit check-site colab-test lab pdf bench results-paper clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --all -W -n --keep-going
	@echo "Book: $(SITE)/index.html"

# `make test` checks the built book; it builds it first when there is none.
$(SITE)/index.html:
	$(MAKE) book

test: $(STAMP) $(SITE)/index.html
	$(BIN)/ruff check src tests tools
	$(BIN)/mypy src/genbounds
	cd tools && MYPYPATH=. ../$(BIN)/mypy --cache-dir ../.mypy_cache *.py
	$(BIN)/python -m pytest tests -p no:cacheprovider
	$(MAKE) check-site colab-test

# What a reader sees: every page in headless Chromium; screenshots in _build/screenshots/.
check-site: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/check_rendering.py --html $(SITE) --out _build/screenshots

# The deployed Colab notebooks, executed once each under nbval in a fresh environment.
colab-test: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/colab_nbval.py --site $(SITE)

unit: $(STAMP)
	$(BIN)/python -m pytest tests -p no:cacheprovider

# JupyterLab in the project's environment; the .md chapters open as notebooks (jupytext).
lab: $(STAMP)
	$(BIN)/python tools/lab.py

# The whole book as one PDF: the single-page HTML build printed by headless Chromium.
pdf: $(STAMP)
	$(BIN)/jupyter-book build . --all --builder singlehtml -W -n --keep-going
	$(BIN)/python tools/print_pdf.py --site _build/singlehtml --out _build/book.pdf

results-paper: $(STAMP)
	$(BIN)/python -m genbounds reproduce --scale paper

bench: $(STAMP)
	$(BIN)/genbounds-bench --out _build/bench.json

clean:
	rm -rf _build results/quick
