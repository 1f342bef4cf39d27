# Two commands do all set-up on a fresh machine (Python 3.11+ and make):
#   make book   -> creates .venv, installs requirements.txt and the package, builds the HTML book
#                  (with the executed .ipynb of every chapter and its Colab notebook)
#   make test   -> same set-up, then lint + type-check, the unit tests, the rendering check of the
#                  built book in headless Chromium, every chapter's Colab notebook under nbval,
#                  and the student edition (solutions removed; checked that none leaks)
# Also: make lab [PORT=8899] (JupyterLab on the chapters), make pdf (the whole book as one PDF), make bench.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SITE   := _build/html
export PYTHONHASHSEED := 0

.PHONY: book test unit check-site colab-test student lab pdf bench results-paper clean

# Installed in two steps: the pure-Python pins first, each checked against its SHA-256 in
# requirements.lock (tools/lock.py writes it), then the platform-specific wheels (torch, numpy,
# ...) pinned by version in requirements.txt. pip prints one line per package as it goes.
PIP := $(BIN)/python -m pip --disable-pip-version-check
$(STAMP): requirements.txt requirements.lock pyproject.toml
	@echo "== Setting up $(VENV): $$(grep -c '==' requirements.txt) pinned packages (several minutes on a first run)"
	$(PYTHON) -m venv $(VENV)
	@echo "== 1/3 pure-Python packages, hash-checked (requirements.lock)"
	$(PIP) install --progress-bar off --require-hashes --no-deps -r requirements.lock
	@echo "== 2/3 the platform-specific packages (requirements.txt)"
	$(PIP) install --progress-bar off -r requirements.txt
	@echo "== 3/3 the package genbounds (editable)"
	$(PIP) install --quiet --no-deps -e .
	touch $@

# The experiments first (resumable, progress per unit), then the pages; a failure names the
# chapter and cell (tools/build_book.py).
book: $(STAMP)
	$(BIN)/python tools/build_book.py

# The engine's golden tests run twice: under this machine's CPU class (with the whole suite) and
# under AVX2 kernels (torch's ATen, MKL, numpy's SIMD dispatch), since their bitwise claims hold
# per CPU class only and a reader's machine may be of another class (issue 25).
AVX2_CLASS := ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
	NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"

# `make test` checks the built book; it builds it first when there is none.
$(SITE)/index.html:
	$(MAKE) book

test: $(STAMP) $(SITE)/index.html
	$(BIN)/ruff check src tests tools
	$(BIN)/mypy src/genbounds
	cd tools && MYPYPATH=. ../$(BIN)/mypy --cache-dir ../.mypy_cache *.py
	$(BIN)/python -m pytest tests -p no:cacheprovider
	$(AVX2_CLASS) $(BIN)/python -m pytest tests/test_train_golden.py -q -p no:cacheprovider
	$(MAKE) check-site colab-test student

# What a reader sees: every page in headless Chromium; screenshots in _build/screenshots/.
check-site: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/check_rendering.py --html $(SITE) --out _build/screenshots --strict

# The deployed Colab notebooks, executed once each under nbval in a fresh environment.
colab-test: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/colab_nbval.py --site $(SITE)

# The student edition: every chapter without its solutions (sources, HTML, .ipynb) in
# _build/student/; fails if any solution text remains or a cell needs a solution's names.
student: $(STAMP)
	$(BIN)/python tools/student_edition.py

unit: $(STAMP)
	$(BIN)/python -m pytest tests -p no:cacheprovider
	$(AVX2_CLASS) $(BIN)/python -m pytest tests/test_train_golden.py -q -p no:cacheprovider

# JupyterLab in the project's environment; the .md chapters open as notebooks (jupytext).
lab: $(STAMP)
	$(BIN)/python tools/lab.py $(if $(PORT),--port $(PORT))

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
