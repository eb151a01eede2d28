#!/usr/bin/env bash
# `lethe` with its `--db PATH` replaced by a database of its own on the server in
# $LETHE_TEST_POSTGRES (one per path, created and set up on first use), so that a harness
# written for SQLite files runs unchanged against the team store. LETHE_BIN names the binary.
#   tests/pg/with-server.sh python3 locomo_recall.py tests/pg/lethe-on-pg.sh DIR   (the LoCoMo harness)
set -euo pipefail
bin=${LETHE_BIN:-target/release/lethe}
server=${LETHE_TEST_POSTGRES:?LETHE_TEST_POSTGRES names the server (tests/pg/with-server.sh sets it)}
args=()
while [ $# -gt 0 ]; do
	if [ "$1" = --db ] && [ $# -ge 2 ]; then
		name=lethe_$(printf %s "$2" | sha1sum | cut -c1-20)
		if [ -z "$(psql "$server/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'")" ]; then
			psql "$server/postgres" -qc "CREATE DATABASE $name" >/dev/null
			"$bin" --db "$server/$name" admin setup >/dev/null
		fi
		args+=(--db "$server/$name")
		shift 2
	else
		args+=("$1")
		shift
	fi
done
exec "$bin" "${args[@]}"
