//! Data directories of directory engines: kvperf marks the ones it creates
//! or adopts, refuses ones that hold something else, and only ever removes
//! an engine's own files (as RocksDB's `DestroyDB` does), so a file a user
//! put into a kvperf directory survives a fresh load.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::Context;

use super::{loaded_keys, registry, EngineSpec, OpenMode, StoreKind};
use crate::error::InputError;

pub const MARKER: &str = ".kvperf-data";
/// A plan's precondition fill: kept beside the store, owned by no engine.
pub const PRECONDITION_FILE: &str = "kvperf-precondition.fill";

const CREATED: &str = "created";
const ADOPTED: &str = "adopted";

/// Creates or checks `dir` for `spec` before it is opened in `mode`.
pub fn prepare(spec: &EngineSpec, dir: &Path, mode: OpenMode) -> anyhow::Result<()> {
    let shown = dir.display();
    let StoreKind::Directory { owns } = spec.store else {
        return Ok(());
    };
    if !dir.exists() {
        if mode == OpenMode::Existing {
            return Err(no_store(spec, dir).into());
        }
        fs::create_dir_all(dir)
            .map_err(|e| InputError::Invalid(format!("cannot create --db '{shown}': {e}")))?;
        write_marker(dir, spec.name, CREATED)?;
        return loaded_keys::begin(dir);
    }
    if !dir.is_dir() {
        return Err(
            InputError::Invalid(format!("--db '{shown}' exists and is not a directory")).into(),
        );
    }
    let how = match read_marker(dir)? {
        Some((owner, how)) => {
            if owner != spec.name {
                return Err(InputError::Invalid(format!(
                    "--db '{shown}' holds a {owner} store made by kvperf, not {}; use another directory",
                    spec.name
                ))
                .into());
            }
            how
        }
        None => adopt_or_refuse(spec, dir, mode)?,
    };
    let holds = holds_owned(dir, owns);
    match mode {
        OpenMode::Existing if !holds => Err(no_store(spec, dir).into()),
        OpenMode::Fresh if holds && how != CREATED => Err(refuse_to_empty(spec, dir).into()),
        // The engine empties the store next: no key loaded any more.
        OpenMode::Fresh => loaded_keys::begin(dir),
        _ => Ok(()),
    }
}

/// Whether `dir` can become a kvperf data directory, checked before a plan
/// runs anything and without writing: a directory kvperf marked, an empty
/// one, one holding an engine's store (the step's engine judges it), or
/// one kvperf can create. Anything else is refused by name.
pub fn check_usable(dir: &Path) -> Result<(), InputError> {
    let shown = dir.display();
    if dir.exists() {
        if !dir.is_dir() {
            return Err(InputError::Invalid(format!(
                "--db '{shown}' exists and is not a directory"
            )));
        }
        let entries = entry_names(dir).map_err(|e| InputError::Invalid(format!("{e:#}")))?;
        let known = entries.is_empty()
            || dir.join(MARKER).exists()
            || registry().iter().any(|s| s.recognizes(dir));
        if !known {
            let example = entries.iter().min().cloned().unwrap_or_default();
            return Err(InputError::Invalid(format!(
                "--db '{shown}' holds files kvperf did not create (such as '{example}'); use a new or empty directory"
            )));
        }
        return Ok(());
    }
    let parent = dir
        .ancestors()
        .skip(1)
        .find(|a| a.as_os_str().is_empty() || a.exists())
        .filter(|a| !a.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let writable = parent.is_dir() && {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(parent.as_os_str().as_bytes()).unwrap_or_default();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
    };
    if !writable {
        return Err(InputError::Invalid(format!(
            "cannot create --db '{shown}': '{}' is {}",
            parent.display(),
            if parent.is_dir() {
                "not writable"
            } else {
                "not a directory"
            }
        )));
    }
    Ok(())
}

/// An unmarked directory: empty ones are taken, a store of this engine is
/// adopted if the engine can, anything else is refused by name.
fn adopt_or_refuse(spec: &EngineSpec, dir: &Path, mode: OpenMode) -> anyhow::Result<&'static str> {
    let shown = dir.display();
    // A ledger left without its marker is kvperf's, not the user's.
    let mut entries = entry_names(dir)?;
    entries.retain(|name| name != loaded_keys::LEDGER);
    if entries.is_empty() {
        if mode == OpenMode::Existing {
            // Refused before kvperf writes its marker into a user's directory.
            return Err(no_store(spec, dir).into());
        }
        write_marker(dir, spec.name, CREATED)?;
        loaded_keys::begin(dir)?;
        return Ok(CREATED);
    }
    if spec.recognizes(dir) {
        if mode == OpenMode::Fresh {
            // Refused before anything is written into it.
            return Err(refuse_to_empty(spec, dir).into());
        }
        if !spec.capabilities.adopt {
            return Err(InputError::Invalid(format!(
                "--db '{shown}' holds a {} store that kvperf did not create, and engine '{}' cannot adopt one; use a new directory",
                spec.name, spec.name
            ))
            .into());
        }
        write_marker(dir, spec.name, ADOPTED)?;
        return Ok(ADOPTED);
    }
    if let Some(other) = registry()
        .into_iter()
        .find(|s| s.name != spec.name && s.recognizes(dir))
    {
        return Err(InputError::Invalid(format!(
            "--db '{shown}' holds a {} store, not {}; use another directory",
            other.name, spec.name
        ))
        .into());
    }
    let example = entries.iter().min().cloned().unwrap_or_default();
    Err(InputError::Invalid(format!(
        "--db '{shown}' is not empty and is not a kvperf or {} store (it holds '{example}'); use a new or empty directory",
        spec.name
    ))
    .into())
}

fn refuse_to_empty(spec: &EngineSpec, dir: &Path) -> InputError {
    InputError::Invalid(format!(
        "--db '{}' holds a {} store kvperf did not create; kvperf will not delete it \
         (use --use_existing_db=1 or a new directory)",
        dir.display(),
        spec.name
    ))
}

fn no_store(spec: &EngineSpec, dir: &Path) -> InputError {
    InputError::Invalid(format!(
        "--db '{}' holds no {} store; load one first",
        dir.display(),
        spec.name
    ))
}

fn entry_names(dir: &Path) -> anyhow::Result<Vec<String>> {
    Ok(fs::read_dir(dir)
        .with_context(|| format!("cannot list --db '{}'", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

/// The marker's engine and how the directory came to kvperf.
fn read_marker(dir: &Path) -> anyhow::Result<Option<(String, &'static str)>> {
    let path = dir.join(MARKER);
    if !path.exists() {
        return Ok(None);
    }
    // Never a FIFO's open or /dev/zero's endless read: one line instead.
    let text =
        crate::files::read_input(&path, "data directory marker", crate::files::bound::MARKER)?;
    let mut lines = text.lines();
    let owner = lines.next().unwrap_or("").trim().to_string();
    let how = if lines.next().is_some_and(|l| l.starts_with(CREATED)) {
        CREATED
    } else {
        ADOPTED
    };
    Ok(Some((owner, how)))
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

/// Whether `dir` holds any entry `owns` claims.
pub fn holds_owned(dir: &Path, owns: fn(&str) -> bool) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| owns(&e.file_name().to_string_lossy()))
    })
}

/// Removes the entries of `dir` that `owns` claims (folders with their
/// contents) and nothing else: an engine's fresh store.
pub fn remove_owned(dir: &Path, owns: fn(&str) -> bool) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list '{}'", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == MARKER
            || name == PRECONDITION_FILE
            || name == loaded_keys::LEDGER
            || !owns(&name)
        {
            continue;
        }
        let path = entry.path();
        let removed = if entry.file_type()?.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.with_context(|| format!("cannot remove '{}'", path.display()))?;
    }
    Ok(())
}

/// Allocated bytes of the entries of `dir` that `owns` claims: the size of
/// an engine's store, without the marker, a precondition fill or a user's files.
pub fn owned_size(dir: &Path, owns: fn(&str) -> bool) -> Result<u64, String> {
    let shown = dir.display();
    let entries = fs::read_dir(dir).map_err(|e| format!("size of '{shown}': {e}"))?;
    let mut total = 0;
    for entry in entries {
        let entry = entry.map_err(|e| format!("size of '{shown}': {e}"))?;
        if owns(&entry.file_name().to_string_lossy()) {
            total += crate::host::disk_usage::size_on_disk(&entry.path())
                .map_err(|e| format!("size of '{}': {e}", entry.path().display()))?;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{AsyncOps, Capabilities, KvSupport};

    fn owns_sst(name: &str) -> bool {
        name.ends_with(".sst") || name == "CURRENT" || name == "sub"
    }

    static SPEC: EngineSpec = EngineSpec {
        name: "testdir",
        about: "",
        feature: "",
        store: StoreKind::Directory { owns: owns_sst },
        capabilities: Capabilities {
            background_work: false,
            compact: false,
            kv: KvSupport::None,
            adopt: true,
            ordered_scans: true,
            update_needs_existing: true,
            async_ops: AsyncOps::Unavailable,
            tasks_own_sockets: false,
            events: crate::engine::EventSupport::Unavailable("a test spec"),
            stats_report: false,
        },
        options: &[],
        open: |_| unreachable!("not opened in these tests"),
        db_bench: |_, _| Vec::new(),
    };

    #[test]
    fn creates_marks_and_reopens() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        prepare(&SPEC, &db, OpenMode::Any).unwrap();
        assert!(db.join(MARKER).exists());
        prepare(&SPEC, &db, OpenMode::Fresh).unwrap();
        fs::write(db.join(MARKER), "lmdb\ncreated by kvperf").unwrap();
        let err = prepare(&SPEC, &db, OpenMode::Any).unwrap_err().to_string();
        assert!(err.contains("holds a lmdb store made by kvperf"), "{err}");
    }

    #[test]
    fn refuses_foreign_directories_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("thesis.tex"), "precious").unwrap();
        let err = prepare(&SPEC, tmp.path(), OpenMode::Any)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a kvperf or testdir store") && err.contains("thesis.tex"),
            "{err}"
        );
        assert!(tmp.path().join("thesis.tex").exists());
        let file = tmp.path().join("thesis.tex");
        let err = prepare(&SPEC, &file, OpenMode::Any)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn an_adopted_store_is_never_emptied() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("CURRENT"), "x").unwrap();
        prepare(&SPEC, tmp.path(), OpenMode::Existing).unwrap();
        let err = prepare(&SPEC, tmp.path(), OpenMode::Fresh)
            .unwrap_err()
            .to_string();
        assert!(err.contains("did not create"), "{err}");
    }

    #[test]
    fn existing_mode_needs_a_store() {
        let tmp = tempfile::tempdir().unwrap();
        let err = prepare(&SPEC, &tmp.path().join("none"), OpenMode::Existing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no testdir store"), "{err}");
        // A user's empty directory stays empty: no marker before a refusal.
        let err = prepare(&SPEC, tmp.path(), OpenMode::Existing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no testdir store"), "{err}");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn removes_and_counts_only_owned_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        prepare(&SPEC, &db, OpenMode::Fresh).unwrap();
        fs::write(db.join("000001.sst"), vec![1u8; 64 * 1024]).unwrap();
        fs::create_dir(db.join("sub")).unwrap();
        fs::write(db.join("sub/inner"), "x").unwrap();
        fs::write(db.join("notes.txt"), vec![2u8; 64 * 1024]).unwrap();
        fs::create_dir(db.join("mine")).unwrap();
        fs::write(db.join(PRECONDITION_FILE), vec![3u8; 64 * 1024]).unwrap();
        let size = owned_size(&db, owns_sst).unwrap();
        assert!((64 * 1024..100 * 1024).contains(&size), "{size}");
        assert!(holds_owned(&db, owns_sst));
        remove_owned(&db, owns_sst).unwrap();
        assert!(!holds_owned(&db, owns_sst));
        for kept in ["notes.txt", "mine", MARKER, PRECONDITION_FILE] {
            assert!(db.join(kept).exists(), "{kept} was removed");
        }
    }
}
