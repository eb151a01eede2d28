//! Group commit for a long-running writer (issue #19): the `remember` calls that arrive while
//! another is being written wait for the connection, and the first of them to get it writes
//! all that are waiting in one transaction ([`lifecycle::remember_many`]): one `BEGIN` and one
//! `COMMIT` for the group, each call with its own answer, error and audit row.
//!
//! Nothing waits on a timer: a call that finds the connection free is written at once, alone,
//! so a lone call is never delayed. Calls are grouped only when they would have waited for the
//! connection anyway.

use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::lifecycle::{self, NewMemory, RememberCall, RememberOutcome};
use crate::storage::db::Connection;
use crate::time::Instant;

/// The most calls written in one transaction; the rest wait for the next group.
pub const MAX_GROUP: usize = 256;

struct Waiting {
    memory: NewMemory,
    actor: String,
    now: Instant,
    answer: mpsc::SyncSender<Result<RememberOutcome>>,
}

/// The calls waiting to be written, shared by every thread that writes through one connection.
#[derive(Default)]
pub struct RememberQueue {
    waiting: Mutex<Vec<Waiting>>,
    counts: Mutex<GroupCounts>,
}

/// How the calls were grouped so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCounts {
    /// Transactions written.
    pub groups: u64,
    /// Calls answered through them.
    pub calls: u64,
    /// The most calls of one transaction.
    pub largest: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RememberQueue {
    pub fn new() -> RememberQueue {
        RememberQueue::default()
    }

    /// `remember` through `conn`, grouped with the calls of other threads that are waiting for
    /// it. Blocks until this call is written (by this thread or by the one that took it).
    pub fn remember(
        &self,
        conn: &Mutex<Connection>,
        memory: NewMemory,
        actor: &str,
        now: Instant,
    ) -> Result<RememberOutcome> {
        let (answer, mine) = mpsc::sync_channel(1);
        lock(&self.waiting).push(Waiting { memory, actor: actor.to_string(), now, answer });
        loop {
            {
                let mut c = lock(conn);
                // Whoever holds the connection writes what is waiting, this call included
                // unless a writer before took it (its answer is then already sent).
                let group: Vec<Waiting> = {
                    let mut w = lock(&self.waiting);
                    let n = w.len().min(MAX_GROUP);
                    w.drain(..n).collect()
                };
                if !group.is_empty() {
                    self.write(&mut c, group);
                }
            }
            match mine.try_recv() {
                Ok(answer) => return answer,
                // More than MAX_GROUP were waiting before this call: write the next group.
                Err(mpsc::TryRecvError::Empty) => continue,
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(Error::Io(std::io::Error::other("the group commit writing this memory stopped")));
                }
            }
        }
    }

    /// How the calls were grouped so far.
    pub fn counts(&self) -> GroupCounts {
        *lock(&self.counts)
    }

    /// Calls waiting for the connection now.
    pub fn waiting(&self) -> usize {
        lock(&self.waiting).len()
    }

    fn write(&self, conn: &mut Connection, group: Vec<Waiting>) {
        let calls: Vec<RememberCall> =
            group.iter().map(|w| RememberCall { memory: &w.memory, actor: &w.actor, now: w.now }).collect();
        let answers = lifecycle::remember_many(conn, &calls);
        {
            let mut k = lock(&self.counts);
            k.groups += 1;
            k.calls += group.len() as u64;
            k.largest = k.largest.max(group.len() as u64);
        }
        for (w, a) in group.into_iter().zip(answers) {
            // A caller that is gone (its thread ended) no longer needs its answer.
            let _ = w.answer.send(a);
        }
    }
}
