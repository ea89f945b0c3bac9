# The two commands of README.md. Each does all set-up (idempotent) first.
.PHONY: matrix test lint test-nightly test-containers corpus soak bootstrap setup setup-all lock

matrix: setup            ## set up and run the default compatibility matrix
	.venv/bin/conformance run

test: setup-all lint     ## set up, lint, then run the project's tests (a lint failure stops here)
	.venv/bin/python -m pytest

lint: bootstrap          ## ruff, mypy, gofmt and go vet (scripts/lint.sh; settings in pyproject.toml)
	bash scripts/lint.sh

test-nightly: setup-all  ## the tests plus the nightly tier (long real cells: every reference fault, ...)
	# SHARD=I/N: the I-th of N shards of them (whole modules), leaving the container backend's
	# tests to make test-containers (the nightly workflow runs the shards and that as parallel jobs).
	.venv/bin/python -m pytest --nightly $(if $(SHARD),--shard $(SHARD) -m "not containers")

test-containers: setup-all  ## the container backend's tests, nightly tier included (needs a Docker engine)
	.venv/bin/python -m pytest --nightly -m containers

corpus: setup           ## the bug corpus: each documented client bug's buggy and fixed releases (corpus.md, .html)
	.venv/bin/conformance corpus --runs-dir $(or $(RUNS_DIR),reports)

soak: setup             ## leak soak: 20 real cells, 5 interrupted with SIGINT; prints what remains (nothing)
	.venv/bin/python bench/soak.py

bootstrap:
	bash scripts/bootstrap.sh

setup: bootstrap
	.venv/bin/conformance setup

setup-all: bootstrap
	.venv/bin/conformance setup --all
	# The container path: a Docker engine (as root: Debian's docker.io, dockerd started), Compose and
	# the images of the default broker and mix. Without root and without an engine this fails and the
	# container tests skip, saying why; as root a failure here fails those tests again, loudly.
	-.venv/bin/conformance setup --backend docker
	-bash scripts/install-chromium.sh   # Debian's chromium for the report render test (skipped without it)

lock:                    ## regenerate requirements.lock from pyproject.toml (needs uv)
	uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 -o requirements.lock
