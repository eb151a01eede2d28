//! A deterministic, realistic demo data set: all four tiers, ages over a year, pinned team
//! rules, procedural workflows with reflection notes and several versions, near-duplicates,
//! and quarantined memories with reasons, so every view of the inspector shows something.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use crate::storage::db::Connection;
use serde::Serialize;

use crate::error::Result;
use crate::lifecycle::{self, NewMemory, ProcedureFields};
use crate::meta;
use crate::model::Tier;
use crate::procedural::{self, ProcedurePatch};
use crate::recall;
use crate::time::{self, Instant};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DemoCounts {
    pub stored: usize,
    pub pinned: usize,
    pub procedures: usize,
    pub reflection_notes: usize,
    pub quarantined: usize,
    pub skipped: usize,
    /// Recalls by the demo agents, in the recall log and the recall statistics.
    pub recalls: usize,
}

struct Lcg(u32);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        f64::from(self.0) / 4_294_967_296.0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[((self.next() * items.len() as f64) as usize).min(items.len() - 1)]
    }
}

const RULES: &[&str] = &[
    "Never commit secrets: API keys live in the vault and are injected at deploy time.",
    "All database migrations must be backwards compatible for one release.",
    "Production deploys happen Tuesday to Thursday, never on Fridays.",
    "Customer data never leaves the EU region.",
];

// Templates with slots, so the background memories read like a real team's and do not
// repeat (the intended near-duplicates are added separately below).
const SEMANTIC: &[&str] = &[
    "The {svc} service talks to {dep} through {via}, never directly.",
    "{svc} runs in {region} on {n} {inst} nodes.",
    "The {team} team owns {svc}; schema changes go through their review.",
    "Feature flags for {svc} are cached for {n} seconds.",
    "The user prefers {pref}.",
    "Rate limit on the {svc} API is {n}00 requests per minute per key.",
    "{svc} logs older than {n} days move to cold storage.",
    "The {svc} on-call rotation changes every {day} at 09:00.",
];

const EPISODIC: &[&str] = &[
    "Deploy of {svc} v2.{n} failed: {cause}.",
    "Investigated flaky test test_{area}_{n}; root cause was {cause}.",
    "The user asked to rename the '{area}' tab in the {svc} dashboard.",
    "Rolled back the {area} cache change after p95 latency rose by {n} ms.",
    "Reviewed PR {n}4 adding retry with backoff to {svc}.",
    "Helped debug a Docker volume permission error on the {svc} CI runner.",
    "The user reported stale {area} results after the {day} reindex.",
    "Disk usage on the {svc} build cache reached {n}0 percent.",
];

const WORKING: &[&str] = &[
    "Currently editing src/{area}/mod.rs in {svc}.",
    "Open question: should the {area} export be CSV or XLSX?",
    "Test run in progress for {svc}: {n}12 passed, {n} failed so far.",
    "The user is looking at the {area} settings page right now.",
    "Draft reply about {svc} is in the scratch buffer.",
];

const SVC: &[&str] =
    &["api", "billing", "search", "auth", "notifications", "payments-gateway", "scheduler", "mobile-bff"];
const DEP: &[&str] = &["Stripe", "Postgres", "Redis", "the events bus", "S3", "Elasticsearch"];
const VIA: &[&str] = &["the internal gateway", "a retrying client", "the outbox table", "gRPC"];
const REGION: &[&str] = &["eu-west-1", "eu-central-1", "us-east-1"];
const INST: &[&str] = &["t3.large", "m6i.xlarge", "c7g.large"];
const TEAM: &[&str] = &["data", "platform", "payments", "mobile"];
const PREF: &[&str] =
    &["concise answers with code first", "British spelling in docs", "small pull requests", "tests before refactors"];
const CAUSE: &[&str] = &[
    "a migration locked the orders table",
    "a shared Redis key",
    "an expired TLS certificate",
    "a missing env var",
    "a race in the job queue",
];
const AREA: &[&str] = &["invoices", "reports", "search", "checkout", "notifications", "profile"];
const DAY: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday"];

fn fill(template: &str, rng: &mut Lcg) -> String {
    let mut out = template.to_string();
    for (slot, list) in [
        ("{svc}", SVC),
        ("{dep}", DEP),
        ("{via}", VIA),
        ("{region}", REGION),
        ("{inst}", INST),
        ("{team}", TEAM),
        ("{pref}", PREF),
        ("{cause}", CAUSE),
        ("{area}", AREA),
        ("{day}", DAY),
    ] {
        while out.contains(slot) {
            let value: &str = rng.pick::<&str>(list);
            out = out.replacen(slot, value, 1);
        }
    }
    while out.contains("{n}") {
        let n = 2 + (rng.next() * 8.0) as u32;
        out = out.replacen("{n}", &n.to_string(), 1);
    }
    out
}

/// Loads the demo set into `conn` as of `now`.
pub fn load(conn: &mut Connection, seed: u32, count: usize, now: Instant) -> Result<DemoCounts> {
    let mut demo = Demo { conn, now, rng: Lcg(seed), c: DemoCounts::default() };
    demo.team_rules()?;
    demo.procedures()?;
    let ids = demo.background(count.max(40))?;
    demo.near_duplicates()?;
    demo.quarantine(&ids)?;
    let Demo { conn, mut c, .. } = demo;
    // Last: the agents recall what the set now holds.
    c.recalls = agents_recall(conn, now)?;
    Ok(c)
}

/// The demo set being written, one kind of memory after another.
struct Demo<'c> {
    conn: &'c mut Connection,
    now: Instant,
    rng: Lcg,
    c: DemoCounts,
}

impl Demo<'_> {
    fn days_ago(&self, d: f64) -> Instant {
        time::add_days(self.now, -d)
    }

    /// Remembers `m` at its own date, so its audit history is dated like it; its id when stored.
    fn store(&mut self, m: NewMemory) -> Result<Option<String>> {
        // The team rules are pinned, and a pin is the person's: the person wrote them. The rest
        // is written by two agents in turn, so that "who wrote what" has something to show.
        let actor = if m.pinned {
            "user"
        } else if self.c.stored.is_multiple_of(2) {
            "agent:claude-code"
        } else {
            "agent:cursor"
        };
        match lifecycle::remember(self.conn, &m, actor, m.created_at.unwrap_or(self.now))? {
            lifecycle::RememberOutcome::Stored { id, .. } => {
                self.c.stored += 1;
                Ok(Some(id))
            }
            _ => {
                self.c.skipped += 1;
                Ok(None)
            }
        }
    }

    /// The pinned team rules.
    fn team_rules(&mut self) -> Result<()> {
        for (i, r) in RULES.iter().enumerate() {
            let mut m = NewMemory::new(Tier::Semantic, *r);
            m.pinned = true;
            m.importance = Some(0.9);
            m.tags = vec!["team-rule".into()];
            m.created_at = Some(self.days_ago(200.0 + 30.0 * i as f64));
            m.project_id = Some("platform".into());
            if self.store(m)?.is_some() {
                self.c.pinned += 1;
            }
        }
        Ok(())
    }

    /// Procedures with versions and reflection notes.
    fn procedures(&mut self) -> Result<()> {
        let procs: &[(&str, &str, &[&str], &str)] = &[
            (
                "deploy-rollback",
                "Roll back a failed deploy",
                &[
                    "Freeze the pipeline",
                    "kubectl rollout undo deployment/api",
                    "Check /health on every pod",
                    "Post in #incidents",
                    "Open a postmortem ticket",
                ],
                "deploy fails or error rate > 2%",
            ),
            (
                "docker-volume-permissions",
                "Fix Docker volume permission errors",
                &["Find the container user's uid", "chown the volume to that uid", "Restart the container"],
                "EACCES on a mounted volume",
            ),
            (
                "release-notes",
                "Write release notes",
                &["Collect merged PRs since the last tag", "Group by feature", "Ask the PM to review"],
                "a release is tagged",
            ),
        ];
        for (n, (wf, goal, steps, trig)) in procs.iter().enumerate() {
            let mut m = NewMemory::new(Tier::Procedural, format!("{goal}: {}", steps.join("; ")));
            m.procedure = ProcedureFields {
                task_goal: Some((*goal).into()),
                steps: Some(serde_json::json!(steps)),
                trigger_conditions: Some(serde_json::json!({ "when": trig })),
                workflow_name: Some((*wf).into()),
                skill_name: Some(if n == 1 { "docker".into() } else { "operations".into() }),
            };
            m.importance = Some(0.7);
            let created_days_ago = 120.0 - 40.0 * n as f64;
            m.created_at = Some(self.days_ago(created_days_ago));
            let Some(id) = self.store(m)? else { continue };
            self.c.procedures += 1;
            if n == 0 {
                self.two_more_versions(&id, steps)?;
            }
            self.reflection_notes(&id, n, created_days_ago)?;
        }
        Ok(())
    }

    /// The first procedure's second version (by an agent) and third (by the person).
    fn two_more_versions(&mut self, id: &str, steps: &[&str]) -> Result<()> {
        let mut s: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
        s.insert(2, "Wait for the rollout to finish (kubectl rollout status)".into());
        let patch = ProcedurePatch {
            content: None,
            fields: ProcedureFields { steps: Some(serde_json::json!(s)), ..Default::default() },
        };
        procedural::update(self.conn, id, 1, &patch, "agent:claude-code", time::add_days(self.now, -60.0))?;
        s.push("Notify the customer success channel".into());
        let patch = ProcedurePatch {
            content: None,
            fields: ProcedureFields { steps: Some(serde_json::json!(s)), ..Default::default() },
        };
        procedural::update(self.conn, id, 2, &patch, "user", time::add_days(self.now, -20.0))?;
        Ok(())
    }

    /// Three reflection notes on the first procedure, two on the others.
    fn reflection_notes(&mut self, id: &str, n: usize, created_days_ago: f64) -> Result<()> {
        let notes = [
            serde_json::json!({"failure_type": "tool_error", "failure_description": "kubectl timed out against the eu cluster", "lessons_learned": "Set --request-timeout=60s", "suggested_improvements": "Add the timeout to step 2"}),
            serde_json::json!({"failure_type": "user_feedback", "failure_description": "The user said the incident post came too late", "lessons_learned": "Post before rolling back, not after"}),
            serde_json::json!({"failure_type": "metric_failure", "failure_description": "Rollback took 14 minutes, target is 5"}),
        ];
        for (k, note) in notes.iter().enumerate().take(3 - n.min(2)) {
            procedural::reflect(
                self.conn,
                id,
                note,
                None,
                if k % 2 == 0 { "agent:claude-code" } else { "agent:cursor" },
                // After the procedure's first version: 10, 20, 30 days after it was written.
                self.days_ago(created_days_ago - 10.0 * (k as f64 + 1.0)),
            )?;
            self.c.reflection_notes += 1;
        }
        Ok(())
    }

    /// `total` background memories spread over a year; the ids of those stored.
    fn background(&mut self, total: usize) -> Result<Vec<String>> {
        let sessions = ["sess-a1", "sess-b2", "sess-c3"];
        let projects = ["platform", "billing", "mobile"];
        let now = self.now;
        let days_ago = |d: f64| time::add_days(now, -d);
        let mut ids = Vec::new();
        for _ in 0..total {
            let rng = &mut self.rng;
            let tier = *rng.pick(&[Tier::Episodic, Tier::Episodic, Tier::Semantic, Tier::Working, Tier::Semantic]);
            let template = match tier {
                Tier::Semantic => *rng.pick(SEMANTIC),
                Tier::Working => *rng.pick(WORKING),
                _ => *rng.pick(EPISODIC),
            };
            let content = fill(template, rng);
            let age = match tier {
                Tier::Working => rng.next() * 4.0,
                _ => rng.next() * 365.0,
            };
            let mut m = NewMemory::new(tier, content);
            m.importance = Some((rng.next() * 100.0).round() / 100.0);
            m.created_at = Some(days_ago(age));
            m.session_id = Some(rng.pick(&sessions).to_string());
            m.project_id = Some(rng.pick(&projects).to_string());
            m.tags = vec![tier.to_string()];
            if rng.next() < 0.15 {
                m.source = Some("tool:bash".into());
            }
            if let Some(id) = self.store(m)? {
                if self.rng.next() < 0.3 {
                    let when = days_ago(age * self.rng.next());
                    lifecycle::cite(self.conn, &id, "agent:claude-code", when)?;
                }
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// Near-duplicates of the team rules.
    fn near_duplicates(&mut self) -> Result<()> {
        for (k, text) in [
            "Never commit secrets: API keys live in the vault and get injected at deploy time.",
            "All database migrations must stay backwards compatible for one release.",
            "Production deploys happen Tuesday to Thursday and never on Fridays.",
        ]
        .iter()
        .enumerate()
        {
            let mut m = NewMemory::new(Tier::Semantic, *text);
            m.importance = Some(0.2);
            m.created_at = Some(self.days_ago(300.0 - 20.0 * k as f64));
            self.store(m)?;
        }
        Ok(())
    }

    /// A few quarantined memories with reasons.
    fn quarantine(&mut self, ids: &[String]) -> Result<()> {
        for (k, id) in ids.iter().take(4).enumerate() {
            let reason = [
                "wrong: the user corrected this",
                "outdated after the migration",
                "duplicate of a team rule",
                "contains a customer name",
            ][k];
            if lifecycle::soft_delete(self.conn, id, Some(reason), "user", time::add_days(self.now, -(k as f64 * 6.0)))
                .is_ok()
            {
                self.c.quarantined += 1;
            }
        }
        Ok(())
    }
}

/// The demo agents' recalls over the last two weeks: what each asked, in which context, and
/// what came back, logged and counted as a CLI recall logs and counts it — so that the Recall
/// log, a memory's recall history and the health lists have something to show.
pub fn agents_recall(conn: &mut Connection, now: Instant) -> Result<usize> {
    // Who asked, what, in which project and workflow, how many days ago.
    type Asked<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, f64);
    let asked: &[Asked<'_>] = &[
        ("agent:claude-code", "roll back a failed deploy", Some("platform"), Some("deploy-rollback"), 13.0),
        ("agent:cursor", "docker volume permission denied", Some("platform"), None, 11.0),
        ("agent:claude-code", "where do the API keys live", Some("platform"), None, 9.0),
        ("agent:cursor", "database migration rules", Some("billing"), None, 7.5),
        ("agent:claude-code", "can we deploy on friday", Some("platform"), None, 5.0),
        ("agent:cursor", "how to write the release notes", Some("mobile"), Some("release-notes"), 3.0),
        ("agent:claude-code", "failing tests in search", Some("platform"), None, 1.5),
        ("agent:cursor", "kubectl rollout undo timed out", Some("platform"), Some("deploy-rollback"), 0.5),
    ];
    for (actor, text, project, workflow, days_ago) in asked {
        let at = time::add_days(now, -days_ago);
        let q = recall::RecallQuery {
            text: (*text).into(),
            limit: 5,
            project: project.map(Into::into),
            workflow: workflow.map(Into::into),
            ..Default::default()
        };
        let answer = recall::answer(conn, &q, at)?;
        let stamp = time::format(at);
        let deltas = meta::Delta::of_hits(answer.results.iter().map(|h| (h.id.as_str(), h.score)), &stamp);
        let entry = crate::recall_log::NewEntry::of(actor, &stamp, &q, &answer.results);
        meta::write_batch(conn, &deltas, &[entry])?;
    }
    Ok(asked.len())
}
