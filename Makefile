# The two commands a newcomer needs:
#   make demo   check + render the bundled example into build/
#   make test   every test (unit, golden, flows, local Ray head, the e2e tier on a real control plane), plus ruff and mypy
# Both create .venv and install what they need on a fresh machine.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
EXAMPLE_RECIPE := examples/grpo_swe.yaml
EXAMPLE_INFRA  := examples/grpo_swe.infra.yaml

.PHONY: demo test unit lint golden generated bench clean controlplane

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dockyard-k8s check $(EXAMPLE_RECIPE) --infra $(EXAMPLE_INFRA)
	rm -rf build/grpo_swe
	$(BIN)/dockyard-k8s render $(EXAMPLE_RECIPE) --infra $(EXAMPLE_INFRA) --output-dir build/grpo_swe
	@echo "rendered: build/grpo_swe (kubectl apply -k build/grpo_swe)"

test: $(STAMP) lint controlplane
	$(BIN)/python -m pytest

# The real control plane the e2e tier runs on (e2e/controlplane/README.md): built once per pin set,
# cold in about 8 minutes on 2 cores, then reused; pytest starts and stops it.
controlplane: $(STAMP)
	scripts/controlplane.sh build

unit: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not e2e"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

# Regenerate golden files after an intended rendering or message change; review `git diff tests/golden`.
golden: $(STAMP)
	DOCKYARD_UPDATE_GOLDEN=1 $(BIN)/python -m pytest tests/golden -q

# Everything generated from the infra schema (a test fails when one is stale).
generated: $(STAMP)
	$(BIN)/dockyard-k8s schema > schemas/infra.schema.json
	$(BIN)/dockyard-k8s schema --markdown > docs/infra-spec.md
	$(BIN)/python -m dockyard_k8s.config.typegen > src/dockyard_k8s/config/infra_types.py

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
