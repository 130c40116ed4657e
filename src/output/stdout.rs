//! Standard output that never panics: Rust's `print!` panics (exit 101,
//! a backtrace) when stdout is full, and a result printed there would be
//! lost with it. (A stdout closed at start, `>&-`, is /dev/null to a Rust
//! program: its runtime opens /dev/null there before `main`.) Results go through [`print_result`], which keeps
//! them in a file named in the error; progress lines of `kvperf bench` go
//! through [`say`], which remembers the first failure for the end.

use std::io::Write;

use super::slow_reader::{Std, Wait};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static FAILED: OnceLock<String> = OnceLock::new();

/// Set while a command measures: its stdout lines must not end it.
static MEASURING: AtomicBool = AtomicBool::new(false);

/// From now on a stdout that cannot be written (a reader gone, SIGPIPE)
/// is an error [`say`] records, not the end of the process: a command
/// that measures keeps its figures (`kvperf bench` prints as it goes). A
/// listing piped into `head` still ends quietly.
pub fn keep_going_on_a_gone_reader() {
    MEASURING.store(true, Ordering::Relaxed);
}

/// Writes `text` to stdout and flushes it; a reader that takes nothing
/// is waited for until an interrupt ([`super::slow_reader`]).
pub fn print(text: &str) -> std::io::Result<()> {
    let write = || {
        let mut out = std::io::stdout().lock();
        // Whatever std buffered goes first.
        out.flush()?;
        super::slow_reader::write_all(Std::Out, text.as_bytes(), Wait::UntilInterrupted)
    };
    if MEASURING.load(Ordering::Relaxed) {
        super::stderr::without_sigpipe(write)
    } else {
        write()
    }
}

/// Prints `text`; after a failed write, nothing more is tried and
/// [`failure`] says why.
pub fn say(text: &str) {
    if FAILED.get().is_none() {
        if let Err(e) = print(text) {
            let _ = FAILED.set(e.to_string());
        }
    }
}

/// Why an earlier [`say`] could not write stdout.
pub fn failure() -> Option<&'static str> {
    FAILED.get().map(String::as_str)
}

/// Prints a result; when stdout cannot take it (full, or a pipe whose
/// reader is gone), keeps it in a new file (temporary directory, else the
/// working directory) named in the error. SIGPIPE, which would end kvperf
/// silently on a gone reader, is ignored while the result is written.
pub fn print_result(text: &str, extension: &str) -> anyhow::Result<()> {
    // signal-hook registers handlers; ignoring a signal for a while and
    // restoring what was there is a disposition, set with signal(2).
    // SAFETY: changing a signal's disposition; no handler runs Rust code.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let printed = print(text);
    // SAFETY: restores the disposition read above.
    unsafe { libc::signal(libc::SIGPIPE, previous) };
    printed.map_err(|e| lost_stdout(&e.to_string(), text.as_bytes(), extension))
}

/// The error for a result that stdout did not take, after keeping `bytes`.
pub fn lost_stdout(why: &str, bytes: &[u8], extension: &str) -> anyhow::Error {
    match crate::files::keep_unsaved(bytes, None, extension) {
        Ok(kept) => anyhow::anyhow!(
            "cannot write to standard output ({why}); the result is kept in '{}'",
            kept.display()
        ),
        Err(e) => anyhow::anyhow!(
            "cannot write to standard output ({why}); the result could not be kept in a file either ({e})"
        ),
    }
}

/// `println!` through [`say`].
#[macro_export]
macro_rules! say {
    () => {
        $crate::output::stdout::say("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::stdout::say(&format!("{}\n", format_args!($($arg)*)))
    };
}
