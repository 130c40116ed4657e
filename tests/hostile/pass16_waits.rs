//! Hostile cases, pass 16: waits outside the window (docs/reliability.md).
//! `kvperf bench`'s close after its last benchmark (Cassandra's flush) and
//! its waits between benchmarks, and a plan's own emptying of a store for
//! a load by several clients, each on a server stopped (SIGSTOP, by the
//! relay of [`super::waits`]) as kvperf asks it: bounded by
//! `stalltimeout`, ended at SIGTERM at once, saying which wait.

#[allow(unused_imports)]
use crate::common;

#[allow(unused_imports)]
use super::pass14_waits::{kept_with_error, stopped};
#[allow(unused_imports)]
use super::waits::{family, output, postmaster, stop_at, stop_family_at, walk};
#[allow(unused_imports)]
use std::time::{Duration, Instant};

/// `kvperf bench` on a Cassandra stopped at the flush of its close after
/// the last benchmark (its `ALTER TABLE ... comment`; pass 16: that close
/// was not watched: exit 0 with no error after the driver's 30 s, ignoring
/// stalltimeout, and SIGINT answered only then, saying the figures were
/// being written): the step ends within stalltimeout, or at SIGTERM at
/// once, exit 3, its JSON holding the benchmark's figures and an error
/// naming the close.
#[cfg(feature = "cassandra")]
#[test]
fn bench_on_cassandra_stopped_at_its_last_close_ends_within_stalltimeout() {
    let Some(cassandra) = common::server::Server::start("cassandra", "pass16_waits_bench_close")
    else {
        return;
    };
    let dir = cassandra.dir();
    let pidfile = walk(&cassandra.server_dir(), "cassandra.pid").expect("cassandra.pid");
    let pid: i32 = std::fs::read_to_string(pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for (i, sigterm) in [None, Some(Duration::from_millis(300))]
        .into_iter()
        .enumerate()
    {
        let what = format!("sigterm {}", sigterm.is_some());
        // The engine's open makes its table with its comment; only the
        // close's flush alters it.
        let relay = stop_at(cassandra.port, pid, b"ALTER TABLE", 1);
        let json = dir.join(format!("bench-{i}.json"));
        let args: Vec<String> = [
            "bench",
            "--engine",
            "cassandra",
            "-p",
            &format!("cassandra.port={}", relay.port),
            "-p",
            "stalltimeout=3",
            "--benchmarks=fillseq",
            "--num=200",
            "--json",
            &json.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        let (code, waited, stderr) = stopped(dir, &args, (relay, pid), sigterm, &what);
        assert_eq!(code, Some(3), "{what}: {stderr}");
        let bound = if sigterm.is_some() { 3 } else { 12 };
        assert!(waited < Duration::from_secs(bound), "{what}: {waited:?}");
        let says = if sigterm.is_some() {
            "interrupted after the last benchmark, waiting for the engine to close"
        } else {
            "as the engine closed after the last benchmark"
        };
        let error = kept_with_error(&json, says, &what, &stderr);
        assert!(
            sigterm.is_some() || error.contains("stalltimeout=3"),
            "{what}: {error}"
        );
    }
}

/// A plan's load step with `clients = 2` on a PostgreSQL stopped at the
/// `DROP TABLE` of the plan's own emptying of the store (pass 16: in the
/// plan's process, unwatched: deaf to SIGTERM and SIGINT, killed at
/// 100 s): the plan ends within the step's stalltimeout, or at SIGTERM
/// at once, exit 3, naming the wait; a rerun, the server answering
/// again, resumes and loads the store.
#[cfg(feature = "postgres")]
#[test]
fn a_plan_emptying_a_stopped_postgres_for_its_clients_ends_within_stalltimeout() {
    let Some(pg) = common::server::Server::start("postgres", "pass16_waits_plan_empty") else {
        return;
    };
    let dir = pg.dir();
    let pid = postmaster(&pg);
    // The server's own processes: a client's backend is none of them.
    let own = family(pid);
    for (i, sigterm) in [None, Some(Duration::from_millis(300))]
        .into_iter()
        .enumerate()
    {
        let what = format!("sigterm {}", sigterm.is_some());
        let relay = stop_family_at(pg.port, move || family(pid), b"DROP TABLE", 1);
        let plan = format!(
            "name = \"p16\"\ndriver = \"ycsb\"\nengine = \"postgres\"\nsettle = false\n[properties]\nrecordcount = 100\n\"postgres.port\" = {}\nstalltimeout = 2\n[[configs]]\nname = \"a\"\n[[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\nclients = 2\n",
            relay.port
        );
        let toml = format!("plan-{i}.toml");
        let results = format!("r-{i}.jsonl");
        std::fs::write(dir.join(&toml), plan).unwrap();
        let args: Vec<String> = ["plan", "run", &toml, "--results", &results]
            .map(String::from)
            .to_vec();
        let (code, waited, stderr) = stopped(dir, &args, (relay, pid), sigterm, &what);
        assert_eq!(code, Some(3), "{what}: {stderr}");
        let bound = if sigterm.is_some() { 3 } else { 12 };
        assert!(waited < Duration::from_secs(bound), "{what}: {waited:?}");
        let says = if sigterm.is_some() {
            "interrupted during step a/000-load-a-t1-c2-r1, waiting for the server as the plan emptied the store"
        } else {
            "as the plan emptied the store for the step's clients: it stopped answering (stalltimeout=2)"
        };
        assert!(stderr.contains(says), "{what}: {stderr}");
        assert!(
            stderr.contains("rerun the same command"),
            "{what}: {stderr}"
        );
        // The server answers again (the relay stops it once) and finishes
        // the ended plan's emptying, its backend gone (or the rerun's races
        // it); then the same command resumes, and the step is done.
        let until = Instant::now() + Duration::from_secs(60);
        while family(pid).iter().any(|p| !own.contains(p)) {
            assert!(Instant::now() < until, "{what}: a backend left after 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let again = common::kvperf(dir, &args);
        assert_eq!(again.code, 0, "{what}, rerun: {}", again.stderr);
        let records = std::fs::read_to_string(dir.join(&results)).unwrap();
        assert!(
            records.contains("\"id\":\"a/000-load-a-t1-c2-r1\""),
            "{what}: {records}"
        );
    }
}

/// `kvperf bench` on a PostgreSQL stopped between its benchmarks: at the
/// `VACUUM FULL` of `compact`, and at the reopen on an empty store before
/// `fillrandom` (pass 16: the compaction was not watched, deaf to SIGTERM
/// for good; the reopen's wait said "nothing was measured" with fillseq
/// measured): SIGTERM is answered at once, the reopen is bounded by
/// stalltimeout, exit 3, fillseq's figures in the JSON beside an error
/// that names the wait.
#[cfg(feature = "postgres")]
#[test]
fn bench_on_postgres_stopped_between_benchmarks_keeps_the_figures() {
    let Some(pg) = common::server::Server::start("postgres", "pass16_waits_bench_between") else {
        return;
    };
    let dir = pg.dir();
    let pid = postmaster(&pg);
    // (the benchmarks, what kvperf sends, its n-th time, SIGTERM?, the error says)
    let moments: [(&str, &'static [u8], usize, bool, &str); 2] = [
        (
            "fillseq,compact",
            b"VACUUM FULL",
            1,
            true,
            "interrupted between measured windows, waiting for the server's compaction",
        ),
        (
            "fillseq,fillrandom",
            b"DROP TABLE",
            2,
            false,
            "waited for the engine to reopen on an empty store, between measured windows: it stopped answering (stalltimeout=2)",
        ),
    ];
    for (i, (benchmarks, needle, count, by_signal, says)) in moments.into_iter().enumerate() {
        let what = format!("{benchmarks}, sigterm {by_signal}");
        let relay = stop_family_at(pg.port, move || family(pid), needle, count);
        let json = dir.join(format!("between-{i}.json"));
        let args: Vec<String> = [
            "bench",
            "--engine",
            "postgres",
            "-p",
            &format!("postgres.port={}", relay.port),
            "-p",
            "stalltimeout=2",
            &format!("--benchmarks={benchmarks}"),
            "--num=200",
            "--json",
            &json.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        let sigterm = by_signal.then_some(Duration::from_millis(300));
        let (code, waited, stderr) = stopped(dir, &args, (relay, pid), sigterm, &what);
        assert_eq!(code, Some(3), "{what}: {stderr}");
        let bound = if by_signal { 3 } else { 12 };
        assert!(waited < Duration::from_secs(bound), "{what}: {waited:?}");
        kept_with_error(&json, says, &what, &stderr);
    }
}

/// `kvperf settle` on a PostgreSQL stopped at its CHECKPOINT, then
/// SIGTERM (pass 16: settle died of the signal without a word, exit 143;
/// SIGINT 130): one line naming the wait, exit 3, at once.
#[cfg(feature = "postgres")]
#[test]
fn settle_on_a_stopped_postgres_answers_sigterm_with_a_word() {
    let Some(pg) = common::server::Server::start("postgres", "pass16_waits_settle") else {
        return;
    };
    let dir = pg.dir();
    let pid = postmaster(&pg);
    let (relay, args) = super::pass14_waits::settle_stopped_at_checkpoint(&pg, pid, &[]);
    let sigterm = Some(Duration::from_millis(300));
    let (code, waited, stderr) = stopped(dir, &args, (relay, pid), sigterm, "settle");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(waited < Duration::from_secs(3), "{waited:?}: {stderr}");
    assert!(
        stderr.contains("settle: interrupted, waiting for the postgres store to finish its work"),
        "{stderr}"
    );
}
