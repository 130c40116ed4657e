//! The ninth hostile pass, signals, waits and inputs (docs/reliability.md,
//! "Pass 9: signals, waits and inputs"): signals at every command's
//! moments, kvperf's own outputs closed, full or gone, and special files
//! as every input. Each case failed on the main of 2026-11-29 (31ece17).

use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use super::waits::{rest, spawn, wait_within};
use crate::common::kvperf;

/// A null-engine plan without a load: configurations `a` and `b`, each
/// running workload C at one thread for `seconds` seconds.
pub(super) fn no_load_plan(dir: &Path, seconds: u32) -> PathBuf {
    let text = format!(
        r#"name = "no-load"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 100
operationcount = 1000000000000
maxexecutiontime = {seconds}
[[configs]]
name = "a"
[[configs]]
name = "b"
[[steps]]
workloads = ["c"]
threads = [1]
"#
    );
    let path = dir.join("no-load.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Reads stderr lines until one contains `needle` (at most 120 s).
fn line_with(lines: &Receiver<String>, needle: &str, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else {
            break;
        };
        let found = line.contains(needle);
        seen.push(line);
        if found {
            return;
        }
    }
    panic!("no line with `{needle}`: {seen:#?}");
}

/// A plan of the null engine (which keeps no store) with no load,
/// interrupted during its second step, said "rerun the same command to
/// resume", and the rerun was refused, exit 2: "a step of config 'b' was
/// interrupted while it changed the store, and the plan has no load to
/// make the store again; start over with a new --results file". Nothing
/// was changed; now the rerun resumes and records each step once.
#[test]
fn an_interrupted_plan_of_the_null_engine_resumes_without_a_load() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let tmp = tempfile::tempdir().unwrap();
        no_load_plan(tmp.path(), 5);
        let args: Vec<String> = ["plan", "run", "no-load.toml", "--results", "r.jsonl"]
            .map(String::from)
            .to_vec();
        let (mut child, lines) = spawn(tmp.path(), &args);
        let mut seen = Vec::new();
        line_with(&lines, "[2/2] b/001-run-c-t1-r1", &mut seen);
        // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_within(&mut child, Duration::from_secs(120), "plan after a signal");
        seen.extend(rest(&lines));
        assert_eq!(status.code(), Some(3), "{seen:#?}");
        assert!(
            seen.iter()
                .any(|l| l.contains("rerun the same command to resume")),
            "{seen:#?}"
        );
        let out = kvperf(
            tmp.path(),
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let text = std::fs::read_to_string(tmp.path().join("r.jsonl")).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["step"]["id"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(
            ids,
            ["a/000-run-c-t1-r1", "b/001-run-c-t1-r1"],
            "{}",
            out.stderr
        );
        assert!(!tmp.path().join(".r.jsonl.in-progress").exists());
    }
}

/// Whether `dir` holds a file of a report being written: report.md or a
/// hidden temporary of one (`.report.md.kvperf-PID-N`).
fn report_begun(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name == "report.md" || name.starts_with(".report.")
        })
    })
}

/// `kvperf report` of 300 results, interrupted once its first file is
/// being written, died of the signal (exit 130/143), leaving a hidden
/// temporary (`.report.csv.kvperf-PID-3`, as large as the file) and a
/// report half written (a new report.md beside an older or no report.csv).
/// Now the three files are finished (a moment), exit 3 says so, and
/// nothing hidden is left. The signal lands at the first sign of writing;
/// when the whole report was written before it (a loaded machine), the
/// case is tried again, at most five times.
#[test]
fn an_interrupted_report_finishes_its_files_and_leaves_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    let one = crate::common::run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=2000",
            "--format",
            "json",
            "--output",
            "one.json",
        ],
    );
    assert_eq!(one.code, 0, "{}", one.stderr);
    let mut args = vec!["report".to_string()];
    for i in 0..300 {
        let name = format!("s{i:03}.json");
        std::fs::copy(tmp.path().join("one.json"), tmp.path().join(&name)).unwrap();
        args.push(name);
    }
    for (attempt, sig) in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGTERM,
    ]
    .into_iter()
    .enumerate()
    {
        let out = tmp.path().join(format!("rep{attempt}"));
        let mut these = args.clone();
        these.extend(["--out".to_string(), out.display().to_string()]);
        let (mut child, lines) = spawn(tmp.path(), &these);
        let deadline = Instant::now() + Duration::from_secs(120);
        while !report_begun(&out) && child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "report wrote nothing in 120 s");
            std::thread::sleep(Duration::from_micros(200));
        }
        // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_within(
            &mut child,
            Duration::from_secs(120),
            "report after a signal",
        );
        let stderr = rest(&lines).join("\n");
        if status.code() == Some(0) {
            continue; // written in full before the signal came
        }
        assert_eq!(status.code(), Some(3), "{sig}: {status:?} {stderr}");
        assert!(stderr.contains("were written in full"), "{stderr}");
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["report.csv", "report.html", "report.md"],
            "{stderr}"
        );
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(html.trim_end().ends_with("</html>"), "report.html torn");
        return;
    }
    crate::common::note_skip(
        "SKIPPED an_interrupted_report_finishes_its_files_and_leaves_no_temporary: each report was written in full before its signal came",
    );
}

/// SIGHUP (the terminal or the ssh session closed) to `kvperf server
/// start redis` while its script waited for the server to answer: kvperf
/// died of it (exit 129) and its script went on, leaving a redis-server
/// no record named: `server status` said "not running", `server stop`
/// "nothing stopped", the port taken. Now SIGHUP ends the script and what
/// it launched as SIGINT and SIGTERM do: exit 3, nothing left running.
/// The signal lands once redis writes its log; a start that finished
/// first (a loaded machine) is stopped and tried again, at most five times.
#[test]
fn sighup_to_a_server_start_leaves_no_server_unrecorded() {
    if std::process::Command::new("sh")
        .args(["-c", "command -v redis-server"])
        .output()
        .map_or(true, |o| !o.status.success())
    {
        crate::common::skip_unless_ci(
            "pass9_life::sighup_to_a_server_start",
            "no Redis here (apt-get install redis-server)",
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for attempt in 0..5 {
        let dir = work.path().join(format!("redis{attempt}"));
        let port = crate::common::server::free_port().to_string();
        let shown = dir.display().to_string();
        let args: Vec<String> = ["server", "start", "redis", "--dir", &shown, "--port", &port]
            .map(String::from)
            .to_vec();
        let (mut child, lines) = spawn(work.path(), &args);
        let began = Instant::now();
        while !dir.join("redis.log").exists() && child.try_wait().unwrap().is_none() {
            assert!(
                began.elapsed() < Duration::from_secs(120),
                "redis never began"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
        unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
        let status = wait_within(
            &mut child,
            Duration::from_secs(120),
            "server start after SIGHUP",
        );
        let stderr = rest(&lines).join("\n");
        if status.code() == Some(0) {
            // Started and recorded before the signal came.
            let out = kvperf(
                work.path(),
                &["server", "stop", "redis", "--dir", &shown, "--port", &port],
            );
            assert_eq!(out.code, 0, "{}", out.stderr);
            continue;
        }
        // redis-server writes its title over its environment: found by
        // its pid file as well as by what names the directory.
        let launched = || {
            let mut found = super::pass8_servers::launched_for(&dir);
            let pid = std::fs::read_to_string(dir.join("redis.pid"))
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok());
            if let Some(pid) = pid {
                let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                    s.contains("(redis-server)")
                        && !s
                            .rsplit(')')
                            .next()
                            .is_some_and(|r| r.trim_start().starts_with('Z'))
                });
                if alive && !found.contains(&pid) {
                    found.push(pid);
                }
            }
            found
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut left = launched();
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            left = launched();
        }
        for pid in &left {
            // SAFETY: processes of this test's own start, killed so they do
            // not outlive it.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
        assert!(
            left.is_empty(),
            "left running, unrecorded: {left:?}; {status:?} {stderr}"
        );
        assert_eq!(status.code(), Some(3), "{status:?} {stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        return;
    }
    crate::common::note_skip(
        "SKIPPED sighup_to_a_server_start_leaves_no_server_unrecorded: each start finished before its SIGHUP came",
    );
}

/// A config name of 40 000 characters: the step ran and was recorded,
/// then kvperf read its own step marker (two copies of the name, past the
/// 64 KiB a marker is read to) as a stranger's: "is not the step marker
/// kvperf wrote (something was put in its place while the step ran)",
/// exit 2, the marker left. Now such a name is refused when the plan is
/// read, one line, exit 2, nothing written.
#[test]
fn a_config_name_too_long_for_the_step_marker_is_refused_when_the_plan_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "a".repeat(40_000);
    let text = format!(
        "name = \"long\"\ndriver = \"ycsb\"\nengine = \"null\"\n[properties]\nrecordcount = 100\noperationcount = 100\n[[configs]]\nname = \"{name}\"\n[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\n"
    );
    std::fs::write(tmp.path().join("long.toml"), text).unwrap();
    let out = kvperf(
        tmp.path(),
        &["plan", "run", "long.toml", "--results", "r.jsonl"],
    );
    crate::common::assert_input_error(&out, "a config name is at most 255");
    assert!(!tmp.path().join("r.jsonl").exists(), "{}", out.stderr);
    assert!(
        !tmp.path().join(".r.jsonl.in-progress").exists(),
        "{}",
        out.stderr
    );
}

/// A plan of 100 000 configs: each name was compared with every earlier
/// one (5 * 10^9 comparisons), so `plan show` and `plan run` said nothing
/// for over 30 s before the one line refusing the plan's size. Now the
/// line comes at once.
#[test]
fn a_plan_of_100000_configs_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "name = \"wide\"\ndriver = \"ycsb\"\nengine = \"null\"\n[properties]\nrecordcount = 100\noperationcount = 100\n",
    );
    for i in 0..100_000 {
        text.push_str(&format!("[[configs]]\nname = \"c{i}\"\n"));
    }
    text.push_str("[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\nrepeats = 10\n");
    std::fs::write(tmp.path().join("wide.toml"), text).unwrap();
    let args: Vec<String> = ["plan", "show", "wide.toml"].map(String::from).to_vec();
    let (mut child, lines) = spawn(tmp.path(), &args);
    let status = wait_within(
        &mut child,
        Duration::from_secs(20),
        "plan show of 100 000 configs",
    );
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("more than kvperf runs in one plan"),
        "{stderr}"
    );
}
