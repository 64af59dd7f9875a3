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

/// Every switch of the registry has its row in docs/scenarios.md, with its kind and scenario; and
/// a fix's scenario is one where an active finding it remedies shows.
#[test]
fn the_switch_table_matches_the_registry() {
    use scenarios::scenario::SwitchKind;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md"))
        .expect("docs/scenarios.md");
    for sw in scenarios::builtin().switches() {
        let kind = match sw.kind {
            SwitchKind::Bug => "bug",
            SwitchKind::Fix => "fix",
        };
        let row = format!("| `{}` | {kind} | {} |", sw.name, sw.scenario);
        assert!(doc.contains(&row), "docs/scenarios.md lacks the row {row}");
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
    let (_, rest) = doc
        .split_once("<!-- invariants:begin -->\n")
        .expect("invariants:begin marker");
    let (section, _) = rest
        .split_once("<!-- invariants:end -->")
        .expect("invariants:end marker");
    assert_eq!(
        section,
        scenarios::invariant::docs(scenarios::builtin()),
        "docs/scenarios.md is stale: run `faultline invariants --markdown` and paste it between the markers"
    );
}
