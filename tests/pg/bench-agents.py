#!/usr/bin/env python3
"""N agent processes against one store: each agent runs `lethe` for every operation, as an
agent that shells out does, in a mix of remember 30 %, recall 40 %, cite 15 % and edit 15 %,
for a fixed time; reported per operation: calls, failures, throughput and p50/p95/p99 latency
(the whole `lethe` process, start to answer).

  bench-agents.py --lethe target/release/lethe --db STORE --agents 1,8,32 --seconds 30 [--label L]

STORE is a file or a team store's address; it must hold memories already (the ids cite and
edit act on are read from it). Prints one JSON document and a Markdown table on stderr.
"""
import argparse, json, random, subprocess, sys, threading, time

MIX = [("remember", 30), ("recall", 40), ("cite", 15), ("edit", 15)]
TOPICS = ["deploy", "billing", "auth", "search", "queue", "cache", "backup", "alerts", "schema", "runner"]


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))
    return xs[k]


def run(lethe, db, args):
    t = time.perf_counter()
    out = subprocess.run([lethe, "--db", db, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return (time.perf_counter() - t) * 1000, out.returncode


def agent(n, lethe, db, ids, until, seed, out):
    rng = random.Random(seed)
    ops, weights = zip(*MIX)
    k = 0
    while time.time() < until:
        op = rng.choices(ops, weights)[0]
        k += 1
        topic = rng.choice(TOPICS)
        if op == "remember":
            args = ["remember", "--type", "episodic", "--content",
                    f"Agent {n} step {k}: the {topic} job on runner r{rng.randrange(64)} took {rng.randrange(50, 5000)} ms ({seed}-{k})."]
        elif op == "recall":
            args = ["recall", f"{topic} job took how long on the runner", "--limit", "10"]
        elif op == "cite":
            args = ["cite", rng.choice(ids)]
        else:
            args = ["edit", rng.choice(ids), "--content",
                    f"Revised by agent {n} at step {k}: the {topic} limit is {rng.randrange(1, 100)} ({seed}-{k})."]
        ms, rc = run(lethe, db, args)
        out.append((op, ms, rc, time.time()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lethe", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--agents", default="1,8,32")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    listed = subprocess.run([a.lethe, "--db", a.db, "list", "--limit", "500"], stdout=subprocess.PIPE, check=True)
    ids = [m["id"] for m in json.loads(listed.stdout)["items"]]
    total = json.loads(subprocess.run([a.lethe, "--db", a.db, "stats"], stdout=subprocess.PIPE, check=True).stdout)
    if not ids:
        sys.exit("bench-agents: the store holds no memory")
    report = {"label": a.label, "memories_at_start": total.get("total_active"), "seconds": a.seconds, "runs": []}
    for n in [int(x) for x in a.agents.split(",")]:
        calls = []
        start = time.time()
        until = start + a.seconds
        threads = [threading.Thread(target=agent, args=(i, a.lethe, a.db, ids, until, 1000 * n + i, calls)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.time() - start
        per = {}
        for op, _ in MIX:
            ok = [ms for (o, ms, rc, _) in calls if o == op and rc == 0]
            bad = sum(1 for (o, _, rc, _) in calls if o == op and rc != 0)
            per[op] = {"calls": len(ok), "failed": bad, "per_s": round(len(ok) / wall, 2),
                       "p50_ms": round(pct(ok, 50) or 0, 1), "p95_ms": round(pct(ok, 95) or 0, 1),
                       "p99_ms": round(pct(ok, 99) or 0, 1)}
        run_ = {"agents": n, "wall_s": round(wall, 1), "ops_per_s": round(sum(1 for c in calls if c[2] == 0) / wall, 2), "ops": per}
        report["runs"].append(run_)
        print(f"bench-agents {a.label}: {n} agents, {run_['ops_per_s']} ops/s", file=sys.stderr)
    print(json.dumps(report, indent=1))
    print(f"| store | agents | ops/s | " + " | ".join(f"{op} p50/p95/p99 ms (n)" for op, _ in MIX) + " |", file=sys.stderr)
    for r in report["runs"]:
        cells = " | ".join(f"{o['p50_ms']:.0f}/{o['p95_ms']:.0f}/{o['p99_ms']:.0f} ({o['calls']}{', ' + str(o['failed']) + ' failed' if o['failed'] else ''})"
                           for o in r["ops"].values())
        print(f"| {a.label} | {r['agents']} | {r['ops_per_s']} | {cells} |", file=sys.stderr)


if __name__ == "__main__":
    main()
