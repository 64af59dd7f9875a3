//! docs/findings.md is the catalog's (`faultline findings --markdown`).

#[test]
fn readme_findings_section_is_generated_from_the_catalog() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.md"))
            .expect("docs/findings.md");
    let (_, rest) = readme
        .split_once("<!-- findings:begin -->\n")
        .expect("findings:begin marker");
    let (section, _) = rest
        .split_once("<!-- findings:end -->")
        .expect("findings:end marker");
    assert_eq!(
        section,
        scenarios::findings::markdown(),
        "docs/findings.md is stale: run `faultline findings --markdown` and paste it between the markers"
    );
}

/// docs/scenarios.md's switch table is the registry's (`faultline bugs --markdown`); and a fix's
/// scenario is one where an active finding it remedies shows.
#[test]
fn the_switch_table_matches_the_registry() {
    use scenarios::scenario::SwitchKind;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md"))
        .expect("docs/scenarios.md");
    assert_eq!(
        section(&doc, "switches"),
        scenarios::scenario::switches_markdown(scenarios::builtin()),
        "docs/scenarios.md is stale: run `faultline bugs --markdown` and paste it between the markers"
    );
    for sw in scenarios::builtin().switches() {
        if sw.kind == SwitchKind::Fix {
            assert!(
                scenarios::builtin()
                    .findings()
                    .any(|f| f.is_active() && f.fix == Some(sw.name) && f.scenario == sw.scenario),
                "fix {} names {}, where none of its findings shows",
                sw.name,
                sw.scenario
            );
        }
    }
}

/// Every scenario of the registry has its row in docs/scenarios.md, whose last column lists
/// exactly its coverage points; and every scenario row names a scenario of the registry.
#[test]
fn the_scenario_tables_match_the_registry() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md"))
        .expect("docs/scenarios.md");
    let reg = scenarios::builtin();
    let systems: Vec<&str> = reg.systems().iter().map(|s| s.name).collect();
    let rows: Vec<Vec<&str>> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| {
            l.split(" | ")
                .map(|c| c.trim().trim_end_matches(" |"))
                .collect()
        })
        .filter(|cells: &Vec<&str>| {
            let name = cells[0].trim_end_matches('`');
            systems.iter().any(|s| name.starts_with(&format!("{s}-")))
                && cells.len() == 3
                && !cells[1].contains("bug")
                && !cells[1].contains("fix")
        })
        .collect();
    for sc in reg.scenarios() {
        let row = rows
            .iter()
            .find(|r| r[0].trim_end_matches('`') == sc.name)
            .unwrap_or_else(|| panic!("docs/scenarios.md has no row for {}", sc.name));
        assert_eq!(
            row[2],
            sc.coverage.join(", "),
            "docs/scenarios.md: coverage points of {}",
            sc.name
        );
    }
    for r in &rows {
        let name = r[0].trim_end_matches('`');
        assert!(
            reg.scenarios().iter().any(|s| s.name == name),
            "docs/scenarios.md lists {name}, which the registry does not have"
        );
    }
    assert_eq!(rows.len(), reg.scenarios().len());
}

/// docs/scenarios.md's invariants section is the registry's (`faultline invariants --markdown`).
#[test]
fn the_invariant_tables_are_generated_from_the_registry() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md"))
        .expect("docs/scenarios.md");
    assert_eq!(
        section(&doc, "invariants"),
        scenarios::invariant::docs(scenarios::builtin()),
        "docs/scenarios.md is stale: run `faultline invariants --markdown` and paste it between the markers"
    );
}

/// The text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in `doc`.
fn section<'a>(doc: &'a str, name: &str) -> &'a str {
    let (_, rest) = doc
        .split_once(&format!("<!-- {name}:begin -->\n"))
        .unwrap_or_else(|| panic!("{name}:begin marker"));
    rest.split_once(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("{name}:end marker"))
        .0
}

/// docs/ci.md's exit statuses are the CLI's one list (`scenarios::cli::exit`).
#[test]
fn the_exit_status_table_is_the_clis() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ci.md"))
        .expect("docs/ci.md");
    assert_eq!(section(&doc, "exit"), scenarios::cli::exit::markdown());
}

/// docs/faults.md's catalog is the code's (`faultline faults --markdown`).
#[test]
fn the_fault_catalog_doc_is_generated_from_the_catalog() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/faults.md"))
        .expect("docs/faults.md");
    assert_eq!(
        section(&doc, "faults"),
        scenarios::faults::markdown(scenarios::builtin()),
        "docs/faults.md is stale: run .ci/regen-docs"
    );
}
