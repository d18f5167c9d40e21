# FLASK Eval developer commands. `make run` and `make test` are all a newcomer needs.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Two stamps: the runtime install (`make run`) and the development one (`make test`,
# `make lint`, CI), so that running the app never installs the test tools.
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
PIP := $(PY) -m pip install --disable-pip-version-check
# install_requirements FILE: uv (requirements-bootstrap.txt) installs FILE's pinned
# wheels in parallel; pip does it alone when uv cannot be installed or fails.
install_requirements = ($(PIP) -q -r requirements-bootstrap.txt \
	&& $(VENV)/bin/uv pip install --python $(PY) -r $(1)) || $(PIP) -r $(1)
PORT ?= 8000
# The SQLite database, media and the embedded broker live here (see flaskapp/settings.py).
VAR_DIR := $(or $(FLASK_VAR_DIR),var)
# The suite runs on every core (pytest-xdist; each worker has its own test database).
PYTEST_ARGS ?= -n auto

export PORT

# The development targets run on a random local key (var/dev-secret-key) unless
# DJANGO_SECRET_KEY is set; outside them the app refuses to start without a key
# (flaskapp/secret_key.py). Tests get FLASK_DEV=1 from pyproject.toml (pytest-env).
run migrate demo worker bench: export FLASK_DEV ?= 1

.PHONY: help venv dev-venv parquet run test lint format migrate worker bench demo

help:
	@echo "make run      start the app and a worker on http://127.0.0.1:$(PORT) (demo data, SQLite)"
	@echo "make test     install requirements-dev.txt, run the test suite (PYTEST_ARGS=...)"
	@echo "make lint     ruff check, ruff format --check, import contracts"
	@echo "make format   fix lint and format the code"
	@echo "make migrate  apply database migrations"
	@echo "make demo     load the demo users and dataset"
	@echo "make worker   run one Celery worker in the foreground"
	@echo "make bench    run every bench/*.py"
	@echo "make venv     create .venv and install requirements.txt (what the app needs)"
	@echo "make dev-venv also install requirements-dev.txt (tests, lint; make test does)"
	@echo "make parquet  add pyarrow (requirements-parquet.txt) for Parquet imports and exports"

venv: $(STAMP)

dev-venv: $(DEV_STAMP)

# Parquet imports and exports need pyarrow, which `make run` leaves out (flaskapp/optional.py).
parquet: venv
	$(call install_requirements,requirements-parquet.txt)

# Reinstall whenever a requirements file is newer than the last install.
$(STAMP): requirements.txt requirements-bootstrap.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(call install_requirements,requirements.txt)
	touch $(STAMP)

$(DEV_STAMP): requirements.txt requirements-dev.txt requirements-parquet.txt requirements-bootstrap.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(call install_requirements,requirements-dev.txt)
	touch $(STAMP) $(DEV_STAMP)

$(VAR_DIR):
	mkdir -p $(VAR_DIR)

migrate: venv | $(VAR_DIR)
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py load_demo

# No collectstatic: with FLASK_DEV=1 WhiteNoise serves static files from their
# folders (flaskapp/settings.py, WHITENOISE_USE_FINDERS).
run: migrate
	$(PY) manage.py load_demo
	$(PY) -m flaskapp.launcher --port $(PORT)

worker: venv | $(VAR_DIR)
	$(PY) -m celery -A flaskapp worker --pool=prefork --concurrency=$(or $(WORKER_CONCURRENCY),4) --prefetch-multiplier=1 -Q celery,judge --loglevel=INFO

test: dev-venv
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: dev-venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

format: dev-venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Benchmarks print figures; they are never part of the pass/fail suite.
bench: dev-venv
	@set -e; found=0; for f in bench/*.py; do \
		[ -e "$$f" ] || continue; found=1; \
		echo "== $$f"; PYTHONPATH=$(CURDIR) $(PY) "$$f"; \
	done; [ $$found = 1 ] || echo "no benchmarks in bench/"
