//! What `kvperf device` may write to, and the checks that keep it from
//! destroying anything by mistake: a raw block device needs
//! `--destroy-data-on DEVICE` spelled out and must not be mounted; in a
//! directory kvperf makes its own test file and removes only that; an
//! existing file is never overwritten.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::files::owned::{has_fill_mark, set_fill_mark, FILL_MARK};

/// Where the I/O goes.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub file: File,
    /// Bytes the corners use.
    pub size: u64,
    /// A raw block device (its data is destroyed).
    pub is_device: bool,
    /// The test file kvperf created, removed when the target is dropped.
    created: Option<PathBuf>,
}

impl Drop for Target {
    /// Removes the test file kvperf made, only while its name still leads
    /// to that file: a file or link put there since (moved over it
    /// mid-run) is not kvperf's and stays.
    fn drop(&mut self) {
        let Some(path) = &self.created else { return };
        let made = self.file.metadata().ok();
        let there = std::fs::symlink_metadata(path).ok();
        let same = match (made, there) {
            (Some(made), Some(there)) => {
                there.file_type().is_file()
                    && crate::files::identity(&made) == crate::files::identity(&there)
            }
            _ => false,
        };
        if same {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The name of kvperf's test file in a directory.
pub const TEST_FILE: &str = "kvperf-device-test.dat";

/// Resolves `given` (a directory, a new file, or a block device) into an
/// open target of `size` bytes (`None`: twice the machine's memory, or the
/// whole device).
pub fn open(
    given: &Path,
    size: Option<u64>,
    destroy_data_on: Option<&Path>,
) -> anyhow::Result<Target> {
    let meta = std::fs::metadata(given).ok();
    if meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_block_device())
    {
        return open_device(given, size, destroy_data_on);
    }
    if let Some(d) = destroy_data_on {
        return Err(InputError::Invalid(format!(
            "--destroy-data-on '{}' is for a block device, and '{}' is not one",
            d.display(),
            given.display()
        ))
        .into());
    }
    let path = match &meta {
        Some(m) if m.is_dir() => given.join(TEST_FILE),
        Some(_) => {
            return Err(InputError::Invalid(format!(
                "'{}' exists; kvperf will not overwrite a file it did not create (give a directory or a new file name)",
                given.display()
            ))
            .into())
        }
        None => given.to_path_buf(),
    };
    if path.exists() {
        return Err(InputError::Invalid(format!(
            "'{}' exists (a test file left by an interrupted run?); remove it or give another directory",
            path.display()
        ))
        .into());
    }
    let size = match size {
        Some(s) => s,
        None => 2 * crate::host::HostInfo::collect(None).memory_bytes,
    };
    check_room(&path, size)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::EINVAL) {
                " (the filesystem does not support direct I/O: tmpfs?)"
            } else {
                ""
            };
            InputError::Invalid(format!("cannot create '{}': {e}{hint}", path.display()))
        })?;
    file.set_len(size)
        .map_err(|e| anyhow::anyhow!("cannot size '{}' to {size} bytes: {e}", path.display()))?;
    Ok(Target {
        path: path.clone(),
        file,
        size,
        is_device: false,
        created: Some(path),
    })
}

/// The precondition fill file in the data directory `dir`: kvperf's own
/// (made, or found from an earlier run) and kept afterwards, since filling
/// the device is its purpose. Owned by no engine, it never counts as a store.
///
/// `dir` must be usable as a data directory (absent, empty, or kvperf's).
/// A new fill is created exclusively and marked with an extended attribute
/// ([`FILL_MARK`]); an existing one is reused only when it carries that
/// mark and is a regular file with one name, opened without following a
/// link: never a link to, or a hard link of, a user's file.
pub fn open_fill(dir: &Path, name: &str, size: u64) -> anyhow::Result<Target> {
    let path = dir.join(name);
    let shown = path.display();
    let existing = std::fs::symlink_metadata(&path).ok();
    check_room(
        &path,
        size.saturating_sub(existing.as_ref().map_or(0, |m| m.len())),
    )?;
    let direct_hint = |e: &std::io::Error| {
        if e.raw_os_error() == Some(libc::EINVAL) {
            " (the filesystem does not support direct I/O: tmpfs?)"
        } else {
            ""
        }
    };
    // A data directory: kvperf writes its fill only into one it made or
    // marked, or an empty one (it wrote into a user's directory). An
    // existing fill is judged first, in its own words.
    let usable = || crate::engine::store::check_usable(dir);
    let file = match existing {
        None => {
            usable()?;
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
                .map_err(|e| {
                    InputError::Invalid(format!("cannot create '{shown}': {e}{}", direct_hint(&e)))
                })?;
            // Where the filesystem keeps no extended attributes, the fill
            // works, but a later run cannot reuse it (and says why).
            let _ = set_fill_mark(&file);
            file
        }
        Some(_) => {
            let file = crate::files::owned::open_own_for_update(&path, libc::O_DIRECT).map_err(
                |e| {
                    InputError::Invalid(format!(
                        "'{shown}' cannot be kvperf's fill: {e}{}; remove it or give another directory",
                        direct_hint(&e)
                    ))
                },
            )?;
            if !has_fill_mark(&file) {
                return Err(InputError::Invalid(format!(
                    "'{shown}' exists and carries no mark that kvperf made it (extended attribute {}); kvperf will not write into it: remove it or give another directory",
                    FILL_MARK.0
                ))
                .into());
            }
            usable()?;
            file
        }
    };
    file.set_len(size)
        .map_err(|e| anyhow::anyhow!("cannot size '{shown}' to {size} bytes: {e}"))?;
    Ok(Target {
        path,
        file,
        size,
        is_device: false,
        created: None,
    })
}

fn check_room(path: &Path, size: u64) -> Result<(), InputError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // SAFETY: statvfs writes only into the struct we pass; the path is NUL-terminated.
    let free = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .ok()
        .and_then(|c| unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            (libc::statvfs(c.as_ptr(), &mut st) == 0).then(|| st.f_bavail * st.f_frsize)
        });
    match free {
        Some(free) if free < size + size / 10 => Err(InputError::Invalid(format!(
            "'{}' has {free} bytes free, and the test file needs {size} (plus 10%); give a smaller --size",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

fn open_device(device: &Path, size: Option<u64>, destroy: Option<&Path>) -> anyhow::Result<Target> {
    let canonical = std::fs::canonicalize(device)?;
    let confirmed = destroy.and_then(|d| std::fs::canonicalize(d).ok());
    if confirmed.as_deref() != Some(canonical.as_path()) {
        return Err(InputError::Invalid(format!(
            "'{}' is a block device: writing to it destroys its data; give --destroy-data-on {} to confirm",
            device.display(),
            canonical.display()
        ))
        .into());
    }
    if let Some(mount) = mounted_on(&canonical) {
        return Err(InputError::Invalid(format!(
            "'{}' (or a partition of it) is mounted on '{mount}'; kvperf does not write to a mounted device",
            canonical.display()
        ))
        .into());
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT | libc::O_EXCL)
        .open(&canonical)
        .map_err(|e| InputError::Invalid(format!("cannot open '{}': {e}", canonical.display())))?;
    let whole = device_size(&canonical)?;
    Ok(Target {
        path: canonical,
        file,
        size: size.map_or(whole, |s| s.min(whole)),
        is_device: true,
        created: None,
    })
}

/// The mount point of `device` or of a partition of it, if any.
fn mounted_on(device: &Path) -> Option<String> {
    let rdev = std::fs::metadata(device).ok()?.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let name = device.file_name()?.to_string_lossy().into_owned();
    // The device and its partitions (/sys/class/block/NAME/NAMEp1...).
    let mut numbers = vec![format!("{major}:{minor}")];
    if let Ok(entries) = std::fs::read_dir(format!("/sys/class/block/{name}")) {
        for e in entries.flatten() {
            if let Ok(dev) = std::fs::read_to_string(e.path().join("dev")) {
                numbers.push(dev.trim().to_string());
            }
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let dev = *fields.get(2)?;
        numbers
            .iter()
            .any(|n| n == dev)
            .then(|| fields.get(4).unwrap_or(&"?").to_string())
    })
}

fn device_size(device: &Path) -> anyhow::Result<u64> {
    let name = device
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sectors: u64 = std::fs::read_to_string(format!("/sys/class/block/{name}/size"))?
        .trim()
        .parse()?;
    Ok(sectors * 512)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes something at a path (a link, a directory...).
    type Make<'a> = &'a dyn Fn(&Path);

    #[test]
    fn a_directory_gets_kvperfs_own_file_removed_afterwards() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let target = open(dir.path(), Some(1 << 20), None).unwrap();
        let path = dir.path().join(TEST_FILE);
        assert!(path.exists() && !target.is_device);
        assert_eq!(target.size, 1 << 20);
        drop(target);
        assert!(!path.exists(), "kvperf removes the file it created");
    }

    #[test]
    fn existing_files_and_devices_without_confirmation_are_refused() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let mine = dir.path().join("thesis.pdf");
        std::fs::write(&mine, "precious").unwrap();
        let err = open(&mine, Some(1 << 20), None).unwrap_err().to_string();
        assert!(err.contains("will not overwrite"), "{err}");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "precious");
        let err = open(dir.path(), Some(1 << 20), Some(&mine))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is for a block device"), "{err}");
        let err = open(dir.path(), Some(u64::MAX / 4), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("give a smaller --size"), "{err}");
    }

    #[test]
    fn a_fill_is_reused_only_when_kvperf_made_it() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let name = crate::engine::store::PRECONDITION_FILE;
        drop(open_fill(dir.path(), name, 1 << 20).unwrap());
        drop(open_fill(dir.path(), name, 2 << 20).unwrap());
        assert_eq!(
            std::fs::metadata(dir.path().join(name)).unwrap().len(),
            2 << 20
        );
        let theirs = dir.path().join("theirs");
        std::fs::write(&theirs, "precious").unwrap();
        let cases: [(&str, Make); 3] = [
            ("symbolic link", &|p| {
                std::os::unix::fs::symlink(&theirs, p).unwrap()
            }),
            ("2 hard links", &|p| std::fs::hard_link(&theirs, p).unwrap()),
            ("carries no mark", &|p| std::fs::write(p, "mine").unwrap()),
        ];
        for (says, make) in cases {
            let path = dir.path().join("other");
            make(&path);
            let err = open_fill(dir.path(), "other", 1 << 20)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{says}: {err}");
            std::fs::remove_file(&path).unwrap();
        }
        assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
    }
}
