//! `--shard K/N` and `--shard auto`: which part of a seed range this process explores, given
//! explicitly or taken from the CI engine's environment.
//!
//! - Kubernetes Indexed Job: `JOB_COMPLETION_INDEX` (from 0); the completion count is not in the
//!   environment, so it comes from `--shards N` or `FAULTLINE_SHARDS`.
//! - GitLab `parallel:`: `CI_NODE_INDEX` (from 1) and `CI_NODE_TOTAL`.

use crate::explore::BadInput;

/// Parses `K/N` (1 <= K <= N).
pub(super) fn parse_shard(s: &str) -> Result<(u64, u64), BadInput> {
    let bad = || {
        BadInput(format!(
            "malformed shard '{s}': give K/N with 1 <= K <= N, or auto"
        ))
    };
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n) = (
        k.trim().parse::<u64>().map_err(|_| bad())?,
        n.trim().parse::<u64>().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// The shard of `--shard SPEC` (with `--shards N` for `auto`), reading the environment through
/// `env`.
pub(super) fn resolve(
    spec: &str,
    shards: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(u64, u64), BadInput> {
    if spec != "auto" {
        if shards.is_some() {
            return Err(BadInput("--shards goes with --shard auto only".into()));
        }
        return parse_shard(spec);
    }
    let number = |name: &str, v: &str| {
        v.trim()
            .parse::<u64>()
            .map_err(|_| BadInput(format!("--shard auto: {name}='{v}' is not a whole number")))
    };
    let (k, n, source) = if let Some(idx) = env("JOB_COMPLETION_INDEX") {
        let count = match shards {
            Some(s) => number("--shards", s)?,
            None => match env("FAULTLINE_SHARDS") {
                Some(s) => number("FAULTLINE_SHARDS", &s)?,
                None => {
                    return Err(BadInput(
                        "--shard auto in a Kubernetes Indexed Job needs the completion count: \
                         --shards N or FAULTLINE_SHARDS"
                            .into(),
                    ))
                }
            },
        };
        (
            number("JOB_COMPLETION_INDEX", &idx)? + 1,
            count,
            "JOB_COMPLETION_INDEX",
        )
    } else if let Some(idx) = env("CI_NODE_INDEX") {
        let total = env("CI_NODE_TOTAL").ok_or_else(|| {
            BadInput("--shard auto: CI_NODE_INDEX is set but CI_NODE_TOTAL is not".into())
        })?;
        let total = match shards {
            Some(s) => number("--shards", s)?,
            None => number("CI_NODE_TOTAL", &total)?,
        };
        (number("CI_NODE_INDEX", &idx)?, total, "CI_NODE_INDEX")
    } else {
        return Err(BadInput(
            "--shard auto: neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor \
             CI_NODE_INDEX and CI_NODE_TOTAL (GitLab parallel) is set"
                .into(),
        ));
    };
    if k == 0 || n == 0 || k > n {
        return Err(BadInput(format!(
            "--shard auto: {source} gives shard {k} of {n}, outside 1..={n}"
        )));
    }
    Ok((k, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn kubernetes_counts_from_zero_and_gitlab_from_one() {
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0")]);
        assert_eq!(resolve("auto", Some("4"), &k8s).unwrap(), (1, 4));
        let k8s = env(&[("JOB_COMPLETION_INDEX", "3"), ("FAULTLINE_SHARDS", "4")]);
        assert_eq!(resolve("auto", None, &k8s).unwrap(), (4, 4));
        let gitlab = env(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "5")]);
        assert_eq!(resolve("auto", None, &gitlab).unwrap(), (2, 5));
        assert_eq!(resolve("2/3", None, &env(&[])).unwrap(), (2, 3));
    }

    /// The environment, `--shards`, and the start of the expected message.
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);

    #[test]
    fn missing_or_malformed_variables_are_bad_input() {
        let cases: &[Case] = &[
            (&[], None, "neither JOB_COMPLETION_INDEX"),
            (
                &[("JOB_COMPLETION_INDEX", "0")],
                None,
                "needs the completion count",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "x")],
                Some("3"),
                "is not a whole number",
            ),
            (&[("JOB_COMPLETION_INDEX", "3")], Some("3"), "outside 1..=3"),
            (&[("CI_NODE_INDEX", "1")], None, "CI_NODE_TOTAL is not"),
            (
                &[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "2")],
                None,
                "outside",
            ),
        ];
        for (vars, shards, needle) in cases {
            let e = resolve("auto", *shards, &env(vars)).unwrap_err();
            assert!(e.0.contains(needle), "{vars:?}: {}", e.0);
        }
        assert!(resolve("1/2", Some("2"), &env(&[])).is_err());
    }
}
