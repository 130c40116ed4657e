//! The tenth hostile pass, servers and what they inherit (docs/reliability.md,
//! "Pass 10: servers"). Each case failed on main of 2026-11-29 (cc1ad35).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

/// `server status` and `server stop` of redis on `dir` (in `work`) both
/// say "not running" and leave `other`, a process its pid file names, as
/// it was.
pub(super) fn status_and_stop_leave_alone(
    work: &Path,
    dir: &Path,
    port: &str,
    other: &mut std::process::Child,
    what: &str,
) {
    let shown = dir.display().to_string();
    let ask = |action: &str| {
        kvperf_with(
            work,
            &["server", action, "redis", "--dir", &shown, "--port", port],
            &[],
        )
    };
    let status = ask("status");
    let stop = ask("stop");
    assert_eq!(
        other.try_wait().unwrap(),
        None,
        "{what} was signalled: {}",
        stop.stdout
    );
    assert!(
        status.stdout.contains("redis: not running"),
        "{}",
        status.stdout
    );
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(
        stop.stdout.contains("redis: not running"),
        "{}",
        stop.stdout
    );
}

/// `kvperf ARGS` in `dir` with `env` added to the environment.
pub(super) fn kvperf_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> common::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("kvperf runs");
    common::Output::from(out)
}

/// The live process `pid`'s command line, if it runs.
fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&raw).replace('\0', " "))
}

/// Polls `done` every 50 ms until it holds or `limit` passes.
pub(super) fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// FerretDB reads each flag kvperf does not give from `FERRETDB_*`: with
/// `FERRETDB_MODE=proxy` and `FERRETDB_PROXY_ADDR` (a user's settings for
/// their own FerretDB) kvperf's server forwarded every request to the
/// user's server, and a load "into kvperf's server" wrote its records into
/// the user's. The server now gets none of them (a note says so).
#[cfg(feature = "mongodb")]
#[test]
fn a_users_ferretdb_variables_do_not_send_kvperfs_server_elsewhere() {
    let test = "pass10_servers::ferretdb_variables";
    let Some(users) = common::server::Server::start("ferretdb", test) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("kvperfs");
    let shown = dir.display().to_string();
    let port = common::server::free_port().to_string();
    let proxy = format!("127.0.0.1:{}", users.port);
    let env = [
        ("FERRETDB_MODE", "proxy"),
        ("FERRETDB_PROXY_ADDR", proxy.as_str()),
    ];
    let start = kvperf_with(
        work.path(),
        &[
            "server", "start", "ferretdb", "--dir", &shown, "--port", &port,
        ],
        &env,
    );
    assert_eq!(start.code, 0, "{}", start.stderr);
    let a = common::workload("a");
    let at = format!("mongodb.port={port}");
    let load = kvperf_with(
        work.path(),
        &[
            "load",
            "--engine",
            "mongodb",
            "-P",
            &a,
            "-p",
            &at,
            "-p",
            "recordcount=30",
        ],
        &env,
    );
    let stop = kvperf_with(
        work.path(),
        &["server", "stop", "ferretdb", "--dir", &shown],
        &[],
    );
    assert_eq!(load.code, 0, "{}", load.stderr);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(
        start.stderr.contains("FERRETDB_MODE") && start.stderr.contains("not passed"),
        "{}",
        start.stderr
    );
    let users_files = users.server_dir().join("sqlite");
    assert!(
        !users_files.join("ycsb.sqlite").exists(),
        "kvperf's load went into the user's server: {:?}",
        std::fs::read_dir(&users_files).map(|d| d.count())
    );
    assert!(dir.join("sqlite/ycsb.sqlite").exists());
}

/// libpq's variables (a user's `PGSSLMODE=require` for a cloud database,
/// `PGSERVICE`, `PGOPTIONS`) were read by the tools the PostgreSQL script
/// runs against kvperf's own server: the start waited 120 s for an answer
/// pg_isready never got ("no answer within 120 s", exit 3) or failed at
/// its CREATE DATABASE. kvperf's server is reached as kvperf set it up.
#[test]
fn a_users_libpq_variables_do_not_stall_a_postgres_start() {
    let have = Path::new("/usr/lib/postgresql").is_dir();
    let test = "pass10_servers::libpq_variables";
    if !have {
        common::skip_unless_ci(test, "no PostgreSQL here (apt-get install postgresql)");
        return;
    }
    let work = common::server::passable_tempdir();
    let dir = work.path().join("pg");
    let shown = dir.display().to_string();
    let port = common::server::free_port().to_string();
    let env = [
        ("PGSSLMODE", "require"),
        ("PGSERVICE", "no-such-service"),
        ("PGOPTIONS", "-c default_transaction_read_only=on"),
    ];
    let began = Instant::now();
    let start = kvperf_with(
        work.path(),
        &[
            "server", "start", "postgres", "--dir", &shown, "--port", &port,
        ],
        &env,
    );
    let took = began.elapsed();
    let status = kvperf_with(
        work.path(),
        &["server", "status", "postgres", "--dir", &shown],
        &env,
    );
    let stop = kvperf_with(
        work.path(),
        &["server", "stop", "postgres", "--dir", &shown],
        &env,
    );
    assert_eq!(start.code, 0, "after {took:?}: {}", start.stderr);
    assert!(
        status.stdout.contains("postgres: running"),
        "{}",
        status.stderr
    );
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(stop.stdout.contains("postgres: stopped"), "{}", stop.stdout);
}

/// What a killed start left, ended when the test ends: the start script's
/// process group, the redis-server it launched and the stand-in process.
pub(super) struct Leftovers(pub(super) Vec<i32>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for &pid in &self.0 {
            // SAFETY: a process (group, when negative) this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// A start killed (`kill -9`, its script too, as a CI job's end kills a
/// process tree) after redis-server was launched leaves its `starting`
/// record; its server dies and its pid is soon another program's (pid_max
/// is 32768 on many machines), within the time the start could have
/// lasted. `status` said "not running" (the script checks the command
/// line), yet `stop` signalled that program: "redis: stopped pid=...".
#[test]
fn a_pid_reused_within_a_killed_starts_time_is_not_signalled() {
    let test = "pass10_servers::pid_reused_within_the_window";
    let have = Command::new("sh")
        .args(["-c", "command -v redis-server"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        common::skip_unless_ci(test, "no redis-server here (apt-get install redis-server)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("redis");
    let port = common::server::free_port().to_string();
    // A redis-cli that never hears PONG: the script waits after its launch.
    let bin = work.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("redis-cli"), "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(
        bin.join("redis-cli"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut start = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["server", "start", "redis", "--dir"])
        .arg(&dir)
        .args(["--port", &port])
        .env("PATH", &path)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut left = Leftovers(Vec::new());
    let pid_file = dir.join("redis.pid");
    let server = || -> Option<i32> {
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        cmdline(pid)
            .filter(|c| c.contains("redis-server"))
            .map(|_| pid)
    };
    let launched = wait_for(Duration::from_secs(60), || server().is_some());
    // The script's group: the one process of kvperf's children in its own.
    let script =
        std::fs::read_to_string(format!("/proc/{}/task/{}/children", start.id(), start.id()))
            .ok()
            .and_then(|c| {
                c.split_whitespace()
                    .next()
                    .and_then(|p| p.parse::<i32>().ok())
            });
    let _ = start.kill();
    let _ = start.wait();
    if let Some(group) = script {
        left.0.push(-group);
        // SAFETY: the script's process group, which this test's kvperf made.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    assert!(launched, "redis-server never launched");
    let redis = server().unwrap();
    left.0.push(redis);
    // SAFETY: the redis-server this test's start launched.
    unsafe { libc::kill(redis, libc::SIGKILL) };
    assert!(wait_for(Duration::from_secs(30), || cmdline(redis)
        .is_none_or(|c| c.is_empty())));
    // Its pid is another program's now: a `sleep`, named by the pid file.
    let mut other = Command::new("sleep").arg("600").spawn().unwrap();
    left.0.push(other.id() as i32);
    std::fs::write(&pid_file, format!("{}\n", other.id())).unwrap();
    status_and_stop_leave_alone(work.path(), &dir, &port, &mut other, "the sleep");
    let _ = other.kill();
    let _ = other.wait();
}

/// SIGINT (or SIGTERM) to `kvperf server stop` while its server shuts down
/// killed kvperf (exit 130) with no word: the server's stop signal was
/// already sent. It now says so in one line, exit 3, and sends no SIGKILL.
#[test]
fn an_interrupted_server_stop_says_its_stop_signal_was_sent() {
    let Some(redis) = common::server::Server::start("redis", "pass10_servers::interrupted_stop")
    else {
        return;
    };
    let pid: i32 = std::fs::read_to_string(redis.server_dir().join("redis.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Stopped, it cannot exit: the SIGTERM kvperf sends stays pending.
    // SAFETY: the redis-server this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let shown = redis.server_dir().display().to_string();
    let stop = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["server", "stop", "redis", "--dir", &shown])
        .current_dir(redis.dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // SIGTERM (15) pending on the stopped server: kvperf sent it.
    let pending = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("ShdPnd:"))?.to_string();
                u64::from_str_radix(line.split_whitespace().nth(1)?, 16).ok()
            })
            .is_some_and(|bits| bits & (1 << (libc::SIGTERM - 1)) != 0)
    };
    let sent = wait_for(Duration::from_secs(60), pending);
    // SAFETY: the kvperf this test started.
    unsafe { libc::kill(stop.id() as i32, libc::SIGINT) };
    let out = stop.wait_with_output().unwrap();
    // SAFETY: as above; it exits on the pending SIGTERM.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(sent, "no SIGTERM reached the server");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("interrupted") && stderr.contains("stop signal was sent"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(wait_for(Duration::from_secs(30), || cmdline(pid)
        .is_none_or(|c| c.is_empty())));
}

/// The cassandra engine at a port where something accepts and never
/// answers (a Redis reads CQL's OPTIONS as an unfinished command): "the
/// server did not answer within 6 s while kvperf waited for the engine to
/// open ... (stalltimeout=3)", twice the limit and naming neither the
/// address nor what may listen there, where redis, postgres and mongodb
/// name both at stalltimeout.
#[cfg(feature = "cassandra")]
#[test]
fn cassandra_at_a_silent_port_is_said_as_on_every_server_engine() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let work = tempfile::tempdir().unwrap();
    let at = format!("cassandra.port={port}");
    let a = common::workload("a");
    let began = Instant::now();
    let out = common::kvperf(
        work.path(),
        &[
            "load",
            "--engine",
            "cassandra",
            "-P",
            &a,
            "-p",
            &at,
            "-p",
            "recordcount=10",
            "-p",
            "stalltimeout=3",
        ],
    );
    let took = began.elapsed();
    drop(listener);
    assert_eq!(out.code, 3, "{}", out.stderr);
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!(
            "Cassandra at 127.0.0.1:{port} did not answer within 3 s while kvperf waited for"
        )) && last.contains("or what listens there is not Cassandra (stalltimeout=3)"),
        "after {took:?}: {}",
        out.stderr
    );
}

/// `$KVPERF_CACHE/servers/cassandra-VERSION`, where the jars go, was
/// removed whole (`rm -rf`) when it held no finished install: a user's
/// directory at that name (notes.txt) was gone after `server start
/// cassandra`, as pass 5 found for RocksDB's release cache. A link at the
/// install's lock or log led its truncating open to a user's file (a hard
/// link too, pass 11). Each is refused now in one line, exit 2, before
/// anything is fetched.
#[test]
fn a_users_files_in_the_server_cache_are_never_removed_or_written() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let servers = cache.join("servers");
    let inst = servers.join("cassandra-5.0.9");
    std::fs::create_dir_all(&inst).unwrap();
    std::fs::write(inst.join("notes.txt"), "my notes").unwrap();
    let mine = work.path().join("mine.txt");
    std::fs::write(&mine, "mine").unwrap();
    let start = |what: &str| {
        let dir = work.path().join(format!("server-{what}"));
        let shown = dir.display().to_string();
        let port = common::server::free_port().to_string();
        let storage = format!("cassandra_storage_port={}", common::server::free_port());
        let out = kvperf_with(
            work.path(),
            &[
                "server",
                "start",
                "cassandra",
                "--dir",
                &shown,
                "--port",
                &port,
                "-p",
                &storage,
            ],
            &[("KVPERF_CACHE", cache.to_str().unwrap())],
        );
        // A start that went ahead (as before) leaves no Cassandra running.
        kvperf_with(
            work.path(),
            &["server", "stop", "cassandra", "--dir", &shown],
            &[],
        );
        out
    };
    let out = start("dir");
    common::assert_input_error(&out, "holds no finished cassandra install");
    assert_eq!(
        std::fs::read_to_string(inst.join("notes.txt")).unwrap(),
        "my notes"
    );
    std::fs::remove_file(inst.join("notes.txt")).unwrap();
    std::fs::remove_dir(&inst).unwrap();
    // Pass 11: a hard link there emptied the user's file it shares too.
    let links = [
        ("symlink", "is not kvperf's (a link, or not a file)"),
        (
            "hard",
            "is not kvperf's (a file with other names: hard links)",
        ),
    ];
    for (kind, says) in links {
        for link in [".cassandra-5.0.9.lock", "cassandra-5.0.9-install.log"] {
            let at = servers.join(link);
            match kind {
                "symlink" => std::os::unix::fs::symlink(&mine, &at).unwrap(),
                _ => std::fs::hard_link(&mine, &at).unwrap(),
            }
            let out = start(&format!("{kind}{link}"));
            common::assert_input_error(&out, says);
            assert_eq!(
                std::fs::read_to_string(&mine).unwrap(),
                "mine",
                "{kind} {link}"
            );
            std::fs::remove_file(&at).unwrap();
        }
    }
}

/// A Redis that refuses the password given: "refused the connection:
/// Password authentication failed - AuthenticationFailed", where the other
/// server engines say "refused the login" and name the option to set.
#[cfg(feature = "redis")]
#[test]
fn a_refused_redis_login_is_said_as_on_every_server_engine() {
    let Some(redis) = common::server::Server::start("redis", "pass10_servers::redis_login") else {
        return;
    };
    let port = redis.port.to_string();
    let set = |password: &str| {
        Command::new("redis-cli")
            .args(["-p", &port, "-a", "s3cret", "--no-auth-warning"])
            .args(["CONFIG", "SET", "requirepass", password])
            .output()
            .unwrap()
    };
    let made = Command::new("redis-cli")
        .args(["-p", &port, "CONFIG", "SET", "requirepass", "s3cret"])
        .output()
        .unwrap();
    assert!(made.status.success());
    let a = common::workload("a");
    let at = redis.port_property("redis");
    let out = common::kvperf(
        redis.dir(),
        &[
            "load",
            "--engine",
            "redis",
            "-P",
            &a,
            "-p",
            &at,
            "-p",
            "recordcount=10",
            "-p",
            "redis.password=wrong",
        ],
    );
    // The server is stopped (Drop) without a password again.
    let reset = set("");
    assert!(reset.status.success());
    common::assert_input_error(
        &out,
        &format!("Redis at 127.0.0.1:{port} refused the login: "),
    );
    assert!(
        out.stderr.contains("set -p redis.password")
            && !out.stderr.contains("AuthenticationFailed"),
        "{}",
        out.stderr
    );
}
