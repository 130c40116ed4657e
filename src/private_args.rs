//! Arguments a parent kvperf (a plan) passes its child through the
//! environment instead of the command line, which `ps` shows every user:
//! those holding a password.

use std::ffi::OsString;

use crate::error::InputError;

/// The variable: a JSON array of strings, appended to the command line.
pub const PRIVATE_ARGS: &str = "KVPERF_PRIVATE_ARGS";

static RECEIVED: std::sync::OnceLock<OsString> = std::sync::OnceLock::new();

/// Keeps the variable's value (removed from the environment at start) for
/// this command run again in place (`rocksdb.version`).
pub fn keep(private: Option<&OsString>) {
    if let Some(private) = private {
        let _ = RECEIVED.set(private.clone());
    }
}

/// The value [`keep`] kept.
pub fn received() -> Option<&'static OsString> {
    RECEIVED.get()
}

/// `args` with [`PRIVATE_ARGS`]' appended, read from `private` (the
/// variable's value, if set).
pub fn with_private_args(
    args: impl IntoIterator<Item = OsString>,
    private: Option<OsString>,
) -> Result<Vec<OsString>, InputError> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if let Some(text) = private {
        let extra: Vec<String> = text
            .to_str()
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or_else(|| {
                InputError::Invalid(format!("{PRIVATE_ARGS} is not a JSON array of strings"))
            })?;
        args.extend(extra.into_iter().map(OsString::from));
    }
    Ok(args)
}
