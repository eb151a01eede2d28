#!/usr/bin/env bash
# The team store loses its primary: pg_auto_failover (a monitor and two PostgreSQL nodes with
# synchronous replication, on loopback ports), Lethe set up through a multi-host address, 8
# agent processes doing `remember` and `recall` through `lethe`, the primary's keeper and
# server killed with SIGKILL mid-run. Then it checks that every memory whose `remember` answered
# stored is there exactly once with one audit row, that every writer stored again within 30 s
# of the kill, and that a CAS race on the new primary has one winner.
#   tests/pg/failover.sh                      (make test-ha)
#   tests/pg/failover.sh --beside CMD ARGS…   runs CMD beside a fresh cluster instead of the
#       agents (the window's test): LETHE_HA_URL is the owner's multi-host address, and
#       LETHE_HA_KILL a command that kills the primary as the agents' test does
# Needs pg-auto-failover-cli and postgresql-15-auto-failover (Debian) and target/debug/lethe.
# Every process it starts is stopped at the end, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/../.."
lethe=${LETHE_BIN:-$PWD/target/debug/lethe}
export LETHE_MODEL_DIR=${LETHE_MODEL_DIR:-$PWD/target/model/potion-base-8M}
agents=${HA_AGENTS:-8}
before_kill=${HA_BEFORE_KILL:-15}   # seconds of writes before the kill
after_kill=${HA_AFTER_KILL:-45}     # at most this many seconds of writes after it (they stop
                                    # 5 s after every agent has stored again)
resume_limit=30                     # every writer stores again within this many seconds
bin=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)
command -v pg_autoctl >/dev/null && [ -x "$bin/pg_ctl" ] \
	|| { echo "failover: needs pg_autoctl and PostgreSQL 15 (apt-get install pg-auto-failover-cli postgresql-15-auto-failover)" >&2; exit 1; }
[ -x "$lethe" ] || { echo "failover: no $lethe (cargo build -p lethe-cli)" >&2; exit 1; }

dir=$(mktemp -d /tmp/lethe-ha.XXXXXX)
[ "$(id -u)" -eq 0 ] && chown postgres "$dir"
# pg_autoctl keeps its state under XDG directories: the run's own, so nothing is left behind.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/state" PATH="$bin:$PATH" "$@"
	else
		env XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/state" PATH="$bin:$PATH" "$@"
	fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }
log() { echo "failover: $(date -u +%T) $*"; }

started=()   # every process this script started (the keepers and the agents)
descendants() { local p; for p in $(pgrep -P "$1" 2>/dev/null || true); do echo "$p"; descendants "$p"; done; }
cleanup() {
	local code=$?
	# runuser does not pass SIGTERM on: the keepers (its children) get it themselves, and
	# stop their servers.
	for p in "${started[@]}"; do kill -TERM "$p" $(pgrep -P "$p" 2>/dev/null) 2>/dev/null || true; done
	for _ in $(seq 20); do
		alive=0
		for p in "${started[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.5
	done
	for p in "${started[@]}"; do
		for d in $(descendants "$p") "$p"; do kill -KILL "$d" 2>/dev/null || true; done
	done
	for n in monitor node1 node2; do
		[ -f "$dir/$n/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/$n" -m immediate stop >/dev/null 2>&1 || true
	done
	if [ "$code" -ne 0 ]; then
		log "failed ($code); the nodes' logs:"
		for f in "$dir"/*.log; do echo "== $f"; tail -n 15 "$f"; done
	fi
	rm -rf "$dir"
	exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(now_ms)
pm=$(free_port); p1=$(free_port); p2=$(free_port)
monitor_uri="postgres://autoctl_node@127.0.0.1:$pm/pg_auto_failover?sslmode=disable"
as_owner pg_autoctl create monitor --pgdata "$dir/monitor" --pgport "$pm" --hostname 127.0.0.1 --auth trust \
	--no-ssl >"$dir/monitor.log" 2>&1
as_owner pg_autoctl run --pgdata "$dir/monitor" >>"$dir/monitor.log" 2>&1 &
started+=($!)
state() { psql "postgres://postgres@127.0.0.1:$pm/pg_auto_failover" -XAtqc \
	"SELECT reportedstate || '/' || goalstate FROM pgautofailover.node WHERE nodename = '$1'" 2>/dev/null || true; }
wait_for() { # node state seconds
	local deadline=$(($(date +%s) + $3))
	until [ "$(state "$1")" = "$2" ]; do
		[ "$(date +%s)" -lt "$deadline" ] || { log "$1 did not reach $2 in $3 s (it is '$(state "$1")')"; exit 1; }
		sleep 0.3
	done
}
for _ in $(seq 100); do psql "postgres://postgres@127.0.0.1:$pm/pg_auto_failover" -XAtqc 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
# The monitor's health checks, shortened so that a failover takes seconds rather than the
# default 35 s (20 s before a node is considered unhealthy, then 30 s for the old primary to
# demote itself). The keepers demote a primary cut off from the monitor and the standby after
# 3 s (default 20 s), still before the monitor's 6 s: never two primaries.
psql "postgres://postgres@127.0.0.1:$pm/pg_auto_failover" -XAtq \
	-c "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" \
	-c "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" \
	-c "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" \
	-c "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" \
	-c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 3000" \
	-c "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 6000" \
	-c "SELECT pg_reload_conf()" >/dev/null

for n in 1 2; do
	port=$([ "$n" = 1 ] && echo "$p1" || echo "$p2")
	as_owner pg_autoctl create postgres --pgdata "$dir/node$n" --pgport "$port" --hostname 127.0.0.1 \
		--listen 127.0.0.1 --auth trust --no-ssl --monitor "$monitor_uri" --dbname lethe --name "node$n" \
		>"$dir/node$n.log" 2>&1
	as_owner pg_autoctl config set --pgdata "$dir/node$n" timeout.network_partition_timeout 3 >/dev/null
	as_owner pg_autoctl run --pgdata "$dir/node$n" >>"$dir/node$n.log" 2>&1 &
	started+=($!)
	echo $! >"$dir/node$n.keeper"
	if [ "$n" = 1 ]; then wait_for node1 single/single 120; else wait_for node2 secondary/secondary 180; fi
done
wait_for node1 primary/primary 60
sync=$(psql "postgres://postgres@127.0.0.1:$p1/lethe" -XAtqc 'SHOW synchronous_standby_names')
log "cluster up in $(( ($(now_ms) - t0) / 1000 )) s: monitor :$pm, primary :$p1, standby :$p2, synchronous_standby_names = $sync"
[ -n "$sync" ] || { log "the primary does not replicate synchronously"; exit 1; }

# Lethe through the multi-host address: the owner sets the store up, each agent has a role.
url() { echo "postgres://$1@127.0.0.1:$p1,127.0.0.1:$p2/lethe?target_session_attrs=read-write"; }
"$lethe" --db "$(url postgres)" admin setup >"$dir/setup.json"
for i in $(seq "$agents"); do "$lethe" --db "$(url postgres)" admin add-agent "a$i" --team ha >/dev/null; done
cas_id=$("$lethe" --db "$(url a1)" remember --type procedural --content "Release: tag, build, publish" \
	--task-goal "release" --steps '["tag","build","publish"]' | jq -r .id)

if [ "${1:-}" = --beside ]; then
	shift
	cat >"$dir/kill-primary" <<EOF
#!/usr/bin/env bash
# Kills node1 (the primary when the cluster started): its keeper and every process under it.
descendants() { local p; for p in \$(pgrep -P "\$1" 2>/dev/null || true); do echo "\$p"; descendants "\$p"; done; }
keeper=$(cat "$dir/node1.keeper")
kill -KILL \$keeper \$(descendants \$keeper)
EOF
	chmod +x "$dir/kill-primary"
	rc=0
	LETHE_HA_URL=$(url postgres) LETHE_HA_KILL=$dir/kill-primary "$@" || rc=$?
	exit "$rc"
fi

# One agent: memories with unique contents; one `recall` every fourth step. A remember that
# fails with db_unavailable is made again with the same content (at most once stored: the
# store refuses an exact duplicate, naming the existing id).
agent() {
	local i=$1 until_ms=$2 n=0 out err rc
	local db; db=$(url "a$i")
	while [ "$(now_ms)" -lt "$until_ms" ] && [ ! -e "$dir/stop" ]; do
		n=$((n + 1))
		local key="a$i-$n" content
		content="Agent a$i run $n: the build of service-$i.$n finished in $((100 + RANDOM % 900)) ms on runner r$((RANDOM % 40))."
		while [ "$(now_ms)" -lt "$until_ms" ]; do
			rc=0
			out=$("$lethe" --db "$db" remember --type episodic --content "$content" 2>"$dir/a$i.err") || rc=$?
			if [ "$rc" -eq 0 ]; then
				if [ "$(jq -r .stored <<<"$out")" = true ]; then
					echo "$(now_ms) stored $key $(jq -r .id <<<"$out")"
				else
					echo "$(now_ms) duplicate $key $(jq -r .existing_id <<<"$out")"
				fi
				break
			fi
			echo "$(now_ms) failed $key $(jq -r .error.code <"$dir/a$i.err" 2>/dev/null || echo unknown)"
			sleep 0.2
		done
		if [ $((n % 4)) -eq 0 ]; then
			rc=0
			"$lethe" --db "$db" recall "build of service-$i" --limit 3 >/dev/null 2>&1 || rc=$?
			echo "$(now_ms) recall $key $rc"
		fi
	done
}

kill_at=$(($(now_ms) + before_kill * 1000))
end_at=$((kill_at + after_kill * 1000))
for i in $(seq "$agents"); do
	agent "$i" "$end_at" >"$dir/agent$i.out" &
	started+=($!)
done
sleep $(((kill_at - $(now_ms)) / 1000)) || true
# The primary's machine goes away: its keeper and its server, SIGKILL, no shutdown.
victims=$(descendants "$(cat "$dir/node1.keeper")")
killed=$(now_ms)
kill -KILL $(cat "$dir/node1.keeper") $victims
log "killed the primary (node1: keeper and $(echo $victims | wc -w) server processes) at +$(( (killed - t0) / 1000 )) s"
wait_for node2 wait_primary/wait_primary 60
promoted=$(now_ms)
log "node2 accepts writes $(( (promoted - killed) )) ms after the kill"
# The agents stop a few seconds after every one of them has stored again (or at end_at).
resumed_all() {
	local i
	for i in $(seq "$agents"); do
		awk -v k="$killed" '$2 == "stored" && $1 > k { found = 1 } END { exit !found }' \
			"$dir/agent$i.out" || return 1
	done
}
while [ "$(now_ms)" -lt "$end_at" ] && ! resumed_all; do sleep 0.5; done
resumed_all && log "every agent stored again; the agents stop in 5 s" && sleep 5
touch "$dir/stop"
for p in "${started[@]:3}"; do wait "$p"; done
started=("${started[@]:0:3}")

# CAS on the new primary: 8 processes, the same expected version, one winner.
race=()
for i in $(seq 8); do
	(
		rc=0
		"$lethe" --db "$(url "a$i")" remember --type procedural --content "Release v$i" --task-goal release \
			--steps '["tag","build","publish"]' --memory-id "$cas_id" --expected-version 1 >/dev/null 2>&1 || rc=$?
		echo "$rc" >"$dir/cas$i"
	) &
	race+=($!)
done
for p in "${race[@]}"; do wait "$p"; done
cas=$(cat "$dir"/cas*)

q() { psql "postgres://postgres@127.0.0.1:$p2/lethe" -XAtqc "$1"; }
cat "$dir"/agent*.out >"$dir/answers"
python3 - "$dir/answers" "$killed" "$resume_limit" "$agents" "$cas" \
	"$(q "SELECT id || ' ' || (SELECT count(*) FROM lethe_action a WHERE a.memory_id = m.id AND a.action = 'remember') FROM memory_item m WHERE type = 'episodic'")" \
	"$(q "SELECT count(*) FROM (SELECT content FROM memory_item GROUP BY content HAVING count(*) > 1) d")" \
	"$(q "SELECT version FROM memory_item WHERE id = '$cas_id'")" <<'PY'
import sys, collections
answers, killed, limit, agents, cas, rows, dups, version = sys.argv[1:9]
killed, limit, agents = int(killed), int(limit) * 1000, int(agents)
stored = collections.Counter(); acked = []; failed = 0; retried = 0; recalls = [0, 0]; after = {}
for line in open(answers):
    t, what, key, val = line.split()
    t = int(t)
    if what == "stored":
        acked.append(val); stored[key] += 1
        agent = key.split("-")[0]
        if t > killed and agent not in after:
            after[agent] = t - killed
    elif what == "failed":
        failed += 1
    elif what == "duplicate":
        retried += 1
    elif what == "recall":
        recalls[val != "0"] += 1
present = dict(r.split() for r in rows.splitlines() if r)
lost = [i for i in acked if i not in present]
twice_audited = [i for i in acked if present.get(i) not in (None, "1")]
twice_stored = [k for k, c in stored.items() if c > 1]
codes = sorted(cas.split())
print(f"failover: {len(acked)} acknowledged remembers, {failed} failed answers, {retried} retries answered "
      f"'already stored' (a first attempt committed without its answer), {recalls[0]} recalls answered, {recalls[1]} failed")
print(f"failover: lost {len(lost)}, stored twice {len(twice_stored)}, duplicate contents {dups}, audit rows != 1: {len(twice_audited)}")
print(f"failover: each writer's first stored memory after the kill (ms): {dict(sorted(after.items()))}")
print(f"failover: CAS exit codes {codes}, version now {version}")
ok = True
def check(cond, msg):
    global ok
    if not cond:
        print("failover: FAILED:", msg); ok = False
check(not lost, f"acknowledged but missing: {lost[:5]}")
check(not twice_stored and dups == "0", "a memory stored twice")
check(not twice_audited, f"not one audit row: {twice_audited[:5]}")
check(len(after) == agents, f"only {len(after)} of {agents} writers stored after the kill")
check(all(v <= limit for v in after.values()), f"a writer resumed later than {limit} ms")
check(codes.count("0") == 1 and codes.count("3") == len(codes) - 1 and version == "2", "CAS: not exactly one winner")
sys.exit(0 if ok else 1)
PY
log "passed in $(( ($(now_ms) - t0) / 1000 )) s"
