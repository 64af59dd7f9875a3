//! docs/findings.md is the catalog's (`faultline findings --markdown`).

#[test]
fn readme_findings_section_is_generated_from_the_catalog() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.md"))
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
