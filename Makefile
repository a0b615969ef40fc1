# The README and .ci/run call these targets.
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench preview eval-agent eval-live

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

# The agent eval (eval/agent, docs/local-models.md): replayed from recordings (what CI runs in the tests), or live
# against a local OpenAI-compatible server already listening on EVAL_BASE_URL (e.g. llama-cpp-python's, started as
# docs/local-models.md says). Live runs are niced and one incident at a time (a CPU model takes minutes per incident);
# EVAL_ARGS passes more options, e.g. EVAL_ARGS="--record qwen2.5-coder-1.5b --incident 01_".
EVAL_BASE_URL ?= http://127.0.0.1:8000/v1
EVAL_MODEL ?= qwen2.5-coder-1.5b
EVAL_ARGS ?=
eval-agent: setup
	$(BIN)/diagbot eval-agent eval/agent

eval-live: setup
	OPENAI_BASE_URL=$(EVAL_BASE_URL) OPENAI_API_KEY=$${OPENAI_API_KEY:-local} DIAG_MODEL=$(EVAL_MODEL) \
	DIAG_MODEL_TIMEOUT_S=$${DIAG_MODEL_TIMEOUT_S:-900} DIAG_RUN_DEADLINE_S=$${DIAG_RUN_DEADLINE_S:-2400} \
	DIAG_ROUTER_TIMEOUT_S=$${DIAG_ROUTER_TIMEOUT_S:-600} DIAG_MODEL_MAX_TOKENS=$${DIAG_MODEL_MAX_TOKENS:-1024} \
	DIAG_MAX_STEPS=$${DIAG_MAX_STEPS:-5} \
	nice -n 19 $(BIN)/diagbot eval-agent eval/agent --live $(EVAL_ARGS)
