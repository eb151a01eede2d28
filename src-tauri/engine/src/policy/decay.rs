//! Recency, usage and ForgetScore (docs/scores.md). Pure functions of a memory's facts, the
//! settings and `now`; nothing here reads the clock.

use serde::Serialize;

use crate::model::Tier;
use crate::settings::Settings;
use crate::time::{self, Instant};

/// Tolerance for comparing a score with the threshold, so that a score that only reaches the
/// threshold in the limit is treated consistently by `would_forget` and `never_forgettable`.
pub const EPS: f64 = 1e-9;

/// The facts about a memory that its score depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreInput {
    /// Its tier (which half-life its recency decays with).
    pub tier: Tier,
    /// When it was written.
    pub created_at: Instant,
    /// When it was last read or recalled.
    pub last_accessed: Option<Instant>,
    /// How often it was shown.
    pub views: i64,
    /// How often an agent cited it.
    pub cites: i64,
    /// How often it was edited.
    pub edits: i64,
    /// Its importance, 0-1.
    pub importance: f64,
    /// Pinned memories are never forgotten.
    pub pinned: bool,
    /// Similarity to the most similar other active memory that dominates this one.
    pub duplication: f64,
    /// The memory that dominates it, when it has duplication.
    pub duplicate_of: Option<String>,
    /// "same words" or "same meaning": which similarity made the duplication.
    pub duplicate_kind: Option<&'static str>,
    /// A task log (an ended session's working memory): its recency decays with
    /// `task_log_half_life_days` instead of its tier's half-life.
    pub task_log: bool,
}

/// The five features of the ForgetScore, each in [0, 1] (docs/scores.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Features {
    /// R: Ebbinghaus recency, `exp(-ln2 · age / half-life)`.
    pub recency: f64,
    /// U: usage, the larger of recent access and log-scale reinforcement.
    pub usage: f64,
    /// D: similarity to the dominating duplicate, 0 when it has none.
    pub duplication: f64,
    /// I: importance.
    pub importance: f64,
    /// P: 1 when pinned.
    pub pinned: f64,
}

/// Signed contributions; they add up to the ForgetScore.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Components {
    /// `w_R · (1 − R)`.
    pub recency: f64,
    /// `w_U · (1 − U)`.
    pub usage: f64,
    /// `w_D · D`.
    pub duplication: f64,
    /// `−w_I · I`.
    pub importance: f64,
    /// `−w_P · P`.
    pub pinned: f64,
}

impl Components {
    /// The ForgetScore: the sum of the contributions.
    pub fn sum(&self) -> f64 {
        self.recency + self.usage + self.duplication + self.importance + self.pinned
    }
}

/// A memory's ForgetScore at one moment, with what it is made of and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ForgetScore {
    /// The features.
    pub features: Features,
    /// Their weighted contributions.
    pub components: Components,
    /// The score: the contributions' sum.
    pub forget_score: f64,
    /// The policy's threshold: at or above it the batch quarantines.
    pub threshold: f64,
    /// The reasons in words, largest contribution first.
    pub reasons: Vec<String>,
    /// Whether the score reaches the threshold.
    pub would_forget: bool,
    /// Whether it can never reach it (pinned, or important enough).
    pub never_forgettable: bool,
    /// The score this memory tends to if it is never used again.
    pub asymptote: f64,
    /// When it reaches the threshold if never used again (none if never).
    pub projected_forget_at: Option<String>,
    /// The memory that dominates it, when it has duplication.
    pub duplicate_of: Option<String>,
    /// "same words" or "same meaning", with `duplicate_of`.
    pub duplicate_kind: Option<String>,
}

/// `R = exp(-ln2 · age_days / h)`; a memory dated in the future counts as brand new.
pub fn recency(age_days: f64, half_life_days: f64) -> f64 {
    (-std::f64::consts::LN_2 * age_days.max(0.0) / half_life_days).exp()
}

/// The log-scale reinforcement part of usage: `min(1, (ln(1+v) + 2 ln(1+c) + 0.5 ln(1+e)) / 10)`.
pub fn usage_log(views: i64, cites: i64, edits: i64) -> f64 {
    let l = |n: i64| (1.0 + n.max(0) as f64).ln();
    ((l(views) + 2.0 * l(cites) + 0.5 * l(edits)) / 10.0).min(1.0)
}

/// `A = exp(-days_since_last_accessed / access_decay_days)`, or 0 if never accessed.
pub fn access(days_since_access: Option<f64>, access_decay_days: f64) -> f64 {
    match days_since_access {
        None => 0.0,
        Some(d) => (-d.max(0.0) / access_decay_days).exp(),
    }
}

/// `U = max(A, usage_log)`.
pub fn usage(days_since_access: Option<f64>, views: i64, cites: i64, edits: i64, access_decay_days: f64) -> f64 {
    access(days_since_access, access_decay_days).max(usage_log(views, cites, edits))
}

fn features_at(m: &ScoreInput, s: &Settings, now: Instant) -> Features {
    let age = time::days_between(m.created_at, now);
    let since_access = m.last_accessed.map(|t| time::days_between(t, now));
    Features {
        recency: recency(age, if m.task_log { s.task_log_half_life_days } else { s.half_life_days.get(m.tier) }),
        usage: usage(since_access, m.views, m.cites, m.edits, s.access_decay_days),
        duplication: m.duplication.clamp(0.0, 1.0),
        importance: m.importance.clamp(0.0, 1.0),
        pinned: if m.pinned { 1.0 } else { 0.0 },
    }
}

fn components_of(f: &Features, s: &Settings) -> Components {
    let w = &s.weights;
    Components {
        recency: w.recency * (1.0 - f.recency),
        usage: w.usage * (1.0 - f.usage),
        duplication: w.duplication * f.duplication,
        importance: -w.importance * f.importance,
        pinned: -w.pinned * f.pinned,
    }
}

/// Only the number, for the batch's hot loop.
pub fn score_value(m: &ScoreInput, s: &Settings, now: Instant) -> f64 {
    components_of(&features_at(m, s, now), s).sum()
}

/// Whether `score` reaches the threshold of `s` (within [`EPS`]).
pub fn would_forget(score: f64, s: &Settings) -> bool {
    score >= s.threshold - EPS
}

/// The limit of the score as time goes to infinity with no further use:
/// R → 0 and A → 0, while the log-scale part of usage stays.
pub fn asymptote(m: &ScoreInput, s: &Settings) -> f64 {
    let w = &s.weights;
    let u_floor = usage_log(m.views, m.cites, m.edits);
    w.recency + w.usage * (1.0 - u_floor) + w.duplication * m.duplication.clamp(0.0, 1.0)
        - w.importance * m.importance.clamp(0.0, 1.0)
        - w.pinned * if m.pinned { 1.0 } else { 0.0 }
}

/// The first instant at or after `now` when the score reaches the threshold if nothing else
/// changes, or `None` if it never does. The score never decreases with time, so a bisection
/// on the time axis finds the crossing.
pub fn projected_forget_at(m: &ScoreInput, s: &Settings, now: Instant) -> Option<Instant> {
    if would_forget(score_value(m, s, now), s) {
        return Some(now);
    }
    if !would_forget(asymptote(m, s), s) {
        return None;
    }
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while !would_forget(score_value(m, s, time::add_days(now, hi)), s) {
        hi *= 2.0;
        if hi > 1.0e6 {
            return None;
        }
    }
    // One-minute resolution is plenty for a date shown to people.
    while hi - lo > 1.0 / 1440.0 {
        let mid = (lo + hi) / 2.0;
        if would_forget(score_value(m, s, time::add_days(now, mid)), s) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(time::add_days(now, hi))
}

/// The full explained score.
pub fn forget_score(m: &ScoreInput, s: &Settings, now: Instant) -> ForgetScore {
    let features = features_at(m, s, now);
    let components = components_of(&features, s);
    let score = components.sum();
    let asym = asymptote(m, s);
    let mut reasons = Vec::new();
    if features.recency < 0.3 {
        reasons.push("old".to_string());
    }
    if features.usage < 0.2 {
        reasons.push("unused".to_string());
    }
    if features.duplication > s.duplicate_reason_above {
        match &m.duplicate_of {
            Some(id) => match m.duplicate_kind {
                Some(kind) => reasons.push(format!("duplicate of {id} ({kind})")),
                None => reasons.push(format!("duplicate of {id}")),
            },
            None => reasons.push("duplicate".to_string()),
        }
    }
    if features.importance < 0.3 {
        reasons.push("low importance".to_string());
    }
    if !m.pinned {
        reasons.push("not pinned".to_string());
    }
    ForgetScore {
        features,
        components,
        forget_score: score,
        threshold: s.threshold,
        reasons,
        would_forget: would_forget(score, s),
        never_forgettable: !would_forget(asym, s),
        asymptote: asym,
        projected_forget_at: projected_forget_at(m, s, now).map(time::format),
        duplicate_of: if m.duplication > 0.0 { m.duplicate_of.clone() } else { None },
        duplicate_kind: if m.duplication > 0.0 { m.duplicate_kind.map(String::from) } else { None },
    }
}

/// Words for people: why a memory can or cannot be forgotten by the policy.
pub fn explain_never_forgettable(m: &ScoreInput, s: &Settings) -> Option<String> {
    let f = forget_score(m, s, m.created_at);
    if !f.never_forgettable {
        return None;
    }
    let mut why = Vec::new();
    if m.pinned {
        why.push(format!("it is pinned (−{:.3})", s.weights.pinned));
    }
    if m.importance > 0.0 {
        why.push(format!("its importance {:.3} subtracts {:.3}", m.importance, s.weights.importance * m.importance));
    }
    let ul = usage_log(m.views, m.cites, m.edits);
    if ul > 0.0 {
        why.push(format!("its past use keeps usage at least {ul:.3}"));
    }
    Some(format!(
        "Even if never used again, this memory's score can only approach {:.3}, below the threshold {:.3}, because {}.",
        f.asymptote,
        s.threshold,
        why.join(" and ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Instant {
        time::parse("2026-06-01T00:00:00.000Z").unwrap()
    }

    fn input(tier: Tier, age_days: f64) -> ScoreInput {
        ScoreInput {
            tier,
            created_at: time::add_days(now(), -age_days),
            last_accessed: None,
            views: 0,
            cites: 0,
            edits: 0,
            importance: 0.5,
            pinned: false,
            duplication: 0.0,
            duplicate_of: None,
            duplicate_kind: None,
            task_log: false,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn worked_episodic_60_days() {
        let mut m = input(Tier::Episodic, 60.0);
        m.importance = 0.2;
        let s = Settings::default();
        let f = forget_score(&m, &s, now());
        assert!(close(f.features.recency, 0.25), "two half-lives: R = 1/4, got {}", f.features.recency);
        assert!(close(f.features.usage, 0.0));
        assert!(close(f.forget_score, 0.4825), "0.35·0.75 + 0.25 − 0.03 = 0.4825, got {}", f.forget_score);
        assert!(!f.would_forget);
        assert!(f.never_forgettable, "importance 0.2 caps the asymptote at 0.57");
        assert_eq!(f.projected_forget_at, None);
    }

    #[test]
    fn worked_working_duplicate() {
        let mut m = input(Tier::Working, 10.0);
        m.importance = 0.1;
        m.duplication = 0.9;
        m.duplicate_of = Some("mem_other".into());
        let f = forget_score(&m, &Settings::default(), now());
        assert!(close(f.features.recency, 0.03125), "five half-lives, got {}", f.features.recency);
        assert!(close(f.forget_score, 0.7540625), "got {}", f.forget_score);
        assert!(f.would_forget);
        assert_eq!(f.reasons, vec!["old", "unused", "duplicate of mem_other", "low importance", "not pinned"]);
        assert_eq!(f.projected_forget_at.as_deref(), Some("2026-06-01T00:00:00.000Z"), "already due");
    }

    #[test]
    fn worked_usage() {
        let u = usage(Some(10.0), 3, 1, 0, 30.0);
        assert_eq!(format!("{u:.4}"), "0.7165", "max(e^(−1/3), 0.2773)");
        let log = usage_log(3, 1, 0);
        assert_eq!(format!("{log:.4}"), "0.2773");
    }

    /// (tier, age days, views, cites, edits, days since access, importance, pinned, D) → score.
    /// Expected values were worked by hand from the formula.
    #[test]
    fn table_of_cases() {
        let ln2 = std::f64::consts::LN_2;
        #[allow(clippy::type_complexity)]
        let cases: &[(&str, Tier, f64, i64, i64, i64, Option<f64>, f64, bool, f64, f64)] = &[
            ("new working", Tier::Working, 0.0, 0, 0, 0, None, 0.5, false, 0.0, 0.25 - 0.075),
            ("working one half-life", Tier::Working, 2.0, 0, 0, 0, None, 0.0, false, 0.0, 0.175 + 0.25),
            ("working two half-lives", Tier::Working, 4.0, 0, 0, 0, None, 0.0, false, 0.0, 0.2625 + 0.25),
            ("episodic half-life", Tier::Episodic, 30.0, 0, 0, 0, None, 0.0, false, 0.0, 0.425),
            ("procedural half-life", Tier::Procedural, 90.0, 0, 0, 0, None, 0.0, false, 0.0, 0.425),
            ("semantic half-life", Tier::Semantic, 180.0, 0, 0, 0, None, 0.0, false, 0.0, 0.425),
            ("semantic 360 d", Tier::Semantic, 360.0, 0, 0, 0, None, 0.0, false, 0.0, 0.5125),
            ("pinned new", Tier::Semantic, 0.0, 0, 0, 0, None, 1.0, true, 0.0, 0.25 - 0.15 - 0.30),
            (
                "pinned old dup",
                Tier::Working,
                20.0,
                0,
                0,
                0,
                None,
                0.0,
                true,
                1.0,
                0.35 * (1.0 - 0.5f64.powi(10)) + 0.25 + 0.2 - 0.3,
            ),
            ("max importance", Tier::Episodic, 30.0, 0, 0, 0, None, 1.0, false, 0.0, 0.425 - 0.15),
            ("accessed today", Tier::Episodic, 30.0, 0, 0, 0, Some(0.0), 0.0, false, 0.0, 0.175),
            (
                "accessed 30 d ago",
                Tier::Episodic,
                30.0,
                0,
                0,
                0,
                Some(30.0),
                0.0,
                false,
                0.0,
                0.175 + 0.25 * (1.0 - (-1.0f64).exp()),
            ),
            ("one view", Tier::Episodic, 30.0, 1, 0, 0, None, 0.0, false, 0.0, 0.175 + 0.25 * (1.0 - ln2 / 10.0)),
            ("one cite", Tier::Episodic, 30.0, 0, 1, 0, None, 0.0, false, 0.0, 0.175 + 0.25 * (1.0 - 2.0 * ln2 / 10.0)),
            ("one edit", Tier::Episodic, 30.0, 0, 0, 1, None, 0.0, false, 0.0, 0.175 + 0.25 * (1.0 - 0.5 * ln2 / 10.0)),
            ("usage saturates", Tier::Episodic, 30.0, 1000, 1000, 1000, None, 0.0, false, 0.0, 0.175),
            ("half duplicate", Tier::Episodic, 30.0, 0, 0, 0, None, 0.0, false, 0.5, 0.425 + 0.1),
            (
                "full duplicate old working",
                Tier::Working,
                100.0,
                0,
                0,
                0,
                None,
                0.0,
                false,
                1.0,
                0.35 * (1.0 - 0.5f64.powi(50)) + 0.25 + 0.2,
            ),
            ("future created_at counts as new", Tier::Episodic, -5.0, 0, 0, 0, None, 0.0, false, 0.0, 0.25),
            ("episodic 90 d i=0.4", Tier::Episodic, 90.0, 0, 0, 0, None, 0.4, false, 0.0, 0.35 * 0.875 + 0.25 - 0.06),
            (
                "semantic 45 d",
                Tier::Semantic,
                45.0,
                0,
                0,
                0,
                None,
                0.0,
                false,
                0.0,
                0.35 * (1.0 - 0.5f64.powf(0.25)) + 0.25,
            ),
            (
                "procedural 270 d",
                Tier::Procedural,
                270.0,
                2,
                0,
                0,
                Some(100.0),
                0.3,
                false,
                0.0,
                0.35 * 0.875 + 0.25 * (1.0 - (3.0f64.ln() / 10.0).max((-100.0f64 / 30.0).exp())) - 0.045,
            ),
        ];
        let s = Settings::default();
        for (name, tier, age, v, c, e, acc, imp, pin, dup, expected) in cases {
            let mut m = input(*tier, *age);
            m.views = *v;
            m.cites = *c;
            m.edits = *e;
            m.last_accessed = acc.map(|d| time::add_days(now(), -d));
            m.importance = *imp;
            m.pinned = *pin;
            m.duplication = *dup;
            let f = forget_score(&m, &s, now());
            assert!((f.forget_score - expected).abs() < 1e-6, "{name}: expected {expected}, got {}", f.forget_score);
            assert!((f.components.sum() - f.forget_score).abs() < 1e-12, "{name}: components must sum to the score");
            assert_eq!(f.would_forget, *expected >= 0.6 - EPS, "{name}: decision follows the threshold");
        }
    }

    #[test]
    fn curve_crosses_half_at_each_half_life() {
        let s = Settings::default();
        for t in Tier::ALL {
            let h = s.half_life_days.get(t);
            assert!(close(recency(h, h), 0.5), "{t}: R(h) = 0.5");
        }
    }

    #[test]
    fn projection_finds_the_crossing() {
        // Never used, importance 0, no duplication: asymptote 0.6 is reached in the limit;
        // with importance 0 and D 0.5 the asymptote is 0.7 and the crossing is finite.
        let mut m = input(Tier::Episodic, 0.0);
        m.importance = 0.0;
        m.duplication = 0.5;
        let s = Settings::default();
        let at = projected_forget_at(&m, &s, now()).expect("asymptote 0.7 ≥ 0.6");
        // 0.35(1−R) + 0.25 + 0.1 = 0.6 ⇔ R = 2/7 ⇔ age = 30·log2(7/2) days.
        let expected = 30.0 * (7.0f64 / 2.0).log2();
        let got = time::days_between(now(), at);
        assert!((got - expected).abs() < 2.0 / 1440.0, "expected {expected} days, got {got}");
        assert!(!forget_score(&m, &s, now()).never_forgettable);
    }

    #[test]
    fn pinned_is_never_forgettable() {
        let mut m = input(Tier::Working, 1000.0);
        m.pinned = true;
        m.importance = 0.0;
        m.duplication = 1.0;
        let f = forget_score(&m, &Settings::default(), now());
        assert!(f.never_forgettable && !f.would_forget, "0.35 + 0.25 + 0.2 − 0.3 = 0.5 < 0.6");
        assert!(explain_never_forgettable(&m, &Settings::default()).unwrap().contains("pinned"));
    }
}
