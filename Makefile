# Two commands do all set-up on a fresh machine (Python 3.11+ and make):
#   make book   -> creates .venv, installs requirements.txt and the package, builds the HTML book
#                  (with the executed .ipynb of every chapter and its Colab notebook)
#   make test   -> same set-up, then lint + type-check, the unit tests, the rendering check of the
#                  built book in headless Chromium, every chapter's Colab notebook under nbval,
#                  and the student edition (solutions removed; checked that none leaks)
# Also: make lab [PORT=8899] (JupyterLab on the chapters), make pdf (the whole book as one PDF), make bench,
#       make instructors (the instructors' edition: solutions, grading key, exam, schedule, chapter summaries).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The unit tests run in one process per core (at most 4; pytest-xdist).
PYTEST := $(BIN)/python -m pytest -p no:cacheprovider
PYTEST_PARALLEL := -n auto --maxprocesses 4
SITE   := _build/html
export PYTHONHASHSEED := 0

.PHONY: book test unit check-site colab-test student instructors lab pdf bench results-paper clean

# Installed in one hash-checked step: every wheel, platform-specific ones (torch, numpy, ...)
# included, checked against its SHA-256 in requirements.lock (tools/lock.py writes it from
# requirements.txt), then the package genbounds (editable, no build isolation: its build
# backend setuptools is a locked pin too). The stamp is not trusted: before every target,
# tools/venv_check.py checks $(VENV) against the lock (each package's version, the hash of the
# wheel it came from, every installed file against its RECORD hash; a few seconds) and a
# mismatch rebuilds $(VENV) from scratch. An environment without the check's manifest (made
# before it existed) is compared file by file with the lock's hash-checked wheels first, and
# kept if equal. pip prints one line per package as it goes.
PIP := $(BIN)/python -m pip --disable-pip-version-check
.PHONY: venv-check
venv-check: ;
# VENV_CHECK=0 skips the check for an environment that exists (e.g. one whose torch was replaced
# by a CUDA build, which the lock cannot hold: README, "Running on a GPU"); it says so.
VENV_CHECK ?= 1
$(STAMP): venv-check
	@if [ "$(VENV_CHECK)" = 0 ] && [ -f $@ ]; then \
	  echo "== $(VENV) NOT checked against requirements.lock (VENV_CHECK=0)"; exit 0; fi; \
	rc=0; $(PYTHON) tools/venv_check.py --venv $(VENV) --adopt || rc=$$?; \
	if [ $$rc = 0 ]; then touch $@; exit 0; fi; if [ $$rc != 1 ]; then exit $$rc; fi; \
	set -ex; \
	: "== Setting up $(VENV) from requirements.lock (several minutes on a first run)"; \
	$(PYTHON) -m venv --clear $(VENV); \
	$(PIP) uninstall --yes --quiet setuptools; \
	$(PIP) install --progress-bar off --require-hashes --no-deps --only-binary :all: \
	  --report $(VENV)/.pip-report.json -r requirements.lock; \
	$(PIP) install --quiet --no-deps --no-build-isolation -e .; \
	$(PIP) check; \
	$(PYTHON) tools/venv_check.py --venv $(VENV) --write-manifest $(VENV)/.pip-report.json; \
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
	$(PYTEST) $(PYTEST_PARALLEL) tests
	$(AVX2_CLASS) $(PYTEST) tests/test_train_golden.py -q
	$(MAKE) check-site colab-test student

# What a reader sees: every page in headless Chromium; screenshots in _build/screenshots/.
check-site: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/check_rendering.py --html $(SITE) --out _build/screenshots --strict

# The deployed Colab notebooks, executed once each under nbval in a fresh environment.
colab-test: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/colab_nbval.py --site $(SITE)

# The student edition: every chapter without its solutions (sources, HTML, .ipynb) in
# _build/student/; fails if any solution text remains or a cell needs a solution's names.
student: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/student_edition.py

# The instructors' edition, off the public site: worked solutions, grading key, exam set, schedule
# and one page per chapter in _build/instructors/ (from instructors/ and the built book); each
# chapter's page is printed in headless Chromium and must fit one A4 page.
instructors: $(STAMP) $(SITE)/index.html
	$(BIN)/python tools/instructors_edition.py --check-print

unit: $(STAMP)
	$(PYTEST) $(PYTEST_PARALLEL) tests
	$(AVX2_CLASS) $(PYTEST) tests/test_train_golden.py -q

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
