//! The team store against a role that writes raw SQL with its own password (an agent's MCP
//! configuration holds that password, so whatever the role may do in SQL the agent may do
//! with psql). Roles of team alpha (an agent, a curator, a reader, made by `lethe admin
//! add-*`) connect with the `postgres` crate and try the attacks the database must hold
//! against: shadow catalogs in pg_temp, direct writes on every table, forged actors and
//! dates, a quarantine dated years back before the curator's forget, identity squatting,
//! table, row and advisory locks held open while another team works, NOTIFY and LISTEN,
//! SET ROLE, and Lethe's own functions called with another team's ids, NULLs and 1 MB
//! strings. Each attack is refused or harmless, and every row of team beta is byte-identical
//! afterwards (md5 of each table's beta rows, read as the owner).
//!
//! Needs a server: `make test` starts one (tests/pg/with-server.sh) and sets
//! `LETHE_TEST_POSTGRES`; without it these tests say so and do nothing.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// What a Lethe role may still do or see, shown harmless by the tests named.
const HARMLESS: &[&str] = &[
    "pg_stat_user_tables and pg_class show row counts summed over every team: numbers that name no team and carry no content; column statistics (pg_stats) and other roles' statements (pg_stat_activity) are hidden (statistics_show_counts_never_another_teams_content_or_queries)",
    "role names are readable in pg_roles (PostgreSQL's catalog is every role's): which team a role is in is not (lethe_team_member is refused)",
    "a session may lower its own idle_in_transaction_session_timeout and statement_timeout: its locks then stop its own team only (locks_held_open_by_one_team_do_not_stop_another lowers both first)",
    "an agent writes its own team's rows only through Lethe's functions (validated, dated by the server, journalled or audited under its role); the rows Lethe derives from a memory are checked for what the server can check without the engine's model and formulas (the memory is the team's, sizes, a stored signature or a vector of the same model never rewritten, statistics only moving forward), so an agent can still store a neighbour list of its own team's memory whose entries it chose, or replace a vector by another model's: only its own team's ranking and duplicate checks move (raw_writes_of_a_teams_own_rows_name_the_role_that_made_them; records_are_written_only_through_functions_that_hold_every_rule)",
    "a remember, pin, importance, cite, edit or restore called by hand writes its action row with the role as the actor and the server's time; remember's after state must describe the row (type, preview), archive's, unarchive's, a procedure's swap's and a working memory's task log are built from the rows by the server, the others' before and after states are the caller's (descriptive text only); supersede, keep-both, a session's end, settings and a hard delete write their own action or event from the rows; the actions of reflection notes, a session's summary, forget runs and their undo, and the team lead's redaction are written by the engine through lethe_action_record (the role, the server's time, a memory of its own team) with the engine's states (memories_and_actions_are_inserted_only_through_functions_that_hold_every_rule; memories_and_the_audit_change_only_through_functions_that_hold_every_rule)",
    "the team lead may call the batch's function (lethe_forget_chunk) itself and choose which of its team's memories it quarantines under `policy`, as its own `lethe forget` does: each event names the curator's role and the quarantine starts at the server's clock; agents may not call it (policy_events_and_actions_name_the_role_whose_session_wrote_them; a_quarantine_dated_back_by_raw_sql_is_not_purged_by_the_curators_forget)",
    "the team lead may erase the text of its team's audit rows (lethe_audit_erase, for a hard delete or a redacted secret): only to the erased form, never new text (memories_and_the_audit_change_only_through_functions_that_hold_every_rule)",
    "the team lead's hard delete (lethe_memory_erase) names `policy` as the actor of its event when it says the batch purges a memory in quarantine, as its own `lethe forget` does, and any writing role may write audit actions as `policy` through lethe_action_record: each names the role that wrote it (policy_events_and_actions_name_the_role_whose_session_wrote_them; records_are_written_only_through_functions_that_hold_every_rule)",
    "the team lead's push (lethe_push_rows, lethe_push_archive) brings a file's audit and records into its own team: every actor recorded as pushed:<original>, no date after the server's clock (records_are_written_only_through_functions_that_hold_every_rule)",
];

use super::{lethe, new_database, server};

fn ok(db: &str, args: &[&str]) -> Value {
    let (code, v) = lethe(db, args);
    assert_eq!(code, 0, "lethe {args:?}: {v}");
    v
}

fn with_role(url: &str, role: &str) -> String {
    url.replacen("postgres://postgres@", &format!("postgres://{role}:pw@"), 1)
}

fn add(db: &str, kind: &str, name: &str, team: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_lethe"))
        .args(["--db", db, "admin", kind, name, "--team", team])
        .env("LETHE_ROLE_PASSWORD", "pw")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

/// Every table that holds a team's rows.
const TEAM_TABLES: &[&str] = &[
    "memory_item",
    "memory_forgetting_event",
    "meta_memory_stats",
    "lethe_settings",
    "lethe_action",
    "lethe_change",
    "lethe_signature",
    "lethe_supersede",
    "lethe_archive",
    "lethe_procedure_version",
    "lethe_review",
    "lethe_vector",
    "lethe_neighbour",
    "lethe_centroid",
    "lethe_session_end",
    "lethe_task_log",
    "lethe_session_rule",
    "lethe_recall_log",
    "lethe_recall_log_hit",
    "lethe_dismissed_pair",
];

/// Every table of the store (the team's and the store's own).
const ALL_TABLES: &[&str] = &["lethe_schema", "lethe_meta", "lethe_team_member", "lethe_secret"];

/// The rows of `team` in every table, as the owner reads them: (table, rows, md5).
fn team_rows(owner: &str, team: &str) -> Vec<(String, i64, String)> {
    let mut c = client(owner);
    TEAM_TABLES
        .iter()
        .map(|t| {
            let r = c
                .query_one(
                    &format!(
                        "SELECT COUNT(*), md5(COALESCE(string_agg(t::TEXT, E'\\n' ORDER BY t::TEXT), '')) \
                         FROM {t} t WHERE team = $1"
                    ),
                    &[&team],
                )
                .unwrap();
            (t.to_string(), r.get(0), r.get(1))
        })
        .collect()
}

/// The store's own tables (schema, membership, secret), whole.
fn store_rows(owner: &str) -> Vec<(String, i64, String)> {
    let mut c = client(owner);
    ALL_TABLES
        .iter()
        .map(|t| {
            let r = c
                .query_one(
                    &format!(
                        "SELECT COUNT(*), md5(COALESCE(string_agg(t::TEXT, E'\\n' ORDER BY t::TEXT), '')) FROM {t} t"
                    ),
                    &[],
                )
                .unwrap();
            (t.to_string(), r.get(0), r.get(1))
        })
        .collect()
}

/// A statement a role must not be able to run: it fails (and the session is usable again).
fn refused(c: &mut postgres::Client, who: &str, sql: &str) {
    let r = c.batch_execute(sql);
    assert!(r.is_err(), "{who}: must be refused: {sql}");
    let _ = c.batch_execute("ROLLBACK");
}

/// Runs `sql`; it may succeed or fail (what matters is checked afterwards).
fn tried(c: &mut postgres::Client, sql: &str) -> bool {
    let r = c.batch_execute(sql).is_ok();
    let _ = c.batch_execute("ROLLBACK");
    r
}

/// The store: teams alpha and beta, each with an agent and a curator, alpha with a reader;
/// beta has memories, a quarantine, a pin, an archive, a recall log, a procedure version.
struct Store {
    owner: String,
    a_agent: String,
    a_curator: String,
    a_reader: String,
    b_agent: String,
    b_curator: String,
    names: [String; 5],
    beta_ids: Vec<String>,
    alpha_ids: Vec<String>,
}

fn store() -> Option<Store> {
    let server = server()?;
    let owner = new_database(&server);
    ok(&owner, &["admin", "setup"]);
    let s = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let names = [format!("a1_{s}"), format!("ac_{s}"), format!("ar_{s}"), format!("b1_{s}"), format!("bc_{s}")];
    add(&owner, "add-agent", &names[0], "alpha");
    add(&owner, "add-curator", &names[1], "alpha");
    add(&owner, "add-reader", &names[2], "alpha");
    add(&owner, "add-agent", &names[3], "beta");
    add(&owner, "add-curator", &names[4], "beta");
    let [a_agent, a_curator, a_reader, b_agent, b_curator] = names.clone().map(|n| with_role(&owner, &n));

    let mut beta_ids = Vec::new();
    for content in [
        "Beta's release train leaves on Thursdays at 14:00 UTC.",
        "Beta's on-call rotation changes every Monday.",
        "Beta's staging cluster drains at 02:00 UTC.",
    ] {
        beta_ids.push(
            ok(&b_agent, &["remember", "--type", "semantic", "--content", content])["id"].as_str().unwrap().to_string(),
        );
    }
    let v = ok(
        &b_agent,
        &[
            "remember",
            "--type",
            "procedural",
            "--content",
            "ship a beta release",
            "--steps",
            r#"["build","tag","push"]"#,
        ],
    );
    beta_ids.push(v["id"].as_str().unwrap().to_string());
    let v = ok(
        &b_agent,
        &[
            "remember",
            "--type",
            "episodic",
            "--source",
            "tool",
            "--content",
            "tool output: 4096 lines of beta's build log",
        ],
    );
    let archived = v["id"].as_str().unwrap().to_string();
    ok(&b_agent, &["archive", &archived, "--memo", "beta build log"]);
    beta_ids.push(archived);
    ok(&b_agent, &["delete", &beta_ids[2], "--reason", "stale"]);
    ok(&b_curator, &["pin", &beta_ids[0]]);
    ok(&b_agent, &["recall", "beta release train"]);

    let mut alpha_ids = Vec::new();
    for content in ["Alpha's launch codename is Bluefin.", "Alpha deploys from the main branch only."] {
        alpha_ids.push(
            ok(&a_agent, &["remember", "--type", "semantic", "--content", content])["id"].as_str().unwrap().to_string(),
        );
    }
    ok(&a_agent, &["recall", "alpha launch"]);
    Some(Store { owner, a_agent, a_curator, a_reader, b_agent, b_curator, names, beta_ids, alpha_ids })
}

#[test]
fn no_role_of_one_team_changes_another_teams_rows_with_raw_sql() {
    let Some(st) = store() else { return };
    let beta_before = team_rows(&st.owner, "beta");
    let store_before = store_rows(&st.owner);
    assert!(beta_before.iter().find(|t| t.0 == "memory_item").unwrap().1 >= 5);
    let beta_id = st.beta_ids[1].as_str();
    let beta_rowid: i64 =
        client(&st.owner).query_one("SELECT rowid FROM memory_item WHERE id = $1", &[&beta_id]).unwrap().get(0);
    // The forgetting batch's function, pointed at beta's memory (soft, review, leave).
    let chunk = |kind: &str, policy: &str| {
        format!(
            "SELECT lethe_forget_chunk('[{{\"n\":0,\"kind\":\"{kind}\",\"rowid\":{beta_rowid},\"id\":\"{beta_id}\",\
             \"reason\":\"r\",\"policy\":\"{policy}\",\"score\":0.1,\"in_band\":true,\
             \"ev\":\"fev_0190a5b4-0000-7000-8000-00000000000{}\"}}]', 30, 'run_0123456789abcdef0123456789abcdef', '2000-01-01T00:00:00.000Z')",
            kind.len()
        )
    };
    let big = "x".repeat(1 << 20);

    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator), ("reader", &st.a_reader)] {
        let mut c = client(url);
        // Shadow catalogs: no temporary (or any) table can be made.
        for t in ["pg_roles", "pg_class", "pg_namespace", "pg_database", "pg_auth_members"] {
            refused(&mut c, who, &format!("CREATE TEMP TABLE {t} (rolname name, rolsuper boolean, oid oid)"));
            refused(&mut c, who, &format!("CREATE TABLE public.{t} (rolname name, rolsuper boolean)"));
        }
        refused(&mut c, who, "CREATE TEMPORARY VIEW pg_roles AS SELECT 'x'::name AS rolname, true AS rolsuper");
        refused(
            &mut c,
            who,
            "CREATE FUNCTION public.pg_has_role(name, text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
        );
        refused(&mut c, who, "CREATE SCHEMA shadow");

        // Another team's rows: every table, every kind of write.
        for t in TEAM_TABLES {
            refused(&mut c, who, &format!("DELETE FROM {t}"));
            refused(&mut c, who, &format!("TRUNCATE {t}"));
            refused(&mut c, who, &format!("LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE"));
            refused(&mut c, who, &format!("LOCK TABLE {t} IN SHARE MODE"));
            refused(&mut c, who, &format!("ALTER TABLE {t} DISABLE ROW LEVEL SECURITY"));
            refused(
                &mut c,
                who,
                &format!("CREATE TRIGGER x BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION lethe_team()"),
            );
            // Writes that the grants admit land in the role's own team only (row-level security).
            tried(&mut c, &format!("UPDATE {t} SET team = 'beta'"));
            tried(&mut c, &format!("INSERT INTO {t} (team) VALUES ('beta')"));
        }
        for t in ALL_TABLES {
            refused(&mut c, who, &format!("DELETE FROM {t}"));
            refused(&mut c, who, &format!("INSERT INTO {t} SELECT * FROM {t}"));
        }
        refused(&mut c, who, "SELECT * FROM lethe_secret");
        refused(&mut c, who, "SELECT * FROM lethe_team_member");
        refused(
            &mut c,
            who,
            &format!(
                "UPDATE memory_item SET content = 'overwritten' WHERE id = '{beta_id}'; \
            SELECT 1/(SELECT COUNT(*) FROM memory_item WHERE id = '{beta_id}')::int"
            ),
        );
        refused(
            &mut c,
            who,
            &format!(
                "INSERT INTO memory_item (id, type, content, created_at, team) \
                 VALUES ('planted_{who}', 'semantic', 'planted', '2026-12-01T00:00:00.000Z', 'beta')"
            ),
        );

        // Identity squatting: the sequences are nobody's, explicit keys are replaced.
        for seq in
            ["lethe_action_id_seq", "lethe_change_seq_seq", "lethe_archive_archive_no_seq", "lethe_recall_log_id_seq"]
        {
            refused(&mut c, who, &format!("SELECT nextval('{seq}')"));
            refused(&mut c, who, &format!("SELECT setval('{seq}', 1000000000)"));
        }
        refused(
            &mut c,
            who,
            "INSERT INTO lethe_change (seq, memory_id, kind) OVERRIDING SYSTEM VALUE VALUES (1000000, 'x', 'insert')",
        );
        tried(
            &mut c,
            "INSERT INTO lethe_action (id, memory_id, action, actor, created_at) OVERRIDING SYSTEM VALUE \
             SELECT g, NULL, 'note', 'user', '2000-01-01T00:00:00.000Z' FROM generate_series(1, 200) g",
        );
        tried(
            &mut c,
            "INSERT INTO lethe_recall_log (id, actor, at, query, context_json, results_json) OVERRIDING SYSTEM VALUE \
             SELECT g, 'user', '2000-01-01T00:00:00.000Z', 'q', '{}', '[]' FROM generate_series(1, 200) g",
        );
        tried(
            &mut c,
            "INSERT INTO lethe_archive (archive_no, memory_id, memo, original, sha256, bytes, actor, archived_at) \
             OVERRIDING SYSTEM VALUE SELECT g, 'x', 'm', '\\x00', 'h', 1, 'user', '2000-01-01T00:00:00.000Z' \
             FROM generate_series(1, 200) g",
        );

        // SET ROLE to a stronger group or another team's role: refused.
        if who != "curator" {
            refused(&mut c, who, "SET ROLE lethe_curator");
        }
        refused(&mut c, who, &format!("SET ROLE \"{}\"", st.names[4]));
        refused(&mut c, who, &format!("SET SESSION AUTHORIZATION \"{}\"", st.names[4]));
        refused(&mut c, who, "SET ROLE postgres");

        // Lethe's functions with another team's ids, NULLs and 1 MB strings.
        let _ = tried(&mut c, &format!("SELECT lethe_hard_delete_rows('{beta_id}')"));
        refused(&mut c, who, &format!("SELECT lethe_journal('{beta_id}', 'update')"));
        refused(&mut c, who, "SELECT lethe_journal(NULL, NULL)");
        refused(&mut c, who, &format!("SELECT lethe_journal('{big}', 'update')"));
        refused(&mut c, who, &format!("SELECT lethe_journal('{}', '{big}')", st.alpha_ids[0]));
        let _ = tried(&mut c, &format!("SELECT lethe_review_leave(ARRAY['{beta_id}', NULL, '{big}'], false)"));
        let _ = tried(&mut c, "SELECT lethe_review_leave(NULL, NULL)");
        let _ = tried(&mut c, "SELECT lethe_recall_log_prune(9223372036854775807)");
        let _ = tried(&mut c, "SELECT lethe_hard_delete_rows(NULL)");
        for (kind, policy) in [("soft", "forget-score"), ("review", "review-band"), ("leave", "")] {
            if who == "reader" {
                refused(&mut c, who, &chunk(kind, policy));
            } else {
                let _ = tried(&mut c, &chunk(kind, policy));
            }
        }
        refused(&mut c, who, "SELECT lethe_forget_chunk(NULL, NULL, NULL, NULL)");
        refused(&mut c, who, "SELECT lethe_forget_chunk('[{\"n\":0}]', 30, 'run_0123456789abcdef0123456789abcdef', '2000-01-01T00:00:00.000Z')");
        refused(&mut c, who, "SELECT lethe_forget_chunk('[]', -1, 'run_0123456789abcdef0123456789abcdef', NULL)");
        refused(&mut c, who, &format!("SELECT lethe_forget_chunk('[]', 30, '{big}', NULL)"));
        refused(
            &mut c,
            who,
            &format!("SELECT lethe_forget_chunk('{big}', 30, 'run_0123456789abcdef0123456789abcdef', '2000-01-01T00:00:00.000Z')"),
        );
        refused(&mut c, who, "SELECT lethe_team_channel('beta')");
        refused(&mut c, who, "SELECT lethe_now()");
        assert_ne!(
            c.query_one("SELECT lethe_team_key('push')", &[]).unwrap().get::<_, i64>(0),
            client(&st.b_curator).query_one("SELECT lethe_team_key('push')", &[]).unwrap().get::<_, i64>(0),
            "{who}: each team has its own lock key"
        );
    }

    // The readers of beta see beta as it was; beta still works.
    assert_eq!(team_rows(&st.owner, "beta"), beta_before, "every row of team beta is as it was");
    assert_eq!(store_rows(&st.owner), store_before, "the store's own tables are as they were");
    let v =
        ok(&st.b_agent, &["remember", "--type", "semantic", "--content", "Beta still writes after alpha's attempts."]);
    assert!(v["id"].is_string(), "{v}");
    let v = ok(&st.b_agent, &["recall", "beta release train"]);
    assert!(v.to_string().contains(&st.beta_ids[0]), "{v}");
    for what in HARMLESS {
        println!("harmless: {what}");
    }
}

#[test]
fn forged_actors_pins_and_hard_events_are_refused_or_rewritten_to_the_role() {
    let Some(st) = store() else { return };
    let (agent, curator) = (&st.names[0], &st.names[1]);
    let target = st.alpha_ids[0].as_str();
    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator)] {
        let mut c = client(url);
        // Whatever search path the session sets, the catalog comes first in Lethe's functions.
        c.batch_execute("SET search_path = pg_temp, public").unwrap();
        // No direct insert of an audit row: the server's function names the role, dates it.
        assert!(c
            .batch_execute(
                "INSERT INTO lethe_action (memory_id, action, actor, created_at) \
                 VALUES (NULL, 'note', 'user:cb', '2000-01-01T00:00:00.000Z')",
            )
            .is_err());
        c.batch_execute(
            "SELECT lethe_action_record(NULL, 'note', 'user:cb', NULL, '{}', '2000-01-01T00:00:00.000Z'); \
             SELECT lethe_action_record(NULL, 'note', 'pushed:user:cb', NULL, NULL, '9999-01-01T00:00:00.000Z')",
        )
        .unwrap();
        // Supersede links and the recall log: no direct insert; their functions name the role.
        refused(
            &mut c,
            who,
            &format!(
                "INSERT INTO lethe_supersede (old_id, new_id, actor, created_at) \
                 VALUES ('{target}', 'mem_{who}', 'agent:someone-else', '9999-01-01T00:00:00.000Z')"
            ),
        );
        c.batch_execute("SET search_path = pg_temp, public").unwrap();
        c.batch_execute(&format!(
            "SELECT lethe_supersede_link('{target}', '{}', 'agent:someone-else', NULL, '9999-01-01T00:00:00.000Z'); \
             SELECT lethe_recall_log_append('agent:someone-else', '9999-01-01T00:00:00.000Z', 'q', '{{}}', '[]')",
            st.alpha_ids[1]
        ))
        .unwrap();
        c.batch_execute("SET search_path = public").unwrap();
    }
    let mut agent_c = client(&st.a_agent);
    refused(
        &mut agent_c,
        "agent",
        "INSERT INTO memory_item (id, type, content, created_at, pinned) \
         VALUES ('mem_pinned_by_agent', 'semantic', 'pinned', '2026-12-01T00:00:00.000Z', 1)",
    );
    refused(&mut agent_c, "agent", &format!("UPDATE memory_item SET pinned = 1 WHERE id = '{target}'"));
    refused(&mut agent_c, "agent", &format!("UPDATE memory_item SET importance = 1 WHERE id = '{target}'"));
    refused(
        &mut agent_c,
        "agent",
        &format!(
            "INSERT INTO memory_forgetting_event (id, memory_id, action, created_at, metadata_json) \
             VALUES ('fev_forged', '{target}', 'hard', '2000-01-01T00:00:00.000Z', '{{\"actor\":\"user:cb\"}}')"
        ),
    );
    refused(&mut agent_c, "agent", &format!("UPDATE memory_item SET version = 0 WHERE id = '{target}'"));
    refused(&mut agent_c, "agent", "UPDATE lethe_archive SET original = '\\x00'");
    refused(&mut agent_c, "agent", "UPDATE lethe_action SET actor = 'user'");
    refused(&mut agent_c, "agent", "DELETE FROM lethe_archive");
    refused(&mut agent_c, "agent", "DELETE FROM lethe_procedure_version");
    refused(&mut agent_c, "agent", "DELETE FROM lethe_recall_log");
    // Forgetting events claimed for the policy: only Lethe's functions write events (the
    // batch's, a quarantine's, a hard delete's); no role inserts one, the team lead neither.
    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator)] {
        let mut c = client(url);
        for action in ["soft", "review", "hard"] {
            refused(
                &mut c,
                who,
                &format!(
                    "INSERT INTO memory_forgetting_event (id, memory_id, action, created_at, metadata_json) \
                     VALUES ('fev_policy_{who}_{action}', '{target}', '{action}', '2026-12-01T00:00:00.000Z', \
                     '{{\"actor\":\"policy\",\"run\":\"run_0123456789abcdef0123456789abcdef\"}}')"
                ),
            );
        }
    }

    let mut owner = client(&st.owner);
    let actors: Vec<String> = owner
        .query("SELECT DISTINCT actor FROM lethe_action WHERE team = 'alpha' ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        actors.iter().all(|a| [format!("agent:{agent}"), format!("user:{curator}")].contains(a)),
        "every audit row of alpha names the role that wrote it: {actors:?}"
    );
    let forged: i64 = owner
        .query_one(
            "SELECT COUNT(*) FROM lethe_action WHERE actor = 'user:cb' OR created_at < '2026' \
             OR created_at > to_char(now() AT TIME ZONE 'UTC' + interval '1 minute', 'YYYY-MM-DD\"T\"HH24:MI:SS')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(forged, 0, "no forged actor or date in the audit");
    for (table, col, time) in [("lethe_supersede", "actor", "created_at"), ("lethe_recall_log", "actor", "at")] {
        let rows = owner
            .query(&format!("SELECT {col}, {time} FROM {table} WHERE team = 'alpha' AND {col} LIKE '%someone-else%' OR {time} LIKE '9999%'"), &[])
            .unwrap();
        assert!(rows.is_empty(), "{table}: no forged actor or future date ({} rows)", rows.len());
    }
    let pinned: i64 =
        owner.query_one("SELECT COUNT(*) FROM memory_item WHERE team = 'alpha' AND pinned <> 0", &[]).unwrap().get(0);
    assert_eq!(pinned, 0, "an agent pins nothing");
    let hard: i64 = owner
        .query_one("SELECT COUNT(*) FROM memory_forgetting_event WHERE action = 'hard' OR id LIKE 'fev_policy_%'", &[])
        .unwrap()
        .get(0);
    assert_eq!(hard, 0, "no forged event");
    let (_, v) = lethe(&st.a_curator, &["events", "--limit", "100"]);
    assert!(!v.to_string().contains("user:cb"), "{v}");
    let policy: Vec<String> = owner
        .query(
            "SELECT id FROM memory_forgetting_event WHERE team = 'alpha' AND metadata_json::jsonb ->> 'actor' = 'policy'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(policy.is_empty(), "no forgetting event written by raw SQL is the policy's: {policy:?}");
    // The supersede actions written through the function name the role too.
    let superseded: Vec<String> = owner
        .query("SELECT actor FROM lethe_action WHERE team = 'alpha' AND action = 'superseded' ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(superseded, vec![format!("agent:{agent}"), format!("user:{curator}")]);
}

#[test]
fn a_quarantine_dated_back_by_raw_sql_is_not_purged_by_the_curators_forget() {
    let Some(st) = store() else { return };
    let started = chrono::Utc::now() - chrono::Duration::seconds(5);
    let forged = ok(&st.a_agent, &["remember", "--type", "semantic", "--content", "Alpha's VPN gateway is vpn-2."])
        ["id"]
        .as_str()
        .unwrap()
        .to_string();
    let planted = "mem_planted_quarantine";
    let legit = st.alpha_ids[1].clone();
    let mut agent = client(&st.a_agent);
    // A raw UPDATE of a memory is refused: no Lethe role holds that right.
    refused(
        &mut agent,
        "agent",
        &format!(
            "UPDATE memory_item SET is_deleted = 1, deleted_at = '2000-01-01T00:00:00.000Z' WHERE id = '{forged}'"
        ),
    );
    // The quarantine's own function, called with a date of 2000 and a forged policy event.
    agent
        .batch_execute(&format!(
            "SELECT lethe_memory_quarantine('{forged}', 'fev_0190a5b4-0000-7000-8000-0000000000a1', 'r', 'agent', 0.5, 30, \
                 NULL, '2000-01-01T00:00:00.000Z'); \
             SELECT lethe_memory_insert('[{{\"id\":\"{planted}\",\"type\":\"semantic\",\
                 \"content\":\"planted in quarantine\",\"created_at\":\"2000-01-01T00:00:00.000Z\",\
                 \"is_deleted\":1,\"deleted_at\":\"2000-01-01T00:00:00.000Z\"}}]', 'user:cb', '2000-01-01T00:00:00.000Z')"
        ))
        .unwrap();
    refused(
        &mut agent,
        "agent",
        "INSERT INTO memory_item (id, type, content, created_at, is_deleted, deleted_at) \
         VALUES ('mem_raw', 'semantic', 'planted', '2000-01-01T00:00:00.000Z', 1, '2000-01-01T00:00:00.000Z')",
    );
    // A forged policy event dated back is refused: no role inserts a forgetting event.
    refused(
        &mut agent,
        "agent",
        &format!(
            "INSERT INTO memory_forgetting_event (id, memory_id, action, created_at, metadata_json) \
             VALUES ('fev_old_{forged}', '{forged}', 'soft', '2000-01-01T00:00:00.000Z', '{{\"actor\":\"policy\"}}')"
        ),
    );
    // Moving the start of a quarantine by raw SQL is refused.
    refused(
        &mut agent,
        "agent",
        &format!("UPDATE memory_item SET deleted_at = '2001-01-01T00:00:00.000Z' WHERE id = '{forged}'"),
    );
    // The batch's own function is the team lead's: refused to the agent, and the curator's
    // call with a date of 2000 gets the server's clock.
    let chunked = ok(&st.a_agent, &["remember", "--type", "semantic", "--content", "Alpha's DNS lives on ns-3."])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut owner = client(&st.owner);
    let rowid: i64 = owner.query_one("SELECT rowid FROM memory_item WHERE id = $1", &[&chunked]).unwrap().get(0);
    let chunk = format!(
        "SELECT lethe_forget_chunk('[{{\"n\":0,\"kind\":\"soft\",\"rowid\":{rowid},\"id\":\"{chunked}\",\
         \"reason\":\"r\",\"policy\":\"forget-score\",\"score\":0.9,\"in_band\":false,\
         \"ev\":\"fev_0190a5b4-0000-7000-8000-000000000009\"}}]', 30, 'run_0123456789abcdef0123456789abcdef', \
         '2000-01-01T00:00:00.000Z')"
    );
    refused(&mut agent, "agent", &chunk);
    client(&st.a_curator).batch_execute(&chunk).unwrap();
    for id in [forged.as_str(), planted, chunked.as_str()] {
        let at: String = owner.query_one("SELECT deleted_at FROM memory_item WHERE id = $1", &[&id]).unwrap().get(0);
        let at = chrono::DateTime::parse_from_rfc3339(&at).unwrap();
        assert!(at >= started, "{id}: the quarantine starts at the server's clock, not the row's ({at})");
    }
    let at: String = owner
        .query_one(
            "SELECT created_at FROM memory_forgetting_event WHERE id = 'fev_0190a5b4-0000-7000-8000-0000000000a1'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(
        chrono::DateTime::parse_from_rfc3339(&at).unwrap() >= started,
        "the soft event is dated by the server: {at}"
    );

    // A quarantine that really began 40 days ago (set by the owner, whom the server trusts):
    // the positive control, which the forget does purge.
    ok(&st.a_agent, &["delete", &legit, "--reason", "old"]);
    owner
        .batch_execute(&format!(
            "UPDATE memory_item SET deleted_at = '2026-01-01T00:00:00.000Z' WHERE id = '{legit}'; \
             UPDATE memory_forgetting_event SET created_at = '2026-01-01T00:00:00.000Z' WHERE memory_id = '{legit}'"
        ))
        .unwrap();
    let v = ok(&st.a_curator, &["forget"]);
    let mut present = |id: &str| -> bool {
        owner.query_one("SELECT COUNT(*) FROM memory_item WHERE id = $1", &[&id]).unwrap().get::<_, i64>(0) == 1
    };
    assert!(present(&forged), "the memory dated back by raw SQL is still in quarantine: {v}");
    assert!(present(planted), "the memory planted in quarantine is still there: {v}");
    assert!(present(&chunked), "the memory the agent quarantined through the batch's function is still there: {v}");
    assert!(!present(&legit), "a quarantine older than 30 days by the server's clock is purged: {v}");
}

#[test]
fn locks_held_open_by_one_team_do_not_stop_another() {
    let Some(st) = store() else { return };
    // Every role of alpha holds what it can: row locks on its own rows, ROW EXCLUSIVE (what
    // INSERT admits), and the advisory keys Lethe used to take, in open transactions.
    let mut holders = Vec::new();
    for url in [&st.a_agent, &st.a_curator, &st.a_reader] {
        let mut c = client(url);
        // The role's timeouts are defaults the session lowers to none: it may hold what it
        // holds for ever.
        c.batch_execute("SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0").unwrap();
        // A lock another holder has is not waited for (the holders do not queue).
        c.batch_execute("SET lock_timeout = '1s'; BEGIN").unwrap();
        // Each in a savepoint of its own: what the role may take stays held to the end.
        for sql in [
            "SELECT pg_advisory_lock(7394021), pg_advisory_lock(7394022)",
            "SELECT pg_advisory_xact_lock(lethe_team_key('push'))",
            "SELECT * FROM memory_item FOR UPDATE",
            "SELECT * FROM lethe_review FOR UPDATE",
            "LOCK TABLE memory_item IN ROW EXCLUSIVE MODE",
            "LOCK TABLE lethe_action IN ROW EXCLUSIVE MODE",
            "SELECT * FROM lethe_action, lethe_change, lethe_schema, lethe_vector LIMIT 1",
        ] {
            c.batch_execute("SAVEPOINT h").unwrap();
            let next = if c.batch_execute(sql).is_ok() { "RELEASE SAVEPOINT h" } else { "ROLLBACK TO SAVEPOINT h" };
            c.batch_execute(next).unwrap();
        }
        holders.push(c);
    }
    // Beta works meanwhile, within the usual time: remember, recall, forget, push; the owner
    // runs setup again.
    let started = Instant::now();
    ok(&st.b_agent, &["remember", "--type", "semantic", "--content", "Beta writes while alpha holds locks."]);
    ok(&st.b_agent, &["recall", "beta release train"]);
    ok(&st.b_curator, &["forget"]);
    let file = std::env::temp_dir().join(format!("lethe-raw-push-{}.db", uuid::Uuid::new_v4().simple()));
    let f = file.to_str().unwrap();
    ok(f, &["remember", "--type", "semantic", "--content", "A local note beta's lead pushes."]);
    let v = ok(&st.b_curator, &["push", f]);
    assert_eq!(v["pushed"], 1, "{v}");

    ok(&st.owner, &["admin", "setup"]);
    assert!(started.elapsed() < Duration::from_secs(60), "beta waited for alpha's locks: {:?}", started.elapsed());
    for mut c in holders {
        let open: i64 = c.query_one("SELECT COUNT(*) FROM pg_locks WHERE pid = pg_backend_pid()", &[]).unwrap().get(0);
        assert!(open > 0, "the holder still held its locks while beta worked");
    }
    let _ = std::fs::remove_file(&file);
}

#[test]
fn notifications_carry_nothing_and_reach_only_the_own_team() {
    let Some(st) = store() else { return };
    let mut alpha = client(&st.a_reader);
    let channel: String = alpha.query_one("SELECT lethe_channel()", &[]).unwrap().get(0);
    let beta_channel: String = client(&st.b_agent).query_one("SELECT lethe_channel()", &[]).unwrap().get(0);
    assert_ne!(channel, beta_channel, "each team has its own channel");
    alpha.batch_execute(&format!("LISTEN lethe_change; LISTEN \"{channel}\"")).unwrap();
    let drain = |c: &mut postgres::Client, wait: Duration| -> Vec<(String, String)> {
        use postgres::fallible_iterator::FallibleIterator;
        let mut notes = c.notifications();
        let mut out = Vec::new();
        let mut it = notes.timeout_iter(wait);
        while let Ok(Some(n)) = it.next() {
            out.push((n.channel().to_string(), n.payload().to_string()));
        }
        out
    };
    ok(&st.b_agent, &["remember", "--type", "semantic", "--content", "Beta's write, which alpha must not hear of."]);
    assert!(drain(&mut alpha, Duration::from_millis(1500)).is_empty(), "alpha hears nothing of beta's writes");
    // Anyone may NOTIFY a channel it names, but no role learns beta's channel's name.
    let mut agent = client(&st.a_agent);
    agent.batch_execute("NOTIFY lethe_change, 'beta'").unwrap();
    ok(&st.a_agent, &["remember", "--type", "semantic", "--content", "Alpha's own write."]);
    let heard = drain(&mut alpha, Duration::from_millis(1500));
    assert!(heard.iter().any(|(c, p)| c == &channel && p.is_empty()), "alpha's own change, payload-free: {heard:?}");
}

/// `lethe push` checks every memory of the file as `import` does: a file that another program
/// wrote a future date into is refused whole; a secret is redacted; a quarantine from 2000
/// starts at the push; who did what arrives as `pushed:<actor>`.
#[test]
fn push_checks_redacts_and_dates_every_memory_as_import_does() {
    let Some(st) = store() else { return };
    let dir = std::env::temp_dir().join(format!("lethe-raw-push-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("local.db");
    let f = file.to_str().unwrap();
    let kept = ok(f, &["remember", "--type", "semantic", "--content", "The staging deploy uses the blue queue."])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let old = ok(f, &["remember", "--type", "semantic", "--content", "The old cron host was cron-7."])["id"]
        .as_str()
        .unwrap()
        .to_string();
    ok(f, &["delete", &old, "--reason", "retired"]);
    // Another program writes into the file behind Lethe's back (its triggers dropped first, so
    // that a bare SQLite connection may write).
    let raw = rusqlite::Connection::open(&file).unwrap();
    let triggers: Vec<String> = raw
        .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memory_item'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for t in triggers {
        raw.execute_batch(&format!("DROP TRIGGER \"{t}\"")).unwrap();
    }
    raw.execute(
        "UPDATE memory_item SET content = 'The staging deploy key is AKIAIOSFODNN7EXAMPLE, blue queue.', \
         created_at = '9999-01-01T00:00:00.000Z' WHERE id = ?1",
        [&kept],
    )
    .unwrap();
    raw.execute("UPDATE memory_item SET deleted_at = '2000-01-01T00:00:00.000Z' WHERE id = ?1", [&old]).unwrap();
    let before = team_rows(&st.owner, "alpha");
    let (code, v) = lethe(&st.a_curator, &["push", f]);
    assert_eq!((code, v["error"]["code"].as_str()), (2, Some("invalid_input")), "a future date: {v}");
    assert!(v.to_string().contains("future"), "{v}");
    assert_eq!(team_rows(&st.owner, "alpha"), before, "a refused push writes nothing");

    raw.execute("UPDATE memory_item SET created_at = '2026-01-01T00:00:00.000Z' WHERE id = ?1", [&kept]).unwrap();
    drop(raw);
    let started = chrono::Utc::now() - chrono::Duration::seconds(5);
    let v = ok(&st.a_curator, &["push", f]);
    assert_eq!(
        (v["pushed"].as_u64(), v["quarantined"].as_u64(), v["redacted_memories"].as_u64()),
        (Some(2), Some(1), Some(1)),
        "{v}"
    );
    let shown = ok(&st.a_curator, &["show", &kept]);
    assert!(!shown.to_string().contains("AKIAIOSFODNN7EXAMPLE"), "the secret is redacted: {shown}");
    assert!(shown["content"].as_str().unwrap().contains("REDACTED"), "{shown}");
    let quarantined = ok(&st.a_curator, &["show", &old]);
    let since = chrono::DateTime::parse_from_rfc3339(quarantined["deleted_at"].as_str().unwrap()).unwrap();
    assert!(since >= started, "quarantined as of the push, not 2000: {quarantined}");
    let events = ok(&st.a_curator, &["events", "--memory", &old]);
    let actors: Vec<&str> = events["items"].as_array().unwrap().iter().filter_map(|e| e["actor"].as_str()).collect();
    assert!(!actors.is_empty() && actors.iter().all(|a| a.starts_with("pushed:")), "{events}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The database's definer role: the NOLOGIN role that owns Lethe's functions (one per
/// database, named from its oid).
fn definer_of(owner: &str) -> String {
    client(owner)
        .query_one("SELECT 'lethe_definer_' || oid::text FROM pg_database WHERE datname = current_database()", &[])
        .unwrap()
        .get(0)
}

/// Lethe's functions of the store and their owners: (function, owner, owner can log in,
/// owner is a superuser, security definer, search path setting).
fn functions(owner: &str) -> Vec<(String, String, bool, bool, bool, String)> {
    client(owner)
        .query(
            "SELECT p.oid::regprocedure::text, r.rolname::text, r.rolcanlogin, r.rolsuper, p.prosecdef, \
                    COALESCE(array_to_string(p.proconfig, ','), '') \
             FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner \
             WHERE p.pronamespace = current_schema()::regnamespace \
               AND (p.proname LIKE 'lethe\\_%' OR p.proname IN ('typeof', 'instr')) \
               AND p.proname <> 'lethe_definer_handover' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
        .collect()
}

/// Every function belongs to the definer role, which cannot log in, and every definer
/// function fixes its search path with the catalog first.
fn assert_functions_are_the_definers(owner: &str) {
    let definer = definer_of(owner);
    let fns = functions(owner);
    assert!(fns.len() >= 15, "Lethe's functions: {fns:?}");
    for (f, by, login, su, secdef, config) in &fns {
        assert_eq!((by.as_str(), *login, *su), (definer.as_str(), false, false), "{f} belongs to {by}");
        if *secdef {
            assert!(config.starts_with("search_path=pg_catalog"), "{f}: {config}");
        }
    }
}

#[test]
fn lethes_functions_belong_to_a_role_that_cannot_log_in_and_no_team_role_becomes_it() {
    let Some(st) = store() else { return };
    assert_functions_are_the_definers(&st.owner);
    let definer = definer_of(&st.owner);
    let mut owner = client(&st.owner);
    let r = owner
        .query_one(
            "SELECT has_schema_privilege($1, current_schema(), 'CREATE'), \
                    has_table_privilege($1, 'memory_item', 'TRUNCATE'), \
                    has_table_privilege($1, 'memory_item', 'DELETE'), \
                    pg_has_role($1, 'lethe_reader', 'MEMBER'), \
                    (SELECT rolcanlogin OR rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls \
                     FROM pg_roles WHERE rolname = $1)",
            &[&definer],
        )
        .unwrap();
    let rights: (bool, bool, bool, bool, bool) = (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
    assert_eq!(
        rights,
        (false, false, true, false, false),
        "the definer writes rows and nothing else: no DDL, no TRUNCATE, no group, no login"
    );
    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator), ("reader", &st.a_reader)] {
        let mut c = client(url);
        refused(&mut c, who, &format!("SET ROLE \"{definer}\""));
        refused(&mut c, who, &format!("SET SESSION AUTHORIZATION \"{definer}\""));
        refused(&mut c, who, &format!("ALTER ROLE \"{definer}\" LOGIN"));
        refused(&mut c, who, "SELECT lethe_definer_handover()");
        refused(&mut c, who, &format!("ALTER FUNCTION lethe_now() OWNER TO \"{}\"", st.names[0]));
    }
    // The functions work as the definer: the curator's hard delete, the agent's quarantine and
    // restore, the forget, each with its audit.
    let id = st.alpha_ids[0].as_str();
    ok(&st.a_agent, &["delete", id, "--reason", "checking the definer"]);
    ok(&st.a_agent, &["restore", id]);
    ok(&st.a_curator, &["forget"]);
    ok(&st.a_curator, &["delete", st.alpha_ids[1].as_str(), "--hard", "--confirm"]);
    let (code, v) = lethe(&st.a_curator, &["show", st.alpha_ids[1].as_str()]);
    assert_eq!((code, v["error"]["code"].as_str()), (4, Some("not_found")), "the hard delete removed the memory: {v}");
    let events = ok(&st.a_curator, &["events", "--memory", id]);
    assert!(events["items"].as_array().is_some_and(|a| !a.is_empty()), "{events}");
}

#[test]
fn a_store_set_up_before_is_handed_to_the_definer_and_keeps_every_row() {
    let Some(st) = store() else { return };
    let definer = definer_of(&st.owner);
    // The store as the previous build left it: functions owned by the setup role, no
    // definer role, no migration 008.
    let mut owner = client(&st.owner);
    owner
        .batch_execute(&format!(
            "DO $$ DECLARE f text; BEGIN
                 FOR f IN SELECT p.oid::regprocedure::text FROM pg_proc p
                          WHERE p.pronamespace = current_schema()::regnamespace
                            AND p.proowner = '\"{definer}\"'::regrole LOOP
                     EXECUTE format('ALTER FUNCTION %s OWNER TO CURRENT_USER', f);
                 END LOOP;
             END $$;
             DROP FUNCTION lethe_definer_handover(name);
             DROP OWNED BY \"{definer}\";
             DROP ROLE \"{definer}\";
             DELETE FROM lethe_schema WHERE version = 8;"
        ))
        .unwrap();
    let su: String = owner.query_one("SELECT current_user::text", &[]).unwrap().get(0);
    assert!(functions(&st.owner).iter().all(|f| f.1 == su), "the old store's functions are the setup role's");
    let alpha = team_rows(&st.owner, "alpha");
    let beta = team_rows(&st.owner, "beta");

    let v = ok(&st.owner, &["admin", "setup"]);
    assert_eq!(v["applied"], serde_json::json!(["008_definer_role"]), "{v}");
    assert_functions_are_the_definers(&st.owner);
    assert_eq!(team_rows(&st.owner, "alpha"), alpha, "every row of alpha is kept");
    assert_eq!(team_rows(&st.owner, "beta"), beta, "every row of beta is kept");
    let v = ok(&st.owner, &["admin", "setup"]);
    assert_eq!(v["applied"], serde_json::json!([]), "{v}");
    assert_functions_are_the_definers(&st.owner);
    // Every role works as before.
    ok(&st.b_agent, &["remember", "--type", "semantic", "--content", "Beta writes after the handover."]);
    let v = ok(&st.b_agent, &["recall", "beta release train"]);
    assert!(v.to_string().contains(&st.beta_ids[0]), "{v}");
    ok(&st.b_curator, &["forget"]);
    ok(&st.b_curator, &["pin", &st.beta_ids[1]]);
}

#[test]
fn an_owner_that_is_not_a_superuser_sets_up_a_store_run_by_the_definer() {
    let Some(server) = server() else { return };
    let s = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let (own, db) = (format!("own_{s}"), format!("lethe_own_{s}"));
    let mut su = client(&format!("{server}/postgres"));
    // What a hosting administrator does once: a role that may create roles and owns the
    // database, and may hand out Lethe's groups (PostgreSQL 16 asks for ADMIN on a group
    // another role made).
    su.batch_execute(&format!(
        "DO $$ DECLARE r text; BEGIN
             FOREACH r IN ARRAY ARRAY['lethe_reader', 'lethe_agent', 'lethe_curator'] LOOP
                 IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
                     BEGIN EXECUTE format('CREATE ROLE %I NOLOGIN', r);
                     EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END;
                 END IF;
             END LOOP;
         END $$;
         CREATE ROLE {own} LOGIN CREATEROLE NOSUPERUSER;
         GRANT lethe_reader, lethe_agent, lethe_curator TO {own} WITH ADMIN OPTION;"
    ))
    .unwrap();
    su.batch_execute(&format!("CREATE DATABASE {db} OWNER {own}")).unwrap();
    let at = server.trim_start_matches("postgres://postgres@");
    let owner = format!("postgres://{own}@{at}/{db}");
    let v = ok(&owner, &["admin", "setup"]);
    assert!(v["applied"].as_array().unwrap().iter().any(|m| m == "008_definer_role"), "{v}");
    assert_functions_are_the_definers(&owner);
    add(&owner, "add-agent", &format!("oa_{s}"), "gamma");
    add(&owner, "add-curator", &format!("oc_{s}"), "gamma");
    let agent = format!("postgres://oa_{s}:pw@{at}/{db}");
    let curator = format!("postgres://oc_{s}:pw@{at}/{db}");
    let id = ok(&agent, &["remember", "--type", "semantic", "--content", "Gamma's builds run on the arm pool."])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = ok(&agent, &["recall", "gamma arm pool builds"]);
    assert!(v.to_string().contains(&id), "{v}");
    ok(&agent, &["delete", &id, "--reason", "moved"]);
    ok(&agent, &["restore", &id]);
    ok(&curator, &["pin", &id]);
    ok(&curator, &["forget"]);
    let events = ok(&curator, &["events", "--memory", &id]);
    assert!(events.to_string().contains(&format!("agent:oa_{s}")), "the quarantine names the agent: {events}");
    // The owner's own setup runs again with nothing to do, and the definer still owns all.
    assert_eq!(ok(&owner, &["admin", "setup"])["applied"], serde_json::json!([]));
    assert_functions_are_the_definers(&owner);
}

#[test]
fn statistics_show_counts_never_another_teams_content_or_queries() {
    let Some(st) = store() else { return };
    let mut owner = client(&st.owner);
    owner.batch_execute("ANALYZE").unwrap();
    let tables: Vec<String> = TEAM_TABLES.iter().map(|t| t.to_string()).collect();
    let stats = "SELECT COUNT(*) FROM pg_stats WHERE schemaname = current_schema() AND tablename = ANY($1)";
    let seen: i64 = owner.query_one(stats, &[&tables]).unwrap().get(0);
    assert!(seen > 0, "the owner sees the column statistics (the control): {seen}");
    // A beta session whose last statement names beta's content.
    let mut beta = client(&st.b_agent);
    beta.batch_execute("SELECT 'beta-only words in a query' AS q").unwrap();
    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator), ("reader", &st.a_reader)] {
        let mut c = client(url);
        // Column statistics (most common values would be content) are hidden from a role
        // under row-level security.
        let n: i64 = c.query_one(stats, &[&tables]).unwrap().get(0);
        assert_eq!(n, 0, "{who}: no column statistics of a team table");
        // Another role's statements are not shown.
        let texts: Vec<Option<String>> = c
            .query("SELECT query FROM pg_stat_activity WHERE usename = $1", &[&st.names[3]])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(
            texts.iter().all(|q| !q.as_deref().unwrap_or("").contains("beta-only")),
            "{who}: another role's statement text: {texts:?}"
        );
        // What is shown: row counts of whole tables, summed over every team (harmless: a
        // number that names no team and carries no content).
        let counted: i64 = c
            .query_one(
                "SELECT COALESCE(SUM(n_live_tup), 0)::bigint FROM pg_stat_user_tables WHERE relname = 'memory_item'",
                &[],
            )
            .unwrap()
            .get(0);
        assert!(counted >= 0);
    }
    let mine: i64 = owner
        .query_one(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE usename = $1 AND query LIKE '%beta-only%'",
            &[&st.names[3]],
        )
        .unwrap()
        .get(0);
    assert_eq!(mine, 1, "the control: the owner sees beta's statement");
}

/// One row of the change journal as the owner reads it.
#[derive(Debug)]
struct JournalRow {
    kind: String,
    role: Option<String>,
    columns: Vec<String>,
    at: Option<String>,
}

/// The journal rows of `id` after `seq`, as the owner reads them.
fn journal_of(owner: &str, id: &str, after: i64) -> Vec<JournalRow> {
    client(owner)
        .query(
            "SELECT kind, role, columns, at FROM lethe_change WHERE memory_id = $1 AND seq > $2 ORDER BY seq",
            &[&id, &after],
        )
        .unwrap()
        .iter()
        .map(|r| JournalRow {
            kind: r.get(0),
            role: r.get(1),
            columns: r.get::<_, Option<Vec<String>>>(2).unwrap_or_default(),
            at: r.get(3),
        })
        .collect()
}

fn last_seq(owner: &str) -> i64 {
    client(owner).query_one("SELECT COALESCE(MAX(seq), 0) FROM lethe_change", &[]).unwrap().get(0)
}

/// An agent's rights are open to psql: it changes a memory only through Lethe's functions,
/// each change recorded by the server under its role, with the server's time and the columns
/// changed; the rows Lethe derives name the role that last wrote them; counters and the
/// version move by one at a time; no role names itself (or another) as the writer.
#[test]
fn raw_writes_of_a_teams_own_rows_name_the_role_that_made_them() {
    let Some(st) = store() else { return };
    let (agent, curator) = (&st.names[0], &st.names[1]);
    let id = st.alpha_ids[0].as_str();
    let other = st.alpha_ids[1].as_str();
    let started = chrono::Utc::now() - chrono::Duration::seconds(5);
    let beta_before = team_rows(&st.owner, "beta");
    let from = last_seq(&st.owner);

    let mut c = client(&st.a_agent);
    c.batch_execute(&format!(
        "SELECT lethe_memory_edit('{id}', 'rewritten by psql', NULL, 'user:cb', '{{}}', '{{}}', '2000-01-01T00:00:00.000Z')"
    ))
    .unwrap();
    c.batch_execute(&format!("SELECT lethe_memory_count('{id}', 'view', NULL, NULL, NULL, NULL)")).unwrap();
    for sql in [
        format!("UPDATE memory_item SET content = 'rewritten by psql' WHERE id = '{id}'"),
        format!("UPDATE memory_item SET view_count = COALESCE(view_count, 0) + 1 WHERE id = '{id}'"),
        format!("UPDATE memory_item SET cite_count = 1000 WHERE id = '{id}'"),
        format!("UPDATE memory_item SET view_count = 0 WHERE id = '{id}'"),
        format!("UPDATE memory_item SET edit_count = COALESCE(edit_count, 0) + 2 WHERE id = '{id}'"),
        format!("UPDATE memory_item SET version = 50 WHERE id = '{id}'"),
        // The writer of a row is the server's to say.
        "INSERT INTO lethe_action (memory_id, action, actor, created_at, role) \
         VALUES (NULL, 'note', 'policy', '2026-01-01T00:00:00.000Z', 'postgres')"
            .to_string(),
        format!("UPDATE lethe_vector SET role = 'postgres' WHERE memory_id = '{other}'"),
        format!("UPDATE lethe_change SET role = NULL WHERE memory_id = '{id}'"),
        format!("DELETE FROM lethe_change WHERE memory_id = '{id}'"),
    ] {
        refused(&mut c, "agent", &sql);
    }
    // A derived row rewritten (a vector, recall statistics): it names the agent.
    let vectors: i64 = client(&st.owner)
        .query_one("SELECT COUNT(*) FROM lethe_vector WHERE memory_id = $1 AND team = 'alpha'", &[&other])
        .unwrap()
        .get(0);
    assert_eq!(vectors, 1, "remember stored the memory's vector (the recall model is beside the binary)");
    let vector_md5 = |owner: &str| -> String {
        client(owner)
            .query_one("SELECT md5(vec) || model FROM lethe_vector WHERE memory_id = $1 AND team = 'alpha'", &[&other])
            .unwrap()
            .get(0)
    };
    let vector_before = vector_md5(&st.owner);
    refused(&mut c, "agent", &format!("UPDATE lethe_vector SET model = 'forged-model' WHERE memory_id = '{other}'"));
    refused(
        &mut c,
        "agent",
        &format!(
            "INSERT INTO meta_memory_stats (memory_id, recall_count) VALUES ('{other}', 1) \
             ON CONFLICT (memory_id, team) DO UPDATE SET recall_count = 999"
        ),
    );
    // Through the functions: a vector of the memory's current model is not rewritten; the
    // statistics only move forward, under the agent's name.
    let rewritten: i64 = c
        .query_one(
            "SELECT lethe_vectors_store(json_build_array(json_build_array(memory_id, model, \
                 encode(set_byte(vec, 10, 7), 'hex')))::text) FROM lethe_vector WHERE memory_id = $1",
            &[&other],
        )
        .unwrap()
        .get(0);
    assert_eq!(rewritten, 0, "a stored vector of the same model is not rewritten");
    assert_eq!(vector_md5(&st.owner), vector_before);
    for sql in [
        format!("SELECT lethe_stats_add('{other}', -5, 0, 0, 0, NULL)"),
        format!("SELECT lethe_stats_add('{other}', 1, 2, 0, 0.5, NULL)"),
        format!("SELECT lethe_stats_add('{other}', 2000000, 0, 0, 0, NULL)"),
        format!("SELECT lethe_stats_add('{other}', 1, 1, 0, 'NaN', NULL)"),
        format!("SELECT lethe_stats_add('{other}', 1, 1, 0, 0.5, '9999-01-01T00:00:00.000Z')"),
    ] {
        refused(&mut c, "agent", &sql);
    }
    c.batch_execute(&format!("SELECT lethe_stats_add('{other}', 1, 1, 0, 0.5, NULL)")).unwrap();
    let mut cur = client(&st.a_curator);
    refused(&mut cur, "curator", &format!("UPDATE memory_item SET importance = 0.01 WHERE id = '{other}'"));
    cur.batch_execute(&format!("SELECT lethe_memory_importance('{other}', 0.01, 'user:x', '{{}}', '{{}}', NULL)"))
        .unwrap();

    let rows = journal_of(&st.owner, id, from);
    let columns: Vec<Vec<String>> = rows.iter().filter(|r| r.kind == "update").map(|r| r.columns.clone()).collect();
    let named = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        columns,
        vec![named(&["content", "last_accessed", "edit_count", "version"]), named(&["last_accessed", "view_count"])],
        "one journal row per function call, naming the columns it changed: {rows:?}"
    );
    for row in &rows {
        assert_eq!(row.role.as_deref(), Some(agent.as_str()), "{}: the journal names the role: {rows:?}", row.kind);
        let at = chrono::DateTime::parse_from_rfc3339(row.at.as_deref().unwrap()).unwrap();
        assert!(at >= started && at <= chrono::Utc::now() + chrono::Duration::seconds(5), "the server's time: {at}");
    }
    let rows = journal_of(&st.owner, other, from);
    assert!(
        rows.iter().any(|r| r.role.as_deref() == Some(curator.as_str()) && r.columns == ["importance"]),
        "the curator's change of importance is journalled under its name: {rows:?}"
    );
    let mut owner = client(&st.owner);
    let r = owner
        .query_one(
            "SELECT (SELECT role FROM lethe_vector WHERE memory_id = $1 AND team = 'alpha'), \
                    (SELECT role FROM meta_memory_stats WHERE memory_id = $1 AND team = 'alpha'), \
                    (SELECT cite_count FROM memory_item WHERE id = $2 AND team = 'alpha'), \
                    (SELECT version FROM memory_item WHERE id = $2 AND team = 'alpha')",
            &[&other, &id],
        )
        .unwrap();
    let (vector_by, stats_by): (Option<String>, Option<String>) = (r.get(0), r.get(1));
    assert_eq!(vector_by.as_deref(), Some(agent.as_str()), "the vector names the agent that stored it");
    assert_eq!(stats_by.as_deref(), Some(agent.as_str()), "the statistics name the agent");
    let (cites, version): (Option<i64>, Option<i64>) = (r.get(2), r.get(3));
    assert_eq!(
        (cites.unwrap_or(0), version.unwrap_or(1)),
        (0, 2),
        "refused counters did not move; the function's edit moved the version by one"
    );
    let last_accessed: String =
        owner.query_one("SELECT last_accessed FROM memory_item WHERE id = $1", &[&id]).unwrap().get(0);
    let at = chrono::DateTime::parse_from_rfc3339(&last_accessed).unwrap();
    assert!(at >= started, "the function's date of 2000 gave way to the server's clock: {at}");

    // Lethe's own commands write the same journal: an edit by the agent, a pin by the curator.
    let from = last_seq(&st.owner);
    ok(&st.a_agent, &["edit", id, "--content", "Alpha's launch codename is Bluefin, written by the agent."]);
    ok(&st.a_curator, &["pin", id]);
    let rows = journal_of(&st.owner, id, from);
    let who: Vec<(Option<String>, Vec<String>)> = rows.iter().map(|r| (r.role.clone(), r.columns.clone())).collect();
    assert!(
        who.iter().any(|(r, c)| r.as_deref() == Some(agent.as_str()) && c.contains(&"content".to_string())),
        "{who:?}"
    );
    assert!(
        who.iter().any(|(r, c)| r.as_deref() == Some(curator.as_str()) && c == &vec!["pinned".to_string()]),
        "{who:?}"
    );
    assert_eq!(team_rows(&st.owner, "beta"), beta_before, "beta's rows are as they were");
}

/// A forgetting event or an audit row claimed for the policy names, beside it, the role whose
/// session wrote it: the curator who ran the batch, an agent that called the batch's function
/// itself, a curator's `hard` event of its own purge.
#[test]
fn policy_events_and_actions_name_the_role_whose_session_wrote_them() {
    let Some(st) = store() else { return };
    let (agent, curator) = (&st.names[0], &st.names[1]);
    let mut owner = client(&st.owner);
    // The batch's function on a memory of the team: the agent may not call it (it would choose
    // which memories the policy quarantines); the team lead's call names the team lead.
    let chosen = st.alpha_ids[0].as_str();
    let rowid: i64 = owner.query_one("SELECT rowid FROM memory_item WHERE id = $1", &[&chosen]).unwrap().get(0);
    let chunk = format!(
        "SELECT lethe_forget_chunk('[{{\"n\":0,\"kind\":\"soft\",\"rowid\":{rowid},\"id\":\"{chosen}\",\
         \"reason\":\"r\",\"policy\":\"forget-score\",\"score\":0.9,\"in_band\":false,\
         \"ev\":\"fev_0190a5b4-0000-7000-8000-000000000001\"}}]', 30, 'run_0123456789abcdef0123456789abcdef', NULL)"
    );
    refused(&mut client(&st.a_agent), "agent", &chunk);
    client(&st.a_curator).batch_execute(&chunk).unwrap();
    // Raw audit rows claimed for the policy, and the curator's own `hard` event of a purge.
    client(&st.a_agent)
        .batch_execute(
            "SELECT lethe_action_record(NULL, 'forget_run', 'policy', NULL, NULL, '2026-01-01T00:00:00.000Z')",
        )
        .unwrap();
    let gone = st.alpha_ids[1].as_str();
    ok(&st.a_curator, &["delete", gone, "--hard", "--confirm"]);
    refused(
        &mut client(&st.a_curator),
        "curator",
        &format!(
            "INSERT INTO memory_forgetting_event (id, memory_id, action, created_at, metadata_json) \
             VALUES ('fev_purge_claim', '{gone}', 'hard', '2026-12-01T00:00:00.000Z', '{{\"actor\":\"policy\"}}')"
        ),
    );
    // The curator's batch: its policy events are the curator's session's.
    let old = ok(
        &st.a_agent,
        &["remember", "--type", "working", "--session", "gate-s1", "--content", "Alpha's scratch note for the gate."],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    owner
        .batch_execute(&format!("UPDATE memory_item SET created_at = '2020-01-01T00:00:00.000Z' WHERE id = '{old}'"))
        .unwrap();
    let v = ok(&st.a_curator, &["forget"]);
    assert!(v.to_string().contains(&old), "the batch forgets the old working memory: {v}");

    let role_of_event = |owner: &mut postgres::Client, sql: &str| -> Vec<(String, Option<String>)> {
        owner.query(sql, &[]).unwrap().iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    let by_agent = role_of_event(
        &mut owner,
        "SELECT metadata_json::jsonb ->> 'actor', role FROM memory_forgetting_event \
         WHERE id = 'fev_0190a5b4-0000-7000-8000-000000000001'",
    );
    assert_eq!(
        by_agent,
        vec![("policy".to_string(), Some(curator.clone()))],
        "the team lead's call of the batch's function"
    );
    // The team lead's hard delete: its event is the server's, under the team lead's name.
    let purge = role_of_event(
        &mut owner,
        &format!("SELECT metadata_json::jsonb ->> 'actor', role FROM memory_forgetting_event WHERE memory_id = '{gone}' AND action = 'hard'"),
    );
    assert_eq!(purge, vec![(format!("user:{curator}"), Some(curator.clone()))], "the curator's hard delete");
    let batch: Vec<(String, Option<String>)> = owner
        .query(
            "SELECT metadata_json::jsonb ->> 'actor', role FROM memory_forgetting_event WHERE memory_id = $1",
            &[&old],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(!batch.is_empty() && batch.iter().all(|e| e.1.as_deref() == Some(curator.as_str())), "{batch:?}");
    let actions = role_of_event(
        &mut owner,
        "SELECT actor, role FROM lethe_action WHERE team = 'alpha' AND actor = 'policy' ORDER BY id",
    );
    assert!(actions.iter().any(|a| a.1.as_deref() == Some(agent.as_str())), "{actions:?}");
    assert!(
        actions.iter().all(|a| [Some(agent.as_str()), Some(curator.as_str())].contains(&a.1.as_deref())),
        "every policy action names its writer: {actions:?}"
    );
    // Every audit row a Lethe role wrote in this store names its role; none is left unnamed.
    let unnamed: i64 = owner
        .query_one(
            "SELECT (SELECT COUNT(*) FROM memory_forgetting_event WHERE team = 'alpha' AND role IS NULL) \
                  + (SELECT COUNT(*) FROM lethe_action WHERE team = 'alpha' AND role IS NULL)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(unnamed, 0, "every audit row names the role that wrote it");
    // The JSON of `events` is as before: the role is the server's record, not a field added.
    let events = ok(&st.a_curator, &["events", "--memory", &old]);
    assert!(!events.to_string().contains("\"role\""), "{events}");
}

/// Keys are per team: a role that inserts another team's memory id (by raw SQL or through a
/// push) gets the answer a new id gets, stores the memory in its own team, and changes nothing
/// of the other team's; neither the neighbour lists' rowids nor an event id can be squatted.
#[test]
fn a_memory_id_of_another_team_is_neither_refused_nor_revealed() {
    let Some(st) = store() else { return };
    let beta_before = team_rows(&st.owner, "beta");
    let beta_id = st.beta_ids[0].as_str();
    let fresh = format!("mem_{}", uuid::Uuid::new_v4());
    let mut c = client(&st.a_agent);
    // The server's function skips an id the team holds already, as `import` does.
    let insert = |c: &mut postgres::Client, id: &str| -> u64 {
        let row = serde_json::json!([{"id": id, "type": "semantic", "content": "probe", "created_at": "2026-12-01T00:00:00.000Z"}]);
        c.query("SELECT lethe_memory_insert($1, NULL, NULL)", &[&row.to_string()]).unwrap().len() as u64
    };
    assert_eq!(insert(&mut c, &fresh), 1, "a new id is stored");
    assert_eq!(insert(&mut c, beta_id), 1, "beta's id is stored too: the answer of a new id");
    assert_eq!(insert(&mut c, beta_id), 0, "the control: alpha's own id now conflicts");
    // Derived rows keyed by the id or by a memory's rowid: nothing of beta's is in the way.
    let beta_rowids: Vec<i64> = client(&st.owner)
        .query("SELECT rowid FROM memory_item WHERE team = 'beta' ORDER BY rowid", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for rowid in &beta_rowids {
        let n: i64 =
            c.query_one("SELECT lethe_neighbour_store($1, 'm', 'h', '\\x00', '\\x00')", &[rowid]).unwrap().get(0);
        assert_eq!(n, 0, "beta's rowid is no memory of alpha's: nothing stored");
    }
    for sql in [
        format!("SELECT lethe_signatures_store('[[\"{beta_id}\", \"{}\", \"00\"]]')", "a".repeat(64)),
        format!("SELECT lethe_stats_add('{beta_id}', 1, 1, 0, 0.5, NULL)"),
    ] {
        let n: i64 = c.query_one(&sql, &[]).unwrap().get(0);
        assert_eq!(n, 1, "alpha's own memory of that id: {sql}");
    }
    // An event id of beta's pushed by alpha's team lead: stored in alpha, as a new one is.
    let fev: String = client(&st.owner)
        .query_one("SELECT id FROM memory_forgetting_event WHERE team = 'beta' LIMIT 1", &[])
        .unwrap()
        .get(0);
    let n: i64 = client(&st.a_curator)
        .query_one(
            "SELECT lethe_push_rows('memory_forgetting_event', $1)",
            &[&serde_json::json!([[fev, "x", "soft", null, null, null, null, "2026-12-01T00:00:00.000Z", null]])
                .to_string()],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 1, "beta's event id is the answer of a new one");

    // A push of a file that holds beta's id: the memory arrives in alpha, as a new one would.
    let dir = std::env::temp_dir().join(format!("lethe-raw-keys-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (jsonl, file) = (dir.join("m.jsonl"), dir.join("local.db"));
    let other = format!("mem_{}", uuid::Uuid::new_v4());
    std::fs::write(
        &jsonl,
        format!(
            "{{\"id\":\"{}\",\"type\":\"semantic\",\"content\":\"Beta's id, alpha's note about the lab printer.\"}}\n\
             {{\"id\":\"{other}\",\"type\":\"semantic\",\"content\":\"A new id, alpha's note about the lab scanner.\"}}\n",
            st.beta_ids[1]
        ),
    )
    .unwrap();
    ok(file.to_str().unwrap(), &["import", jsonl.to_str().unwrap()]);
    let v = ok(&st.a_curator, &["push", file.to_str().unwrap()]);
    assert_eq!(v["pushed"], 2, "both memories arrive, beta's id as any other: {v}");
    let shown = ok(&st.a_agent, &["show", &st.beta_ids[1]]);
    assert!(shown["content"].as_str().unwrap().contains("lab printer"), "alpha reads its own memory: {shown}");
    std::fs::remove_dir_all(&dir).unwrap();

    // Beta: every row as it was, and it works (its neighbour lists are stored anew).
    assert_eq!(team_rows(&st.owner, "beta"), beta_before, "every row of team beta is as it was");
    ok(&st.b_agent, &["remember", "--type", "semantic", "--content", "Beta writes after alpha's probes."]);
    ok(&st.b_curator, &["forget"]);
    let v = ok(&st.b_agent, &["show", beta_id]);
    assert!(v["content"].as_str().unwrap().contains("release train"), "{v}");
    let v = ok(&st.b_agent, &["recall", "beta release train"]);
    assert!(v.to_string().contains(beta_id), "{v}");
}

/// The tables no Lethe role updates directly, with a column each of them holds.
const FUNCTION_ONLY: &[(&str, &str)] = &[
    ("memory_item", "content"),
    ("lethe_action", "before_json"),
    ("memory_forgetting_event", "metadata_json"),
    ("lethe_archive", "restored_at"),
    ("lethe_procedure_version", "snapshot_json"),
    ("lethe_recall_log", "query"),
];

/// The database is the API for a memory and its audit: no Lethe role updates them directly;
/// each write function refuses another team's ids, NULLs, out-of-range values and 1 MB
/// strings, keeps the team lead's operations to the team lead, and stamps the server's clock
/// whatever date it is given; every row of the other team is byte-identical afterwards.
#[test]
fn memories_and_the_audit_change_only_through_functions_that_hold_every_rule() {
    let Some(st) = store() else { return };
    let beta_before = team_rows(&st.owner, "beta");
    let started = chrono::Utc::now() - chrono::Duration::seconds(5);
    let (alpha, beta) = (st.alpha_ids[0].as_str(), st.beta_ids[1].as_str());
    let beta_procedure = st.beta_ids[3].as_str();
    // One byte over the engine's default content limit (1 MiB), and over every other limit.
    let big = "x".repeat((1 << 20) + 1);
    let ev = "fev_0190a5b4-0000-7000-8000-0000000000b1";
    let mut owner = client(&st.owner);
    let beta_archive: i64 =
        owner.query_one("SELECT archive_no FROM lethe_archive WHERE team = 'beta' LIMIT 1", &[]).unwrap().get(0);
    let beta_log: i64 =
        owner.query_one("SELECT id FROM lethe_recall_log WHERE team = 'beta' LIMIT 1", &[]).unwrap().get(0);
    // Every function, pointed at beta's rows.
    let at_beta = [
        format!("SELECT lethe_memory_pin('{beta}', true, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_importance('{beta}', 0.9, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_count('{beta}', 'cite', 'agent:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_count('{beta}', 'view', NULL, NULL, NULL, NULL)"),
        format!("SELECT 1/lethe_memory_restore(ARRAY['{}'])::int", st.beta_ids[2]),
        format!("SELECT lethe_memory_restore('{}', 'agent:x', '{{}}', '{{}}', NULL)", st.beta_ids[2]),
        format!("SELECT lethe_memory_quarantine('{beta}', '{ev}', 'r', 'agent', 0.5, 30, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{beta}', '{ev}', 'r', 'manual', 0.5, 30, NULL, NULL)"),
        format!("SELECT lethe_memory_edit('{beta}', 'overwritten', NULL, 'agent:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_tags('{beta}', '[\"x\"]')"),
        format!(
            "SELECT lethe_memory_procedure('{beta_procedure}', 1, 'overwritten', NULL, NULL, NULL, NULL, NULL, 'agent:x', NULL, NULL)"
        ),
        format!("SELECT lethe_memory_reflection('{beta_procedure}', '[]')"),
        format!("SELECT lethe_memory_archive({beta_archive}, 'x', '[]', 'agent:x', NULL, NULL)"),
        format!("SELECT lethe_memory_unarchive({beta_archive}, 'agent:x', NULL, NULL)"),
        format!("SELECT lethe_memory_episodic('{beta}', 'task', 'agent:x', NULL, NULL)"),
        format!("SELECT lethe_memory_redact('{beta}', 'content', 'redacted')"),
        format!("SELECT 1/lethe_procedure_version_redact('{beta_procedure}', 1, '{{}}')::int"),
        format!("SELECT 1/lethe_archive_redact({beta_archive}, '\\x00')::int"),
        format!("SELECT lethe_recall_log_erase({beta_log}, '{}', '{{\"query_erased\":true}}', '[]')", st.beta_ids[0]),
        format!("SELECT lethe_audit_erase('{beta}', '[{{\"kind\":\"event\",\"id\":\"x\",\"metadata\":\"{{}}\"}}]')"),
    ];
    // Every function with NULLs, bad values and 1 MB strings on alpha's own memory.
    let malformed = [
        "SELECT lethe_memory_pin(NULL, true, 'user:x', '{}', '{}', NULL)".to_string(),
        format!("SELECT lethe_memory_pin('{alpha}', NULL, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_pin('{big}', true, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_pin('{alpha}', true, 'user:x', NULL, '{{}}', NULL)"),
        format!("SELECT lethe_memory_pin('{alpha}', true, 'user:x', '{{}}', '[]', NULL)"),
        format!("SELECT lethe_memory_pin('{alpha}', true, 'user:x', '{{\"a\":\"{big}\"}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_importance('{alpha}', NULL, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_importance('{alpha}', 1.5, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_importance('{alpha}', 'NaN', 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_count('{alpha}', NULL, 'agent:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_count('{alpha}', 'edit', 'agent:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_count('{alpha}', 'cite', 'agent:x', NULL, NULL, NULL)"),
        format!("SELECT lethe_memory_restore('{alpha}', 'agent:x', '{{}}', '{{}}', NULL)"),
        "SELECT lethe_memory_restore(NULL)".to_string(),
        format!("SELECT lethe_memory_quarantine('{alpha}', NULL, 'r', 'agent', 0.5, 30, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', NULL, 'agent', 0.5, 30, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', '{big}', 'agent', 0.5, 30, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', 'r', 'policy', 0.5, 30, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', 'r', 'forget-score', 0.5, 30, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', 'r', 'agent', 'NaN', 30, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', 'r', 'agent', 0.5, -1, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', 'r', 'agent', 0.5, NULL, NULL, NULL)"),
        format!("SELECT lethe_memory_quarantine('{alpha}', '{ev}', 'r', 'agent', 0.5, 30, '[1]', NULL)"),
        format!("SELECT lethe_memory_edit('{alpha}', NULL, NULL, 'agent:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_edit('{alpha}', '   ', NULL, 'agent:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_edit('{alpha}', '{big}', NULL, 'agent:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_edit('{alpha}', 'new text', NULL, 'agent:x', NULL, '{{}}', NULL)"),
        format!("SELECT lethe_memory_tags('{alpha}', NULL)"),
        format!("SELECT lethe_memory_tags('{alpha}', '[\"{big}\"]')"),
        format!("SELECT lethe_memory_tags('{alpha}', '{{\"a\":1}}')"),
        format!("SELECT lethe_memory_tags('{alpha}', '[1]')"),
        format!(
            "SELECT lethe_memory_procedure('{alpha}', 1, 'x', NULL, NULL, NULL, NULL, NULL, 'agent:x', NULL, NULL)"
        ),
        format!("SELECT lethe_memory_reflection('{alpha}', '[]')"),
        "SELECT lethe_memory_archive(NULL, NULL, '[]', 'agent:x', NULL, NULL)".to_string(),
        "SELECT lethe_memory_unarchive(NULL, 'agent:x', NULL, NULL)".to_string(),
        "SELECT lethe_memory_episodic(NULL, 'task', 'agent:x', NULL, NULL)".to_string(),
        format!("SELECT lethe_memory_redact('{alpha}', 'pinned', '1')"),
        format!("SELECT lethe_memory_redact('{alpha}', 'content', '{big}')"),
        format!("SELECT lethe_memory_redact('{alpha}', 'content', NULL)"),
        "SELECT lethe_audit_erase(NULL, '[]')".to_string(),
        format!("SELECT lethe_audit_erase('{alpha}', NULL)"),
        format!("SELECT lethe_audit_erase('{alpha}', '{big}')"),
        "SELECT lethe_recall_log_erase(NULL, NULL, NULL, NULL)".to_string(),
    ];
    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator), ("reader", &st.a_reader)] {
        let mut c = client(url);
        for (table, column) in FUNCTION_ONLY {
            refused(&mut c, who, &format!("UPDATE {table} SET {column} = {column}"));
            refused(&mut c, who, &format!("UPDATE {table} SET {column} = NULL WHERE team = 'alpha'"));
            refused(&mut c, who, &format!("DELETE FROM {table} WHERE team = 'alpha'"));
        }
        for sql in at_beta.iter().chain(malformed.iter()) {
            refused(&mut c, who, sql);
        }
    }
    // The team lead's operations are refused to the agent on its own team's memory.
    let mut agent = client(&st.a_agent);
    for sql in [
        format!("SELECT lethe_memory_pin('{alpha}', true, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_importance('{alpha}', 0.9, 'user:x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_memory_redact('{alpha}', 'content', 'redacted by an agent')"),
        format!("SELECT lethe_audit_erase('{alpha}', '[]')"),
        format!("SELECT lethe_recall_log_erase(1, '{alpha}', '{{\"query_erased\":true}}', '[]')"),
        "SELECT lethe_forget_chunk('[]', 30, 'run_0123456789abcdef0123456789abcdef', NULL)".to_string(),
    ] {
        refused(&mut agent, "agent", &sql);
    }
    // Forged dates give way to the server's clock; the event names the role.
    agent
        .batch_execute(&format!(
            "SELECT lethe_memory_count('{alpha}', 'cite', 'user:cb', '{{}}', '{{}}', '2000-01-01T00:00:00.000Z'); \
             SELECT lethe_memory_quarantine('{alpha}', '{ev}', 'r', 'agent', 0.5, 30, '{{\"actor\":\"user:cb\"}}', \
                 '2000-01-01T00:00:00.000Z')"
        ))
        .unwrap();
    let r = owner
        .query_one(
            "SELECT m.last_accessed, m.deleted_at, e.created_at, e.metadata_json::jsonb ->> 'actor', e.role \
             FROM memory_item m JOIN memory_forgetting_event e ON e.memory_id = m.id AND e.team = m.team \
             WHERE m.id = $1 AND m.team = 'alpha' AND e.id = $2",
            &[&alpha, &ev],
        )
        .unwrap();
    for i in 0..3 {
        let at: String = r.get(i);
        let at = chrono::DateTime::parse_from_rfc3339(&at).unwrap();
        assert!(at >= started, "column {i}: the server's clock, not 2000 ({at})");
    }
    assert_eq!(r.get::<_, String>(3), format!("agent:{}", st.names[0]), "the event's actor is the role");
    assert_eq!(r.get::<_, Option<String>>(4).as_deref(), Some(st.names[0].as_str()));
    let cite = owner
        .query_one(
            "SELECT actor, created_at FROM lethe_action WHERE memory_id = $1 AND team = 'alpha' AND action = 'cite' \
             ORDER BY id DESC LIMIT 1",
            &[&alpha],
        )
        .unwrap();
    assert_eq!(cite.get::<_, String>(0), format!("agent:{}", st.names[0]), "the cite's action names the role");
    let at = chrono::DateTime::parse_from_rfc3339(&cite.get::<_, String>(1)).unwrap();
    assert!(at >= started, "the cite's action is dated by the server ({at})");

    // Audit text: the team lead may only erase it, never write it.
    let mut curator = client(&st.a_curator);
    ok(&st.a_curator, &["importance", alpha, "0.8"]);
    let (action, before): (i64, String) = {
        let r = owner
            .query_one(
                "SELECT id, before_json FROM lethe_action WHERE memory_id = $1 AND team = 'alpha' \
                 AND before_json IS NOT NULL ORDER BY id DESC LIMIT 1",
                &[&alpha],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    let after: Option<String> =
        owner.query_one("SELECT after_json FROM lethe_action WHERE id = $1", &[&action]).unwrap().get(0);
    let row = |before: &str| {
        serde_json::json!([{"kind": "action", "id": action.to_string(), "before": before, "after": after}]).to_string()
    };
    let rewrite = |c: &mut postgres::Client, rows: &str| {
        c.query_one("SELECT lethe_audit_erase($1, $2)", &[&alpha, &rows]).map(|r| r.get::<_, i64>(0))
    };
    let mut forged: serde_json::Value = serde_json::from_str(&before).unwrap();
    forged["importance"] = serde_json::json!(0.123);
    assert!(rewrite(&mut curator, &row(&forged.to_string())).is_err(), "a new value that is not an erasure is refused");
    forged["importance"] = serde_json::json!("the memory was never important");
    assert!(rewrite(&mut curator, &row(&forged.to_string())).is_err(), "no text can be written");
    assert!(
        rewrite(&mut curator, &row(r#"{"content_preview":"planted"}"#)).is_err(),
        "keys cannot be dropped or added"
    );
    let mut erased: serde_json::Value = serde_json::from_str(&before).unwrap();
    erased["content_preview"] = serde_json::json!({"erased_bytes": 10});
    let rows = row(&erased.to_string());
    assert_eq!(rewrite(&mut curator, &rows).unwrap(), 1, "the erased form is accepted");

    assert_eq!(team_rows(&st.owner, "beta"), beta_before, "every row of team beta is as it was");
}

/// A store set up before the write functions (schema 10: column UPDATE rights for Lethe's
/// roles, the batch's function open to agents) is migrated by `admin setup`: every row of
/// every team kept, the rights gone, every role working through the functions.
#[test]
fn a_store_with_update_rights_is_migrated_to_functions_and_keeps_every_row() {
    let Some(st) = store() else { return };
    let mut owner = client(&st.owner);
    owner
        .batch_execute(
            "GRANT UPDATE (type, content, privacy_scope, last_accessed, tags, source, view_count, cite_count, \
                 edit_count, task_goal, steps, reflection_notes, workflow_name, skill_name, trigger_conditions, \
                 version, owner_id, session_id, project_id, is_deleted, deleted_at) ON memory_item TO lethe_agent; \
             GRANT UPDATE (pinned, importance) ON memory_item TO lethe_curator; \
             GRANT UPDATE (restored_at) ON lethe_archive TO lethe_agent; \
             GRANT UPDATE (query, context_json, results_json) ON lethe_recall_log TO lethe_agent; \
             GRANT UPDATE (before_json, after_json) ON lethe_action TO lethe_curator; \
             GRANT UPDATE (metadata_json) ON memory_forgetting_event TO lethe_curator; \
             GRANT UPDATE (snapshot_json) ON lethe_procedure_version TO lethe_curator; \
             GRANT EXECUTE ON FUNCTION lethe_forget_chunk(text, bigint, text, text) TO lethe_agent; \
             DELETE FROM lethe_schema WHERE version = 11;",
        )
        .unwrap();
    let id = st.alpha_ids[0].as_str();
    let old_model = format!("BEGIN; UPDATE memory_item SET content = 'by psql' WHERE id = '{id}'; ROLLBACK");
    client(&st.a_agent).batch_execute(&old_model).expect("the old model let an agent update a memory");
    let (alpha, beta) = (team_rows(&st.owner, "alpha"), team_rows(&st.owner, "beta"));
    let roles: i64 = owner.query_one("SELECT COUNT(*) FROM lethe_team_member", &[]).unwrap().get(0);

    let v = ok(&st.owner, &["admin", "setup"]);
    assert_eq!(v["applied"], serde_json::json!(["011_write_functions"]), "{v}");
    assert_eq!(team_rows(&st.owner, "alpha"), alpha, "every row of alpha is kept");
    assert_eq!(team_rows(&st.owner, "beta"), beta, "every row of beta is kept");
    assert_eq!(owner.query_one("SELECT COUNT(*) FROM lethe_team_member", &[]).unwrap().get::<_, i64>(0), roles);
    refused(&mut client(&st.a_agent), "agent", &old_model);
    refused(
        &mut client(&st.a_curator),
        "curator",
        &format!("UPDATE lethe_action SET before_json = '{{}}' WHERE memory_id = '{id}'"),
    );
    refused(
        &mut client(&st.a_agent),
        "agent",
        "SELECT lethe_forget_chunk('[]', 30, 'run_0123456789abcdef0123456789abcdef', NULL)",
    );
    // Every role works through the functions.
    let v = ok(&st.a_agent, &["edit", id, "--content", "Alpha's launch codename is Bluefin, after the migration."]);
    assert_eq!(v["version"], 2, "{v}");
    ok(&st.a_agent, &["cite", id]);
    ok(&st.a_curator, &["pin", id]);
    ok(&st.a_agent, &["delete", &st.alpha_ids[1], "--reason", "stale"]);
    ok(&st.a_agent, &["restore", &st.alpha_ids[1]]);
    ok(&st.a_curator, &["forget"]);
}

/// New memories and audit actions: no Lethe role inserts them directly; the server's
/// functions check every row as the engine does (NULLs, ranges, dates, sizes, another team's
/// ids), name the role and stamp the server's clock whatever actor and date they are given;
/// every row of the other team is byte-identical afterwards.
#[test]
fn memories_and_actions_are_inserted_only_through_functions_that_hold_every_rule() {
    let Some(st) = store() else { return };
    let beta_before = team_rows(&st.owner, "beta");
    let started = chrono::Utc::now() - chrono::Duration::seconds(5);
    let (alpha, beta) = (st.alpha_ids[0].as_str(), st.beta_ids[1].as_str());
    let big = "x".repeat((1 << 20) + 1);
    let row = |extra: serde_json::Value| {
        let mut r = serde_json::json!({"id": format!("mem_{}", uuid::Uuid::new_v4()), "type": "semantic",
            "content": "a valid memory", "created_at": "2026-01-01T00:00:00.000Z"});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        serde_json::json!([r]).to_string()
    };
    let insert = |c: &mut postgres::Client, rows: &str| c.query("SELECT lethe_memory_insert($1, NULL, NULL)", &[&rows]);
    let malformed_rows = [
        "{}".to_string(),
        "not json".to_string(),
        row(serde_json::json!({"id": null})),
        row(serde_json::json!({"id": "x".repeat(201)})),
        row(serde_json::json!({"type": "core"})),
        row(serde_json::json!({"type": null})),
        row(serde_json::json!({"content": null})),
        row(serde_json::json!({"content": " \n "})),
        row(serde_json::json!({"content": big})),
        row(serde_json::json!({"importance": 1.5})),
        row(serde_json::json!({"importance": -0.1})),
        row(serde_json::json!({"created_at": null})),
        row(serde_json::json!({"created_at": "9999-01-01T00:00:00.000Z"})),
        row(serde_json::json!({"created_at": "yesterday"})),
        row(serde_json::json!({"last_accessed": "9999-01-01T00:00:00.000Z"})),
        row(serde_json::json!({"tags": "[1]"})),
        row(serde_json::json!({"tags": format!("[\"{big}\"]")})),
        row(serde_json::json!({"view_count": -1})),
        row(serde_json::json!({"version": 0})),
        row(serde_json::json!({"is_deleted": 7})),
        row(serde_json::json!({"source": big})),
        row(serde_json::json!({"steps": "not json"})),
        row(serde_json::json!({"privacy_scope": big})),
        row(serde_json::json!({"remember": {"type": "episodic", "preview": "a valid memory"}})),
        row(serde_json::json!({"remember": {"type": "semantic", "preview": "a forged preview"}})),
        row(serde_json::json!({"remember": {"type": "semantic", "preview": "a valid", "actor": "user:cb"}})),
    ];
    let malformed_actions = [
        "SELECT lethe_action_record(NULL, NULL, 'x', NULL, NULL, NULL)".to_string(),
        "SELECT lethe_action_record(NULL, 'Not A Word!', 'x', NULL, NULL, NULL)".to_string(),
        "SELECT lethe_action_record(NULL, 'note', NULL, NULL, NULL, NULL)".to_string(),
        format!("SELECT lethe_action_record(NULL, 'note', '{big}', NULL, NULL, NULL)"),
        "SELECT lethe_action_record(NULL, 'note', 'x', 'not json', NULL, NULL)".to_string(),
        format!("SELECT lethe_action_record('{beta}', 'note', 'x', NULL, NULL, NULL)"),
        format!("SELECT lethe_action_record('{big}', 'note', 'x', NULL, NULL, NULL)"),
        format!("SELECT lethe_action_record('{alpha}', 'remember', 'x', NULL, '{{}}', NULL)"),
        format!("SELECT lethe_action_record('{alpha}', 'pin', 'x', NULL, '{{}}', NULL)"),
        format!("SELECT lethe_action_record('{alpha}', 'archive', 'x', NULL, '{{\"archive_no\":1}}', NULL)"),
        format!("SELECT lethe_action_record('{alpha}', 'unarchive', 'x', NULL, '{{}}', NULL)"),
        format!("SELECT lethe_action_record('{alpha}', 'procedure_update', 'x', '{{}}', '{{}}', NULL)"),
        format!("SELECT lethe_action_record('{alpha}', 'task_log', 'x', '{{}}', '{{}}', NULL)"),
        "SELECT lethe_action_push(NULL)".to_string(),
        "SELECT lethe_action_push('[[null, \"Bad!\", \"x\", null, null, \"2026-01-01T00:00:00.000Z\"]]')".to_string(),
        format!("SELECT lethe_action_push('[[null, \"note\", \"{big}\", null, null, null]]')"),
        "SELECT lethe_action_push('[[null, \"note\", \"x\", \"not json\", null, null]]')".to_string(),
    ];
    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator), ("reader", &st.a_reader)] {
        let mut c = client(url);
        for table in ["memory_item", "lethe_action"] {
            refused(&mut c, who, &format!("INSERT INTO {table} SELECT * FROM {table} LIMIT 1"));
        }
        refused(
            &mut c,
            who,
            "INSERT INTO memory_item (id, type, content, created_at) VALUES ('mem_raw', 'semantic', 'raw', '2026-01-01T00:00:00.000Z')",
        );
        refused(
            &mut c,
            who,
            "INSERT INTO lethe_action (memory_id, action, actor, created_at) VALUES (NULL, 'note', 'user:cb', '2000-01-01T00:00:00.000Z')",
        );
        for rows in &malformed_rows {
            assert!(insert(&mut c, rows).is_err(), "{who}: must be refused: {}", &rows[..rows.len().min(200)]);
        }
        for sql in &malformed_actions {
            refused(&mut c, who, sql);
        }
    }
    // A reader writes nothing, even a valid row; an agent neither pins nor pushes audit rows.
    assert!(insert(&mut client(&st.a_reader), &row(serde_json::json!({}))).is_err());
    assert!(insert(&mut client(&st.a_agent), &row(serde_json::json!({"pinned": 1}))).is_err());
    refused(
        &mut client(&st.a_agent),
        "agent",
        "SELECT lethe_action_push('[[null, \"note\", \"user:cb\", null, null, \"2026-01-01T00:00:00.000Z\"]]')",
    );

    // What is accepted is the caller's team's, named by the role, dated by the server.
    let mut agent = client(&st.a_agent);
    let planted = format!("mem_{}", uuid::Uuid::new_v4());
    let rows =
        serde_json::json!([{"id": planted, "type": "semantic", "content": "Alpha's  planted\nmemory, in quarantine",
        "created_at": "2000-01-01T00:00:00.000Z", "is_deleted": 1, "deleted_at": "2000-01-01T00:00:00.000Z",
        "team": "beta", "view_count": 3, "remember": {"type": "semantic", "preview": "Alpha's planted memory, in…"}}])
        .to_string();
    let stored =
        agent.query("SELECT lethe_memory_insert($1, 'user:cb', '2000-01-01T00:00:00.000Z')", &[&rows]).unwrap().len();
    assert_eq!(stored, 1);
    agent
        .batch_execute(&format!(
            "SELECT lethe_action_record('{alpha}', 'note', 'user:cb', NULL, '{{}}', '2000-01-01T00:00:00.000Z')"
        ))
        .unwrap();
    let mut curator = client(&st.a_curator);
    curator
        .batch_execute(
            "SELECT lethe_action_push('[[null, \"note\", \"user:cb\", null, null, \"9999-01-01T00:00:00.000Z\"]]')",
        )
        .unwrap();
    // An archive's action is the server's: its receipt comes from the archive row; a redacted
    // span that carries anything but its place and kind is refused.
    let tool = ok(
        &st.a_agent,
        &[
            "remember",
            "--type",
            "episodic",
            "--source",
            "tool",
            "--content",
            "tool output: 12 lines of alpha's build log",
        ],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let no: i64 = agent
        .query_one(
            "SELECT lethe_archive_insert($1, 'alpha build log', 'agent:x', '2026-01-01T00:00:00.000Z')",
            &[&tool],
        )
        .unwrap()
        .get(0);
    let placeholder = format!("[Archive#{no}: alpha build log]");
    let archive = |c: &mut postgres::Client, redacted: &str| {
        c.query_one(
            "SELECT lethe_memory_archive($1, $2, $3, 'user:cb', NULL, '2000-01-01T00:00:00.000Z')",
            &[&no, &placeholder, &redacted],
        )
    };
    assert!(archive(&mut agent, r#"[{"kind":"api_key","value":"sk-live-123"}]"#).is_err(), "a span holds no value");
    assert!(archive(&mut agent, r#"[{"kind":"api_key","start":"the secret"}]"#).is_err(), "a span's place is a number");
    archive(&mut agent, r#"[{"field":"memo","kind":"api_key","start":0,"end":4,"action":"redacted"}]"#).unwrap();
    let mut owner = client(&st.owner);
    let r = owner
        .query_one(
            "SELECT actor, created_at, after_json FROM lethe_action WHERE memory_id = $1 AND action = 'archive'",
            &[&tool],
        )
        .unwrap();
    assert_eq!(r.get::<_, String>(0), format!("agent:{}", st.names[0]));
    assert!(chrono::DateTime::parse_from_rfc3339(&r.get::<_, String>(1)).unwrap() >= started);
    let receipt: serde_json::Value = serde_json::from_str(&r.get::<_, String>(2)).unwrap();
    let bytes = "tool output: 12 lines of alpha's build log".len() as i64;
    assert_eq!(
        (
            receipt["archive_no"].as_i64(),
            receipt["memory_id"].as_str(),
            receipt["bytes"].as_i64(),
            receipt["memo"].as_str()
        ),
        (Some(no), Some(tool.as_str()), Some(bytes), Some(placeholder.as_str())),
        "{receipt}"
    );
    assert_eq!(receipt["bytes_saved"].as_i64(), Some(bytes - placeholder.len() as i64));
    // A procedure's swap and a session's end called by hand: their actions' states are the
    // row's, the actor the role, the time the server's.
    let agent_actor = format!("agent:{}", st.names[0]);
    let procedure = ok(
        &st.a_agent,
        &["remember", "--type", "procedural", "--content", "ship alpha", "--steps", r#"["build","ship"]"#],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let working = ok(
        &st.a_agent,
        &["remember", "--type", "working", "--session", "s-alpha", "--content", "Alpha's scratch: the build is green."],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    agent
        .batch_execute(&format!(
            "SELECT lethe_memory_procedure('{procedure}', 1, NULL, 'ship alpha safely', NULL, NULL, NULL, NULL, 'user:cb', \
                 NULL, '2000-01-01T00:00:00.000Z'); \
             SELECT lethe_memory_episodic('{working}', 'release', 'user:cb', NULL, '2000-01-01T00:00:00.000Z')"
        ))
        .unwrap();
    for (memory, action, before, after) in [
        (procedure.as_str(), "procedure_update", serde_json::json!(null), serde_json::json!("ship alpha safely")),
        (working.as_str(), "task_log", serde_json::json!("working"), serde_json::json!("episodic")),
    ] {
        let r = owner
            .query_one(
                "SELECT actor, created_at, before_json, after_json FROM lethe_action WHERE memory_id = $1 AND action = $2",
                &[&memory, &action],
            )
            .unwrap();
        assert_eq!(r.get::<_, String>(0), agent_actor, "{action}: the role is the actor");
        assert!(chrono::DateTime::parse_from_rfc3339(&r.get::<_, String>(1)).unwrap() >= started, "{action}");
        let b: serde_json::Value = serde_json::from_str(&r.get::<_, String>(2)).unwrap();
        let a: serde_json::Value = serde_json::from_str(&r.get::<_, String>(3)).unwrap();
        if action == "procedure_update" {
            assert_eq!((b["task_goal"].clone(), a["task_goal"].clone()), (before, after), "{b} {a}");
            assert_eq!(a["steps"], serde_json::json!(["build", "ship"]), "{a}");
        } else {
            assert_eq!((b["type"].clone(), a["type"].clone()), (before, after), "{b} {a}");
            assert_eq!((a["session_id"].as_str(), a["task_kind"].as_str()), (Some("s-alpha"), Some("release")), "{a}");
        }
    }
    let m = owner
        .query_one("SELECT team, deleted_at, created_at, view_count FROM memory_item WHERE id = $1", &[&planted])
        .unwrap();
    assert_eq!(m.get::<_, String>(0), "alpha", "a row is the caller's team's, whatever it names");
    let deleted_at = chrono::DateTime::parse_from_rfc3339(&m.get::<_, String>(1)).unwrap();
    assert!(deleted_at >= started, "the quarantine starts at the server's clock, not 2000 ({deleted_at})");
    assert_eq!(m.get::<_, String>(2), "2000-01-01T00:00:00.000Z", "a memory may be dated back (remember's backdating)");
    assert_eq!(m.get::<_, i64>(3), 3);
    for (memory, action, actor) in
        [(planted.as_str(), "remember", agent_actor.clone()), (alpha, "note", agent_actor.clone())]
    {
        let r = owner
            .query_one(
                "SELECT actor, created_at, team FROM lethe_action WHERE memory_id = $1 AND action = $2 ORDER BY id DESC LIMIT 1",
                &[&memory, &action],
            )
            .unwrap();
        assert_eq!(r.get::<_, String>(0), actor, "{action}: the role is the actor");
        let at = chrono::DateTime::parse_from_rfc3339(&r.get::<_, String>(1)).unwrap();
        assert!(at >= started, "{action}: dated by the server ({at})");
        assert_eq!(r.get::<_, String>(2), "alpha");
    }
    let r = owner
        .query_one(
            "SELECT actor, created_at FROM lethe_action WHERE memory_id IS NULL AND action = 'note' AND team = 'alpha' \
             AND actor LIKE 'pushed:%' ORDER BY id DESC LIMIT 1",
            &[],
        )
        .unwrap();
    assert_eq!(r.get::<_, String>(0), "pushed:user:cb", "a pushed row names the file's actor as pushed");
    let at = chrono::DateTime::parse_from_rfc3339(&r.get::<_, String>(1)).unwrap();
    assert!(at <= chrono::Utc::now() + chrono::Duration::seconds(5), "no pushed date after the server's clock ({at})");

    assert_eq!(team_rows(&st.owner, "beta"), beta_before, "every row of team beta is as it was");
}

/// A store set up before the insert functions (schema 11: INSERT rights on memories and the
/// audit for Lethe's roles) is migrated by `admin setup`: every row of every team and every
/// role kept, the rights gone, remember, import and push working through the functions.
#[test]
fn a_store_with_insert_rights_is_migrated_to_functions_and_keeps_every_row() {
    let Some(st) = store() else { return };
    let mut owner = client(&st.owner);
    owner
        .batch_execute(
            "GRANT INSERT (id, type, content, importance, privacy_scope, created_at, last_accessed, pinned, tags, \
                 source, view_count, cite_count, edit_count, task_goal, steps, reflection_notes, workflow_name, \
                 skill_name, trigger_conditions, version, owner_id, session_id, project_id, is_deleted, deleted_at, \
                 team) ON memory_item TO lethe_agent; \
             GRANT INSERT (id, memory_id, action, actor, before_json, after_json, created_at, team) \
                 ON lethe_action TO lethe_agent; \
             DELETE FROM lethe_schema WHERE version = 12;",
        )
        .unwrap();
    let old_model = "BEGIN; INSERT INTO memory_item (id, type, content, created_at) \
                     VALUES ('mem_by_psql', 'semantic', 'by psql', '2026-01-01T00:00:00.000Z'); ROLLBACK";
    client(&st.a_agent).batch_execute(old_model).expect("the old model let an agent insert a memory");
    let (alpha, beta) = (team_rows(&st.owner, "alpha"), team_rows(&st.owner, "beta"));
    let roles: i64 = owner.query_one("SELECT COUNT(*) FROM lethe_team_member", &[]).unwrap().get(0);

    let v = ok(&st.owner, &["admin", "setup"]);
    assert_eq!(v["applied"], serde_json::json!(["012_insert_functions"]), "{v}");
    assert_eq!(team_rows(&st.owner, "alpha"), alpha, "every row of alpha is kept");
    assert_eq!(team_rows(&st.owner, "beta"), beta, "every row of beta is kept");
    assert_eq!(owner.query_one("SELECT COUNT(*) FROM lethe_team_member", &[]).unwrap().get::<_, i64>(0), roles);
    refused(&mut client(&st.a_agent), "agent", old_model);
    refused(
        &mut client(&st.a_agent),
        "agent",
        "INSERT INTO lethe_action (memory_id, action, actor, created_at) VALUES (NULL, 'note', 'x', '2026-01-01T00:00:00.000Z')",
    );
    // Every role works through the functions: remember (one and a group), import, the audit.
    let v = ok(&st.a_agent, &["remember", "--type", "semantic", "--content", "Alpha's pager rota is weekly."]);
    let id = v["id"].as_str().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("lethe-migrate-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("in.jsonl");
    std::fs::write(&file, "{\"type\":\"semantic\",\"content\":\"Alpha imports its runbook index.\"}\n").unwrap();
    let v = ok(&st.a_agent, &["import", file.to_str().unwrap()]);
    assert_eq!(v["imported"], 1, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
    let r = owner
        .query_one("SELECT actor, team FROM lethe_action WHERE memory_id = $1 AND action = 'remember'", &[&id])
        .unwrap();
    assert_eq!(r.get::<_, String>(0), format!("agent:{}", st.names[0]));
    assert_eq!(r.get::<_, String>(1), "alpha");
    ok(&st.a_curator, &["pin", &id]);
    ok(&st.a_curator, &["forget"]);
}

/// Every table right other than SELECT a Lethe role (the groups and every login role in them)
/// holds, from the catalog: (role, table, right), table and column rights alike.
fn write_rights(owner: &str) -> Vec<(String, String, String)> {
    let mut c = client(owner);
    c.query(
        "WITH acl AS (
             SELECT c.relname, a.grantee, a.privilege_type FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
             UNION
             SELECT c.relname, a.grantee, a.privilege_type FROM pg_class c
             JOIN pg_attribute x ON x.attrelid = c.oid AND x.attnum > 0 AND NOT x.attisdropped
             CROSS JOIN LATERAL aclexplode(x.attacl) a
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S'))
         SELECT DISTINCT COALESCE(g.rolname::text, 'PUBLIC'), acl.relname::text, acl.privilege_type::text
         FROM acl LEFT JOIN pg_roles g ON g.oid = acl.grantee
         WHERE acl.privilege_type <> 'SELECT'
           AND (acl.grantee = 0 OR g.rolname IN ('lethe_reader', 'lethe_agent', 'lethe_curator')
                OR (NOT g.rolsuper AND pg_has_role(g.oid, 'lethe_reader', 'MEMBER')))
         ORDER BY 1, 2, 3",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .collect()
}

/// The records of a team (forgetting events, the recall log and its hits, supersede links,
/// archives, procedure versions, the review band, ended sessions, task logs, session rules,
/// dismissed pairs) are written only by functions: no Lethe role inserts into them, every
/// right but SELECT is gone from the catalog but on the derived rows, and each function
/// called with another team's ids, forged actors, past and future dates, NULLs and 1 MiB
/// strings refuses them or stores the role, the server's clock and the caller's team.
#[test]
fn records_are_written_only_through_functions_that_hold_every_rule() {
    let Some(st) = store() else { return };
    let started = chrono::Utc::now() - chrono::Duration::seconds(5);
    let records = [
        "memory_forgetting_event",
        "lethe_recall_log",
        "lethe_recall_log_hit",
        "lethe_supersede",
        "lethe_archive",
        "lethe_procedure_version",
        "lethe_review",
        "lethe_session_end",
        "lethe_task_log",
        "lethe_session_rule",
        "lethe_dismissed_pair",
    ];
    // From the catalog: no Lethe role (nor PUBLIC) holds any right but SELECT on any table.
    let rights = write_rights(&st.owner);
    assert!(rights.is_empty(), "rights a Lethe role must not hold: {rights:?}");

    let (alpha, alpha2) = (st.alpha_ids[0].clone(), st.alpha_ids[1].clone());
    let beta = st.beta_ids[1].clone();
    let beta_before = team_rows(&st.owner, "beta");
    for (who, url) in [("agent", &st.a_agent), ("curator", &st.a_curator), ("reader", &st.a_reader)] {
        let mut c = client(url);
        for t in records {
            refused(&mut c, who, &format!("INSERT INTO {t} SELECT * FROM {t} LIMIT 1"));
        }
        refused(
            &mut c,
            who,
            &format!(
                "INSERT INTO memory_forgetting_event (id, memory_id, action, created_at, metadata_json) \
                 VALUES ('fev_x', '{alpha}', 'soft', '2000-01-01T00:00:00.000Z', '{{\"actor\":\"policy\"}}')"
            ),
        );
        refused(
            &mut c,
            who,
            "INSERT INTO lethe_recall_log (actor, at, query, context_json, results_json) \
             VALUES ('user:cb', '2000-01-01T00:00:00.000Z', 'q', '{}', '[]')",
        );
        refused(&mut c, who, &format!("UPDATE lethe_recall_log_hit SET score = 99 WHERE memory_id = '{alpha}'"));
        refused(
            &mut c,
            who,
            &format!(
                "INSERT INTO lethe_supersede (old_id, new_id, actor, created_at) \
                 VALUES ('{alpha}', '{alpha2}', 'user:cb', '2000-01-01T00:00:00.000Z')"
            ),
        );
    }

    let big = "x".repeat((1 << 20) + 1);
    let ev = || format!("fev_{}", uuid::Uuid::new_v4());
    // Calls each role must be refused, whatever their arguments say.
    let mut agent = client(&st.a_agent);
    let mut curator = client(&st.a_curator);
    let mut reader = client(&st.a_reader);
    let for_every_writer = [
        "SELECT lethe_recall_log_append('x', NULL, NULL, '{}', '[]')".to_string(),
        format!("SELECT lethe_recall_log_append('x', NULL, '{big}', '{{}}', '[]')"),
        "SELECT lethe_recall_log_append('x', NULL, 'q', '[]', '[]')".to_string(),
        "SELECT lethe_recall_log_append('x', NULL, 'q', '{}', '[{\"id\":\"a\"}]')".to_string(),
        "SELECT lethe_recall_log_append('x', NULL, 'q', '{}', '[{\"id\":\"a\",\"score\":1e300}]')".to_string(),
        "SELECT lethe_recall_log_append('x', NULL, 'q', '{}', 'not json')".to_string(),
        format!("SELECT lethe_supersede_link('{alpha}', '{beta}', 'x', NULL, NULL)"),
        format!("SELECT lethe_supersede_link('{beta}', '{alpha}', 'x', NULL, NULL)"),
        format!("SELECT lethe_supersede_link('{alpha}', '{alpha}', 'x', NULL, NULL)"),
        format!("SELECT lethe_supersede_link(NULL, '{alpha}', 'x', NULL, NULL)"),
        format!("SELECT lethe_supersede_link('{alpha}', '{alpha2}', 'x', 'the moon', NULL)"),
        format!(
            "SELECT lethe_pair_dismiss(LEAST('{alpha}', '{beta}'), GREATEST('{alpha}', '{beta}'), 'x', NULL, NULL)"
        ),
        format!(
            "SELECT lethe_pair_dismiss(GREATEST('{alpha}', '{alpha2}'), LEAST('{alpha}', '{alpha2}'), 'x', NULL, NULL)"
        ),
        format!("SELECT lethe_pair_dismiss(NULL, '{alpha}', 'x', NULL, NULL)"),
        format!("SELECT lethe_archive_insert('{beta}', 'memo', 'x', NULL)"),
        format!("SELECT lethe_archive_insert('{alpha}', 'memo', 'x', NULL)"),
        format!("SELECT lethe_archive_insert('{big}', 'memo', 'x', NULL)"),
        format!("SELECT lethe_session_rule_add('{alpha}', 's-other', NULL)"),
        format!("SELECT lethe_session_rule_add('{beta}', 's-other', NULL)"),
        "SELECT lethe_session_rule_add(NULL, NULL, NULL)".to_string(),
        "SELECT lethe_session_end_record('s1', 'k', '{\"session_id\":\"s2\",\"task_kind\":\"k\"}', 'x', NULL, NULL)"
            .to_string(),
        "SELECT lethe_session_end_record(NULL, 'k', '{}', 'x', NULL, NULL)".to_string(),
        format!("SELECT lethe_session_end_record('s1', '{big}', '{{}}', 'x', NULL, NULL)"),
        "SELECT lethe_session_end_record('s1', 'k', 'not json', 'x', NULL, NULL)".to_string(),
        format!("SELECT lethe_action_record('{alpha}', 'superseded', 'x', NULL, '{{}}', NULL)"),
        format!("SELECT lethe_action_record('{alpha}', 'keep_both', 'x', NULL, '{{}}', NULL)"),
        "SELECT lethe_action_record(NULL, 'end_session', 'x', NULL, '{}', NULL)".to_string(),
    ];
    let for_agents_and_readers = [
        format!("SELECT lethe_memory_erase('{alpha}', '{}', 'gone', 'manual', 'user:cb', NULL, NULL)", ev()),
        format!("SELECT lethe_hard_delete_rows('{alpha}')"),
        "SELECT lethe_push_rows('lethe_review', '[]')".to_string(),
        "SELECT lethe_push_archive('x', 'memo', '\\x00', 'x', NULL, NULL)".to_string(),
    ];
    let for_the_curator = [
        format!("SELECT lethe_memory_erase('{alpha}', 'fev_bad', 'gone', 'manual', 'x', NULL, NULL)"),
        format!("SELECT lethe_memory_erase('{alpha}', '{}', NULL, 'manual', 'x', NULL, NULL)", ev()),
        format!("SELECT lethe_memory_erase('{alpha}', '{}', '{big}', 'manual', 'x', NULL, NULL)", ev()),
        format!("SELECT lethe_memory_erase('{big}', '{}', 'gone', 'manual', 'x', NULL, NULL)", ev()),
        format!("SELECT lethe_hard_delete_rows('{alpha}')"),
        "SELECT lethe_push_rows('lethe_action', '[[1]]')".to_string(),
        "SELECT lethe_push_rows('lethe_review', 'not json')".to_string(),
        format!("SELECT lethe_push_rows('lethe_review', '[[\"{beta}\", null]]')"),
        format!("SELECT lethe_push_rows('lethe_supersede', '[[\"{alpha}\", \"{beta}\", \"x\", null]]')"),
        format!("SELECT lethe_push_rows('lethe_task_log', '[[\"{alpha}\", \"{big}\", \"k\", null]]')"),
        format!("SELECT lethe_push_rows('memory_forgetting_event', '[[\"not an id\", \"{alpha}\", \"soft\"]]')"),
        format!("SELECT lethe_push_rows('memory_forgetting_event', '[[\"fev_1\", \"{alpha}\", \"purge\"]]')"),
        "SELECT lethe_push_archive(NULL, 'memo', '\\x00', 'x', NULL, NULL)".to_string(),
    ];
    for (who, c) in [("agent", &mut agent), ("curator", &mut curator), ("reader", &mut reader)] {
        for sql in &for_every_writer {
            refused(c, who, sql);
        }
    }
    for (who, c) in [("agent", &mut agent), ("reader", &mut reader)] {
        for sql in &for_agents_and_readers {
            refused(c, who, sql);
        }
    }
    for sql in &for_the_curator {
        refused(&mut curator, "curator", sql);
    }
    // Another team's memory is not erased, and the answer is that of an unknown id.
    for id in [beta.as_str(), "mem_nobody"] {
        let n: i64 = curator
            .query_one("SELECT lethe_memory_erase($1, $2, 'gone', 'manual', 'user:cb', NULL, NULL)", &[&id, &ev()])
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "{id}");
    }

    // What is accepted names the role, carries the server's clock and lands in the caller's
    // team, whatever the arguments claim.
    let agent_actor = format!("agent:{}", st.names[0]);
    let curator_actor = format!("user:{}", st.names[1]);
    let log: i64 = agent
        .query_one(
            "SELECT lethe_recall_log_append('user:cb', '2000-01-01T00:00:00.000Z', 'forged', '{}', $1)",
            &[&format!(
                r#"[{{"id":"{alpha}","score":0.5}},{{"id":"{beta}","score":0.9}},{{"id":"{alpha}","score":0.7}}]"#
            )],
        )
        .unwrap()
        .get(0);
    agent
        .batch_execute(&format!(
            "SELECT lethe_supersede_link('{alpha}', '{alpha2}', 'user:cb', NULL, '2000-01-01T00:00:00.000Z'); \
             SELECT lethe_pair_dismiss(LEAST('{alpha}', '{alpha2}'), GREATEST('{alpha}', '{alpha2}'), 'user:cb', \
                 'window', '2000-01-01T00:00:00.000Z')"
        ))
        .unwrap();
    let again: i64 = agent
        .query_one(
            &format!(
                "SELECT lethe_pair_dismiss(LEAST('{alpha}', '{alpha2}'), GREATEST('{alpha}', '{alpha2}'), 'x', NULL, NULL)"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(again, 0, "a pair is dismissed once");
    let tool = ok(
        &st.a_agent,
        &["remember", "--type", "episodic", "--source", "tool", "--content", "tool output: alpha's 12-line log"],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let no: i64 = agent
        .query_one("SELECT lethe_archive_insert($1, 'alpha log', 'user:cb', '2000-01-01T00:00:00.000Z')", &[&tool])
        .unwrap()
        .get(0);
    refused(&mut agent, "agent", &format!("SELECT lethe_archive_insert('{tool}', 'twice', 'x', NULL)"));
    curator
        .batch_execute(&format!(
            "SELECT lethe_push_rows('memory_forgetting_event', \
                 '[[\"fev_pushed1\", \"{alpha}\", \"review\", \"r\", \"review-band\", 0.5, null, \"9999-01-01T00:00:00.000Z\", \
                    \"{{\\\"actor\\\":\\\"user:cb\\\"}}\"]]'); \
             SELECT lethe_push_rows('lethe_review', '[[\"{alpha2}\", \"9999-01-01T00:00:00.000Z\"]]')"
        ))
        .unwrap();
    let doomed = ok(&st.a_agent, &["remember", "--type", "semantic", "--content", "Alpha's old pager number."])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let erased: i64 = curator
        .query_one(
            "SELECT lethe_memory_erase($1, $2, 'gone', 'quarantine-expired', 'policy', NULL, '2000-01-01T00:00:00.000Z')",
            &[&doomed, &ev()],
        )
        .unwrap()
        .get(0);
    assert_eq!(erased, 1);

    let mut owner = client(&st.owner);
    let at = |s: String| chrono::DateTime::parse_from_rfc3339(&s).unwrap();
    let r = owner.query_one("SELECT actor, at, team FROM lethe_recall_log WHERE id = $1", &[&log]).unwrap();
    assert_eq!(r.get::<_, String>(0), agent_actor);
    assert!(at(r.get(1)) >= started, "the log is dated by the server");
    assert_eq!(r.get::<_, String>(2), "alpha");
    let hits: Vec<(String, f64)> = owner
        .query("SELECT memory_id, score FROM lethe_recall_log_hit WHERE log_id = $1", &[&log])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(hits, vec![(alpha.clone(), 0.7)], "the team's memories only, the last score of each");
    for table in ["lethe_supersede", "lethe_dismissed_pair"] {
        let r =
            owner.query_one(&format!("SELECT actor, created_at, team FROM {table} WHERE team = 'alpha'"), &[]).unwrap();
        assert_eq!(r.get::<_, String>(0), agent_actor, "{table}");
        assert!(at(r.get(1)) >= started, "{table}: dated by the server");
    }
    for action in ["superseded", "keep_both"] {
        let r = owner
            .query_one(
                "SELECT actor, created_at, team FROM lethe_action WHERE memory_id = $1 AND action = $2",
                &[&alpha, &action],
            )
            .unwrap();
        assert_eq!(r.get::<_, String>(0), agent_actor, "{action}");
        assert!(at(r.get(1)) >= started, "{action}");
        assert_eq!(r.get::<_, String>(2), "alpha");
    }
    let r = owner
        .query_one("SELECT actor, archived_at, original, bytes FROM lethe_archive WHERE archive_no = $1", &[&no])
        .unwrap();
    assert_eq!(r.get::<_, String>(0), agent_actor);
    assert!(at(r.get(1)) >= started);
    assert_eq!(
        r.get::<_, Vec<u8>>(2),
        b"tool output: alpha's 12-line log".to_vec(),
        "the original is the memory's text"
    );
    assert_eq!(r.get::<_, i64>(3), 32);
    let r = owner
        .query_one("SELECT created_at, metadata_json FROM memory_forgetting_event WHERE id = 'fev_pushed1'", &[])
        .unwrap();
    assert!(at(r.get(0)) <= chrono::Utc::now() + chrono::Duration::seconds(5), "no pushed date after now");
    let meta: serde_json::Value = serde_json::from_str(&r.get::<_, String>(1)).unwrap();
    assert_eq!(meta["actor"], "pushed:user:cb");
    let r = owner
        .query_one(
            "SELECT created_at, metadata_json FROM memory_forgetting_event WHERE memory_id = $1 AND action = 'hard'",
            &[&doomed],
        )
        .unwrap();
    assert!(at(r.get(0)) >= started, "the hard event is dated by the server");
    let meta: serde_json::Value = serde_json::from_str(&r.get::<_, String>(1)).unwrap();
    assert_eq!(meta["actor"], curator_actor.as_str(), "policy only for a memory in quarantine: {meta}");
    assert_eq!(meta["content_bytes"], "Alpha's old pager number.".len(), "{meta}");
    let sha = owner
        .query_one("SELECT encode(sha256('Alpha''s old pager number.'::bytea), 'hex')", &[])
        .unwrap()
        .get::<_, String>(0);
    assert_eq!(meta["content_sha256"], sha.as_str(), "{meta}");
    let gone: i64 = owner.query_one("SELECT COUNT(*) FROM memory_item WHERE id = $1", &[&doomed]).unwrap().get(0);
    assert_eq!(gone, 0);
    assert_eq!(meta["type"], "semantic", "{meta}");

    assert_eq!(team_rows(&st.owner, "beta"), beta_before, "every row of team beta is as it was");
}

/// A store set up before the record and derived-row functions (schema 12: INSERT rights on the
/// records, column rights on the derived rows and settings for Lethe's roles) is migrated by
/// `admin setup`: every row of every team and every role kept, the rights gone, and recall,
/// the end of a session, archive, hard delete and settings working through the functions.
#[test]
fn a_store_with_record_insert_rights_is_migrated_to_functions_and_keeps_every_row() {
    let Some(st) = store() else { return };
    let mut owner = client(&st.owner);
    owner
        .batch_execute(
            "GRANT INSERT ON memory_forgetting_event, lethe_recall_log, lethe_recall_log_hit, lethe_supersede, \
                 lethe_archive, lethe_procedure_version, lethe_review, lethe_session_end, lethe_task_log, \
                 lethe_session_rule, lethe_dismissed_pair TO lethe_agent; \
             GRANT UPDATE (score) ON lethe_recall_log_hit TO lethe_agent; \
             GRANT INSERT ON meta_memory_stats, lethe_signature, lethe_vector, lethe_neighbour, lethe_centroid \
                 TO lethe_agent; \
             GRANT UPDATE (content_hash, bands) ON lethe_signature TO lethe_agent; \
             GRANT UPDATE (model, vec) ON lethe_vector TO lethe_agent; \
             GRANT INSERT, UPDATE (value) ON lethe_settings TO lethe_curator; \
             DELETE FROM lethe_schema WHERE version IN (13, 14);",
        )
        .unwrap();
    let old_model = format!(
        "BEGIN; INSERT INTO lethe_review (memory_id, entered_at) VALUES ('{}', '2026-01-01T00:00:00.000Z'); ROLLBACK",
        st.alpha_ids[0]
    );
    client(&st.a_agent).batch_execute(&old_model).expect("the old model let an agent insert a review row");
    let (alpha, beta) = (team_rows(&st.owner, "alpha"), team_rows(&st.owner, "beta"));
    let roles: i64 = owner.query_one("SELECT COUNT(*) FROM lethe_team_member", &[]).unwrap().get(0);

    let v = ok(&st.owner, &["admin", "setup"]);
    assert_eq!(v["applied"], serde_json::json!(["013_record_functions", "014_derived_functions"]), "{v}");
    assert_eq!(team_rows(&st.owner, "alpha"), alpha, "every row of alpha is kept");
    assert_eq!(team_rows(&st.owner, "beta"), beta, "every row of beta is kept");
    assert_eq!(owner.query_one("SELECT COUNT(*) FROM lethe_team_member", &[]).unwrap().get::<_, i64>(0), roles);
    refused(&mut client(&st.a_agent), "agent", &old_model);
    let rights = write_rights(&st.owner);
    assert!(rights.is_empty(), "no right but SELECT is left: {rights:?}");

    // Every role works through the functions.
    let v = ok(&st.a_agent, &["recall", "alpha launch codename"]);
    assert!(v.to_string().contains(&st.alpha_ids[0]), "{v}");
    let logged: i64 = owner
        .query_one(
            "SELECT COUNT(*) FROM lethe_recall_log_hit h JOIN lethe_recall_log l ON l.id = h.log_id AND l.team = h.team \
             WHERE h.memory_id = $1 AND l.actor = $2",
            &[&st.alpha_ids[0], &format!("agent:{}", st.names[0])],
        )
        .unwrap()
        .get(0);
    assert!(logged >= 1, "the recall is logged with its hits under the role");
    let working = ok(
        &st.a_agent,
        &["remember", "--type", "working", "--session", "s-migrated", "--content", "Alpha's scratch: tests pass."],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = ok(&st.a_agent, &["end-session", "s-migrated", "--task-kind", "release"]);
    assert_eq!(v["task_logs"], serde_json::json!([working]), "{v}");
    let r = owner
        .query_one(
            "SELECT actor, after_json FROM lethe_action WHERE action = 'end_session' AND team = 'alpha' ORDER BY id DESC LIMIT 1",
            &[],
        )
        .unwrap();
    assert_eq!(r.get::<_, String>(0), format!("agent:{}", st.names[0]));
    let after: serde_json::Value = serde_json::from_str(&r.get::<_, String>(1)).unwrap();
    assert_eq!(after["task_logs"], serde_json::json!([working]), "the task logs read from the rows: {after}");
    let again = ok(&st.a_agent, &["end-session", "s-migrated", "--task-kind", "release"]);
    assert_eq!(again["already_ended"], true, "{again}");
    let tool = ok(
        &st.a_agent,
        &["remember", "--type", "episodic", "--source", "tool", "--content", "tool output: alpha's migrated log"],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = ok(&st.a_agent, &["archive", &tool, "--memo", "migrated log"]);
    assert!(v.to_string().contains("migrated log"), "{v}");
    let v = ok(&st.a_curator, &["delete", &st.alpha_ids[1], "--hard", "--confirm"]);
    assert!(v.to_string().contains("hard"), "{v}");
    ok(&st.a_curator, &["forget"]);
    ok(&st.a_curator, &["settings", "quarantine_days", "45"]);
    let v = ok(&st.a_agent, &["settings", "quarantine_days"]);
    assert_eq!(v["quarantine_days"], 45.0, "{v}");
    refused(
        &mut client(&st.a_curator),
        "curator",
        "SELECT lethe_settings_store('{\"max_content_bytes\": 0}', NULL, 'x', NULL, NULL)",
    );
    refused(&mut client(&st.a_agent), "agent", "SELECT lethe_settings_store('{}', NULL, 'x', NULL, NULL)");
}

/// The rows Lethe derives from a memory and the settings are written only through functions
/// that check what the server can: a neighbour list replaces the memory's row (one list or a
/// batch, the last of a repeated rowid winning; another team's rowid stores nothing), a vector
/// has the model's size and is not rewritten by the same model, a signature is not rewritten,
/// centroids are stored once, settings are the team lead's and in range; a reader writes none.
#[test]
fn derived_rows_are_written_only_through_functions_that_check_what_the_server_can() {
    let Some(st) = store() else { return };
    let beta_before = team_rows(&st.owner, "beta");
    let mut owner = client(&st.owner);
    let rowid_of = |owner: &mut postgres::Client, id: &str| -> i64 {
        owner.query_one("SELECT rowid FROM memory_item WHERE id = $1", &[&id]).unwrap().get(0)
    };
    let (alpha, beta) = (st.alpha_ids[0].clone(), st.beta_ids[0].clone());
    let (a_rowid, b_rowid) = (rowid_of(&mut owner, &alpha), rowid_of(&mut owner, &beta));
    let mut agent = client(&st.a_agent);
    let one = |c: &mut postgres::Client, sql: &str| -> i64 { c.query_one(sql, &[]).unwrap().get(0) };

    // Neighbour lists: a partial list, then the final one for the same memory (same key).
    assert_eq!(
        one(&mut agent, &format!("SELECT lethe_neighbour_store({a_rowid}, 'partial:m', 'h', '\\x01', '\\x02')")),
        1
    );
    assert_eq!(one(&mut agent, &format!("SELECT lethe_neighbour_store({a_rowid}, 'm', 'h', '\\x01', '\\x0203')")), 1);
    assert_eq!(one(&mut agent, &format!("SELECT lethe_neighbour_store({b_rowid}, 'm', 'h', '\\x01', '\\x02')")), 0);
    let batch = format!(
        r#"[[{a_rowid}, "m", "h", "01", "aa"], [{b_rowid}, "m", "h", "01", "bb"], [{a_rowid}, "m2", "h", "01", "cc"]]"#
    );
    assert_eq!(agent.query_one("SELECT lethe_neighbours_store($1)", &[&batch]).unwrap().get::<_, i64>(0), 1);
    let r = owner.query_one("SELECT model, list FROM lethe_neighbour WHERE memory_rowid = $1", &[&a_rowid]).unwrap();
    assert_eq!((r.get::<_, String>(0), r.get::<_, Vec<u8>>(1)), ("m2".to_string(), vec![0xcc]), "the last list wins");
    let big_model = "m".repeat(201);
    for sql in [
        format!("SELECT lethe_neighbour_store({a_rowid}, '{big_model}', 'h', '\\x01', '\\x02')"),
        format!("SELECT lethe_neighbour_store({a_rowid}, 'm', NULL, '\\x01', '\\x02')"),
        format!("SELECT lethe_neighbour_store({a_rowid}, 'm', 'h', NULL, '\\x02')"),
        format!("SELECT lethe_neighbours_store('[[{a_rowid}, \"m\", \"h\", \"zz\", \"00\"]]')"),
        format!("SELECT lethe_neighbours_store('[[\"{a_rowid}\", \"m\", \"h\", \"00\", \"00\"]]')"),
        "SELECT lethe_neighbours_store('not json')".to_string(),
        // Vectors: the model's size only; signatures: a 64-hex hash; centroids: 4-byte numbers.
        format!("SELECT lethe_vectors_store('[[\"{alpha}\", \"m\", \"00\"]]')"),
        format!("SELECT lethe_vectors_store('[[\"{alpha}\", \"{big_model}\", \"{}\"]]')", "00".repeat(260)),
        format!("SELECT lethe_signatures_store('[[\"{alpha}\", \"not a hash\", \"00\"]]')"),
        format!("SELECT lethe_signatures_store('[[\"{alpha}\", \"{}\", \"{}\"]]')", "a".repeat(64), "00".repeat(2000)),
        "SELECT lethe_centroid_store('m', '\\x010203')".to_string(),
        "SELECT lethe_centroid_store(NULL, '\\x01020304')".to_string(),
        "SELECT lethe_settings_store('{}', NULL, 'x', NULL, NULL)".to_string(),
    ] {
        refused(&mut agent, "agent", &sql);
    }
    // A vector of another model replaces the memory's, one of the same model does not; a
    // signature stays; beta's id stores nothing.
    let vec_hex = "07".repeat(260);
    let store_vec = |c: &mut postgres::Client, id: &str, model: &str| -> i64 {
        c.query_one(
            "SELECT lethe_vectors_store(json_build_array(json_build_array($1::text, $2::text, $3::text))::text)",
            &[&id, &model, &vec_hex],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(store_vec(&mut agent, &beta, "m"), 0, "beta's memory: nothing stored");
    assert_eq!(store_vec(&mut agent, &alpha, "another-model"), 1, "another model's vector replaces it");
    assert_eq!(store_vec(&mut agent, &alpha, "another-model"), 0, "the same model's is not rewritten");
    let sig = format!(r#"[["{alpha}", "{}", "00"]]"#, "b".repeat(64));
    assert_eq!(agent.query_one("SELECT lethe_signatures_store($1)", &[&sig]).unwrap().get::<_, i64>(0), 0);
    assert_eq!(one(&mut agent, "SELECT lethe_centroid_store('m-test', '\\x01020304')"), 1);
    assert_eq!(one(&mut agent, "SELECT lethe_centroid_store('m-test', '\\x05060708')"), 0, "stored once");

    // Settings: the team lead's, in range; the action's before state is the stored row.
    let mut curator = client(&st.a_curator);
    for v in [
        r#"{"max_content_bytes": 0}"#,
        r#"{"max_content_bytes": 1.5}"#,
        r#"{"quarantine_days": -1}"#,
        r#"{"recall_log_max_rows": 20000000}"#,
        r#"{"threshold": 3}"#,
        r#"{"duplicate_reason_above": 2}"#,
        "[]",
        "not json",
    ] {
        refused(&mut curator, "curator", &format!("SELECT lethe_settings_store('{v}', NULL, 'x', NULL, NULL)"));
    }
    ok(&st.a_curator, &["settings", "quarantine_days", "12"]);
    ok(&st.a_curator, &["settings", "quarantine_days", "13"]);
    let r = owner
        .query_one(
            "SELECT actor, before_json, after_json FROM lethe_action WHERE action = 'settings' AND team = 'alpha' \
             ORDER BY id DESC LIMIT 1",
            &[],
        )
        .unwrap();
    assert_eq!(r.get::<_, String>(0), format!("user:{}", st.names[1]));
    let (b, a): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&r.get::<_, String>(1)).unwrap(), serde_json::from_str(&r.get::<_, String>(2)).unwrap());
    assert_eq!((b["quarantine_days"].as_f64(), a["quarantine_days"].as_f64()), (Some(12.0), Some(13.0)), "{b} {a}");
    let (_, v) = lethe(&st.a_agent, &["events", "--action", "settings"]);
    assert_eq!(v["items"][0]["before"]["quarantine_days"], 12.0, "{v}");

    let mut reader = client(&st.a_reader);
    for sql in [
        format!("SELECT lethe_neighbour_store({a_rowid}, 'm', 'h', '\\x01', '\\x02')"),
        "SELECT lethe_neighbours_store('[]')".to_string(),
        format!("SELECT lethe_stats_add('{alpha}', 1, 1, 0, 0.5, NULL)"),
        "SELECT lethe_centroid_store('m-r', '\\x01020304')".to_string(),
    ] {
        refused(&mut reader, "reader", &sql);
    }
    assert_eq!(team_rows(&st.owner, "beta"), beta_before, "every row of team beta is as it was");
}
