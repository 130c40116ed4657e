use std::process::ExitCode;

fn main() -> ExitCode {
    // Output piped into `head` ends quietly, as for other command-line
    // tools (Rust ignores SIGPIPE by default, which turns it into a panic
    // on the next print). Sockets are written with MSG_NOSIGNAL, so a
    // server closing a connection is still an error, not a signal.
    // SAFETY: setting a signal's disposition to its default at start-up,
    // before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let private = std::env::var_os(kvperf::cli::PRIVATE_ARGS);
    // Not passed on to this process's own children (a server's script).
    std::env::remove_var(kvperf::cli::PRIVATE_ARGS);
    let args = kvperf::cli::with_private_args(std::env::args_os(), private);
    match args.map_err(anyhow::Error::from).and_then(kvperf::cli::run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, no backtrace: the chain of contexts joined by ": ".
            // Not eprintln!, which panics when stderr is closed or full.
            use std::io::Write;
            // A value quoted in the message may hold a line break: shown
            // escaped, so the message stays one line.
            let line = format!("{err:#}").replace('\r', "\\r").replace('\n', "\\n");
            let _ = writeln!(std::io::stderr(), "kvperf: {line}");
            ExitCode::from(kvperf::error::exit_code(&err))
        }
    }
}
