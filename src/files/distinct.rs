//! One path given to two outputs of a command (`--output X-READ.hdr` with
//! `hdrhistogram.output.path=X-`, `plan run --results r.jsonl --report
//! r.jsonl`): found before anything is measured, not when the second one
//! is written and finds the first in its place.

use std::path::{Component, Path, PathBuf};

use crate::error::InputError;

/// The outputs of one command, each checked against all the others as it
/// is added.
#[derive(Debug, Default)]
pub struct Outputs {
    /// What names each output (`--output`, `report file`), and its place.
    seen: Vec<(String, Place)>,
}

#[derive(Debug)]
struct Place {
    path: PathBuf,
    /// A directory output (a report's): no file may stand in its place.
    dir: bool,
}

impl Outputs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the file output `path`, named `what` in the error; refused
    /// when another output is the same file (or a directory output's place).
    /// The standard streams (`-`, `/dev/stdout`) are not files: not compared.
    pub fn file(&mut self, what: &str, path: &Path) -> Result<(), InputError> {
        if super::destination::stream_named(path).is_some() {
            return Ok(());
        }
        self.add(what, path, false)
    }

    /// Adds the directory output `dir` (its files are added as files).
    pub fn dir(&mut self, what: &str, dir: &Path) -> Result<(), InputError> {
        self.add(what, dir, true)
    }

    /// Refuses every output inside `store`, the engine's data directory:
    /// the engine makes its own files there after kvperf's checks (RocksDB's
    /// `LOG`, LMDB's `lock.mdb`), and writes into or over them.
    pub fn outside_store(&self, store: &Path) -> Result<(), InputError> {
        // Every spelling of the store: its real path when it exists (a
        // link to it followed), else where it will be made.
        let places = [store.canonicalize().ok(), Some(place_of(store))];
        for (what, seen) in &self.seen {
            if places.iter().flatten().any(|p| seen.path.starts_with(p)) {
                return Err(InputError::Invalid(format!(
                    "{what} '{}' is inside the store directory '{}', where the engine makes and replaces its own files: give a path outside it",
                    seen.path.display(),
                    store.display()
                )));
            }
        }
        Ok(())
    }

    fn add(&mut self, what: &str, path: &Path, dir: bool) -> Result<(), InputError> {
        let place = place_of(path);
        for (other, seen) in &self.seen {
            if seen.path == place || same_file(path, &seen.path) {
                let label = |name: &str, dir: bool| {
                    if dir {
                        format!("{name} (a directory)")
                    } else {
                        name.to_string()
                    }
                };
                return Err(InputError::Invalid(format!(
                    "'{}' is given as both {} and {}: one would overwrite the other; give each its own path",
                    path.display(),
                    label(other, seen.dir),
                    label(what, dir),
                )));
            }
        }
        self.seen
            .push((what.to_string(), Place { path: place, dir }));
        Ok(())
    }
}

/// Where `path` leads: absolute, `.` and `..` resolved, its directory's
/// links followed where it exists (the file itself may not exist yet).
fn place_of(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let parts: Vec<Component> = absolute.components().collect();
    // The file's own name is kept as given (not followed: a link there is
    // judged by name); its directory as the kernel reads it. `L/../D` with
    // `L` a link is the link target's parent's D, not ./D: `..` resolved as
    // text first let an output into the store (pass 12 part B).
    let own_name = matches!(parts.last(), Some(Component::Normal(_)));
    let dir_parts = &parts[..parts.len() - usize::from(own_name)];
    // The longest leading part that exists, with its links followed; the
    // rest as text (no link can be among names that do not exist).
    let (mut place, rest) = (0..=dir_parts.len())
        .rev()
        .find_map(|keep| {
            let lead: PathBuf = dir_parts[..keep].iter().collect();
            lead.canonicalize()
                .ok()
                .map(|real| (real, &dir_parts[keep..]))
        })
        .unwrap_or_else(|| (PathBuf::new(), dir_parts));
    for part in rest {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                place.pop();
            }
            other => place.push(other),
        }
    }
    if own_name {
        place.push(parts[parts.len() - 1]);
    }
    place
}

/// Whether two existing paths are one file (a hard or symbolic link).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => super::identity(&a) == super::identity(&b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `L/../D/x`, `L` a link to a directory beside the store: the kernel
    /// reads it as the link target's parent's `D/x`, inside the store.
    #[test]
    fn a_parent_step_after_a_link_is_read_as_the_kernel_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(d.join("sub/x")).unwrap();
        std::fs::create_dir_all(d.join("sub/D")).unwrap();
        std::os::unix::fs::symlink(d.join("sub/x"), d.join("L")).unwrap();
        let mut outputs = Outputs::new();
        outputs
            .file("--json", &d.join("L/../D/OPTIONS-000019"))
            .unwrap();
        let err = outputs.outside_store(&d.join("sub/D")).unwrap_err();
        assert!(err.to_string().contains("inside the store"), "{err}");
        // A store not made yet, reached the same way.
        let mut outputs = Outputs::new();
        outputs.file("--output", &d.join("L/../E/x.json")).unwrap();
        assert!(outputs.outside_store(&d.join("sub/E")).is_err());
        // Beside the store, not in it.
        let mut outputs = Outputs::new();
        outputs.file("--output", &d.join("L/../r.json")).unwrap();
        assert!(outputs.outside_store(&d.join("sub/D")).is_ok());
    }

    #[test]
    fn one_path_two_ways_is_refused_and_distinct_paths_pass() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut outputs = Outputs::new();
        outputs.file("--output", &d.join("X-READ.hdr")).unwrap();
        outputs.file("--output", Path::new("-")).unwrap();
        outputs
            .file("hdrhistogram.output.path", &d.join("X-UPDATE.hdr"))
            .unwrap();
        let err = outputs
            .file("hdrhistogram.output.path", &d.join("sub/../X-READ.hdr"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("given as both --output"), "{err}");
        outputs.dir("--report", &d.join("r.jsonl")).unwrap();
        let err = outputs
            .file("--results", &d.join("./r.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--report (a directory) and --results"),
            "{err}"
        );
    }
}
