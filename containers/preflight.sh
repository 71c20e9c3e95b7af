#!/usr/bin/env bash
# What `make up` needs, checked before anything is built: one line per missing or malformed
# thing, each saying what to do. Exit 1 when anything is wrong. The mesh's own secrets (credentials,
# approval keys) are not asked for: make up generates them (clawmesh secrets).
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
        say "Docker Compose v2 is missing: make install (its venv carries it: clawmesh compose ... where the docs say docker compose ...), or Docker's own packages, plugin included: curl -fsSL https://get.docker.com | sh"
    fi
    if docker info 2>&1 | grep -q "No memory limit support"; then
        say "the memory cgroup is off, so memory limits are silently ignored: add 'cgroup_enable=memory cgroup_memory=1' to the one line of /boot/firmware/cmdline.txt and reboot"
    fi
fi
command -v python3 >/dev/null 2>&1 \
    || say "python3 is missing (it fetches the locked wheels): sudo apt install python3 python3-venv"

# The value .env gives NAME, as compose and dotenv read it: the last assignment, its
# comment, surrounding blanks and quotes removed.
env_value() {
    local value
    value=$(sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([^#[:space:]][^#]*\).*/\1/p" \
        "$ENV_FILE" 2>/dev/null | tail -1)
    value=${value%"${value##*[![:space:]]}"}
    if [[ $value =~ ^\"(.*)\"$ || $value =~ ^\'(.*)\'$ ]]; then value=${BASH_REMATCH[1]}; fi
    printf '%s' "$value"
}
# Values are checked for their shape too, not only for being there: a token pasted with a
# piece missing, or a user name where the id goes, would otherwise pass here and leave a
# service restarting. Secrets are never echoed, only named.
BOT_TOKEN='^[0-9]+:[A-Za-z0-9_-]{30,}$'   # <the bot's id>:<35 url-safe characters>
if [ ! -f "$ENV_FILE" ]; then
    say "$ENV_FILE is missing: cp .env.example .env, then fill in the values make up names"
else
    base_url=$(env_value OPENAI_BASE_URL)
    api_key=$(env_value OPENAI_API_KEY)
    if [ -n "$base_url" ]; then
        [[ $base_url =~ ^https?://[^[:space:]]+$ ]] \
            || say ".env: OPENAI_BASE_URL=$base_url is not an address: give the server's URL, e.g. http://host.docker.internal:11434/v1 for one on this machine"
    elif [ -z "$api_key" ]; then
        say ".env: no LLM: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server)"
    elif ! [[ $api_key =~ ^sk-[^[:space:]]+$ ]]; then
        say ".env: OPENAI_API_KEY does not look like an OpenAI API key (sk-..., one word): copy it again from https://platform.openai.com/api-keys, or set OPENAI_BASE_URL for another server"
    fi
    tokens=$(sed -n 's/^[[:space:]]*\([A-Z0-9_]*_BOT_TOKEN\)[[:space:]]*=.*/\1/p' "$ENV_FILE" | sort -u)
    set_tokens=0
    for name in $tokens; do
        token=$(env_value "$name")
        [ -n "$token" ] || continue
        set_tokens=1
        [[ $token =~ $BOT_TOKEN ]] \
            || say ".env: $name does not look like a bot token (<digits>:<35 letters, digits, - or _>): copy it again from @BotFather (/mybots, API Token)"
    done
    [ "$set_tokens" = 1 ] \
        || say ".env: TELEGRAM_BOT_TOKEN is empty: create a bot with @BotFather and paste its token"
    user_id=$(env_value TELEGRAM_USER_ID)
    if [ -z "$user_id" ]; then
        say ".env: TELEGRAM_USER_ID is empty: your numeric Telegram user id (@userinfobot tells it)"
    elif ! [[ $user_id =~ ^[1-9][0-9]*$ ]]; then
        say ".env: TELEGRAM_USER_ID=$user_id is not a Telegram user id, which is a positive number: @userinfobot tells yours"
    fi
fi

if [ ${#problems[@]} -gt 0 ]; then
    printf 'make up: %s\n' "${problems[@]}" >&2
    exit 1
fi
