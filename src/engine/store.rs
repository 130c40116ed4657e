//! Data directories of directory engines: kvperf writes only into a
//! directory it can prove it made: one that was absent or empty when
//! kvperf first used it, marked then with `.kvperf-data` (written
//! atomically). An unmarked directory that holds anything is refused
//! before a byte is written, even one that looks like an engine's store:
//! a file named like an engine's (`CURRENT`, `LOG`, `data.mdb`) is no
//! proof. kvperf only ever removes an engine's own files (as RocksDB's
//! `DestroyDB` does), so a file a user put into a kvperf directory
//! survives a fresh load.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{emptying, loaded_keys, registry, store_lock, EngineSpec, OpenMode, StoreKind};
use crate::error::InputError;
use crate::files::owned::{self, Place};

pub const MARKER: &str = ".kvperf-data";
/// A plan's precondition fill: kept beside the store, owned by no engine.
pub const PRECONDITION_FILE: &str = "kvperf-precondition.fill";

const CREATED: &str = "created";
/// How an older kvperf marked a store it adopted (it no longer adopts).
const ADOPTED: &str = "adopted";
/// A marker is a few dozen bytes; more is not one.
const MARKER_LIMIT: u64 = 4096;

/// Creates or checks `dir` for `spec` before it is opened in `mode`,
/// under kvperf's lock on it ([`store_lock`]), which the caller holds
/// while the engine is open: exclusive to empty or claim the store,
/// shared to use it. None for an engine without a directory.
pub fn prepare(
    spec: &EngineSpec,
    dir: &Path,
    mode: OpenMode,
) -> anyhow::Result<Option<store_lock::StoreLock>> {
    let StoreKind::Directory { .. } = spec.store else {
        return Ok(None);
    };
    // Refusals that need no write come first: not even the lock file is
    // written into a directory kvperf will not use.
    let claimed = if dir.exists() {
        check_usable(dir)?;
        matches!(read_marker(dir)?, Marker::Complete { .. })
    } else {
        false
    };
    if mode == OpenMode::Existing && !claimed {
        return Err(no_store(spec, dir).into());
    }
    if !dir.exists() {
        fs::create_dir_all(dir).map_err(|e| {
            InputError::Invalid(format!("cannot create --db '{}': {e}", dir.display()))
        })?;
    }
    // An engine that locks its store for one process is used under
    // kvperf's exclusive lock too: a second user is named, not refused by
    // the engine in its own words.
    let shared = spec.capabilities.shared_store;
    let exclusive = mode == OpenMode::Fresh || !claimed || !shared;
    let lock = store_lock::acquire(dir, exclusive)?;
    prepare_locked(spec, dir, mode)?;
    if exclusive && mode != OpenMode::Fresh && shared {
        lock.share(dir)?;
    }
    Ok(Some(lock))
}

fn prepare_locked(spec: &EngineSpec, dir: &Path, mode: OpenMode) -> anyhow::Result<()> {
    let shown = dir.display();
    let StoreKind::Directory { owns, dirs } = spec.store else {
        return Ok(());
    };
    if !dir.exists() {
        if mode == OpenMode::Existing {
            return Err(no_store(spec, dir).into());
        }
        fs::create_dir_all(dir)
            .map_err(|e| InputError::Invalid(format!("cannot create --db '{shown}': {e}")))?;
        return claim(spec, dir, Place::New);
    }
    if !dir.is_dir() {
        return Err(
            InputError::Invalid(format!("--db '{shown}' exists and is not a directory")).into(),
        );
    }
    match read_marker(dir)? {
        Marker::Complete { owner, how } => {
            if how != CREATED {
                return Err(adopted(dir).into());
            }
            if owner != spec.name {
                return Err(InputError::Invalid(format!(
                    "--db '{shown}' holds a {owner} store made by kvperf, not {}; use another directory",
                    spec.name
                ))
                .into());
            }
        }
        Marker::Partial => {
            // A marker cut short (a crash, a full disk) in a directory that
            // holds nothing else: kvperf made it, and repairs it.
            if let Some(refusal) = unclaimed(dir, true)? {
                return Err(refusal.into());
            }
            if mode == OpenMode::Existing {
                return Err(no_store(spec, dir).into());
            }
            return claim(spec, dir, Place::Replace);
        }
        Marker::Absent => {
            if let Some(refusal) = unclaimed(dir, false)? {
                return Err(refusal.into());
            }
            if mode == OpenMode::Existing {
                // Refused before kvperf writes its marker into a user's directory.
                return Err(no_store(spec, dir).into());
            }
            return claim(spec, dir, Place::New);
        }
    }
    if mode == OpenMode::Fresh {
        // Emptied here for every engine, crash-safe; the ledger emptied
        // while the store is flagged incomplete.
        let keep = [
            MARKER,
            PRECONDITION_FILE,
            loaded_keys::LEDGER,
            store_lock::LOCK_FILE,
        ];
        let engine = (owns, dirs);
        return emptying::empty(dir, spec.name, engine, &keep, || loaded_keys::begin(dir));
    }
    if emptying::interrupted(dir)? {
        return Err(InputError::Invalid(format!(
            "--db '{shown}' holds a {} store that a `load --fresh` was emptying when it was stopped, so it is incomplete; load it again with `kvperf load --fresh`",
            spec.name
        ))
        .into());
    }
    if let Some((path, odd)) = odd_among_owned(dir, owns)? {
        let (what, why) = match &odd {
            Odd::Link(what) => (what.as_str(), "the engine would write through it, into a file outside the store that kvperf did not make; remove the link (a `kvperf load --fresh` empties the store, links and all, without following them)"),
            Odd::NotAFile(what) => (*what, "the engine would wait on it or read it without end; move it out of --db"),
        };
        return Err(InputError::Invalid(format!(
            "--db '{shown}' holds '{}', {what} where {} keeps its own files: {why}",
            path.display(),
            spec.name
        ))
        .into());
    }
    match mode {
        OpenMode::Existing if !holds_owned(dir, owns) => Err(no_store(spec, dir).into()),
        _ => Ok(()),
    }
}

/// An entry among an engine's files that the engine must not open.
pub(crate) enum Odd {
    /// A symbolic link, or a file with hard links, and which.
    Link(String),
    /// A FIFO, socket or device node, and which.
    NotAFile(&'static str),
}

impl Odd {
    pub(crate) fn what(&self) -> &str {
        match self {
            Odd::Link(what) => what,
            Odd::NotAFile(what) => what,
        }
    }
}

/// The first entry among the engine's files in `dir`, at any depth of its
/// directories, that is neither a plain file nor a directory, and what it
/// is: an engine opens its files by name and writes through a symbolic
/// link, and into every name of a file with hard links (LMDB's
/// `lock.mdb`, WiredTiger's `WiredTiger.lock`, SQLite's `-wal`), so a link
/// put into kvperf's store would have a user's file written. No engine
/// kvperf runs makes hard links in its store, nor FIFOs, sockets or
/// devices: opening a FIFO at RocksDB's `CURRENT` waits for a writer past
/// any stall watch, and reading `/dev/zero`'s node never ends.
pub(crate) fn odd_among_owned(
    dir: &Path,
    owns: fn(&str) -> bool,
) -> anyhow::Result<Option<(PathBuf, Odd)>> {
    let mut pending: Vec<PathBuf> = entry_names(dir)?
        .into_iter()
        .filter(|name| owns(name))
        .map(|name| dir.join(name))
        .collect();
    while let Some(path) = pending.pop() {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            return Ok(Some((path, Odd::Link("a symbolic link".into()))));
        }
        if !meta.is_dir() && !meta.is_file() {
            let what = crate::files::kind_of(meta.file_type());
            return Ok(Some((path, Odd::NotAFile(what))));
        }
        if !meta.is_dir() && meta.nlink() > 1 {
            let what = format!("a file with {} hard links (names)", meta.nlink());
            return Ok(Some((path, Odd::Link(what))));
        }
        if meta.is_dir() {
            let entries =
                fs::read_dir(&path).with_context(|| format!("cannot list '{}'", path.display()))?;
            pending.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
        }
    }
    Ok(None)
}

/// Whether `dir` can become a kvperf data directory, checked before a plan
/// runs anything and without writing: a directory kvperf marked, an empty
/// one (or one holding only a marker cut short), or one kvperf can create.
/// Anything else is refused by name, a store of an engine's included.
pub fn check_usable(dir: &Path) -> Result<(), InputError> {
    let shown = dir.display();
    if dir.exists() {
        if !dir.is_dir() {
            return Err(InputError::Invalid(format!(
                "--db '{shown}' exists and is not a directory"
            )));
        }
        let refusal = match read_marker(dir).map_err(as_input)? {
            Marker::Complete { how, .. } if how != CREATED => Some(adopted(dir)),
            Marker::Complete { .. } => None,
            Marker::Partial => unclaimed(dir, true).map_err(as_input)?,
            Marker::Absent => unclaimed(dir, false).map_err(as_input)?,
        };
        return refusal.map_or(Ok(()), Err);
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

fn as_input(e: anyhow::Error) -> InputError {
    match e.downcast::<InputError>() {
        Ok(input) => input,
        Err(e) => InputError::Invalid(format!("{e:#}")),
    }
}

/// Marks `dir` as kvperf's store of `spec` (a directory kvperf just made,
/// found empty, or whose marker was cut short) with an empty ledger.
fn claim(spec: &EngineSpec, dir: &Path, place: Place) -> anyhow::Result<()> {
    remove_stale_temporaries(dir);
    write_marker(dir, spec.name, place)?;
    loaded_keys::begin(dir)
}

/// Why kvperf may not claim the unmarked (or, `partial`, half-marked)
/// `dir`: None when it holds nothing but kvperf's own temporary files.
/// Anything else is a user's, an engine's store included.
fn unclaimed(dir: &Path, partial: bool) -> anyhow::Result<Option<InputError>> {
    let mut entries = entry_names(dir)?;
    let own_lock = store_lock::is_own(dir);
    let kvperfs = |name: &String| {
        name == MARKER
            || is_own_temporary(dir, name)
            || (own_lock && name == store_lock::LOCK_FILE)
            || (name == PRECONDITION_FILE && is_own_fill(dir))
    };
    entries.retain(|name| !kvperfs(name));
    if entries.is_empty() {
        return Ok(None);
    }
    entries.sort();
    let shown = dir.display();
    let marker = if partial {
        " beside a kvperf marker cut short ('.kvperf-data'), which cannot prove they are kvperf's"
    } else {
        ""
    };
    // The engine most of the entries are named like, to say what it seems.
    let looks_like = registry()
        .into_iter()
        .filter_map(|s| match s.store {
            StoreKind::Directory { owns, .. } => {
                let named: Vec<&String> = entries.iter().filter(|e| owns(e)).collect();
                named.first().map(|e| (named.len(), s.name, *e))
            }
            _ => None,
        })
        .rev()
        .max_by_key(|(count, _, _)| *count)
        .map(|(_, name, example)| (name, example));
    Ok(Some(InputError::Invalid(match looks_like {
        Some((engine, example)) => format!(
            "--db '{shown}' holds files kvperf did not create (a {engine} store, it seems: '{example}'){marker}; kvperf writes only into a directory it made: use a new or empty directory"
        ),
        None => format!(
            "--db '{shown}' holds files kvperf did not create (such as '{}'){marker}; use a new or empty directory",
            entries[0]
        ),
    })))
}

fn adopted(dir: &Path) -> InputError {
    InputError::Invalid(format!(
        "--db '{}' holds a store that an older kvperf adopted ('.kvperf-data' says so), not one kvperf made; kvperf writes only into directories it made: use a new or empty directory",
        dir.display()
    ))
}

/// kvperf's own temporary file of its marker, ledger or lock (a crash
/// between writing one and renaming it leaves one): named so, and holding
/// what kvperf writes there or the start of it. The name alone proves
/// nothing: a user's `.kvperf-data.tmp-1-1` holding their notes was
/// deleted as kvperf's.
fn is_own_temporary(dir: &Path, name: &str) -> bool {
    let of = |file: &str| owned::is_temporary_of(name, file);
    let (marker, ledger, lock) = (
        of(MARKER),
        of(loaded_keys::LEDGER),
        of(store_lock::LOCK_FILE),
    );
    if !(marker || ledger || lock) {
        return false;
    }
    let Some(bytes) = read_small_own(&dir.join(name)) else {
        return false;
    };
    let Some(written) = written_part(&bytes) else {
        return false;
    };
    if marker {
        parse_marker(&bytes).is_some()
    } else if ledger {
        // A ledger is begun empty; its lines are appended in place.
        written.is_empty()
    } else {
        store_lock::content().as_bytes().starts_with(written)
    }
}

/// kvperf's own precondition fill in `dir`: a regular file with one name
/// carrying kvperf's mark (`kvperf device precondition DIR` makes it in a
/// directory before any store; it was taken for a user's file there).
fn is_own_fill(dir: &Path) -> bool {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dir.join(PRECONDITION_FILE))
        .is_ok_and(|file| owned::check_own(&file).is_ok() && owned::has_fill_mark(&file))
}

/// The bytes of `path` when it is a regular file with one name of at most
/// [`MARKER_LIMIT`] bytes, read without following a link or blocking.
fn read_small_own(path: &Path) -> Option<Vec<u8>> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() || meta.nlink() > 1 || meta.len() > MARKER_LIMIT {
        return None;
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    owned::check_own(&file).ok()?;
    let mut bytes = Vec::new();
    file.take(MARKER_LIMIT + 1).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

fn remove_stale_temporaries(dir: &Path) {
    for name in entry_names(dir).unwrap_or_default() {
        if is_own_temporary(dir, &name) {
            let _ = fs::remove_file(dir.join(name));
        }
    }
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

/// What stands at a data directory's marker path.
#[derive(Debug, PartialEq)]
enum Marker {
    Absent,
    /// The marker's engine and how the directory came to kvperf.
    Complete {
        owner: String,
        how: &'static str,
    },
    /// The start of a marker only (empty, cut short, or zeros where a
    /// crash left the blocks unwritten): kvperf's, to be repaired.
    Partial,
}

/// Reads `dir`'s marker without following a link or blocking on a FIFO,
/// at most [`MARKER_LIMIT`] bytes. Anything that is not one of kvperf's
/// markers (whole or cut short) is refused by name.
fn read_marker(dir: &Path) -> anyhow::Result<Marker> {
    let path = dir.join(MARKER);
    let refuse = |what: String| -> anyhow::Error {
        InputError::Invalid(format!(
            "--db '{}' has a '{MARKER}' that {what}, not kvperf's marker; kvperf will not use this directory",
            dir.display()
        ))
        .into()
    };
    let meta = match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Marker::Absent),
        Err(e) => return Err(e).with_context(|| format!("cannot read '{}'", path.display())),
        Ok(meta) => meta,
    };
    if !meta.file_type().is_file() {
        return Err(refuse(format!(
            "is {}",
            crate::files::kind_of(meta.file_type())
        )));
    }
    if meta.nlink() > 1 {
        return Err(refuse(format!("has {} hard links", meta.nlink())));
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    owned::check_own(&file).map_err(|e| refuse(format!("cannot be kvperf's ({e})")))?;
    let mut bytes = Vec::new();
    file.take(MARKER_LIMIT + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    parse_marker(&bytes).ok_or_else(|| refuse("holds something else".into()))
}

/// A marker's bytes: whole (`ENGINE\ncreated by kvperf ...`), the start of
/// one, or None for anything else.
fn parse_marker(bytes: &[u8]) -> Option<Marker> {
    if bytes.len() as u64 > MARKER_LIMIT {
        return None;
    }
    let written = written_part(bytes)?;
    let text = std::str::from_utf8(written).ok()?;
    // An engine kvperf knows, not any word: a user's file holding one
    // lowercase word ("mine\n") is no marker of kvperf's (hostile pass 7).
    let Some((owner, rest)) = text.split_once('\n') else {
        // Cut short while its first line was written.
        return marker_owners()
            .any(|name| name.starts_with(text))
            .then_some(Marker::Partial);
    };
    if !marker_owners().any(|name| name == owner) {
        return None;
    }
    for how in [CREATED, ADOPTED] {
        let said = format!("{how} by kvperf ");
        if rest.starts_with(&said) {
            return Some(Marker::Complete {
                owner: owner.to_string(),
                how,
            });
        }
        if said.starts_with(rest) {
            return Some(Marker::Partial);
        }
    }
    None
}

/// What was written of a file kvperf writes in one piece: the bytes up to
/// the first zero, when only zeros follow (blocks a crash left unwritten
/// read as zeros); None when anything else follows.
fn written_part(bytes: &[u8]) -> Option<&[u8]> {
    let written = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())];
    bytes[written.len()..]
        .iter()
        .all(|&b| b == 0)
        .then_some(written)
}

/// The names a marker's first line may hold: the engines kvperf knows,
/// and in the unit tests their own engine's.
fn marker_owners() -> impl Iterator<Item = &'static str> {
    let unit_tests = cfg!(test).then_some("testdir");
    super::KNOWN_ENGINES
        .iter()
        .map(|(name, _)| *name)
        .chain(unit_tests)
}

fn write_marker(dir: &Path, engine: &str, place: Place) -> anyhow::Result<()> {
    let text = format!(
        "{engine}\n{CREATED} by kvperf {}; kvperf may reuse this directory\n",
        env!("CARGO_PKG_VERSION")
    );
    owned::write_atomically(dir, MARKER, text.as_bytes(), place)
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

    /// Makes something at a path (a link, a directory...).
    type Make<'a> = &'a dyn Fn(&Path);
    use crate::engine::{AsyncOps, Capabilities, KvSupport};

    fn owns_sst(name: &str) -> bool {
        name.ends_with(".sst") || name == "CURRENT" || name == "sub"
    }

    fn inner(name: &str) -> bool {
        name == "inner"
    }

    static SPEC: EngineSpec = EngineSpec {
        name: "testdir",
        about: "",
        feature: "",
        store: StoreKind::Directory {
            owns: owns_sst,
            dirs: Some(crate::engine::EngineDirs {
                at: &["sub"],
                holds: inner,
            }),
        },
        capabilities: Capabilities {
            background_work: false,
            compact: false,
            kv: KvSupport::None,
            adopt: true,
            ordered_scans: true,
            update_needs_existing: true,
            // a test spec.
            whole_record_updates: false,
            async_ops: AsyncOps::Unavailable,
            tasks_own_sockets: false,
            events: crate::engine::EventSupport::Unavailable("a test spec"),
            stats_report: false,
            shared_store: false,
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
        fs::write(db.join(MARKER), "lmdb\ncreated by kvperf 0.1.0\n").unwrap();
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
            err.contains("holds files kvperf did not create (such as 'thesis.tex')"),
            "{err}"
        );
        assert!(tmp.path().join("thesis.tex").exists());
        assert!(!tmp.path().join(MARKER).exists());
        let file = tmp.path().join("thesis.tex");
        let err = prepare(&SPEC, &file, OpenMode::Any)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn an_engines_files_are_no_claim_in_any_mode() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("CURRENT"), "x").unwrap();
        for mode in [OpenMode::Existing, OpenMode::Any, OpenMode::Fresh] {
            let err = prepare(&SPEC, tmp.path(), mode).unwrap_err().to_string();
            assert!(err.contains("kvperf did not create"), "{err}");
            assert!(check_usable(tmp.path()).is_err());
        }
        assert_eq!(
            fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "nothing written"
        );
        // A store an older kvperf adopted (and marked) is not kvperf's either.
        fs::write(
            tmp.path().join(MARKER),
            "testdir\nadopted by kvperf 0.1.0\n",
        )
        .unwrap();
        let err = prepare(&SPEC, tmp.path(), OpenMode::Any)
            .unwrap_err()
            .to_string();
        assert!(err.contains("an older kvperf adopted"), "{err}");
        assert!(check_usable(tmp.path()).is_err());
    }

    #[test]
    fn a_marker_cut_short_is_repaired_where_nothing_else_stands() {
        for partial in [
            "",
            "test",
            "testdir\n",
            "testdir\ncreated by kv",
            "\0\0\0\0",
        ] {
            let tmp = tempfile::tempdir().unwrap();
            fs::write(tmp.path().join(MARKER), partial).unwrap();
            // A crash also leaves kvperf's temporary file.
            fs::write(tmp.path().join(format!("{MARKER}.tmp-12-0")), "te").unwrap();
            check_usable(tmp.path()).unwrap();
            prepare(&SPEC, tmp.path(), OpenMode::Fresh).unwrap();
            assert_eq!(
                read_marker(tmp.path()).unwrap(),
                Marker::Complete {
                    owner: "testdir".into(),
                    how: CREATED
                },
                "{partial:?}"
            );
            assert!(!tmp.path().join(format!("{MARKER}.tmp-12-0")).exists());
            // Beside a user's file it proves nothing.
            let tmp = tempfile::tempdir().unwrap();
            fs::write(tmp.path().join(MARKER), partial).unwrap();
            fs::write(tmp.path().join("CURRENT"), "theirs").unwrap();
            let err = prepare(&SPEC, tmp.path(), OpenMode::Any)
                .unwrap_err()
                .to_string();
            assert!(err.contains("cut short"), "{err}");
            assert_eq!(
                fs::read(tmp.path().join(MARKER)).unwrap(),
                partial.as_bytes()
            );
        }
    }

    #[test]
    fn a_marker_that_is_not_a_marker_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        fs::write(&theirs, "testdir\ncreated by kvperf 0.1.0\n").unwrap();
        let cases: [(&str, Make); 5] = [
            ("is a symbolic link", &|m| {
                std::os::unix::fs::symlink(&theirs, m).unwrap()
            }),
            ("is a directory", &|m| fs::create_dir(m).unwrap()),
            ("has 2 hard links", &|m| fs::hard_link(&theirs, m).unwrap()),
            ("holds something else", &|m| {
                fs::write(m, "my notes\n").unwrap()
            }),
            ("holds something else", &|m| {
                fs::write(m, vec![b'a'; 5000]).unwrap()
            }),
        ];
        for (says, make) in cases {
            let db = tempfile::tempdir().unwrap();
            make(&db.path().join(MARKER));
            let err = prepare(&SPEC, db.path(), OpenMode::Any)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{says}: {err}");
            assert!(check_usable(db.path()).is_err(), "{says}");
        }
        assert_eq!(
            fs::read(&theirs).unwrap(),
            b"testdir\ncreated by kvperf 0.1.0\n"
        );
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
        prepare(&SPEC, &db, OpenMode::Fresh).unwrap();
        assert!(!holds_owned(&db, owns_sst));
        for kept in ["notes.txt", "mine", MARKER, PRECONDITION_FILE] {
            assert!(db.join(kept).exists(), "{kept} was removed");
        }
    }

    #[test]
    fn a_fresh_store_keeps_what_the_engine_does_not_make_at_its_names() {
        // A user's directory at an engine's file name, a user's file in a
        // directory the engine makes, a FIFO: refused, nothing removed.
        let fifo = |p: &Path| {
            let path = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        };
        let cases: [(&str, Make); 3] = [
            ("CURRENT", &|p| {
                fs::create_dir(p.join("CURRENT")).unwrap();
                fs::write(p.join("CURRENT/note"), "x").unwrap();
            }),
            ("sub/note", &|p| {
                fs::create_dir_all(p.join("sub/inner")).unwrap();
                fs::write(p.join("sub/note"), "x").unwrap();
            }),
            ("000002.sst", &|p| fifo(&p.join("000002.sst"))),
        ];
        for (user, make) in cases {
            let tmp = tempfile::tempdir().unwrap();
            let db = tmp.path().join("db");
            prepare(&SPEC, &db, OpenMode::Fresh).unwrap();
            fs::write(db.join("000001.sst"), "x").unwrap();
            make(&db);
            let err = prepare(&SPEC, &db, OpenMode::Fresh).unwrap_err();
            let err = format!("{err:#}");
            assert!(
                err.contains(&format!("{}'", db.join(user).display())),
                "{err}"
            );
            assert!(fs::symlink_metadata(db.join(user)).is_ok(), "{user}");
            assert!(db.join("000001.sst").exists(), "{user}: emptied");
            assert!(!db.join(emptying::TRASH).exists(), "{user}");
        }
        // Links go by name, and a directory the engine makes with only its
        // names in it.
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        prepare(&SPEC, &db, OpenMode::Fresh).unwrap();
        fs::create_dir_all(db.join("sub/inner")).unwrap();
        fs::write(db.join("sub/inner/inner"), "x").unwrap();
        std::os::unix::fs::symlink(tmp.path(), db.join("000003.sst")).unwrap();
        prepare(&SPEC, &db, OpenMode::Fresh).unwrap();
        assert!(!holds_owned(&db, owns_sst));
        assert!(tmp.path().exists());
    }
}
