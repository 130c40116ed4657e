//! The eighth hostile pass, the files side (docs/reliability.md, "Pass 8:
//! files"): engine options that put an engine's files outside kvperf's
//! store, credentials in the spellings the earlier passes did not try,
//! and what becomes of a result when every place it may go refuses it.
//! Each case failed on the main of 2026-11-29 (b17f7e9).

use std::path::Path;

use crate::common::{self, assert_input_error, kvperf, workload};

/// The names and contents of the files in `dir`, sorted.
fn contents(dir: &Path) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), text)
        })
        .collect();
    found.sort();
    found
}

/// `-p rocksdb.options=wal_dir=DIR` (or `db_log_dir`) put RocksDB's
/// write-ahead log (its info LOG) into a directory kvperf did not make,
/// and RocksDB deletes there, on opening, every numbered log it does not
/// need: a user's `000099.log` in that directory was deleted by a `run`
/// (as another store's WAL would be, a production RocksDB's `wal_dir`
/// copied into a benchmark's options). Now refused in one line before
/// anything is written, `--db` untouched, the directory as it was.
#[test]
fn rocksdb_options_that_put_its_files_outside_the_store_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let wa = workload("a");
    let step = |command: &str, option: &str| {
        let options = format!("rocksdb.options={option}={}", theirs.display());
        let args = ["--engine", "rocksdb", "-P", &wa, "--db", "db"];
        let more = ["-p", "recordcount=100", "-p", "operationcount=100"];
        kvperf(
            tmp.path(),
            &[&[command][..], &args, &more, &["-p", &options]].concat(),
        )
    };
    for option in ["wal_dir", "db_log_dir"] {
        let out = step("load", option);
        assert_input_error(&out, "outside --db");
        assert!(out.stderr.contains(option), "{}", out.stderr);
        assert!(!tmp.path().join("db").exists(), "{option}: {}", out.stderr);
        assert_eq!(contents(&theirs), vec![], "{option}: {}", out.stderr);
    }
    // A store kvperf made, then the option on a run, the user's log there.
    let args = ["load", "--engine", "rocksdb", "-P", &wa, "--db", "db"];
    let out = kvperf(
        tmp.path(),
        &[&args[..], &["-p", "recordcount=100"]].concat(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::write(theirs.join("000099.log"), "my notes\n").unwrap();
    let out = step("run", "wal_dir");
    assert_input_error(&out, "outside --db");
    assert_eq!(
        contents(&theirs),
        vec![("000099.log".to_string(), "my notes\n".to_string())]
    );
}

/// `-p wiredtiger.config=log=(path=DIR)` (an absolute path, or one through
/// `..`) put WiredTiger's log files into a directory kvperf did not make,
/// where WiredTiger recovers from and removes the log files it finds: with
/// DIR another WiredTiger store's log directory, a `load` into a new
/// `--db` replayed that store's log into its own and removed its
/// `WiredTigerLog.0000000001`, and the other store no longer opened
/// ("txn-recover: ... WiredTigerLog.0000000001: No such file"). Refused
/// in one line, nothing written.
#[test]
fn a_wiredtiger_log_path_outside_the_store_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let wa = workload("a");
    for config in [
        format!("wiredtiger.config=log=(path={})", theirs.display()),
        "wiredtiger.config=log=(enabled=true,path=../theirs)".to_string(),
    ] {
        let args = ["load", "--engine", "wiredtiger", "-P", &wa, "--db", "db"];
        let more = ["-p", "recordcount=100", "-p", &config];
        let out = kvperf(tmp.path(), &[&args[..], &more].concat());
        assert_input_error(&out, "outside --db");
        assert!(!tmp.path().join("db").exists(), "{config}: {}", out.stderr);
        assert_eq!(contents(&theirs), vec![], "{config}: {}", out.stderr);
    }
}

/// A password given in spellings the earlier passes did not try: in a
/// URL's query or a connection string (`db.url=jdbc:postgresql://h/db?
/// user=u&password=PW`, as YCSB's JDBC binding takes it; `host=h
/// password=PW`), and under Redis's own names for it (`requirepass`,
/// `AUTH`), `pass` and `pw`. Each was printed in the JSON's settings (and
/// on the command line's header).
#[test]
fn a_password_in_a_urls_query_or_under_another_name_is_in_no_output() {
    const PW: &str = "S3cr3t-p8-pw";
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let pairs = [
        format!("db.url=jdbc:postgresql://h/db?user=u&password={PW}&ssl=false"),
        format!("pg.conninfo=host=h password={PW} dbname=d"),
        format!("redis.requirepass={PW}"),
        format!("redis.auth={PW}"),
        format!("redis.pass={PW}"),
        format!("redis.pw={PW}"),
    ];
    for pair in &pairs {
        // On the command line, then in a property file.
        let file = tmp.path().join("p");
        std::fs::write(&file, format!("{pair}\n")).unwrap();
        for given in [["-p", pair.as_str()], ["-P", "p"]] {
            let json = tmp.path().join("r.json");
            let _ = std::fs::remove_file(&json);
            let args = ["run", "--engine", "null", "-P", &wa, "--format", "json"];
            let more = ["-p", "operationcount=100", "--output", "r.json"];
            let out = kvperf(tmp.path(), &[&args[..], &more, &given].concat());
            assert_eq!(out.code, 0, "{pair}: {}", out.stderr);
            let written = std::fs::read_to_string(&json).unwrap();
            for (what, text) in [
                ("stdout", &out.stdout),
                ("stderr", &out.stderr),
                ("JSON", &written),
            ] {
                assert!(
                    !text.contains(PW),
                    "{pair} ({given:?}): {what} shows it:\n{text}"
                );
            }
        }
    }
    // In a plan's properties: its listing and its results.
    let plan = tmp.path().join("plan.toml");
    let props: Vec<String> = pairs
        .iter()
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            format!("{k:?} = {v:?}")
        })
        .collect();
    std::fs::write(
        &plan,
        format!(
            "name = \"p8\"\ndriver = \"ycsb\"\nengine = \"null\"\n[properties]\nrecordcount = 100\noperationcount = 100\n{}\n[[configs]]\nname = \"driver\"\n[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\n",
            props.join("\n")
        ),
    )
    .unwrap();
    let shown = kvperf(tmp.path(), &["plan", "show", "plan.toml"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(!shown.stdout.contains(PW), "plan show:\n{}", shown.stdout);
    assert!(!shown.stderr.contains(PW), "plan show:\n{}", shown.stderr);
    let out = common::plan_run(tmp.path(), &plan, &tmp.path().join("res.jsonl"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = std::fs::read_to_string(tmp.path().join("res.jsonl")).unwrap();
    assert!(!results.contains(PW), "results:\n{results}");
    assert!(!out.stderr.contains(PW), "plan run:\n{}", out.stderr);
}

/// A step's result whose `--output` directory, the working directory, is
/// removed while the window runs, with a `TMPDIR` that is gone (a
/// session's cleaned temporary directory): it could be kept neither
/// beside its destination, nor in the temporary nor the working
/// directory, and was lost ("it could not be kept elsewhere either").
/// Now the home directory is the last place tried, and named.
#[test]
fn a_result_whose_every_directory_is_gone_is_kept_at_home() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let home = tmp.path().join("home");
    std::fs::create_dir(&work).unwrap();
    std::fs::create_dir(&home).unwrap();
    let wa = workload("a");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["run", "--engine", "null", "-P", &wa, "--format", "json"])
        .args([
            "-p",
            "operationcount=1000000000000",
            "-p",
            "status.interval=1",
        ])
        .args(["-s", "--output", "r.json"])
        .current_dir(&work)
        .env("TMPDIR", tmp.path().join("gone"))
        .env("HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let status = line.contains(" sec: ") && line.contains("operations");
        seen.push(line);
        if status {
            break;
        }
    }
    std::fs::remove_dir_all(&work).unwrap();
    // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().unwrap();
    let stderr = seen.join("\n");
    assert_eq!(status.code(), Some(3), "{stderr}");
    let kept: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "kept at home: {stderr}");
    assert!(stderr.contains(&kept[0].display().to_string()), "{stderr}");
    let text = std::fs::read_to_string(&kept[0]).unwrap();
    let out = kvperf::results::step::StepOutput::from_json(&text).unwrap();
    assert_eq!(out.measurements.len(), 1, "{stderr}");
}

/// More client threads than WiredTiger has sessions for (`-threads
/// 1100`; kvperf opens it with session_max=1024) are too many threads, a
/// bad input: one line, exit 2, before the window, as LMDB's too few
/// readers are. It was exit 3 in WiredTiger's words ("thread 942 setup:
/// cannot open a WiredTiger session: ... out of sessions, configured for
/// 1058 (including internal sessions): WT_ERROR"), an engine's failure.
#[test]
fn more_threads_than_wiredtiger_has_sessions_for_are_a_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let args = ["load", "--engine", "wiredtiger", "-P", &wa, "--db", "db"];
    let out = kvperf(
        tmp.path(),
        &[&args[..], &["-p", "recordcount=100"]].concat(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let args = ["run", "--engine", "wiredtiger", "-P", &wa, "--db", "db"];
    let more = ["-p", "recordcount=100", "-p", "operationcount=2000"];
    let out = kvperf(
        tmp.path(),
        &[&args[..], &more, &["-threads", "1100"]].concat(),
    );
    assert_input_error(&out, "more than WiredTiger has sessions for");
}

/// A FIFO at a precondition fill's name (`kvperf-precondition.fill`) is
/// refused for what it is, before it is opened for writing: it was
/// "Invalid argument (os error 22) (the filesystem does not support
/// direct I/O: tmpfs?)", the words of another fault (O_DIRECT refused on
/// the FIFO), and a device there was opened for writing before it was
/// refused.
#[test]
fn a_fifo_at_the_fills_name_is_named_as_one() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path().join("pc");
    std::fs::create_dir(&dir).unwrap();
    let fill = dir.join("kvperf-precondition.fill");
    let c = std::ffi::CString::new(fill.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let args = ["device", "precondition", "pc", "--size", "1MiB"];
    let rounds = ["--round-seconds", "1", "--max-rounds", "1"];
    let out = kvperf(tmp.path(), &[&args[..], &rounds].concat());
    assert_input_error(&out, "is a FIFO");
    assert!(!out.stderr.contains("direct I/O"), "{}", out.stderr);
    let kind = std::fs::symlink_metadata(&fill).unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind));
}

/// Two configs of a plan whose stores would stand in each other's: an
/// LMDB config's `db` inside a RocksDB config's, or one directory for
/// two engines. The first config's steps ran, then the second's load was
/// refused ("holds files kvperf did not create (such as 'sub')", "holds a
/// lmdb store made by kvperf, not rocksdb"): a plan's every data
/// directory is checked before its first step. Now refused then, nothing
/// run or made. Pass 13: two configs of one engine in one directory ran,
/// the second's load emptying the first's store between its steps.
#[test]
fn plan_configs_whose_stores_nest_or_share_a_directory_are_refused_before_the_first_step() {
    for (inner, outer, inner_engine) in [
        ("d/sub", "d", "lmdb"),
        ("d", "d/", "lmdb"),
        ("d", "x/../d/sub", "lmdb"),
        ("d", "x/../d/", "rocksdb"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let at = |d: &str| tmp.path().join(d).display().to_string();
        let plan = tmp.path().join("p.toml");
        std::fs::write(
            &plan,
            format!(
                "name = \"nested\"\ndriver = \"ycsb\"\n[properties]\nrecordcount = 100\noperationcount = 100\n[[configs]]\nname = \"inner\"\nengine = \"{inner_engine}\"\ndb = \"{}\"\n[[configs]]\nname = \"outer\"\nengine = \"rocksdb\"\ndb = \"{}\"\n[[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\n",
                at(inner),
                at(outer)
            ),
        )
        .unwrap();
        std::fs::create_dir(tmp.path().join("x")).unwrap();
        let results = tmp.path().join("r.jsonl");
        let out = common::plan_run(tmp.path(), &plan, &results);
        assert_input_error(&out, "give each config a directory of its own");
        assert!(
            !tmp.path().join("d").exists(),
            "{inner} {outer}: {}",
            out.stderr
        );
        assert!(common::lines(&results).is_empty(), "{}", out.stderr);
    }
}
