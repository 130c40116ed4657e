//! Inputs: regular files only, refused with one line otherwise.

use std::path::Path;

use crate::error::InputError;

/// Refuses `path` unless it is a regular file (symbolic links followed):
/// `what` names the input in the line ("workload file", "results file").
pub fn require_regular(path: &Path, what: &str) -> Result<(), InputError> {
    let meta = std::fs::metadata(path).map_err(|e| {
        InputError::Invalid(match e.kind() {
            std::io::ErrorKind::NotFound => format!("{what} '{}' does not exist", path.display()),
            _ => format!("cannot read {what} '{}': {e}", path.display()),
        })
    })?;
    if !meta.is_file() {
        return Err(InputError::Invalid(format!(
            "{what} '{}' is {}, not a file",
            path.display(),
            super::kind_of(meta.file_type())
        )));
    }
    Ok(())
}

/// The bytes of the regular file at `path` (see [`require_regular`]).
pub fn read_input_bytes(path: &Path, what: &str) -> Result<Vec<u8>, InputError> {
    require_regular(path, what)?;
    std::fs::read(path)
        .map_err(|e| InputError::Invalid(format!("cannot read {what} '{}': {e}", path.display())))
}

/// The text of the regular file at `path`; a file that is not UTF-8 text
/// is refused as such.
pub fn read_input(path: &Path, what: &str) -> Result<String, InputError> {
    let bytes = read_input_bytes(path, what)?;
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
        let err = read_input(dir.path(), "workload file").unwrap_err();
        assert!(
            err.to_string().contains("is a directory, not a file"),
            "{err}"
        );
        let err = read_input(Path::new("/dev/zero"), "results file").unwrap_err();
        assert!(err.to_string().contains("is a character device"), "{err}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_input(&fifo, "plan file").unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        let missing = read_input(&dir.path().join("none"), "plan file").unwrap_err();
        assert!(missing.to_string().contains("does not exist"), "{missing}");
    }

    #[test]
    fn a_symbolic_link_loop_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let err = read_input(&a, "workload file").unwrap_err().to_string();
        assert!(err.starts_with("cannot read workload file"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn binary_files_are_refused_as_not_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        std::fs::write(&path, [0x66, 0xff, 0xfe]).unwrap();
        let err = read_input(&path, "workload file").unwrap_err();
        assert!(err.to_string().contains("not text"), "{err}");
    }
}
