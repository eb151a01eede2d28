#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL cluster: initdb in a temporary directory, a
# server on a free loopback port (as the user postgres when run as root: PostgreSQL refuses
# root), LETHE_TEST_POSTGRES set to its address, and everything removed afterwards.
#   tests/pg/with-server.sh cargo test -p lethe-engine --test backends engine::
# LETHE_PG_BIN names another server's bin directory (make pgvector unpacks PostgreSQL 16
# with pgvector there); by default Debian's newest PostgreSQL is used. The server does not sync
# to disk (tests need no durability) unless LETHE_PG_FSYNC=on (benchmarks that compare with a file).
set -euo pipefail
bin=${LETHE_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bin/initdb" ] || { echo "no PostgreSQL server at '$bin' (Debian: apt-get install postgresql; pgvector: make pgvector)" >&2; exit 1; }
dir=$(mktemp -d /tmp/lethe-pg.XXXXXX)
as_owner() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" -eq 0 ] && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() { as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 \
	|| { cat "$dir/initdb.log" >&2; exit 1; }
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
	-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=${LETHE_PG_FSYNC:-off} -c max_connections=200" start >/dev/null \
	|| { cat "$dir/server.log" >&2; exit 1; }
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}')$([ -f "$bin/../share/postgresql/extension/vector.control" ] && echo ' with pgvector') on 127.0.0.1:$port for: $*"
# A test that takes the server away and brings it back (the window's reconnect) runs these.
cat >"$dir/stop" <<EOF
#!/usr/bin/env bash
$( [ "$(id -u)" -eq 0 ] && echo "runuser -u postgres --" ) "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
EOF
cat >"$dir/start" <<EOF
#!/usr/bin/env bash
$( [ "$(id -u)" -eq 0 ] && echo "runuser -u postgres --" ) "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
	-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=${LETHE_PG_FSYNC:-off} -c max_connections=200" start >/dev/null
EOF
chmod +x "$dir/stop" "$dir/start"
LETHE_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port" LETHE_TEST_PG_STOP="$dir/stop" LETHE_TEST_PG_START="$dir/start" "$@"
