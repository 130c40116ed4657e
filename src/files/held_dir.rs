//! The directory an output was checked in, held open from the check on:
//! every later look, write, rename and removal happens relative to it
//! (`openat`, `renameat2`, `unlinkat`), so a directory renamed, or swapped
//! for a link to a user's directory, while kvperf measures is written where
//! it was checked, never through what now stands at its name (pass 16: a
//! `run --output od/r.txt` whose `od` was swapped for a link mid-run wrote
//! `r.txt` into the user's directory).

use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An open directory and the path it was opened by (for words only).
#[derive(Debug, Clone)]
pub struct HeldDir {
    fd: Arc<OwnedFd>,
    shown: PathBuf,
}

fn c_name(name: &OsStr) -> std::io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(name.as_bytes()).map_err(std::io::Error::other)
}

fn check(code: libc::c_int) -> std::io::Result<libc::c_int> {
    if code < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(code)
    }
}

impl HeldDir {
    /// Opens `dir` (following links, as the check that names it does):
    /// from here on it is this directory, whatever its name leads to later.
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let path = CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        // SAFETY: a NUL-terminated path that outlives the call.
        let fd = check(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        Ok(Self {
            // SAFETY: a descriptor just opened and owned by nothing else.
            fd: Arc::new(unsafe { OwnedFd::from_raw_fd(fd) }),
            shown: dir.to_path_buf(),
        })
    }

    /// The held directory when it still holds the file of identity `id`
    /// at `path`'s name: the proof that it is the directory of a file
    /// kvperf opened; None when that cannot be proved.
    pub fn holding(path: &Path, id: (u64, u64)) -> Option<Self> {
        let held = Self::open(parent_of(path)).ok()?;
        let meta = held.metadata(path.file_name()?).ok()?;
        (super::identity(&meta) == id).then_some(held)
    }

    /// The path it was opened by.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// Where the held directory is now, for words ("kept in ..."): its
    /// name may have changed since it was checked; as opened when the
    /// kernel cannot say.
    pub fn now(&self) -> PathBuf {
        std::fs::read_link(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
            .ok()
            .filter(|p| p.is_absolute() && p.is_dir())
            .unwrap_or_else(|| self.shown.clone())
    }

    /// `name` in the directory, where it is now.
    pub fn shown_now(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.now().join(name.as_ref())
    }

    fn openat(&self, name: impl AsRef<OsStr>, flags: libc::c_int) -> std::io::Result<File> {
        let name = c_name(name.as_ref())?;
        // SAFETY: a held directory descriptor and a NUL-terminated name.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })?;
        // SAFETY: a descriptor just opened and owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Creates `name`, which must not exist (not even as a link).
    pub fn create_new(&self, name: impl AsRef<OsStr>) -> std::io::Result<File> {
        self.openat(name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL)
    }

    /// Opens `name` to read it, never through a link, never blocking on a
    /// FIFO.
    pub fn open_to_read(&self, name: impl AsRef<OsStr>) -> std::io::Result<File> {
        self.openat(name, libc::O_RDONLY | libc::O_NONBLOCK)
    }

    /// What stands at `name` (a link itself, not what it leads to).
    pub fn metadata(&self, name: impl AsRef<OsStr>) -> std::io::Result<Metadata> {
        self.openat(name, libc::O_PATH)?.metadata()
    }

    /// Removes the file `name`.
    pub fn remove(&self, name: impl AsRef<OsStr>) -> std::io::Result<()> {
        let name = c_name(name.as_ref())?;
        // SAFETY: a held directory descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), 0) }).map(drop)
    }

    /// `renameat2(from, to, flags)`, both names in this directory.
    pub fn rename(
        &self,
        from: impl AsRef<OsStr>,
        to: impl AsRef<OsStr>,
        flags: libc::c_uint,
    ) -> std::io::Result<()> {
        let (a, b) = (c_name(from.as_ref())?, c_name(to.as_ref())?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: a held directory descriptor and NUL-terminated names.
        check(unsafe { libc::renameat2(fd, a.as_ptr(), fd, b.as_ptr(), flags) }).map(drop)
    }

    /// `from` renamed to `to` only where nothing stands at `to`
    /// (`AlreadyExists`); where the filesystem cannot say (`EINVAL`), a
    /// hard link and an unlink do the same.
    pub fn rename_noreplace(
        &self,
        from: impl AsRef<OsStr>,
        to: impl AsRef<OsStr>,
    ) -> std::io::Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        match self.rename(from, to, libc::RENAME_NOREPLACE) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                self.link(from, to)?;
                self.remove(from)
            }
            done => done,
        }
    }

    /// A second name `to` for the file `from` (`linkat`), both here.
    pub fn link(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> std::io::Result<()> {
        let (a, b) = (c_name(from.as_ref())?, c_name(to.as_ref())?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: a held directory descriptor and NUL-terminated names.
        check(unsafe { libc::linkat(fd, a.as_ptr(), fd, b.as_ptr(), 0) }).map(drop)
    }

    /// Flushes the directory's entries to disk.
    pub fn sync(&self) -> std::io::Result<()> {
        // SAFETY: fsync on a held descriptor.
        check(unsafe { libc::fsync(self.fd.as_raw_fd()) }).map(drop)
    }
}

/// The directory `path` is in ("." for a bare file name).
pub(crate) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_is_written_where_it_was_opened_not_through_its_new_name() {
        let tmp = tempfile::tempdir().unwrap();
        let od = tmp.path().join("od");
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir(&od).unwrap();
        std::fs::create_dir(&theirs).unwrap();
        let held = HeldDir::open(&od).unwrap();
        let moved = tmp.path().join("od.moved");
        std::fs::rename(&od, &moved).unwrap();
        std::os::unix::fs::symlink(&theirs, &od).unwrap();
        held.create_new("a").unwrap();
        held.rename("a", "b", 0).unwrap();
        held.sync().unwrap();
        assert!(moved.join("b").is_file());
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
        assert_eq!(held.shown_now("b"), moved.canonicalize().unwrap().join("b"));
        held.remove("b").unwrap();
        assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0);
    }
}
