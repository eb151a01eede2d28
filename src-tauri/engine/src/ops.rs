//! The memory operations people and agents call: remember, edit, pin, quarantine, restore,
//! erase (`lifecycle`, over the shared row changes in `rows` and the write rules in
//! `validate`; a long-running writer groups concurrent remembers in `group_commit`),
//! procedural memory with compare-and-swap and reflection notes, the reversible archive,
//! recall and its log, recall statistics, the audit, sessions, the secrets scan, the
//! duplicates review and the Overview's health lists, the rule that agents leave a person's
//! pins alone (`pins`), forget runs that can be undone (`runs`), and the quarantine searched,
//! sorted and paged for review (`quarantine_view`).

pub mod answers;
pub mod archive;
pub mod audit;
pub mod duplicates;
pub mod group_commit;
pub mod health;
pub mod lifecycle;
pub mod meta;
pub mod period;
pub mod pins;
pub mod procedural;
pub mod quarantine_view;
pub mod recall;
pub mod recall_log;
pub mod rows;
pub mod runs;
pub mod scan;
pub mod session;
pub mod validate;
