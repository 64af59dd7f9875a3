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
