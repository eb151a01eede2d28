//! The policy: what a memory's facts mean. Settings (the seeds' defaults, audited), decay
//! (recency, usage, the ForgetScore with its reasons), forgetting (the snapshot that scores
//! every memory at once, quarantine, listing, statistics, the batch), the secrets and
//! personal-data guard, and the reads-like-dialogue lint.

pub mod decay;
pub mod dialogue;
pub mod forgetting;
pub mod redact;
pub mod settings;
