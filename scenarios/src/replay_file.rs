//! Replay files (a failing run, written the moment it is found) and schedule files (a run's
//! schedule to run as written, with no determinism verdict).

use crate::explore::{check_switches, BadInput};
use crate::scenario::RunSpec;
use crate::system::Registry;
use serde::{Deserialize, Serialize};
use sim::{Outcome, Schedule, Violation};
use std::path::Path;

/// Current replay file format version. Version 2: the trace hash is over the canonical (postcard)
/// encoding of the trace lines, no longer over their JSON text, so a version-1 file's hash cannot
/// match. Version 3: the Cilium model was rebuilt (operators elect through a Lease, the cloud
/// reissues addresses, new options), so a version-2 Cilium file neither parses nor replays; the
/// other systems' runs are unchanged, but one version covers the file format.
pub const REPLAY_VERSION: u32 = 3;
const REPLAY_FORMAT: &str = "faultline-replay";

/// A failing run, written as soon as it is found; `faultline replay FILE` reproduces it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplayFile {
    /// Always `faultline-replay`: marks the JSON as a replay file.
    pub format: String,
    /// The file format's version, [`REPLAY_VERSION`] when written.
    pub version: u32,
    /// The scenario's name.
    pub scenario: String,
    /// The seed that drew the run.
    pub seed: u64,
    /// The bug switches it ran with.
    pub bugs: Vec<String>,
    /// The fix switches it ran with.
    pub fixes: Vec<String>,
    /// The options, as `{"<system>": options}`.
    pub options: serde_json::Value,
    /// The fault schedule it ran (replayed as written, not drawn again).
    pub schedule: Schedule,
    /// The violation the run found.
    pub violation: Violation,
    /// Events the run recorded.
    pub events: u64,
    /// The run's trace hash, which a replay must reproduce.
    pub trace_hash: String,
    /// The profile the seed drew its faults with (files written before profiles existed have
    /// none: adversarial).
    #[serde(default)]
    pub profile: crate::faults::Profile,
    /// The schedule was written by hand (`faultline hunt --schedule`), not drawn by the seed: a
    /// constructed replay of a finding no drawn seed was found to show. Absent: drawn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constructed: bool,
}

impl ReplayFile {
    /// The replay file for a failing run.
    pub fn new(spec: &RunSpec, outcome: &Outcome) -> Option<ReplayFile> {
        Some(ReplayFile {
            format: REPLAY_FORMAT.into(),
            version: REPLAY_VERSION,
            scenario: spec.scenario.name.into(),
            seed: spec.seed,
            bugs: spec.bugs.clone(),
            fixes: spec.fixes.clone(),
            options: serde_json::to_value(&spec.options).expect("options serialize"),
            schedule: spec.schedule.clone(),
            violation: outcome.violation.clone()?,
            events: outcome.events,
            trace_hash: outcome.trace_hash.clone(),
            profile: spec.profile,
            constructed: false,
        })
    }

    /// Reads and validates a replay file.
    pub fn load(path: &Path) -> Result<ReplayFile, BadInput> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| BadInput(format!("cannot read replay file {}: {e}", path.display())))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            BadInput(format!(
                "{} is not a faultline replay file (corrupt or truncated JSON: {e})",
                path.display()
            ))
        })?;
        if v.get("format").and_then(|f| f.as_str()) != Some(REPLAY_FORMAT) {
            return Err(BadInput(format!(
                "{} is not a faultline replay file (no \"format\": \"{REPLAY_FORMAT}\")",
                path.display()
            )));
        }
        match v.get("version").and_then(|f| f.as_u64()) {
            Some(n) if n == REPLAY_VERSION as u64 => {}
            Some(n) => {
                let hint = if n < REPLAY_VERSION as u64 {
                    " (written by an older faultline: re-run its seed with `faultline run`)"
                } else {
                    ""
                };
                return Err(BadInput(format!(
                    "{} has replay format version {n}; this faultline reads version \
                     {REPLAY_VERSION}{hint}",
                    path.display()
                )));
            }
            None => {
                return Err(BadInput(format!(
                    "{} has no replay format version",
                    path.display()
                )))
            }
        }
        serde_json::from_value(v)
            .map_err(|e| BadInput(format!("{} is a corrupt replay file: {e}", path.display())))
    }

    /// The spec it replays, with the scenarios of `reg`.
    pub fn spec(&self, reg: &'static Registry) -> Result<RunSpec, BadInput> {
        ScheduleFile {
            scenario: self.scenario.clone(),
            seed: self.seed,
            bugs: self.bugs.clone(),
            fixes: self.fixes.clone(),
            options: Some(self.options.clone()),
            schedule: self.schedule.clone(),
            profile: self.profile,
        }
        .spec(reg, &[], &[])
    }

    /// Writes atomically (temporary file, then rename).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        write_atomic(
            path,
            serde_json::to_string_pretty(self)
                .expect("serializable")
                .as_bytes(),
        )
    }
}

/// A schedule to run as written (`faultline run --schedule FILE`): a replay file, or a
/// hand-written one with at least its `scenario`, `seed` and `schedule`. `bugs`, `fixes` and
/// `options` may be left out (options then are the seed's own draw); a recorded violation and
/// trace hash are ignored: the run is judged afresh, with no determinism verdict.
#[derive(Clone, Debug, Deserialize)]
pub struct ScheduleFile {
    /// The scenario's name.
    pub scenario: String,
    /// The seed: the randomness inside the run (latencies, the systems' own draws).
    pub seed: u64,
    /// Bug switches.
    #[serde(default)]
    pub bugs: Vec<String>,
    /// Fix switches.
    #[serde(default)]
    pub fixes: Vec<String>,
    /// The options, as `{"<system>": options}`.
    #[serde(default)]
    pub options: Option<serde_json::Value>,
    /// The fault schedule.
    pub schedule: Schedule,
    /// The profile the options are drawn with when the file gives none (default: adversarial).
    #[serde(default)]
    pub profile: crate::faults::Profile,
}

impl ScheduleFile {
    /// Reads a schedule file (a replay file of another version is refused: its schedule's
    /// format may differ).
    pub fn load(path: &Path) -> Result<ScheduleFile, BadInput> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| BadInput(format!("cannot read schedule file {}: {e}", path.display())))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            BadInput(format!(
                "{} is not a schedule file (malformed JSON: {e})",
                path.display()
            ))
        })?;
        if let Some(n) = v.get("version").and_then(|f| f.as_u64()) {
            if n != REPLAY_VERSION as u64 {
                return Err(BadInput(format!(
                    "{} has replay format version {n}; this faultline reads version \
                     {REPLAY_VERSION}",
                    path.display()
                )));
            }
        }
        serde_json::from_value(v).map_err(|e| {
            BadInput(format!(
                "{} is not a schedule file: {e} (it needs scenario, seed and schedule)",
                path.display()
            ))
        })
    }

    /// The spec it runs, with `bugs` and `fixes` added to its own.
    pub fn spec(
        &self,
        reg: &'static Registry,
        bugs: &[String],
        fixes: &[String],
    ) -> Result<RunSpec, BadInput> {
        let (mut b, mut f) = (self.bugs.clone(), self.fixes.clone());
        b.extend(bugs.iter().filter(|x| !self.bugs.contains(x)).cloned());
        f.extend(fixes.iter().filter(|x| !self.fixes.contains(x)).cloned());
        let sc = reg.scenario(&self.scenario)?;
        let fixes = check_switches(reg, sc, &b, &f)?;
        let mut spec = RunSpec::from_seed_in(sc, self.seed, &b, &fixes, self.profile);
        if let Some(o) = &self.options {
            spec.options = sc.options_from_json(o.clone()).map_err(|e| {
                BadInput(format!(
                    "the file's options do not fit scenario {}: {e}",
                    sc.name
                ))
            })?;
        }
        sc.check_schedule(&spec.options, &self.schedule)
            .map_err(|e| BadInput(format!("{}: {e}", self.scenario)))?;
        spec.schedule = self.schedule.clone();
        Ok(spec)
    }
}

/// Writes a file atomically: a temporary file in the same directory, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
