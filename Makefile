# The README and .ci/run call these targets.
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench preview

setup: $(BIN)/diagbot

$(BIN)/diagbot: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(BIN)/diagbot

demo: setup
	$(BIN)/diagbot demo

test: setup
	$(BIN)/pytest -q

lint: setup
	$(BIN)/ruff check core bot entrypoints testkit tests bench demo
	$(BIN)/mypy core bot entrypoints testkit tests bench demo

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# README pictures: each message kind from the real renderers as HTML, screenshotted by headless Chromium
# (Debian: apt-get install -y chromium) into docs/preview/*.png.
preview: setup
	$(BIN)/python -m entrypoints.preview
