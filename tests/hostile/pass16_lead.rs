//! Pass 16, the lead's part (docs/reliability.md, "## Pass 16: the
//! lead's part").

#[cfg(feature = "redis")]
use super::waits::{
    a_trace, loaded_redis, output, redis_stopped_at, rest, spawn_with_stdout, wait_for_line,
    wait_within,
};
#[cfg(feature = "redis")]
use std::{path::Path, process::Stdio, time::Duration};

/// SIGTERM while a step waits after its window on a Redis stopped at its
/// footprint query: the window's figures are kept wherever the result
/// goes, JSON to stdout on stdout, text (which partial figures cannot be
/// written as) as JSON in a `kvperf-unsaved-*` file named on stderr. Pass
/// 16: `run` to stdout in either format and `replay --output F.txt` said
/// "what was measured is kept" and kept nothing.
#[cfg(feature = "redis")]
#[test]
fn a_wait_after_the_window_keeps_the_figures_wherever_the_result_goes() {
    let Some(redis) = loaded_redis("pass16_kept") else {
        return;
    };
    let dir = redis.dir();
    let trace = a_trace(dir, 1000).display().to_string();
    let workload = crate::common::workload("c");
    for form in [
        "run, JSON to stdout",
        "run, text to stdout",
        "replay, text into a file",
    ] {
        let extra = ["operationcount=1000", "stalltimeout=120"];
        let (_relay, _cont, props) = redis_stopped_at(&redis, b"MEMORY", 1, &extra);
        let mut args: Vec<String> = match form {
            "replay, text into a file" => vec!["replay", &trace, "--engine", "redis"],
            _ => vec!["run", "--engine", "redis", "-P", &workload],
        }
        .into_iter()
        .map(String::from)
        .collect();
        for p in &props {
            args.extend(["-p".into(), p.clone()]);
        }
        match form {
            "run, JSON to stdout" => args.extend(["--format".into(), "json".into()]),
            "replay, text into a file" => args.extend(["--output".into(), "rp.txt".into()]),
            _ => {}
        }
        let stdout = dir.join("stdout");
        let file = std::fs::File::create(&stdout).unwrap();
        let (mut child, lines) = spawn_with_stdout(dir, &args, Stdio::from(file));
        let mut seen = Vec::new();
        let ended = "the measured window ended";
        wait_for_line(&lines, ended, Duration::from_secs(60), &mut seen);
        // SAFETY: a signal to the kvperf this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let status = wait_within(&mut child, Duration::from_secs(10), form);
        let stderr = rest(&lines).join("\n");
        assert_eq!(status.code(), Some(3), "{form}: {stderr}");
        let kept = match form {
            "run, JSON to stdout" => stdout.clone(),
            _ => stderr
                .split("the step's figures are kept as JSON in '")
                .nth(1)
                .and_then(|k| k.split('\'').next())
                .map(Path::new)
                .unwrap_or_else(|| panic!("{form}: no kept file named: {stderr}"))
                .to_path_buf(),
        };
        let out = output(&kept);
        assert_eq!(out.measurements.len(), 1, "{form}: the window's figures");
        assert_eq!(out.measurements[0].operations, 1000, "{form}");
        assert!(out.error.is_some(), "{form}: the interrupt is said");
        if kept != stdout {
            let _ = std::fs::remove_file(kept);
        }
    }
}

/// `fit --check` runs three steps on one set of properties: a file a `-p`
/// names (a trace, interval logs, RocksDB's trace) is refused before
/// anything is measured, as is an `--output` inside the store (pass 16:
/// each step wrote the file over the one before, the replay's trace lost;
/// the fitted workload was written into the store, then gone).
#[test]
fn fit_check_refuses_one_file_for_three_steps_and_an_output_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let trace = super::waits::a_trace(dir.path(), 300);
    let trace = trace.display().to_string();
    let mut cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["--engine", "null", "-p", "trace.output=tc.kvtrace"],
            "tc.kvtrace",
            "trace.output's file",
        ),
        (
            vec![
                "--engine",
                "null",
                "-p",
                "hdrhistogram.fileoutput=true",
                "-p",
                "hdrhistogram.output.path=h-",
            ],
            "h-READ.hdr",
            "hdrhistogram.output.path's file",
        ),
    ];
    if cfg!(feature = "rocksdb") {
        cases.push((
            vec![
                "--engine",
                "rocksdb",
                "--db",
                "db1",
                "-p",
                "rocksdb.trace=rt1",
            ],
            "rt1",
            "rocksdb.trace's file",
        ));
        cases.push((
            vec![
                "--engine",
                "rocksdb",
                "--db",
                "db2",
                "--output",
                "db2/wl.txt",
            ],
            "db2/wl.txt",
            "is inside the store directory",
        ));
    }
    // An empty directory a user gives as the store.
    std::fs::create_dir(dir.path().join("db2")).unwrap();
    for (extra, written, said) in cases {
        let mut args = vec!["fit", &trace, "--check"];
        args.extend(extra);
        let out = crate::common::kvperf(dir.path(), &args);
        crate::common::assert_input_error(&out, said);
        assert!(
            !dir.path().join(written).exists(),
            "{args:?}: {written} made: {}",
            out.stderr
        );
    }
}
