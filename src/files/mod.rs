//! What kvperf may read and write on the filesystem, checked before any
//! measuring starts. kvperf reads only regular files (a FIFO or a device
//! would hang it or never end), and replaces only regular files it wrote
//! itself, recognised by their format: never a device, a FIFO, a
//! directory, a symbolic or hard link, a user's own file, or an input of
//! the same command. A result that cannot be written where asked is kept
//! in a file named in the error, never dropped.

mod destination;
mod distinct;
mod input;
pub mod owned;
pub mod signature;
mod unsaved;

pub use destination::{Destination, Stream, Written, RESULT_LINE_TAG_VAR};
pub use distinct::Outputs;
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
