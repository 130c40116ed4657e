//! Hostile cases: ownership (docs/reliability.md, "Ownership is proved").
//! kvperf writes into, renames in or replaces only what it can prove it
//! made: a data directory that was absent or empty when kvperf first used
//! it (then marked), an output file that carries kvperf's exact signature.
//! A name an engine also uses, or a first line that starts like kvperf's,
//! is no proof.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{self, assert_input_error, kvperf, run_null, workload};

/// Makes something at a path (a link, a directory...).
type Make<'a> = &'a dyn Fn(&Path);

/// Every entry of `dir` with its bytes (directories as `<dir>`).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let bytes = if meta.is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                format!("<{:?}>", meta.file_type()).into_bytes()
            };
            (name, bytes)
        })
        .collect()
}

/// The issue's directory: a user's log and notes.
fn users_directory(at: &Path) {
    std::fs::create_dir(at).unwrap();
    std::fs::write(at.join("app.log"), "x\n").unwrap();
    std::fs::write(at.join("notes.txt"), "n\n").unwrap();
}

#[test]
fn a_users_directory_named_like_a_store_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    users_directory(&d);
    std::fs::write(d.join("LOG"), "my log\n").unwrap();
    let before = snapshot(&d);
    let wa = workload("a");
    for args in [
        vec!["load", "-P", &wa, "-p", "recordcount=100", "--db", "d"],
        vec!["run", "-P", &wa, "-p", "operationcount=10", "--db", "d"],
        vec!["settle", "--db", "d"],
    ] {
        let out = kvperf(tmp.path(), &args);
        assert_input_error(&out, "--db 'd' holds files kvperf did not create");
        assert!(
            out.stderr.contains("a rocksdb store, it seems"),
            "says which engine's files it seems to hold: {}",
            out.stderr
        );
        assert_eq!(
            snapshot(&d),
            before,
            "{args:?} left the directory as it was"
        );
    }
    // db_bench's own store flag does not make it kvperf's either.
    let out = kvperf(
        tmp.path(),
        &[
            "bench",
            "--benchmarks=readrandom",
            "--use_existing_db=1",
            "--num=10",
            "--db=d",
        ],
    );
    assert_input_error(&out, "kvperf did not create");
    assert_eq!(snapshot(&d), before);
}

#[test]
fn a_plan_refuses_a_users_directory_before_its_first_step() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    users_directory(&d);
    let before = snapshot(&d);
    let db = format!("mine={}", d.display());
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            "quickstart",
            "--scale",
            "0.01",
            "--db",
            &db,
            "--results",
            "r.jsonl",
        ],
    );
    assert_input_error(&out, "config 'mine': --db '");
    assert!(
        out.stderr.contains("holds files kvperf did not create"),
        "{}",
        out.stderr
    );
    assert!(!tmp.path().join("r.jsonl").exists(), "nothing ran");
    assert_eq!(snapshot(&d), before);
}

#[test]
fn a_store_someone_else_made_is_never_adopted_nor_written() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("foreign");
    {
        let db = rocksdb::DB::open_default(&foreign).unwrap();
        db.put(b"user6284781860667377211", b"theirs").unwrap();
    }
    let before = snapshot(&foreign);
    let wc = workload("c");
    // `run` opens in "use what is there" mode: it used to adopt the store,
    // writing its marker and RocksDB's LOG, MANIFEST and OPTIONS into it.
    let out = kvperf(
        tmp.path(),
        &[
            "run",
            "-P",
            &wc,
            "-p",
            "recordcount=1",
            "-p",
            "operationcount=1",
            "--db",
            "foreign",
        ],
    );
    assert_input_error(&out, "(a rocksdb store, it seems: '");
    assert_eq!(snapshot(&foreign), before, "not a byte written");
}

#[test]
fn a_marker_cut_short_by_a_full_disk_is_repaired_and_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    let load = |dir: &str| {
        kvperf(
            tmp.path(),
            &["load", "-P", &wa, "-p", "recordcount=50", "--db", dir],
        )
    };
    // An empty marker (the issue's full disk) and one cut mid-word.
    for (dir, partial) in [("empty", ""), ("cut", "rocksdb\ncreated by kv")] {
        let d = tmp.path().join(dir);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join(".kvperf-data"), partial).unwrap();
        let out = load(dir);
        assert_eq!(out.code, 0, "{dir}: {}", out.stderr);
        let marker = std::fs::read_to_string(d.join(".kvperf-data")).unwrap();
        assert!(
            marker.starts_with("rocksdb\ncreated by kvperf "),
            "repaired: {marker:?}"
        );
        assert_eq!(load(dir).code, 0, "and reused");
    }
    // Beside a user's file a marker cut short proves nothing.
    let d = tmp.path().join("theirs");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join(".kvperf-data"), "").unwrap();
    std::fs::write(d.join("thesis.tex"), "mine").unwrap();
    let before = snapshot(&d);
    assert_input_error(&load("theirs"), "cut short");
    assert_eq!(snapshot(&d), before);
}

#[test]
fn a_marker_that_is_a_link_a_directory_or_a_users_file_is_no_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let wa = workload("a");
    // A user's file that reads like a marker, elsewhere.
    let lookalike = tmp.path().join("lookalike");
    std::fs::write(&lookalike, "rocksdb\ncreated by kvperf 0.1.0\n").unwrap();
    let cases: [(&str, Make, &str); 4] = [
        (
            "link",
            &|m| std::os::unix::fs::symlink(&lookalike, m).unwrap(),
            "is a symbolic link",
        ),
        (
            "dangling",
            &|m| std::os::unix::fs::symlink(tmp.path().join("nowhere"), m).unwrap(),
            "is a symbolic link",
        ),
        (
            "dir",
            &|m| std::fs::create_dir(m).unwrap(),
            "is a directory",
        ),
        (
            "hard",
            &|m| std::fs::hard_link(&lookalike, m).unwrap(),
            "has 2 hard links",
        ),
    ];
    for (name, make, says) in cases {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        make(&d.join(".kvperf-data"));
        let before = snapshot(&d);
        let out = kvperf(
            tmp.path(),
            &["load", "-P", &wa, "-p", "recordcount=10", "--db", name],
        );
        assert_input_error(&out, says);
        assert_eq!(snapshot(&d), before, "{name}");
    }
    assert!(!tmp.path().join("nowhere").exists());
    assert_eq!(
        std::fs::read(&lookalike).unwrap(),
        b"rocksdb\ncreated by kvperf 0.1.0\n"
    );
}

#[test]
fn output_files_that_only_begin_like_kvperfs_are_a_users() {
    let tmp = tempfile::tempdir().unwrap();
    // The issue's notes, and a first line one word from kvperf's own.
    for (name, theirs) in [
        ("notes.md", "# kvperf notes\nmine\n"),
        ("close.txt", "# kvperf 0.1.0 (my notes) run\nmine\n"),
    ] {
        std::fs::write(tmp.path().join(name), theirs).unwrap();
        let out = run_null(
            tmp.path(),
            "a",
            &["-p", "operationcount=10", "--output", name],
        );
        assert_input_error(&out, "is not a kvperf text result");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(name)).unwrap(),
            theirs
        );
    }
    // kvperf's own text result is still replaced.
    let out = run_null(
        tmp.path(),
        "a",
        &["-p", "operationcount=10", "--output", "mine.txt"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let again = run_null(
        tmp.path(),
        "a",
        &["-p", "operationcount=10", "--output", "mine.txt"],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
}

#[test]
fn a_report_directory_of_files_that_begin_like_kvperfs_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_null(
        tmp.path(),
        "a",
        &[
            "-p",
            "operationcount=10",
            "--format",
            "json",
            "--output",
            "r.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let header = "config,workload,threads,repeats,ops_per_sec,ops_min,ops_median,ops_max,";
    for (file, theirs, says) in [
        (
            "report.md",
            "# kvperf report: my thoughts\n",
            "is not a kvperf report",
        ),
        (
            "report.csv",
            &*format!("{header}my_column\n1,2\n"),
            "is not a kvperf report table",
        ),
        (
            "report.html",
            "<!DOCTYPE html>\n<title>kvperf report: my page</title>\n",
            "is not a kvperf HTML report",
        ),
    ] {
        let dir = tmp.path().join(format!("rep-{file}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(file), theirs).unwrap();
        let shown = dir.display().to_string();
        let out = kvperf(tmp.path(), &["report", "r.json", "--out", &shown]);
        assert_input_error(&out, says);
        assert_eq!(std::fs::read_to_string(dir.join(file)).unwrap(), theirs);
    }
    // A report kvperf wrote is replaced by the next one.
    for _ in 0..2 {
        let out = kvperf(tmp.path(), &["report", "r.json", "--out", "mine"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
}

#[test]
fn a_report_file_db_bench_wrote_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    // db_bench's own `--report_file`, from a real run of the user's.
    let theirs = "secs_elapsed,interval_qps\n1,181234\n2,179102\n";
    std::fs::write(tmp.path().join("report.csv"), theirs).unwrap();
    let bench = |file: &str| {
        let flag = format!("--report_file={file}");
        kvperf(
            tmp.path(),
            &[
                "bench",
                "--engine=null",
                "--benchmarks=fillrandom",
                "--num=100",
                "--report_interval_seconds=1",
                &flag,
            ],
        )
    };
    assert_input_error(&bench("report.csv"), "--report_file 'report.csv'");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("report.csv")).unwrap(),
        theirs
    );
    // kvperf's own is replaced by the next run.
    for _ in 0..2 {
        let out = bench("mine.csv");
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let mine = std::fs::read_to_string(tmp.path().join("mine.csv")).unwrap();
    assert!(
        mine.starts_with("secs_elapsed,interval_qps\n# kvperf-file/1 "),
        "{mine}"
    );
}

#[test]
fn a_results_file_holding_only_the_start_of_json_is_a_users() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"tiny\"\ndriver = \"ycsb\"\nengine = \"null\"\n[properties]\nrecordcount = 10\noperationcount = 10\n[[configs]]\nname = \"c\"\n[[steps]]\nworkloads = [\"c\"]\nthreads = [1]\n",
    )
    .unwrap();
    for theirs in ["{", "{\"a\":1}", "{\"kvperf_res"] {
        let results = tmp.path().join("k.jsonl");
        std::fs::write(&results, theirs).unwrap();
        let out = common::plan_run(tmp.path(), &plan, &results);
        assert_input_error(&out, "is not a kvperf results file");
        assert_eq!(std::fs::read_to_string(&results).unwrap(), theirs);
    }
}

/// The step marker beside a plan's results replaced while its step runs
/// (by a user's file, or a link to one): when the step ends kvperf
/// removes only the marker it wrote, so the user's file (and a link's
/// target) stay as they were, and the plan stops in one line naming the
/// path, exit 2 (issue 44 follow-up: `InProgress::end` removed whatever
/// stood at the marker's path).
#[test]
fn the_step_marker_is_removed_only_when_it_is_kvperfs() {
    let plan_text = r#"name = "marked"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 100
operationcount = 1000000000
maxexecutiontime = 4
[[configs]]
name = "c"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["a"]
threads = [1]
"#;
    let users = b"my notes, kept beside the results\n";
    for link in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("marked.toml"), plan_text).unwrap();
        let marker = dir.join(".k.jsonl.in-progress");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
            .args(["plan", "run", "marked.toml", "--results", "k.jsonl"])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The run step's marker (the load's ends at once).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !std::fs::read_to_string(&marker).is_ok_and(|t| t.contains("-run-")) {
            assert!(child.try_wait().unwrap().is_none(), "the plan ended first");
            assert!(std::time::Instant::now() < deadline, "no run step marker");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let theirs = dir.join("notes.txt");
        std::fs::write(&theirs, users).unwrap();
        let put = dir.join("put-in-place");
        if link {
            std::os::unix::fs::symlink(&theirs, &put).unwrap();
        } else {
            std::fs::write(&put, users).unwrap();
        }
        std::fs::rename(&put, &marker).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = if link { "a link" } else { "a user's file" };
        let meta = std::fs::symlink_metadata(&marker)
            .unwrap_or_else(|e| panic!("{what} at the marker's path was removed ({e}): {stderr}"));
        assert_eq!(meta.file_type().is_symlink(), link, "{what}");
        assert_eq!(std::fs::read(&marker).unwrap(), users, "{what}");
        assert_eq!(std::fs::read(&theirs).unwrap(), users, "{what}");
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("kvperf: ")
                && last.contains("'.k.jsonl.in-progress'")
                && last.contains("not the step marker kvperf wrote"),
            "{what}: {stderr}"
        );
    }
}

/// Whether this machine can fetch a RocksDB release (the fetch script's
/// tools); says SKIPPED otherwise.
#[cfg(feature = "rocksdb")]
pub(crate) fn can_fetch_a_release(test: &str) -> bool {
    let tools = std::process::Command::new("bash")
        .args(["-c", "command -v mvn unzip sha256sum flock"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !tools {
        common::skip_unless_ci(test, "no mvn, unzip, sha256sum or flock here");
    }
    tools
}

/// `run -p rocksdb.version=V` with `KVPERF_CACHE=cache` in `dir`.
#[cfg(feature = "rocksdb")]
pub(crate) fn run_on_release(dir: &Path, cache: &Path) -> common::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["run", "--engine", "rocksdb", "-P", &workload("c")])
        .args(["-p", "recordcount=10", "-p", "operationcount=10"])
        .args([
            "-p",
            "rocksdb.version=10.2.1",
            "-p",
            "rocksdb.format_version=6",
        ])
        .args(["--db", "d"])
        .env("KVPERF_CACHE", cache)
        .current_dir(dir)
        .output()
        .unwrap();
    common::Output::from(out)
}

/// Pass 5: a directory of the user's where a RocksDB release's library
/// is cached (`$KVPERF_CACHE/rocksdb/10.2.1` holding notes, without the
/// library) was removed whole (`rm -rf`) and replaced by the fetched
/// release. Now only a directory holding nothing but what the fetch puts
/// there is replaced; this one is refused in one line, left as it was.
#[cfg(feature = "rocksdb")]
#[test]
fn a_users_directory_where_a_release_is_cached_is_never_removed() {
    if !can_fetch_a_release("a_users_directory_where_a_release_is_cached_is_never_removed") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("cache/rocksdb/10.2.1");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::write(release.join("notes.txt"), "my notes").unwrap();
    let out = run_on_release(tmp.path(), &tmp.path().join("cache"));
    assert_input_error(
        &out,
        "holds no finished RocksDB release, and kvperf did not make it",
    );
    assert_eq!(
        std::fs::read_to_string(release.join("notes.txt")).unwrap(),
        "my notes"
    );
}
