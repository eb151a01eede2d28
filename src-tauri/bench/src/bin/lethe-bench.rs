//! `lethe-bench`: a benchmark workload (engine `workload` module: the reference one, or
//! `--workload realistic`) measured in-process, one child process per size so that peak RSS is
//! per size.
//!
//! `lethe-bench --sizes 10000,100000 --out bench.json` prints one JSON document on stdout
//! (and to `--out`), and a table with the targets and memento's figures on stderr.
//! `lethe-bench --make-db PATH --workload realistic --sizes 100000` only writes a database of
//! the workload (bulk-loaded like the load phase) and exits.
//! `lethe-bench --team-server postgres://OWNER@HOST:PORT --workload realistic` measures the
//! team store beside an SQLite file in one run (remember, recall, the forgetting batch, and the
//! push that loads it), on databases it creates and drops.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant as Clock};

use anyhow::{bail, Context, Result};
use clap::Parser;
use lethe_engine::forgetting::{self, BatchOptions, Snapshot};
use lethe_engine::meta::MetaBuffer;
use lethe_engine::recall::{self, RecallQuery};
use lethe_engine::time::{self, Instant};
use lethe_engine::{dedup, lifecycle, store, transfer};
use lethe_testkit::workload::realistic::{self, RealisticGenerator, RealisticItem};
use lethe_testkit::workload::{self, Generator, WorkItem};
use serde_json::{json, Value};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "lethe-bench",
    about = "Lethe's benchmark on the reference or realistic workload (BENCHMARK-WORKLOAD.md)"
)]
struct Args {
    /// Which workload generates the memories and queries of every phase.
    #[arg(long, value_enum, default_value_t = Workload::Reference)]
    workload: Workload,
    /// Only write a database of the workload (one size, bulk-loaded like the load phase) to
    /// this path, which must not exist yet, and exit.
    #[arg(long, value_name = "PATH")]
    make_db: Option<PathBuf>,
    /// Measure the window's review reads on an existing database (e.g. one `--make-db` wrote)
    /// and exit: the duplicates list (snapshot load + clusters, and clusters on a loaded
    /// snapshot), the health lists, and the Recall view's `explain` over `--queries` queries
    /// of the workload. Stores the neighbour lists first when the file lacks them, as the
    /// window's first forget run would; otherwise writes nothing.
    #[arg(long, value_name = "PATH")]
    review_db: Option<PathBuf>,
    /// Measure the window's live update on a copy of an existing database and exit: a
    /// snapshot is kept as the window keeps it, an agent (another connection) remembers
    /// `--live-writes` memories of the workload one at a time, and after each the time to patch
    /// the snapshot for the change (`Snapshot::apply_changes`) and to compute the stats on it
    /// is measured. The file itself is not written.
    #[arg(long, value_name = "PATH")]
    live_db: Option<PathBuf>,
    /// Agent writes for `--live-db`.
    #[arg(long, default_value_t = 20)]
    live_writes: usize,
    /// Comma-separated sizes (N memories), e.g. 10000,100000,1000000.
    #[arg(long, default_value = "10000,100000", value_delimiter = ',')]
    sizes: Vec<String>,
    /// Also write the JSON document to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The instant the workload's ages count back from (the bench is the outermost caller).
    #[arg(long, default_value = "2026-06-01T00:00:00Z")]
    now: String,
    /// Recall queries timed for latency (after 20 warm-up queries).
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Reader threads for the recall throughput figure, each with its own connection (default:
    /// one per core). Latencies are always measured with one reader.
    #[arg(long)]
    readers: Option<usize>,
    /// Recalls in the meta-memory storm.
    #[arg(long, default_value_t = 10_000)]
    storm: usize,
    /// `remember` calls timed per size (the first K memories of the workload, at most N).
    #[arg(long, default_value_t = 20_000)]
    remember_sample: usize,
    /// Directory for the temporary database files (default: the system temp dir).
    #[arg(long)]
    tmp: Option<PathBuf>,
    /// Stop the meta-memory storm after this many seconds even if not all recalls ran
    /// (at 100k+ a 10,000-recall storm takes many minutes; the coalescer's rate does not
    /// depend on N). The JSON says how many recalls ran.
    #[arg(long, default_value_t = 60.0)]
    storm_max_secs: f64,
    /// Phases to skip (for profiling): remember, floor (the SQLite floor of remember),
    /// import_floor (the SQLite floor of the bulk import, and the import with the model off),
    /// dedup, recall, storm, forget.
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
    /// Experiment only: set `PRAGMA cache_size` (MiB) on the bench's connections instead of
    /// a long-running server's (`store::serve_many_reads`). Recorded in the JSON; never used
    /// for the reported figures.
    #[arg(long, hide = true)]
    cache_mb: Option<i64>,
    /// Experiment only: extra `PRAGMA key=value` on the bench's connections (repeatable).
    #[arg(long, hide = true)]
    pragma: Vec<String>,
    /// Keep the database files (for profiling or inspection).
    #[arg(long)]
    keep: bool,
    /// Measure a PostgreSQL team store beside an SQLite file, both loaded with the same N
    /// memories (SQLite by import, PostgreSQL by `lethe push` of that file): `remember` calls,
    /// one-reader recall latency, and the forgetting batch (dry and real) on each. The URL names
    /// a server and a role that may create databases (no database part); each size gets its
    /// own database, dropped at the end.
    #[arg(long, value_name = "URL")]
    team_server: Option<String>,
    /// Internal: run one size in this process and print its JSON result.
    #[arg(long, hide = true)]
    child: Option<usize>,
}

/// Who writes a memory of the workload: an agent, or a person for a pinned one (agents may not
/// write pinned memories).
fn writer(m: &lethe_engine::lifecycle::NewMemory) -> &'static str {
    if m.pinned {
        "user:bench"
    } else {
        "agent:bench"
    }
}

fn parse_size(s: &str) -> Result<usize> {
    let t = s.trim().replace('_', "").to_lowercase();
    let (num, mul) = if let Some(x) = t.strip_suffix('m') {
        (x.to_string(), 1_000_000)
    } else if let Some(x) = t.strip_suffix('k') {
        (x.to_string(), 1_000)
    } else {
        (t.clone(), 1)
    };
    let n: usize = num.parse().with_context(|| format!("size {s:?} is not a number"))?;
    if n == 0 {
        bail!("size must be positive");
    }
    Ok(n * mul)
}

// ---------------------------------------------------------------------------------------------
// The two workloads behind one interface.

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// BENCHMARK-WORKLOAD.md: random words from a 69-word vocabulary.
    Reference,
    /// Templated notes in heavy-tailed clusters of near-copies, plus dialogue turns.
    Realistic,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Reference => "reference",
            Workload::Realistic => "realistic",
        }
    }

    fn items(self, n: usize) -> Items {
        match self {
            Workload::Reference => Items::Reference(Generator::new(n)),
            Workload::Realistic => Items::Realistic(Box::new(RealisticGenerator::new(n))),
        }
    }

    fn queries(self, n: usize, count: usize) -> Vec<String> {
        match self {
            Workload::Reference => Generator::new(n).queries(count),
            Workload::Realistic => realistic::queries(count),
        }
    }

    fn memory_id(self, i: usize) -> String {
        match self {
            Workload::Reference => workload::memory_id(i),
            Workload::Realistic => realistic::memory_id(i),
        }
    }
}

enum Items {
    Reference(Generator),
    Realistic(Box<RealisticGenerator>),
}

impl Iterator for Items {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        match self {
            Items::Reference(g) => g.next().map(Item::Reference),
            Items::Realistic(g) => g.next().map(Item::Realistic),
        }
    }
}

enum Item {
    Reference(WorkItem),
    Realistic(RealisticItem),
}

impl Item {
    fn content(&self) -> &str {
        match self {
            Item::Reference(i) => &i.content,
            Item::Realistic(i) => &i.content,
        }
    }

    fn into_content(self) -> String {
        match self {
            Item::Reference(i) => i.content,
            Item::Realistic(i) => i.content,
        }
    }

    fn to_memory(&self, now: Instant) -> lethe_engine::Memory {
        match self {
            Item::Reference(i) => i.to_memory(now),
            Item::Realistic(i) => i.to_memory(now),
        }
    }

    fn to_new_memory(&self, now: Instant) -> lifecycle::NewMemory {
        match self {
            Item::Reference(i) => i.to_new_memory(now),
            Item::Realistic(i) => i.to_new_memory(now),
        }
    }
}

/// Writes the N memories of the workload, full rows, as JSONL; returns the seconds taken.
fn write_jsonl(wl: Workload, n: usize, now: Instant, path: &Path) -> Result<f64> {
    let t = Clock::now();
    let mut w = BufWriter::new(File::create(path)?);
    for item in wl.items(n) {
        serde_json::to_writer(&mut w, &item.to_memory(now))?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    Ok(t.elapsed().as_secs_f64())
}

/// `--make-db`: a database of one size of the workload, bulk-loaded like the load phase.
fn make_db(path: &Path, args: &Args, now: Instant) -> Result<()> {
    let [size] = args.sizes.as_slice() else {
        bail!("--make-db takes one size (--sizes N)");
    };
    let n = parse_size(size)?;
    if path.exists() {
        bail!("{} already exists", path.display());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let jsonl = PathBuf::from(format!("{}.jsonl", path.display()));
    let jsonl_s = write_jsonl(args.workload, n, now, &jsonl)?;
    let mut conn = open_db(path, args)?;
    let t = Clock::now();
    let report = transfer::import(&mut conn, BufReader::new(File::open(&jsonl)?), &transfer::ImportOptions::new(now))?;
    let import_s = t.elapsed().as_secs_f64();
    std::fs::remove_file(&jsonl)?;
    drop(conn);
    if report.imported != n {
        bail!("import stored {} of {n} memories", report.imported);
    }
    let v = json!({
        "db": path.display().to_string(), "workload": args.workload.name(), "n": n, "now": args.now,
        "rows": report.imported, "jsonl_write_secs": round3(jsonl_s), "import_secs": round3(import_s),
        "db_mb": round1(db_files_mb(path)),
    });
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

/// `--live-db`: the window's work per agent write (see the flag), on a copy of the file.
fn live_db(path: &Path, args: &Args, now: Instant) -> Result<()> {
    if !path.exists() {
        bail!("{} does not exist", path.display());
    }
    let base = args.tmp.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("lethe-bench-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let copy = dir.join("live.db");
    store::open(path)?.execute("VACUUM INTO ?1", [copy.to_string_lossy()])?;
    let ms = |t: Clock| t.elapsed().as_secs_f64() * 1000.0;
    let window = open_db(&copy, args)?;
    let mut agent = store::open(&copy)?;
    let settings = lethe_engine::Settings::load(&window)?;
    let n: usize = window.query_row("SELECT COUNT(*) FROM memory_item", [], |r| r.get::<_, i64>(0))? as usize;
    let t = Clock::now();
    let mut snap = Snapshot::load(&window)?;
    let load_ms = ms(t);
    let t = Clock::now();
    std::hint::black_box(forgetting::stats(&window, &snap, &settings, now)?);
    let first_stats_ms = ms(t);
    let mut seq = store::last_change_seq(&window)?;
    let (mut apply, mut stats, mut searched) = (Vec::new(), Vec::new(), Vec::new());
    // Memories of the same workload beyond the file's own: near-copies of its templates, as
    // an agent keeps writing them.
    for item in args.workload.items(n + args.live_writes).skip(n).take(args.live_writes) {
        let m = item.to_new_memory(now);
        lifecycle::remember(&mut agent, &m, writer(&m), now)?;
        let t = Clock::now();
        let (at, ids) = store::changes_since(&window, seq, 10_000)?;
        seq = at;
        match ids {
            Some(ids) => snap.apply_changes(&window, &ids)?,
            None => snap = Snapshot::load(&window)?,
        }
        apply.push(ms(t));
        searched.push(snap.searched);
        let t = Clock::now();
        std::hint::black_box(forgetting::stats(&window, &snap, &settings, now)?);
        stats.push(ms(t));
    }
    let in_order = |v: &[f64]| v.iter().map(|&x| round1(x)).collect::<Vec<_>>();
    let (apply_in_order, stats_in_order) = (in_order(&apply), in_order(&stats));
    for v in [&mut apply, &mut stats] {
        v.sort_by(f64::total_cmp);
    }
    let v = json!({
        "db": path.display().to_string(), "n": n, "now": args.now, "workload_written": args.workload.name(),
        "model": lethe_engine::embed::status(), "loadavg": loadavg(),
        "snapshot_load_ms": round3(load_ms), "first_stats_ms": round3(first_stats_ms),
        "writes": apply.len(),
        "apply_changes": ms_summary(&apply), "apply_changes_in_order_ms": apply_in_order,
        "stats_after_each": ms_summary(&stats), "stats_in_order_ms": stats_in_order,
        "searched_after_each": searched,
    });
    println!("{}", serde_json::to_string_pretty(&v)?);
    drop((window, agent));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `--review-db`: the duplicates review, the health lists, the Recall view, and the Quarantine
/// and Workflows views' pages on one file.
fn review_db(path: &Path, args: &Args, now: Instant) -> Result<()> {
    if !path.exists() {
        bail!("{} does not exist", path.display());
    }
    let mut conn = open_db(path, args)?;
    let settings = lethe_engine::Settings::load(&conn)?;
    let ms = |t: Clock| t.elapsed().as_secs_f64() * 1000.0;
    let t = Clock::now();
    let first = Snapshot::load(&conn)?;
    let first_load_ms = ms(t);
    let searched = first.searched;
    let stored_lists = first.persist(&mut conn)?;
    drop(first);
    // The list as the window opens it: a snapshot loaded from the stored lists (what the
    // window does once per change of many memories), then the clusters; and the clusters alone
    // on the snapshot the window keeps (what reopening the view costs).
    let (mut cold, mut warm, mut health_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut clusters = None;
    for _ in 0..5 {
        let t = Clock::now();
        let snap = Snapshot::load(&conn)?;
        let load = ms(t);
        let t = Clock::now();
        let c =
            lethe_engine::duplicates::clusters(&conn, &snap, &settings, now, lethe_engine::duplicates::DEFAULT_LIMIT)?;
        let list = ms(t);
        cold.push(load + list);
        warm.push(list);
        let t = Clock::now();
        std::hint::black_box(lethe_engine::health::health(&conn, &snap, &settings, now)?);
        health_ms.push(ms(t));
        clusters = Some(c);
    }
    let clusters = clusters.expect("five runs");
    let n: usize = conn.query_row("SELECT COUNT(*) FROM memory_item", [], |r| r.get::<_, i64>(0))? as usize;
    let queries = args.workload.queries(n, args.queries.max(1));
    let q_of = |text: &str| RecallQuery { text: text.to_string(), limit: 10, ..Default::default() };
    for text in queries.iter().take(20) {
        std::hint::black_box(recall::explain(&conn, &q_of(text), now, recall::DECLINED)?);
    }
    let mut explain = Vec::with_capacity(queries.len());
    for text in &queries {
        let t = Clock::now();
        std::hint::black_box(recall::explain(&conn, &q_of(text), now, recall::DECLINED)?);
        explain.push(ms(t));
    }
    // The Quarantine and Workflows views' first pages as the window asks for them, and a
    // search and a page far down (the engine's part of each; five times each).
    use lethe_engine::procedural::{self, ProcedureQuery};
    use lethe_engine::quarantine_view::{self, QuarantineQuery};
    let (mut q_first, mut q_search, mut q_far, mut wf_first, mut wf_search) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut quarantined = 0;
    let mut procedures = 0;
    for _ in 0..5 {
        let t = Clock::now();
        let v = quarantine_view::view(&conn, &settings, now, &QuarantineQuery::default())?;
        q_first.push(ms(t));
        quarantined = v.total;
        let t = Clock::now();
        std::hint::black_box(quarantine_view::view(
            &conn,
            &settings,
            now,
            &QuarantineQuery { search: Some("the".into()), ..Default::default() },
        )?);
        q_search.push(ms(t));
        let t = Clock::now();
        std::hint::black_box(quarantine_view::view(
            &conn,
            &settings,
            now,
            &QuarantineQuery { offset: Some(quarantined / 2), ..Default::default() },
        )?);
        q_far.push(ms(t));
        let t = Clock::now();
        procedures = procedural::page(&conn, &ProcedureQuery::default())?.total;
        wf_first.push(ms(t));
        let t = Clock::now();
        std::hint::black_box(procedural::page(
            &conn,
            &ProcedureQuery { search: Some("deploy".into()), ..Default::default() },
        )?);
        wf_search.push(ms(t));
    }
    for v in [
        &mut cold,
        &mut warm,
        &mut health_ms,
        &mut explain,
        &mut q_first,
        &mut q_search,
        &mut q_far,
        &mut wf_first,
        &mut wf_search,
    ] {
        v.sort_by(f64::total_cmp);
    }
    let v = json!({
        "db": path.display().to_string(), "n": n, "now": args.now, "workload_queries": args.workload.name(),
        "model": lethe_engine::embed::status(), "loadavg": loadavg(),
        "first_load": { "ms": round3(first_load_ms), "searched": searched, "lists_stored": stored_lists },
        "duplicates_open_cold": ms_summary(&cold), "duplicates_on_loaded_snapshot": ms_summary(&warm),
        "clusters": { "total": clusters.total, "listed": clusters.items.len(), "threshold": clusters.threshold },
        "health_on_loaded_snapshot": ms_summary(&health_ms),
        "quarantine_view": { "quarantined": quarantined, "first_page": ms_summary(&q_first), "search": ms_summary(&q_search), "page_halfway": ms_summary(&q_far) },
        "procedures_page": { "procedures": procedures, "first_page": ms_summary(&wf_first), "search": ms_summary(&wf_search) },
        "recall_explain": { "queries": explain.len(), "limit": 10, "mean_ms": round3(explain.iter().sum::<f64>() / explain.len().max(1) as f64), "p50_ms": round3(percentile(&explain, 50.0)), "p95_ms": round3(percentile(&explain, 95.0)), "max_ms": round3(*explain.last().unwrap_or(&0.0)) },
    });
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let now = time::parse(&args.now).map_err(|e| anyhow::anyhow!("--now: {e}"))?;
    if let Some(path) = &args.make_db {
        return make_db(path, &args, now);
    }
    if let Some(path) = &args.live_db {
        return live_db(path, &args, now);
    }
    if let Some(path) = &args.review_db {
        return review_db(path, &args, now);
    }
    if let Some(server) = &args.team_server {
        return team_bench(server, &args, now);
    }
    if let Some(n) = args.child {
        let result = run_size(n, &args, now)?;
        println!("{}", serde_json::to_string(&result)?);
        return Ok(());
    }
    let sizes: Vec<usize> = args.sizes.iter().map(|s| parse_size(s)).collect::<Result<_>>()?;
    let exe = std::env::current_exe()?;
    let mut results = Vec::new();
    for n in &sizes {
        eprintln!("== N = {n}, {} workload (child process) ==", args.workload.name());
        let mut cmd = Command::new(&exe);
        cmd.arg("--child")
            .arg(n.to_string())
            .args(["--workload", args.workload.name()])
            .args(["--now", &args.now])
            .args(["--queries", &args.queries.to_string()])
            .args(["--storm", &args.storm.to_string()])
            .args(["--remember-sample", &args.remember_sample.to_string()])
            .args(["--storm-max-secs", &args.storm_max_secs.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(t) = &args.tmp {
            cmd.arg("--tmp").arg(t);
        }
        if args.keep {
            cmd.arg("--keep");
        }
        if let Some(c) = args.cache_mb {
            cmd.arg("--cache-mb").arg(c.to_string());
        }
        for p in &args.pragma {
            cmd.arg("--pragma").arg(p);
        }
        if !args.skip.is_empty() {
            cmd.arg("--skip").arg(args.skip.join(","));
        }
        let started = Clock::now();
        let out = cmd.output().context("running the child benchmark")?;
        if !out.status.success() {
            bail!("the benchmark of N = {n} failed ({})", out.status);
        }
        let mut v: Value = serde_json::from_slice(&out.stdout).context("child output is not JSON")?;
        v["child_wall_s"] = json!(started.elapsed().as_secs_f64());
        results.push(v);
    }
    let doc = json!({
        "benchmark": "lethe-bench (BENCHMARK-WORKLOAD.md)",
        "workload": args.workload.name(),
        "machine": machine(),
        "args": {
            "workload": args.workload.name(), "sizes": sizes, "now": args.now, "queries": args.queries, "storm": args.storm,
            "remember_sample": args.remember_sample, "storm_max_secs": args.storm_max_secs, "skip": args.skip,
            "experiment_cache_mb": args.cache_mb, "experiment_pragmas": args.pragma,
        },
        "targets": targets(),
        "memento_10k_from_issue_19": memento(),
        "results": results,
    });
    let text = serde_json::to_string_pretty(&doc)?;
    if let Some(p) = &args.out {
        std::fs::write(p, format!("{text}\n")).with_context(|| format!("writing {}", p.display()))?;
    }
    eprintln!("\n{}", table(&doc));
    println!("{text}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reference figures.

fn targets() -> Value {
    json!({
        "remember_per_s": {"min": 25_000},
        "import_rows_per_s": {"min": 200_000},
        "recall_one_reader_qps_at_10k": {"min": 2_000},
        "recall_p95_ms_at_100k": {"max": 10},
        "forget_rows_per_s": {"min": 200_000},
        "forget_1m_s": {"max": 15},
        "storm_write_tx_per_s": {"max": 10},
        "peak_rss_mb_at_100k": {"max": 150},
    })
}

/// memento's figures are not measured by this program: they are a table (reference
/// workload, N = 10,000, both engines in-process on this machine, two runs each), given as
/// they were recorded there, with its date.
fn memento() -> Value {
    json!({
        "source": "table 'measured side by side in one run' (as of 2026-12-01; not measured by this run)",
        "remember_per_s": [1_288, 1_520], "text_recall_one_caller_qps": [93, 114],
        "forgetting_batch_10k_s": [6.99, 5.58], "peak_rss_mb": 455,
    })
}

// ---------------------------------------------------------------------------------------------
// Machine and process facts.

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn loadavg() -> Value {
    let raw = read("/proc/loadavg");
    let f: Vec<f64> = raw.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
    json!(f)
}

fn machine() -> Value {
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string());
    let mem_kb = status_kb(&read("/proc/meminfo"), "MemTotal:");
    let git = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    json!({
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu": cpu,
        "mem_total_mb": mem_kb.map(|k| k / 1024),
        "os": read("/proc/sys/kernel/osrelease").trim(),
        "loadavg_at_end": loadavg(),
        "git_head": git,
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
    })
}

fn status_kb(text: &str, key: &str) -> Option<u64> {
    text.lines().find(|l| l.starts_with(key))?.split_whitespace().nth(1)?.parse().ok()
}

/// (VmHWM, VmRSS) of this process in MiB.
fn rss_mb() -> (f64, f64) {
    let s = read("/proc/self/status");
    let mb = |k| status_kb(&s, k).map(|v| v as f64 / 1024.0).unwrap_or(0.0);
    (mb("VmHWM:"), mb("VmRSS:"))
}

/// Records peak and current RSS, and the bytes this process has written and read through
/// system calls so far (`wchar`/`rchar` of /proc/self/io: SQLite's page writes, WAL frames
/// and checkpoints included, whether or not they reached the disk).
fn rss_mark(phases: &mut Vec<Value>, phase: &str) {
    let (hwm, rss) = rss_mb();
    let io = read("/proc/self/io");
    let field =
        |k: &str| io.lines().find(|l| l.starts_with(k)).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
    let mb = |v: Option<u64>| v.map(|b| round1(b as f64 / 1_048_576.0));
    phases.push(json!({
        "after": phase, "vm_hwm_mb": round1(hwm), "vm_rss_mb": round1(rss),
        "written_mb_total": mb(field("wchar:")), "read_mb_total": mb(field("rchar:")),
    }));
}

/// Bytes this process has passed to `write()` (`wchar`: WAL frames and checkpoints included,
/// whether or not they reached the disk) and has caused to be sent to the disk (`write_bytes`)
/// so far, from /proc/self/io.
#[derive(Debug, Clone, Copy)]
struct Io {
    wchar: u64,
    write_bytes: u64,
    syscw: u64,
}

fn io_counters() -> Io {
    let io = read("/proc/self/io");
    let field = |k: &str| {
        io.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Io { wchar: field("wchar:"), write_bytes: field("write_bytes:"), syscw: field("syscw:") }
}

impl Io {
    /// Per call since `before`.
    fn since(self, before: Io, calls: usize) -> Value {
        let per = |a: u64, b: u64| round1(a.saturating_sub(b) as f64 / calls.max(1) as f64);
        json!({
            "wchar_bytes": per(self.wchar, before.wchar),
            "write_bytes": per(self.write_bytes, before.write_bytes),
            "write_calls": per(self.syscw, before.syscw),
        })
    }
}

/// Calls per variant of the SQLite floor.
const FLOOR_CALLS: usize = 10_000;

/// The SQLite floor of `remember`: the statements `remember` runs to store a new memory (the
/// exact-duplicate lookup, the `memory_item` row with every trigger and index of the schema,
/// the signature, vector and audit rows, one `BEGIN IMMEDIATE … COMMIT` per memory) in a bare
/// rusqlite loop over prepared values, on a file opened by `store::open` (same PRAGMAs). Then
/// the same loop with one trigger or setting changed at a time, on a new file each, to show
/// what each costs. Nothing of Lethe's logic runs inside the timed loops.
fn sqlite_floor(dir: &Path, wl: Workload, n: usize, calls: usize, now: Instant, args: &Args) -> Result<Value> {
    struct Row {
        id: String,
        tier: &'static str,
        content: String,
        importance: f64,
        created: String,
        pinned: i64,
        tags: String,
        source: Option<String>,
        session: Option<String>,
        project: Option<String>,
        hash: String,
        bands: Vec<u8>,
        vec: Option<Vec<u8>>,
        audit: String,
    }
    let embedder = lethe_engine::embed::shared();
    let rows: Vec<Row> = wl
        .items(n)
        .take(calls)
        .map(|item| {
            let m = item.to_new_memory(now);
            Row {
                id: lethe_engine::model::new_memory_id(),
                tier: m.tier.as_str(),
                importance: m.importance.unwrap_or(0.5),
                created: time::format(m.created_at.unwrap_or(now)),
                pinned: m.pinned as i64,
                tags: serde_json::to_string(&m.tags).unwrap_or_default(),
                source: m.source.clone(),
                session: m.session_id.clone(),
                project: m.project_id.clone(),
                hash: dedup::content_hash(&m.content),
                bands: dedup::band_keys(&m.content),
                vec: embedder.map(|e| e.embed(&m.content).to_bytes()),
                audit: json!({"type": m.tier, "preview": lethe_engine::model::preview(&m.content, 120)}).to_string(),
                content: m.content,
            }
        })
        .collect();
    let fingerprint = embedder.map(|e| e.fingerprint().to_string()).unwrap_or_default();
    // (name, SQL run once on the new file before the loop, memories per transaction, only the
    // row, checkpoints on their own thread as in the MCP server)
    let variants: &[(&str, &str, usize, bool, bool)] = &[
        ("same_statements", "", 1, false, false),
        ("same_statements_checkpoint_thread", "", 1, false, true),
        ("without_memento_fts_trigger", "DROP TRIGGER memory_item_fts_insert", 1, false, false),
        ("without_lethe_fts_trigger", "DROP TRIGGER lethe_fts_ai; DROP TRIGGER lethe_fts_ai_alone", 1, false, false),
        ("without_change_journal_trigger", "DROP TRIGGER lethe_change_ai", 1, false, false),
        ("secure_delete_fast", "PRAGMA secure_delete = FAST", 1, false, false),
        ("no_autocheckpoint", "PRAGMA wal_autocheckpoint = 0", 1, false, false),
        (
            "row_only_no_triggers",
            "DROP TRIGGER memory_item_fts_insert; DROP TRIGGER lethe_fts_ai; DROP TRIGGER lethe_fts_ai_alone; DROP TRIGGER lethe_change_ai",
            1,
            true,
            false,
        ),
        ("same_statements_100_per_tx", "", 100, false, false),
    ];
    let mut out = serde_json::Map::new();
    for (name, setup, per_tx, row_only, thread) in variants {
        let db = dir.join(format!("floor-{name}.db"));
        let mut conn = open_db(&db, args)?;
        conn.execute_batch(setup)?;
        if *thread {
            store::checkpoint_off_the_writer(&conn)?;
        }
        let io0 = io_counters();
        let t = Clock::now();
        for chunk in rows.chunks(*per_tx) {
            let tx = conn.transaction_with_behavior(lethe_engine::storage::db::TransactionBehavior::Immediate)?;
            for r in chunk {
                if !row_only {
                    let dup: Option<String> = tx
                        .prepare_cached(
                            "SELECT s.memory_id FROM lethe_signature s JOIN memory_item m ON m.id = s.memory_id \
                             WHERE s.content_hash = ?1 AND m.type = ?2 AND COALESCE(m.is_deleted, 0) = 0 LIMIT 1",
                        )?
                        .query_row(lethe_engine::params![r.hash, r.tier], |x| x.get(0))
                        .ok();
                    std::hint::black_box(dup);
                }
                tx.prepare_cached(
                    "INSERT INTO memory_item (id, type, content, importance, privacy_scope, created_at, last_accessed, pinned, tags, source, \
                     view_count, cite_count, edit_count, task_goal, steps, reflection_notes, workflow_name, skill_name, trigger_conditions, \
                     version, owner_id, session_id, project_id, is_deleted, deleted_at) \
                     VALUES (?1, ?2, ?3, ?4, 'private', ?5, NULL, ?6, ?7, ?8, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 1, NULL, ?9, ?10, 0, NULL)",
                )?
                .execute(lethe_engine::params![
                    r.id, r.tier, r.content, r.importance, r.created, r.pinned, r.tags, r.source, r.session, r.project
                ])?;
                if *row_only {
                    continue;
                }
                tx.prepare_cached("INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3)")?
                    .execute(lethe_engine::params![r.id, r.hash, r.bands])?;
                if let Some(v) = &r.vec {
                    tx.prepare_cached(
                        "INSERT OR REPLACE INTO lethe_vector (memory_id, model, vec) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(lethe_engine::params![r.id, fingerprint, v])?;
                }
                tx.prepare_cached(
                    "INSERT INTO lethe_action (memory_id, action, actor, before_json, after_json, created_at) \
                     VALUES (?1, 'remember', 'agent:bench', NULL, ?2, ?3)",
                )?
                .execute(lethe_engine::params![r.id, r.audit, r.created])?;
            }
            tx.commit()?;
        }
        let secs = t.elapsed().as_secs_f64();
        let io = io_counters().since(io0, rows.len());
        out.insert(
            name.to_string(),
            json!({
                "calls": rows.len(), "per_tx": per_tx, "secs": round3(secs),
                "per_s": (rows.len() as f64 / secs).round(), "us_per_call": round3(secs * 1e6 / rows.len().max(1) as f64),
                "io_per_call": io,
            }),
        );
        drop(conn);
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_file(format!("{}-wal", db.display()));
        let _ = std::fs::remove_file(format!("{}-shm", db.display()));
    }
    Ok(Value::Object(out))
}

/// The SQLite floor of a bulk import: the statements `transfer::import` runs per
/// chunk of `transfer::CHUNK` memories — the id lookups, then one multi-row INSERT each into
/// `memory_item` (with every trigger and index of the schema), `lethe_signature` and
/// `lethe_vector`, one `BEGIN IMMEDIATE … COMMIT` per chunk, checkpoints on their own thread
/// as `import` runs them — in a bare loop. Each chunk's values (hashes, MinHash bands,
/// vectors, JSON) are made before its timer starts, so nothing of Lethe's parsing, checking,
/// hashing or embedding is timed. Up to 100k, variants on new files show what the full-text
/// triggers and the per-chunk commits cost.
fn import_floor(dir: &Path, wl: Workload, n: usize, now: Instant, args: &Args) -> Result<Value> {
    use rusqlite::types::Value as V;
    let embedder = lethe_engine::embed::shared();
    let fingerprint = embedder.map(|e| e.fingerprint().to_string());
    let text = |s: &Option<String>| s.clone().map_or(V::Null, V::Text);
    let json = |v: &Option<Value>| v.as_ref().map_or(V::Null, |v| V::Text(v.to_string()));
    // (name, SQL run on the new file first, chunks per transaction (0: all), only the row)
    let mut variants: Vec<(&str, &str, usize, bool)> = vec![("same_statements", "", 1, false)];
    if n <= 100_000 {
        variants.extend([
            ("without_fts_triggers", "DROP TRIGGER memory_item_fts_insert; DROP TRIGGER lethe_fts_ai; DROP TRIGGER lethe_fts_ai_alone", 1, false),
            (
                "row_only_no_triggers",
                "DROP TRIGGER memory_item_fts_insert; DROP TRIGGER lethe_fts_ai; DROP TRIGGER lethe_fts_ai_alone; DROP TRIGGER lethe_change_ai",
                1,
                true,
            ),
            ("same_statements_one_transaction", "", 0, false),
        ]);
    }
    let mut out = serde_json::Map::new();
    for (name, setup, per_tx, row_only) in variants {
        let db = dir.join(format!("import-floor-{name}.db"));
        let conn = open_db(&db, args)?;
        conn.execute_batch(setup)?;
        let checkpoints = store::CheckpointThread::start(&conn)?;
        let lite = conn.sqlite_only("the import floor")?;
        lite.pragma_update(None, "wal_autocheckpoint", store::WRITER_FALLBACK_PAGES)?;
        let mut timed = Duration::ZERO;
        let mut items = wl.items(n).map(|it| it.to_memory(now));
        let mut chunk_no = 0usize;
        loop {
            let chunk: Vec<lethe_engine::Memory> = items.by_ref().take(transfer::CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let mut rows: Vec<V> = Vec::with_capacity(chunk.len() * 25);
            let mut sigs: Vec<V> = Vec::with_capacity(chunk.len() * 3);
            let mut vecs: Vec<V> = Vec::with_capacity(chunk.len() * 3);
            let vectors = embedder.map(|e| e.embed_many(&chunk.iter().map(|m| m.content.clone()).collect::<Vec<_>>()));
            for (i, m) in chunk.iter().enumerate() {
                rows.extend([
                    V::Text(m.id.clone()),
                    V::Text(m.tier.as_str().into()),
                    V::Text(m.content.clone()),
                    V::Real(m.importance),
                    V::Text(m.privacy_scope.clone()),
                    V::Text(m.created_at.clone()),
                    text(&m.last_accessed),
                    V::Integer(m.pinned as i64),
                    V::Text(serde_json::to_string(&m.tags)?),
                    text(&m.source),
                    V::Integer(m.view_count),
                    V::Integer(m.cite_count),
                    V::Integer(m.edit_count),
                    text(&m.task_goal),
                    json(&m.steps),
                    json(&m.reflection_notes),
                    text(&m.workflow_name),
                    text(&m.skill_name),
                    json(&m.trigger_conditions),
                    V::Integer(m.version),
                    text(&m.owner_id),
                    text(&m.session_id),
                    text(&m.project_id),
                    V::Integer(m.is_deleted as i64),
                    text(&m.deleted_at),
                ]);
                sigs.extend([
                    V::Text(m.id.clone()),
                    V::Text(dedup::content_hash(&m.content)),
                    V::Blob(dedup::band_keys(&m.content)),
                ]);
                if let (Some(vs), Some(fp)) = (&vectors, &fingerprint) {
                    vecs.extend([V::Text(m.id.clone()), V::Text(fp.clone()), V::Blob(vs[i].to_bytes())]);
                }
            }
            let k = chunk.len();
            let t = Clock::now();
            if per_tx == 0 && chunk_no == 0 || per_tx == 1 {
                lite.execute_batch("BEGIN IMMEDIATE")?;
            }
            if !row_only {
                let mut exists = lite.prepare_cached("SELECT 1 FROM memory_item WHERE id = ?1")?;
                for m in &chunk {
                    std::hint::black_box(exists.exists([&m.id])?);
                }
            }
            lite.prepare_cached(&transfer::multi_row_sql(
                &format!("INSERT OR IGNORE INTO memory_item ({})", lethe_engine::model::MEMORY_COLUMNS),
                k,
                25,
            ))?
            .execute(rusqlite::params_from_iter(rows))?;
            if !row_only {
                lite.prepare_cached(&transfer::multi_row_sql(
                    "INSERT OR REPLACE INTO lethe_signature (memory_id, content_hash, bands)",
                    k,
                    3,
                ))?
                .execute(rusqlite::params_from_iter(sigs))?;
                if !vecs.is_empty() {
                    lite.prepare_cached(&transfer::multi_row_sql(
                        "INSERT OR REPLACE INTO lethe_vector (memory_id, model, vec)",
                        k,
                        3,
                    ))?
                    .execute(rusqlite::params_from_iter(vecs))?;
                }
            }
            if per_tx == 1 {
                lite.execute_batch("COMMIT")?;
                if let Some(c) = &checkpoints {
                    c.nudge();
                }
            }
            timed += t.elapsed();
            chunk_no += 1;
        }
        let t = Clock::now();
        if per_tx == 0 {
            lite.execute_batch("COMMIT")?;
        }
        if let Some(c) = checkpoints {
            c.finish();
        }
        timed += t.elapsed();
        let secs = timed.as_secs_f64();
        out.insert(
            name.to_string(),
            json!({"rows": n, "secs": round3(secs), "rows_per_s": (n as f64 / secs).round(), "vectors": embedder.is_some() && !row_only}),
        );
        drop(conn);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
    }
    Ok(Value::Object(out))
}

/// Lethe's bulk import of the same N memories with the model off (`LETHE_MODEL_DIR=off`): no
/// vectors are computed or stored. Run as `--make-db` in a child process, since the model is
/// chosen once per process.
fn import_without_model(dir: &Path, wl: Workload, n: usize, args: &Args) -> Result<Value> {
    let db = dir.join("import-no-model.db");
    let out = Command::new(std::env::current_exe()?)
        .arg("--make-db")
        .arg(&db)
        .args(["--sizes", &n.to_string(), "--workload", wl.name(), "--now", &args.now])
        .env("LETHE_MODEL_DIR", "off")
        .stderr(Stdio::inherit())
        .output()
        .context("running the import without the model")?;
    if !out.status.success() {
        bail!("the import without the model failed ({})", out.status);
    }
    let v: Value = serde_json::from_slice(&out.stdout).context("--make-db output is not JSON")?;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let secs = v["import_secs"].as_f64().unwrap_or(f64::NAN);
    Ok(json!({"rows": n, "secs": secs, "rows_per_s": (n as f64 / secs).round()}))
}

/// Median, p95 and max of sorted millisecond timings.
fn ms_summary(sorted: &[f64]) -> Value {
    json!({
        "median_ms": round3(percentile(sorted, 50.0)), "p95_ms": round3(percentile(sorted, 95.0)),
        "max_ms": round3(*sorted.last().unwrap_or(&0.0)),
    })
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn db_files_mb(db: &Path) -> f64 {
    let mut total = 0;
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", db.display()));
        total += std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    }
    total as f64 / 1_048_576.0
}

fn progress(n: usize, msg: &str) {
    eprintln!("[N={n}] {msg}");
}

// ---------------------------------------------------------------------------------------------
// One size, in a child process.

fn open_db(path: &Path, args: &Args) -> Result<store::Connection> {
    let conn = store::open(path)?;
    // The bench stands in for a long-running server (`lethe mcp`): the same page cache.
    match args.cache_mb {
        Some(mb) => conn.sqlite_only("--cache-mb")?.pragma_update(None, "cache_size", -(mb * 1024))?,
        None => store::serve_many_reads(&conn)?,
    }
    for p in &args.pragma {
        conn.execute_batch(&format!("PRAGMA {p}"))?;
    }
    Ok(conn)
}

/// Threads calling `remember` at once in the group-commit measure.
const GROUP_CALLERS: usize = 8;

fn run_size(n: usize, args: &Args, now: Instant) -> Result<Value> {
    let base = args.tmp.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("lethe-bench-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let load_before = loadavg();
    let mut phases = Vec::new();
    rss_mark(&mut phases, "start");

    // The workload: streamed, so the harness holds no N-sized copy of it.
    let t = Clock::now();
    let wl = args.workload;
    let generated = wl.items(n).map(|it| it.content().len()).sum::<usize>();
    let gen_s = t.elapsed().as_secs_f64();
    let queries = wl.queries(n, args.queries.max(args.storm).max(1));

    // 0. embedding: the model's cost per memory, one text at a time (as remember does) and
    //    in batches (as import and the back-fill do), over the first 10,000 contents.
    let embed = match lethe_engine::embed::shared() {
        None => json!({ "model": lethe_engine::embed::status() }),
        Some(e) => {
            let texts: Vec<String> = wl.items(n.min(10_000)).map(|it| it.content().to_string()).collect();
            let t = Clock::now();
            for x in &texts {
                std::hint::black_box(e.embed(x));
            }
            let one_us = t.elapsed().as_secs_f64() * 1e6 / texts.len() as f64;
            let t = Clock::now();
            std::hint::black_box(e.embed_many(&texts));
            let batch_us = t.elapsed().as_secs_f64() * 1e6 / texts.len() as f64;
            json!({ "model": e.fingerprint(), "texts": texts.len(), "us_per_text": round3(one_us), "us_per_text_batched": round3(batch_us) })
        }
    };

    // 1. remember: one lifecycle::remember call per memory, each its own transaction.
    let sample = args.remember_sample.min(n);
    let skip = |phase: &str| args.skip.iter().any(|p| p == phase);
    let remember = if skip("remember") {
        Value::Null
    } else {
        progress(n, &format!("remember × {sample}"));
        let db = dir.join("remember.db");
        let mut conn = open_db(&db, args)?;
        // As the MCP server writes: checkpoints on their own thread.
        store::checkpoint_off_the_writer(&conn)?;
        let mut lat = Vec::with_capacity(sample);
        let (mut stored, mut skipped) = (0usize, 0usize);
        let mut steps = lifecycle::StepTimes::default();
        let io0 = io_counters();
        let t = Clock::now();
        for item in wl.items(n).take(sample) {
            let m = item.to_new_memory(now);
            let s = Clock::now();
            let out = lifecycle::remember_timed(&mut conn, &m, writer(&m), now, &mut steps)?;
            lat.push(s.elapsed().as_secs_f64() * 1000.0);
            if out.id().is_some() {
                stored += 1;
            } else {
                skipped += 1;
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let io = io_counters().since(io0, sample);
        lat.sort_by(f64::total_cmp);
        let per_step: serde_json::Map<String, Value> = lifecycle::Step::ALL
            .iter()
            .map(|s| (s.name().to_string(), json!(round3(steps.of(*s).as_secs_f64() * 1e6 / sample as f64))))
            .collect();
        let v = json!({
            "calls": sample, "stored": stored, "skipped": skipped, "secs": round3(secs),
            "per_s": (sample as f64 / secs).round(),
            "p50_ms": round3(percentile(&lat, 50.0)), "p95_ms": round3(percentile(&lat, 95.0)),
            "us_per_step": per_step, "io_per_call": io,
            "db_mb": round1(db_files_mb(&db)),
        });
        drop(conn);
        v
    };
    let floor = if skip("remember") || skip("floor") {
        Value::Null
    } else {
        progress(n, &format!("SQLite floor × {}", sample.min(FLOOR_CALLS)));
        sqlite_floor(&dir, wl, n, sample.min(FLOOR_CALLS), now, args)?
    };
    rss_mark(&mut phases, "remember");

    // 1b. The same calls with the secrets/personal-data detector off (`secrets` and `pii` =
    // allow), to show what the detector costs (target: within 10 %).
    let remember_guard_off = if skip("remember") {
        Value::Null
    } else {
        progress(n, &format!("remember × {sample}, detector off"));
        let db = dir.join("remember-off.db");
        let mut conn = open_db(&db, args)?;
        store::checkpoint_off_the_writer(&conn)?;
        let off = lethe_engine::Settings {
            secrets: lethe_engine::redact::SecretsMode::Allow,
            pii: lethe_engine::redact::PiiMode::Allow,
            ..Default::default()
        };
        // The settings are the person's to change (the bench stands in for them here).
        lethe_engine::Settings::store(&mut conn, &off, "user", now)?;
        let t = Clock::now();
        for item in wl.items(n).take(sample) {
            let m = item.to_new_memory(now);
            lifecycle::remember(&mut conn, &m, writer(&m), now)?;
        }
        let secs = t.elapsed().as_secs_f64();
        let per_s = (sample as f64 / secs).round();
        let on = remember["per_s"].as_f64().unwrap_or(f64::NAN);
        drop(conn);
        json!({ "calls": sample, "secs": round3(secs), "per_s": per_s, "detector_on_vs_off": round3(on / per_s) })
    };

    // 1c. The same calls from GROUP_CALLERS threads at once through one connection, as
    // `lethe mcp` serves concurrent requests: its group commit writes the calls waiting for
    // the connection in one transaction. (`lethe-mcp-bench` measures the same through the
    // server: sequential and pipelined.)
    let remember_grouped = if skip("remember") {
        Value::Null
    } else {
        progress(n, &format!("remember × {sample}, {GROUP_CALLERS} callers"));
        let db = dir.join("remember-group.db");
        let conn = open_db(&db, args)?;
        store::checkpoint_off_the_writer(&conn)?;
        let conn = std::sync::Mutex::new(conn);
        let queue = lethe_engine::group_commit::RememberQueue::new();
        let items: Vec<_> = wl.items(n).take(sample).map(|it| it.to_new_memory(now)).collect();
        let t = Clock::now();
        let stored = std::thread::scope(|s| {
            let callers: Vec<_> = (0..GROUP_CALLERS)
                .map(|c| {
                    let (conn, queue, items) = (&conn, &queue, &items);
                    s.spawn(move || -> lethe_engine::Result<usize> {
                        let mut stored = 0;
                        for m in items.iter().skip(c).step_by(GROUP_CALLERS) {
                            stored += usize::from(queue.remember(conn, m.clone(), writer(m), now)?.id().is_some());
                        }
                        Ok(stored)
                    })
                })
                .collect();
            callers.into_iter().map(|h| h.join().expect("a caller thread")).sum::<lethe_engine::Result<usize>>()
        })?;
        let secs = t.elapsed().as_secs_f64();
        let k = queue.counts();
        let per_s = (sample as f64 / secs).round();
        let one = remember["per_s"].as_f64().unwrap_or(f64::NAN);
        json!({
            "callers": GROUP_CALLERS, "calls": sample, "stored": stored, "secs": round3(secs), "per_s": per_s,
            "vs_one_caller": round3(per_s / one), "transactions": k.groups,
            "mean_group": round3(k.calls as f64 / k.groups.max(1) as f64), "largest_group": k.largest,
        })
    };

    // 2. Bulk import: N memories with their ages, access and views as JSONL.
    progress(n, "bulk import");
    let db = dir.join("bench.db");
    let jsonl = dir.join("workload.jsonl");
    let jsonl_s = write_jsonl(wl, n, now, &jsonl)?;
    let jsonl_mb = std::fs::metadata(&jsonl)?.len() as f64 / 1_048_576.0;
    let mut conn = open_db(&db, args)?;
    let t = Clock::now();
    let report = transfer::import(&mut conn, BufReader::new(File::open(&jsonl)?), &transfer::ImportOptions::new(now))?;
    let import_s = t.elapsed().as_secs_f64();
    if report.imported != n {
        bail!("import stored {} of {n} memories", report.imported);
    }
    std::fs::remove_file(&jsonl)?;
    let import = json!({
        "rows": report.imported, "chunks": report.chunks, "secs": round3(import_s),
        "rows_per_s": (n as f64 / import_s).round(), "jsonl_mb": round1(jsonl_mb),
        "jsonl_write_secs": round3(jsonl_s), "db_mb": round1(db_files_mb(&db)),
    });
    rss_mark(&mut phases, "import");
    let (import_floor_v, import_no_model) = if skip("import_floor") {
        (Value::Null, Value::Null)
    } else {
        progress(n, "bulk import: SQLite floor");
        let floor = import_floor(&dir, wl, n, now, args)?;
        progress(n, "bulk import without the model");
        (floor, import_without_model(&dir, wl, n, args)?)
    };

    // 3. Duplication indexing: signature computation, then LSH candidates over the stored ones.
    let dedup_v = if skip("dedup") {
        Value::Null
    } else {
        progress(n, "duplication indexing");
        let mut sig_s = 0.0;
        let mut buf: Vec<String> = Vec::with_capacity(10_000);
        let mut gen = wl.items(n);
        let mut checksum = 0u64;
        loop {
            buf.clear();
            buf.extend(gen.by_ref().take(10_000).map(Item::into_content));
            if buf.is_empty() {
                break;
            }
            let t = Clock::now();
            for c in &buf {
                let h = dedup::content_hash(c);
                let b = dedup::band_keys(c);
                checksum = checksum.wrapping_add(u64::from(b[0]) + h.len() as u64);
            }
            sig_s += t.elapsed().as_secs_f64();
        }
        let sigs: Vec<Vec<u8>> = conn
            .prepare("SELECT bands FROM lethe_signature")?
            .query_map([], |r| r.get(0))?
            .collect::<std::result::Result<_, _>>()?;
        let refs: Vec<&[u8]> = sigs.iter().map(|s| s.as_slice()).collect();
        let t = Clock::now();
        let cand = dedup::candidate_pairs(&refs);
        let cand_s = t.elapsed().as_secs_f64();
        drop(refs);
        drop(sigs);
        let t = Clock::now();
        let snap = Snapshot::load(&conn)?;
        let snap_s = t.elapsed().as_secs_f64();
        let pairs = snap.pairs();
        let similar_07 = pairs.iter().filter(|p| p.2 > 0.7).count();
        // The window's what-if panel: the same snapshot scored under the current and a
        // proposed policy (episodic half-life 14 d, threshold 0.55); median of 5 runs.
        let current = lethe_engine::Settings::default();
        let mut proposed = current.clone();
        proposed.half_life_days.episodic = 14.0;
        proposed.threshold = 0.55;
        let mut what_if_ms: Vec<f64> = Vec::new();
        let mut newly = 0usize;
        for _ in 0..5 {
            let t = Clock::now();
            let w = forgetting::what_if(&snap, &current, &proposed, now)?;
            what_if_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            newly = w.newly_forgotten.len();
        }
        what_if_ms.sort_by(f64::total_cmp);
        json!({
            "what_if_ms": round3(what_if_ms[2]), "what_if_newly_forgotten": newly,
            "signatures": n, "signature_secs": round3(sig_s), "signatures_per_s": (n as f64 / sig_s).round(),
            "lsh_candidate_pairs": cand.len(), "lsh_secs": round3(cand_s),
            "snapshot_load_secs": round3(snap_s), "snapshot_rows": snap.rows.len(),
            "similar_pairs": pairs.len(), "pairs_over_0_7": similar_07, "checksum": checksum,
        })
    };
    rss_mark(&mut phases, "dedup");

    // 4. Recall latency and throughput.
    let q = |text: &str| RecallQuery { text: text.to_string(), limit: workload::QUERY_LIMIT, ..Default::default() };
    let recall_v = if skip("recall") { Value::Null } else { recall_phase(n, args, &conn, &db, &queries, now)? };
    rss_mark(&mut phases, "recall");

    // 5. Meta-memory under a recall storm, and a pure hit storm.
    let storm = if skip("storm") {
        Value::Null
    } else {
        progress(n, &format!("meta storm × {} (at most {} s)", args.storm, args.storm_max_secs));
        let buf = MetaBuffer::start(&db, Duration::from_millis(100))?;
        let mut recorded = 0i64;
        let t = Clock::now();
        let mut recalls = 0usize;
        while recalls < args.storm && t.elapsed().as_secs_f64() < args.storm_max_secs {
            for h in recall::recall(&conn, &q(&queries[recalls % queries.len()]), now)? {
                buf.record_hit(&h.id, h.score, now);
                recorded += 1;
            }
            recalls += 1;
        }
        let storm_s = t.elapsed().as_secs_f64();
        let (flushes, failures) = buf.counters();
        // A pure hit storm: 10,000 hits as fast as they come, one tick later.
        let before = buf.counters().0;
        let t = Clock::now();
        for i in 0..10_000usize {
            buf.record_hit(&wl.memory_id(i % n), 0.7, now);
        }
        let hit_storm_s = t.elapsed().as_secs_f64();
        std::thread::sleep(buf.interval() * 3);
        let hit_storm_tx = buf.counters().0 - before;
        buf.shutdown();
        let stored: i64 =
            conn.query_row("SELECT COALESCE(SUM(recall_count), 0) FROM meta_memory_stats", [], |r| r.get(0))?;
        json!({
            "recalls": recalls, "recalls_requested": args.storm, "hits_recorded": recorded, "secs": round3(storm_s),
            "recalls_per_s": (recalls as f64 / storm_s).round(),
            "write_tx": flushes, "failed_tx": failures, "write_tx_per_s": round3(flushes as f64 / storm_s),
            "hit_storm": {"hits": 10_000, "secs": round3(hit_storm_s), "write_tx": hit_storm_tx},
            "stored_recall_count": stored, "lossless": stored == recorded + 10_000,
        })
    };
    rss_mark(&mut phases, "storm");

    // 6. The forgetting batch: dry run, real run, and a second (idempotent) real run.
    let batch = |conn: &mut store::Connection, dry: bool| -> Result<Value> {
        let t = Clock::now();
        let r = forgetting::run_batch(conn, &BatchOptions::new(now, dry))?;
        let secs = t.elapsed().as_secs_f64();
        Ok(json!({
            "dry_run": dry, "scanned": r.scanned, "secs": round3(secs),
            "rows_per_s": (r.scanned as f64 / secs).round(),
            "soft_deleted": r.soft_deleted.len(), "working_gate": r.working_gate.len(),
            "review": r.review.len(), "purged": r.purged.len(),
        }))
    };
    let forget = if skip("forget") {
        Value::Null
    } else {
        progress(n, "forgetting batch");
        let dry = batch(&mut conn, true)?;
        let real = batch(&mut conn, false)?;
        let rerun = batch(&mut conn, false)?;
        json!({"dry": dry, "real": real, "rerun": rerun})
    };
    rss_mark(&mut phases, "forget");
    drop(conn);

    let (peak, _) = rss_mb();
    let db_mb = db_files_mb(&db);
    if !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(json!({
        "n": n,
        "workload": {"name": wl.name(), "generate_secs": round3(gen_s), "content_bytes": generated, "queries": queries.len()},
        "embed": embed,
        "remember": remember,
        "remember_sqlite_floor": floor,
        "remember_detector_off": remember_guard_off,
        "remember_grouped": remember_grouped,
        "import": import,
        "import_without_model": import_no_model,
        "import_sqlite_floor": import_floor_v,
        "dedup": dedup_v,
        "recall": recall_v,
        "meta_storm": storm,
        "forget": forget,
        "peak_rss_mb": round1(peak),
        "rss_phases": phases,
        "db_mb_at_end": round1(db_mb),
        "loadavg": {"before": load_before, "after": loadavg()},
    }))
}

/// Recall latency and throughput through `recall::recall`, plus two raw FTS5 probes that
/// show how much of a query is BM25 itself (how many rows match, and the FTS-only top 200).
fn recall_phase(
    n: usize,
    args: &Args,
    conn: &store::Connection,
    db: &Path,
    queries: &[String],
    now: Instant,
) -> Result<Value> {
    progress(n, &format!("recall × {}", args.queries));
    let q = |text: &str| RecallQuery { text: text.to_string(), limit: workload::QUERY_LIMIT, ..Default::default() };
    // The warm-up: a process's first recall of a file asks FTS5, its second builds the
    // in-memory lexical index (in that recall, or above `BUILD_INLINE_MAX` rows on the side
    // while FTS5 answers). The timed recalls start once it is ready; the time from the
    // recall that started the build to then, and the memory it took, are reported.
    let (mut rss, mut started) = (rss_mb().1, Clock::now());
    for (k, text) in queries.iter().rev().take(20).enumerate() {
        if k + 1 == lethe_engine::lexical::BUILD_AT {
            (rss, started) = (rss_mb().1, Clock::now());
        }
        recall::recall(conn, &q(text), now)?;
    }
    while store::read_tx(conn, || lethe_engine::lexical::index(conn))?.is_none() {
        if started.elapsed().as_secs() > 600 {
            bail!("the in-memory lexical index was not ready after 10 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let build = (started.elapsed().as_secs_f64() * 1000.0, rss_mb().1 - rss);
    let mut lat = Vec::with_capacity(args.queries);
    let mut hits = 0usize;
    let t = Clock::now();
    for text in queries.iter().take(args.queries) {
        let s = Clock::now();
        hits += recall::recall(conn, &q(text), now)?.len();
        lat.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    let recall_s = t.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let count = lat.len().max(1);

    // Throughput the way several agents recall at once: the same queries dealt round-robin to
    // one reader thread per core, each with its own connection (WAL readers do not block each
    // other), each warmed up with 20 queries first.
    let readers =
        args.readers.unwrap_or_else(|| std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1)).max(1);
    progress(n, &format!("recall × {} on {readers} readers", args.queries));
    let conns = (0..readers).map(|_| open_db(db, args)).collect::<Result<Vec<_>>>()?;
    for c in &conns {
        for text in queries.iter().rev().take(20) {
            recall::recall(c, &q(text), now)?;
        }
    }
    let start = std::sync::Barrier::new(readers + 1);
    let (par_s, par_hits) = std::thread::scope(|scope| -> Result<(f64, usize)> {
        let workers: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(k, c)| {
                let start = &start;
                scope.spawn(move || -> Result<usize> {
                    start.wait();
                    let mut hits = 0;
                    for text in queries.iter().take(args.queries).skip(k).step_by(readers) {
                        hits += recall::recall(&c, &q(text), now)?.len();
                    }
                    Ok(hits)
                })
            })
            .collect();
        start.wait();
        let t = Clock::now();
        let mut hits = 0;
        for w in workers {
            hits += w.join().map_err(|_| anyhow::anyhow!("a reader thread panicked"))??;
        }
        Ok((t.elapsed().as_secs_f64(), hits))
    })?;
    if par_hits != hits {
        bail!("the readers found {par_hits} hits, one reader {hits}");
    }

    // The floor: the two searches recall starts from, alone, on the same queries and
    // connection, in one read transaction each — the stemmed-BM25 search (AND first, OR when
    // AND finds fewer than the limit, as recall does) and the exact vector scan with the
    // query's embedding. What recall adds is the candidates' rows, the re-rank and the content
    // of the hits. The lexical search is the one recall runs here: the process's in-memory
    // index (built during the warm-up), or FTS5's statement for a query it leaves to FTS5.
    // The same floor with FTS5's statement for every query (what recall ran before the index,
    // and what a one-shot command runs) is measured too.
    let embedder = lethe_engine::embed::shared();
    let floor_ms = |in_memory: bool| -> Result<Vec<f64>> {
        let mut floor = Vec::with_capacity(args.queries);
        for text in queries.iter().take(args.queries) {
            let s = Clock::now();
            let found = store::read_tx(conn, || {
                let Some(any) = recall::match_expression(text) else { return Ok(0) };
                let all = recall::match_all_expression(text).unwrap_or_else(|| any.clone());
                let phrases = match in_memory.then(|| lethe_engine::lexical::index(conn)).transpose()?.flatten() {
                    Some(k) => k.index.phrases(conn, &recall::searched_words(text))?.map(|p| (k.index, p)),
                    None => None,
                };
                let mut stmt = conn.prepare_cached(recall::lexical_sql(conn))?;
                let mut found = 0usize;
                let exprs = if all == any { vec![(&any, false)] } else { vec![(&all, true), (&any, false)] };
                for (expr, every_word) in exprs {
                    found += match &phrases {
                        Some((ix, p)) => {
                            let mut m = ix.search(p, every_word);
                            lethe_engine::lexical::best(&mut m, Some(recall::INNER as usize));
                            m.len()
                        }
                        None => {
                            stmt.query_map(lethe_engine::params![expr, recall::INNER], |r| r.get::<_, i64>(0))?.count()
                        }
                    };
                    if found >= workload::QUERY_LIMIT {
                        break;
                    }
                }
                if let Some(e) = embedder {
                    let qv = e.embed(text);
                    let ix = lethe_engine::semantic::index(conn, e)?;
                    found += ix.top(&qv, recall::CANDIDATES * 2, |_| true).len();
                }
                Ok(found)
            })?;
            std::hint::black_box(found);
            floor.push(s.elapsed().as_secs_f64() * 1000.0);
        }
        Ok(floor)
    };
    let floor_stmt_ms = floor_ms(true)?;
    let floor_s: f64 = floor_stmt_ms.iter().sum::<f64>() / 1000.0;
    let fts5_ms = floor_ms(false)?;
    let fts5_s: f64 = fts5_ms.iter().sum::<f64>() / 1000.0;

    // Probes on the first 200 queries.
    let probe: Vec<String> =
        queries.iter().take(200.min(args.queries.max(1))).filter_map(|t| recall::match_expression(t)).collect();
    let mut matches = 0i64;
    let mut count_stmt = conn.prepare("SELECT COUNT(*) FROM memory_item_fts WHERE memory_item_fts MATCH ?1")?;
    for e in &probe {
        matches += count_stmt.query_row([e], |r| r.get::<_, i64>(0))?;
    }
    let mut top =
        conn.prepare("SELECT rowid, rank FROM memory_item_fts WHERE memory_item_fts MATCH ?1 ORDER BY rank LIMIT 200")?;
    let mut fts_lat = Vec::with_capacity(probe.len());
    for e in &probe {
        let s = Clock::now();
        let rows = top.query_map([e], |r| r.get::<_, i64>(0))?.count();
        fts_lat.push(s.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(rows);
    }
    fts_lat.sort_by(f64::total_cmp);
    // The same words with AND (what an AND-first recall would rank before falling back to OR).
    let mut and_matches = 0i64;
    let mut and_lat = Vec::with_capacity(probe.len());
    for e in &probe {
        let and = e.replace(" OR ", " AND ");
        and_matches += count_stmt.query_row([&and], |r| r.get::<_, i64>(0))?;
        let s = Clock::now();
        let rows = top.query_map([&and], |r| r.get::<_, i64>(0))?.count();
        and_lat.push(s.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(rows);
    }
    and_lat.sort_by(f64::total_cmp);
    Ok(json!({
        "queries": lat.len(), "warmup": 20, "limit": workload::QUERY_LIMIT,
        "qps": (lat.len() as f64 / par_s).round(), "readers": readers, "secs": round3(par_s),
        "one_reader_qps": (lat.len() as f64 / recall_s).round(), "one_reader_secs": round3(recall_s),
        "mean_ms": round3(lat.iter().sum::<f64>() / count as f64),
        "p50_ms": round3(percentile(&lat, 50.0)), "p95_ms": round3(percentile(&lat, 95.0)),
        "p99_ms": round3(percentile(&lat, 99.0)), "max_ms": round3(lat.last().copied().unwrap_or(0.0)),
        "avg_hits": round3(hits as f64 / count as f64),
        "lexical_index": {"what": "from the recall that started the in-memory lexical index (with the facts kept with it) to its being ready",
            "ready_after_ms": round3(build.0), "rss_growth_mb": round3(build.1)},
        "floor": {
            "what": "the same stemmed-BM25 search (the in-memory index) and exact vector scan alone, one reader, same queries",
            "qps": (floor_stmt_ms.len() as f64 / floor_s.max(1e-9)).round(),
            "mean_ms": round3(floor_s * 1000.0 / floor_stmt_ms.len().max(1) as f64),
            "recall_vs_floor": round3((lat.len() as f64 / recall_s) / (floor_stmt_ms.len() as f64 / floor_s.max(1e-9))),
            "with_fts5_statement": {
                "what": "the same floor with FTS5's bm25() statement as the lexical search (a one-shot command's)",
                "qps": (fts5_ms.len() as f64 / fts5_s.max(1e-9)).round(),
                "mean_ms": round3(fts5_s * 1000.0 / fts5_ms.len().max(1) as f64),
            },
        },
        "probe": {
            "queries": probe.len(),
            "avg_fts_matches": (matches as f64 / probe.len().max(1) as f64).round(),
            "fts_only_top200_p50_ms": round3(percentile(&fts_lat, 50.0)),
            "fts_only_top200_p95_ms": round3(percentile(&fts_lat, 95.0)),
            "avg_fts_matches_and": (and_matches as f64 / probe.len().max(1) as f64).round(),
            "fts_only_and_top200_p50_ms": round3(percentile(&and_lat, 50.0)),
            "fts_only_and_top200_p95_ms": round3(percentile(&and_lat, 95.0)),
        },
    }))
}

// ---------------------------------------------------------------------------------------------
// The readable table.

fn table(doc: &Value) -> String {
    let workload = doc["workload"].as_str().unwrap_or("reference");
    let reference = workload == "reference";
    let mut rows: Vec<[String; 6]> = Vec::new();
    let f = |v: &Value| -> String {
        match v.as_f64() {
            Some(x) if x >= 1000.0 => group(x.round() as u64),
            Some(x) if x >= 100.0 => format!("{x:.0}"),
            Some(x) => format!("{x:.2}"),
            None => "—".into(),
        }
    };
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "ok".to_string(),
        Some(false) => "MISS".to_string(),
        None => "".to_string(),
    };
    for r in doc["results"].as_array().into_iter().flatten() {
        let n = r["n"].as_u64().unwrap_or(0);
        let ns = group(n);
        let at10k = n == 10_000;
        // memento was measured on the reference workload only.
        let memento_at10k = at10k && reference;
        let at100k = n == 100_000;
        let num = |p: &str| r.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
        let ge = |x: f64, t: f64, applies: bool| (applies && !x.is_nan()).then_some(x >= t);
        let le = |x: f64, t: f64, applies: bool| (applies && !x.is_nan()).then_some(x <= t);
        let mut push = |metric: &str, val: String, target: &str, memento: &str, ok: Option<bool>| {
            rows.push([ns.clone(), metric.into(), val, target.into(), memento.into(), verdict(ok)]);
        };
        let rem = num("/remember/per_s");
        push(
            &format!("remember /s (first {})", group(r["remember"]["calls"].as_u64().unwrap_or(0))),
            f(&r["remember"]["per_s"]),
            "≥ 25,000",
            if memento_at10k { "1,288–1,520" } else { "" },
            ge(rem, 25_000.0, true),
        );
        let floor = num("/remember_sqlite_floor/same_statements/per_s");
        push(
            "remember: SQLite floor /s (same statements, bare loop)",
            f(&r["remember_sqlite_floor"]["same_statements"]["per_s"]),
            "",
            "",
            None,
        );
        push(
            "remember ÷ SQLite floor",
            if floor.is_nan() || rem.is_nan() { "—".into() } else { format!("{:.2}", rem / floor) },
            "",
            "",
            None,
        );
        push("remember: bytes written per call (wchar)", f(&r["remember"]["io_per_call"]["wchar_bytes"]), "", "", None);
        push(
            "SQLite floor: bytes written per call",
            f(&r["remember_sqlite_floor"]["same_statements"]["io_per_call"]["wchar_bytes"]),
            "",
            "",
            None,
        );
        for (step, us) in r["remember"]["us_per_step"].as_object().into_iter().flatten() {
            push(&format!("remember µs/call: {step}"), f(us), "", "", None);
        }
        push(
            "remember /s, detector off (on ÷ off)",
            format!(
                "{} ({})",
                f(&r["remember_detector_off"]["per_s"]),
                f(&r["remember_detector_off"]["detector_on_vs_off"])
            ),
            "on ≥ 0.9 × off",
            "",
            ge(num("/remember_detector_off/detector_on_vs_off"), 0.9, true),
        );
        push(
            &format!("remember /s, {GROUP_CALLERS} callers, group commit (÷ one caller)"),
            format!("{} ({})", f(&r["remember_grouped"]["per_s"]), f(&r["remember_grouped"]["vs_one_caller"])),
            "",
            "",
            None,
        );
        push(
            "group commit: calls per transaction (mean / largest)",
            format!("{} / {}", f(&r["remember_grouped"]["mean_group"]), f(&r["remember_grouped"]["largest_group"])),
            "",
            "",
            None,
        );
        let imp = num("/import/rows_per_s");
        push("bulk import rows/s", f(&r["import"]["rows_per_s"]), "≥ 200,000", "", ge(imp, 200_000.0, true));
        push("bulk import rows/s, model off (no vectors)", f(&r["import_without_model"]["rows_per_s"]), "", "", None);
        let imp_floor = num("/import_sqlite_floor/same_statements/rows_per_s");
        push(
            "bulk import: SQLite floor rows/s (same statements, bare loop)",
            f(&r["import_sqlite_floor"]["same_statements"]["rows_per_s"]),
            "",
            "",
            None,
        );
        push(
            "bulk import ÷ SQLite floor",
            if imp_floor.is_nan() || imp.is_nan() { "—".into() } else { format!("{:.2}", imp / imp_floor) },
            "",
            "",
            None,
        );
        for (v, label) in [
            ("without_fts_triggers", "import floor without the two full-text triggers"),
            ("row_only_no_triggers", "import floor: memory_item rows alone, no triggers"),
            ("same_statements_one_transaction", "import floor, one transaction for all chunks"),
        ] {
            if r["import_sqlite_floor"][v].is_object() {
                push(&format!("{label}, rows/s"), f(&r["import_sqlite_floor"][v]["rows_per_s"]), "", "", None);
            }
        }
        push("signatures /s", f(&r["dedup"]["signatures_per_s"]), "", "", None);
        push(
            &match r["recall"]["readers"].as_u64() {
                Some(k) => format!("recall q/s, {k} readers"),
                None => "recall q/s".to_string(),
            },
            f(&r["recall"]["qps"]),
            "",
            "",
            None,
        );
        let qps1 = num("/recall/one_reader_qps");
        push(
            "recall q/s, 1 reader",
            f(&r["recall"]["one_reader_qps"]),
            if at10k { "≥ 2,000" } else { "" },
            if memento_at10k { "93–114" } else { "" },
            ge(qps1, 2_000.0, at10k),
        );
        push("recall floor q/s (same searches alone)", f(&r["recall"]["floor"]["qps"]), "", "", None);
        push("recall ÷ floor", f(&r["recall"]["floor"]["recall_vs_floor"]), "", "", None);
        push(
            "recall floor with FTS5's statement q/s",
            f(&r["recall"]["floor"]["with_fts5_statement"]["qps"]),
            "",
            "",
            None,
        );
        push(
            "recall mean / p50 ms",
            format!("{} / {}", f(&r["recall"]["mean_ms"]), f(&r["recall"]["p50_ms"])),
            "",
            "",
            None,
        );
        let p95 = num("/recall/p95_ms");
        push("recall p95 ms", f(&r["recall"]["p95_ms"]), if at100k { "≤ 10" } else { "" }, "", le(p95, 10.0, at100k));
        let wi = num("/dedup/what_if_ms");
        push(
            "what-if recompute ms",
            f(&r["dedup"]["what_if_ms"]),
            if at100k { "≤ 200" } else { "" },
            "",
            le(wi, 200.0, at100k),
        );
        let dry = num("/forget/dry/rows_per_s");
        push("forget dry-run rows/s", f(&r["forget"]["dry"]["rows_per_s"]), "≥ 200,000", "", ge(dry, 200_000.0, true));
        let real = num("/forget/real/rows_per_s");
        push("forget real rows/s", f(&r["forget"]["real"]["rows_per_s"]), "≥ 200,000", "", ge(real, 200_000.0, true));
        let real_s = num("/forget/real/secs");
        push(
            "forget real s (with dup.)",
            f(&r["forget"]["real"]["secs"]),
            if n == 1_000_000 { "≤ 15" } else { "" },
            if memento_at10k { "5.58–6.99" } else { "" },
            le(real_s, 15.0, n == 1_000_000),
        );
        let tx = num("/meta_storm/write_tx_per_s");
        push("storm write tx/s", f(&r["meta_storm"]["write_tx_per_s"]), "≤ 10", "", le(tx, 10.0, true));
        let rss = num("/peak_rss_mb");
        push(
            "peak RSS MB",
            f(&r["peak_rss_mb"]),
            if at100k { "≤ 150" } else { "" },
            if memento_at10k { "455" } else { "" },
            le(rss, 150.0, at100k),
        );
    }
    let head = ["N", "metric", "Lethe", "target", "memento@10k (reference table, not this run)", ""];
    let mut widths = head.map(|h| h.chars().count());
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if i == 2 || i == 4 {
                s.push_str(&format!("{}{c}  ", " ".repeat(pad)));
            } else {
                s.push_str(&format!("{c}{}  ", " ".repeat(pad)));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = format!("workload: {workload}\n");
    out.push_str(&line(&head.map(String::from)));
    out.push('\n');
    out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 10));
    for r in &rows {
        out.push('\n');
        out.push_str(&line(r));
    }
    out
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The team store beside SQLite.

/// `remember` × `calls`, recall × `queries` (one reader) and the forgetting batch on `conn`.
fn team_phases(
    conn: &mut store::Connection,
    wl: Workload,
    n: usize,
    calls: usize,
    queries: &[String],
    now: Instant,
) -> Result<Value> {
    let mut lat = Vec::with_capacity(calls);
    let t = Clock::now();
    for item in wl.items(n + calls).skip(n) {
        let s = Clock::now();
        let m = item.to_new_memory(now);
        lifecycle::remember(conn, &m, writer(&m), now)?;
        lat.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    let remember_s = t.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let remember = json!({
        "calls": calls, "secs": round3(remember_s), "per_s": (calls as f64 / remember_s).round(),
        "p50_ms": round3(percentile(&lat, 50.0)), "p95_ms": round3(percentile(&lat, 95.0)),
    });
    // Recall: warm-up, then one reader; hits are not recorded (the meta buffer is its own phase).
    let q = |text: &str| RecallQuery { text: text.to_string(), limit: workload::QUERY_LIMIT, ..Default::default() };
    for text in queries.iter().take(10) {
        recall::recall(conn, &q(text), now)?;
    }
    let mut lat = Vec::with_capacity(queries.len());
    let t = Clock::now();
    for text in queries {
        let s = Clock::now();
        std::hint::black_box(recall::recall(conn, &q(text), now)?);
        lat.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    let recall_s = t.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let recall = json!({
        "queries": queries.len(), "qps": (queries.len() as f64 / recall_s).round(),
        "p50_ms": round3(percentile(&lat, 50.0)), "p95_ms": round3(percentile(&lat, 95.0)),
    });
    let mut batch = |dry: bool| -> Result<Value> {
        let t = Clock::now();
        let r = forgetting::run_batch(conn, &BatchOptions::new(now, dry))?;
        let secs = t.elapsed().as_secs_f64();
        Ok(json!({
            "scanned": r.scanned, "secs": round3(secs), "rows_per_s": (r.scanned as f64 / secs).round(),
            "soft_deleted": r.soft_deleted.len(), "review": r.review.len(), "working_gate": r.working_gate.len(),
        }))
    };
    let dry = batch(true)?;
    let real = batch(false)?;
    Ok(json!({ "remember": remember, "recall": recall, "forget_dry": dry, "forget": real }))
}

fn team_bench(server: &str, args: &Args, now: Instant) -> Result<()> {
    let server = server.trim_end_matches('/');
    let sizes: Vec<usize> = args.sizes.iter().map(|s| parse_size(s)).collect::<Result<_>>()?;
    let wl = args.workload;
    let calls = args.remember_sample.min(2_000);
    let mut results = Vec::new();
    let mut admin = postgres::Client::connect(&format!("{server}/postgres"), postgres::NoTls)
        .with_context(|| format!("connecting to {}", lethe_engine::storage::postgres::display(server)))?;
    let version: String = admin.query_one("SHOW server_version", &[])?.get(0);
    for &n in &sizes {
        let base = args.tmp.clone().unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("lethe-team-bench-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let queries = wl.queries(n, args.queries.clamp(1, 500));
        progress(n, "SQLite: import");
        let file = dir.join("local.db");
        let jsonl = dir.join("workload.jsonl");
        write_jsonl(wl, n, now, &jsonl)?;
        let mut lite = open_db(&file, args)?;
        let t = Clock::now();
        transfer::import(&mut lite, BufReader::new(File::open(&jsonl)?), &transfer::ImportOptions::new(now))?;
        let import_s = t.elapsed().as_secs_f64();
        std::fs::remove_file(&jsonl)?;
        drop(lite);

        progress(n, "PostgreSQL: setup and push of the SQLite file");
        let name = format!("lethe_bench_{}_{n}", std::process::id());
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))?;
        admin.batch_execute(&format!("CREATE DATABASE {name}"))?;
        let url = format!("{server}/{name}");
        lethe_engine::storage::postgres::setup(&url)?;
        let mut pg = store::open(&url)?;
        let src = store::open_read_only(&file)?;
        let t = Clock::now();
        let pushed = lethe_engine::push::push(&src, &mut pg, "local.db", "user", now)?;
        let push_s = t.elapsed().as_secs_f64();
        drop(src);
        if pushed.pushed != n {
            bail!("the push stored {} of {n} memories", pushed.pushed);
        }
        // Statistics for the planner after a bulk load, as an operator would run.
        pg.execute_batch("ANALYZE")?;

        progress(n, &format!("SQLite: remember × {calls}, recall × {}, forget", queries.len()));
        let mut lite = open_db(&file, args)?;
        store::checkpoint_off_the_writer(&lite)?;
        let sqlite = team_phases(&mut lite, wl, n, calls, &queries, now)?;
        drop(lite);
        progress(n, &format!("PostgreSQL: remember × {calls}, recall × {}, forget", queries.len()));
        let postgres = team_phases(&mut pg, wl, n, calls, &queries, now)?;
        drop(pg);
        let ratio = |path: &[&str], lower_is_better: bool| -> Value {
            let get = |v: &Value| path.iter().fold(v, |v, k| &v[*k]).as_f64();
            match (get(&postgres), get(&sqlite)) {
                (Some(p), Some(s)) if s > 0.0 && p > 0.0 => json!(round3(if lower_is_better { p / s } else { s / p })),
                _ => Value::Null,
            }
        };
        let slower = json!({
            "remember": ratio(&["remember", "per_s"], false),
            "recall_p50": ratio(&["recall", "p50_ms"], true),
            "forget": ratio(&["forget", "secs"], true),
        });
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))?;
        if !args.keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
        results.push(json!({
            "n": n, "sqlite_import_secs": round3(import_s),
            "push": { "secs": round3(push_s), "memories_per_s": (n as f64 / push_s).round(), "audit_rows": pushed.audit_events + pushed.audit_actions, "vectors": pushed.vectors },
            "sqlite": sqlite, "postgres": postgres, "postgres_slower_by": slower,
        }));
    }
    let doc = json!({
        "benchmark": "lethe-bench --team-server (the team store beside SQLite)",
        "workload": wl.name(), "postgres_version": version, "machine": machine(),
        "args": { "sizes": sizes, "now": args.now, "remember_calls": calls, "queries": args.queries.clamp(1, 500) },
        "results": results,
    });
    let text = serde_json::to_string_pretty(&doc)?;
    if let Some(p) = &args.out {
        std::fs::write(p, format!("{text}\n")).with_context(|| format!("writing {}", p.display()))?;
    }
    let mut table = format!(
        "{:>8} | {:>10} | {:>9} | {:>11} | {:>11} | {:>9} | {:>10} | {:>14}\n",
        "N", "remember/s", "(PG)", "recall ms", "(PG)", "forget s", "(PG)", "push mem/s"
    );
    for r in doc["results"].as_array().into_iter().flatten() {
        let (sq, pg) = (&r["sqlite"], &r["postgres"]);
        table.push_str(&format!(
            "{:>8} | {:>10} | {:>9} | {:>5}/{:<5} | {:>5}/{:<5} | {:>9} | {:>10} | {:>14}\n",
            group(r["n"].as_u64().unwrap_or(0)),
            sq["remember"]["per_s"],
            pg["remember"]["per_s"],
            sq["recall"]["p50_ms"],
            sq["recall"]["p95_ms"],
            pg["recall"]["p50_ms"],
            pg["recall"]["p95_ms"],
            sq["forget"]["secs"],
            pg["forget"]["secs"],
            r["push"]["memories_per_s"],
        ));
    }
    eprintln!("\n{table}");
    println!("{text}");
    Ok(())
}
