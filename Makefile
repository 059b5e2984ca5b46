# Every target runs inside .venv, which `make install` creates from constraints.txt.
PY      := .venv/bin/python
VENV    := .venv/.installed
export CRAWL_DATA_DIR ?= $(CURDIR)/var

.PHONY: install services test test-unit test-integration test-e2e audit soak demo lint lock clean

install: $(VENV)

$(VENV): pyproject.toml constraints.txt
	python3 -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q -c constraints.txt -e '.[dev]'
	touch $(VENV)

# Start Redis and Postgres if they are not running (CI machines have them; laptops may not).
services:
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || \
		redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || \
		(command -v pg_ctlcluster >/dev/null && \
		 pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start) || true

test: install services
	$(PY) -m pytest -q tests

test-unit: install
	$(PY) -m pytest -q tests/unit

test-integration: install services
	$(PY) -m pytest -q tests/integration

test-e2e: install services
	$(PY) -m pytest -q tests/e2e

# Known vulnerabilities in the pins (part of `test`; skipped with a message when offline).
audit: install
	$(PY) -m pytest -q -rs tests/test_audit.py

# Long run, not part of `test`: SOAK_MINUTES (10), SOAK_HOSTS (1000), SOAK_PAGES (30).
soak: install
	$(PY) bench/soak.py

demo: install services
	$(PY) -m crawlapp.demo

lint: install
	.venv/bin/ruff check crawlapp tasks tests celeryconfig.py
	.venv/bin/mypy crawlapp tasks

# Re-pin every installed package after changing pyproject.toml.
lock:
	rm -rf .venv-lock && python3 -m venv .venv-lock && .venv-lock/bin/pip install -q --upgrade pip
	.venv-lock/bin/pip install -q -e '.[dev]'
	.venv-lock/bin/pip freeze --exclude-editable | grep -v '^-e' > constraints.txt
	rm -rf .venv-lock

clean:
	rm -rf .venv var .pytest_cache
