//! Who acts. One grammar for every interface (docs/cli.md): `user` is the person
//! (the window, or the CLI on an interactive terminal); `agent:<name>` with a name of
//! `[A-Za-z0-9._-]{1,64}` holding a letter or digit is an agent; `policy` is reserved for the
//! engine's own batch.
//! On a team store a person is also `user:<role>`: the curator or owner whose database role
//! signed in, named by the server and never claimable. Anything else is `invalid_input`. Person-only operations (settings, hard delete) check
//! [`require_person`] in the engine, so no interface can skip it.

use crate::{Error, Result};

/// The person at the window or at an interactive terminal.
pub const USER: &str = "user";
/// The engine's forgetting batch; no caller may claim it.
pub const POLICY: &str = "policy";
/// What the CLI records when it is not on a terminal and no `--actor` is given.
pub const CLI_AGENT: &str = "agent:cli";

const MAX_NAME: usize = 64;

/// Agent names that would read as the person or the engine in the audit (`agent:user`).
const RESERVED: &[&str] = &["user", "policy", "system", "person", "lethe"];

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && name.bytes().any(|b| b.is_ascii_alphanumeric())
        && !RESERVED.iter().any(|r| name.eq_ignore_ascii_case(r))
}

/// Checks a claimed actor against the grammar: `user` or `agent:<name>`.
/// `policy` and every other string are refused.
pub fn parse(actor: &str) -> Result<&str> {
    if actor == USER {
        return Ok(actor);
    }
    match actor.strip_prefix("agent:") {
        Some(name) if valid_name(name) => Ok(actor),
        _ => Err(Error::invalid(format!(
            "invalid actor {actor:?}: expected `user` or `agent:<name>` with a name of 1-64 characters from A-Z a-z 0-9 . _ - \
             holding a letter or digit (not user, policy, system, person or lethe)"
        ))),
    }
}

/// `agent:<name>` for a self-declared client name (MCP's `clientInfo.name`): characters
/// outside the grammar become `_`, the name is cut to 64 bytes, an empty name is `unnamed`,
/// a reserved one gets the prefix `client-`. A client can therefore never be recorded as
/// `user` or `policy`, nor as `agent:user`.
pub fn agent_from_client_name(name: &str) -> String {
    let cleaned: String = name
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .take(MAX_NAME)
        .collect();
    let cleaned = if !cleaned.bytes().any(|b| b.is_ascii_alphanumeric()) {
        "unnamed".to_string()
    } else if RESERVED.iter().any(|r| cleaned.eq_ignore_ascii_case(r)) {
        format!("client-{cleaned}")
    } else {
        cleaned
    };
    format!("agent:{cleaned}")
}

/// Whether the actor is the person: `user`, or `user:<role>` on a team store.
pub fn is_person(actor: &str) -> bool {
    actor == USER || actor.strip_prefix("user:").is_some_and(valid_person_name)
}

fn valid_person_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && name.bytes().any(|b| b.is_ascii_alphanumeric())
}

/// `user:<role>` for the curator or owner signed in to a team store as the database role
/// `role` (the server authenticated it, so the audit names it). Characters outside the
/// grammar become `_`, as for client names.
pub fn person_named(role: &str) -> String {
    let cleaned: String = role
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .take(MAX_NAME)
        .collect();
    if !cleaned.bytes().any(|b| b.is_ascii_alphanumeric()) {
        USER.to_string()
    } else {
        format!("user:{cleaned}")
    }
}

/// Through what the person acts in this process, recorded with their audit rows (`via`):
/// the desktop window says `window`, the CLI on an interactive terminal `terminal`. A
/// terminal is not proof of a person: anything a person can type there, a program with a
/// pseudo-terminal can type too (README, "Who acts").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The desktop window.
    Window,
    /// The CLI on an interactive terminal.
    Terminal,
}

impl Via {
    /// The name recorded with audit rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Window => "window",
            Via::Terminal => "terminal",
        }
    }
}

static VIA: std::sync::OnceLock<Via> = std::sync::OnceLock::new();

/// Declares, once per process, through what the person acts (the interface's start-up).
/// A second call with another value is ignored: a process is one interface.
pub fn set_via(via: Via) {
    let _ = VIA.set(via);
}

/// What [`set_via`] declared, if anything.
pub fn via() -> Option<Via> {
    VIA.get().copied()
}

/// `via` of an audit row written by `actor`: set for the person only.
pub fn via_of(actor: &str) -> Option<&'static str> {
    if is_person(actor) && !actor.starts_with("user:") {
        via().map(Via::as_str)
    } else {
        None
    }
}

/// The person-only check with the store's setting `person_ops_window_only`: when it is on,
/// the person acts in the window alone, and a terminal (where a program with a pseudo-terminal
/// can type as well) is refused with `forbidden`.
pub fn require_person_with(actor: &str, what: &str, window_only: bool) -> Result<()> {
    require_person(actor, what)?;
    if window_only && actor == USER && via() != Some(Via::Window) {
        return Err(Error::Forbidden(format!(
            "{what} is kept to the window on this store (setting person_ops_window_only); a terminal is not proof of a \
             person, so the lethe CLI may not do it"
        )));
    }
    Ok(())
}

/// `forbidden` (exit 6) unless the person acts.
pub fn require_person(actor: &str, what: &str) -> Result<()> {
    if is_person(actor) {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "{what} is for the person (the window, or the lethe CLI on an interactive terminal); {actor} may not do it"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_accepts_user_and_agents_only() {
        assert!(parse("user").is_ok());
        assert!(parse("agent:claude-code_1.2").is_ok());
        assert!(parse(&format!("agent:{}", "a".repeat(64))).is_ok());
        for bad in [
            "policy",
            "agent:user",
            "agent:Policy",
            "agent:",
            "agent:user name",
            "agent:\u{202e}resu",
            "agent:a\u{200b}b",
            "User",
            " user",
            "agent:x/y",
            "agent:.",
            "agent:..",
            "agent:-_.",
            "system",
            &format!("agent:{}", "a".repeat(65)),
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.code(), "invalid_input", "{bad:?}");
        }
    }

    #[test]
    fn client_names_never_become_the_person() {
        assert_eq!(agent_from_client_name("user"), "agent:client-user");
        assert_eq!(agent_from_client_name("policy"), "agent:client-policy");
        assert_eq!(agent_from_client_name("My Client\u{202e}"), "agent:My_Client_");
        assert_eq!(agent_from_client_name("  "), "agent:unnamed");
        assert_eq!(agent_from_client_name(&"x".repeat(100)).len(), "agent:".len() + 64);
        assert!(parse(&agent_from_client_name("é ü\u{0}")).is_ok());
    }

    #[test]
    fn a_team_store_names_its_person_and_nobody_claims_that_name() {
        assert_eq!(person_named("lead_ana"), "user:lead_ana");
        assert_eq!(person_named("Ana Lima"), "user:Ana_Lima");
        assert!(is_person(&person_named("lead_ana")));
        assert!(!is_person("user:"));
        assert!(!is_person("user:a b"));
        assert_eq!(parse("user:lead_ana").unwrap_err().code(), "invalid_input", "a claim of a person's name");
    }

    #[test]
    fn only_the_person_passes_the_person_check() {
        assert!(require_person("user", "x").is_ok());
        assert!(require_person("user:lead", "x").is_ok());
        let e = require_person("agent:bot", "changing settings").unwrap_err();
        assert_eq!(e.code(), "forbidden");
        assert_eq!(e.exit_code(), 6);
    }
}
