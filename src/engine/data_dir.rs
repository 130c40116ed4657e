//! Data directories: kvperf marks the ones it creates or adopts, and refuses
//! ones that hold something else, so it never writes into (or later cleans)
//! a directory that is not a benchmark store.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::error::InputError;

pub const MARKER: &str = ".kvperf-data";
/// A plan's precondition fill, kept beside the store when a load empties it.
pub const PRECONDITION_FILE: &str = "kvperf-precondition.fill";

/// Creates `dir` if needed and checks it may hold a store of `engine`.
pub fn prepare_data_dir(dir: &Path, engine: &str) -> anyhow::Result<()> {
    let shown = dir.display();
    if !dir.exists() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create --db '{shown}'"))?;
        return write_marker(dir, engine, CREATED);
    }
    if !dir.is_dir() {
        return Err(
            InputError::Invalid(format!("--db '{shown}' exists and is not a directory")).into(),
        );
    }
    let marker = dir.join(MARKER);
    if marker.exists() {
        let text = fs::read_to_string(&marker)
            .with_context(|| format!("cannot read '{}'", marker.display()))?;
        let owner = text.lines().next().unwrap_or("").trim();
        if owner != engine {
            return Err(InputError::Invalid(format!(
                "--db '{shown}' holds a {owner} store made by kvperf, not {engine}; use another directory"
            ))
            .into());
        }
        return Ok(());
    }
    let entries: Vec<String> = fs::read_dir(dir)
        .with_context(|| format!("cannot list --db '{shown}'"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if entries.is_empty() || (engine == "rocksdb" && looks_like_rocksdb(&entries)) {
        return write_marker(
            dir,
            engine,
            if entries.is_empty() { CREATED } else { ADOPTED },
        );
    }
    let example = entries.iter().min().cloned().unwrap_or_default();
    Err(InputError::Invalid(format!(
        "--db '{shown}' is not empty and is not a kvperf or {engine} store (it holds '{example}'); use a new or empty directory"
    ))
    .into())
}

fn looks_like_rocksdb(entries: &[String]) -> bool {
    entries.iter().any(|e| e == "CURRENT")
        && entries
            .iter()
            .any(|e| e == "IDENTITY" || e.starts_with("MANIFEST-"))
}

const CREATED: &str = "created";
const ADOPTED: &str = "adopted";

/// Removes the store in `dir` (everything but the marker) so a benchmark
/// can start from an empty database, as db_bench's fill benchmarks do.
/// Only a directory kvperf created (or found empty) is ever emptied.
pub fn wipe_store(dir: &Path) -> anyhow::Result<()> {
    let shown = dir.display();
    let marker = fs::read_to_string(dir.join(MARKER)).unwrap_or_default();
    if !marker
        .lines()
        .nth(1)
        .is_some_and(|l| l.starts_with(CREATED))
    {
        return Err(InputError::Invalid(format!(
            "--db '{shown}' holds a store kvperf did not create; kvperf will not delete it \
             (use --use_existing_db=1 or a new directory)"
        ))
        .into());
    }
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list --db '{shown}'"))? {
        let path = entry?.path();
        if path
            .file_name()
            .is_some_and(|n| n == MARKER || n == PRECONDITION_FILE)
        {
            continue;
        }
        let removed = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.with_context(|| format!("cannot remove '{}'", path.display()))?;
    }
    Ok(())
}

/// Prepares `dir` for a store of `engine` and empties it: a load or a
/// db_bench fill starts from an empty store. Only a directory kvperf
/// created is emptied ([`wipe_store`] refuses any other).
pub fn prepare_empty_store(dir: &Path, engine: &str) -> anyhow::Result<()> {
    prepare_data_dir(dir, engine)?;
    if holds_store(dir) {
        wipe_store(dir)?;
    }
    Ok(())
}

/// Whether `dir` holds anything besides kvperf's marker.
pub fn holds_store(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name() != MARKER && e.file_name() != PRECONDITION_FILE)
    })
}

fn write_marker(dir: &Path, engine: &str, how: &str) -> anyhow::Result<()> {
    let path = dir.join(MARKER);
    let mut file = fs::File::create(&path)
        .with_context(|| format!("cannot write to --db '{}'", dir.display()))?;
    writeln!(
        file,
        "{engine}\n{how} by kvperf {}; kvperf may reuse this directory",
        env!("CARGO_PKG_VERSION")
    )
    .and_then(|_| file.sync_all())
    .with_context(|| format!("cannot write to --db '{}'", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_marks_and_reopens() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        prepare_data_dir(&db, "rocksdb").unwrap();
        assert!(db.join(MARKER).exists());
        prepare_data_dir(&db, "rocksdb").unwrap();
        let err = prepare_data_dir(&db, "lmdb").unwrap_err().to_string();
        assert!(err.contains("holds a rocksdb store"), "{err}");
    }

    #[test]
    fn refuses_foreign_directories_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("thesis.tex"), "precious").unwrap();
        let err = prepare_data_dir(tmp.path(), "rocksdb")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a kvperf or rocksdb store") && err.contains("thesis.tex"),
            "{err}"
        );
        assert!(tmp.path().join("thesis.tex").exists());

        let file = tmp.path().join("thesis.tex");
        let err = prepare_data_dir(&file, "rocksdb").unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn adopts_an_unmarked_rocksdb_store() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("CURRENT"), "MANIFEST-000005\n").unwrap();
        fs::write(tmp.path().join("IDENTITY"), "x").unwrap();
        prepare_data_dir(tmp.path(), "rocksdb").unwrap();
        assert!(tmp.path().join(MARKER).exists());
        // Adopted, not created: kvperf will not empty it.
        let err = wipe_store(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("did not create"), "{err}");
        assert!(tmp.path().join("IDENTITY").exists());
    }

    #[test]
    fn wipes_only_what_it_created_and_keeps_the_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        prepare_data_dir(&db, "rocksdb").unwrap();
        assert!(!holds_store(&db));
        fs::write(db.join("000001.sst"), "x").unwrap();
        fs::create_dir(db.join("sub")).unwrap();
        assert!(holds_store(&db));
        wipe_store(&db).unwrap();
        assert!(!holds_store(&db) && db.join(MARKER).exists());
    }
}
