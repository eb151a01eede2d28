#!/usr/bin/env bash
# 1, 8 and 32 agents, each with its own `lethe mcp` process, on one store of 100k memories, the
# team store beside an SQLite file (tests/pg/bench-agents.py measures). Run inside tests/pg/with-server.sh (make bench-team):
# the file is written by `lethe-bench --make-db` (realistic workload), the team store gets it by
# `lethe push`, so both start with the same memories.
#   LETHE_BIN=… LETHE_BENCH_BIN=… BENCH_N=100000 BENCH_AGENTS=1,8,32 BENCH_SECONDS=60 tests/pg/bench-agents.sh OUT.json
set -euo pipefail
cd "$(dirname "$0")/../.."
lethe=${LETHE_BIN:-$PWD/target/release/lethe}
bench=${LETHE_BENCH_BIN:-$PWD/target/release/lethe-bench}
server=${LETHE_TEST_POSTGRES:?run inside tests/pg/with-server.sh}
out=${1:-target/bench-agents.json}
export LETHE_MODEL_DIR=${LETHE_MODEL_DIR:-$PWD/target/model/potion-base-8M}
n=${BENCH_N:-100000}
dir=$(mktemp -d /tmp/lethe-bench-agents.XXXXXX)
name=lethe_bench_agents_$$
cleanup() { psql "$server/postgres" -qc "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
t=$(date +%s)
"$bench" --make-db "$dir/store.db" --workload realistic --sizes "$n" >/dev/null
echo "bench-agents: $n memories in a file in $(( $(date +%s) - t )) s" >&2
psql "$server/postgres" -qc "CREATE DATABASE $name" >/dev/null
"$lethe" --db "$server/$name" admin setup >/dev/null
t=$(date +%s)
"$lethe" --db "$server/$name" push "$dir/store.db" >/dev/null
echo "bench-agents: pushed to the team store in $(( $(date +%s) - t )) s" >&2
cp "$dir/store.db" "$dir/file.db"
args=(--lethe "$lethe" --agents "${BENCH_AGENTS:-1,8,32}" --seconds "${BENCH_SECONDS:-60}")
python3 tests/pg/bench-agents.py "${args[@]}" --db "$dir/file.db" --label "SQLite file" >"$dir/file.json"
python3 tests/pg/bench-agents.py "${args[@]}" --db "$server/$name" --label "team store" >"$dir/team.json"
python3 -c 'import json,sys; print(json.dumps({"file": json.load(open(sys.argv[1])), "team": json.load(open(sys.argv[2]))}, indent=1))' \
	"$dir/file.json" "$dir/team.json" >"$out"
echo "bench-agents: $out" >&2
