//! kvperf's advisory lock on a data directory (`--db`), taken before
//! anything in it is written and held while the engine is open: shared
//! by the commands that use a store (run, a load without `--fresh`,
//! settle, `bench --use_existing_db`), exclusive for one that empties it
//! (`--fresh`, a db_bench fill) or claims it. A conflict is one line
//! naming the holder, and nothing in the directory is touched: not the
//! ledger, not the marker, not the engine's files.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::InputError;
use crate::files::owned;

/// The lock file's name in a data directory.
pub const LOCK_FILE: &str = ".kvperf-lock";

/// What kvperf's lock file holds.
pub(super) fn content() -> String {
    format!("{}\n", crate::files::signature::token("store-lock"))
}

/// A lock held on a data directory, released when dropped.
#[derive(Debug)]
pub struct StoreLock {
    file: File,
}

/// Whether `dir` holds kvperf's lock file (a regular file with one name
/// and exactly its content): kvperf's own, never a user's.
pub fn is_own(dir: &Path) -> bool {
    open_own(dir).is_ok_and(|f| f.is_some())
}

/// Takes the lock on `dir`, `exclusive` or shared, without waiting.
pub fn acquire(dir: &Path, exclusive: bool) -> anyhow::Result<StoreLock> {
    let file = match open_own(dir)? {
        Some(file) => file,
        None => {
            match owned::write_atomically(dir, LOCK_FILE, content().as_bytes(), owned::Place::New) {
                Ok(()) => {}
                // Another kvperf made it meanwhile: the same file.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(anyhow::anyhow!(
                        "cannot write '{}': {e}",
                        dir.join(LOCK_FILE).display()
                    ))
                }
            }
            open_own(dir)?.ok_or_else(|| anyhow::anyhow!("'{LOCK_FILE}' vanished"))?
        }
    };
    let lock = StoreLock { file };
    lock.take(dir, exclusive)?;
    Ok(lock)
}

impl StoreLock {
    /// Keeps the lock shared only (after claiming or emptying a store
    /// that is then only used).
    pub fn share(&self, dir: &Path) -> anyhow::Result<()> {
        self.take(dir, false)
    }

    fn take(&self, dir: &Path, exclusive: bool) -> anyhow::Result<()> {
        let taken = if exclusive {
            self.file.try_lock()
        } else {
            self.file.try_lock_shared()
        };
        match taken {
            Ok(()) => Ok(()),
            Err(fs::TryLockError::WouldBlock) => Err(in_use(dir, &self.file).into()),
            Err(fs::TryLockError::Error(e)) => Err(anyhow::anyhow!(
                "cannot lock '{}': {e}",
                dir.join(LOCK_FILE).display()
            )),
        }
    }
}

/// Opens `dir`'s lock file, None when there is none. Refused: a link, a
/// FIFO, a file with another name or other content (a user's).
fn open_own(dir: &Path) -> anyhow::Result<Option<File>> {
    let path = dir.join(LOCK_FILE);
    let refuse = |what: String| -> anyhow::Error {
        InputError::Invalid(format!(
            "--db '{}' has a '{LOCK_FILE}' that {what}, not kvperf's lock file; kvperf will not use this directory",
            dir.display()
        ))
        .into()
    };
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("is a symbolic link".into()))
        }
        Err(e) => return Err(refuse(format!("cannot be opened ({e})"))),
    };
    owned::check_own(&file).map_err(|e| refuse(format!("cannot be kvperf's ({e})")))?;
    let mut bytes = Vec::new();
    (&file)
        .take(256)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot be read ({e})")))?;
    if bytes != content().as_bytes() {
        return Err(refuse("holds something else".into()));
    }
    Ok(Some(file))
}

/// A plan's hold on a store for the whole plan, released when dropped: an
/// exclusive lock on the directory itself, not on the lock file that each
/// of its steps takes, so that a second plan cannot empty or load the
/// store between the first one's steps (each step's lock alone allowed it).
#[derive(Debug)]
pub struct PlanHold {
    _dir: File,
}

/// How a plan's hold on a store went.
pub enum Held {
    Held(PlanHold),
    /// The filesystem takes no lock on a directory (`flock` failed): the
    /// plan goes on without one, and says so.
    Unavailable(String),
}

/// Holds `dir` (made now when absent: an empty directory is kvperf's to
/// use) for a plan; another plan holding it is one line naming it.
pub fn hold_for_plan(dir: &Path) -> Result<Held, InputError> {
    let refuse = |why: String| InputError::Invalid(format!("--db '{}' {why}", dir.display()));
    if fs::symlink_metadata(dir).is_err() {
        fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot be created: {e}")))?;
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| refuse(format!("cannot be opened: {e}")))?;
    match file.try_lock() {
        Ok(()) => Ok(Held::Held(PlanHold { _dir: file })),
        Err(fs::TryLockError::WouldBlock) => {
            let pids = file.metadata().map(|m| holders(&m)).unwrap_or_default();
            let named: Vec<String> = pids
                .iter()
                .map(|pid| format!("pid {pid}"))
                .collect();
            let who = if named.is_empty() {
                String::new()
            } else {
                format!(" ({})", named.join(", "))
            };
            Err(refuse(format!(
                "is the store of another kvperf plan running now{who}; two plans on one store would empty and load it between each other's steps: wait for it to end or give this plan another --db"
            )))
        }
        Err(fs::TryLockError::Error(e)) => Ok(Held::Unavailable(format!(
            "--db '{}' cannot be held for the whole plan ({e}): another plan on it would not be stopped",
            dir.display()
        ))),
    }
}

/// The refusal of a directory another process holds locked, naming it.
fn in_use(dir: &Path, file: &File) -> InputError {
    let holders = file.metadata().map(|m| holders(&m)).unwrap_or_default();
    let who = if holders.is_empty() {
        "another kvperf".to_string()
    } else {
        let named: Vec<String> = holders
            .iter()
            .map(|pid| match command_of(*pid) {
                Some(command) => format!("pid {pid}: {command}"),
                None => format!("pid {pid}"),
            })
            .collect();
        format!("another kvperf ({})", named.join("; "))
    };
    InputError::Invalid(format!(
        "--db '{}' is in use by {who}; nothing in it was touched: wait for it to end or use another directory",
        dir.display()
    ))
}

/// The processes holding a lock on the file of `meta`, from /proc/locks
/// (`N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE ...`, device in hex).
fn holders(meta: &fs::Metadata) -> Vec<u32> {
    let mut text = String::new();
    let read = File::open("/proc/locks").and_then(|f| f.take(1 << 20).read_to_string(&mut text));
    if read.is_err() {
        return Vec::new();
    }
    let dev = meta.dev();
    let wanted = (libc::major(dev) as u64, libc::minor(dev) as u64, meta.ino());
    let me = std::process::id();
    let mut pids: Vec<u32> = text
        .lines()
        .filter(|l| !l.contains("->"))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let pid: u32 = fields.get(4)?.parse().ok()?;
            let mut id = fields.get(5)?.split(':');
            let major = u64::from_str_radix(id.next()?, 16).ok()?;
            let minor = u64::from_str_radix(id.next()?, 16).ok()?;
            let inode: u64 = id.next()?.parse().ok()?;
            ((major, minor, inode) == wanted && pid != me && pid != 0).then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// `kvperf run` for a holder: its program's name and subcommand only
/// (never its other arguments, which may hold a password).
fn command_of(pid: u32) -> Option<String> {
    let mut bytes = Vec::new();
    File::open(format!("/proc/{pid}/cmdline"))
        .and_then(|f| f.take(4096).read_to_end(&mut bytes))
        .ok()?;
    let mut args = bytes.split(|&b| b == 0).map(String::from_utf8_lossy);
    let program = args.next()?;
    let program = program.rsplit('/').next().unwrap_or_default().to_string();
    let command = args
        .next()
        .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
    Some(match command {
        Some(command) => format!("{program} {command}"),
        None => program,
    })
}
