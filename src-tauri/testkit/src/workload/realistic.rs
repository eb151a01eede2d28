//! A realistic benchmark workload beside the reference one (BENCHMARK-WORKLOAD.md, second
//! section): real agent memory is templated notes in clusters of near-copies that differ in a
//! name or a number, plus dialogue-like turns, where the reference workload draws random words
//! and almost no two memories are alike.
//!
//! - 58 note templates over the four tiers (session scratch notes, events, facts and rules,
//!   how-tos) and 14 casual dialogue templates ("Caroline: I went to a support group yesterday
//!   and it was so powerful."), all written for this file. Each template is one *cluster*;
//!   its slots are filled from lists of services, people, env vars, libraries, causes, … (30+
//!   each) and numbers and versions, so the memories of a cluster are near-copies.
//! - Cluster sizes are heavy-tailed: note templates are picked with Zipf–Mandelbrot weights
//!   `(rank + 21)^-4`, dialogue templates with `(rank + 4)^-1.5`. Over all 72 clusters,
//!   largest / median / smallest: 1,126 / 52 / 3 at 10k, 11,417 / 514 / 58 at 100k and
//!   114,855 / 4,905 / 589 at 1M (`cluster_report` below prints them).
//! - Per memory: 15 % dialogue turns (episodic, in chat sessions of 10–60 turns between two
//!   speakers), 3 % near-exact paraphrases of one of the last 64 memories ("Note: …",
//!   lower-cased, the same text again), the rest notes. Working notes come in sessions of 10–60
//!   (one session id, project, service and start time). Ages over a year, `365·u²` days (recent
//!   ones more likely); 30 % accessed; view and cite counts; importance by tier; ~2 % pinned
//!   (semantic and procedural only); a project (of 12) for most notes; tags from the template's
//!   topic plus the service named; procedural notes carry task_goal, steps and workflow_name.
//!
//! Deterministic ([`Lcg`], seed [`SEED`]; queries from their own seed [`QUERY_SEED`]) and
//! streaming: [`RealisticGenerator`] is an iterator that holds a session, a chat and the last
//! 64 memories, never N of them.

use std::collections::VecDeque;

use super::Lcg;
use lethe_engine::model::{Memory, Tier};
use lethe_engine::time::{self, Instant};

pub const SEED: u32 = 0x5EA1_1571;
pub const QUERY_SEED: u32 = 0x0BE7_0A11;

/// Share of dialogue turns, and of paraphrases of a recent memory.
pub const DIALOGUE_SHARE: f64 = 0.15;
pub const PARAPHRASE_SHARE: f64 = 0.03;
/// How many recent memories a paraphrase may copy.
const RECENT: usize = 64;

/// A deterministic memory id for realistic item `i`: uuid-shaped like the reference
/// workload's `memory_id`, with a different first group so the two never collide.
pub fn memory_id(i: usize) -> String {
    format!("mem_00000001-0000-4000-8000-{i:012x}")
}

// ---------------------------------------------------------------------------------------------
// Slot values.

const SERVICES: [&str; 36] = [
    "billing",
    "auth",
    "search",
    "payments",
    "notifications",
    "gateway",
    "inventory",
    "checkout",
    "ledger",
    "reporting",
    "analytics",
    "scheduler",
    "mailer",
    "uploads",
    "thumbnails",
    "profiles",
    "sessions",
    "catalog",
    "pricing",
    "shipping",
    "invoices",
    "webhooks",
    "exports",
    "imports",
    "audit",
    "metrics",
    "indexer",
    "crawler",
    "chat",
    "feeds",
    "recommendations",
    "geo",
    "identity",
    "storage",
    "queue-worker",
    "admin",
];

const PEOPLE: [&str; 36] = [
    "Alice", "Bilal", "Chen", "Dana", "Emeka", "Farah", "Gustavo", "Hana", "Ivan", "Jonas", "Keiko", "Liam", "Maya",
    "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Sven", "Tomas", "Uma", "Victor", "Wen", "Ximena", "Yusuf", "Zoe",
    "Arjun", "Beatriz", "Carlos", "Dmitri", "Elif", "Finn", "Grace", "Hiro", "Ines", "Jamal",
];

const ENV_VARS: [&str; 32] = [
    "DATABASE_URL",
    "REDIS_URL",
    "STRIPE_API_KEY",
    "SENTRY_DSN",
    "JWT_SECRET",
    "AWS_REGION",
    "S3_BUCKET",
    "SMTP_HOST",
    "LOG_LEVEL",
    "FEATURE_FLAGS_URL",
    "KAFKA_BROKERS",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "RUST_LOG",
    "NODE_ENV",
    "API_BASE_URL",
    "CACHE_TTL_SECONDS",
    "MAX_POOL_SIZE",
    "OAUTH_CLIENT_ID",
    "OAUTH_CLIENT_SECRET",
    "GITHUB_TOKEN",
    "SLACK_WEBHOOK_URL",
    "ELASTIC_URL",
    "QUEUE_URL",
    "RATE_LIMIT_RPM",
    "WORKER_CONCURRENCY",
    "TZ",
    "HTTP_TIMEOUT_MS",
    "SESSION_COOKIE_DOMAIN",
    "CDN_BASE_URL",
    "ENCRYPTION_KEY_ID",
    "PG_STATEMENT_TIMEOUT",
    "GRPC_PORT",
];

const LIBRARIES: [&str; 34] = [
    "tokio",
    "serde",
    "axum",
    "reqwest",
    "sqlx",
    "diesel",
    "hyper",
    "tonic",
    "rayon",
    "clap",
    "react",
    "next.js",
    "vite",
    "webpack",
    "prisma",
    "express",
    "fastapi",
    "django",
    "pydantic",
    "sqlalchemy",
    "celery",
    "pandas",
    "numpy",
    "pytest",
    "jest",
    "playwright",
    "lodash",
    "zod",
    "redux",
    "grpc-go",
    "gin",
    "spring-boot",
    "hibernate",
    "cobra",
];

const CAUSES: [&str; 30] = [
    "a missing env var",
    "an expired TLS certificate",
    "a failing health check",
    "a schema migration lock timeout",
    "an out-of-memory kill",
    "a bad feature flag default",
    "a wrong image tag",
    "a full disk on the build runner",
    "a flaky integration test",
    "a DNS resolution error",
    "a port conflict",
    "a stale config map",
    "a dependency version conflict",
    "a permissions error on the bucket",
    "a rate-limited registry pull",
    "a broken Dockerfile step",
    "a typo in the Helm values",
    "a missing database index",
    "a timeout talking to Redis",
    "an unapplied migration",
    "a secret that was not rotated",
    "a circular import",
    "a null pointer in the startup path",
    "a revoked API key",
    "a crash loop in the sidecar",
    "an exhausted connection pool",
    "clock skew on one node",
    "a corrupted cache entry",
    "a mismatched protobuf schema",
    "a read-only filesystem",
];

const FEATURES: [&str; 30] = [
    "retry with backoff",
    "pagination",
    "request tracing",
    "a circuit breaker",
    "input validation",
    "bulk export",
    "soft deletes",
    "audit logging",
    "idempotency keys",
    "a dark mode toggle",
    "CSV import",
    "webhook signatures",
    "rate limiting",
    "caching of hot keys",
    "structured logging",
    "graceful shutdown",
    "a health endpoint",
    "multi-region failover",
    "an admin dashboard",
    "search suggestions",
    "email templates",
    "SSO login",
    "two-factor auth",
    "background jobs",
    "connection pooling",
    "response compression",
    "optimistic locking",
    "a dry-run mode",
    "batch inserts",
    "streaming uploads",
];

const REGIONS: [&str; 12] = [
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-northeast-1",
    "sa-east-1",
    "ca-central-1",
    "eu-north-1",
    "ap-south-1",
    "us-east-2",
    "af-south-1",
];

const TABLES: [&str; 24] = [
    "users",
    "orders",
    "invoices",
    "payments",
    "sessions",
    "events",
    "audit_log",
    "products",
    "carts",
    "shipments",
    "accounts",
    "api_keys",
    "subscriptions",
    "refunds",
    "webhooks",
    "jobs",
    "messages",
    "tenants",
    "feature_flags",
    "documents",
    "comments",
    "notifications",
    "ledger_entries",
    "price_rules",
];

const TEAMS: [&str; 12] = [
    "platform", "payments", "growth", "search", "infra", "mobile", "data", "security", "support", "frontend",
    "identity", "sre",
];

const METRICS: [&str; 10] = [
    "p95 latency",
    "error rate",
    "CPU usage",
    "memory usage",
    "queue depth",
    "cache miss rate",
    "request rate",
    "disk usage",
    "GC pause time",
    "connection count",
];

const MODULES: [&str; 16] = [
    "handlers", "routes", "config", "db", "models", "client", "worker", "cache", "auth", "api", "schema", "utils",
    "jobs", "metrics", "events", "server",
];

const PROJECTS: [&str; 12] = [
    "proj_billing-platform",
    "proj_mobile-app",
    "proj_search-revamp",
    "proj_data-pipeline",
    "proj_checkout-v2",
    "proj_infra-migration",
    "proj_auth-hardening",
    "proj_analytics",
    "proj_customer-portal",
    "proj_ml-ranking",
    "proj_observability",
    "proj_internal-tools",
];

const SPEAKERS: [&str; 32] = [
    "Caroline", "Melanie", "Jonah", "Gina", "Priya", "Marcus", "Sofia", "Theo", "Nadia", "Omar", "Leah", "Ravi",
    "Elena", "Sam", "Mei", "Diego", "Ana", "Kofi", "Lucy", "Mateo", "Aisha", "Ben", "Chloe", "Daniel", "Eva", "Felix",
    "Hannah", "Isaac", "Julia", "Kai", "Lena", "Noah",
];

const EVENTS: [&str; 15] = [
    "support group",
    "pottery class",
    "farmers market",
    "charity run",
    "book club",
    "jazz concert",
    "neighbourhood picnic",
    "yoga class",
    "art fair",
    "cooking workshop",
    "trivia night",
    "film festival",
    "climbing gym",
    "choir rehearsal",
    "museum tour",
];
const FEELINGS: [&str; 12] = [
    "powerful",
    "relaxing",
    "inspiring",
    "fun",
    "exhausting",
    "peaceful",
    "emotional",
    "exciting",
    "calming",
    "rewarding",
    "surprising",
    "moving",
];
const WHENS: [&str; 10] = [
    "yesterday",
    "last weekend",
    "on Saturday",
    "this morning",
    "last night",
    "two days ago",
    "on Sunday",
    "last Friday",
    "earlier today",
    "a few weeks ago",
];
const PLACES: [&str; 12] = [
    "zoo",
    "beach",
    "aquarium",
    "science museum",
    "lake",
    "botanical garden",
    "water park",
    "farm",
    "planetarium",
    "mountains",
    "park downtown",
    "county fair",
];
const HOBBIES: [&str; 16] = [
    "pottery",
    "painting",
    "rock climbing",
    "baking bread",
    "running",
    "knitting",
    "photography",
    "gardening",
    "chess",
    "birdwatching",
    "journaling",
    "salsa dancing",
    "woodworking",
    "guitar",
    "meditation",
    "swimming",
];
const RELATIVES: [&str; 13] = [
    "sister", "brother", "mom", "dad", "grandma", "grandpa", "cousin", "aunt", "uncle", "niece", "nephew", "daughter",
    "son",
];
const NEXTS: [&str; 5] = ["next week", "this weekend", "in two weeks", "next month", "on Friday"];
const FOODS: [&str; 12] = [
    "shakshuka",
    "ramen",
    "sourdough",
    "pad thai",
    "tamales",
    "bibimbap",
    "paella",
    "pierogi",
    "falafel",
    "lasagna",
    "pho",
    "banana bread",
];
const GENRES: [&str; 9] =
    ["mystery", "fantasy", "sci-fi", "historical", "romance", "thriller", "memoir", "graphic", "adventure"];
const PETS: [&str; 8] = ["dog", "cat", "rabbit", "parrot", "hamster", "puppy", "kitten", "guinea pig"];
const RACES: [&str; 7] = ["5k", "10k", "half marathon", "marathon", "triathlon", "charity walk", "long bike ride"];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const CITIES: [&str; 14] = [
    "Lisbon",
    "Kyoto",
    "Toronto",
    "Barcelona",
    "Seoul",
    "Mexico City",
    "Cape Town",
    "Prague",
    "Melbourne",
    "Istanbul",
    "Reykjavik",
    "Buenos Aires",
    "Vancouver",
    "Marrakesh",
];
const ORGS: [&str; 10] = [
    "animal shelter",
    "food bank",
    "community garden",
    "library",
    "youth center",
    "hospital",
    "senior center",
    "soup kitchen",
    "literacy program",
    "beach cleanup",
];
const SUBJECTS: [&str; 10] = [
    "sunset",
    "lake at dawn",
    "portrait of my dog",
    "field of sunflowers",
    "city skyline",
    "forest path",
    "bowl of lemons",
    "mountain range",
    "stormy sea",
    "old barn",
];
const BETTERS: [&str; 6] = ["better", "calmer", "stronger", "more hopeful", "more rested", "more like myself"];

/// Draws the value of one slot.
fn draw(name: &str, g: &mut Lcg) -> String {
    fn pick(g: &mut Lcg, list: &[&str]) -> String {
        g.pick(list).to_string()
    }
    fn int(g: &mut Lcg, lo: usize, hi: usize) -> String {
        (lo + g.index(hi - lo + 1)).to_string()
    }
    match name {
        "svc" | "svc2" => pick(g, &SERVICES),
        "person" | "person2" => pick(g, &PEOPLE),
        "env" => pick(g, &ENV_VARS),
        "lib" => pick(g, &LIBRARIES),
        "cause" => pick(g, &CAUSES),
        "feature" => pick(g, &FEATURES),
        "region" => pick(g, &REGIONS),
        "table" => pick(g, &TABLES),
        "team" => pick(g, &TEAMS),
        "metric" => pick(g, &METRICS),
        "module" => pick(g, &MODULES),
        "ver" => format!("{}.{}", 1 + g.index(5), g.index(31)),
        "libver" => format!("{}.{}.{}", g.index(3), g.index(40), g.index(10)),
        "flag" => format!("ff_{}_{}", g.pick(&MODULES), 1 + g.index(9)),
        "pr" => int(g, 10, 4999),
        "build" => int(g, 1000, 99_999),
        "issue" => int(g, 100, 9999),
        "step" => int(g, 1, 12),
        "total" => int(g, 12, 20),
        "failing" => int(g, 0, 25),
        "tests" => int(g, 50, 2500),
        "ms" => (10 * (2 + g.index(199))).to_string(),
        "pct" => int(g, 1, 99),
        "rpm" => g.pick(&[60, 100, 120, 300, 500, 600, 1000, 1200, 3000, 6000]).to_string(),
        "rps" => (100 * (1 + g.index(200))).to_string(),
        "port" => int(g, 3000, 9999),
        "mins" => int(g, 1, 90),
        "days" => g.pick(&[7, 14, 30, 60, 90, 180, 365]).to_string(),
        "count" => int(g, 2, 500),
        "replicas" => int(g, 2, 24),
        "mb" => g.pick(&[64, 128, 256, 512, 1024, 2048, 4096]).to_string(),
        "ttl" => g.pick(&[30, 60, 300, 600, 900, 3600, 86_400]).to_string(),
        "timeout" => g.pick(&[1, 2, 5, 10, 15, 30, 60]).to_string(),
        "retries" => int(g, 2, 10),
        "status" => g.pick(&[500, 502, 503, 504, 429, 404, 401]).to_string(),
        "limitkey" => pick(g, &["key", "user", "tenant", "IP address", "token"]),
        "slo" => pick(g, &["99", "99.5", "99.9", "99.95", "99.99"]),
        "pool" => g.pick(&[5, 10, 16, 20, 25, 32, 50, 64, 100]).to_string(),
        "n" => int(g, 1, 999),
        "speaker" => pick(g, &SPEAKERS),
        "event" => pick(g, &EVENTS),
        "feeling" => pick(g, &FEELINGS),
        "when" => pick(g, &WHENS),
        "place" => pick(g, &PLACES),
        "hobby" => pick(g, &HOBBIES),
        "relative" => pick(g, &RELATIVES),
        "next" => pick(g, &NEXTS),
        "food" => pick(g, &FOODS),
        "genre" => pick(g, &GENRES),
        "pet" => pick(g, &PETS),
        "race" => pick(g, &RACES),
        "month" => pick(g, &MONTHS),
        "city" => pick(g, &CITIES),
        "org" => pick(g, &ORGS),
        "subject" => pick(g, &SUBJECTS),
        "better" => pick(g, &BETTERS),
        other => panic!("realistic workload: unknown slot {{{other}}}"),
    }
}

/// The slot values of one memory: a slot named twice (in the content and in a step) gets one
/// value, drawn when first met.
#[derive(Default)]
struct Fill {
    vals: Vec<(&'static str, String)>,
}

impl Fill {
    fn set(&mut self, name: &'static str, value: &str) {
        self.vals.push((name, value.to_string()));
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.vals.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    fn render(&mut self, text: &'static str, g: &mut Lcg) -> String {
        let mut out = String::with_capacity(text.len() + 32);
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = open + rest[open..].find('}').expect("unclosed slot in a realistic template");
            let name = &rest[open + 1..close];
            match self.get(name) {
                Some(v) => out.push_str(v),
                None => {
                    let v = draw(name, g);
                    out.push_str(&v);
                    self.vals.push((name, v));
                }
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Templates.

struct Template {
    tier: Tier,
    tags: &'static [&'static str],
    /// The content; for a procedure, the "To … of {svc}" head that its numbered steps follow.
    text: &'static str,
    goal: &'static str,
    workflow: &'static str,
    steps: &'static [&'static str],
}

const fn note(tier: Tier, tags: &'static [&'static str], text: &'static str) -> Template {
    Template { tier, tags, text, goal: "", workflow: "", steps: &[] }
}

const fn how(
    tags: &'static [&'static str],
    workflow: &'static str,
    text: &'static str,
    goal: &'static str,
    steps: &'static [&'static str],
) -> Template {
    Template { tier: Tier::Procedural, tags, text, goal, workflow, steps }
}

use Tier::{Episodic as E, Semantic as S, Working as W};

/// The note templates (grouped by tier; [`ranked`] interleaves them into popularity order).
const TEMPLATES: [Template; 58] = [
    // Working: session scratch notes.
    note(W, &["migration"], "Step {step} of the {svc} migration: ran tests, {failing} failing."),
    note(W, &["editing"], "Currently editing src/{module}.rs in {svc}; next: wire up {feature}."),
    note(W, &["todo", "dependencies"], "TODO this session: bump {lib} to {libver} in {svc} and rerun the tests."),
    note(W, &["performance"], "Scratch: {svc} p95 was {ms} ms before the change, measuring again after the cache fix."),
    note(W, &["review", "blocked"], "Waiting on {person} to approve PR {pr} before continuing with {svc}."),
    note(W, &["queue"], "Tried restarting the {svc} worker, still {count} jobs stuck in the queue."),
    note(W, &["debugging"], "Hypothesis: the {svc} timeout comes from {cause}; testing that next."),
    note(W, &["config"], "Session note: {person} asked to keep {env} unchanged in {svc} until Friday."),
    note(W, &["backfill"], "Left off at step {step} of {total}: the {table} backfill for {svc} is {pct}% done."),
    note(W, &["bug", "repro"], "Reproduced the {svc} bug locally with seed {n}; it fails {pct}% of runs."),
    note(W, &["question", "config"], "Open question for {person}: should {svc} read {env} at startup or per request?"),
    note(W, &["plan", "performance"], "Plan for the next hour: profile {svc}, then try {lib} {libver}."),
    note(W, &["git"], "Branch fix/{svc}-{issue} has {count} changed lines, not pushed yet."),
    note(W, &["benchmark"], "Ran the {svc} benchmark again: {rps} requests/s, {ms} ms p99."),
    // Episodic: deploys, incidents, reviews, test runs.
    note(
        E,
        &["deploy", "failure"],
        "Deploy of {svc} v{ver} to production failed: {cause}; rolled back to the previous release.",
    ),
    note(E, &["review", "pr"], "Reviewed PR {pr} adding {feature} to {svc}; approved after one round of comments."),
    note(E, &["tests", "ci"], "Test run for {svc} on build {build}: {tests} passed, {failing} failed."),
    note(E, &["incident"], "Incident in {svc} ({region}): {metric} spiked for {mins} minutes, caused by {cause}."),
    note(E, &["deploy"], "Deployed {svc} v{ver} to {region} with {replicas} replicas."),
    note(E, &["pr", "dependencies"], "{person} merged PR {pr} that upgrades {lib} to {libver} in {svc}."),
    note(E, &["rollback", "deploy"], "Rolled back {svc} from v{ver} after {metric} alerts."),
    note(E, &["pairing"], "Paired with {person} on {feature} for {svc} for {mins} minutes."),
    note(E, &["export", "batch"], "The nightly {table} export from {svc} took {mins} minutes and wrote {mb} MB."),
    note(E, &["on-call"], "On-call handoff from {person} to {person2}: {svc} has {count} open alerts."),
    note(E, &["hotfix"], "Hotfix for {svc} shipped in build {build} to fix {cause}."),
    note(E, &["migration", "database"], "Migration {n} on the {table} table in {svc} ran for {mins} minutes."),
    note(
        E,
        &["customer", "errors"],
        "Customer report: {svc} returned HTTP {status} for {pct}% of requests in {region}.",
    ),
    note(E, &["ci", "failure"], "CI for PR {pr} in {svc} went red: {cause}."),
    note(
        E,
        &["postmortem", "incident"],
        "Postmortem for the {svc} outage with {person} and {person2}: {count} action items.",
    ),
    note(E, &["load-test"], "Load test of {svc} reached {rps} requests/s before {metric} degraded."),
    // Semantic: facts, config values, conventions.
    note(S, &["rate-limit", "api"], "Rate limit on the {svc} API is {rpm} requests per minute per {limitkey}."),
    note(
        S,
        &["secrets", "ownership"],
        "{env} for {svc} lives in the {region} secrets store, owned by the {team} team.",
    ),
    note(S, &["dependencies"], "{svc} uses {lib} {libver} for its HTTP layer."),
    note(
        S,
        &["database", "retention"],
        "The {table} table in {svc} is partitioned by month and keeps {days} days of data.",
    ),
    note(
        S,
        &["convention", "api"],
        "Convention: every {svc} endpoint returns errors as JSON with a code and a message (agreed with {person}).",
    ),
    note(S, &["ownership", "escalation"], "{person} owns the {svc} service; escalate to the {team} team after hours."),
    note(S, &["cache", "config"], "The {svc} cache TTL is {ttl} seconds."),
    note(S, &["config", "network"], "{svc} listens on port {port} in staging and production."),
    note(
        S,
        &["timeout", "config"],
        "Timeout for calls from {svc} to {svc2} is {timeout} seconds with {retries} retries.",
    ),
    note(S, &["rule", "config"], "Rule: {svc} must not read {env} directly; go through the config loader."),
    note(S, &["slo"], "The SLO for {svc} is {slo}% availability and p95 under {ms} ms."),
    note(S, &["feature-flag"], "Feature flag {flag} controls {feature} in {svc} and defaults to off."),
    note(S, &["database", "config"], "The {svc} database pool size is {pool} connections per instance."),
    note(S, &["logging", "retention"], "Logs for {svc} are kept for {days} days in {region}."),
    note(S, &["review", "rule"], "Code review rule: PRs touching {svc} need approval from {person} or {person2}."),
    note(S, &["dependencies", "rule"], "{lib} versions above {libver} break the {svc} build; keep it pinned."),
    // Procedural: how-tos with steps.
    how(
        &["rollback", "deploy"],
        "rollback-deploy",
        "To roll back a failed deploy of {svc}",
        "Roll back a failed deploy of {svc}",
        &[
            "Find the last good release of {svc} in the deploy log",
            "Run `deployctl rollback {svc} --to v{ver}`",
            "Watch the {svc} error rate for {mins} minutes",
            "Post a note in the incident channel",
        ],
    ),
    how(
        &["secrets", "rotation"],
        "rotate-secret",
        "To rotate {env} for {svc}",
        "Rotate {env} for {svc}",
        &[
            "Generate a new value in the {region} secrets store",
            "Update {env} in the {svc} deployment config",
            "Restart {svc} one replica at a time",
            "Revoke the old value after {mins} minutes",
        ],
    ),
    how(
        &["migration", "database"],
        "schema-migration",
        "To add a column to {table} in {svc}",
        "Add a column to {table} in {svc}",
        &[
            "Write migration {n} with a nullable column",
            "Run it on staging and check the {table} row count",
            "Backfill in batches of {count}",
            "Make the column required in a later migration",
        ],
    ),
    how(
        &["release"],
        "release",
        "To release a new version of {svc}",
        "Release a new version of {svc}",
        &[
            "Bump the version to {ver}",
            "Run the full test suite ({tests} tests)",
            "Tag the commit and push",
            "Deploy to {region} first, then everywhere else",
        ],
    ),
    how(
        &["database", "performance"],
        "debug-slow-query",
        "To debug slow queries in {svc}",
        "Debug slow queries in {svc}",
        &[
            "Enable the slow query log above {ms} ms",
            "Run EXPLAIN on the worst query against {table}",
            "Add or fix the index",
            "Compare p95 before and after",
        ],
    ),
    how(
        &["dependencies", "upgrade"],
        "dependency-upgrade",
        "To upgrade {lib} in {svc}",
        "Upgrade {lib} in {svc}",
        &[
            "Read the {lib} {libver} changelog",
            "Bump the version and fix compile errors",
            "Run the {svc} integration tests",
            "Deploy behind the {flag} flag",
        ],
    ),
    how(
        &["onboarding"],
        "onboarding",
        "To onboard a new engineer to {svc}",
        "Onboard a new engineer to {svc}",
        &[
            "Give them access to the {team} team channel",
            "Pair with {person} on the {svc} setup",
            "Have them ship a small fix in the first week",
        ],
    ),
    how(
        &["incident", "crash-loop"],
        "crash-loop",
        "To recover {svc} from a crash loop",
        "Recover {svc} from a crash loop",
        &[
            "Read the last {count} log lines of the failing pod",
            "Look for {cause}",
            "Scale {svc} down to one replica",
            "Fix, redeploy and scale back to {replicas} replicas",
        ],
    ),
    how(
        &["tests", "flaky"],
        "flaky-test",
        "To reproduce a flaky test in {svc}",
        "Reproduce a flaky test in {svc}",
        &["Run the test {count} times with a fixed seed", "Record which seeds fail", "Bisect the last {n} commits"],
    ),
    how(
        &["backup", "database"],
        "restore-backup",
        "To restore the {table} table of {svc} from backup",
        "Restore the {table} table of {svc} from backup",
        &[
            "Pick the snapshot from {days} days ago",
            "Restore it into a scratch database",
            "Copy the missing rows into {table}",
            "Check the counts with {person}",
        ],
    ),
    how(
        &["rate-limit", "customer"],
        "rate-limit-change",
        "To raise the rate limit for a customer on {svc}",
        "Raise the rate limit for a customer on {svc}",
        &[
            "Check current usage against {rpm} requests per minute",
            "Get approval from the {team} team",
            "Update the limit in the {svc} config",
            "Tell the customer",
        ],
    ),
    how(
        &["setup", "local"],
        "local-setup",
        "To set up local development for {svc}",
        "Set up local development for {svc}",
        &[
            "Clone the repo and install {lib}",
            "Copy .env.example to .env and set {env}",
            "Start the database on port {port}",
            "Run the tests",
        ],
    ),
];

/// Casual dialogue-like turns; `{speaker}` is the turn's speaker.
const DIALOGUE: [&str; 14] = [
    "{speaker}: I went to a {event} {when} and it was so {feeling}.",
    "{speaker}: We took the kids to the {place} {when}, they loved it.",
    "{speaker}: I've been getting into {hobby} lately, it really helps me unwind.",
    "{speaker}: My {relative} is visiting {next}, so I'm cleaning the whole house.",
    "{speaker}: Have you ever made {food}? I tried it {when} for the first time.",
    "{speaker}: I just finished a {genre} novel, I couldn't put it down.",
    "{speaker}: Our {pet} got sick {when}, but she's doing much better now.",
    "{speaker}: I signed up for a {race} in {month}, wish me luck!",
    "{speaker}: That sounds {feeling}! How long have you been doing {hobby}?",
    "{speaker}: Thanks for asking, I'm feeling {better} than last week.",
    "{speaker}: I painted a {subject} {when}, it's hanging in the hallway now.",
    "{speaker}: We're planning a trip to {city} in {month}, any tips?",
    "{speaker}: I started volunteering at the {org} {when}.",
    "{speaker}: I'm so proud of my {relative}, they just got their first job!",
];

/// Note templates (clusters `0..NOTE_CLUSTERS`), then dialogue templates.
pub const NOTE_CLUSTERS: usize = TEMPLATES.len();
pub const CLUSTERS: usize = TEMPLATES.len() + DIALOGUE.len();
const _: () = assert!(NOTE_CLUSTERS >= 40, "at least 40 note templates");

/// `TEMPLATES` indices in popularity order: tiers interleaved episodic, working, semantic,
/// episodic, semantic, procedural (the reference workload's 1:2:2:1 mix), leftovers last.
fn ranked() -> Vec<usize> {
    let mut by_tier: [VecDeque<usize>; 4] = Default::default();
    for (i, t) in TEMPLATES.iter().enumerate() {
        let k = match t.tier {
            Tier::Working => 0,
            Tier::Episodic => 1,
            Tier::Semantic => 2,
            Tier::Procedural => 3,
        };
        by_tier[k].push_back(i);
    }
    let pattern = [1, 0, 2, 1, 2, 3];
    let mut out = Vec::with_capacity(TEMPLATES.len());
    while out.len() < TEMPLATES.len() {
        for &k in &pattern {
            if let Some(i) = by_tier[k].pop_front() {
                out.push(i);
            }
        }
    }
    out
}

/// Cumulative Zipf–Mandelbrot weights `(rank + 1 + q)^-s`, normalised to end at 1.
fn cdf(len: usize, q: f64, s: f64) -> Vec<f64> {
    let w: Vec<f64> = (0..len).map(|k| (k as f64 + 1.0 + q).powf(-s)).collect();
    let total: f64 = w.iter().sum();
    let mut acc = 0.0;
    w.iter()
        .map(|x| {
            acc += x / total;
            acc
        })
        .collect()
}

fn pick_cdf(cdf: &[f64], r: f64) -> usize {
    cdf.partition_point(|&c| c <= r).min(cdf.len() - 1)
}

/// The template text of a cluster (for reports).
pub fn cluster_template(cluster: usize) -> &'static str {
    let ranked = ranked();
    if cluster < NOTE_CLUSTERS {
        TEMPLATES[ranked[cluster]].text
    } else {
        DIALOGUE[cluster - NOTE_CLUSTERS]
    }
}

// ---------------------------------------------------------------------------------------------
// Items.

/// One generated memory with its workload facts.
#[derive(Debug, Clone, PartialEq)]
pub struct RealisticItem {
    pub index: usize,
    /// The template it was filled from: `0..NOTE_CLUSTERS` notes by popularity rank (0 the
    /// largest cluster), then the dialogue templates.
    pub cluster: usize,
    pub dialogue: bool,
    /// A near-exact paraphrase of this earlier item.
    pub paraphrase_of: Option<usize>,
    pub content: String,
    pub tier: Tier,
    pub tags: Vec<String>,
    pub importance: f64,
    pub pinned: bool,
    /// Created this many days (fractional) before `now`.
    pub age_days: f64,
    /// Last accessed this many days before `now` (at most `age_days`).
    pub accessed_days: Option<f64>,
    pub view_count: i64,
    pub cite_count: i64,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub task_goal: Option<String>,
    pub steps: Option<Vec<String>>,
    pub workflow_name: Option<String>,
}

impl RealisticItem {
    pub fn id(&self) -> String {
        memory_id(self.index)
    }

    pub fn created_at(&self, now: Instant) -> Instant {
        time::add_days(now, -self.age_days)
    }

    pub fn last_accessed(&self, now: Instant) -> Option<Instant> {
        self.accessed_days.map(|d| time::add_days(now, -d))
    }

    fn steps_json(&self) -> Option<serde_json::Value> {
        self.steps.as_ref().map(|s| serde_json::Value::from(s.clone()))
    }

    /// The full row (what the bulk-loaded database holds).
    pub fn to_memory(&self, now: Instant) -> Memory {
        Memory {
            id: self.id(),
            tier: self.tier,
            content: self.content.clone(),
            importance: self.importance,
            privacy_scope: "private".into(),
            created_at: time::format(self.created_at(now)),
            last_accessed: self.last_accessed(now).map(time::format),
            pinned: self.pinned,
            tags: self.tags.clone(),
            source: None,
            view_count: self.view_count,
            cite_count: self.cite_count,
            edit_count: 0,
            task_goal: self.task_goal.clone(),
            steps: self.steps_json(),
            reflection_notes: None,
            workflow_name: self.workflow_name.clone(),
            skill_name: None,
            trigger_conditions: None,
            version: 1,
            owner_id: None,
            session_id: self.session_id.clone(),
            project_id: self.project_id.clone(),
            is_deleted: false,
            deleted_at: None,
        }
    }

    /// What an agent would pass to `remember` (access, views and cites are later usage).
    pub fn to_new_memory(&self, now: Instant) -> lethe_engine::lifecycle::NewMemory {
        let mut m = lethe_engine::lifecycle::NewMemory::new(self.tier, self.content.clone());
        m.importance = Some(self.importance);
        m.tags = self.tags.clone();
        m.pinned = self.pinned;
        m.session_id = self.session_id.clone();
        m.project_id = self.project_id.clone();
        m.created_at = Some(self.created_at(now));
        m.procedure.task_goal = self.task_goal.clone();
        m.procedure.steps = self.steps_json();
        m.procedure.workflow_name = self.workflow_name.clone();
        m
    }
}

/// A working session or a chat: a run of 10–60 memories sharing an id and a start.
#[derive(Debug, Clone)]
struct Run {
    id: String,
    left: usize,
    pos: usize,
    start_age: f64,
    project: Option<&'static str>,
    /// The service a working session is about, or the chat's two speakers.
    names: [&'static str; 2],
}

/// Minutes between two memories of a working session, and between two chat turns.
const WORK_STEP_DAYS: f64 = 3.0 / 1440.0;
const CHAT_STEP_DAYS: f64 = 1.0 / 1440.0;

fn age(g: &mut Lcg) -> f64 {
    let u = g.rnd();
    365.0 * u * u
}

/// Streams the N memories of the realistic workload.
#[derive(Debug, Clone)]
pub struct RealisticGenerator {
    n: usize,
    next: usize,
    g: Lcg,
    ranked: Vec<usize>,
    note_cdf: Vec<f64>,
    dialogue_cdf: Vec<f64>,
    session: Option<Run>,
    chat: Option<Run>,
    runs: usize,
    recent: VecDeque<RealisticItem>,
}

impl RealisticGenerator {
    pub fn new(n: usize) -> Self {
        RealisticGenerator {
            n,
            next: 0,
            g: Lcg::new(SEED),
            ranked: ranked(),
            note_cdf: cdf(TEMPLATES.len(), 20.0, 4.0),
            dialogue_cdf: cdf(DIALOGUE.len(), 3.0, 1.5),
            session: None,
            chat: None,
            runs: 0,
            recent: VecDeque::with_capacity(RECENT),
        }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// `count` realistic agent queries (their own seed: the same for every N).
    pub fn queries(&self, count: usize) -> Vec<String> {
        queries(count)
    }

    fn new_run(&mut self, prefix: &str, names: [&'static str; 2], project: Option<&'static str>) -> Run {
        self.runs += 1;
        let left = 10 + self.g.index(51);
        Run { id: format!("{prefix}_{:06}", self.runs), left, pos: 0, start_age: age(&mut self.g), project, names }
    }

    /// Takes the next place in a working session (`chat = false`) or chat, opening a new one
    /// when the current one is used up. Returns (run, position).
    fn take(&mut self, chat: bool) -> (Run, usize) {
        let open = if chat { self.chat.as_ref() } else { self.session.as_ref() };
        if open.is_none_or(|r| r.left == 0) {
            let run = if chat {
                let a = self.g.index(SPEAKERS.len());
                let b = (a + 1 + self.g.index(SPEAKERS.len() - 1)) % SPEAKERS.len();
                self.new_run("chat", [SPEAKERS[a], SPEAKERS[b]], None)
            } else {
                let svc = self.g.pick(&SERVICES);
                let project = self.g.pick(&PROJECTS);
                self.new_run("ses", [svc, svc], Some(project))
            };
            if chat {
                self.chat = Some(run);
            } else {
                self.session = Some(run);
            }
        }
        let r = if chat { self.chat.as_mut() } else { self.session.as_mut() }.expect("opened above");
        let pos = r.pos;
        r.pos += 1;
        r.left -= 1;
        (r.clone(), pos)
    }

    /// Importance, pin, access, views and cites: the usage facts every memory draws.
    fn usage(&mut self, it: &mut RealisticItem) {
        let g = &mut self.g;
        let (lo, span) = match (it.dialogue, it.tier) {
            (true, _) => (0.1, 0.4),
            (_, Tier::Working) => (0.2, 0.3),
            (_, Tier::Episodic) => (0.3, 0.4),
            (_, Tier::Semantic) => (0.5, 0.4),
            (_, Tier::Procedural) => (0.6, 0.35),
        };
        it.importance = ((lo + span * g.rnd()) * 100.0).round() / 100.0;
        it.pinned = matches!(it.tier, Tier::Semantic | Tier::Procedural) && !it.dialogue && g.rnd() < 0.045;
        if g.rnd() < 0.3 {
            let u = g.rnd();
            it.accessed_days = Some(it.age_days * u * u);
            let v = g.rnd();
            it.view_count = 1 + (30.0 * v * v * v).floor() as i64;
            it.cite_count = if g.rnd() < 0.35 { 1 + (8.0 * g.rnd().powi(2)).floor() as i64 } else { 0 };
        }
    }

    fn note(&mut self, i: usize) -> RealisticItem {
        let rank = pick_cdf(&self.note_cdf, self.g.rnd());
        let t = &TEMPLATES[self.ranked[rank]];
        let mut fill = Fill::default();
        let (mut session_id, mut project_id) = (None, None);
        let age_days = if t.tier == Tier::Working {
            let (run, pos) = self.take(false);
            fill.set("svc", run.names[0]);
            session_id = Some(run.id);
            project_id = run.project.map(String::from);
            (run.start_age - pos as f64 * WORK_STEP_DAYS).max(0.0)
        } else {
            if self.g.rnd() < 0.92 {
                project_id = Some(self.g.pick(&PROJECTS).to_string());
            }
            age(&mut self.g)
        };
        let g = &mut self.g;
        let head = fill.render(t.text, g);
        let (content, task_goal, steps, workflow_name) = if t.tier == Tier::Procedural {
            let steps: Vec<String> = t.steps.iter().map(|s| fill.render(s, g)).collect();
            let numbered: Vec<String> = steps.iter().enumerate().map(|(k, s)| format!("{}. {s}", k + 1)).collect();
            let content = format!("{head}: {}.", numbered.join("; "));
            (content, Some(fill.render(t.goal, g)), Some(steps), Some(t.workflow.to_string()))
        } else {
            (head, None, None, None)
        };
        let mut tags: Vec<String> = t.tags.iter().map(|s| s.to_string()).collect();
        if let Some(svc) = fill.get("svc") {
            tags.push(svc.to_string());
        }
        RealisticItem {
            index: i,
            cluster: rank,
            dialogue: false,
            paraphrase_of: None,
            content,
            tier: t.tier,
            tags,
            importance: 0.0,
            pinned: false,
            age_days,
            accessed_days: None,
            view_count: 0,
            cite_count: 0,
            session_id,
            project_id,
            task_goal,
            steps,
            workflow_name,
        }
    }

    fn dialogue(&mut self, i: usize) -> RealisticItem {
        let k = pick_cdf(&self.dialogue_cdf, self.g.rnd());
        let (run, pos) = self.take(true);
        let speaker = run.names[pos % 2];
        let mut fill = Fill::default();
        fill.set("speaker", speaker);
        let content = fill.render(DIALOGUE[k], &mut self.g);
        RealisticItem {
            index: i,
            cluster: NOTE_CLUSTERS + k,
            dialogue: true,
            paraphrase_of: None,
            content,
            tier: Tier::Episodic,
            tags: vec!["conversation".into(), speaker.to_lowercase()],
            importance: 0.0,
            pinned: false,
            age_days: (run.start_age - pos as f64 * CHAT_STEP_DAYS).max(0.0),
            accessed_days: None,
            view_count: 0,
            cite_count: 0,
            session_id: Some(run.id),
            project_id: None,
            task_goal: None,
            steps: None,
            workflow_name: None,
        }
    }

    /// The same memory remembered again a little later, nearly word for word.
    fn paraphrase(&mut self, i: usize) -> RealisticItem {
        let k = self.g.index(self.recent.len());
        let mut it = self.recent[k].clone();
        it.paraphrase_of = Some(it.index);
        it.index = i;
        it.content = match self.g.index(6) {
            0 => it.content,
            1 => it.content.to_lowercase(),
            2 => format!("Note: {}", it.content),
            3 => format!("Reminder: {}", it.content),
            4 => format!("{} (confirmed)", it.content.trim_end_matches(['.', '!', '?'])),
            _ => format!("Again: {}", it.content),
        };
        it.age_days = (it.age_days - 3.0 * self.g.rnd()).max(0.0);
        it.accessed_days = None;
        it.view_count = 0;
        it.cite_count = 0;
        it
    }
}

impl Iterator for RealisticGenerator {
    type Item = RealisticItem;

    fn next(&mut self) -> Option<RealisticItem> {
        if self.next >= self.n {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let r = self.g.rnd();
        let mut it = if r < DIALOGUE_SHARE {
            self.dialogue(i)
        } else if r < DIALOGUE_SHARE + PARAPHRASE_SHARE && !self.recent.is_empty() {
            self.paraphrase(i)
        } else {
            self.note(i)
        };
        self.usage(&mut it);
        if it.paraphrase_of.is_none() {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(it.clone());
        }
        Some(it)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.n - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for RealisticGenerator {}

/// Query templates: what an agent asks its memory before a task.
const QUERIES: [&str; 24] = [
    "how do I roll back a failed deploy of {svc}",
    "rate limit {svc} API",
    "why did the {svc} deploy fail",
    "who owns {svc}",
    "{svc} cache TTL",
    "how to rotate {env}",
    "which {lib} version does {svc} use",
    "incident {svc} {region}",
    "PR {pr} review",
    "what port does {svc} listen on",
    "{svc} test failures",
    "how to restore {table} from backup",
    "timeout between {svc} and {svc2}",
    "what did {speaker} say about {hobby}",
    "{speaker} trip to {city}",
    "feature flag for {feature}",
    "{svc} migration progress",
    "how do I set up {svc} locally",
    "SLO for {svc}",
    "upgrade {lib} in {svc}",
    "{svc} crash loop",
    "where is {env} stored",
    "slow queries on {table}",
    "{svc} rollback v{ver}",
];

/// `count` realistic agent queries, deterministic (seed [`QUERY_SEED`]).
pub fn queries(count: usize) -> Vec<String> {
    let mut g = Lcg::new(QUERY_SEED);
    (0..count)
        .map(|_| {
            let t = QUERIES[g.index(QUERIES.len())];
            Fill::default().render(t, &mut g)
        })
        .collect()
}

/// Cluster sizes of the first `n` memories (indexed by cluster).
pub fn cluster_sizes(n: usize) -> Vec<usize> {
    let mut sizes = vec![0; CLUSTERS];
    for it in RealisticGenerator::new(n) {
        sizes[it.cluster] += 1;
    }
    sizes
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn words(s: &str) -> HashSet<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    }

    #[test]
    fn deterministic() {
        let a: Vec<_> = RealisticGenerator::new(3_000).collect();
        let b: Vec<_> = RealisticGenerator::new(3_000).collect();
        assert_eq!(a, b);
        // A prefix does not depend on N.
        let c: Vec<_> = RealisticGenerator::new(500).collect();
        assert_eq!(&a[..500], &c[..]);
        assert_eq!(queries(50), RealisticGenerator::new(10).queries(50));
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        assert_eq!(a[7].to_memory(now), b[7].to_memory(now));
    }

    #[test]
    fn tiers_dialogue_and_usage_shares() {
        let items: Vec<_> = RealisticGenerator::new(20_000).collect();
        for tier in [Tier::Working, Tier::Episodic, Tier::Semantic, Tier::Procedural] {
            let k = items.iter().filter(|i| i.tier == tier).count();
            assert!(k > 1_000, "{tier:?}: {k} of 20,000");
        }
        let share = |f: &dyn Fn(&RealisticItem) -> bool| items.iter().filter(|i| f(i)).count() as f64 / 20_000.0;
        let dialogue = share(&|i| i.dialogue);
        assert!((0.10..=0.20).contains(&dialogue), "dialogue share {dialogue}");
        let accessed = share(&|i| i.accessed_days.is_some());
        assert!((0.25..=0.35).contains(&accessed), "accessed share {accessed}");
        let pinned = share(&|i| i.pinned);
        assert!((0.01..=0.03).contains(&pinned), "pinned share {pinned}");
        assert!(items.iter().filter(|i| i.pinned).all(|i| matches!(i.tier, Tier::Semantic | Tier::Procedural)));
        let projects = share(&|i| i.project_id.is_some());
        assert!(projects > 0.7, "project share {projects}");
        let paraphrases = share(&|i| i.paraphrase_of.is_some());
        assert!((0.02..=0.04).contains(&paraphrases), "paraphrase share {paraphrases}");
        assert!(items.iter().all(|i| (0.0..=365.0).contains(&i.age_days)));
        assert!(items.iter().all(|i| i.accessed_days.is_none_or(|d| d <= i.age_days)));
        let recent = share(&|i| i.age_days < 90.0);
        assert!(recent > 0.4, "recent ones more likely: {recent} under 90 days");
        assert!(items.iter().all(|i| (0.0..=1.0).contains(&i.importance)));
    }

    #[test]
    fn working_memories_come_in_sessions() {
        let mut sessions: std::collections::HashMap<String, usize> = Default::default();
        for it in RealisticGenerator::new(30_000).filter(|i| i.tier == Tier::Working) {
            *sessions.entry(it.session_id.clone().expect("working memories have a session")).or_default() += 1;
        }
        let mut sizes: Vec<usize> = sessions.values().copied().collect();
        sizes.sort();
        // All but the still-open last one hold 10–60 (paraphrases may add one or two).
        assert!(sizes.len() > 20);
        assert!(sizes[1..].iter().all(|&s| (10..=70).contains(&s)), "{sizes:?}");
    }

    #[test]
    fn clusters_are_heavy_tailed_at_100k() {
        let sizes = cluster_sizes(100_000);
        let max = *sizes.iter().max().unwrap();
        let min = *sizes.iter().min().unwrap();
        assert!(max >= 1_000, "largest cluster {max}");
        assert!(min <= 100, "smallest cluster {min}");
        assert!(min > 0, "every template is used");
    }

    /// Mean Jaccard word overlap of 200 pairs.
    fn overlap(pairs: impl Iterator<Item = (String, String)>) -> f64 {
        let mut sum = 0.0;
        let mut n = 0;
        for (a, b) in pairs.take(200) {
            let (a, b) = (words(&a), words(&b));
            sum += a.intersection(&b).count() as f64 / a.union(&b).count() as f64;
            n += 1;
        }
        sum / f64::from(n)
    }

    #[test]
    fn same_template_means_near_copies() {
        let items: Vec<_> = RealisticGenerator::new(20_000).collect();
        let mut by: Vec<Vec<&str>> = vec![Vec::new(); CLUSTERS];
        for it in items.iter().filter(|i| i.paraphrase_of.is_none()) {
            by[it.cluster].push(&it.content);
        }
        let mut within = Vec::new();
        for v in by.iter().filter(|v| v.len() >= 20) {
            let pairs = (0..).map(|k| (v[k % v.len()].to_string(), v[(k * 7 + 3) % v.len()].to_string()));
            within.push(overlap(pairs));
        }
        let mean = within.iter().sum::<f64>() / within.len() as f64;
        let worst = within.iter().copied().fold(1.0, f64::min);
        let random =
            overlap((0..).map(|k| (items[k].content.clone(), items[(k * 7919 + 13) % items.len()].content.clone())));
        assert!(mean > 0.5, "word overlap within a cluster {mean}");
        assert!(worst > 0.3, "least similar cluster {worst}");
        assert!(random < 0.15, "word overlap of random pairs {random}");
        assert!(within[0] > 0.4, "largest cluster {}", within[0]);
        // Near-copies, yet mostly not the same text.
        let distinct: HashSet<&str> = items.iter().map(|i| i.content.as_str()).collect();
        assert!(distinct.len() > items.len() * 8 / 10, "{} distinct of {}", distinct.len(), items.len());
        let vocab: HashSet<String> = items.iter().flat_map(|i| words(&i.content)).collect();
        assert!(vocab.len() < items.len() / 4, "{} distinct words", vocab.len());
    }

    #[test]
    fn contents_and_procedures_are_well_formed() {
        let now = time::parse("2026-06-01T00:00:00Z").unwrap();
        let items: Vec<_> = RealisticGenerator::new(20_000).collect();
        let mut seen = HashSet::new();
        for it in &items {
            assert!(!it.content.trim().is_empty());
            assert!(!it.content.contains('{') && !it.content.contains('}'), "{}", it.content);
            assert!(!it.tags.is_empty());
            seen.insert(it.cluster);
            if it.tier == Tier::Procedural {
                let steps = it.steps.as_ref().expect("procedural items have steps");
                assert!(!steps.is_empty() && steps.iter().all(|s| !s.is_empty() && !s.contains('{')));
                assert!(it.task_goal.as_deref().is_some_and(|g| !g.is_empty()));
                assert!(it.workflow_name.is_some());
                let nm = it.to_new_memory(now);
                nm.procedure.validate().unwrap();
            } else {
                assert!(it.steps.is_none() && it.task_goal.is_none());
            }
        }
        assert_eq!(seen.len(), CLUSTERS, "every template appears at 20k");
        let m = items[0].to_memory(now);
        assert_eq!(m.id, "mem_00000001-0000-4000-8000-000000000000");
        assert_ne!(m.id, super::super::memory_id(0));
        let dialogue = items.iter().find(|i| i.dialogue).unwrap();
        assert!(dialogue.content.split_once(": ").is_some_and(|(who, _)| SPEAKERS.contains(&who)));
        // Every template renders (no unknown slot) and queries are filled in.
        for q in queries(200) {
            assert!(!q.contains('{') && !q.is_empty(), "{q}");
        }
    }

    #[test]
    fn paraphrases_nearly_repeat_a_recent_memory() {
        let items: Vec<_> = RealisticGenerator::new(5_000).collect();
        let mut n = 0;
        for it in items.iter().filter(|i| i.paraphrase_of.is_some()) {
            let src = &items[it.paraphrase_of.unwrap()];
            assert!(it.index - src.index <= 200);
            assert_eq!((it.cluster, it.tier), (src.cluster, src.tier));
            let (a, b) = (words(&it.content), words(&src.content));
            assert!(a.is_superset(&b), "{:?} / {:?}", it.content, src.content);
            n += 1;
        }
        assert!(n > 50);
    }
}
