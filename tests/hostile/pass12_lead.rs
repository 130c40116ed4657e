//! The twelfth hostile pass, the lead's part (docs/reliability.md, "Pass
//! 12"): a plan interrupted while srun's step ran waited for good when the
//! srun program (`KVPERF_SRUN`, a wrapper script) ignored SIGTERM or left
//! a child holding its stderr. Fails on 990db44.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::pass8_lead::srun_plan;
use super::waits::ended_within;

/// `kvperf plan run PLAN --results r.jsonl` started in `dir` with `env`,
/// its stderr piped.
fn plan_run(dir: &Path, plan: &Path, env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["plan", "run"])
        .arg(plan)
        .args(["--results", "r.jsonl"])
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
    })
}

#[test]
fn an_interrupted_plan_ends_whatever_srun_program_it_waits_for() {
    for (trap, what) in [
        ("", "a wrapper whose child holds srun's stderr"),
        ("trap '' TERM INT\n", "a wrapper ignoring SIGTERM"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let plan = srun_plan(dir.path());
        let srun = dir.path().join("srun");
        std::fs::write(
            &srun,
            format!("#!/bin/sh\n{trap}sleep 1000 &\necho $! > sleep.pid\nwait\n"),
        )
        .unwrap();
        std::fs::set_permissions(&srun, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let srun = srun.to_str().unwrap();
        let mut child = plan_run(dir.path(), &plan, &[("KVPERF_SRUN", srun)]);
        let pid_file = dir.path().join("sleep.pid");
        let until = Instant::now() + Duration::from_secs(120);
        let sleep: i32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break pid;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("{what}: the plan ended ({status}) before srun started");
            }
            assert!(Instant::now() < until, "{what}: srun never started");
            std::thread::sleep(Duration::from_millis(50));
        };
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        // srun's grace (15 s) and its stderr's (5 s), with room for load.
        let (status, stderr) = ended_within(&mut child, Duration::from_secs(90), what);
        assert_eq!(status.code(), Some(3), "{what}: {stderr}");
        let until = Instant::now() + Duration::from_secs(10);
        while !gone(sleep) {
            assert!(
                Instant::now() < until,
                "{what}: srun's child {sleep} left running"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Pass 12: where a RocksDB release's library is cached, a user's
/// directory named `SOURCE` (one of the names the fetch writes) was
/// removed with the unfinished directory (`rm -rf`); a link or a
/// hard-linked file at those names likewise; pass 13: a user's plain file
/// there. A release is put in place whole, so anything there that is no
/// finished release is refused in one line and left as it was.
#[cfg(feature = "rocksdb")]
#[test]
fn a_users_file_at_a_name_a_release_fetch_writes_is_never_removed() {
    use super::ownership::{can_fetch_a_release, run_on_release};
    if !can_fetch_a_release("a_users_file_at_a_name_a_release_fetch_writes_is_never_removed") {
        return;
    }
    for form in ["directory", "hard link", "symbolic link", "file"] {
        let tmp = tempfile::tempdir().unwrap();
        let release = tmp.path().join("cache/rocksdb/10.2.1");
        std::fs::create_dir_all(&release).unwrap();
        let mine = tmp.path().join("mine.txt");
        std::fs::write(&mine, "my notes").unwrap();
        match form {
            "directory" => {
                std::fs::create_dir(release.join("SOURCE")).unwrap();
                std::fs::write(release.join("SOURCE/notes.txt"), "my notes").unwrap();
            }
            "hard link" => std::fs::hard_link(&mine, release.join("SOURCE")).unwrap(),
            "symbolic link" => {
                std::os::unix::fs::symlink(&mine, release.join("librocksdb.so")).unwrap()
            }
            _ => std::fs::write(release.join("SOURCE"), "my notes").unwrap(),
        }
        let out = run_on_release(tmp.path(), &tmp.path().join("cache"));
        crate::common::assert_input_error(&out, "holds no finished RocksDB release");
        let kept = match form {
            "directory" => release.join("SOURCE/notes.txt"),
            "file" => release.join("SOURCE"),
            _ => mine,
        };
        assert_eq!(std::fs::read_to_string(kept).unwrap(), "my notes", "{form}");
    }
}

/// Pass 12 part B: FerretDB rewrites `state/state.json` at every start;
/// a link there (hard or symbolic) to a user's file had it overwritten
/// with FerretDB's state. Refused in one line, exit 2, the file intact.
#[test]
fn a_link_at_ferretdbs_state_file_is_not_written_through() {
    use crate::common::server::Server;
    let Some(ferretdb) = Server::start("ferretdb", "pass12_lead::ferretdb_state_link") else {
        return;
    };
    let stopped = ferretdb.action("stop");
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    let state = ferretdb.server_dir().join("state/state.json");
    let mine = ferretdb.dir().join("notes.txt");
    std::fs::write(&mine, "my notes").unwrap();
    for hard in [true, false] {
        std::fs::remove_file(&state).unwrap();
        if hard {
            std::fs::hard_link(&mine, &state).unwrap();
        } else {
            std::os::unix::fs::symlink(&mine, &state).unwrap();
        }
        let out = ferretdb.action("start");
        crate::common::assert_input_error(&out, "state.json' is not kvperf's");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes");
    }
}

/// Pass 12: a plan's results file replaced by a copy as an editor saves
/// it, while the plan runs: every later step went into the unnamed file
/// and the plan said it completed. Pass 13: the file truncated in place
/// (`: > r.jsonl`) lost the records before, the plan saying it completed
/// with all its steps. Now the step fails, exit 3, its record kept apart
/// and named in the last line, even when the report cannot be written
/// either (its failure had taken the step's place).
#[test]
fn a_results_file_replaced_or_cut_while_a_plan_runs_is_said_with_the_record_kept() {
    for (how, said) in [
        ("replaced", "was replaced or removed while the plan ran"),
        ("truncated", "was changed in place while the plan ran"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("p.toml"),
            "name = \"p\"\ndriver = \"ycsb\"\nsettle = false\n[properties]\nrecordcount = 100\noperationcount = 100000000\nmaxexecutiontime = 2\n[[configs]]\nname = \"n\"\nengine = \"null\"\n[[steps]]\nworkloads = [\"a\", \"c\", \"b\"]\nthreads = [1]\n",
        )
        .unwrap();
        let mut child = plan_run(dir.path(), Path::new("p.toml"), &[]);
        let results = dir.path().join("r.jsonl");
        let until = Instant::now() + Duration::from_secs(120);
        while std::fs::metadata(&results).map_or(0, |m| m.len()) == 0 {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{how}: the plan ended first"
            );
            assert!(Instant::now() < until, "{how}: no first record");
            std::thread::sleep(Duration::from_millis(20));
        }
        if how == "replaced" {
            // An editor's save: a copy renamed over the file.
            let copy = dir.path().join("copy");
            std::fs::copy(&results, &copy).unwrap();
            std::fs::rename(&copy, &results).unwrap();
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&results)
                .unwrap()
                .set_len(0)
                .unwrap();
        }
        // The report goes too.
        let _ = std::fs::remove_dir_all(dir.path().join("r-report"));
        let (status, stderr) = ended_within(&mut child, Duration::from_secs(120), how);
        assert_eq!(status.code(), Some(3), "{how}: {stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.contains(said) && last.contains("record is kept in"),
            "{how}: {stderr}"
        );
        let kept = last
            .rsplit("kept in '")
            .next()
            .unwrap()
            .trim_end_matches('\'');
        assert!(std::fs::read_to_string(kept).unwrap().contains("\"run\""));
        let _ = std::fs::remove_file(kept);
    }
}

/// Pass 13: a FIFO at a server's pid file left the start's launcher
/// blocked on it for good, to start an unrecorded server whenever
/// something read it; a FIFO at its log stalled the start 120 s. Both are
/// refused in one line, exit 2, before anything starts.
#[test]
fn a_fifo_at_a_servers_pid_or_log_file_is_refused() {
    use crate::common::server::Server;
    use std::os::unix::fs::FileTypeExt;
    let Some(redis) = Server::start("redis", "pass12_lead::fifo_at_pid_or_log") else {
        return;
    };
    let stopped = redis.action("stop");
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    for file in ["redis.pid", "redis.log"] {
        let fifo = redis.server_dir().join(file);
        let _ = std::fs::remove_file(&fifo);
        let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let out = redis.action("start");
        crate::common::assert_input_error(&out, "is not kvperf's");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        std::fs::remove_file(&fifo).unwrap();
    }
}
