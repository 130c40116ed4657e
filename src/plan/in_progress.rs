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

    /// After the step's record is safely in the results file.
    pub fn end(&self) -> anyhow::Result<()> {
        match std::fs::remove_file(self.destination.path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(anyhow::anyhow!(
                "cannot remove '{}': {e}",
                self.destination.path().display()
            )),
            _ => Ok(()),
        }
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
