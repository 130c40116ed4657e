//! What kvperf may read and write on the filesystem, checked before any
//! measuring starts. kvperf reads only regular files (a FIFO or a device
//! would hang it or never end), and replaces only regular files it wrote
//! itself, recognised by their format: never a device, a FIFO, a
//! directory, a symbolic or hard link, a user's own file, or an input of
//! the same command. A result that cannot be written where asked is kept
//! in a file named in the error, never dropped.

mod destination;
mod distinct;
mod held_dir;
mod input;
pub mod owned;
pub mod signature;
mod unsaved;

pub(crate) use destination::interrupts_held;
pub use destination::{Destination, Stream, Written, RESULT_LINE_TAG_VAR};
pub use distinct::Outputs;
pub use held_dir::HeldDir;
pub use input::{
    bound, open_input, opened_input, read_input, read_input_bytes, read_opened, require_regular,
};
pub use unsaved::keep_unsaved;

use std::fs::{FileType, Metadata};
use std::os::unix::fs::FileTypeExt;

/// What a non-regular file is, in words a user knows ("a directory", "a FIFO").
pub(crate) fn kind_of(file_type: FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "a regular file"
    }
}

/// The identity of a file on its filesystem (device and inode), to tell
/// that two paths name one file.
pub(crate) fn identity(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// The least file size limit (`ulimit -f`, RLIMIT_FSIZE) a command that
/// measures starts under: a step's JSON or a results record is some
/// kilobytes, its interval logs and traces more.
pub const LEAST_FILE_SIZE_LIMIT: u64 = 1 << 20;

/// Refuses, before anything is measured, a file size limit under
/// [`LEAST_FILE_SIZE_LIMIT`]: no result could be kept in a file under it.
/// Above it a file that grows past the limit fails to write (EFBIG: main
/// catches SIGXFSZ, whose default ended the process mid-window) and what
/// it held is kept in a new file or said lost.
pub fn check_file_size_limit() -> Result<(), crate::error::InputError> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) fills the struct this function owns.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } != 0 {
        return Ok(());
    }
    if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= LEAST_FILE_SIZE_LIMIT {
        return Ok(());
    }
    Err(crate::error::InputError::Invalid(format!(
        "the file size limit (ulimit -f) is {} bytes, under the {} MiB kvperf needs to keep what it measures in a file (a result, a results record, a trace); raise it (ulimit -f unlimited) and run again",
        limit.rlim_cur,
        LEAST_FILE_SIZE_LIMIT >> 20
    )))
}
