//! Rendering of run outcomes. For now: the one-paragraph text summary of an outcome that the CLI and
//! test failure messages share. HTML timelines and Markdown reports are a later issue.

use sim::{Outcome, Violation};

/// One line per fact: the verdict, the violation (invariant, kind, event, time, node), the causal
/// sentence, and the trace hash.
pub fn summary(scenario: &str, seed: u64, outcome: &Outcome) -> String {
    match &outcome.violation {
        None => format!(
            "{scenario} seed {seed}: PASS ({} events, {} ms simulated, trace {})",
            outcome.events, outcome.sim_time_ms, outcome.trace_hash
        ),
        Some(v) => format!(
            "{scenario} seed {seed}: {}\n  {}\n  trace {}",
            headline(v),
            v.explanation,
            outcome.trace_hash
        ),
    }
}

/// `VIOLATION invariant (kind) at event #i, t s true time, node n`.
pub fn headline(v: &Violation) -> String {
    format!(
        "VIOLATION {} ({}) at event #{}, {:.3} s true time{}",
        v.invariant,
        v.kind,
        v.event_index,
        v.sim_time_ms as f64 / 1000.0,
        v.node
            .as_ref()
            .map(|n| format!(", node {n}"))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::Kind;

    #[test]
    fn headline_names_everything() {
        let v = Violation {
            invariant: "x".into(),
            kind: Kind::Safety,
            event_index: 7,
            sim_time_ms: 1500,
            node: Some("h1".into()),
            explanation: "because".into(),
        };
        assert_eq!(
            headline(&v),
            "VIOLATION x (safety) at event #7, 1.500 s true time, node h1"
        );
        let o = Outcome {
            violation: Some(v),
            events: 8,
            sim_time_ms: 1500,
            trace_hash: "ab".into(),
            trace: None,
            coverage: vec![],
        };
        assert!(summary("s", 3, &o).contains("because"));
    }
}
