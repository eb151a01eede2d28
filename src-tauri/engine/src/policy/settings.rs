//! Policy settings with the defaults of the seeds, stored in `lethe_settings` as JSON values.

use crate::storage::db::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::Tier;

/// The ForgetScore's weights (docs/scores.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    /// `w_R`, on `1 − recency`.
    pub recency: f64,
    /// `w_U`, on `1 − usage`.
    pub usage: f64,
    /// `w_D`, on duplication.
    pub duplication: f64,
    /// `w_I`, subtracted times importance.
    pub importance: f64,
    /// `w_P`, subtracted when pinned.
    pub pinned: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { recency: 0.35, usage: 0.25, duplication: 0.20, importance: 0.15, pinned: 0.30 }
    }
}

/// Each tier's half-life in days: the age at which its recency is one half.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(deny_unknown_fields, default)]
pub struct HalfLives {
    /// Days, working memories.
    pub working: f64,
    /// Days, episodic memories.
    pub episodic: f64,
    /// Days, procedural memories.
    pub procedural: f64,
    /// Days, semantic memories.
    pub semantic: f64,
}

impl Default for HalfLives {
    fn default() -> Self {
        HalfLives { working: 2.0, episodic: 30.0, procedural: 90.0, semantic: 180.0 }
    }
}

impl HalfLives {
    /// The half-life of `tier`.
    pub fn get(&self, tier: Tier) -> f64 {
        match tier {
            Tier::Working => self.working,
            Tier::Episodic => self.episodic,
            Tier::Procedural => self.procedural,
            Tier::Semantic => self.semantic,
        }
    }
}

/// Recall's weights: `score = w_sim·S + w_rec·R + w_scene·C + w_pri·Pr` (docs/recall.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(deny_unknown_fields, default)]
pub struct RecallWeights {
    /// On S, the text match (lexical and semantic).
    pub similarity: f64,
    /// On R, recency.
    pub recency: f64,
    /// On C, scene fit (the share of the caller's context a memory matches).
    pub scene: f64,
    /// On Pr, priority (importance, pinned).
    pub priority: f64,
}

impl Default for RecallWeights {
    /// Text relevance dominates; recency, scene fit and priority together add at most 0.3,
    /// enough to reorder close text matches (a fresh note from this session, a pinned rule)
    /// but never to lift a candidate over one whose normalised BM25 is more than 0.43 higher.
    /// docs/recall.md requires these to rank no worse than BM25 alone; `tests/recall_quality.rs`
    /// checks it on the labelled set (recall@10 0.894 vs 0.859, MRR@10 0.889 vs 0.852 as
    /// committed). A heavier recency weight loses there (0.7/0.3/0/0 falls below BM25 alone)
    /// because many old facts are still true.
    fn default() -> Self {
        RecallWeights { similarity: 0.7, recency: 0.1, scene: 0.1, priority: 0.1 }
    }
}

/// The store's policy, as people set it (`lethe settings`, the window's Settings view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Each tier's half-life in days.
    pub half_life_days: HalfLives,
    /// The ForgetScore's weights.
    pub weights: Weights,
    /// The ForgetScore at or above which the batch quarantines.
    pub threshold: f64,
    /// Lower edge of the review band; its upper edge is the threshold.
    pub review_band_low: f64,
    /// Days a quarantined memory stays restorable before the batch purges it.
    pub quarantine_days: f64,
    /// `A = exp(-days_since_last_accessed / access_decay_days)`.
    pub access_decay_days: f64,
    /// Working memories older than this many hours leave the working window.
    pub working_window_hours: f64,
    /// Working memories past this many in a session leave the working window.
    pub working_max_turns: i64,
    /// The largest content a memory may have, in bytes.
    pub max_content_bytes: usize,
    /// Texts too trivial to store ("ok", "thanks"): `remember` skips them.
    pub trivial_phrases: Vec<String>,
    /// Recall's weights.
    pub recall_weights: RecallWeights,
    /// Similarity above which a memory counts as a duplicate in the reasons ("duplicate of").
    pub duplicate_reason_above: f64,
    /// Secrets (API keys, tokens, private keys, passwords) in what is written: `redact`
    /// (replaced by `[REDACTED:<kind>]`), `refuse` (the write fails) or `allow`.
    pub secrets: crate::redact::SecretsMode,
    /// Personal data (e-mail, phone, card numbers, IBANs): `tag` (`pii:<kind>` tags),
    /// `redact` or `allow`.
    pub pii: crate::redact::PiiMode,
    /// Half-life of task logs (an ended session's working memories) in recall.
    pub task_log_half_life_days: f64,
    /// How many agent recalls the recall log keeps (oldest dropped); 0 keeps none.
    pub recall_log_max_rows: i64,
    /// The person-only operations (settings, hard delete) in the window alone: the CLI refuses
    /// them with `forbidden` even on a terminal, for people whose agents have a shell (a
    /// program with a pseudo-terminal can type what a person types).
    pub person_ops_window_only: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            half_life_days: HalfLives::default(),
            weights: Weights::default(),
            threshold: 0.6,
            review_band_low: 0.5,
            quarantine_days: 30.0,
            access_decay_days: 30.0,
            working_window_hours: 48.0,
            working_max_turns: 50,
            max_content_bytes: 1024 * 1024,
            trivial_phrases: [
                "ok",
                "okay",
                "thanks",
                "thank you",
                "got it",
                "sure",
                "yes",
                "no",
                "done",
                "k",
                "ty",
                "thx",
                "cool",
                "nice",
                "great",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            recall_weights: RecallWeights::default(),
            duplicate_reason_above: 0.7,
            secrets: crate::redact::SecretsMode::default(),
            pii: crate::redact::PiiMode::default(),
            task_log_half_life_days: 30.0,
            recall_log_max_rows: 10_000,
            person_ops_window_only: false,
        }
    }
}

impl Settings {
    /// Checks every value (finite, in range, weights non-negative): a typed error names the
    /// first that is not.
    pub fn validate(&self) -> Result<()> {
        let finite_pos = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(Error::invalid(format!("{name} must be a positive number, got {v}")))
            }
        };
        let finite_nonneg = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(Error::invalid(format!("{name} must be a non-negative number, got {v}")))
            }
        };
        for t in Tier::ALL {
            finite_pos(&format!("half_life_days.{t}"), self.half_life_days.get(t))?;
        }
        let w = &self.weights;
        for (n, v) in [
            ("recency", w.recency),
            ("usage", w.usage),
            ("duplication", w.duplication),
            ("importance", w.importance),
            ("pinned", w.pinned),
        ] {
            finite_nonneg(&format!("weights.{n}"), v)?;
        }
        let rw = &self.recall_weights;
        for (n, v) in
            [("similarity", rw.similarity), ("recency", rw.recency), ("scene", rw.scene), ("priority", rw.priority)]
        {
            finite_nonneg(&format!("recall_weights.{n}"), v)?;
        }
        if !(self.threshold.is_finite() && self.threshold > 0.0 && self.threshold <= 2.0) {
            return Err(Error::invalid("threshold must be in (0, 2]"));
        }
        if !(self.review_band_low.is_finite() && self.review_band_low <= self.threshold) {
            return Err(Error::invalid("review_band_low must not exceed the threshold"));
        }
        finite_nonneg("quarantine_days", self.quarantine_days)?;
        finite_pos("access_decay_days", self.access_decay_days)?;
        finite_pos("task_log_half_life_days", self.task_log_half_life_days)?;
        finite_pos("working_window_hours", self.working_window_hours)?;
        if self.working_max_turns < 1 {
            return Err(Error::invalid("working_max_turns must be at least 1"));
        }
        if self.max_content_bytes == 0 || self.max_content_bytes > 64 * 1024 * 1024 {
            return Err(Error::invalid("max_content_bytes must be in 1..=64 MiB"));
        }
        if !(0..=10_000_000).contains(&self.recall_log_max_rows) {
            return Err(Error::invalid(format!(
                "recall_log_max_rows must be in 0..=10000000, got {}",
                self.recall_log_max_rows
            )));
        }
        if !(0.0..=1.0).contains(&self.duplicate_reason_above) {
            return Err(Error::invalid("duplicate_reason_above must be in [0, 1]"));
        }
        Ok(())
    }

    /// Loads the settings stored in the file over the defaults.
    pub fn load(conn: &Connection) -> Result<Settings> {
        let raw: Option<String> = conn
            .prepare_cached("SELECT value FROM lethe_settings WHERE key = 'policy'")?
            .query_row([], |r| r.get(0))
            .optional()?;
        match raw {
            None => Ok(Settings::default()),
            Some(raw) => Ok(serde_json::from_str(&raw)?),
        }
    }

    /// Stores the settings (validated) and audits the change in the same transaction.
    pub fn store(conn: &mut Connection, new: &Settings, actor: &str, now: crate::time::Instant) -> Result<Settings> {
        new.validate()?;
        crate::model::validate_actor(actor)?;
        crate::actor::require_person(actor, "changing settings")?;
        let window_only = Settings::load(conn)?.person_ops_window_only;
        crate::actor::require_person_with(actor, "changing settings", window_only)?;
        crate::store::write_tx(conn, |tx| {
            let before = Settings::load(tx)?;
            if tx.is_postgres() {
                // The team lead's function on a team store: it checks the fields the server relies
                // on and writes the `settings` action, its before state the stored row.
                tx.query_row(
                    "SELECT lethe_settings_store(?1, ?2, ?3, ?4, ?5)",
                    crate::storage::db::params![
                        serde_json::to_string(new)?,
                        serde_json::to_string(&before)?,
                        actor,
                        crate::actor::via_of(actor),
                        crate::time::format(now)
                    ],
                    |r| r.get::<_, i64>(0),
                )?;
                return Ok(new.clone());
            }
            tx.execute(
                "INSERT OR REPLACE INTO lethe_settings (key, value) VALUES ('policy', ?1)",
                [serde_json::to_string(new)?],
            )?;
            crate::audit::record_action(
                tx,
                None,
                "settings",
                actor,
                Some(&serde_json::to_value(&before)?),
                Some(&serde_json::to_value(new)?),
                now,
            )?;
            Ok(new.clone())
        })
    }

    /// Applies one `KEY VALUE` change given as a dotted path (`weights.recency`, `threshold`).
    pub fn with_value(&self, key: &str, value: &str) -> Result<Settings> {
        let mut json = serde_json::to_value(self)?;
        let mut slot = &mut json;
        for part in key.split('.') {
            slot = slot.get_mut(part).ok_or_else(|| Error::invalid(format!("unknown setting {key:?}")))?;
        }
        let parsed: serde_json::Value =
            serde_json::from_str(value).unwrap_or(serde_json::Value::String(value.to_string()));
        *slot = parsed;
        let out: Settings =
            serde_json::from_value(json).map_err(|e| Error::invalid(format!("bad value for {key}: {e}")))?;
        out.validate()?;
        Ok(out)
    }
}
