//! `list`, `bugs` and `findings`: what the registry holds.

use super::args::*;
use super::exit::Exit;
use crate::explore::BadInput;
use crate::system::Registry;
use serde_json::json;

/// `faultline list`.
pub(super) fn list(reg: &'static Registry, a: ListArgs) -> Result<Exit, BadInput> {
    let ListArgs { json } = a;
    if json {
        let list: Vec<_> = reg.scenarios().iter().map(|s| json!({"name": s.name, "system": s.system, "about": s.about, "ci_seeds": s.ci_seeds, "coverage": s.coverage})).collect();
        println!("{}", json!({ "scenarios": list }));
    } else {
        let w = reg
            .scenarios()
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(0);
        for s in reg.scenarios() {
            println!("{:<w$}  {}", s.name, s.about);
        }
    }
    Ok(Exit::Clean)
}

/// `faultline bugs`.
pub(super) fn bugs(reg: &'static Registry, a: BugsArgs) -> Result<Exit, BadInput> {
    let BugsArgs { json, markdown } = a;
    if markdown {
        print!("{}", crate::scenario::switches_markdown(reg));
    } else if json {
        println!(
            "{}",
            json!({ "switches": reg.switches().collect::<Vec<_>>() })
        );
    } else {
        // Columns as wide as their longest entry, so none runs into the next.
        let name_w = reg.switches().map(|s| s.name.len()).max().unwrap_or(0);
        let scenario_w = reg.switches().map(|s| s.scenario.len()).max().unwrap_or(0);
        for s in reg.switches() {
            let trips = s.trips.map(|i| format!(" (trips {})", i.name));
            println!(
                "{:<name_w$}  {:<6} found by {:<scenario_w$}  {}{}",
                s.name,
                format!("{:?}", s.kind).to_lowercase(),
                s.scenario,
                s.about,
                trips.unwrap_or_default()
            );
        }
    }
    Ok(Exit::Clean)
}

/// `faultline findings`.
pub(super) fn findings(reg: &'static Registry, a: FindingsArgs) -> Result<Exit, BadInput> {
    let FindingsArgs {
        json,
        markdown,
        more,
    } = a;
    if more.requested() {
        return super::findings::run(reg, more);
    }
    if json {
        println!(
            "{}",
            json!({ "findings": super::findings::with_rates(reg) })
        );
    } else if markdown {
        print!("{}", crate::findings::markdown());
    } else {
        let id_w = reg.findings().map(|f| f.id.len()).max().unwrap_or(0);
        let scenario_w = reg.findings().map(|f| f.scenario.len()).max().unwrap_or(0);
        for f in reg.findings() {
            let status = if f.is_active() { "active" } else { "retired" };
            let seeds: Vec<String> = f.seeds.iter().map(u64::to_string).collect();
            println!(
                "{:<id_w$}  {:<7} {:<scenario_w$}  seed {:<10} {}",
                f.id,
                status,
                f.scenario,
                seeds.join(","),
                f.title
            );
        }
    }
    Ok(Exit::Clean)
}

/// `faultline faults`.
pub(super) fn faults(reg: &'static Registry, a: FaultsArgs) -> Result<Exit, BadInput> {
    let rows = crate::faults::rows(reg);
    if a.json {
        println!("{}", json!({ "faults": rows }));
    } else if a.markdown {
        print!("{}", crate::faults::markdown(reg));
    } else {
        for r in &rows {
            let mark = if r.hypothetical { "hypothetical" } else { "" };
            println!(
                "{:<8} {:<30} {:<13} {}",
                r.system,
                r.name,
                mark,
                r.realistic.join("; ")
            );
        }
    }
    Ok(Exit::Clean)
}

/// `faultline invariants`.
pub(super) fn invariants(reg: &'static Registry, a: InvariantsArgs) -> Result<Exit, BadInput> {
    if a.markdown {
        print!("{}", crate::invariant::docs(reg));
        return Ok(Exit::Clean);
    }
    let mut list = Vec::new();
    for s in reg.systems() {
        for i in s.invariants {
            if !a.json {
                let bound = i.bound_us.map(sim::units::show_secs).unwrap_or_default();
                println!(
                    "{:<32} {:<8} {:<9} {:>11}  {}",
                    i.name,
                    s.name,
                    i.kind.to_string(),
                    bound,
                    i.meaning
                );
            }
            let mut entry = serde_json::to_value(i).expect("an invariant serializes");
            entry["system"] = json!(s.name);
            list.push(entry);
        }
    }
    if a.json {
        println!("{}", json!({ "invariants": list }));
    }
    Ok(Exit::Clean)
}
