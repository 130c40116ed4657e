//! Inputs: every file kvperf reads is opened without blocking (a FIFO's
//! open would wait for a writer forever), checked on the opened
//! descriptor to be a regular file of a real filesystem (not a FIFO, a
//! device, a directory, or a file of /proc or /sys, which say size 0 and
//! may never end: `/proc/self/pagemap`), and read up to a bound sized to
//! what that kind of file holds ([`bound`]); anything else is one line.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::InputError;

/// The most bytes each kind of input may hold: far past what kvperf
/// writes or a user writes by hand, far below what exhausts memory.
pub mod bound {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    /// A plan (TOML): the shipped ones are under 8 KiB.
    pub const PLAN: u64 = 4 * MIB;
    /// A YCSB property (workload) file: YCSB's are under 4 KiB.
    pub const PROPERTY_FILE: u64 = 4 * MIB;
    /// A `fieldlengthhistogram` file: a line per length, lengths up to
    /// 2^20 at about 16 bytes a line.
    pub const HISTOGRAM_FILE: u64 = 16 * MIB;
    /// A results file: a line per step (10-200 KiB, histograms included),
    /// so thousands of steps.
    pub const RESULTS: u64 = 1024 * MIB;
    /// One step's JSON output (a shard's, a step's of a plan): an
    /// hour-long window's timeline and histograms are a few MiB.
    pub const STEP_RESULT: u64 = 256 * MIB;
    /// A data directory's marker: an engine's name and a line.
    pub const MARKER: u64 = 4 * KIB;
    /// The step marker beside a results file: three short lines.
    pub const STEP_MARKER: u64 = 64 * KIB;
    /// The loaded-keys ledger: a line (under 64 bytes) per finished load.
    pub const LEDGER: u64 = 16 * MIB;
    /// A text file a child process or an engine wrote (stderr kept in a
    /// file, an engine's OPTIONS file).
    pub const TEXT: u64 = 16 * MIB;
}

/// `n` bytes in the largest binary unit that divides it ("4 MiB").
fn shown(n: u64) -> String {
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} bytes")
}

/// The kernel's pseudo-filesystems, whose "regular" files are interfaces
/// (sizes of 0, reads that never end or block): statfs(2) magic numbers.
const PSEUDO_FILESYSTEMS: [(i64, &str); 9] = [
    (0x9fa0, "/proc"),
    (0x6265_6572, "/sys"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x0027_e0eb, "a cgroup filesystem"),
    (0x6367_7270, "a cgroup filesystem"),
    (0x7363_6673, "securityfs"),
    (0x6265_6570, "configfs"),
    (0xcafe_4a11, "bpffs"),
];

/// Opens `path` for reading as an input (symbolic links followed): never
/// blocks, and refuses with one line what is not a regular file of a
/// real filesystem. `what` names the input ("workload file", "results
/// file"). The file and its metadata, read from the descriptor.
pub fn open_input(path: &Path, what: &str) -> Result<(File, Metadata), InputError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| cannot_open(path, what, &e))?;
    let meta = opened_input(&file, path, what)?;
    Ok((file, meta))
}

fn cannot_open(path: &Path, what: &str, e: &std::io::Error) -> InputError {
    InputError::Invalid(match e.kind() {
        std::io::ErrorKind::NotFound => format!("{what} '{}' does not exist", path.display()),
        // A socket cannot be opened (ENXIO); say what it is.
        _ => match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => format!(
                "{what} '{}' is {}, not a file",
                path.display(),
                super::kind_of(meta.file_type())
            ),
            _ => format!("cannot read {what} '{}': {e}", path.display()),
        },
    })
}

/// Checks an input already open (without blocking) at `path`: a regular
/// file of a real filesystem, from fstat and fstatfs of its descriptor.
pub fn opened_input(file: &File, path: &Path, what: &str) -> Result<Metadata, InputError> {
    let meta = file.metadata().map_err(|e| {
        InputError::Invalid(format!("cannot read {what} '{}': {e}", path.display()))
    })?;
    if !meta.is_file() {
        return Err(InputError::Invalid(format!(
            "{what} '{}' is {}, not a file",
            path.display(),
            super::kind_of(meta.file_type())
        )));
    }
    use std::os::fd::AsRawFd;
    // SAFETY: statfs is plain data, for which all zeroes is a value.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs fills the zeroed struct for an open descriptor.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } == 0 {
        #[allow(clippy::unnecessary_cast)]
        let magic = fs.f_type as i64;
        if let Some((_, name)) = PSEUDO_FILESYSTEMS.iter().find(|(m, _)| *m == magic) {
            return Err(InputError::Invalid(format!(
                "{what} '{}' is a kernel interface file (on {name}), not a file",
                path.display()
            )));
        }
    }
    Ok(meta)
}

/// Reads all of `file` (opened at `path` and checked by [`open_input`] or
/// [`opened_input`]) from where it stands, up to `most` bytes: more is
/// refused in one line, never read.
pub fn read_opened(
    file: &File,
    meta: &Metadata,
    path: &Path,
    what: &str,
    most: u64,
) -> Result<Vec<u8>, InputError> {
    let too_big = || {
        InputError::Invalid(format!(
            "{what} '{}' is larger than a {what} can be ({}); is it the right file?",
            path.display(),
            shown(most)
        ))
    };
    if meta.len() > most {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(most + 1).read_to_end(&mut bytes).map_err(|e| {
        InputError::Invalid(format!("cannot read {what} '{}': {e}", path.display()))
    })?;
    if bytes.len() as u64 > most {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Refuses `path` unless it is a regular file it may read (see
/// [`open_input`]).
pub fn require_regular(path: &Path, what: &str) -> Result<(), InputError> {
    open_input(path, what).map(|_| ())
}

/// The bytes of the input at `path`, at most `most` (see [`open_input`]
/// and [`bound`]).
pub fn read_input_bytes(path: &Path, what: &str, most: u64) -> Result<Vec<u8>, InputError> {
    let (file, meta) = open_input(path, what)?;
    read_opened(&file, &meta, path, what, most)
}

/// The text of the input at `path`, at most `most` bytes; a file that is
/// not UTF-8 text is refused as such.
pub fn read_input(path: &Path, what: &str, most: u64) -> Result<String, InputError> {
    let bytes = read_input_bytes(path, what, most)?;
    String::from_utf8(bytes).map_err(|e| {
        InputError::Invalid(format!(
            "{what} '{}' is not text (invalid UTF-8 at byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_regular_file_with_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_input(dir.path(), "workload file", bound::PROPERTY_FILE).unwrap_err();
        assert!(
            err.to_string().contains("is a directory, not a file"),
            "{err}"
        );
        let err = read_input(Path::new("/dev/zero"), "results file", bound::RESULTS).unwrap_err();
        assert!(err.to_string().contains("is a character device"), "{err}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_input(&fifo, "plan file", bound::PLAN).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        let missing = read_input(&dir.path().join("none"), "plan file", bound::PLAN).unwrap_err();
        assert!(missing.to_string().contains("does not exist"), "{missing}");
    }

    #[test]
    fn a_symbolic_link_loop_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let err = read_input(&a, "workload file", bound::PROPERTY_FILE)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot read workload file"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn binary_files_are_refused_as_not_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        std::fs::write(&path, [0x66, 0xff, 0xfe]).unwrap();
        let err = read_input(&path, "workload file", bound::PROPERTY_FILE).unwrap_err();
        assert!(err.to_string().contains("not text"), "{err}");
    }

    #[test]
    fn kernel_files_links_to_devices_and_oversized_files_are_refused() {
        let err = read_input(
            Path::new("/proc/self/pagemap"),
            "workload file",
            bound::PROPERTY_FILE,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("kernel interface file (on /proc)"), "{err}");
        let err = read_input(
            Path::new("/sys/kernel/mm/transparent_hugepage/enabled"),
            "plan",
            bound::PLAN,
        );
        if let Err(e) = err {
            assert!(
                e.to_string().contains("/sys") || e.to_string().contains("does not exist"),
                "{e}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("marker");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_input(&link, "marker", bound::MARKER)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a character device, not a file"), "{err}");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 5000]).unwrap();
        let err = read_input(&big, "marker", bound::MARKER)
            .unwrap_err()
            .to_string();
        assert!(err.contains("larger than a marker can be (4 KiB)"), "{err}");
        assert_eq!(read_input(&big, "plan", bound::PLAN).unwrap().len(), 5000);
    }
}
