# Two commands do all set-up on a fresh machine (Python 3.11+ and make):
#   make book   -> creates .venv, installs requirements.txt and the package, builds the HTML book
#   make test   -> same set-up, then lint + type-check, the unit tests, and every notebook under nbval
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/*.md))
export PYTHONHASHSEED := 0

.PHONY: book test unit bench results-paper clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --all -W -n --keep-going
	@echo "Book: _build/html/index.html"

test: $(STAMP)
	rm -rf _build/nbval && mkdir -p _build/nbval
	for nb in $(NOTEBOOKS); do \
	  $(BIN)/jupytext --quiet --to ipynb --output _build/nbval/$$(basename $$nb .md).ipynb $$nb || exit 1; \
	done
	$(BIN)/ruff check src tests
	$(BIN)/mypy src/genbounds
	$(BIN)/python -m pytest tests _build/nbval --nbval-lax --current-env -p no:cacheprovider

unit: $(STAMP)
	$(BIN)/python -m pytest tests -p no:cacheprovider

results-paper: $(STAMP)
	$(BIN)/python -m genbounds reproduce --scale paper

bench: $(STAMP)
	$(BIN)/genbounds-bench --out _build/bench.json

clean:
	rm -rf _build results/quick
