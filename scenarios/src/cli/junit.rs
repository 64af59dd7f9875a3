//! JUnit XML, as CI systems (GitLab, Jenkins, GitHub's test reporters) read it: `<testsuites>`,
//! one `<testsuite>` per scenario, one `<testcase>` per failing seed (its `<failure>` message is
//! the causal sentence; its text, the replay command and the fault schedule) and one for the seeds
//! that passed.

use crate::explore::{write_atomic, BadInput, ExploreSummary};
use crate::RunSpec;
use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;
use sim::Outcome;
use std::path::Path;

/// One test case.
pub(super) struct Case {
    pub name: String,
    pub time_s: f64,
    /// (message, type, text) of its failure, if it failed.
    pub failure: Option<(String, String, String)>,
}

/// One suite: a scenario's run.
pub(super) struct Suite {
    pub name: String,
    pub time_s: f64,
    pub cases: Vec<Case>,
}

/// A failing run as a test case: the causal sentence, the replay command, the schedule.
pub(super) fn failing_case(spec: &RunSpec, outcome: &Outcome, replay: &str) -> Case {
    let v = outcome.violation.as_ref().expect("a failing run");
    let mut text = format!("replay: {replay}\n");
    if let Some(m) = crate::invariant::describe_measure(spec.scenario.invariants, v) {
        text += &format!("measure: {m}\n");
    }
    text += &format!("faults ({}):\n", spec.schedule.len());
    for f in &spec.schedule {
        text += &format!(
            "  {:>9.3} s  for {:>8.3} s  {}\n",
            f.at_ms as f64 / 1000.0,
            f.dur_ms as f64 / 1000.0,
            f.kind.describe()
        );
    }
    Case {
        name: format!("seed {}", spec.seed),
        time_s: 0.0,
        failure: Some((
            v.explanation.clone(),
            format!("{} ({})", v.invariant, v.kind),
            text,
        )),
    }
}

/// A coverage point no seed reached, as a failing case of its own kind.
pub(super) fn unreached_case(point: &str, seeds: u64) -> Case {
    Case {
        name: format!("coverage {point}"),
        time_s: 0.0,
        failure: Some((
            format!("no seed of {seeds} reached coverage point {point}"),
            "coverage-unreached".into(),
            "a change may have stopped what the point marks from ever happening; \
             `faultline list --json` shows each scenario's coverage catalog"
                .into(),
        )),
    }
}

/// An exploration's suite: a case per failing seed, and one for the seeds that passed.
pub(super) fn explore_suite(
    name: &str,
    summary: &ExploreSummary,
    wall_s: f64,
    replay: &dyn Fn(&crate::explore::Found) -> String,
) -> Suite {
    let mut cases: Vec<Case> = summary
        .failures
        .iter()
        .map(|f| failing_case(&f.spec, &f.outcome, &replay(f)))
        .collect();
    let passed = summary.seeds_run - summary.failures.len() as u64;
    cases.push(Case {
        name: format!("{passed} seeds without a violation"),
        time_s: wall_s,
        failure: None,
    });
    Suite {
        name: name.to_string(),
        time_s: wall_s,
        cases,
    }
}

/// Writes the suites to `path` (atomically).
pub(super) fn write(path: &Path, suites: &[Suite]) -> Result<(), BadInput> {
    let xml = render(suites);
    write_atomic(path, xml.as_bytes())
        .map_err(|e| BadInput(format!("cannot write JUnit file {}: {e}", path.display())))
}

fn render(suites: &[Suite]) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let ok = "writing to memory";
    w.write_event(Event::Decl(quick_xml::events::BytesDecl::new(
        "1.0",
        Some("UTF-8"),
        None,
    )))
    .expect(ok);
    let (tests, failures) = suites.iter().fold((0, 0), |(t, f), s| {
        (
            t + s.cases.len(),
            f + s.cases.iter().filter(|c| c.failure.is_some()).count(),
        )
    });
    let mut root = BytesStart::new("testsuites");
    root.push_attribute(("name", "faultline"));
    root.push_attribute(("tests", tests.to_string().as_str()));
    root.push_attribute(("failures", failures.to_string().as_str()));
    w.write_event(Event::Start(root)).expect(ok);
    for s in suites {
        suite(&mut w, s);
    }
    w.write_event(Event::End(BytesEnd::new("testsuites")))
        .expect(ok);
    String::from_utf8(w.into_inner()).expect("UTF-8")
}

fn suite(w: &mut Writer<Vec<u8>>, s: &Suite) {
    let ok = "writing to memory";
    let failures = s.cases.iter().filter(|c| c.failure.is_some()).count();
    let mut e = BytesStart::new("testsuite");
    e.push_attribute(("name", s.name.as_str()));
    e.push_attribute(("tests", s.cases.len().to_string().as_str()));
    e.push_attribute(("failures", failures.to_string().as_str()));
    e.push_attribute(("errors", "0"));
    e.push_attribute(("skipped", "0"));
    e.push_attribute(("time", format!("{:.3}", s.time_s).as_str()));
    w.write_event(Event::Start(e)).expect(ok);
    for c in &s.cases {
        let mut e = BytesStart::new("testcase");
        e.push_attribute(("name", c.name.as_str()));
        e.push_attribute(("classname", s.name.as_str()));
        e.push_attribute(("time", format!("{:.3}", c.time_s).as_str()));
        match &c.failure {
            None => w.write_event(Event::Empty(e)).expect(ok),
            Some((message, kind, text)) => {
                w.write_event(Event::Start(e)).expect(ok);
                let mut f = BytesStart::new("failure");
                f.push_attribute(("message", message.as_str()));
                f.push_attribute(("type", kind.as_str()));
                w.write_event(Event::Start(f)).expect(ok);
                w.write_event(Event::Text(BytesText::new(text))).expect(ok);
                w.write_event(Event::End(BytesEnd::new("failure")))
                    .expect(ok);
                w.write_event(Event::End(BytesEnd::new("testcase")))
                    .expect(ok);
            }
        }
    }
    w.write_event(Event::End(BytesEnd::new("testsuite")))
        .expect(ok);
}
