//! The first SIGINT or SIGTERM ends a run like its time limit; a second one
//! kills the process as the signal does by default. Run in a child process:
//! the handlers are process-wide.

use std::os::unix::process::ExitStatusExt;

use kvperf::runner::{interrupted, stop_on_interrupt};

use crate::common;

const CHILD: &str = "KVPERF_INTERRUPT_CHILD";

#[test]
fn the_first_signal_is_noted_and_the_second_kills() {
    const NAME: &str = "the_first_signal_is_noted_and_the_second_kills";
    if let Ok(signal) = std::env::var(CHILD) {
        let signal: i32 = signal.parse().unwrap();
        // Twice, as a plan and its step both ask: still one signal to note.
        stop_on_interrupt();
        stop_on_interrupt();
        assert!(!interrupted());
        // SAFETY: raise() on this process with a handled signal.
        unsafe { libc::raise(signal) };
        eprintln!("child: after the first, interrupted={}", interrupted());
        // SAFETY: as above; this one ends the process.
        unsafe { libc::raise(signal) };
        std::thread::sleep(std::time::Duration::from_secs(5));
        eprintln!("child: alive after the second");
        std::process::exit(0);
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &common::test_path(module_path!(), NAME)])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, signal.to_string())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("child: after the first, interrupted=true"),
            "{stderr}"
        );
        assert!(!stderr.contains("alive after the second"), "{stderr}");
        assert_eq!(out.status.signal(), Some(signal), "{stderr}");
    }
}
