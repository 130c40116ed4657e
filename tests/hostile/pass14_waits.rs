//! Hostile cases, pass 14: waits on a server past and outside the window
//! (docs/reliability.md). A PostgreSQL stopped (SIGSTOP of its postmaster
//! and backends, by the relay of [`super::waits`]) after the window's
//! last query, as the engine's sessions close; and `kvperf bench` on a
//! server stopped before its window or in it.

#[allow(unused_imports)]
use crate::common;

#[allow(unused_imports)]
use super::waits::{
    family, output, postmaster, rest, spawn, step_args, stop_family_after, stop_family_at,
    wait_within, ContinueFamily, StopAt,
};
#[allow(unused_imports)]
use std::time::{Duration, Instant};

/// Runs `args` in `dir` against the stopping `relay`; returns the exit
/// code, the seconds from the stop to the end, and stderr. SIGTERM
/// `sigterm` after the stop, when asked.
#[cfg(any(feature = "postgres", feature = "cassandra"))]
pub(super) fn stopped(
    dir: &std::path::Path,
    args: &[String],
    (relay, pid): (StopAt, i32),
    sigterm: Option<Duration>,
    what: &str,
) -> (Option<i32>, Duration, String) {
    let cont = ContinueFamily(pid);
    let (mut child, lines) = spawn(dir, args);
    if relay.stopped.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        panic!("{what}: never sent: {:?}", rest(&lines));
    }
    let at = Instant::now();
    if let Some(after) = sigterm {
        std::thread::sleep(after);
        // SAFETY: a signal to the kvperf this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    }
    let status = wait_within(&mut child, Duration::from_secs(40), what);
    let waited = at.elapsed();
    drop(cont);
    (status.code(), waited, rest(&lines).join("\n"))
}

/// PostgreSQL stopped once the window's last query (its row count) was
/// answered, as the engine's sessions close (issue 44, pass 14: `load`
/// and `run` never ended, deaf to SIGTERM, and wrote no JSON: the 200
/// inserts measured were lost): the step ends within stalltimeout, or at
/// SIGTERM at once, exit 3, its JSON holding every operation.
#[cfg(feature = "postgres")]
#[test]
fn postgres_stopped_as_the_sessions_close_keeps_the_figures() {
    let Some(pg) = common::server::Server::start("postgres", "pass14_waits_close") else {
        return;
    };
    let dir = pg.dir();
    let pid = postmaster(&pg);
    for (phase, sigterm) in [("load", None), ("run", Some(Duration::from_millis(300)))] {
        let what = format!("{phase}, sigterm {}", sigterm.is_some());
        // The window's counters ask n_live_tup twice (before and after
        // it): its Parse, its Bind and Execute, then the Close.
        let relay = stop_family_after(pg.port, move || family(pid), (b"n_live_tup", 2), 2);
        let json = dir.join(format!("{phase}.json"));
        let props = [
            format!("postgres.port={}", relay.port),
            "recordcount=200".to_string(),
            "operationcount=200".to_string(),
            "stalltimeout=3".to_string(),
        ];
        let args = step_args(phase, "postgres", "a", &props, &json);
        let (code, waited, stderr) = stopped(dir, &args, (relay, pid), sigterm, &what);
        assert_eq!(code, Some(3), "{what}: {stderr}");
        let bound = if sigterm.is_some() { 3 } else { 10 };
        assert!(waited < Duration::from_secs(bound), "{what}: {waited:?}");
        kept_with_error(&json, "sessions", &what, &stderr);
    }
}

/// `kvperf bench` on a PostgreSQL stopped as the engine opens, as its
/// client's session starts (before the window) and in the window (issue
/// 44, pass 14: bench had no watch before its window: deaf to SIGTERM
/// for 907 s; and its window's stall timeout was a fixed 300 s, ignoring
/// `-p stalltimeout`): each ends within stalltimeout plus its grace, or
/// at SIGTERM at once, exit 3, its JSON written with the reason.
#[cfg(feature = "postgres")]
#[test]
fn bench_on_a_stopped_postgres_ends_within_stalltimeout() {
    let Some(pg) = common::server::Server::start("postgres", "pass14_waits_bench") else {
        return;
    };
    let dir = pg.dir();
    let pid = postmaster(&pg);
    // (what kvperf sends, its n-th time, stop after it?, SIGTERM?, the error says)
    let moments: [(&'static [u8], usize, bool, bool, &str); 4] = [
        (b"database", 1, false, false, "stalltimeout=2"),
        (b"database", 3, false, false, "stalltimeout=2"),
        (
            b"database",
            3,
            false,
            true,
            "interrupted before the measured window",
        ),
        (b"INSERT", 1, true, false, "stalltimeout=2"),
    ];
    for (i, (needle, count, after, by_signal, says)) in moments.into_iter().enumerate() {
        let what = format!(
            "{} #{count}, after {after}, sigterm {by_signal}",
            String::from_utf8_lossy(needle)
        );
        let relay = match after {
            true => stop_family_after(pg.port, move || family(pid), (needle, count), 1),
            false => stop_family_at(pg.port, move || family(pid), needle, count),
        };
        let json = dir.join(format!("bench-{i}.json"));
        let args: Vec<String> = [
            "bench",
            "--engine",
            "postgres",
            "-p",
            &format!("postgres.port={}", relay.port),
            "-p",
            "stalltimeout=2",
            "--benchmarks=fillseq",
            "--num=100000",
            "--json",
            &json.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        let sigterm = by_signal.then_some(Duration::from_millis(300));
        let (code, waited, stderr) = stopped(dir, &args, (relay, pid), sigterm, &what);
        assert_eq!(code, Some(3), "{what}: {stderr}");
        let bound = if by_signal { 3 } else { 15 };
        assert!(waited < Duration::from_secs(bound), "{what}: {waited:?}");
        let error = output(&json)
            .error
            .unwrap_or_else(|| panic!("{what}: {stderr}"));
        assert!(error.message.contains(says), "{what}: {}", error.message);
    }
}

/// PostgreSQL stopped as `kvperf settle` asks for its CHECKPOINT, once
/// connected (pass 14: settle waited for good; only its connection's
/// start was bounded): settle ends at `--server-timeout`, exit 3, naming
/// the wait.
#[cfg(feature = "postgres")]
#[test]
fn settle_on_a_stopped_postgres_ends_at_its_server_timeout() {
    let Some(pg) = common::server::Server::start("postgres", "pass14_waits_settle") else {
        return;
    };
    let dir = pg.dir();
    let pid = postmaster(&pg);
    let (relay, args) = settle_stopped_at_checkpoint(&pg, pid, &["--server-timeout", "3"]);
    let (code, waited, stderr) = stopped(dir, &args, (relay, pid), None, "settle");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(waited < Duration::from_secs(10), "{waited:?}: {stderr}");
    assert!(
        stderr.contains("did not finish within 3 s (--server-timeout)"),
        "{stderr}"
    );
}

/// The error of the step whose JSON is `json`: it says `says` and that
/// what was measured is kept, and the JSON holds the 200 operations
/// measured before the wait.
pub(super) fn kept_with_error(
    json: &std::path::Path,
    says: &str,
    what: &str,
    stderr: &str,
) -> String {
    let out = super::waits::output(json);
    let error = out.error.unwrap_or_else(|| panic!("{what}: {stderr}"));
    assert!(
        error.message.contains(says) && error.message.contains("what was measured is kept"),
        "{what}: {}",
        error.message
    );
    let measured = out
        .measurements
        .first()
        .unwrap_or_else(|| panic!("{what}: {stderr}"));
    assert_eq!(measured.operations, 200, "{what}");
    error.message
}

/// PostgreSQL `pg` (postmaster `pid`) loaded with 100 records, a relay
/// that stops it at settle's CHECKPOINT, and `kvperf settle` through the
/// relay with `extra` after it.
pub(super) fn settle_stopped_at_checkpoint(
    pg: &common::server::Server,
    pid: i32,
    extra: &[&str],
) -> (super::waits::StopAt, Vec<String>) {
    let dir = pg.dir();
    let port = format!("postgres.port={}", pg.port);
    let load = step_args(
        "load",
        "postgres",
        "a",
        &[port, "recordcount=100".to_string()],
        &dir.join("load.json"),
    );
    let load: Vec<&str> = load.iter().map(String::as_str).collect();
    let loaded = common::kvperf(dir, &load);
    assert_eq!(loaded.code, 0, "{}", loaded.stderr);
    let relay = stop_family_at(pg.port, move || family(pid), b"CHECKPOINT", 1);
    let mut args: Vec<String> = ["settle", "--engine", "postgres", "-p"]
        .map(String::from)
        .to_vec();
    args.push(format!("postgres.port={}", relay.port));
    args.extend(extra.iter().map(|e| e.to_string()));
    (relay, args)
}
