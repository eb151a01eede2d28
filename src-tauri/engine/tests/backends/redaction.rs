//! The secrets and personal-data detector on a corpus of realistic fake secrets
//! and innocuous look-alikes: every secret redacted, no look-alike touched; precision and
//! recall are printed (`cargo test -p lethe-engine --test backends redaction:: -- --nocapture`).

use crate::support::{now, temp_db};
use lethe_engine::lifecycle::{self, NewMemory, RememberOutcome};
use lethe_engine::redact::{self, Guard, Kind, PiiMode, Policy, SecretsMode};
use lethe_engine::{store, Settings, Tier};

/// (sentence, the secret in it, the kind expected). All fake, made for this test.
fn secrets() -> Vec<(String, &'static str, Kind)> {
    let c = |text: &str, secret: &'static str, kind: Kind| (text.replace("{}", secret), secret, kind);
    let pem_rsa = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x8Qm3Zr7Tn2Vb\nq9Wf0LkP4Hs6Dj2Ng8\n-----END RSA PRIVATE KEY-----";
    let pem_ssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----";
    let pem_ec =
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5R\n-----END EC PRIVATE KEY-----";
    let pem_cut = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIB";
    vec![
        c("Use access key {} for the backup bucket.", "AKIAIOSFODNN7EXAMPLE", Kind::AwsAccessKey),
        c("Temporary creds: {} expire hourly", "ASIAY34FZKBOKMUTVV7A", Kind::AwsAccessKey),
        c("aws_secret_access_key = {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Kind::PasswordAssignment),
        c("export AWS_ACCESS_KEY_ID={}", "AKIAJ7QX4ZL2M5N8P3RS", Kind::AwsAccessKey),
        c("gh token for CI: {}", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", Kind::GithubToken),
        c("oauth {} from the device flow", "gho_Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss7", Kind::GithubToken),
        c("fine-grained PAT {} (repo scope)", "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdefGHIJKLmnop", Kind::GithubToken),
        c("app installation token {}", "ghs_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8", Kind::GithubToken),
        c("user-to-server {} works", "ghu_m9N8b7V6c5X4z3L2k1J0h9G8f7D6s5A4q3W2", Kind::GithubToken),
        c("GitLab PAT: {}", "glpat-Xy7zA8bC9dE0fG1hI2jK", Kind::GitlabToken),
        c("pipeline trigger {} in .gitlab-ci.yml", "glptt-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a", Kind::GitlabToken),
        c("deploy token {} for the registry", "gldt-Zq8Wx7Ec6Rv5Tb4Yn3Um2", Kind::GitlabToken),
        c("bot token {} posts to #ops", "xoxb-2048611423-5178463092145-Kp7Lm2Nq8Rs4Tv6Wx9Yz1Ab", Kind::SlackToken),
        c("user token {} (admin scopes)", "xoxp-1234567890-0987654321-1122334455-aB9cD8eF7gH6iJ5kL4mN3oP2qR1sT0u", Kind::SlackToken),
        c("alerts go to {}", "https://hooks.slack.com/services/T024BE7LD/B08ABCDEF12/Xq9Lm2Np4Rs6Tu8Vw0Yz3Ab", Kind::SlackWebhook),
        c("Stripe live key {}", "sk_live_51Hx3kLmN8pQr2StUv4WxYz6Ab", Kind::StripeKey),
        c("restricted key {} for reporting", "rk_test_4eC39HqLyjWDarjtT1zdp7dc9Xq", Kind::StripeKey),
        c("webhook signing secret {}", "whsec_Mz8Nx7Bc6Vl5Kj4Hg3Fd2Sa1Qw0Er9Ty", Kind::StripeKey),
        c("OPENAI key {} in the notebook", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90", Kind::OpenaiKey),
        c("legacy key {}", "sk-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa9876543210", Kind::OpenaiKey),
        c("service account {} for evals", "sk-svcacct-Q9w8E7r6T5y4U3i2O1p0Asdf1234", Kind::OpenaiKey),
        c("Claude key {} (staging)", "sk-ant-api03-Xy7Zw6Vu5Ts4Rq3Po2Nm1Lk0Ji9Hg8FeDcBa-AbCdEf12", Kind::AnthropicKey),
        c("maps key {}", "AIzaSyD-9tSrke72PouQMnMX7a7eZSW0jkFMBWY", Kind::GoogleApiKey),
        c(
            "session cookie {} decoded fine",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            Kind::Jwt,
        ),
        c("the deploy key:\n{}\nkeep it safe", pem_rsa, Kind::PrivateKey),
        c("ssh key for the bastion {} end", pem_ssh, Kind::PrivateKey),
        c("signing key {}", pem_ec, Kind::PrivateKey),
        c("pasted half a key: {}", pem_cut, Kind::PrivateKey),
        c("DATABASE_URL=postgres://admin:{}@db.internal:5432/app", "S3cr3tPassw0rd", Kind::UrlPassword),
        c("mongodb+srv://svc:{}@cluster0.mongodb.net/prod", "hunter2hunter2", Kind::UrlPassword),
        c("fetch https://deploy:{}@git.example.com/repo.git", "p4ss-W0rd_x", Kind::UrlPassword),
        c("login with password={} on staging", "Hunter2!x", Kind::PasswordAssignment),
        c("DB_PASSWORD=\"{}\"", "Tr0ub4dor&3", Kind::PasswordAssignment),
        c("{\"user\": \"svc\", \"password\": \"{}\"}", "correct horse battery staple", Kind::PasswordAssignment),
        c("secret: {}", "9f8e7d6c5b4a", Kind::PasswordAssignment),
        c("api_key = '{}'", "a1b2c3d4e5f6g7h8", Kind::PasswordAssignment),
        c("client_secret={}&grant_type=client_credentials", "Zx9Qw8Er7Ty6Ui5Op4", Kind::PasswordAssignment),
        c("curl -H 'Authorization: Bearer {}' https://api.example.com", "abcdef0123456789ABCDEFghijkl", Kind::PasswordAssignment),
        c("token={} for the metrics endpoint", "3f9a0c7e1b2d4f6a8c0e2a4b6d8f0a1c", Kind::PasswordAssignment),
        c("the VPN passwd: {}", "Winter2024!", Kind::PasswordAssignment),
        c("pwd={} (rotated monthly)", "Qwerty!234", Kind::PasswordAssignment),
        c("private_key = \"{}\"", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", Kind::PasswordAssignment),
        c("The shared key is {} for now", "7Hq2Lm9Xv4Rt8Wz1Ks6Np3Bd5Fy0Cg", Kind::HighEntropy),
        c("signature ?sig={} in the presigned URL", "Qm7Xk2Lp9Vr4Tn8Ws1Hd6Jf3Bc5Gz0Ya", Kind::HighEntropy),
        c("random blob {} in the config", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkc", Kind::HighEntropy),
        c("keycloak secret {} rotated", "Pq8Rs7Tu6Vw5Xy4Za3Bc2De1Fg0Hi9Jk", Kind::PasswordAssignment),
    ]
}

/// Innocuous text that looks a bit like secrets or personal data and must stay untouched.
fn look_alikes() -> Vec<&'static str> {
    vec![
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the flaky test",
        "cherry-pick a1b2c3d onto release",
        "request id 550e8400-e29b-41d4-a716-446655440000 timed out",
        "superseded by mem_0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b yesterday",
        "the fixture is aGVsbG8gd29ybGQ= (hello world)",
        "short base64 dGVzdA== decodes to test",
        "Our password policy requires 12 characters and rotation every 90 days.",
        "empty file sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "image digest sha256:9b2a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b",
        "Reset your password: ask the on-call",
        "password: rotated quarterly by the platform team",
        "set password=${DB_PASSWORD} from the environment",
        "token budget: 4096 tokens per request",
        "the API key is stored in Vault under kv/payments",
        "call getUserAccountSettingsForTenant2024 before rendering",
        "installed into /usr/local/lib/python3.11/site-packages/requests",
        "pod kube-system/coredns-5d78c9869d-abcde restarted",
        "upgrade to v2.14.3 and point it at 192.168.10.254",
        "the job ran at 2024-05-01 12:30:45 and took 300 ms",
        "order 4111 1111 1111 1112 shipped",
        "account DE89 3704 0044 0532 0130 01 was closed",
        "build 20240501-1230 is green",
        "see https://example.com/docs/api-keys for the how-to",
        "ISBN 978-3-16-148410-0 is the style guide",
        "clone git@github.com:acme/widgets.git first",
        "we use the sk-learn library for baselines",
        "timeout=30000 and retries=5",
        "the secret sauce is caching",
        "epoch 1714567890123 in the log",
        "UPS tracking 1Z999AA10123456784 arrived",
    ]
}

fn both_redact() -> Policy {
    Policy { secrets: SecretsMode::Redact, pii: PiiMode::Redact }
}

#[test]
fn every_fake_secret_is_redacted_and_no_look_alike_is_touched() {
    let secrets = secrets();
    let looks = look_alikes();
    assert!(secrets.len() >= 40, "the corpus has at least 40 secrets ({})", secrets.len());
    assert!(looks.len() >= 20, "and at least 20 look-alikes ({})", looks.len());

    let (mut true_pos, mut false_pos, mut missed) = (0usize, 0usize, Vec::new());
    let mut wrong_kind = Vec::new();
    for (text, secret, kind) in &secrets {
        let mut g = Guard::new(both_redact());
        let out = g.text("content", text).unwrap();
        let secret_start = text.find(secret).unwrap();
        let secret_end = secret_start + secret.len();
        // Each span either covers (part of) the secret or is a false positive.
        for f in &g.findings {
            if f.start < secret_end && f.end > secret_start {
                true_pos += 1;
            } else {
                false_pos += 1;
                eprintln!("false positive {:?} at {}..{} in {text:?}", f.kind, f.start, f.end);
            }
        }
        if out.contains(secret) || !out.contains("[REDACTED:") {
            missed.push(text.clone());
        } else if !g.findings.iter().any(|f| f.kind == *kind) {
            wrong_kind.push((text.clone(), *kind, g.findings.iter().map(|f| f.kind).collect::<Vec<_>>()));
        }
    }
    let mut touched = Vec::new();
    for text in &looks {
        let mut g = Guard::new(both_redact());
        let out = g.text("content", text).unwrap();
        if out != *text || !g.findings.is_empty() {
            false_pos += g.findings.len().max(1);
            touched.push((text.to_string(), g.findings.iter().map(|f| f.kind).collect::<Vec<_>>()));
        }
    }
    let recall = (secrets.len() - missed.len()) as f64 / secrets.len() as f64;
    let precision = true_pos as f64 / (true_pos + false_pos).max(1) as f64;
    println!(
        "redaction corpus: {} secrets, {} look-alikes; recall {recall:.3}, precision {precision:.3} \
         ({true_pos} true spans, {false_pos} false)",
        secrets.len(),
        looks.len()
    );
    assert!(missed.is_empty(), "every secret is redacted; missed: {missed:#?}");
    assert!(touched.is_empty(), "no look-alike is touched: {touched:#?}");
    assert!(wrong_kind.is_empty(), "each secret is named by its kind: {wrong_kind:#?}");
    assert_eq!(false_pos, 0, "no span outside a secret");
}

#[test]
fn personal_data_is_found_with_checksums() {
    let cases = [
        ("write to ana.lopez@example.org today", Kind::Email),
        ("call +1 415 555 2671 after 9", Kind::Phone),
        ("office (415) 555-2671 ext 4", Kind::Phone),
        ("London desk +44 20 7946 0958", Kind::Phone),
        ("card 4111 1111 1111 1111 exp 12/29", Kind::CardNumber),
        ("mastercard 5500-0000-0000-0004 on file", Kind::CardNumber),
        ("amex 378282246310005 declined", Kind::CardNumber),
        ("pay to GB82 WEST 1234 5698 7654 32 by Friday", Kind::Iban),
        ("IBAN DE89370400440532013000 (Commerzbank)", Kind::Iban),
    ];
    for (text, kind) in cases {
        let found: Vec<Kind> = redact::find(text).into_iter().map(|s| s.kind).collect();
        assert_eq!(found, vec![kind], "{text:?}");
    }
    for (bad, why) in [
        ("card 4111 1111 1111 1112", "fails Luhn"),
        ("IBAN GB82 WEST 1234 5698 7654 33", "fails mod-97"),
        ("call 555-2671", "too few digits for a phone number"),
    ] {
        assert!(redact::find(bad).is_empty(), "{bad:?} {why}");
    }
}

fn with_settings(conn: &mut store::Connection, secrets: SecretsMode, pii: PiiMode) {
    let s = Settings { secrets, pii, ..Settings::default() };
    Settings::store(conn, &s, "user", now()).unwrap();
}

#[test]
fn remember_redacts_before_the_duplicate_check_and_reports_kinds_and_offsets() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let key = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
    let text = format!("deploy with {key} and mail ops@example.com");
    let mut m = NewMemory::new(Tier::Semantic, text.clone());
    m.tags = vec!["ci".into()];
    let out = lifecycle::remember(&mut conn, &m, "user", now()).unwrap();
    let RememberOutcome::Stored { id, redacted, pii_tags, .. } = out else { panic!("stored: {out:?}") };
    assert_eq!(redacted.len(), 1);
    assert_eq!((redacted[0].kind, redacted[0].start, redacted[0].end), (Kind::GithubToken, 12, 12 + key.len()));
    assert_eq!(pii_tags, vec!["pii:email".to_string()], "pii=tag by default");
    let stored = lifecycle::get(&conn, &id).unwrap();
    assert_eq!(stored.content, "deploy with [REDACTED:github_token] and mail ops@example.com");
    assert_eq!(stored.tags, vec!["ci".to_string(), "pii:email".to_string()]);
    // A second write of the same secret-bearing text is an exact duplicate of the redacted one.
    let again = lifecycle::remember(&mut conn, &NewMemory::new(Tier::Semantic, text), "user", now()).unwrap();
    assert!(matches!(again, RememberOutcome::Skipped { existing_id: Some(ref e), .. } if *e == id), "{again:?}");
    let answer = serde_json::to_string(&again).unwrap();
    assert!(!answer.contains(key));
}

#[test]
fn refuse_mode_writes_nothing_and_allow_mode_stores_as_given() {
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    with_settings(&mut conn, SecretsMode::Refuse, PiiMode::Allow);
    let rows = |c: &store::Connection| -> (i64, i64) {
        (
            c.query_row("SELECT COUNT(*) FROM memory_item", [], |r| r.get(0)).unwrap(),
            c.query_row("SELECT COUNT(*) FROM lethe_action", [], |r| r.get(0)).unwrap(),
        )
    };
    let before = rows(&conn);
    let key = "sk_live_51Hx3kLmN8pQr2StUv4WxYz6Ab";
    let err = lifecycle::remember(&mut conn, &NewMemory::new(Tier::Semantic, format!("stripe {key}")), "user", now())
        .unwrap_err();
    assert_eq!(err.code(), "invalid_input");
    assert!(err.to_string().contains(&format!("stripe_key at bytes 7..{}", 7 + key.len())), "{err}");
    assert!(!err.to_string().contains("sk_live_51Hx3"), "never the value: {err}");
    assert_eq!(rows(&conn), before, "nothing written");

    with_settings(&mut conn, SecretsMode::Allow, PiiMode::Allow);
    let out = lifecycle::remember(
        &mut conn,
        &NewMemory::new(Tier::Semantic, "stripe sk_live_51Hx3kLmN8pQr2StUv4WxYz6Ab"),
        "user",
        now(),
    )
    .unwrap();
    let id = out.id().unwrap().to_string();
    assert!(lifecycle::get(&conn, &id).unwrap().content.contains("sk_live_51Hx3"), "allow stores as given");
}

#[test]
fn detector_is_fast_enough_for_every_write() {
    // Realistic memory texts with and without secrets; the whole scan of one must stay far
    // below the cost of the write itself (hundreds of microseconds).
    let texts: Vec<String> = (0..2000)
        .map(|i| {
            format!(
                "Session {i}: the deploy of service-{i} failed at step 3 because the health check on \
                 port 8080 timed out after 30 s; the fix was to raise the timeout and retry. Owner: team-{}.",
                i % 7
            )
        })
        .collect();
    // The patterns compile once per process; that is not the cost of a write.
    redact::find("warm up");
    let started = std::time::Instant::now();
    let mut found = 0;
    for t in &texts {
        found += redact::find(t).len();
    }
    let per = started.elapsed().as_secs_f64() * 1e6 / texts.len() as f64;
    println!("detector: {per:.1} µs per {}-byte memory", texts[0].len());
    assert_eq!(found, 0, "ordinary memories hold nothing to redact");
    assert!(per < 200.0, "scan of one memory took {per:.1} µs");
}

/// Labels (session, project, task kind) and delete reasons pass the same guard as a memory's
/// text; `lethe scan` looks at them too (as another program may have written them); and the
/// audit of `reflect` keeps the note's hash and length, not a second copy of the note.
#[test]
fn labels_reasons_and_reflection_audits_keep_no_secret() {
    const TOKEN: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
    let tmp = temp_db();
    let mut conn = lethe_testkit::backend::open(&tmp).unwrap();
    let mut m = NewMemory::new(Tier::Semantic, "the release train leaves on Thursdays");
    m.session_id = Some(format!("sess {TOKEN}"));
    m.project_id = Some(format!("proj {TOKEN}"));
    let id = match lifecycle::remember(&mut conn, &m, "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        other => panic!("{other:?}"),
    };
    let stored = lifecycle::get(&conn, &id).unwrap();
    for label in [&stored.session_id, &stored.project_id] {
        let label = label.as_deref().unwrap();
        assert!(!label.contains(TOKEN) && label.contains("[REDACTED:"), "{label}");
    }
    lifecycle::soft_delete(&mut conn, &id, Some(&format!("leaked {TOKEN}")), "user", now()).unwrap();
    let reason: String = conn
        .query_row("SELECT reason FROM memory_forgetting_event WHERE memory_id = ?1 AND action = 'soft'", [&id], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(!reason.contains(TOKEN) && reason.contains("[REDACTED:"), "{reason}");
    let ended = lethe_engine::session::end_session(
        &mut conn,
        &format!("sess {TOKEN}"),
        &format!("kind {TOKEN}"),
        &[],
        "user",
        now(),
    )
    .unwrap();
    assert!(!ended.task_kind.contains(TOKEN), "{}", ended.task_kind);

    // Written by another program, past the guard: scan names the field.
    let other =
        match lifecycle::remember(&mut conn, &NewMemory::new(Tier::Semantic, "plain text"), "user", now()).unwrap() {
            RememberOutcome::Stored { id, .. } => id,
            o => panic!("{o:?}"),
        };
    conn.execute(
        "UPDATE memory_item SET project_id = ?2 WHERE id = ?1",
        lethe_engine::params![other, format!("p {TOKEN}")],
    )
    .unwrap();
    let found = lethe_engine::scan::scan(&conn).unwrap();
    let item = found.iter().find(|i| i.id == other).expect("scan lists the label");
    assert_eq!(item.fields, ["project_id"]);

    // reflect: the audit row holds the note's hash and length only.
    let mut p = NewMemory::new(Tier::Procedural, "how to roll back a deploy");
    p.procedure.steps = Some(serde_json::json!(["revert", "redeploy"]));
    let proc_id = match lifecycle::remember(&mut conn, &p, "user", now()).unwrap() {
        RememberOutcome::Stored { id, .. } => id,
        o => panic!("{o:?}"),
    };
    let note = serde_json::json!({ "failure_type": "tool_error", "failure_description": "it hung", "lessons_learned": "wait for the health check zqxjlesson" });
    lethe_engine::procedural::reflect(&mut conn, &proc_id, &note, None, "agent:ops", now()).unwrap();
    let after: String = conn
        .query_row("SELECT after_json FROM lethe_action WHERE memory_id = ?1 AND action = 'reflect'", [&proc_id], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(!after.contains("zqxjlesson"), "{after}");
    let facts: serde_json::Value = serde_json::from_str(&after).unwrap();
    assert_eq!(facts["note_sha256"].as_str().unwrap().len(), 64, "{after}");
    assert!(facts["note_bytes"].as_u64().unwrap() > 40, "{after}");
}
