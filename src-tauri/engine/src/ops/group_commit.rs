//! Group commit for a long-running writer: the `remember` calls that arrive while
//! another is being written wait for the connection, and the first of them to get it writes
//! all that are waiting in one transaction ([`lifecycle::remember_many`]): one `BEGIN` and one
//! `COMMIT` for the group, each call with its own answer, error and audit row.
//!
//! Nothing waits on a timer: a call that finds the connection free is written at once, alone,
//! so a lone call is never delayed. Calls are grouped only when they would have waited for the
//! connection anyway.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::lifecycle::{self, NewMemory, RememberCall, RememberOutcome};
use crate::storage::db::Connection;
use crate::time::Instant;

/// The most calls written in one transaction; the rest wait for the next group.
pub const MAX_GROUP: usize = 256;

struct Waiting {
    ticket: u64,
    memory: NewMemory,
    actor: String,
    now: Instant,
}

#[derive(Default)]
struct State {
    waiting: Vec<Waiting>,
    /// A call is writing groups (the leader); the others wait for their answers.
    leading: bool,
    answers: HashMap<u64, Result<RememberOutcome>>,
    next_ticket: u64,
    counts: GroupCounts,
}

/// The calls waiting to be written, shared by every thread that writes through one connection.
///
/// The first call that finds no other writing becomes the leader: it takes the connection
/// and writes every call waiting, in groups, until its own is answered, then hands the lead
/// to a call still waiting. The others wait for their answers, not for the connection (a
/// waiter queued on the connection's lock could be overtaken again and again).
#[derive(Default)]
pub struct RememberQueue {
    state: Mutex<State>,
    answered: Condvar,
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

/// Ends a lead however it ends: calls taken but not answered (the write panicked) get an
/// error, and a waiting call can lead next.
struct Lead<'a> {
    queue: &'a RememberQueue,
    taken: Vec<u64>,
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        let mut st = lock(&self.queue.state);
        for t in self.taken.drain(..) {
            st.answers.entry(t).or_insert_with(|| {
                Err(Error::Io(std::io::Error::other("the group commit writing this memory stopped")))
            });
        }
        st.leading = false;
        self.queue.answered.notify_all();
    }
}

impl RememberQueue {
    pub fn new() -> RememberQueue {
        RememberQueue::default()
    }

    /// `remember` through `conn`, grouped with the calls of other threads that are waiting to
    /// be written. Blocks until this call is written (by this thread or by the leader).
    pub fn remember(
        &self,
        conn: &Mutex<Connection>,
        memory: NewMemory,
        actor: &str,
        now: Instant,
    ) -> Result<RememberOutcome> {
        let mut st = lock(&self.state);
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.waiting.push(Waiting { ticket, memory, actor: actor.to_string(), now });
        loop {
            if let Some(answer) = st.answers.remove(&ticket) {
                return answer;
            }
            if st.leading {
                st = self.answered.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            st.leading = true;
            drop(st);
            self.lead(conn, ticket);
            st = lock(&self.state);
        }
    }

    /// Writes the waiting calls, a group per transaction, until `mine` is answered.
    fn lead(&self, conn: &Mutex<Connection>, mine: u64) {
        let mut lead = Lead { queue: self, taken: Vec::new() };
        loop {
            let mut c = lock(conn);
            let group: Vec<Waiting> = {
                let mut st = lock(&self.state);
                let n = st.waiting.len().min(MAX_GROUP);
                st.waiting.drain(..n).collect()
            };
            lead.taken = group.iter().map(|w| w.ticket).collect();
            let calls: Vec<RememberCall> =
                group.iter().map(|w| RememberCall { memory: &w.memory, actor: &w.actor, now: w.now }).collect();
            let answers = lifecycle::remember_many(&mut c, &calls);
            drop(c);
            let mut st = lock(&self.state);
            st.counts.groups += 1;
            st.counts.calls += group.len() as u64;
            st.counts.largest = st.counts.largest.max(group.len() as u64);
            let done = lead.taken.contains(&mine);
            for (t, a) in lead.taken.drain(..).zip(answers) {
                st.answers.insert(t, a);
            }
            self.answered.notify_all();
            if done {
                return;
            }
        }
    }

    /// How the calls were grouped so far.
    pub fn counts(&self) -> GroupCounts {
        lock(&self.state).counts
    }

    /// Calls waiting to be written now.
    pub fn waiting(&self) -> usize {
        lock(&self.state).waiting.len()
    }
}
