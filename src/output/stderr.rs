//! Standard error that never panics and never ends kvperf: std's
//! `eprintln!` panics when stderr is full (`2>/dev/full`), and a write to
//! a pipe whose reader is gone raises SIGPIPE, which kvperf leaves at its
//! default (a listing piped into `head` ends quietly), so it would end the
//! process. Either lost the measured window with the run. Every stderr
//! line of the crate goes through [`write`] (the crate's own `eprintln!`
//! and `eprint!`, defined in lib.rs, shadow std's): a status line, a
//! warning or a header that cannot be written is dropped, and the first
//! reason is kept ([`failure`]); the result and the exit code stay. A
//! reader that takes nothing holds a line at most [`STDERR_WAIT`], once
//! ([`super::slow_reader`]): the line is then dropped likewise.

use std::sync::OnceLock;

use super::slow_reader::{Std, Wait, STDERR_WAIT};

static FAILED: OnceLock<String> = OnceLock::new();

/// Writes `args` to stderr in one write; a failure is dropped (the first
/// one is remembered for [`failure`]).
pub fn write(args: std::fmt::Arguments) {
    let text = std::fmt::format(args);
    let written = without_sigpipe(|| {
        // Held so that lines of several threads stay whole.
        let _err = std::io::stderr().lock();
        super::slow_reader::write_all(Std::Err, text.as_bytes(), Wait::Bounded(STDERR_WAIT))
    });
    if let Err(e) = written {
        let _ = FAILED.set(e.to_string());
    }
}

/// Why an earlier stderr write was dropped, if one was.
pub fn failure() -> Option<&'static str> {
    FAILED.get().map(String::as_str)
}

/// Runs `write` with SIGPIPE blocked on this thread, so a write to a pipe
/// whose reader is gone fails with EPIPE instead of ending the process;
/// a SIGPIPE it raised is taken off the thread before the mask is restored.
/// Per thread (pthread_sigmask), so other threads keep the disposition.
pub fn without_sigpipe<T>(write: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    // SAFETY: signal sets are initialised by sigemptyset before use; the
    // mask change is this thread's alone and is restored below.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pending);
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let result = write();
        if !was_pending
            && result
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        {
            // The SIGPIPE this write raised, pending on this thread: taken.
            let now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&pipe, std::ptr::null_mut(), &now);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        result
    }
}
