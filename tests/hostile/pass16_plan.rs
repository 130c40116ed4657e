//! The sixteenth hostile pass, a plan's resume (docs/reliability.md,
//! "Pass 16: a plan's resume"): a results file's last record edited by
//! hand, a step's child stopped when the plan is interrupted, a store made
//! again after a kill, an interrupt after the last step. Each case failed
//! on the main of 2026-11-29 (4a1cd29).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::pass10_servers::wait_for;
use super::pass8_life::measured;
use super::pass9_life::no_load_plan;
use super::waits::{family, rest, spawn, wait_within};
use crate::common::{self, assert_input_error, kvperf, lines};

/// The live process `pid`'s arguments (none once it has ended).
fn argv(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The state letter of process `pid` (`T` stopped, `Z` a zombie).
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// `plan`'s child kvperf running `command` (`run`, `bench`, `server`).
fn child_running(plan: i32, command: &str) -> Option<i32> {
    family(plan)
        .into_iter()
        .skip(1)
        .find(|&p| argv(p).get(1).is_some_and(|c| c == command))
}

/// Whether process `pid` has a handler for SIGTERM (kvperf's is set).
fn catches_term(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGTERM - 1)) != 0)
}

/// A results file whose last record was edited by hand and lost its line
/// end (`truncate -s -1 r.jsonl; printf ' x' >> r.jsonl`, a slip mid-line,
/// a note after the record): `plan run` took it for a write cut short,
/// cut the whole record and measured its step again; `report` left it
/// out. Now only a prefix of a record (NUL bytes after it or not) is
/// dropped; an edit is refused by both, one line naming line 2, exit 2,
/// the file untouched.
#[test]
fn an_edited_last_record_without_its_line_end_is_refused_never_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (plan, once) = measured(dir);
    let shown = plan.display().to_string();
    let first = format!("{}\n", once.lines().next().unwrap());
    let last = once.lines().nth(1).unwrap();
    let edits = [
        format!("{} x", &last[..last.len() - 1]),
        last.replacen("\"threads\":1,", "\"threads\":1x,", 1),
        format!("{last} // checked by hand"),
    ];
    for edit in edits {
        assert_ne!(edit, last);
        let text = format!("{first}{edit}");
        let path = dir.join("edited.jsonl");
        std::fs::write(&path, &text).unwrap();
        let out = kvperf(dir, &["plan", "run", &shown, "--results", "edited.jsonl"]);
        assert_input_error(&out, "line 2");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{edit}");
        let out = kvperf(dir, &["report", "edited.jsonl", "--out", "edited-report"]);
        assert_input_error(&out, "line 2");
    }
    // A write cut short is still dropped, and its step measured again.
    let prefix = &last[..last.len() / 2];
    for torn in [prefix.to_string(), format!("{prefix}{}", "\0".repeat(4096))] {
        let path = dir.join("torn.jsonl");
        std::fs::write(&path, format!("{first}{torn}")).unwrap();
        let out = kvperf(dir, &["plan", "run", &shown, "--results", "torn.jsonl"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains("dropping an incomplete last line"),
            "{}",
            out.stderr
        );
        assert_eq!(lines(&path).len(), 2);
    }
}

/// The step's child stopped (a debugger, job control), then one SIGINT or
/// SIGTERM to `plan run`: the plan passed a SIGTERM on, which a stopped
/// child never takes, and waited for good (20 s seen, still waiting). Now
/// the child is continued with it (and killed if it has not ended 15 s
/// later): the plan ends, exit 3, its child with it.
#[test]
fn one_interrupt_ends_a_plan_whose_step_is_stopped() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let tmp = tempfile::tempdir().unwrap();
        let plan = no_load_plan(tmp.path(), 600).display().to_string();
        let args = ["plan", "run", &plan, "--results", "r.jsonl"].map(String::from);
        let (mut child, lines) = spawn(tmp.path(), &args);
        let pid = child.id() as i32;
        let mut step = None;
        let running = wait_for(Duration::from_secs(120), || {
            step = child_running(pid, "run").filter(|&p| catches_term(p));
            step.is_some()
        });
        let Some(step) = step.filter(|_| running) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no step running: {:?}", rest(&lines));
        };
        // SAFETY: the step's kvperf, which this test's plan started.
        unsafe { libc::kill(step, libc::SIGSTOP) };
        assert!(wait_for(Duration::from_secs(10), || state(step) == Some('T')));
        // SAFETY: the plan this test started.
        unsafe { libc::kill(pid, signal) };
        let status = wait_within(
            &mut child,
            Duration::from_secs(60),
            "an interrupted plan whose step is stopped",
        );
        assert_eq!(status.code(), Some(3), "{:?}", rest(&lines));
        assert_eq!(state(step), None, "the step's kvperf is left");
    }
}

const LABELS: &str = r#"name = "labels"
driver = "db_bench"
engine = "rocksdb"
[properties]
key_size = 16
compression_type = "none"
[[configs]]
name = "c"
db = "db"
[[steps]]
label = "4KB"
load = true
workloads = ["fillseq"]
threads = [1]
properties = { num = 500, value_size = 4096 }
[[steps]]
label = "4KB"
workloads = ["readrandom"]
threads = [1]
duration = 1
properties = { num = 500, value_size = 4096 }
[[steps]]
label = "16KB"
load = true
workloads = ["fillseq"]
threads = [1]
properties = { num = 500, value_size = 16384 }
[[steps]]
label = "16KB"
workloads = ["readrandom"]
threads = [1]
duration = 3
properties = { num = 500, value_size = 16384 }
"#;

/// A plan of two value sizes in seed 003's shape (a 4 KB load and its
/// run, then a 16 KB load and its run) killed (`kill -9`) in the 16 KB
/// run: the rerun made the store again with the config's first load, of
/// 4 KB values, and recorded the 16 KB run on it (4,112 bytes a read).
/// Now the store is made again by the load that made it, the 16 KB one,
/// and the step's record names that load in `before`.
#[test]
fn a_store_is_made_again_by_the_load_that_made_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("labels.toml"), LABELS).unwrap();
    let args = ["plan", "run", "labels.toml", "--results", "r.jsonl"];
    let (mut plan, lines) = spawn(dir, &args.map(String::from));
    let marker = dir.join(".r.jsonl.in-progress");
    let mut step = None;
    let in_run = wait_for(Duration::from_secs(120), || {
        let named =
            std::fs::read_to_string(&marker).is_ok_and(|m| m.contains("c/003-run-readrandom-16KB"));
        step = child_running(plan.id() as i32, "bench").filter(|_| named);
        step.is_some()
    });
    let _ = plan.kill();
    let _ = plan.wait();
    assert!(in_run, "never in the 16 KB run: {:?}", rest(&lines));
    // The step's kvperf dies with the plan (PR_SET_PDEATHSIG), and its
    // store lock with it.
    let step = step.unwrap();
    assert!(wait_for(Duration::from_secs(30), || argv(step).is_empty()));
    let out = kvperf(dir, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("making it again with c/002-load-fillseq-16KB"),
        "{}",
        out.stderr
    );
    let text = std::fs::read_to_string(dir.join("r.jsonl")).unwrap();
    let run: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["step"]["id"] == "c/003-run-readrandom-16KB-t1-r1")
        .unwrap();
    let remade = run["before"][0].to_string();
    assert!(
        remade.contains("fillseq") && remade.contains("--value_size=16384"),
        "{remade}"
    );
    let totals = run["output"]["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "readrandom")
        .map(|m| m["db_bench"]["totals"].clone())
        .unwrap();
    let per_read = totals["bytes"].as_f64().unwrap() / totals["reads"].as_f64().unwrap();
    assert!(per_read >= 16384.0, "{per_read} bytes a read");
}

/// An interrupt after the last step, while the plan stops its server:
/// "plan complete", exit 0, and no report (an earlier one left as it
/// was), no word of it. Now exit 3, saying no report was made.
#[test]
fn an_interrupt_after_the_last_step_says_the_report_was_not_made() {
    if !have_redis("pass16_plan::an_interrupt_after_the_last_step") {
        return;
    }
    // The plan waits for its `server stop` child, held stopped while the
    // plan is interrupted; a stop missed (ended before it was held) is
    // tried again.
    for _ in 0..5 {
        let tmp = tempfile::tempdir().unwrap();
        if let Some(out) = interrupted_while_stopping(tmp.path()) {
            assert_eq!(out.0, Some(3), "{}", out.1);
            assert!(out.1.contains("no report was made"), "{}", out.1);
            assert!(!out.1.contains("report: "), "{}", out.1);
            assert!(!tmp.path().join("r-report").exists());
            let pid_file = tmp.path().join("r-servers/c/redis/redis.pid");
            assert!(!pid_file.exists(), "redis left running");
            return;
        }
    }
    panic!("the plan's server stop was never held");
}

/// A one-step Redis plan in `dir`, interrupted while its `server stop`
/// child is held stopped: (exit code, stderr), or None if the stop ended
/// before it could be held.
fn interrupted_while_stopping(dir: &Path) -> Option<(Option<i32>, String)> {
    let port = common::server::free_port();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "name = \"stopping\"\ndriver = \"ycsb\"\nengine = \"redis\"\n[properties]\nrecordcount = 100\n\
             operationcount = 100\n[[configs]]\nname = \"c\"\nservers = [{{ name = \"redis\", port = {port} }}]\n\
             [[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\n"
        ),
    )
    .unwrap();
    let args = ["plan", "run", "p.toml", "--results", "r.jsonl"].map(String::from);
    let (mut plan, lines) = spawn(dir, &args);
    let pid = plan.id() as i32;
    let mut held = None;
    // Polled often: the stop lasts a tenth of a second or so.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while held.is_none() && std::time::Instant::now() < deadline {
        if plan.try_wait().unwrap().is_some() {
            break;
        }
        let Some(stop) = child_running(pid, "server").filter(|&p| argv(p).contains(&"stop".into()))
        else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        // SAFETY: the plan's own child, not yet reaped (the plan waits).
        unsafe { libc::kill(stop, libc::SIGSTOP) };
        wait_for(Duration::from_secs(10), || {
            matches!(state(stop), Some('T' | 'Z') | None)
        });
        held = (state(stop) == Some('T')).then_some(stop);
        if held.is_none() {
            break;
        }
    }
    let Some(stop) = held else {
        let _ = wait_within(&mut plan, Duration::from_secs(60), "a plan");
        return None;
    };
    // SAFETY: the plan this test started, then its held child.
    unsafe {
        libc::kill(pid, libc::SIGINT);
        libc::kill(stop, libc::SIGCONT);
    }
    let status = wait_within(
        &mut plan,
        Duration::from_secs(60),
        "a plan stopping its server",
    );
    Some((status.code(), rest(&lines).join("\n")))
}

/// Whether redis-server is installed; if not, the SKIPPED line for `test`.
fn have_redis(test: &str) -> bool {
    let have = Command::new("sh")
        .args(["-c", "command -v redis-server"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        common::skip_unless_ci(test, "no redis-server here (apt-get install redis-server)");
    }
    have
}

/// A config's step killed (`kill -9`) while it changed its store, then a
/// rerun whose config's servers cannot start (their port taken): its
/// steps were recorded as failed and the next config's steps ran, whose
/// step marker replaced and removed the one saying the store must be made
/// again; the rerun after ran the step on a store no record describes (a
/// Redis of kvperf's, without persistence: "holds no redis store", and the
/// study could not resume). Now the plan stops there with the marker
/// kept, and the next rerun makes the store again.
#[test]
fn a_store_to_make_again_is_not_forgotten_while_its_servers_cannot_start() {
    if !have_redis("pass16_plan::a_store_to_make_again_is_not_forgotten") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let port = common::server::free_port();
    std::fs::write(
        dir.join("u.toml"),
        format!(
            "name = \"unserved\"\ndriver = \"ycsb\"\n[properties]\nrecordcount = 100\n\
             operationcount = 1000000000000\nmaxexecutiontime = 2\n[[configs]]\nname = \"c\"\n\
             engine = \"redis\"\nservers = [{{ name = \"redis\", port = {port} }}]\n[[configs]]\n\
             name = \"d\"\nengine = \"null\"\n[[steps]]\nload = true\nworkloads = [\"a\"]\n\
             threads = [1]\n[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\n"
        ),
    )
    .unwrap();
    let args = ["plan", "run", "u.toml", "--results", "r.jsonl"];
    let (mut plan, lines) = spawn(dir, &args.map(String::from));
    let marker = dir.join(".r.jsonl.in-progress");
    let names_c1 = || std::fs::read_to_string(&marker).is_ok_and(|m| m.contains("c/001-run-c"));
    let mut step = None;
    let in_run = wait_for(Duration::from_secs(120), || {
        step = child_running(plan.id() as i32, "run").filter(|_| names_c1());
        step.is_some()
    });
    let _ = plan.kill();
    let _ = plan.wait();
    // The plan's Redis outlives it, as a killed plan's server does.
    let stopped = kvperf(
        dir,
        &["server", "stop", "redis", "--dir", "r-servers/c/redis"],
    );
    assert!(in_run, "never in c's run: {:?}", rest(&lines));
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    let step = step.unwrap();
    assert!(wait_for(Duration::from_secs(30), || argv(step).is_empty()));
    let taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let out = kvperf(dir, &args);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(names_c1(), "the step marker is gone: {}", out.stderr);
    drop(taken);
    let out = kvperf(dir, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("making it again with c/000-load-a"),
        "{}",
        out.stderr
    );
}
