//! Before a command runs: the instant it is evaluated at, who acts, how long the process
//! waits for a team server, and what the store lacks (vectors).

use lethe_engine::{store, time, Error, Result};

use super::Cli;

/// `--now` for a command that reads; a command that writes uses the clock.
pub(super) fn now_of(flag: Option<&str>, writes: bool) -> Result<time::Instant> {
    match flag {
        Some(n) => {
            let t = time::parse(n)?;
            if writes {
                return Err(Error::invalid(
                    "--now is only for commands that read; commands that write use the clock, so no date in the store can be forged",
                ));
            }
            Ok(t)
        }
        None => Ok(chrono::Utc::now()),
    }
}

/// Who acts: `user` only for a person at an interactive terminal, never claimed
/// by a process whose input is not one; `agent:cli` by default otherwise.
pub(super) fn resolve_actor(claimed: Option<&str>, on_terminal: bool) -> Result<String> {
    use lethe_engine::actor;
    match claimed {
        None if on_terminal => Ok(actor::USER.to_string()),
        None => Ok(actor::CLI_AGENT.to_string()),
        Some(a) => {
            let a = actor::parse(a)?;
            if actor::is_person(a) && !on_terminal {
                return Err(Error::Forbidden(
                    "`--actor user` is the person at an interactive terminal; this lethe's input is not a terminal \
                     (agents act as `agent:<name>`)"
                        .into(),
                ));
            }
            Ok(a.to_string())
        }
    }
}

/// The actor a team server's role imposes, if any, and whether the role only reads (see
/// [`super::run`]).
pub(super) fn team_actor(conn: &store::Connection, cli: &Cli, writes: bool) -> Result<(Option<String>, bool)> {
    use lethe_engine::storage::postgres::{self, Role};
    if !conn.is_postgres() {
        return Ok((None, false));
    }
    let (name, role) = postgres::role_of(conn)?;
    match role {
        Role::Reader if writes => Err(Error::Forbidden(format!(
            "the role {name} reads the team store and writes nothing (a curator or an agent role writes)"
        ))),
        Role::Agent => {
            let own = format!("agent:{name}");
            match cli.actor.as_deref() {
                Some(claimed) if claimed != own => {
                    Err(Error::Forbidden(format!("the role {name} acts as {own} on the team store, not as {claimed}")))
                }
                _ => Ok((Some(own), false)),
            }
        }
        Role::Reader => Ok((None, true)),
        // The team lead or the owner: a person the server signed in, named in the audit by
        // the role (a claimed actor is not taken: the role is who acts).
        Role::Curator | Role::Owner => {
            let own = lethe_engine::actor::person_named(&name);
            match cli.actor.as_deref() {
                Some(claimed) if claimed != own && claimed != lethe_engine::actor::USER => {
                    Err(Error::Forbidden(format!("the role {name} acts as {own} on the team store, not as {claimed}")))
                }
                _ => Ok((Some(own), false)),
            }
        }
        Role::Other => Ok((None, false)),
    }
}

/// The person's confirmation on the terminal: `question` on stderr, `yes` or `y` on stdin.
pub(super) fn confirm_on_terminal(question: &str) -> Result<()> {
    use std::io::{BufRead, Write};
    let mut err = std::io::stderr();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Error::ConfirmationRequired(format!("{question} — not confirmed, nothing was changed"))),
    }
}

/// How long a `--read-only` session may run its statements in all: `$LETHE_READ_ONLY_DEADLINE_SECS`,
/// else 30 s (a list or recall of a big store takes well under a second).
pub(super) fn read_only_deadline() -> std::time::Duration {
    let secs = std::env::var("LETHE_READ_ONLY_DEADLINE_SECS").ok().and_then(|v| v.parse::<u64>().ok());
    std::time::Duration::from_secs(secs.filter(|s| *s > 0).unwrap_or(30))
}

/// `--db-wait`, else `$LETHE_DB_WAIT`, else the engine's default.
pub(super) fn db_wait(flag: Option<f64>) -> Result<Option<std::time::Duration>> {
    let (secs, from) = match flag {
        Some(s) => (s, "--db-wait"),
        None => match std::env::var("LETHE_DB_WAIT").ok().filter(|v| !v.trim().is_empty()) {
            Some(v) => (
                v.trim()
                    .parse::<f64>()
                    .map_err(|_| Error::invalid(format!("LETHE_DB_WAIT={v:?}: a number of seconds")))?,
                "LETHE_DB_WAIT",
            ),
            None => return Ok(None),
        },
    };
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(Error::invalid(format!("{from} {secs}: seconds from 0 to 86400")));
    }
    Ok(Some(std::time::Duration::from_secs_f64(secs)))
}

/// Embeds the memories another program (or a build without the model) stored without a
/// vector, so that recall and duplication see them; resumable, a no-op when all have one.
pub(super) fn ensure_vectors(conn: &mut store::Connection) -> Result<()> {
    if let Some(e) = lethe_engine::embed::shared() {
        let never = std::sync::atomic::AtomicBool::new(false);
        lethe_engine::semantic::backfill(conn, e, |_, _| {}, &never)?;
    }
    Ok(())
}
