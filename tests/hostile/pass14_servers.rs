//! The fourteenth hostile pass, servers: what pass 14's probe found in
//! their paths and settings (docs/reliability.md, "Pass 14: servers'
//! paths and settings"). Each case failed on 99fcefe. The servers here
//! are stand-ins that fail (no real server starts, on the old code
//! either): what is checked is that kvperf refuses before any script runs,
//! and that nothing of the user's changes.

use std::path::Path;

use super::pass10_servers::kvperf_with;
use super::pass12_servers::{path_with, snapshot, stand_in};
use crate::common;

/// Stand-ins for every server program and install tool, each failing:
/// Redis's, Java, Maven, Go, and a PostgreSQL bin directory whose initdb
/// fails. The environment that puts them first, with an empty cache.
fn failing_servers(work: &Path) -> Vec<(String, String)> {
    let bin = work.join("bin");
    for tool in ["redis-server", "redis-cli", "java", "mvn", "go", "psql"] {
        stand_in(&bin.join(tool), "#!/bin/sh\nexit 1\n");
    }
    let pg = work.join("pgbin");
    stand_in(
        &pg.join("postgres"),
        "#!/bin/sh\necho 'postgres (PostgreSQL) 15.0'\n",
    );
    stand_in(
        &pg.join("initdb"),
        "#!/bin/sh\necho stand-in initdb\nexit 1\n",
    );
    vec![
        ("PATH".into(), path_with(&bin)),
        (
            "KVPERF_CACHE".into(),
            work.join("cache").display().to_string(),
        ),
        ("KVPERF_PG_BIN".into(), pg.display().to_string()),
    ]
}

fn start(work: &Path, cwd: &Path, server: &str, dir: &str, extra: &[&str]) -> common::Output {
    let env = failing_servers(work);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let port = common::server::free_port().to_string();
    let storage = format!("cassandra_storage_port={}", common::server::free_port());
    let mut args = vec!["server", "start", server, "--dir", dir, "--port", &port];
    if server == "cassandra" {
        args.extend(["-p", &storage]);
    }
    args.extend_from_slice(extra);
    kvperf_with(cwd, &args, &env)
}

/// A user's directory `u` as pass 14's probe had it: a SQLite database
/// FerretDB opened (and switched to WAL) through `--dir 'u/#x'`, and notes.
fn users_dir(work: &Path) -> std::path::PathBuf {
    let u = work.join("u");
    std::fs::create_dir_all(&u).unwrap();
    std::fs::write(u.join("mine.sqlite"), "SQLite format 3\0 my data").unwrap();
    std::fs::write(u.join("notes.txt"), "my notes").unwrap();
    u
}

/// A server directory whose path holds a character a server reads as
/// syntax where kvperf passes it (FerretDB's SQLite URL `file:DIR/sqlite/`
/// took 'u/#x' as the user's `u/`; PostgreSQL's unix_socket_directories a
/// list, pg_ctl's shell command, Cassandra's YAML, XML, URL and class
/// path) is refused in one line, exit 2, for every server, before any
/// script runs: nothing is made, the user's directory is as it was.
#[test]
fn a_server_directory_whose_path_is_syntax_is_refused_for_every_server() {
    let work = tempfile::tempdir().unwrap();
    let u = users_dir(work.path());
    let before = snapshot(&u);
    let forms = [
        "u/#x",
        "u/?x",
        "u/%2e",
        "u,x",
        "u/a:b",
        "u/a b",
        "u/it's",
        "u/a\"b",
        "u/a\\b",
        "u/$(touch gotcha)",
        "u/a`b",
        "u/a&b",
        "u/a<b",
        "u/a\nb",
        "u/a\tb",
    ];
    for server in ["redis", "postgres", "cassandra", "ferretdb"] {
        for form in forms {
            let out = start(work.path(), work.path(), server, form, &[]);
            common::assert_input_error(&out, "which a server reads as syntax");
            assert!(
                out.stderr.contains("--dir '"),
                "{server} {form:?}: {}",
                out.stderr
            );
            assert!(!work.path().join(form).exists(), "{server} {form:?}: made");
        }
    }
    // The same path reached from a working directory that holds the
    // character, the --dir itself plain.
    let cwd = work.path().join("c#d");
    std::fs::create_dir_all(&cwd).unwrap();
    for server in ["postgres", "ferretdb"] {
        let out = start(work.path(), &cwd, server, "srv", &[]);
        common::assert_input_error(&out, "which a server reads as syntax");
        assert!(!cwd.join("srv").exists(), "{server}: made");
    }
    assert_eq!(snapshot(&u), before, "the user's directory changed");
    assert!(!work.path().join("gotcha").exists());
}

/// A setting that puts PostgreSQL's files outside --dir is refused, as
/// pass 8 refused RocksDB's wal_dir: each such key of pg_extra_conf in
/// every spelling (case, spaces, no '=', a later line), and a line of its
/// own smuggled into a setting kvperf quotes (pg_shared_buffers took
/// "128MB'\nexternal_pid_file='...", and PostgreSQL overwrote the user's
/// file with its pid). One line, exit 2, nothing made.
#[test]
fn a_postgres_setting_that_writes_outside_the_directory_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let u = users_dir(work.path());
    let before = snapshot(&u);
    let file = u.join("notes.txt").display().to_string();
    let dir = u.display().to_string();
    let extra = |text: String| ("pg_extra_conf", text);
    let cases = [
        extra(format!("external_pid_file='{file}'")),
        extra(format!("  External_Pid_File = '{file}'")),
        extra(format!("work_mem=4MB\nexternal_pid_file '{file}'")),
        extra(format!(
            "logging_collector=on\nlog_directory='{dir}'\nlog_filename='notes.txt'"
        )),
        extra(format!("log_filename='{file}'")),
        extra(format!("data_directory='{dir}'")),
        extra(format!("hba_file='{file}'")),
        extra(format!("ident_file='{file}'")),
        extra(format!("config_file='{file}'")),
        extra(format!("unix_socket_directories='{dir}'")),
        extra(format!("stats_temp_directory='{dir}'")),
        extra(format!("include_if_exists='{file}'")),
        extra(format!("archive_mode=on\narchive_command='cp %p {dir}/%f'")),
        extra("listen_addresses='*'".into()),
        (
            "pg_shared_buffers",
            format!("128MB'\nexternal_pid_file='{file}"),
        ),
        ("pg_sync_commit", format!("on'\nexternal_pid_file='{file}")),
        ("pg_fsync", format!("on'\nexternal_pid_file='{file}")),
        (
            "pg_max_connections",
            format!("100\nexternal_pid_file='{file}'"),
        ),
    ];
    for (i, (key, value)) in cases.iter().enumerate() {
        let setting = format!("{key}={value}");
        let srv = format!("pg{i}");
        let out = start(
            work.path(),
            work.path(),
            "postgres",
            &srv,
            &["-p", &setting],
        );
        common::assert_input_error(&out, &format!("-p {key}: "));
        assert!(!work.path().join(&srv).exists(), "{setting:?}: made");
    }
    assert_eq!(snapshot(&u), before, "the user's directory changed");
}

/// A plan refuses both before its first step: a config's server
/// directory whose path is syntax (beside a results file in `r#x/`), and
/// a config's server setting that writes outside it. Nothing runs, no
/// results file, no server directory.
#[test]
fn a_plan_refuses_a_servers_path_or_setting_before_its_first_step() {
    let work = tempfile::tempdir().unwrap();
    let env = failing_servers(work.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let plan = |engine: &str, server: &str| {
        format!(
            "name = \"p\"\ndriver = \"ycsb\"\nengine = \"{engine}\"\n[properties]\nrecordcount = 10\noperationcount = 10\n\
             [[configs]]\nname = \"c\"\nservers = [{server}]\n[[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\n"
        )
    };
    let hashed = work.path().join("r#x");
    std::fs::create_dir_all(&hashed).unwrap();
    std::fs::write(
        work.path().join("path.toml"),
        plan("redis", "{ name = \"redis\" }"),
    )
    .unwrap();
    let results = hashed.join("r.jsonl").display().to_string();
    let out = kvperf_with(
        work.path(),
        &["plan", "run", "path.toml", "--results", &results],
        &env,
    );
    common::assert_input_error(&out, "config 'c': --dir '");
    assert_eq!(
        std::fs::read_dir(&hashed).unwrap().count(),
        0,
        "made something"
    );

    let pid = work.path().join("pid.txt");
    std::fs::write(&pid, "mine").unwrap();
    let server = format!(
        "{{ name = \"postgres\", settings = {{ pg_extra_conf = \"external_pid_file='{}'\" }} }}",
        pid.display()
    );
    std::fs::write(work.path().join("setting.toml"), plan("postgres", &server)).unwrap();
    let out = kvperf_with(
        work.path(),
        &["plan", "run", "setting.toml", "--results", "r2.jsonl"],
        &env,
    );
    common::assert_input_error(&out, "-p pg_extra_conf: 'external_pid_file'");
    assert!(!work.path().join("r2.jsonl").exists(), "a step ran");
    assert!(
        !work.path().join("r2-servers").exists(),
        "a server dir made"
    );
    assert_eq!(std::fs::read_to_string(&pid).unwrap(), "mine");
}

/// PostgreSQL's cluster is begun in a temporary of kvperf's: at the fixed
/// name `pgdata.kvperf-initdb` a user's directory there was removed
/// (`rm -rf`), and a user's `initdb.log` overwritten, when a start made
/// the cluster in kvperf's server directory. Now both are fresh names
/// (mktemp): the user's entries stay as they were, and what a failed
/// initdb began is removed, the user's not.
#[test]
fn postgres_initdb_never_removes_or_overwrites_a_users_entries() {
    let work = common::server::passable_tempdir();
    let u = work.path().join("pg");
    // A first start claims the directory (kvperf's marker), its initdb fails.
    let first = start(work.path(), work.path(), "postgres", "pg", &[]);
    assert_eq!(first.code, 3, "{}", first.stderr);
    assert!(u.join(".kvperf-server").exists(), "{}", first.stderr);
    let temp = u.join("pgdata.kvperf-initdb");
    std::fs::create_dir_all(&temp).unwrap();
    std::fs::write(temp.join("notes.txt"), "my notes").unwrap();
    std::fs::write(u.join("initdb.log"), "my log").unwrap();
    let (before, log) = (snapshot(&temp), snapshot(&u.join("initdb.log")));
    let again = start(work.path(), work.path(), "postgres", "pg", &[]);
    assert_eq!(again.code, 3, "{}", again.stderr);
    assert!(again.stderr.contains("initdb failed"), "{}", again.stderr);
    assert_eq!(snapshot(&temp), before, "the user's directory changed");
    assert_eq!(
        snapshot(&u.join("initdb.log")),
        log,
        "the user's log changed"
    );
    let left: Vec<String> = std::fs::read_dir(&u)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pgdata.kvperf-initdb."))
        .collect();
    // Each failed initdb's log is kept, named in its error; its cluster is gone.
    assert!(
        left.len() == 2 && left.iter().all(|n| n.ends_with(".log")),
        "{left:?}"
    );
}

/// Pass 15: `--dir lnk/../x` where `lnk` is a link: the check read the
/// path as text (`x` beside `lnk`), the scripts' `cd` as the kernel does
/// not, and a link's target may hold the syntax its name does not (pg_ctl's
/// shell ran `$(id>PWN)` from one). The path is now checked as the kernel
/// reads it, and the scripts `cd -P` to that same directory.
#[test]
fn a_server_directory_reached_through_a_link_is_checked_as_the_kernel_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let w = work.join("w");
    std::fs::create_dir_all(work.join("q$(id>PWN)q/sub")).unwrap();
    std::fs::create_dir_all(&w).unwrap();
    std::os::unix::fs::symlink("../q$(id>PWN)q/sub", w.join("lnk")).unwrap();
    for server in ["redis", "postgres", "ferretdb", "cassandra"] {
        let out = start(work, &w, server, "lnk/../x", &[]);
        common::assert_input_error(&out, "holds '$'");
        assert!(
            !work.join("q$(id>PWN)q/x").exists(),
            "{server}: nothing made"
        );
        assert!(!w.join("PWN").exists() && !work.join("PWN").exists());
    }
}
