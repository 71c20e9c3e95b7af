#!/usr/bin/env bash
# What `make up` needs, checked before anything is built: one line per missing thing, each
# saying what to do. Exit 1 when anything is missing. The mesh's own secrets (credentials,
# approval keys) are not asked for: make up generates them (python -m meshkit.secret_files).
#   containers/preflight.sh COMPOSE...     (the compose command the Makefile chose)
# ENV_FILE: the file compose reads (default .env at the project root).
set -uo pipefail
cd "$(dirname "$0")/.."
ENV_FILE=${ENV_FILE:-.env}

problems=()
say() { problems+=("$1"); }

if ! command -v docker >/dev/null 2>&1; then
    say "Docker is not installed: curl -fsSL https://get.docker.com | sh (on a Pi too), then log in again"
elif ! docker info >/dev/null 2>&1; then
    say "Docker does not answer: sudo systemctl start docker, and sudo usermod -aG docker \$USER (log in again)"
else
    if [ $# -eq 0 ] || ! "$@" version >/dev/null 2>&1; then
        say "Docker Compose v2 is missing: sudo apt install docker-compose-plugin (or make install for the bundled copy)"
    fi
    if docker info 2>&1 | grep -q "No memory limit support"; then
        say "the memory cgroup is off, so memory limits are silently ignored: add 'cgroup_enable=memory cgroup_memory=1' to the one line of /boot/firmware/cmdline.txt and reboot"
    fi
fi
command -v python3 >/dev/null 2>&1 \
    || say "python3 is missing (it fetches the locked wheels): sudo apt install python3 python3-venv"

env_value() {
    sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([^#[:space:]][^#]*\).*/\1/p" "$ENV_FILE" \
        2>/dev/null | tail -1
}
if [ ! -f "$ENV_FILE" ]; then
    say "$ENV_FILE is missing: cp .env.example .env, then fill in the values make up names"
else
    [ -n "$(env_value OPENAI_API_KEY)$(env_value OPENAI_BASE_URL)" ] \
        || say ".env: no LLM: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server)"
    [ -n "$(env_value TELEGRAM_BOT_TOKEN)$(env_value CLAWDIA_BOT_TOKEN)" ] \
        || say ".env: TELEGRAM_BOT_TOKEN is empty: create a bot with @BotFather and paste its token"
    [ -n "$(env_value TELEGRAM_USER_ID)" ] \
        || say ".env: TELEGRAM_USER_ID is empty: your numeric Telegram user id (@userinfobot tells it)"
fi

if [ ${#problems[@]} -gt 0 ]; then
    printf 'make up: %s\n' "${problems[@]}" >&2
    exit 1
fi
