//! `--profile` on `check-determinism` and `bench`: the seeds they run draw their faults under the
//! profile given, their JSON says which, and an unknown profile is one line and exit 2.

use scenarios::explore::{hashes, hashes_in};
use scenarios::faults::Profile;
use scenarios::RunSpec;
use std::process::{Command, Output};

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .expect("faultline runs")
}

/// The last line of stdout, parsed as the command's JSON object.
fn json_of(o: &Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.trim_end().lines().last().expect("a JSON line");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

#[test]
fn an_unknown_profile_on_check_determinism_or_bench_is_one_line_and_exit_2() {
    for args in [
        &[
            "check-determinism",
            "calico-swarm",
            "--seeds",
            "1",
            "--profile",
            "gentle",
        ][..],
        &[
            "bench",
            "calico-swarm",
            "--seeds",
            "1",
            "--profile",
            "gentle",
        ],
        &["bench", "--scale", "--seeds", "1", "--profile", "gentle"],
    ] {
        let o = faultline(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains("unknown profile 'gentle'"), "{err}");
    }
}

#[test]
fn bench_scale_refuses_a_profile_it_cannot_apply() {
    let o = faultline(&["bench", "--scale", "--seeds", "1", "--profile", "realistic"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(err.contains("--scale"), "{err}");
}

/// The hashes check-determinism compares are those of the seeds run under the profile: equal to
/// single runs drawn with it, and not those of the default profile.
#[test]
fn check_determinism_hashes_the_seeds_of_the_profile_given() {
    let sc = scenarios::builtin().scenario("calico-swarm").unwrap();
    let (from, n) = (2_000_000, 4);
    let realistic = hashes_in(sc, from, n, &[], &[], 2, Profile::Realistic);
    for (i, h) in realistic.iter().enumerate() {
        let spec = RunSpec::from_seed_in(sc, from + i as u64, &[], &[], Profile::Realistic);
        assert_eq!(*h, spec.run().trace_hash, "seed {}", from + i as u64);
    }
    assert_ne!(realistic, hashes(sc, from, n, &[], &[], 2));
}

#[test]
fn check_determinism_records_its_profile() {
    for profile in ["adversarial", "realistic"] {
        let o = faultline(&[
            "check-determinism",
            "calico-split-brain",
            "--seeds",
            "2",
            "--from",
            "2000000",
            "--profile",
            profile,
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        let j = json_of(&o);
        assert_eq!(j["profile"], profile, "{j}");
        assert_eq!(j["mismatches"], 0, "{j}");
    }
    let o = faultline(&[
        "check-determinism",
        "calico-split-brain",
        "--seeds",
        "1",
        "--profile",
        "realistic",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(realistic profile)"), "{out}");
}

#[test]
fn bench_records_its_profile() {
    let o = faultline(&[
        "bench",
        "calico-split-brain",
        "--seeds",
        "2",
        "--profile",
        "realistic",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let j = json_of(&o);
    assert_eq!(j["profile"], "realistic", "{j}");
    assert_eq!(j["scenarios"][0]["scenario"], "calico-split-brain", "{j}");
    let o = faultline(&["bench", "calico-split-brain", "--seeds", "2", "--json"]);
    assert_eq!(json_of(&o)["profile"], "adversarial");
}
