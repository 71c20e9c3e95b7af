#!/usr/bin/env bash
# The end of `make up`, quiet: start the stack, wait until every service is healthy, then one
# line per service and the result. A service that is not healthy gets its own last error
# line below its name (the last error its log shows, else what its health probe answered),
# so the reason is on screen without `make logs`. Compose's own output goes to the log.
#   containers/up.sh LOG COMPOSE...    (the log make up writes, the compose command it chose)
# RECREATE not empty (the secret files that changed) recreates every container: compose does
# not notice a secret file's new content.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$1
shift
compose=("$@")

started=$(date +%s)
"${compose[@]}" up --detach --wait --wait-timeout 180 ${RECREATE:+--force-recreate} \
    >>"$log" 2>&1
up=$?

# The last line of a container's log that reads as an error, else its last line.
last_error() {
    local lines
    lines=$(docker logs --tail 200 "$1" 2>&1)
    { grep -E 'configuration error|ERROR|CRITICAL|Error|error:' <<<"$lines" || tail -n 1 <<<"$lines"; } \
        | tail -n 1 | cut -c1-300
}

failed=0
for service in $("${compose[@]}" config --services | sort); do
    id=$("${compose[@]}" ps --all --quiet "$service" 2>/dev/null | head -n 1)
    if [ -z "$id" ]; then
        printf '  %-16s not created\n' "$service"
        failed=1
        continue
    fi
    read -r status health code restarts < <(docker inspect --format \
        '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}} {{.State.ExitCode}} {{.RestartCount}}' \
        "$id")
    case "$status/$health" in
        running/healthy | running/none)
            printf '  %-16s %s\n' "$service" "${health/none/running}"
            continue ;;
        running/*) state=$health ;;
        # Never started, or stopped cleanly earlier (the restart policy restarts whatever
        # exits by itself): compose did not start it because a service it depends on failed.
        created/* | exited/*)
            if [ "$code" = 0 ]; then
                state="not started: it waits for the services it depends on"
            else
                state="exited (exit $code)"
            fi ;;
        *) state="$status (exit $code)" ;;
    esac
    [ "$restarts" -gt 0 ] && state="$state, restarted $restarts times"
    printf '  %-16s %s\n' "$service" "$state"
    failed=1
    [[ $state == "not started"* ]] && continue
    probe=$(docker inspect --format \
        '{{if .State.Health}}{{range .State.Health.Log}}{{.Output}}{{end}}{{end}}' "$id" \
        | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-300)
    # Running and never restarted but not healthy: what /health answers names the failing
    # check. Stopped, restarting or restarted: its log says why it exited (a probe's answer is
    # then only "connection refused" from a process that was not up yet).
    if [ "$status" = running ] && [ "$restarts" -eq 0 ] && [ -n "$probe" ]; then
        reason="health: $probe"
    else
        reason=$(last_error "$id")
        reason=${reason:-${probe:+health: $probe}}
    fi
    [ -n "$reason" ] && printf '      %s\n' "$reason"
done

if [ "$up" -ne 0 ] || [ "$failed" -ne 0 ]; then
    echo "make up: not every service became healthy (above: each one's last error; make logs" \
        "shows more, $log what the build and compose printed)" >&2
    exit 1
fi
echo "all healthy $(($(date +%s) - started)) s after start."
