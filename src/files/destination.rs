//! A file kvperf will write: checked before measuring, written atomically
//! at the end, kept elsewhere (and named) when that fails.

use std::ffi::OsStr;
use std::fs::{File, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::held_dir::{parent_of, HeldDir};
use crate::error::InputError;
use crate::output::slow_reader::{write_all, Std, Wait};

/// A kind of file kvperf writes, and how to tell one it wrote earlier.
#[derive(Debug, Clone, Copy)]
pub struct Written {
    /// In words, for errors: "kvperf JSON result".
    pub what: &'static str,
    /// Whether a file's first bytes (up to [`HEAD`]) are of this kind.
    pub recognizes: fn(&[u8]) -> bool,
    /// Extension of a file that keeps a result that could not be written.
    pub extension: &'static str,
}

/// How much of an existing file is read to recognise it.
pub const HEAD: usize = 4096;

/// A path that kvperf may write `written` to, checked by [`Destination::check`].
#[derive(Debug, Clone)]
pub struct Destination {
    path: PathBuf,
    /// The flag that named it, for errors ("--output").
    flag: String,
    written: Written,
    /// Standard output or error, asked for by name ([`Destination::check_or_stream`]).
    stream: Option<Stream>,
    /// The directory checked, held open: every later write goes there,
    /// wherever its name leads by then. None for a stream.
    dir: Option<HeldDir>,
}

/// The streams a result may be written to instead of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Symbolic links followed at most to find a stream, as the kernel does.
const MAX_LINKS: usize = 40;

impl Destination {
    /// Checks that kvperf may write `path`: a new file in a directory it
    /// can write, an empty regular file, or a regular file that kvperf
    /// wrote (recognised by format) and that no input of this command is.
    /// Anything else is one line naming what stands there.
    pub fn check(
        path: &Path,
        flag: &str,
        written: Written,
        inputs: &[&Path],
    ) -> Result<Self, InputError> {
        let mut destination = Self {
            path: path.to_path_buf(),
            flag: flag.to_string(),
            written,
            stream: None,
            dir: None,
        };
        destination.not_an_input(std::fs::symlink_metadata(path), inputs)?;
        destination.name()?;
        // The directory is opened once, here, and held: what is checked
        // below, and every write after measuring, is in this directory,
        // even when its name is given to another (a link to a user's) later.
        let dir = parent_of(path);
        destination.dir = Some(HeldDir::open(dir).map_err(|e| destination.unwritable(dir, e))?);
        destination.checked_in_dir()
    }

    /// As [`Destination::check`], for the file `name` in `dir`, a
    /// directory already held (a report's).
    pub fn check_in(
        dir: &HeldDir,
        name: &str,
        flag: &str,
        written: Written,
        inputs: &[&Path],
    ) -> Result<Self, InputError> {
        let destination = Self {
            path: dir.shown().join(name),
            flag: flag.to_string(),
            written,
            stream: None,
            dir: Some(dir.clone()),
        };
        destination.not_an_input(dir.metadata(name), inputs)?;
        destination.name()?;
        destination.checked_in_dir()
    }

    /// An input named as the output (`standing` is what stands at its
    /// name) is said as such first: that is what is wrong, whatever else
    /// stands there.
    fn not_an_input(
        &self,
        standing: std::io::Result<std::fs::Metadata>,
        inputs: &[&Path],
    ) -> Result<(), InputError> {
        let Ok(standing) = standing.map(|m| super::identity(&m)) else {
            return Ok(());
        };
        for input in inputs {
            if std::fs::metadata(input).is_ok_and(|m| super::identity(&m) == standing) {
                return Err(self.refuse(&format!(
                    "is also an input of this command ('{}'); writing it would destroy that input: give another path",
                    input.display()
                )));
            }
        }
        Ok(())
    }

    /// The checks of [`Destination::check`] in the directory it holds.
    fn checked_in_dir(self) -> Result<Self, InputError> {
        self.replaceable()?;
        // Creating the atomic write's temporary file is the only honest test
        // that the directory takes it; done once, here, not at every write.
        // Named as it will be (`.NAME.kvperf-PID-N`): a name the filesystem
        // takes only without kvperf's suffix is found now, not after measuring.
        let dir = parent_of(&self.path);
        let probed = self
            .held()
            .and_then(|held| probe_writable(held, &self.base()));
        if let Err(e) = probed {
            return Err(self.unwritable(dir, e));
        }
        Ok(self)
    }

    /// As [`Destination::check`], but `-`, `/dev/stdout`, `/dev/stderr`
    /// (and `/dev/fd/1`, `/proc/self/fd/2`...) and symbolic links that lead
    /// to them name the stream itself: the explicit exceptions to "never a
    /// device, never a link". A link to anything else is still refused.
    pub fn check_or_stream(
        path: &Path,
        flag: &str,
        written: Written,
        inputs: &[&Path],
    ) -> Result<Self, InputError> {
        match stream_named(path) {
            Some(stream) => Ok(Self {
                path: path.to_path_buf(),
                flag: flag.to_string(),
                written,
                stream: Some(stream),
                dir: None,
            }),
            None => Self::check(path, flag, written, inputs),
        }
    }

    /// Standard output, where a result without `--output` goes.
    pub fn stdout(written: Written) -> Self {
        Self {
            path: PathBuf::from("-"),
            flag: "--output".into(),
            written,
            stream: Some(Stream::Stdout),
            dir: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory checked and held (none for a stream).
    pub fn dir(&self) -> Option<&HeldDir> {
        self.dir.as_ref()
    }

    /// The stream this destination writes to, if it is not a file.
    pub fn stream(&self) -> Option<Stream> {
        self.stream
    }

    /// Writes `bytes` in place of the file, atomically (a crash leaves the
    /// old file or the new one), keeping a replaced file's mode. The path
    /// is checked again first: something else may stand there by now.
    /// When it fails, the bytes are kept in a new file named in the error.
    pub fn write(&self, bytes: &[u8]) -> anyhow::Result<()> {
        if let Some(stream) = self.stream {
            return write_stream(stream, bytes).map_err(|e| {
                let shown = format!("cannot write {} '{}': {e}", self.flag, self.path.display());
                match super::keep_unsaved(bytes, None, self.written.extension) {
                    Ok(kept) => {
                        anyhow::anyhow!("{shown}; the result is kept in '{}'", kept.display())
                    }
                    Err(lost) => {
                        anyhow::anyhow!("{shown}; it could not be kept elsewhere either ({lost})")
                    }
                }
            });
        }
        self.replace(bytes).map_err(|e| {
            let shown = format!(
                "cannot write {} '{}': {e:#}",
                self.flag,
                self.path.display()
            );
            match super::keep_unsaved(bytes, self.dir.as_ref(), self.written.extension) {
                Ok(kept) => anyhow::anyhow!("{shown}; the result is kept in '{}'", kept.display()),
                Err(lost) => {
                    anyhow::anyhow!("{shown}; it could not be kept elsewhere either ({lost})")
                }
            }
        })
    }

    /// A new file beside the destination, for an output written as it
    /// grows (a trace) and then put in place with
    /// [`Destination::put_in_place`]: created exclusively, through no link.
    pub fn temporary(&self) -> std::io::Result<(PathBuf, File)> {
        let dir = self.held()?;
        let tmp = private_name(&self.base());
        let file = dir.create_new(&tmp)?;
        Ok((dir.shown().join(tmp), file))
    }

    /// Removes a temporary from [`Destination::temporary`] not put in place.
    pub fn remove_temporary(&self, tmp: &Path) -> std::io::Result<()> {
        self.held()?.remove(tmp.file_name().unwrap_or_default())
    }

    /// Renames `tmp` (from [`Destination::temporary`], written and synced)
    /// over the path, which is checked again first, keeping a replaced
    /// file's mode; then syncs the directory. When it fails, `tmp` stays
    /// and the error names it.
    pub fn put_in_place(&self, tmp: &Path) -> anyhow::Result<()> {
        let dir = self.held()?;
        // Named where the directory is now: its old name may lead elsewhere.
        self.place_temporary(tmp).map_err(|e| {
            anyhow::anyhow!(
                "cannot write {} '{}': {e:#}; it is kept in '{}'",
                self.flag,
                self.path.display(),
                dir.shown_now(tmp.file_name().unwrap_or_default()).display()
            )
        })
    }

    /// [`Destination::put_in_place`], its error not naming `tmp`: for a
    /// caller that removes it (an empty file is nothing to keep).
    pub fn place_temporary(&self, tmp: &Path) -> anyhow::Result<()> {
        let dir = self.held()?;
        let tmp = tmp.file_name().unwrap_or_default();
        let standing = self.replaceable()?;
        if let Some(standing) = &standing {
            dir.open_to_read(tmp)?
                .set_permissions(standing.mode.clone())?;
        }
        place(dir, tmp, self.name()?, standing.as_ref())?;
        dir.sync()?;
        Ok(())
    }

    fn refuse(&self, why: &str) -> InputError {
        InputError::Invalid(format!("{} '{}' {why}", self.flag, self.path.display()))
    }

    /// Temporary file, fsync; then the path is checked again and the new
    /// file put in place of what that check found only ([`place`]), and
    /// the directory synced. Checked after the bytes are written, not
    /// before: a file put at the path meanwhile is found and left alone.
    fn replace(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let dir = self.held()?;
        let tmp = private_name(&self.base());
        // Made with the mode of the file it will replace, if any, so a
        // private result is never readable by others meanwhile.
        let mode = self.replaceable()?.map(|s| s.mode);
        // SIGINT, SIGTERM and SIGHUP wait until the file is in place (or
        // its temporary gone): none leaves a temporary behind.
        interrupts_held(|| {
            let mut file = dir.create_new(&tmp)?;
            let ours = super::identity(&file.metadata()?);
            let result = (|| {
                if let Some(mode) = mode {
                    file.set_permissions(mode)?;
                }
                file.write_all(bytes)?;
                file.sync_all()?;
                let standing = self.replaceable()?;
                if let Some(standing) = &standing {
                    file.set_permissions(standing.mode.clone())?;
                }
                place(dir, tmp.as_ref(), self.name()?, standing.as_ref())?;
                dir.sync()?;
                anyhow::Ok(())
            })();
            // The temporary goes only while it is still the file made here.
            let still_ours = dir
                .metadata(&tmp)
                .is_ok_and(|m| super::identity(&m) == ours);
            if result.is_err() && still_ours {
                let _ = dir.remove(&tmp);
            }
            result
        })
    }

    /// Whether what stands at the path may be replaced now: the file it
    /// would replace (None for a new file), or why not.
    fn replaceable(&self) -> Result<Option<Standing>, InputError> {
        let name = self.name()?;
        let dir = self.held().map_err(|e| self.refuse(&e.to_string()))?;
        match dir.metadata(name) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.refuse(&format!("cannot be checked: {e}"))),
            Ok(meta) if !meta.file_type().is_file() => {
                return Err(self.refuse(&format!(
                    "is {}; kvperf writes only regular files: give a file path",
                    super::kind_of(meta.file_type())
                )))
            }
            Ok(_) => {}
        }
        // The file is opened (never through a link, never blocking on a
        // FIFO put there since), checked through that descriptor, and held
        // open until the new file is in place: an inode number cannot go to
        // another file while it is open, and ext4 gives a freed number to
        // the next file made at once (a user's file made at the path after
        // kvperf's was removed was taken for it by its number, and deleted).
        let file = dir
            .open_to_read(name)
            .map_err(|e| self.refuse(&format!("cannot be read to check what it is: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| self.refuse(&format!("cannot be checked: {e}")))?;
        if !meta.file_type().is_file() {
            return Err(self.refuse(&format!(
                "is {}; kvperf writes only regular files: give a file path",
                super::kind_of(meta.file_type())
            )));
        }
        if meta.nlink() > 1 {
            return Err(self.refuse(&format!(
                "has {} hard links; replacing it would detach them: give another path",
                meta.nlink()
            )));
        }
        if meta.len() > 0 && !self.recognized(&file)? {
            return Err(self.refuse(&format!(
                "exists and is not a {} (kvperf replaces only files it wrote): move it or give another path",
                self.written.what
            )));
        }
        Ok(Some(Standing {
            mode: meta.permissions(),
            id: super::identity(&meta),
            _held: file,
        }))
    }

    /// The file's name in its directory; refused when the path names none.
    fn name(&self) -> Result<&OsStr, InputError> {
        // Path drops a trailing '/' (and '/.'): a new 'NAME/' passed every
        // check, then failed at the rename, after measuring.
        let raw = self.path.as_os_str().as_encoded_bytes();
        match self.path.file_name() {
            None => Err(self.refuse("names no file")),
            Some(_) if raw.ends_with(b"/") || raw.ends_with(b"/.") => {
                Err(self.refuse("ends in '/', naming a directory: give a file path"))
            }
            Some(name) => Ok(name),
        }
    }

    /// The start of the names of temporaries beside the file.
    fn base(&self) -> String {
        self.path
            .file_name()
            .map_or("out".into(), |n| n.to_string_lossy().into_owned())
    }

    /// Why a file cannot be made in `dir`, in one line.
    fn unwritable(&self, dir: &Path, e: std::io::Error) -> InputError {
        match e.kind() {
            std::io::ErrorKind::NotFound => {
                self.refuse(&format!("is in '{}', which does not exist", dir.display()))
            }
            _ if e.raw_os_error() == Some(libc::ENAMETOOLONG) => self.refuse(&format!(
                "has too long a name for the temporary kvperf writes beside it first ('.NAME.kvperf-PID-N'): the filesystem refuses it ({e}); give a shorter name"
            )),
            _ if e.raw_os_error() == Some(libc::ENOTDIR) => self.refuse(&format!(
                "cannot be written in '{}': not a directory",
                dir.display()
            )),
            _ => self.refuse(&format!("cannot be written in '{}': {e}", dir.display())),
        }
    }

    /// The directory checked (none for a stream).
    fn held(&self) -> std::io::Result<&HeldDir> {
        self.dir
            .as_ref()
            .ok_or_else(|| std::io::Error::other("a stream has no directory"))
    }

    fn recognized(&self, file: &File) -> Result<bool, InputError> {
        let mut head = Vec::with_capacity(HEAD);
        file.take(HEAD as u64)
            .read_to_end(&mut head)
            .map_err(|e| self.refuse(&format!("cannot be read to check what it is: {e}")))?;
        Ok((self.written.recognizes)(&head))
    }
}

/// The stream `path` names: `-`, a name of fd 1 or 2, or a chain of
/// symbolic links that reaches one.
pub(super) fn stream_named(path: &Path) -> Option<Stream> {
    let named = |p: &Path| match p.to_str()? {
        "-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1" => Some(Stream::Stdout),
        "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2" => Some(Stream::Stderr),
        _ => None,
    };
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if let Some(stream) = named(&at) {
            return Some(stream);
        }
        let target = std::fs::read_link(&at).ok()?;
        at = parent_of(&at).join(target);
    }
    None
}

/// Set (by the kubernetes launcher, in a pod) to a tag that starts every
/// line of a result printed on stdout: a pod's log mixes stdout with
/// stderr line by line, so a warning could land inside the JSON; the
/// launcher reads back only the tagged lines.
pub const RESULT_LINE_TAG_VAR: &str = "KVPERF_RESULT_LINE_TAG";

/// `bytes` with `tag` before each line.
fn tagged(tag: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 16);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(tag.as_bytes());
        out.extend_from_slice(line);
    }
    out
}

/// Writes `bytes` to `stream`, with SIGPIPE ignored meanwhile (a gone
/// reader is an error that keeps the result, not a silent end).
fn write_stream(stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
    let tag = std::env::var(RESULT_LINE_TAG_VAR)
        .ok()
        .filter(|t| !t.is_empty());
    let tagged_bytes;
    let bytes = match (&stream, tag) {
        (Stream::Stdout, Some(tag)) => {
            tagged_bytes = tagged(&tag, bytes);
            &tagged_bytes[..]
        }
        _ => bytes,
    };
    // SAFETY: changing a signal's disposition; no handler runs Rust code.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // A reader that takes nothing is waited for until an interrupt.
    let written = match stream {
        Stream::Stdout => {
            let mut out = std::io::stdout().lock();
            out.flush()
                .and_then(|()| write_all(Std::Out, bytes, Wait::UntilInterrupted))
        }
        Stream::Stderr => {
            let _err = std::io::stderr().lock();
            write_all(Std::Err, bytes, Wait::UntilInterrupted)
        }
    };
    // SAFETY: restores the disposition read above.
    unsafe { libc::signal(libc::SIGPIPE, previous) };
    written
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The most of a file's name a temporary beside it repeats: a name of up
/// to 255 bytes (the most a name can be) still gets a temporary (a 250-byte
/// `--output` was measured, then refused at its write: "File name too long").
const TEMPORARY_BASE: usize = 200;

/// The start of `base` (at most [`TEMPORARY_BASE`] bytes, whole characters)
/// that names of kvperf's temporaries beside it repeat.
fn temporary_base(base: &str) -> &str {
    let mut end = base.len().min(TEMPORARY_BASE);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    &base[..end]
}

/// A name for a new file beside `base` that no other kvperf process uses.
fn private_name(base: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        ".{}.kvperf-{}-{n}",
        temporary_base(base),
        std::process::id()
    )
}

/// Creates and removes a new file in `dir`, named as long as the temporary
/// of `base`'s atomic write: the only honest test that kvperf can create
/// that file there (as root, permission bits say nothing; a read-only
/// mount says it only here, a name too long with kvperf's suffix too).
fn probe_writable(dir: &HeldDir, base: &str) -> std::io::Result<()> {
    // As long as the temporary's name, and not to be taken for one.
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let probe = format!(
        ".{}.kvprobe-{}-{n}",
        temporary_base(base),
        std::process::id()
    );
    interrupts_held(|| {
        dir.create_new(&probe)?;
        dir.remove(&probe)
    })
}

/// Runs `f` with SIGINT, SIGTERM and SIGHUP held on this thread: one that
/// comes meanwhile is taken when `f` is done, by the command's handler or
/// by its default, which then ends the process with the file in place and
/// no temporary beside it (a `merge --output` or `fit --output` ended by
/// SIGTERM inside its write left its hidden `.NAME.kvperf-PID-N`, 6 times
/// of 6 when the signal came as the temporary appeared).
pub(crate) fn interrupts_held<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t values this function owns, filled by sigemptyset and
    // sigaddset; pthread_sigmask changes only this thread's mask and the
    // second call restores what the first read.
    unsafe {
        let mut held: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut held);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut held, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &held, &mut previous);
        let result = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
        result
    }
}

/// The file a destination's check found it may replace: kvperf's own.
struct Standing {
    /// Its mode, which the new file keeps.
    mode: Permissions,
    /// Its device and inode: the new file goes in place of this file only.
    id: (u64, u64),
    /// The file, open until the new one is in place, so that no other file
    /// can have its inode number meanwhile.
    _held: File,
}

/// Puts `tmp` at `path` in place of what the check just made found
/// there, and of nothing else: where nothing stood, only where nothing
/// stands yet (`RENAME_NOREPLACE`: a user's file made since is never
/// replaced); in place of kvperf's file checked, by exchanging the two
/// (`RENAME_EXCHANGE`) and exchanging them back unless what came out is
/// that file. A filesystem that cannot exchange gets a plain rename.
fn place(
    dir: &HeldDir,
    tmp: &OsStr,
    path: &OsStr,
    standing: Option<&Standing>,
) -> std::io::Result<()> {
    use std::io::ErrorKind;
    let changed = || {
        std::io::Error::new(
            ErrorKind::AlreadyExists,
            "something was put there since kvperf checked it, and is left as it is",
        )
    };
    let only_where_nothing_stands = || {
        dir.rename_noreplace(tmp, path).map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => changed(),
            _ => e,
        })
    };
    let Some(standing) = standing else {
        return only_where_nothing_stands();
    };
    match dir.rename(tmp, path, libc::RENAME_EXCHANGE) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return dir.rename(tmp, path, 0),
        // The file checked is gone since: nothing of anyone's to replace.
        Err(e) if e.kind() == ErrorKind::NotFound => return only_where_nothing_stands(),
        Err(e) => return Err(e),
    }
    // `tmp` now names what stood at `path`.
    if dir
        .metadata(tmp)
        .is_ok_and(|m| super::identity(&m) == standing.id)
    {
        let _ = dir.remove(tmp);
        return Ok(());
    }
    dir.rename(tmp, path, libc::RENAME_EXCHANGE)?;
    Err(changed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const MINE: Written = Written {
        what: "kvperf test file",
        recognizes: |head| head.starts_with(b"MINE"),
        extension: "txt",
    };

    fn check(path: &Path) -> Result<Destination, InputError> {
        Destination::check(path, "--output", MINE, &[])
    }

    #[test]
    fn writes_a_new_file_and_replaces_its_own_keeping_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        check(&path).unwrap().write(b"MINE 1").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
        check(&path).unwrap().write(b"MINE 2").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"MINE 2");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn an_empty_file_may_be_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty");
        std::fs::write(&path, "").unwrap();
        check(&path).unwrap().write(b"MINE").unwrap();
    }

    #[test]
    fn refuses_what_kvperf_did_not_write_and_leaves_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "my notes").unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&notes, &link).unwrap();
        let mine = dir.path().join("mine");
        std::fs::write(&mine, "MINE").unwrap();
        let hard = dir.path().join("hard");
        std::fs::hard_link(&mine, &hard).unwrap();
        let cases: [(&Path, &str); 6] = [
            (&notes, "is not a kvperf test file"),
            (&sub, "is a directory"),
            (&link, "is a symbolic link"),
            (&hard, "has 2 hard links"),
            (Path::new("/dev/null"), "is a character device"),
            (&dir.path().join("missing/out"), "does not exist"),
        ];
        for (path, says) in cases {
            let err = check(path).unwrap_err().to_string();
            assert!(err.contains(says), "{}: {err}", path.display());
            assert!(err.starts_with("--output '"), "{err}");
        }
        assert_eq!(std::fs::read(&notes).unwrap(), b"my notes");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_new_name_ending_in_a_slash_is_refused_before_anything_is_made() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["new/", "new/."] {
            let err = check(&dir.path().join(name)).unwrap_err().to_string();
            assert!(err.contains("ends in '/'"), "{name}: {err}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn standard_streams_and_links_to_them_are_streams_other_links_are_not() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("out");
        std::os::unix::fs::symlink("/dev/stdout", &link).unwrap();
        let hop = tmp.path().join("hop");
        std::os::unix::fs::symlink("out", &hop).unwrap();
        let err_link = tmp.path().join("err");
        std::os::unix::fs::symlink("/proc/self/fd/2", &err_link).unwrap();
        let stream = |p: &Path| {
            Destination::check_or_stream(p, "--output", MINE, &[])
                .unwrap()
                .stream()
        };
        assert_eq!(stream(Path::new("-")), Some(Stream::Stdout));
        assert_eq!(stream(Path::new("/dev/stdout")), Some(Stream::Stdout));
        assert_eq!(
            tagged("t ", b"{\n  \"a\": 1\n}\n"),
            b"t {\nt   \"a\": 1\nt }\n"
        );
        assert_eq!(tagged("t ", b"{}"), b"t {}");
        assert_eq!(stream(Path::new("/dev/stderr")), Some(Stream::Stderr));
        assert_eq!(stream(&link), Some(Stream::Stdout));
        assert_eq!(stream(&hop), Some(Stream::Stdout), "a chain of links");
        assert_eq!(stream(&err_link), Some(Stream::Stderr));
        assert_eq!(stream(&tmp.path().join("new.txt")), None);
        // A link to a file is refused, as before: a result replaces files, not links.
        let notes = tmp.path().join("notes");
        std::fs::write(&notes, "MINE").unwrap();
        let to_file = tmp.path().join("to-file");
        std::os::unix::fs::symlink(&notes, &to_file).unwrap();
        let err = Destination::check_or_stream(&to_file, "--output", MINE, &[]).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        // `check` itself never writes to a stream.
        assert!(Destination::check(Path::new("/dev/stdout"), "--x", MINE, &[]).is_err());
    }

    #[test]
    fn a_file_put_at_the_path_after_the_last_check_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let tmp = dir.path().join(".out.txt.new");
        // Nothing stood at the check; a user's file stands now.
        std::fs::write(&tmp, "MINE new").unwrap();
        std::fs::write(&path, "theirs").unwrap();
        let held = HeldDir::open(dir.path()).unwrap();
        let place = |standing| {
            place(
                &held,
                OsStr::new(".out.txt.new"),
                OsStr::new("out.txt"),
                standing,
            )
        };
        let err = place(None).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        assert_eq!(std::fs::read(&tmp).unwrap(), b"MINE new");
        // kvperf's own file stood at the check; a user's was moved over it.
        std::fs::write(&path, "MINE old").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let checked = Standing {
            mode: meta.permissions(),
            id: crate::files::identity(&meta),
            _held: File::open(&path).unwrap(),
        };
        let theirs = dir.path().join("theirs");
        std::fs::write(&theirs, "theirs").unwrap();
        std::fs::rename(&theirs, &path).unwrap();
        let err = place(Some(&checked)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        assert_eq!(std::fs::read(&tmp).unwrap(), b"MINE new");
        // Still kvperf's file: replaced, and no other name of it left.
        std::fs::write(&theirs, "MINE old").unwrap();
        std::fs::rename(&theirs, &path).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let checked = Standing {
            mode: meta.permissions(),
            id: crate::files::identity(&meta),
            _held: File::open(&path).unwrap(),
        };
        place(Some(&checked)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"MINE new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_file_made_where_kvperfs_was_removed_is_never_taken_for_it() {
        // ext4 gives a freed inode number to the next file made: a user's
        // file made at the path after kvperf's checked file was removed got
        // its number, was taken for kvperf's by it, and was deleted (pass
        // 11). The checked file is held open until the exchange, so no file
        // made meanwhile can have its number.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        std::fs::write(&path, "MINE old").unwrap();
        let standing = check(&path).unwrap().replaceable().unwrap().unwrap();
        for round in 0..20 {
            std::fs::remove_file(&path).unwrap();
            std::fs::write(&path, format!("theirs {round}")).unwrap();
            let made = crate::files::identity(&std::fs::metadata(&path).unwrap());
            assert_ne!(made, standing.id, "round {round}");
        }
        let tmp = dir.path().join(".out.txt.new");
        std::fs::write(&tmp, "MINE new").unwrap();
        let held = HeldDir::open(dir.path()).unwrap();
        let err = place(
            &held,
            OsStr::new(".out.txt.new"),
            OsStr::new("out.txt"),
            Some(&standing),
        )
        .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs 19");
    }

    #[test]
    fn refuses_an_input_of_the_same_command() {
        let dir = tempfile::tempdir().unwrap();
        let shard = dir.path().join("shard-0.json");
        std::fs::write(&shard, "MINE shard").unwrap();
        let err = Destination::check(&shard, "--output", MINE, &[&shard]).unwrap_err();
        assert!(err.to_string().contains("is also an input"), "{err}");
    }

    #[test]
    fn a_write_that_fails_keeps_the_result_and_names_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let destination = check(&path).unwrap();
        // A user's file appears at the path while kvperf measures.
        std::fs::write(&path, "theirs").unwrap();
        let err = destination.write(b"MINE measured").unwrap_err().to_string();
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        let kept = err
            .split("kept in '")
            .nth(1)
            .unwrap()
            .trim_end_matches('\'');
        assert_eq!(std::fs::read(kept).unwrap(), b"MINE measured", "{err}");
    }
}
