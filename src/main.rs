use std::process::ExitCode;

fn main() -> ExitCode {
    match kvperf::cli::run(std::env::args_os()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, no backtrace: the chain of contexts joined by ": ".
            eprintln!("kvperf: {err:#}");
            ExitCode::from(2)
        }
    }
}
