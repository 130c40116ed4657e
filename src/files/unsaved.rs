//! Where a result goes when it cannot be written where it was asked to:
//! a new file (never one that exists) beside the destination, in the
//! directory checked and held for it (never by name: that name may lead
//! into a user's directory by now), else in the temporary directory, else
//! in the working directory, else in the home directory.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use super::HeldDir;

static KEPT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Writes `bytes` to a new file `kvperf-unsaved-<time>-<pid>.<extension>`
/// in the first of `near`, the temporary directory, the working directory
/// and `$HOME` that takes it; its path, or the last error. (A working
/// directory removed while the step ran, beside a `TMPDIR` that is gone,
/// lost the whole result.)
pub fn keep_unsaved(
    bytes: &[u8],
    near: Option<&HeldDir>,
    extension: &str,
) -> std::io::Result<PathBuf> {
    let now = crate::clock::unix_secs();
    // Several results of one process may need keeping in one second (the
    // interval logs of a step): each gets a name of its own.
    let n = match KEPT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
        0 => String::new(),
        n => format!("-{n}"),
    };
    let name = format!("kvperf-unsaved-{now}-{}{n}.{extension}", std::process::id());
    let mut last = std::io::Error::other("no directory to keep it in");
    if let Some(near) = near {
        match write_new(near, &name, bytes) {
            Ok(()) => return Ok(near.shown_now(&name)),
            Err(e) => last = e,
        }
    }
    let mut dirs = vec![std::env::temp_dir(), PathBuf::from(".")];
    dirs.extend(std::env::var_os("HOME").map(PathBuf::from));
    for dir in dirs {
        match HeldDir::open(&dir).and_then(|held| write_new(&held, &name, bytes)) {
            Ok(()) => return Ok(dir.join(&name)),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Creates `name` in `dir` (never an existing file, never through a link)
/// with `bytes`; a file it created and could not fill (a full disk) is
/// removed again.
fn write_new(dir: &HeldDir, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let mut file: File = dir.create_new(name)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if written.is_err() {
        let _ = dir.remove(name);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_bytes_in_a_new_file_beside_the_destination() {
        let dir = tempfile::tempdir().unwrap();
        let held = HeldDir::open(dir.path()).unwrap();
        let kept = keep_unsaved(b"result", Some(&held), "json").unwrap();
        assert_eq!(
            kept.parent(),
            Some(dir.path().canonicalize().unwrap().as_path())
        );
        assert_eq!(std::fs::read(&kept).unwrap(), b"result");
    }

    #[test]
    fn falls_back_when_the_destination_directory_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("missing");
        std::fs::create_dir(&gone).unwrap();
        let held = HeldDir::open(&gone).unwrap();
        std::fs::remove_dir(&gone).unwrap();
        let kept = keep_unsaved(b"x", Some(&held), "txt").unwrap();
        assert!(!kept.starts_with(&gone));
        assert_eq!(std::fs::read(&kept).unwrap(), b"x");
        std::fs::remove_file(kept).unwrap();
    }
}
