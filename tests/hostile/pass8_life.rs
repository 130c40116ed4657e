//! The eighth hostile pass, lifecycle and results side (docs/reliability.md,
//! "Pass 8: signals, results and reports"): signals at commands earlier
//! passes covered less (`device corners`, SIGHUP), results files joined or
//! edited fed to `report`, `compare` and `plan run`, and what a report's
//! summary shows of a cell its tables mark. Each case failed on the main
//! of 2026-11-29 (b17f7e9).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use super::waits::{rest, spawn, wait_within};
use crate::common::{assert_input_error, kvperf, workload};

/// A null-engine plan of two configurations, `a` and `b`, each running
/// workload C at one thread once: every window far under 10 s.
fn two_config_plan(dir: &Path) -> PathBuf {
    let text = r#"name = "joined"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 100
operationcount = 2000
[[configs]]
name = "a"
[[configs]]
name = "b"
[[steps]]
workloads = ["c"]
threads = [1]
"#;
    let path = dir.join("joined.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The plan's results, run once.
pub(super) fn measured(dir: &Path) -> (PathBuf, String) {
    let plan = two_config_plan(dir);
    let results = dir.join("once.jsonl");
    let shown = (plan.display().to_string(), results.display().to_string());
    let out = kvperf(dir, &["plan", "run", &shown.0, "--results", &shown.1]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&results).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    (plan, text)
}

/// One results file holding each measured step four times (a file joined
/// with itself, `cat r.jsonl r.jsonl ...`): `report` and `compare` counted
/// the copies as four repeats of each cell and judged "-24% [-24%, -24%]
/// slower" at 95% from one measurement; `plan run` took it as complete.
/// Now each is one line, exit 2, naming the step, the file untouched.
#[test]
fn a_step_recorded_twice_is_refused_never_counted_as_a_repeat() {
    let tmp = tempfile::tempdir().unwrap();
    let (plan, once) = measured(tmp.path());
    let joined = tmp.path().join("joined.jsonl");
    std::fs::write(&joined, once.repeat(4)).unwrap();
    let out = kvperf(
        tmp.path(),
        &["report", "joined.jsonl", "--out", "joined-report"],
    );
    assert_input_error(&out, "measured more than once");
    assert!(!tmp.path().join("joined-report").exists());
    let out = kvperf(tmp.path(), &["compare", "joined.jsonl"]);
    assert_input_error(&out, "measured more than once");
    let shown = plan.display().to_string();
    let out = kvperf(
        tmp.path(),
        &["plan", "run", &shown, "--results", "joined.jsonl"],
    );
    assert_input_error(&out, "measured more than once");
    assert_eq!(std::fs::read_to_string(&joined).unwrap(), once.repeat(4));
    // The file as the plan wrote it still reports.
    let out = kvperf(
        tmp.path(),
        &["report", "once.jsonl", "--out", "once-report"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// A record edited to another step's name, or to other threads: `plan
/// run` ran the step the edit took away, appended it, and its closing
/// report then showed the edited record too, as a second repeat of the
/// cell (or at 99 threads). Now the plan refuses the file in one line.
#[test]
fn a_results_record_edited_to_another_step_is_refused_by_plan_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (plan, once) = measured(tmp.path());
    let shown = plan.display().to_string();
    let edits = [
        (
            "\"id\":\"a/000-run-c-t1-r1\"",
            "\"id\":\"a/999-run-c-t1-r1\"",
        ),
        ("\"threads\":1,\"repeat\":1", "\"threads\":99,\"repeat\":1"),
    ];
    for (from, to) in edits {
        assert!(once.contains(from), "{once}");
        let edited = once.replacen(from, to, 1);
        let path = tmp.path().join("edited.jsonl");
        std::fs::write(&path, &edited).unwrap();
        let out = kvperf(
            tmp.path(),
            &["plan", "run", &shown, "--results", "edited.jsonl"],
        );
        assert_input_error(&out, "the file was edited or joined");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    }
}

/// Two different plans' records in one file (joined): the report showed
/// the other plan's step as a cell of this one's. Now refused, naming both.
#[test]
fn records_of_two_plans_in_one_results_file_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, once) = measured(tmp.path());
    let first = once.lines().next().unwrap();
    let other = first.replacen("\"name\":\"joined\"", "\"name\":\"other\"", 1);
    let fingerprint = |line: &str| {
        let at = line.find("\"fingerprint\":\"").unwrap() + "\"fingerprint\":\"".len();
        line[at..at + 16].to_string()
    };
    let other = other.replacen(&fingerprint(first), "0123456789abcdef", 1);
    let last = once.lines().nth(1).unwrap();
    std::fs::write(tmp.path().join("two.jsonl"), format!("{last}\n{other}\n")).unwrap();
    let out = kvperf(tmp.path(), &["report", "two.jsonl", "--out", "two-report"]);
    assert_input_error(&out, "holds results of two plans");
}

/// A results file of a newer format: the line said "written in results
/// format 3 by an older kvperf".
#[test]
fn a_newer_results_format_is_called_newer() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, once) = measured(tmp.path());
    let newer = once.replace("{\"kvperf_results\":2,", "{\"kvperf_results\":3,");
    std::fs::write(tmp.path().join("newer.jsonl"), newer).unwrap();
    let out = kvperf(tmp.path(), &["report", "newer.jsonl", "--out", "r"]);
    assert_input_error(&out, "format 3 by a newer kvperf");
}

/// The rows of the table under `## Summary` in a report.md.
fn summary_rows(md: &str) -> Vec<String> {
    let from = md.find("## Summary").expect("a summary");
    md[from..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(str::to_string)
        .collect()
}

/// A report's summary showed the peak of a cell whose window was too
/// short to judge (or that failed) as a clean figure, where the
/// throughput tables mark it (§, ‡): with one configuration and with two.
#[test]
fn a_reports_summary_marks_its_figures_as_the_tables_do() {
    let tmp = tempfile::tempdir().unwrap();
    measured(tmp.path());
    let out = kvperf(tmp.path(), &["report", "once.jsonl", "--out", "two"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = std::fs::read_to_string(tmp.path().join("two/report.md")).unwrap();
    assert!(md.contains("Measured windows too short to judge"), "{md}");
    let rows = summary_rows(&md);
    assert!(!rows.is_empty(), "{md}");
    for row in &rows {
        assert!(row.contains(" \u{a7} (1 thr)"), "unmarked: {row}");
    }
    // One configuration: the other summary.
    let once = std::fs::read_to_string(tmp.path().join("once.jsonl")).unwrap();
    let a_only: String = once
        .lines()
        .filter(|l| l.contains("\"config\":\"a\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(tmp.path().join("a.jsonl"), a_only).unwrap();
    let out = kvperf(tmp.path(), &["report", "a.jsonl", "--out", "one"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = std::fs::read_to_string(tmp.path().join("one/report.md")).unwrap();
    let rows = summary_rows(&md);
    assert_eq!(rows.len(), 1, "{md}");
    assert!(rows[0].contains(" \u{a7} (1)"), "unmarked: {}", rows[0]);
}

/// A workload named twice in one `[[steps]]` entry ran twice as repeat 1
/// of one cell (a thread count twice is refused).
#[test]
fn a_workload_twice_in_one_steps_entry_is_refused_as_a_thread_count_is() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = two_config_plan(tmp.path());
    let shown = plan.display().to_string();
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            &shown,
            "--results",
            "r.jsonl",
            "--set",
            "steps.0.workloads=[\"c\",\"c\"]",
        ],
    );
    assert_input_error(&out, "workloads has 'c' twice");
    assert!(!tmp.path().join("r.jsonl").exists());
}

/// `kvperf run` (null engine, endless, status every second, JSON to
/// `r.json`) with SIGHUP's disposition set to `hup` before exec.
fn endless_run(dir: &Path, ignore_hup: bool) -> (Child, Receiver<String>) {
    let wa = workload("a");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.args(["run", "--engine", "null", "-P", &wa])
        .args([
            "-p",
            "operationcount=1000000000000",
            "-p",
            "status.interval=1",
        ])
        .args(["-s", "--format", "json", "--output", "r.json"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if ignore_hup {
        // SAFETY: only signal(2) between fork and exec, as nohup does.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits (at most 120 s) for the `n`th status line: the window is open.
fn status_lines(lines: &Receiver<String>, n: usize, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut found = 0;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else {
            break;
        };
        let status = line.contains(" sec: ") && line.contains("operations");
        seen.push(line);
        if status {
            found += 1;
            if found == n {
                return;
            }
        }
    }
    panic!("not {n} status lines: {seen:#?}");
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
    unsafe { libc::kill(child.id() as i32, signal) };
}

/// SIGHUP (the terminal or ssh session gone) ended a run by default:
/// exit 129, no JSON, the whole window lost. Now it is an interrupt:
/// exit 3, the window kept. Under `nohup` (SIGHUP ignored) it stays
/// ignored: the run goes on until Ctrl-C.
#[test]
fn sighup_ends_a_run_keeping_its_window_unless_it_was_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, lines) = endless_run(tmp.path(), false);
    let mut seen = Vec::new();
    status_lines(&lines, 1, &mut seen);
    signal(&child, libc::SIGHUP);
    let status = wait_within(&mut child, Duration::from_secs(120), "run after SIGHUP");
    seen.extend(rest(&lines));
    let stderr = seen.join("\n");
    assert_eq!(status.code(), Some(3), "{stderr}");
    let text = std::fs::read_to_string(tmp.path().join("r.json")).expect("the JSON written");
    let out = kvperf::results::step::StepOutput::from_json(&text).unwrap();
    assert_eq!(out.measurements.len(), 1, "{stderr}");
    assert!(out.measurements[0].operations > 0, "{stderr}");

    let tmp = tempfile::tempdir().unwrap();
    let (mut child, lines) = endless_run(tmp.path(), true);
    let mut seen = Vec::new();
    status_lines(&lines, 1, &mut seen);
    signal(&child, libc::SIGHUP);
    // Still measuring: another status line comes after the SIGHUP.
    status_lines(&lines, 1, &mut seen);
    assert!(child.try_wait().unwrap().is_none(), "{seen:#?}");
    signal(&child, libc::SIGINT);
    let status = wait_within(&mut child, Duration::from_secs(120), "run after SIGINT");
    seen.extend(rest(&lines));
    assert_eq!(status.code(), Some(3), "{seen:#?}");
}

/// `device corners` interrupted after its first corner: it died of the
/// signal (no JSON, the measured corner lost), left its test file (twice
/// the machine's memory by default), and the next `device corners` on the
/// directory was refused until the user removed it. Now the corners
/// measured are written, the file removed, exit 3; the next run works.
#[test]
fn an_interrupted_device_corners_keeps_its_corners_and_removes_its_file() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let target = tmp.path().join("corners");
        std::fs::create_dir(&target).unwrap();
        let args: Vec<String> = [
            "device",
            "corners",
            "corners",
            "--size",
            "8MiB",
            "--runtime",
            "1",
            "--ramp",
            "0",
            "--format",
            "json",
            "--output",
            "c.json",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        let (mut child, lines) = spawn(tmp.path(), &args);
        // The second corner begins: the first is measured.
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        while !seen.iter().any(|l: &String| l.contains("randread ...")) {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("no second corner: {seen:#?}"));
            match lines.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no second corner: {seen:#?}"),
            }
        }
        signal(&child, sig);
        let status = wait_within(&mut child, Duration::from_secs(60), "interrupted corners");
        seen.extend(rest(&lines));
        let stderr = seen.join("\n");
        assert_eq!(status.code(), Some(3), "{stderr}");
        assert!(
            stderr.contains("interrupted during the randread corner"),
            "{stderr}"
        );
        let text = std::fs::read_to_string(tmp.path().join("c.json")).expect("the JSON written");
        let out = kvperf::results::step::StepOutput::from_json(&text).unwrap();
        let names: Vec<&str> = out.measurements.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["read"], "{stderr}");
        assert!(out.error.is_some(), "{stderr}");
        assert!(
            !target.join("kvperf-device-test.dat").exists(),
            "the test file is left: {stderr}"
        );
        let again = kvperf(
            tmp.path(),
            &[
                "device",
                "corners",
                "corners",
                "--size",
                "1MiB",
                "--runtime",
                "1",
                "--ramp",
                "0",
            ],
        );
        assert_eq!(again.code, 0, "{}", again.stderr);
    }
}

/// `trace import` of a large CSV interrupted mid-way left its hidden
/// temporary (`.t.kvtrace.kvperf-PID-1`, as large as what it had written)
/// beside `--output` each time. Now it ends between lines, exit 3, with
/// nothing left in the directory but the input. (Its first form waited for
/// any file: the check's probe of --output's directory, made before the
/// signal was caught, and the import died of the signal under load; the
/// signal is now caught first, and the test waits for the trace's own
/// temporary.)
#[test]
fn an_interrupted_trace_import_leaves_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    let mut csv = String::with_capacity(40 << 20);
    csv.push_str("time,op,key,value_size\n");
    for i in 0..1_500_000u64 {
        csv.push_str(&format!(
            "{}.{:06},get,k{},100\n",
            i / 100_000,
            i % 100_000,
            i % 99_991
        ));
    }
    std::fs::write(tmp.path().join("in.csv"), csv).unwrap();
    let args: Vec<String> = [
        "trace",
        "import",
        "--from",
        "csv",
        "--output",
        "t.kvtrace",
        "in.csv",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let (mut child, lines) = spawn(tmp.path(), &args);
    // Its temporary appears when it begins to write.
    let temporary = |n: &String| n.starts_with(".t.kvtrace.kvperf-");
    let listed = || -> Vec<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "in.csv")
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !listed().iter().any(temporary) {
        assert!(child.try_wait().unwrap().is_none(), "{:?}", rest(&lines));
        assert!(Instant::now() < deadline, "no temporary appeared");
        std::thread::yield_now();
    }
    signal(&child, libc::SIGINT);
    let status = wait_within(&mut child, Duration::from_secs(60), "interrupted import");
    let stderr = rest(&lines).join("\n");
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("interrupted at line"), "{stderr}");
    assert_eq!(listed(), Vec::<String>::new(), "{stderr}");
}
