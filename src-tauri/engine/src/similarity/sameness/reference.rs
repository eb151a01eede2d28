//! The judgment as it was before its word-order comparison was made cheap: a plain table of
//! every pair of words, compared as strings. Kept for the tests only, which hold the judgment
//! in use equal to it on many generated pairs.

use std::collections::BTreeSet;

use super::{
    content, join_compounds, one_apart, opposite, semantic, Difference, Evidence, Judgment, Kind, Profile, Token,
    DUPLICATE_AT, EVIDENCE_WORDS, NEGATIONS, ONE_TEMPLATE_AT, ORDER_WORDS, SHARED_VALUES_COUNTED, SHARED_VALUE_BONUS,
};

/// The matched pairs of positions of the longest common subsequence of `a` and `b` (keys
/// compared with `same`).
pub(super) fn common_order(a: &[String], b: &[String], same: impl Fn(&str, &str) -> bool) -> Vec<(usize, usize)> {
    let (n, m) = (a.len().min(ORDER_WORDS), b.len().min(ORDER_WORDS));
    let mut dp = vec![0u16; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            dp[at(i, j)] =
                if same(&a[i], &b[j]) { dp[at(i + 1, j + 1)] + 1 } else { dp[at(i + 1, j)].max(dp[at(i, j + 1)]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        if same(&a[i], &b[j]) && dp[at(i, j)] == dp[at(i + 1, j + 1)] + 1 {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if dp[at(i + 1, j)] >= dp[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The judgment of two memories' profiles, given their word-bigram Jaccard and (with a model)
/// the cosine of their vectors.
pub(super) fn judge(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> Judgment {
    // Words two adjacent words of the other spell together are joined ("re ranker" / "reranker").
    let joined_a = join_compounds(&a.tokens, &b.tokens).map(Profile::from_tokens);
    let a = joined_a.as_ref().unwrap_or(a);
    let joined_b = join_compounds(&b.tokens, &a.tokens).map(Profile::from_tokens);
    let b = joined_b.as_ref().unwrap_or(b);
    let (ta, tb) = (&a.tokens, &b.tokens);
    let (va, vb) = (a.values(), b.values());
    let (sa, sb) = (&a.keys, &b.keys);
    let in_other = |x: &str, other: &[String]| other.iter().any(|y| same_word(x, y));
    let mut differing: Vec<Difference> = Vec::new();
    // Values on one side only.
    let only_a: Vec<&str> = va.difference(&vb).copied().collect();
    let only_b: Vec<&str> = vb.difference(&va).copied().collect();
    let shown = |ts: &[Token], key: &str| ts.iter().find(|t| t.key == key).map_or(key.to_string(), |t| t.shown.clone());
    if !only_a.is_empty() || !only_b.is_empty() {
        differing.push(Difference {
            what: "value".into(),
            this: only_a.iter().map(|k| shown(ta, k)).collect::<Vec<_>>().join(" "),
            other: only_b.iter().map(|k| shown(tb, k)).collect::<Vec<_>>().join(" "),
        });
    }
    // Polarity: opposite words, or a negation on one side only.
    let words_a: BTreeSet<&str> = ta.iter().filter(|t| !t.value).map(|t| t.key.as_str()).collect();
    let words_b: BTreeSet<&str> = tb.iter().filter(|t| !t.value).map(|t| t.key.as_str()).collect();
    for x in words_a.difference(&words_b) {
        for y in words_b.difference(&words_a) {
            if opposite(x, y) {
                differing.push(Difference { what: "polarity".into(), this: x.to_string(), other: y.to_string() });
            }
        }
    }
    let (na, nb) = (a.negated, b.negated);
    if na != nb {
        let neg = |ts: &[Token]| ts.iter().find(|t| NEGATIONS.contains(&t.key.as_str())).map(|t| t.shown.clone());
        differing.push(Difference {
            what: "polarity".into(),
            this: neg(ta).unwrap_or_default(),
            other: neg(tb).unwrap_or_default(),
        });
    }
    // One template with a word swapped for another.
    let order = common_order(sa, sb, same_word);
    let total = sa.len() + sb.len();
    let one_template = total > 0 && 2.0 * order.len() as f64 / total as f64 >= ONE_TEMPLATE_AT;
    if one_template {
        // The content words each text holds outside the common order; one the other text also
        // holds outside it was moved, not replaced. Words left on both sides were swapped.
        let in_a: std::collections::HashSet<usize> = order.iter().map(|p| p.0).collect();
        let in_b: std::collections::HashSet<usize> = order.iter().map(|p| p.1).collect();
        let loose = |ts: &[Token], keys: &[String], matched: &std::collections::HashSet<usize>| -> Vec<usize> {
            (0..keys.len().min(ts.len()))
                .filter(|k| !matched.contains(k) && !ts[*k].value && content(&ts[*k]))
                .collect()
        };
        let (la, lb) = (loose(ta, sa, &in_a), loose(tb, sb, &in_b));
        let keys_a: Vec<String> = la.iter().map(|&k| sa[k].clone()).collect();
        let keys_b: Vec<String> = lb.iter().map(|&k| sb[k].clone()).collect();
        let xa: Vec<String> =
            la.iter().filter(|&&k| !in_other(&sa[k], &keys_b)).map(|&k| ta[k].shown.clone()).collect();
        let xb: Vec<String> =
            lb.iter().filter(|&&k| !in_other(&sb[k], &keys_a)).map(|&k| tb[k].shown.clone()).collect();
        if !xa.is_empty() && !xb.is_empty() {
            differing.push(Difference { what: "wording".into(), this: xa.join(" "), other: xb.join(" ") });
        }
    }
    // What both hold: values, then content words, each once.
    let mut matching: Vec<String> = Vec::new();
    for (t, k) in ta.iter().zip(sa.iter()) {
        if matching.len() >= EVIDENCE_WORDS {
            break;
        }
        if content(t) && in_other(k, sb) && !matching.contains(&t.shown) {
            matching.push(t.shown.clone());
        }
    }
    let shared_values = a.shared_values(b).min(SHARED_VALUES_COUNTED);
    let closeness = (jaccard.max(cosine.map_or(0.0, semantic)) + SHARED_VALUE_BONUS * shared_values as f64).min(1.0);
    let kind = if differing.is_empty() && closeness >= DUPLICATE_AT {
        Kind::Duplicate
    } else if !differing.is_empty() && one_template {
        Kind::PossibleUpdate
    } else {
        Kind::Related
    };
    Judgment { kind, closeness: (closeness * 1000.0).round() / 1000.0, evidence: Evidence::new(matching, differing) }
}

/// [`judge`]'s kind and closeness without its evidence (no text is built, and the words both
/// hold are not listed): what the write-time `similar` list orders and filters its candidates
/// by, so that the evidence is made only for those it lists. A test holds it equal to
/// [`judge`] on every pair of a test set.
pub(super) fn verdict(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> (Kind, f64) {
    let joined_a = join_compounds(&a.tokens, &b.tokens).map(Profile::from_tokens);
    let a = joined_a.as_ref().unwrap_or(a);
    let joined_b = join_compounds(&b.tokens, &a.tokens).map(Profile::from_tokens);
    let b = joined_b.as_ref().unwrap_or(b);
    let shared = a.shared_values(b).min(SHARED_VALUES_COUNTED);
    let closeness = (jaccard.max(cosine.map_or(0.0, semantic)) + SHARED_VALUE_BONUS * shared as f64).min(1.0);
    // Values on one side only, a negation on one side only, opposite words.
    let differs = a.values != b.values || a.negated != b.negated || {
        let words_a: BTreeSet<&str> = a.tokens.iter().filter(|t| !t.value).map(|t| t.key.as_str()).collect();
        let words_b: BTreeSet<&str> = b.tokens.iter().filter(|t| !t.value).map(|t| t.key.as_str()).collect();
        let only_b: Vec<&str> = words_b.difference(&words_a).copied().collect();
        words_a.difference(&words_b).any(|x| only_b.iter().any(|y| opposite(x, y)))
    };
    // One template (the words in one order are at most the shorter text's), and a word
    // swapped for another within it.
    let (sa, sb) = (&a.keys, &b.keys);
    let total = sa.len() + sb.len();
    let (n, m) = (sa.len().min(ORDER_WORDS), sb.len().min(ORDER_WORDS));
    let order = if total > 0 && 2.0 * n.min(m) as f64 / total as f64 >= ONE_TEMPLATE_AT {
        common_order(sa, sb, same_word)
    } else {
        Vec::new()
    };
    let one_template = total > 0 && 2.0 * order.len() as f64 / total as f64 >= ONE_TEMPLATE_AT;
    let differs = differs || (one_template && words_swapped(a, b, &order));
    let kind = if !differs && closeness >= DUPLICATE_AT {
        Kind::Duplicate
    } else if differs && one_template {
        Kind::PossibleUpdate
    } else {
        Kind::Related
    };
    (kind, (closeness * 1000.0).round() / 1000.0)
}

/// The judgment's comparison of two words: the same, or one letter apart without being opposites.
pub(super) fn same_word(x: &str, y: &str) -> bool {
    // This runs for every cell of the word-order table. For ASCII words the byte lengths are
    // the letter counts, and words more than a letter apart in length are not one typo apart.
    let lengths_allow = x.len().abs_diff(y.len()) <= 1 || !x.is_ascii() || !y.is_ascii();
    x == y || (lengths_allow && one_apart(x, y) && !opposite(x, y))
}

/// Whether, with `order` the two texts' words in one order, each text holds a content word
/// outside it that the other does not hold outside it either: [`judge`]'s "wording" difference.
pub(super) fn words_swapped(a: &Profile, b: &Profile, order: &[(usize, usize)]) -> bool {
    let (sa, sb) = (&a.keys, &b.keys);
    let (ta, tb) = (&a.tokens, &b.tokens);
    let in_a: std::collections::HashSet<usize> = order.iter().map(|p| p.0).collect();
    let in_b: std::collections::HashSet<usize> = order.iter().map(|p| p.1).collect();
    let loose = |ts: &[Token], keys: &[String], matched: &std::collections::HashSet<usize>| -> Vec<usize> {
        (0..keys.len().min(ts.len())).filter(|k| !matched.contains(k) && !ts[*k].value && content(&ts[*k])).collect()
    };
    let (la, lb) = (loose(ta, sa, &in_a), loose(tb, sb, &in_b));
    let in_other = |x: &str, other: &[usize], keys: &[String]| other.iter().any(|&k| same_word(x, &keys[k]));
    la.iter().any(|&k| !in_other(&sa[k], &lb, sb)) && lb.iter().any(|&k| !in_other(&sb[k], &la, sa))
}

/// What the pair adds to duplication D ([`Judgment::duplication`]), without the evidence: the
/// cheap differences (values, negation) are looked at first, and most templated pairs stop
/// there.
pub(super) fn duplication(a: &Profile, b: &Profile, jaccard: f64, cosine: Option<f64>) -> f64 {
    let shared = a.shared_values(b);
    let closeness =
        jaccard.max(cosine.map_or(0.0, semantic)) + SHARED_VALUE_BONUS * shared.min(SHARED_VALUES_COUNTED) as f64;
    if closeness < DUPLICATE_AT || a.negated != b.negated {
        return 0.0;
    }
    if a.values != b.values {
        // Values on one side only, unless joining compound words changes them (it never
        // does: only words are joined).
        return 0.0;
    }
    // The rest of [`judge`]'s differences, in its order, stopping at the first one found and
    // building no evidence (the neighbour search asks this for every close candidate pair).
    let joined_a = join_compounds(&a.tokens, &b.tokens).map(Profile::from_tokens);
    let a = joined_a.as_ref().unwrap_or(a);
    let joined_b = join_compounds(&b.tokens, &a.tokens).map(Profile::from_tokens);
    let b = joined_b.as_ref().unwrap_or(b);
    if a.negated != b.negated {
        return 0.0;
    }
    let (ta, tb) = (&a.tokens, &b.tokens);
    let words_a: BTreeSet<&str> = ta.iter().filter(|t| !t.value).map(|t| t.key.as_str()).collect();
    let words_b: BTreeSet<&str> = tb.iter().filter(|t| !t.value).map(|t| t.key.as_str()).collect();
    let only_b: Vec<&str> = words_b.difference(&words_a).copied().collect();
    if words_a.difference(&words_b).any(|x| only_b.iter().any(|y| opposite(x, y))) {
        return 0.0;
    }
    if swapped_words(a, b) {
        return 0.0;
    }
    let closeness = (jaccard.max(cosine.map_or(0.0, semantic))
        + SHARED_VALUE_BONUS * shared.min(SHARED_VALUES_COUNTED) as f64)
        .min(1.0);
    if closeness >= DUPLICATE_AT {
        (closeness * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

/// Whether `a` and `b` are one template with a word swapped for another: [`judge`]'s "wording"
/// difference. The words in one order can be at most the shorter text's: when even that is
/// below [`ONE_TEMPLATE_AT`] they are not one template, and no order is computed.
pub(super) fn swapped_words(a: &Profile, b: &Profile) -> bool {
    let (sa, sb) = (&a.keys, &b.keys);
    let total = sa.len() + sb.len();
    let (n, m) = (sa.len().min(ORDER_WORDS), sb.len().min(ORDER_WORDS));
    if total == 0 || 2.0 * n.min(m) as f64 / (total as f64) < ONE_TEMPLATE_AT {
        return false;
    }
    let order = common_order(sa, sb, same_word);
    if 2.0 * order.len() as f64 / (total as f64) < ONE_TEMPLATE_AT {
        return false;
    }
    words_swapped(a, b, &order)
}
