//! Output paths, checked before any seed runs: a file's folder is created, and a path that cannot
//! be written is bad input (exit 2, nothing run) rather than an error after the whole run.

use crate::explore::BadInput;
use std::path::Path;

/// Makes sure `path` can be written: creates its folder and opens it for appending (a file that
/// did not exist is removed again, so a refused run leaves nothing behind). `what` names the
/// option in the error, e.g. "--junit file".
pub(super) fn prepare_file(path: &Path, what: &str) -> Result<(), BadInput> {
    let bad = |e: std::io::Error| BadInput(format!("cannot write {what} {}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(bad)?;
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(bad)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// [`prepare_file`] for an optional path.
pub(super) fn prepare_opt(path: Option<&Path>, what: &str) -> Result<(), BadInput> {
    path.map_or(Ok(()), |p| prepare_file(p, what))
}

/// Makes sure files can be written into `dir`: creates it and writes (then removes) a probe.
pub(super) fn prepare_dir(dir: &Path, what: &str) -> Result<(), BadInput> {
    let bad = |e: std::io::Error| BadInput(format!("cannot write {what} {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(bad)?;
    let probe = dir.join(".faultline-write-test");
    std::fs::write(&probe, b"").map_err(bad)?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_folder_is_created_and_an_impossible_path_refused() {
        let base = std::env::temp_dir().join(format!("faultline-output-{}", std::process::id()));
        let f = base.join("a/b/junit.xml");
        prepare_file(&f, "--junit file").unwrap();
        assert!(f.parent().unwrap().is_dir() && !f.exists());
        // A folder where the file should be, and a file where a folder should be.
        assert!(prepare_file(&base.join("a"), "--junit file").is_err());
        std::fs::write(base.join("plain"), b"").unwrap();
        let e = prepare_file(&base.join("plain/x.xml"), "--junit file").unwrap_err();
        assert!(e.0.starts_with("cannot write --junit file"), "{}", e.0);
        assert!(prepare_dir(&base.join("plain/dir"), "--out folder").is_err());
        prepare_dir(&base.join("d/e"), "--out folder").unwrap();
        let _ = std::fs::remove_dir_all(base);
    }
}
