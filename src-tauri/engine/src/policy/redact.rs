//! Secrets and personal data at every write path (filtered before
//! writing). `find` locates well-known secret formats (cloud and SaaS tokens, JWTs, PEM
//! private keys, passwords in URLs and assignments), high-entropy tokens, and personal data
//! (e-mail addresses, phone numbers, Luhn-valid card numbers, mod-97-valid IBANs). The write
//! paths call [`Guard`] before anything else — before validation messages, the exact-duplicate
//! check, the embedding and the audit row — so an original secret is never written anywhere.
//!
//! Every pattern is compiled once per process, on first use (see [`ANY`]); a memory of a few
//! hundred bytes is scanned in microseconds (BENCHMARKS.md, "remember with the detector").

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::sync::{LazyLock, OnceLock};

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What a span is. Secrets first, personal data last (see [`Kind::is_secret`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    PrivateKey,
    AwsAccessKey,
    GithubToken,
    GitlabToken,
    SlackToken,
    SlackWebhook,
    StripeKey,
    AnthropicKey,
    OpenaiKey,
    GoogleApiKey,
    Jwt,
    UrlPassword,
    PasswordAssignment,
    HighEntropy,
    Email,
    Phone,
    CardNumber,
    Iban,
    /// A US social security number.
    Ssn,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PrivateKey => "private_key",
            Kind::AwsAccessKey => "aws_access_key",
            Kind::GithubToken => "github_token",
            Kind::GitlabToken => "gitlab_token",
            Kind::SlackToken => "slack_token",
            Kind::SlackWebhook => "slack_webhook",
            Kind::StripeKey => "stripe_key",
            Kind::AnthropicKey => "anthropic_key",
            Kind::OpenaiKey => "openai_key",
            Kind::GoogleApiKey => "google_api_key",
            Kind::Jwt => "jwt",
            Kind::UrlPassword => "url_password",
            Kind::PasswordAssignment => "password_assignment",
            Kind::HighEntropy => "high_entropy",
            Kind::Email => "email",
            Kind::Phone => "phone",
            Kind::CardNumber => "card_number",
            Kind::Iban => "iban",
            Kind::Ssn => "ssn",
        }
    }

    /// Secrets follow the `secrets` setting, personal data the `pii` setting.
    pub fn is_secret(self) -> bool {
        !matches!(self, Kind::Email | Kind::Phone | Kind::CardNumber | Kind::Iban | Kind::Ssn)
    }

    /// The text that replaces the span: `[REDACTED:<kind>]`.
    pub fn placeholder(self) -> String {
        format!("[REDACTED:{}]", self.as_str())
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One detected span: byte offsets `start..end` in the text as it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// The setting `secrets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum SecretsMode {
    /// Each secret is replaced by `[REDACTED:<kind>]` before anything is written.
    #[default]
    Redact,
    /// A write holding a secret is refused (`invalid_input`), nothing is written.
    Refuse,
    /// Secrets are stored as given.
    Allow,
}

/// The setting `pii`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum PiiMode {
    /// The text is kept; the memory gets a `pii:<kind>` tag per kind found.
    #[default]
    Tag,
    /// Each span is replaced by `[REDACTED:<kind>]`.
    Redact,
    /// Nothing happens.
    Allow,
}

/// What a write answer reports about one span: which field, what kind, where (byte offsets
/// in the text as given), and what was done. Never the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Finding {
    pub field: String,
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    /// `redacted` or `tagged`.
    pub action: String,
}

// ---------------------------------------------------------------------------------------
// Patterns

struct Pattern {
    kind: Kind,
    /// The pattern, compiled on first use (see [`ANY`]).
    source: &'static str,
    re: OnceLock<Regex>,
    /// A cheap pattern that matches wherever `source` can (a necessary condition: its literal
    /// prefix or its shortest run), so that one pass over a text tells which patterns to run.
    trigger: &'static str,
    /// The capture group that is the secret (0: the whole match).
    group: usize,
    /// Extra check on the matched secret (Luhn, mod-97, context).
    check: Check,
}

/// `(text, matched, start, end) -> keep`.
type Check = fn(&str, &str, usize, usize) -> bool;

fn always(_: &str, _: &str, _: usize, _: usize) -> bool {
    true
}

/// ASCII word boundaries: a Unicode `\b` makes the regex crate's fast DFA give up on any
/// non-ASCII text (and the patterns only look for ASCII tokens anyway).
fn ascii_boundaries(s: &str) -> String {
    s.replace(r"\b", r"(?-u:\b)")
}

fn re(s: &str) -> Regex {
    Regex::new(&ascii_boundaries(s)).expect("built-in pattern compiles")
}

impl Pattern {
    fn new(kind: Kind, source: &'static str, trigger: &'static str, group: usize, check: Check) -> Pattern {
        Pattern { kind, source, re: OnceLock::new(), trigger, group, check }
    }

    fn re(&self) -> &Regex {
        self.re.get_or_init(|| re(self.source))
    }
}

/// One pass over the text with the patterns' triggers tells which patterns can match at all;
/// only those are compiled and run. Compiling every pattern (and a set of them all) took
/// ≈ 28 ms, which every one-shot `lethe remember` paid before writing (measured with
/// lethe-bench); the triggers compile in about a millisecond, and most memories hold nothing
/// a pattern needs.
static ANY: LazyLock<regex::RegexSet> = LazyLock::new(|| {
    regex::RegexSet::new(SECRET_PATTERNS.iter().chain(PII_PATTERNS.iter()).map(|p| ascii_boundaries(p.trigger)))
        .expect("built-in triggers compile")
});

static SECRET_PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    vec![
        Pattern::new(
            Kind::PrivateKey,
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
            r"-----BEGIN ",
            0,
            always,
        ),
        Pattern::new(
            Kind::AwsAccessKey,
            r"(?i)\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)(?:[0-9A-Z]{16}|(?:[ \-][0-9A-Z]{4}){4})\b",
            r"(?i)(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z \-]",
            0,
            aws_check,
        ),
        Pattern::new(
            Kind::GithubToken,
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
            r"gh[pousr]_[A-Za-z0-9]|github_pat_[A-Za-z0-9_]",
            0,
            always,
        ),
        Pattern::new(
            Kind::GitlabToken,
            r"\bgl(?:pat|ptt|dt|rt|cbt|imt|oas|ffct|soat|agent)-[A-Za-z0-9_\-]{20,}",
            r"gl(?:pat|ptt|dt|rt|cbt|imt|oas|ffct|soat|agent)-",
            0,
            always,
        ),
        Pattern::new(
            Kind::SlackWebhook,
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
            r"https://hooks\.slack\.com/",
            0,
            always,
        ),
        Pattern::new(Kind::SlackToken, r"\bxox[abposre]-[A-Za-z0-9\-]{10,}", r"xox[abposre]-", 0, always),
        Pattern::new(
            Kind::StripeKey,
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b|\bwhsec_[A-Za-z0-9]{24,}\b",
            r"(?:sk|rk)_(?:live|test)_|whsec_",
            0,
            always,
        ),
        Pattern::new(Kind::AnthropicKey, r"\bsk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{20,}", r"sk-ant-", 0, always),
        Pattern::new(Kind::OpenaiKey, r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", r"sk-", 0, openai_check),
        Pattern::new(Kind::GoogleApiKey, r"\bAIza[0-9A-Za-z_\-]{35}\b", r"AIza", 0, always),
        Pattern::new(
            Kind::Jwt,
            r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
            r"eyJ",
            0,
            always,
        ),
        // The password of `scheme://user:password@host`; the rest of the URL stays useful.
        Pattern::new(
            Kind::UrlPassword,
            r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@]{0,100}:([^\s/]{1,200})@[A-Za-z0-9.\-\[]",
            r"://",
            1,
            always,
        ),
        // `password=…`, `"api_key": "…"`, `secret: …`; the value only (see assignment_check).
        Pattern::new(
            Kind::PasswordAssignment,
            r#"(?i)(?:password|passwd|passphrase|pwd|secret|api[_\-]?key|apikey|access[_\-]?token|access[_\-]?key|auth[_\-]?token|refresh[_\-]?token|bearer[_\-]?token|private[_\-]?key|client[_\-]?secret|token)["']?\s*(=|:|\s+is\s+)\s*("[^"\n]{1,300}"|'[^'\n]{1,300}'|[^\s"',;)}\]]{1,300})"#,
            r"(?i)(?:passw|passphrase|pwd|secret|key|token)",
            2,
            assignment_check,
        ),
        // `Authorization: Bearer …`
        Pattern::new(Kind::PasswordAssignment, r"(?i)\bbearer\s+([A-Za-z0-9_\-.=+/]{16,})", r"(?i)bearer\s", 1, always),
        // Credentials in words: "the root password for db01 is …", "pass: …", "pw changed to …".
        // The value is judged by its shape (see words_check), whatever the separator.
        Pattern::new(
            Kind::PasswordAssignment,
            r#"(?i)\b(?:password|passwd|passphrase|passcode|pwd|pw|pass)\b(?:\s+(?:for|of|on|to|at|in)(?:\s+[^\s:=]{1,40}){1,3}?)?(?:\s+(?:is|was)(?:\s+(?:now|still|set\s+to|changed\s+to))?\s+|\s+(?:changed|set)\s+to\s+|\s*[:=]\s*|\s*->\s*)("[^"\n]{1,300}"|'[^'\n]{1,300}'|[^\s"',;)}\]]{1,300})"#,
            r"(?i)\b(?:passw|passphrase|passcode|pwd|pw|pass)",
            1,
            words_check,
        ),
        // "login admin / …", "user root:…": a name, then a slash or colon, then the password.
        Pattern::new(
            Kind::PasswordAssignment,
            r#"(?i)\b(?:login|log-in|logon|credentials|creds|user(?:name)?|account)\b(?:\s+(?:are|is))?\s*[:=]?\s*[^\s/:,;]{1,64}\s*[/:]\s*([^\s"',;)}\]]{1,200})"#,
            r"(?i)\b(?:log-?[io]n|logon|cred|user|account)",
            1,
            login_check,
        ),
        // "user deploy password …": a name, then the password after its keyword.
        Pattern::new(
            Kind::PasswordAssignment,
            r#"(?i)\b(?:user(?:name)?|login|account)\b\s*[:=]?\s*[^\s,;:/]{1,64}\s*[,;]?\s*(?:and\s+)?(?:password|passwd|pass|pwd|pw)\b\s*[:=]?\s*([^\s"',;)}\]]{1,200})"#,
            r"(?i)\b(?:user|login|account)",
            1,
            words_check,
        ),
        // "datadog api key 3f9a…", "API token for pagerduty …": a long hex or base62 value a
        // few words after the name of a key or token.
        Pattern::new(
            Kind::PasswordAssignment,
            r#"(?i)\b(?:api[\s_\-]?(?:key|token)|apikey|(?:access|auth|bot|bearer|refresh|personal\s+access)[\s_\-]?token|token|secret(?:[\s_\-]?key)?|access[\s_\-]?key|licen[cs]e[\s_\-]?key)\b([^\n]{0,40}?[\s:="'(])?([A-Za-z0-9][A-Za-z0-9_\-.]{19,})"#,
            r"(?i)(?:key|token|secret)",
            2,
            api_value_check,
        ),
        // A private key's body without its PEM lines: the DER openings of PKCS#8 and PKCS#1
        // RSA, SEC1 and PKCS#8 EC, PKCS#8 Ed25519, and the OpenSSH format, in base64.
        Pattern::new(
            Kind::PrivateKey,
            r"\b(?:MII[A-Za-z0-9+/]{3}IBA(?:DAN|AK)|MHcCAQEE|MIG[A-Za-z0-9+/]AgE[AB]|MC4CAQAw|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/]{8,}={0,2}(?:\r?\n[A-Za-z0-9+/]{16,}={0,2})*",
            r"MII[A-Za-z0-9+/]{3}IBA|MHcCAQEE|MIG[A-Za-z0-9+/]AgE|MC4CAQAw|b3BlbnNzaC1rZXktdjE",
            0,
            always,
        ),
    ]
});

static PII_PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    vec![
        Pattern::new(
            Kind::Email,
            r"\b[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}\.)+[A-Za-z]{2,24}\b",
            r"[A-Za-z0-9._%+\-]@[A-Za-z0-9]",
            0,
            email_check,
        ),
        Pattern::new(
            Kind::Iban,
            r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
            r"[A-Z]{2}\d{2}",
            0,
            iban_check,
        ),
        Pattern::new(Kind::CardNumber, r"\b\d(?:[ \-./_]?\d){12,18}\b", r"\d(?:[ \-./_]?\d){12}", 0, card_check),
        Pattern::new(
            Kind::Phone,
            r"(?:\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{1,4}(?:[ .\-]\d{2,6}){1,4}|\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}|\b(?:1[ .\-])?\d{3}[ .\-]\d{3}[ .\-]\d{4})\b",
            r"\+\d|\(\d{3}\)|\d{3}[ .\-]\d{3}",
            0,
            phone_check,
        ),
        Pattern::new(Kind::Ssn, r"\b\d{3}[ \-.]?\d{2}[ \-.]?\d{4}\b", r"\d{3}[ \-.]?\d{2}[ \-.]?\d{4}", 0, ssn_check),
        // "alice [at] example [dot] com", "bob(at)corp(dot)io", "carol at example dot org": a
        // bracketed "at", or a bracketed or spelled-out "dot" (the plain form is the pattern above).
        Pattern::new(
            Kind::Email,
            r"(?i)\b[a-z0-9._%+\-]{1,64}(?:\s*[\[({<]\s*(?:at|@)\s*[\])}>]\s*[a-z0-9][a-z0-9\-]{0,62}(?:(?:\s*[\[({<]\s*(?:dot|\.)\s*[\])}>]\s*|\s+dot\s+|\.)[a-z0-9\-]{1,63}){1,4}|(?:\s+at\s+|@)[a-z0-9][a-z0-9\-]{0,62}(?:(?:\s*[\[({<]\s*(?:dot|\.)\s*[\])}>]\s*|\s+dot\s+|\.)[a-z0-9\-]{1,63}){0,3}(?:\s*[\[({<]\s*(?:dot|\.)\s*[\])}>]\s*|\s+dot\s+)[a-z0-9\-]{1,63}(?:(?:\s*[\[({<]\s*(?:dot|\.)\s*[\])}>]\s*|\s+dot\s+|\.)[a-z0-9\-]{1,63}){0,3})\b",
            r"(?i)[\[({<]\s*(?:at|@|dot|\.)\s*[\])}>]|\sdot\s",
            0,
            obfuscated_email_check,
        ),
    ]
});

/// Candidates for the high-entropy rule: long runs of token characters.
static TOKEN: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9_+/\-]{24,}={0,2}"));

fn openai_check(_: &str, m: &str, _: usize, _: usize) -> bool {
    // The key alphabet: random base62 mixes both cases and digits. `sk-learn-pipeline-v2` (a
    // name made of lower-case words) is not a key.
    let body = m.trim_start_matches("sk-");
    let body = ["proj-", "svcacct-", "admin-"].iter().find_map(|p| body.strip_prefix(p)).unwrap_or(body);
    let upper = body.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = body.bytes().filter(u8::is_ascii_lowercase).count();
    let digit = body.bytes().filter(u8::is_ascii_digit).count();
    body.len() >= 20 && upper >= 2 && lower >= 2 && digit >= 2
}

/// A cloud key id: upper case as issued, or (lower-cased, mixed or split in groups) with the
/// digits a random id has; `AKIA THIS THAT WITH FROM` is words.
fn aws_check(_: &str, m: &str, _: usize, _: usize) -> bool {
    let body: String = m.chars().skip(4).filter(|c| c.is_ascii_alphanumeric()).collect();
    let digit = body.bytes().filter(u8::is_ascii_digit).count();
    let as_issued = !m.contains([' ', '-']) && !m.bytes().any(|b| b.is_ascii_lowercase());
    as_issued || digit >= 2
}

/// The whole words of `s`, lower-cased (letters, digits and `#`).
fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !(c.is_alphanumeric() || c == '#')).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// Up to `n` bytes of `text` before `start` (on a character boundary).
fn before(text: &str, start: usize, n: usize) -> &str {
    let mut from = start.saturating_sub(n);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    &text[from..start]
}

/// Whether one of `list` is a whole word in the `n` bytes before `start`.
fn word_before(text: &str, start: usize, n: usize, list: &[&str]) -> bool {
    words(before(text, start, n)).any(|w| list.contains(&w.as_str()))
}

/// Words that make a number an order, a ticket, an error code or a part number rather than a
/// card, a phone number or a social security number.
const NOT_PERSONAL: &[&str] = &[
    "order",
    "orders",
    "invoice",
    "invoices",
    "ticket",
    "tickets",
    "tracking",
    "shipment",
    "serial",
    "ref",
    "reference",
    "case",
    "isbn",
    "ean",
    "upc",
    "sku",
    "product",
    "build",
    "error",
    "code",
    "status",
    "exit",
    "job",
    "port",
    "version",
    "id",
    "issue",
    "jira",
    "po",
    "part",
    "receipt",
    "confirmation",
    "batch",
];

/// A value that looks like a path, a URL, a version or a placeholder is not a password.
fn not_a_secret_value(inner: &str) -> bool {
    let lower = inner.to_ascii_lowercase();
    let version = inner.contains('.')
        && inner.trim_start_matches('v').split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let drive_path = inner.len() > 2 && inner.as_bytes()[1] == b':' && inner.as_bytes()[2] == b'\\';
    inner.starts_with(['/', '\\', '~', '$', '<', '{', '%', '*', '['])
        || inner.starts_with("./")
        || inner.starts_with("../")
        || inner.contains('/')
        || drive_path
        || version
        || inner.chars().all(|c| c == '*' || c == 'x' || c == 'X')
        || ["none", "null", "true", "false", "changeme", "required", "redacted", "hidden", "example", "unknown"]
            .contains(&lower.as_str())
}

/// The value of a credential written in words: a password has a digit or a symbol and at
/// least six characters (sentence punctuation after it does not count); a word, a path, a
/// version or a placeholder is not one.
fn words_check(_: &str, value: &str, _: usize, _: usize) -> bool {
    let inner = value.trim_matches(|c| c == '"' || c == '\'');
    let core = inner.trim_end_matches(['.', ',', '!', '?', ':', ';']);
    core.chars().count() >= 6
        && core.chars().any(|c| c.is_ascii_digit() || !c.is_alphanumeric())
        && !not_a_secret_value(core)
}

/// "login NAME / VALUE": the value must be a password and not the name again
/// (`www-data:www-data` is an owner and group).
fn login_check(text: &str, value: &str, start: usize, end: usize) -> bool {
    let head = text[..start].trim_end();
    let head = head.strip_suffix(['/', ':']).unwrap_or(head).trim_end();
    let name = head.rsplit(|c: char| c.is_whitespace() || c == '=' || c == ':').next().unwrap_or("");
    name != value && words_check(text, value, start, end)
}

/// A long value after the name of a key or token: 32+ hex digits, or 20+ characters of
/// random base62 (both cases and digits). Not when the words between name the value as a
/// hash, a commit or an id.
fn api_value_check(text: &str, value: &str, start: usize, _: usize) -> bool {
    if word_before(
        text,
        start,
        48,
        &[
            "commit", "sha", "hash", "digest", "checksum", "id", "uuid", "trace", "span", "request", "version", "name",
            "file", "path", "count", "budget", "limit", "rotation", "length",
        ],
    ) {
        return false;
    }
    let core = value.trim_end_matches(['-', '_', '.']);
    let hex = core.len() >= 32 && core.bytes().all(|b| b.is_ascii_hexdigit());
    let upper = core.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = core.bytes().filter(u8::is_ascii_lowercase).count();
    let digit = core.bytes().filter(u8::is_ascii_digit).count();
    let base62 = core.len() >= 20 && upper >= 2 && lower >= 2 && digit >= 3;
    let lower_digits = core.len() >= 24 && upper == 0 && lower >= 4 && digit >= 6 && !core.contains(['-', '_']);
    hex || base62 || lower_digits
}

/// A US social security number: area 001–899 but not 666, group 01–99, serial 0001–9999;
/// written with dashes, or with "SSN"/"social security" just before it.
fn ssn_check(text: &str, m: &str, start: usize, end: usize) -> bool {
    let seps: Vec<char> = m.chars().filter(|c| !c.is_ascii_digit()).collect();
    if seps.windows(2).any(|w| w[0] != w[1]) || !(seps.is_empty() || seps.len() == 2) {
        return false;
    }
    let d: Vec<u8> = digits(m);
    if d.len() != 9 {
        return false;
    }
    let area = d[0] as u32 * 100 + d[1] as u32 * 10 + d[2] as u32;
    let group = d[3] * 10 + d[4];
    let serial = d[5..].iter().fold(0u32, |a, &x| a * 10 + x as u32);
    if area == 0 || area == 666 || area >= 900 || group == 0 || serial == 0 {
        return false;
    }
    let prev = text[..start].chars().next_back();
    let next = text[end..].chars().next();
    if prev.is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | '+'))
        || next.is_some_and(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '/'))
        || next == Some('.') && text[end + 1..].starts_with(|c: char| c.is_ascii_digit())
    {
        return false;
    }
    let ctx = before(text, start, 40).to_lowercase();
    let named = ctx.contains("ssn") || ctx.contains("social security") || ctx.contains("ss#") || ctx.contains("ss no");
    if !named && word_before(text, start, 32, NOT_PERSONAL) {
        return false;
    }
    named || seps.first() == Some(&'-')
}

/// An e-mail address written around the filters: `[at]`, `(dot)`, ` at … dot `. The plain
/// form is the Email pattern's; a bare " at " needs a " dot " and a known top-level domain
/// (`meet at noon dot the usual place` is prose).
fn obfuscated_email_check(_: &str, m: &str, _: usize, _: usize) -> bool {
    let lower = m.to_ascii_lowercase();
    let bracketed = lower.contains(['[', '(', '{', '<']);
    let dot_word = lower.contains(" dot ");
    if !bracketed && !dot_word {
        return false;
    }
    let tld = lower.rsplit(|c: char| !c.is_ascii_alphanumeric() && c != '-').next().unwrap_or("");
    if !(2..=24).contains(&tld.len()) || !tld.bytes().all(|b| b.is_ascii_lowercase()) {
        return false;
    }
    let bare_at = !lower.contains('@')
        && !lower.contains("[at]")
        && !lower.contains("(at)")
        && !lower.contains("{at}")
        && !lower.contains("<at>")
        && !lower.contains(['[', '(', '{', '<']);
    if bare_at {
        const TLDS: &[&str] = &[
            "com", "org", "net", "io", "dev", "edu", "gov", "co", "uk", "de", "fr", "es", "it", "nl", "se", "ch", "at",
            "be", "ca", "au", "jp", "in", "br", "us", "eu", "info", "biz", "me", "ai", "app", "cloud", "tech", "ru",
            "pl", "cz", "dk", "no", "fi", "ie", "nz", "mx", "ar", "cn", "kr",
        ];
        return TLDS.contains(&tld);
    }
    true
}

fn assignment_check(text: &str, value: &str, start: usize, _: usize) -> bool {
    let quoted = value.starts_with('"') || value.starts_with('\'');
    let inner = value.trim_matches(|c| c == '"' || c == '\'');
    if inner.len() < 4 || inner.starts_with("[REDACTED:") {
        return false;
    }
    // `pwd: /home/alice/projects` is a working directory; a path or a URL is not a password.
    if inner.starts_with(['/', '~']) || inner.starts_with("./") || inner.starts_with("../") || inner.contains("://") {
        return false;
    }
    // References and placeholders are not secrets: ${VAR}, $VAR, <password>, {{ x }}, %s, ***.
    if inner.starts_with(['$', '<', '{', '%', '*']) || inner.chars().all(|c| c == '*' || c == 'x' || c == 'X') {
        return false;
    }
    let lower = inner.to_ascii_lowercase();
    if ["none", "null", "true", "false", "changeme", "required", "redacted", "hidden", "example"]
        .contains(&lower.as_str())
    {
        return false;
    }
    // The separator decides how sure we are: `=` and quotes are code or config; `:` and
    // `is` are often prose ("password: see the vault"), so there the value must look like one
    // (a digit or a symbol, at least 6 characters).
    let before = &text[..start];
    let sep_is_assignment = before.trim_end().ends_with('=') || quoted;
    if sep_is_assignment {
        return true;
    }
    inner.len() >= 6 && inner.chars().any(|c| c.is_ascii_digit() || !c.is_alphanumeric())
}

fn email_check(text: &str, m: &str, start: usize, _: usize) -> bool {
    let local = m.split('@').next().unwrap_or("");
    // `git@github.com:org/repo` is an SSH remote, not a person.
    if local == "git" {
        return false;
    }
    // `user:pass@host` inside a URL is handled by url_password; `//x@host` is a URL user.
    !text[..start].ends_with(':')
}

fn digits(s: &str) -> Vec<u8> {
    s.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect()
}

/// The Luhn checksum of a card number.
pub fn luhn_valid(number: &str) -> bool {
    let d = digits(number);
    if !(13..=19).contains(&d.len()) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            let x = x as u32;
            if i % 2 == 1 {
                let y = x * 2;
                if y > 9 {
                    y - 9
                } else {
                    y
                }
            } else {
                x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn card_check(text: &str, m: &str, start: usize, _: usize) -> bool {
    let d = digits(m);
    // One separator throughout, in groups of 3 to 6 digits (4-4-4-4, 4-6-5, 4-6-4): a decimal
    // number or a dotted version is not a card.
    let seps: Vec<char> = m.chars().filter(|c| !c.is_ascii_digit()).collect();
    if seps.windows(2).any(|w| w[0] != w[1]) {
        return false;
    }
    if let Some(&sep) = seps.first() {
        if m.split(sep).any(|g| !(3..=6).contains(&g.len())) {
            return false;
        }
    }
    // A run of one digit (0000 0000 …) passes Luhn but is a placeholder.
    if !luhn_valid(m) || d.iter().all(|&x| x == d[0]) {
        return false;
    }
    // "order 4242 4242 4242 4242" is an order number, whatever its checksum.
    if word_before(text, start, 32, NOT_PERSONAL) {
        return false;
    }
    issuer_length_fits(&d)
        || word_before(text, start, 32, &["card", "cc", "visa", "mastercard", "amex", "credit", "debit", "pan"])
}

/// The lengths the card networks issue, by leading digits (Visa 4: 13/16/19; Mastercard 51–55
/// and 2: 16; Amex 34/37: 15; Diners 30/36/38: 14; JCB 35: 16–19; Discover 6: 16/19). A run of
/// digits that passes Luhn by chance (one in ten) rarely also has its network's length.
fn issuer_length_fits(d: &[u8]) -> bool {
    let n = d.len();
    match (d[0], d.get(1).copied().unwrap_or(0)) {
        (4, _) => matches!(n, 13 | 16 | 19),
        (5, 1..=5) | (2, _) => n == 16,
        (3, 4) | (3, 7) => n == 15,
        (3, 0) | (3, 6) | (3, 8) => n == 14,
        (3, 5) => (16..=19).contains(&n),
        (6, _) => matches!(n, 16 | 19),
        _ => false,
    }
}

/// The ISO 13616 mod-97 check of an IBAN (spaces allowed).
pub fn iban_valid(iban: &str) -> bool {
    let s: String = iban.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&s.len()) || !s.is_char_boundary(4) {
        return false;
    }
    let rearranged = format!("{}{}", &s[4..], &s[..4]);
    let mut rem: u32 = 0;
    for c in rearranged.chars() {
        let v = match c {
            '0'..='9' => c as u32 - '0' as u32,
            'A'..='Z' => c as u32 - 'A' as u32 + 10,
            _ => return false,
        };
        rem = if v >= 10 { (rem * 100 + v) % 97 } else { (rem * 10 + v) % 97 };
    }
    rem == 1
}

fn iban_check(_: &str, m: &str, _: usize, _: usize) -> bool {
    iban_valid(m)
}

fn phone_check(text: &str, m: &str, start: usize, end: usize) -> bool {
    let n = digits(m).len();
    // Part of a longer number, an identifier or a version (`v1.2.3`, `build-555-123-4567x`).
    let prev = text[..start].chars().next_back();
    let next = text[end..].chars().next();
    if prev.is_some_and(|c| c.is_alphanumeric() || c == '.' || c == '-' || c == '_')
        || next.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    {
        return false;
    }
    // Dates (2024-05-01 …) and times are not phone numbers.
    if m.len() >= 10 && m.as_bytes()[4] == b'-' && m[..4].bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    // Dotted quads and version numbers are not phone numbers.
    if !m.starts_with('+') && m.contains('.') && !m.contains(' ') && m.split('.').count() != 3 {
        return false;
    }
    // "error 500-123-4567", "ticket 404-555-0199": a code, not a phone number.
    if word_before(text, start, 24, NOT_PERSONAL) {
        return false;
    }
    if m.starts_with('+') {
        let d = digits(m);
        // A North American number (+1) has the plan's shape too.
        (8..=15).contains(&n) && (d[0] != 1 || n != 11 || nanp_shape(&d[1..]))
    } else {
        // `415-555-0134`, or with the country code as `1-800-555-0199`.
        let d = digits(m);
        (n == 10 && nanp_shape(&d)) || (n == 11 && d[0] == 1 && nanp_shape(&d[1..]))
    }
}

/// The North American numbering plan: area code and exchange both start with 2–9.
fn nanp_shape(d: &[u8]) -> bool {
    d.len() == 10 && d[0] >= 2 && d[3] >= 2
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| (c as f64 / n) * -(c as f64 / n).log2()).sum()
}

/// A long token that looks random: mixed case and digits, high entropy, not a hex digest,
/// UUID, Lethe id or path. Hex (git SHAs, sha256) has no upper case and at most 4 bits per
/// character, so it is never taken; nor are identifiers in words (`getUserAccountSettings`).
fn looks_random(tok: &str) -> bool {
    let t = tok.trim_end_matches('=');
    if t.len() < 24 || t.contains("//") || t.starts_with("mem_") {
        return false;
    }
    // A path or a dashed/underscored name made of words: every part short or wordy.
    if t.split(['/', '-', '_']).count() > 2
        && t.split(['/', '-', '_']).all(|p| p.len() < 12 || p.chars().all(|c| c.is_ascii_lowercase()))
    {
        return false;
    }
    let upper = t.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = t.bytes().filter(u8::is_ascii_lowercase).count();
    let digit = t.bytes().filter(u8::is_ascii_digit).count();
    if upper == 0 || lower == 0 || digit < 2 {
        return false;
    }
    // Case changes: random base62/base64 flips case often; CamelCase words rarely.
    let flips = t.as_bytes().windows(2).filter(|w| w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase()).count();
    if (flips as f64) < t.len() as f64 * 0.3 {
        return false;
    }
    entropy(t) >= 4.0
}

fn push(out: &mut Vec<Span>, text: &str, p: &Pattern) {
    if p.group == 0 {
        for g in p.re().find_iter(text) {
            if !g.as_str().starts_with("[REDACTED:") && (p.check)(text, g.as_str(), g.start(), g.end()) {
                out.push(Span { kind: p.kind, start: g.start(), end: g.end() });
            }
        }
        return;
    }
    for caps in p.re().captures_iter(text) {
        let Some(g) = caps.get(p.group) else { continue };
        // An earlier redaction's placeholder is not a secret (scan runs again over them).
        if g.as_str().trim_start_matches(['"', '\'']).starts_with("[REDACTED:") {
            continue;
        }
        let (mut start, mut end) = (g.start(), g.end());
        if p.kind == Kind::PasswordAssignment {
            // Quotes stay; the secret between them goes.
            let v = g.as_str();
            if (v.starts_with('"') || v.starts_with('\'')) && v.len() >= 2 {
                start += 1;
                end -= usize::from(v.ends_with(['"', '\'']));
            }
        }
        if (p.check)(text, g.as_str(), g.start(), g.end()) {
            out.push(Span { kind: p.kind, start, end });
        }
    }
}

/// Every secret and personal-data span in `text`, sorted, without overlaps (where two
/// overlap, the earlier-starting one wins, then secrets before personal data, then the longer).
///
/// The patterns see the text normalised (see [`normalize`]): a key with a zero-width space, a
/// full-width or Cyrillic letter, or percent-encoded, is found like the plain one; the spans
/// are mapped back onto the text as given, so a redaction removes the disguise too.
pub fn find(text: &str) -> Vec<Span> {
    match normalize(text) {
        None => find_normal(text),
        Some(n) => {
            let spans = find_normal(&n.text);
            if spans.is_empty() {
                return spans;
            }
            resolve(spans.into_iter().map(|s| n.back(s)).collect())
        }
    }
}

/// `find` on text already normalised.
fn find_normal(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let hits = ANY.matches(text);
    for (i, p) in SECRET_PATTERNS.iter().chain(PII_PATTERNS.iter()).enumerate() {
        if hits.matched(i) {
            push(&mut out, text, p);
        }
    }
    push_random(&mut out, text);
    if out.is_empty() {
        return out;
    }
    resolve(out)
}

/// Words before a random-looking token that name it as an identifier or a digest (trace and
/// request ids, integrity hashes), unless a secret's name is there too.
fn named_as_id(text: &str, start: usize) -> bool {
    let ws: Vec<String> = words(before(text, start, 32)).collect();
    let secretish = [
        "key",
        "secret",
        "token",
        "password",
        "passwd",
        "auth",
        "bearer",
        "signature",
        "sig",
        "credential",
        "credentials",
        "apikey",
        "session",
        "cookie",
    ];
    let idish = [
        "trace",
        "traceid",
        "span",
        "spanid",
        "request",
        "requestid",
        "correlation",
        "correlationid",
        "id",
        "run",
        "job",
        "batch",
        "event",
        "build",
        "cloudfront",
        "integrity",
        "sha",
        "sha1",
        "sha256",
        "sha384",
        "sha512",
        "md5",
        "digest",
        "checksum",
        "hash",
        "fingerprint",
        "etag",
        "h1",
        "sum",
        "commit",
        "revision",
    ];
    ws.iter().any(|w| idish.contains(&w.as_str())) && !ws.iter().any(|w| secretish.contains(&w.as_str()))
}

fn push_random(out: &mut Vec<Span>, text: &str) {
    for m in TOKEN.find_iter(text) {
        if looks_random(m.as_str()) && !named_as_id(text, m.start()) {
            out.push(Span { kind: Kind::HighEntropy, start: m.start(), end: m.end() });
        }
    }
}

/// Text as the patterns see it, and where each of its bytes came from in the text as given.
struct Normal {
    text: String,
    /// Per byte of `text`: the byte range of the character (or `%XX` escape) it came from.
    from: Vec<(usize, usize)>,
}

impl Normal {
    fn back(&self, s: Span) -> Span {
        let start = self.from[s.start].0;
        let end = if s.end > s.start { self.from[s.end - 1].1 } else { start };
        Span { kind: s.kind, start, end }
    }
}

/// Characters that show nothing: zero-width spaces and joiners, the soft hyphen, word joiners,
/// bidi marks and overrides, variation selectors, the byte-order mark, tag characters.
fn invisible(c: char) -> bool {
    matches!(c as u32,
        0xAD | 0x34F | 0x61C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0
        | 0xE0000..=0xE007F)
}

/// Letters that look like Latin ones (Cyrillic and Greek capitals and small letters used in
/// key prefixes and words), and dashes that look like a hyphen.
fn confusable(c: char) -> Option<char> {
    Some(match c {
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'С' | 'Ϲ' => 'C',
        'Е' | 'Ε' => 'E',
        'Н' | 'Η' => 'H',
        'І' | 'Ι' | 'Ӏ' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'Ν' => 'N',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Х' | 'Χ' => 'X',
        'У' | 'Υ' => 'Y',
        'Ζ' => 'Z',
        'а' => 'a',
        'ԁ' => 'd',
        'е' => 'e',
        'һ' => 'h',
        'і' | 'ι' => 'i',
        'ј' => 'j',
        'ӏ' => 'l',
        'о' | 'ο' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'с' | 'ϲ' => 'c',
        'ѕ' => 's',
        'ν' => 'v',
        'ԝ' => 'w',
        'х' => 'x',
        'у' => 'y',
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE63}' => '-',
        _ => return None,
    })
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Unicode NFKC per character (full-width letters and digits, no-break spaces, ligatures),
/// invisible characters dropped, look-alike letters folded, and `%XX` escapes of printable
/// ASCII decoded (`password%3D…`, a URL's `%40`), except `%2F` which would split a URL's
/// userinfo. `None` when there is nothing to change (plain ASCII without `%`).
fn normalize(text: &str) -> Option<Normal> {
    use unicode_normalization::UnicodeNormalization;
    if text.is_ascii() && !text.contains('%') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut from = Vec::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        let end = i + c.len_utf8();
        if c == '%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2])) {
                let b = h * 16 + l;
                if (0x20..0x7f).contains(&b) && b != b'/' {
                    out.push(b as char);
                    from.push((i, i + 3));
                    chars.next();
                    chars.next();
                    continue;
                }
            }
        }
        if c.is_ascii() {
            out.push(c);
            from.push((i, end));
            continue;
        }
        if invisible(c) {
            continue;
        }
        for d in std::iter::once(c).nfkc() {
            let d = confusable(d).unwrap_or(d);
            out.push(d);
            from.extend(std::iter::repeat_n((i, end), d.len_utf8()));
        }
    }
    Some(Normal { text: out, from })
}

fn resolve(mut spans: Vec<Span>) -> Vec<Span> {
    // Specific kinds beat the generic entropy rule covering the same bytes, and secrets beat
    // personal data.
    let rank = |k: Kind| match k {
        Kind::HighEntropy => 2,
        k if k.is_secret() => 0,
        _ => 1,
    };
    spans.sort_by_key(|s| (rank(s.kind), s.start, std::cmp::Reverse(s.end)));
    let mut kept: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        if kept.iter().all(|k| s.end <= k.start || s.start >= k.end) {
            kept.push(s);
        }
    }
    kept.sort_by_key(|s| s.start);
    kept
}

/// The policy of one write: the two settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    pub secrets: SecretsMode,
    pub pii: PiiMode,
}

impl Policy {
    pub fn of(s: &crate::Settings) -> Policy {
        Policy { secrets: s.secrets, pii: s.pii }
    }

    /// Detection off entirely (both `allow`): writes skip the scan.
    pub fn is_off(&self) -> bool {
        self.secrets == SecretsMode::Allow && self.pii == PiiMode::Allow
    }
}

/// Applies a policy to the fields of one write. Collects what it did; `pii_tags` are the
/// tags the `tag` mode adds.
#[derive(Debug, Default)]
pub struct Guard {
    pub policy: Policy,
    pub findings: Vec<Finding>,
    pub pii_kinds: Vec<Kind>,
}

impl Guard {
    pub fn new(policy: Policy) -> Guard {
        Guard { policy, findings: Vec::new(), pii_kinds: Vec::new() }
    }

    /// The text to store for `field`: spans replaced according to the policy. Refuse mode
    /// answers `invalid_input` naming the field, kind and byte offsets (never the value).
    pub fn text(&mut self, field: &str, text: &str) -> Result<String> {
        if self.policy.is_off() {
            return Ok(text.to_string());
        }
        let spans = find(text);
        if spans.is_empty() {
            return Ok(text.to_string());
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for s in spans {
            let redact = if s.kind.is_secret() {
                match self.policy.secrets {
                    SecretsMode::Allow => false,
                    SecretsMode::Redact => true,
                    SecretsMode::Refuse => {
                        return Err(Error::invalid(format!(
                            "{field} holds a secret ({kind} at bytes {start}..{end}); the secrets setting is refuse, so nothing was written",
                            kind = s.kind,
                            start = s.start,
                            end = s.end
                        )))
                    }
                }
            } else {
                match self.policy.pii {
                    PiiMode::Allow => false,
                    PiiMode::Redact => true,
                    PiiMode::Tag => {
                        if !self.pii_kinds.contains(&s.kind) {
                            self.pii_kinds.push(s.kind);
                        }
                        self.findings.push(Finding {
                            field: field.to_string(),
                            kind: s.kind,
                            start: s.start,
                            end: s.end,
                            action: "tagged".into(),
                        });
                        false
                    }
                }
            };
            if redact {
                out.push_str(&text[last..s.start]);
                out.push_str(&s.kind.placeholder());
                last = s.end;
                self.findings.push(Finding {
                    field: field.to_string(),
                    kind: s.kind,
                    start: s.start,
                    end: s.end,
                    action: "redacted".into(),
                });
            }
        }
        out.push_str(&text[last..]);
        Ok(out)
    }

    pub fn opt(&mut self, field: &str, text: &Option<String>) -> Result<Option<String>> {
        text.as_ref().map(|t| self.text(field, t)).transpose()
    }

    /// Every string inside a JSON value (steps, trigger conditions, reflection notes). An
    /// object key that names a secret (`"password": "hunter2"`) has its string value redacted
    /// whole when secrets are redacted.
    pub fn json(&mut self, field: &str, v: &serde_json::Value) -> Result<serde_json::Value> {
        use serde_json::Value;
        Ok(match v {
            Value::String(s) => Value::String(self.text(field, s)?),
            Value::Array(a) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    out.push(self.json(&format!("{field}[{i}]"), x)?);
                }
                Value::Array(out)
            }
            Value::Object(o) => {
                let mut out = serde_json::Map::new();
                for (k, x) in o {
                    let path = format!("{field}.{k}");
                    let value = match x {
                        Value::String(s)
                            if is_secret_key(k) && !s.is_empty() && self.policy.secrets != SecretsMode::Allow =>
                        {
                            self.whole(&path, s, Kind::PasswordAssignment)?
                        }
                        _ => self.json(&path, x)?,
                    };
                    out.insert(self.text(&format!("{field} key"), k)?, value);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }

    pub fn opt_json(&mut self, field: &str, v: &Option<serde_json::Value>) -> Result<Option<serde_json::Value>> {
        v.as_ref().map(|x| self.json(field, x)).transpose()
    }

    fn whole(&mut self, field: &str, s: &str, kind: Kind) -> Result<serde_json::Value> {
        if s.starts_with("[REDACTED:") || s.starts_with('$') {
            return Ok(serde_json::Value::String(s.to_string()));
        }
        if self.policy.secrets == SecretsMode::Refuse {
            return Err(Error::invalid(format!(
                "{field} holds a secret ({kind} at bytes 0..{}); the secrets setting is refuse, so nothing was written",
                s.len()
            )));
        }
        self.findings.push(Finding {
            field: field.to_string(),
            kind,
            start: 0,
            end: s.len(),
            action: "redacted".into(),
        });
        Ok(serde_json::Value::String(kind.placeholder()))
    }

    /// Tags: each one scanned; in `tag` mode the `pii:<kind>` tags are added (once each).
    pub fn tags(&mut self, tags: &[String]) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(tags.len());
        for (i, t) in tags.iter().enumerate() {
            if t.starts_with("pii:") {
                out.push(t.clone());
                continue;
            }
            out.push(self.text(&format!("tags[{i}]"), t)?);
        }
        Ok(out)
    }

    /// `tags` with this guard's `pii:<kind>` tags added.
    pub fn with_pii_tags(&self, mut tags: Vec<String>) -> Vec<String> {
        for k in &self.pii_kinds {
            let t = format!("pii:{k}");
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        tags
    }
}

fn is_secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "api_key",
        "apikey",
        "api-key",
        "token",
        "private_key",
        "client_secret",
    ]
    .iter()
    .any(|w| k.contains(w))
        && !k.contains("policy")
        && !k.ends_with("_name")
}

/// The kinds found in `text` (for `lethe scan`).
pub fn kinds_in(text: &str) -> Vec<Kind> {
    let mut k: Vec<Kind> = find(text).into_iter().map(|s| s.kind).collect();
    k.sort();
    k.dedup();
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_and_mod97_work_on_published_examples() {
        assert!(luhn_valid("4111 1111 1111 1111"), "Visa test number passes Luhn");
        assert!(!luhn_valid("4111 1111 1111 1112"), "one digit off fails Luhn");
        assert!(iban_valid("GB82 WEST 1234 5698 7654 32"), "the ISO 13616 example IBAN passes mod-97");
        assert!(!iban_valid("GB82 WEST 1234 5698 7654 33"), "one digit off fails mod-97");
    }

    #[test]
    fn refuse_names_kind_and_offsets_but_not_the_value() {
        let mut g = Guard::new(Policy { secrets: SecretsMode::Refuse, pii: PiiMode::Tag });
        let secret = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
        let err = g.text("content", &format!("use {secret} now")).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.code(), "invalid_input");
        assert!(msg.contains("github_token at bytes 4..44"), "kind and position: {msg}");
        assert!(!msg.contains(secret), "the message must not carry the value: {msg}");
    }

    #[test]
    fn pii_tag_mode_keeps_text_and_adds_tags() {
        let mut g = Guard::new(Policy::default());
        let t = g.text("content", "mail ana.lopez@example.org about it").unwrap();
        assert_eq!(t, "mail ana.lopez@example.org about it");
        assert_eq!(g.with_pii_tags(vec!["x".into()]), vec!["x".to_string(), "pii:email".to_string()]);
    }

    /// `find` without the triggers: every pattern runs on every text.
    fn find_ungated(text: &str) -> Vec<Span> {
        let mut out = Vec::new();
        for p in SECRET_PATTERNS.iter().chain(PII_PATTERNS.iter()) {
            push(&mut out, text, p);
        }
        push_random(&mut out, text);
        resolve(out)
    }

    /// Pieces of every pattern (its literals, separators, digits and letters of both cases, and
    /// the Unicode characters that case-fold onto ASCII or count as digits) and whole examples.
    const PIECES: &[&str] = &[
        "-----BEGIN ",
        "RSA ",
        "PRIVATE KEY",
        "-----",
        "-----END ",
        "AKIA",
        "ASIA",
        "ghp_",
        "gho_",
        "github_pat_",
        "glpat-",
        "https://hooks.slack.com/",
        "services/",
        "xoxb-",
        "sk_live_",
        "rk_test_",
        "whsec_",
        "sk-ant-api03-",
        "sk-",
        "proj-",
        "AIza",
        "eyJ",
        ".",
        "://",
        "postgres",
        "user",
        ":",
        "@",
        "host",
        "password",
        "PassWord",
        "pwd",
        "api_key",
        "apikey",
        "ACCESS-TOKEN",
        "client_secret",
        "token",
        "ſecret",
        "\u{212a}ey",
        " is ",
        "=",
        "\"",
        "'",
        "bearer ",
        "Bearer\t",
        "+",
        "(",
        ")",
        "-",
        " ",
        "\n",
        "0",
        "4",
        "7",
        "12",
        "4111",
        "1111",
        "555",
        "GB82",
        "WEST",
        "١٢٣",
        "a",
        "Z",
        "x",
        "ana.lopez",
        "example.org",
        "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
        "Zq8Xw2Lp9Rt4",
        "4111 1111 1111 1111",
        "+1 415 555 0134",
        "(415) 555-0134",
        "GB82 WEST 1234 5698 7654 32",
        "akia",
        "pass",
        "pw",
        "login",
        "user ",
        "/",
        " for ",
        "api key ",
        "[at]",
        "(dot)",
        " at ",
        " dot ",
        "com",
        "ssn ",
        "078-05-1120",
        "MIIEvQIBADAN",
        "b3BlbnNzaC1rZXktdjE",
        "3f9a8c7e6d5b4a3f2e1d0c9b8a7f6e5d",
        "4111.1111.1111.1111",
        "order ",
        "trace id ",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The triggers only skip work: on any text, `find` gives what running every pattern
        /// gives.
        #[test]
        fn the_triggers_skip_no_match(parts in proptest::collection::vec(0..PIECES.len(), 0..24)) {
            let text: String = parts.iter().map(|&i| PIECES[i]).collect();
            proptest::prop_assert_eq!(find_normal(&text), find_ungated(&text), "{:?}", text);
        }
    }

    /// Every pattern's trigger matches wherever the pattern does, on each pattern's examples.
    #[test]
    fn each_trigger_matches_its_patterns_examples() {
        let examples = [
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
            "glpat-aB3dE5fG7hI9jK1lM3nO5",
            "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXX",
            "xoxb-1234567890-abcdef",
            "sk_live_aB3dE5fG7hI9jK1lM3",
            "sk-ant-api03-aB3dE5fG7hI9jK1lM3nO5pQ7",
            "sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7",
            "AIzaSyA-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1v",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
            "postgres://app:s3cr3t-pass@db.internal:5432/x",
            "password = \"hunter2hunter2\"",
            "Authorization: Bearer aB3dE5fG7hI9jK1lM3nO5",
            "mail ana.lopez@example.org",
            "GB82 WEST 1234 5698 7654 32",
            "4111 1111 1111 1111",
            "+1 415 555 0134",
            "the root password for db01 is Tr0ub4dor&3",
            "login admin / S3cure#Pa55",
            "user deploy password Xy7!kq2Pz",
            "datadog api key 3f9a8c7e6d5b4a3f2e1d0c9b8a7f6e5d",
            "body MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw",
            "SSN 078-05-1120",
            "alice [at] example [dot] com",
        ];
        let triggers = &*ANY;
        for (i, p) in SECRET_PATTERNS.iter().chain(PII_PATTERNS.iter()).enumerate() {
            let hits: Vec<&str> = examples.iter().copied().filter(|e| p.re().is_match(e)).collect();
            assert!(!hits.is_empty(), "{:?} has an example", p.kind);
            for e in hits {
                assert!(triggers.matches(e).matched(i), "{:?}'s trigger misses {e:?}", p.kind);
            }
        }
    }
}
