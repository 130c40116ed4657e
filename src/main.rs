use std::process::ExitCode;

fn main() -> ExitCode {
    // Output piped into `head` ends quietly, as for other command-line
    // tools (Rust ignores SIGPIPE by default, which turns it into a panic
    // on the next print): a disposition, not a handler, so set with
    // signal(2) rather than signal-hook. Sockets are written with MSG_NOSIGNAL, so a
    // server closing a connection is still an error, not a signal.
    // SAFETY: setting a signal's disposition to its default at start-up,
    // before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // A plain handler, not signal-hook's: SIGBUS from a memory-mapped page
    // is a synchronous fault (signal-hook refuses its siblings SIGSEGV,
    // SIGILL and SIGFPE as needing special handling); the handler runs on
    // the faulting thread and must never return, or the access faults again.
    // SAFETY: as above; the handler only writes and exits.
    unsafe {
        libc::signal(libc::SIGBUS, on_sigbus as *const () as libc::sighandler_t);
    }
    // A file grown past the file size limit (`ulimit -f`, RLIMIT_FSIZE)
    // raises SIGXFSZ, whose default ends the process: a measured window
    // lost with its result half written and a temporary left. Caught by a
    // handler that does nothing, the write fails instead (EFBIG, "File
    // too large"), and the result is kept elsewhere or said lost, as on a
    // full disk. A handler, not SIG_IGN, so a child's exec (a server, curl)
    // gets the default back.
    // SAFETY: as above; the handler does nothing.
    unsafe {
        libc::signal(libc::SIGXFSZ, on_sigxfsz as *const () as libc::sighandler_t);
    }
    // kvperf reads back what it writes (a step's result, a results file,
    // a store's lock and marker): a umask that takes the owner's own
    // rights (`umask 0777`) made a plan's measured step unreadable to the
    // plan, and a new store's directory closed to its engine. The owner's
    // bits are kept; the group's and others' stay as the user masked them.
    // SAFETY: umask(2) cannot fail; read and set back before any thread.
    unsafe {
        let mask = libc::umask(0o077);
        libc::umask(mask & 0o077);
    }
    let private = std::env::var_os(kvperf::private_args::PRIVATE_ARGS);
    kvperf::private_args::keep(private.as_ref());
    // Not passed on to this process's own children (a server's script).
    std::env::remove_var(kvperf::private_args::PRIVATE_ARGS);
    let args = kvperf::private_args::with_private_args(std::env::args_os(), private);
    match args.map_err(anyhow::Error::from).and_then(kvperf::cli::run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, no backtrace: the chain of contexts joined by ": ".
            // A value quoted in the message may hold a line break: shown
            // escaped, so the message stays one line. Not eprintln!, which
            // panics when stderr is full; a gone reader is no SIGPIPE either,
            // so the exit code stays the run's.
            let line = kvperf::properties::scrubbed_text(&format!("{err:#}"))
                .replace('\r', "\\r")
                .replace('\n', "\\n");
            kvperf::output::stderr::write(format_args!("kvperf: {line}\n"));
            ExitCode::from(kvperf::error::exit_code(&err))
        }
    }
}

/// SIGXFSZ: nothing to do, the write that raised it fails with EFBIG.
extern "C" fn on_sigxfsz(_: libc::c_int) {}

/// A store an engine writes through a memory map on a
/// sparse file gets SIGBUS, not ENOSPC, when its disk fills: one line and
/// a failed run's exit code (3) instead of "Bus error (core dumped)". The
/// step's output is lost with the process. Only async-signal-safe calls.
extern "C" fn on_sigbus(_: libc::c_int) {
    const LINE: &[u8] = b"kvperf: bus error (SIGBUS) on a memory-mapped file: its disk is full or the file was truncated underneath; what this step measured is lost\n";
    // SAFETY: write(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::write(2, LINE.as_ptr().cast(), LINE.len());
        libc::_exit(3);
    }
}
