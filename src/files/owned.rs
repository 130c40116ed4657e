//! The low-level writes of files kvperf owns: every open refuses to follow
//! a symbolic link, a new file is created exclusively, and a file is
//! replaced only by renaming a new one over it, so no write ever lands in
//! something kvperf did not create (a link planted mid-run, a user's file
//! hard-linked in, a FIFO).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Creates `path`, which must not exist (not even as a dangling link), for
/// writing: `O_CREAT | O_EXCL | O_NOFOLLOW`.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Opens for appending a file kvperf made earlier: never through a link
/// (`O_NOFOLLOW`), never a FIFO or device (`O_NONBLOCK`, then checked to
/// be a regular file), never a file with another name (a hard link).
pub fn open_own_for_append(path: &Path) -> std::io::Result<File> {
    not_a_device(path)?;
    let file = OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(no_follow_error)?;
    check_own(&file)?;
    Ok(file)
}

/// Opens for reading and writing, without truncating, a file kvperf made
/// earlier (as [`open_own_for_append`]), with `flags` added (`O_DIRECT`).
pub fn open_own_for_update(path: &Path, flags: i32) -> std::io::Result<File> {
    not_a_device(path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | flags)
        .open(path)
        .map_err(no_follow_error)?;
    check_own(&file)?;
    Ok(file)
}

/// Refuses, before it is opened for writing, what stands at `path` when it
/// is a device, a FIFO, a socket or a directory: opening a device has
/// effects of its own, and its error spoke of something else (a FIFO or
/// a device at a precondition fill's name was "Invalid argument (the
/// filesystem does not support direct I/O: tmpfs?)"). A link is left to
/// `O_NOFOLLOW`; [`check_own`] checks again what was opened.
fn not_a_device(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() && !meta.file_type().is_symlink() => {
            Err(std::io::Error::other(format!(
                "it is {}, not a file kvperf made",
                super::kind_of(meta.file_type())
            )))
        }
        _ => Ok(()),
    }
}

/// An open file that kvperf may write: a regular file with one name.
pub fn check_own(file: &File) -> std::io::Result<()> {
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other(format!(
            "it is {}, not a file kvperf made",
            super::kind_of(meta.file_type())
        )));
    }
    if meta.nlink() > 1 {
        return Err(std::io::Error::other(format!(
            "it has {} hard links (another name is not kvperf's)",
            meta.nlink()
        )));
    }
    Ok(())
}

/// `O_NOFOLLOW` on a link fails with ELOOP: say what it means.
fn no_follow_error(e: std::io::Error) -> std::io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        std::io::Error::other("it is a symbolic link; kvperf writes through no link")
    } else {
        e
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The name of a temporary file for `name` in `dir`: `NAME.tmp-PID-N`,
/// a pattern [`is_temporary_of`] knows.
pub fn temporary_name(dir: &Path, name: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{name}.tmp-{}-{n}", std::process::id()))
}

/// Whether `entry` is a temporary file kvperf names for `name`
/// ([`temporary_name`]): `NAME.tmp-<digits>-<digits>`.
pub fn is_temporary_of(entry: &str, name: &str) -> bool {
    let Some(rest) = entry
        .strip_prefix(name)
        .and_then(|r| r.strip_prefix(".tmp-"))
    else {
        return false;
    };
    let mut parts = rest.split('-');
    let digits =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

/// How [`write_atomically`] puts its new file in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Only where nothing stands (`RENAME_NOREPLACE`).
    New,
    /// In place of what stands there, which the caller has judged kvperf's.
    Replace,
}

/// Writes `bytes` as `dir/name`: a new temporary file (exclusive, no
/// link followed), fsync, rename, fsync of the directory. A crash leaves
/// the old file or the new one, and at most a temporary file of kvperf's
/// own name pattern.
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8], place: Place) -> std::io::Result<()> {
    let tmp = temporary_name(dir, name);
    let target = dir.join(name);
    let result = (|| {
        let mut file = create_new(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        match place {
            Place::New => rename_noreplace(&tmp, &target)?,
            Place::Replace => std::fs::rename(&tmp, &target)?,
        }
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `rename(from, to)` that fails with `AlreadyExists` when anything (a
/// link, a file) stands at `to`; where the filesystem cannot say
/// (`EINVAL`), a hard link and an unlink do the same.
pub fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    match renameat2(from, to, libc::RENAME_NOREPLACE) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        done => done,
    }
}

/// Swaps what `a` and `b` name, atomically (`RENAME_EXCHANGE`); both
/// must exist. A filesystem that cannot do it says `EINVAL`.
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    renameat2(a, b, libc::RENAME_EXCHANGE)
}

/// `renameat2(from, to, flags)`, both paths relative to the working
/// directory.
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c =
        |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (a, b) = (c(from)?, c(to)?);
    // SAFETY: both paths are NUL-terminated and outlive the call.
    let code = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            flags,
        )
    };
    if code == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The extended attribute (name, value) kvperf puts on a precondition
/// fill it creates: the proof that a fill is kvperf's.
pub const FILL_MARK: (&str, &str) = ("user.kvperf", "precondition-fill/1");

/// Marks a fill kvperf just created as its own ([`FILL_MARK`]).
pub fn set_fill_mark(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let name = std::ffi::CString::new(FILL_MARK.0).map_err(std::io::Error::other)?;
    let value = FILL_MARK.1.as_bytes();
    // SAFETY: a NUL-terminated name and a buffer of `value.len()` bytes,
    // both outliving the call, on an open descriptor.
    let code = unsafe {
        libc::fsetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if code == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the open `file` carries kvperf's fill mark ([`FILL_MARK`]).
pub fn has_fill_mark(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(name) = std::ffi::CString::new(FILL_MARK.0) else {
        return false;
    };
    let mut value = [0u8; 64];
    // SAFETY: a NUL-terminated name and a buffer of `value.len()` bytes,
    // both outliving the call, on an open descriptor.
    let read = unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    usize::try_from(read).is_ok_and(|n| &value[..n] == FILL_MARK.1.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_never_follow_links_nor_join_hard_links() {
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        std::fs::write(&theirs, "precious").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        let dangling = tmp.path().join("dangling");
        std::os::unix::fs::symlink(tmp.path().join("nowhere"), &dangling).unwrap();
        assert!(create_new(&link).is_err());
        assert!(create_new(&dangling).is_err());
        assert!(!tmp.path().join("nowhere").exists());
        let err = open_own_for_append(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let hard = tmp.path().join("hard");
        std::fs::hard_link(&theirs, &hard).unwrap();
        let err = open_own_for_append(&hard).unwrap_err().to_string();
        assert!(err.contains("2 hard links"), "{err}");
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for err in [
            open_own_for_append(&fifo).unwrap_err(),
            open_own_for_update(&fifo, libc::O_DIRECT).unwrap_err(),
        ] {
            assert!(err.to_string().contains("is a FIFO"), "{err}");
        }
        std::fs::remove_file(&fifo).unwrap();
        assert!(open_own_for_update(&hard, 0).is_err());
        let err = write_atomically(tmp.path(), "link", b"x", Place::New).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(names.len(), 4);
    }

    #[test]
    fn temporary_names_follow_one_pattern() {
        let t = temporary_name(Path::new("d"), ".kvperf-data");
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(is_temporary_of(name, ".kvperf-data"), "{name}");
        assert!(!is_temporary_of(".kvperf-data.tmp-1", ".kvperf-data"));
        assert!(!is_temporary_of(".kvperf-data.tmp-1-x", ".kvperf-data"));
        assert!(!is_temporary_of(".kvperf-data.tmp-1-2-3", ".kvperf-data"));
        assert!(!is_temporary_of("notes.tmp-1-2", ".kvperf-data"));
    }
}
