//! Which step is changing a store right now, in a small file beside the
//! results file. A step killed mid-run (`kill -9`, a crash, Ctrl-C) has
//! already changed its configuration's store: updates, inserts. Its record
//! is not kept, so a rerun runs it again, and must not measure a store
//! that the lost run left behind: the file says which configuration's
//! store to make again before its next step.

use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::files::{Destination, Written};

const FIRST_LINE: &str = "kvperf step in progress";

const MARKER: Written = Written {
    what: "kvperf step marker",
    recognizes: is_marker,
    extension: "txt",
};

/// Whether `bytes` are exactly what [`InProgress::begin`] writes: its
/// first line, a configuration and a step, each on a line of its own, and
/// nothing else (the whole file fits in the head kvperf reads).
fn is_marker(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let Some(body) = text.strip_suffix('\n') else {
        return false;
    };
    let lines: Vec<&str> = body.split('\n').collect();
    lines.len() == 3 && lines[0] == FIRST_LINE && lines[1..].iter().all(|l| !l.trim().is_empty())
}

/// The step that was running when the last plan run on these results ended.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOver {
    pub config: String,
    pub step: String,
}

pub struct InProgress {
    destination: Destination,
}

impl InProgress {
    /// Where the marker of the plan run writing `results` is.
    pub fn path_beside(results: &Path) -> PathBuf {
        let name = results
            .file_name()
            .map_or_else(|| "results".into(), |n| n.to_string_lossy().into_owned());
        results.with_file_name(format!(".{name}.in-progress"))
    }

    /// The marker of the plan run writing `results`; refused (one line)
    /// when something kvperf did not write stands at its path.
    pub fn beside(results: &Path) -> Result<Self, InputError> {
        let path = Self::path_beside(results);
        Ok(Self {
            destination: Destination::check(&path, "the step marker", MARKER, &[results])?,
        })
    }

    /// The step a run that ended abruptly left in progress, if any.
    pub fn left_over(&self) -> anyhow::Result<Option<LeftOver>> {
        let path = self.destination.path();
        if !path.exists() {
            return Ok(None);
        }
        let text = crate::files::read_input(path, "step marker", crate::files::bound::STEP_MARKER)?;
        let mut lines = text.lines().skip(1);
        Ok(match (lines.next(), lines.next()) {
            (Some(config), Some(step)) => Some(LeftOver {
                config: config.to_string(),
                step: step.to_string(),
            }),
            _ => None,
        })
    }

    /// Before `step` of `config` touches its store.
    pub fn begin(&self, config: &str, step: &str) -> anyhow::Result<()> {
        self.destination
            .write(format!("{FIRST_LINE}\n{config}\n{step}\n").as_bytes())
    }

    /// After the step's record is safely in the results file: removes the
    /// marker, only if what stands at its path is still the marker kvperf
    /// wrote (a regular file of one name, not a link, holding exactly a
    /// marker's lines); anything put there since is left, in one line.
    pub fn end(&self) -> anyhow::Result<()> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let path = self.destination.path();
        let cannot = |e: std::io::Error| anyhow::anyhow!("cannot remove '{}': {e}", path.display());
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // ELOOP: a link stands there; ENXIO: a socket.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO)) => {
                return Err(self.not_ours().into())
            }
            Err(e) => return Err(cannot(e)),
            Ok(file) => file,
        };
        let meta = file.metadata().map_err(cannot)?;
        let bound = crate::files::bound::STEP_MARKER;
        let ours = meta.is_file()
            && meta.nlink() == 1
            && crate::files::read_opened(&file, &meta, path, "step marker", bound)
                .is_ok_and(|bytes| is_marker(&bytes));
        // Still the file just read (not one renamed over it since).
        let same = std::fs::symlink_metadata(path)
            .is_ok_and(|now| now.dev() == meta.dev() && now.ino() == meta.ino());
        if !(ours && same) {
            return Err(self.not_ours().into());
        }
        std::fs::remove_file(path).map_err(cannot)
    }

    fn not_ours(&self) -> InputError {
        InputError::Invalid(format!(
            "'{}' is not the step marker kvperf wrote (something was put in its place while the step ran), so kvperf leaves it; the step's record is kept: move that file away, then run the plan again to resume",
            self.destination.path().display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_begun_and_not_ended_is_left_over() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("r.jsonl");
        let marker = InProgress::beside(&results).unwrap();
        assert_eq!(marker.left_over().unwrap(), None);
        marker.begin("disk", "disk/run/a/t8/r1").unwrap();
        let left = InProgress::beside(&results).unwrap().left_over().unwrap();
        assert_eq!(
            left,
            Some(LeftOver {
                config: "disk".into(),
                step: "disk/run/a/t8/r1".into()
            })
        );
        marker.end().unwrap();
        assert_eq!(marker.left_over().unwrap(), None);
        marker.end().unwrap();
    }

    #[test]
    fn end_removes_only_the_marker_kvperf_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("r.jsonl");
        let path = InProgress::path_beside(&results);
        let theirs = dir.path().join("notes.txt");
        std::fs::write(&theirs, "mine\n").unwrap();
        let marker = InProgress::beside(&results).unwrap();
        type Put = fn(&std::path::Path, &std::path::Path);
        let puts: [Put; 3] = [
            |path, _| std::fs::write(path, "mine\n").unwrap(),
            |path, theirs| std::os::unix::fs::symlink(theirs, path).unwrap(),
            |path, theirs| std::fs::hard_link(theirs, path).unwrap(),
        ];
        for put in puts {
            marker.begin("c", "c/run/a/t1/r1").unwrap();
            std::fs::remove_file(&path).unwrap();
            put(&path, &theirs);
            let err = marker.end().unwrap_err().to_string();
            assert!(err.contains("is not the step marker kvperf wrote"), "{err}");
            assert!(std::fs::symlink_metadata(&path).is_ok());
            assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "mine\n");
            std::fs::remove_file(&path).unwrap();
        }
        marker.begin("c", "c/run/a/t1/r1").unwrap();
        marker.end().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_users_file_at_the_markers_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("r.jsonl");
        for theirs in [
            "mine",
            "kvperf step in progress, my notes on it\n",
            "kvperf step in progress\nmine\n",
            "kvperf step in progress\na\nb\nmore of mine\n",
        ] {
            std::fs::write(dir.path().join(".r.jsonl.in-progress"), theirs).unwrap();
            let err = InProgress::beside(&results).err().unwrap().to_string();
            assert!(err.contains("is not a kvperf step marker"), "{err}");
        }
    }
}
