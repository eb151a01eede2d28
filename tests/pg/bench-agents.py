#!/usr/bin/env python3
"""N agents against one store, each an agent host with its own `lethe mcp` process (as Claude
Code, Cursor or an SDK host keeps one server per agent), calling tools one at a time in a mix of
remember 30 %, recall 40 %, cite 15 % (`feedback` helpful, which counts as a cite) and edit
15 % (the agent's own procedure updated with compare-and-swap, the edit MCP offers), for a fixed
time after every server has started and answered once. Reported per operation: calls,
failures, throughput and p50/p95/p99 latency (request written to answer read).

  bench-agents.py --lethe target/release/lethe --db STORE --agents 1,8,32 --seconds 60 [--label L]

STORE is a file or a team store's address; it must hold memories already (the ids cited are read
from it). Prints one JSON document, and a Markdown table on stderr.
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


class Server:
    """One `lethe mcp` process spoken to over JSON-RPC lines."""

    def __init__(self, lethe, db, name):
        self.p = subprocess.Popen([lethe, "--db", db, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": name, "version": "1"}})
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

    def request(self, method, params):
        self.next += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("lethe mcp closed its output")
            msg = json.loads(line)
            if msg.get("id") == self.next:
                return msg

    def tool(self, name, args):
        """(milliseconds, the structured answer or None when the call failed)."""
        t = time.perf_counter()
        msg = self.request("tools/call", {"name": name, "arguments": args})
        ms = (time.perf_counter() - t) * 1000
        res = msg.get("result")
        if not res or res.get("isError"):
            return ms, None
        return ms, res.get("structuredContent") or {}

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()


def agent(n, server, ids, start, until, seed, out):
    rng = random.Random(seed)
    ops, weights = zip(*MIX)
    # The agent's own procedure, which its edits update (compare-and-swap on its version).
    _, made = server.tool("remember", {"type": "procedural", "content": f"How agent {n} ({seed}) ships a release",
                                       "task_goal": f"ship a release ({seed})", "steps": ["build", "test", "tag"],
                                       "workflow_name": f"release-{seed}"})
    proc_id, version = (made or {}).get("id"), 1
    start.wait()
    k = 0
    while time.time() < until:
        op = rng.choices(ops, weights)[0]
        k += 1
        topic = rng.choice(TOPICS)
        if op == "remember":
            ms, ans = server.tool("remember", {"type": "episodic", "content":
                f"Agent {n} step {k}: the {topic} job on runner r{rng.randrange(64)} took {rng.randrange(50, 5000)} ms ({seed}-{k})."})
        elif op == "recall":
            ms, ans = server.tool("recall", {"query": f"{topic} job took how long on the runner", "limit": 10})
        elif op == "cite":
            ms, ans = server.tool("feedback", {"memory_id": rng.choice(ids), "helpful": True})
        else:
            ms, ans = server.tool("remember", {"type": "procedural", "memory_id": proc_id, "expected_version": version,
                                               "content": f"How agent {n} ships a release, revision {k}",
                                               "steps": ["build", f"test the {topic} suite", "tag"]})
            if ans is not None:
                version = ans.get("version", version + 1)
        out.append((op, ms, ans is not None))


def measure(a, n, ids):
    servers = [None] * n

    def spawn(i):
        servers[i] = Server(a.lethe, a.db, f"bench-agent-{i}")
        servers[i].tool("memory_stats", {})  # loaded and answering before the clock starts

    starters = [threading.Thread(target=spawn, args=(i,)) for i in range(n)]
    for t in starters:
        t.start()
    for t in starters:
        t.join()
    calls, start = [], threading.Event()
    t0 = time.time() + 0.5
    until = t0 + a.seconds
    threads = [threading.Thread(target=agent, args=(i, servers[i], ids, start, until, 1000 * n + i, calls)) for i in range(n)]
    for t in threads:
        t.start()
    while time.time() < t0:
        time.sleep(0.01)
    start.set()
    for t in threads:
        t.join()
    wall = time.time() - t0
    for s in servers:
        s.close()
    per = {}
    for op, _ in MIX:
        ok = [ms for (o, ms, good) in calls if o == op and good]
        bad = sum(1 for (o, _, good) in calls if o == op and not good)
        per[op] = {"calls": len(ok), "failed": bad, "per_s": round(len(ok) / wall, 2),
                   "p50_ms": round(pct(ok, 50) or 0, 1), "p95_ms": round(pct(ok, 95) or 0, 1),
                   "p99_ms": round(pct(ok, 99) or 0, 1)}
    return {"agents": n, "wall_s": round(wall, 1), "ops_per_s": round(sum(1 for c in calls if c[2]) / wall, 2), "ops": per}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lethe", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--agents", default="1,8,32")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    listed = subprocess.run([a.lethe, "--db", a.db, "list", "--limit", "500"], stdout=subprocess.PIPE, check=True)
    ids = [m["id"] for m in json.loads(listed.stdout)["items"]]
    total = json.loads(subprocess.run([a.lethe, "--db", a.db, "stats"], stdout=subprocess.PIPE, check=True).stdout)
    if not ids:
        sys.exit("bench-agents: the store holds no memory")
    report = {"label": a.label, "memories_at_start": total.get("total_active"), "seconds": a.seconds,
              "client": "one lethe mcp process per agent", "runs": []}
    for n in [int(x) for x in a.agents.split(",")]:
        run_ = measure(a, n, ids)
        report["runs"].append(run_)
        print(f"bench-agents {a.label}: {n} agents, {run_['ops_per_s']} calls/s", file=sys.stderr)
    print(json.dumps(report, indent=1))
    print("| store | agents | calls/s | " + " | ".join(f"{op} p50/p95/p99 ms (n)" for op, _ in MIX) + " |", file=sys.stderr)
    for r in report["runs"]:
        cells = " | ".join(f"{o['p50_ms']:.0f}/{o['p95_ms']:.0f}/{o['p99_ms']:.0f} ({o['calls']}{', ' + str(o['failed']) + ' failed' if o['failed'] else ''})"
                           for o in r["ops"].values())
        print(f"| {a.label} | {r['agents']} | {r['ops_per_s']} | {cells} |", file=sys.stderr)


if __name__ == "__main__":
    main()
