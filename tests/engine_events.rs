//! The engine's own events on the window's clock (`events` in each
//! measurement): a RocksDB load through 64 KiB memtables shows its flushes
//! and compactions; a Redis run shows a `BGSAVE` forced in its middle; an
//! engine without background work says why it has no events.

use crate::common;

use kvperf::measure::events::EngineEvents;
#[cfg(any(feature = "rocksdb", feature = "redis", feature = "postgres"))]
use kvperf::measure::events::{Event, EventKind};
use kvperf::results::StepOutput;

/// The one measurement's events of a JSON step output.
fn events_of(stdout: &str) -> (EngineEvents, u64, u64) {
    let out = StepOutput::from_json(stdout).expect("a step output");
    let m = out.measured().expect("a measurement");
    let events = m.events.clone().expect("an events field");
    (events, m.start_unix_ms, m.end_unix_ms)
}

/// Every event lies inside the window, in order of its start.
#[cfg(any(feature = "rocksdb", feature = "redis", feature = "postgres"))]
fn assert_on_the_window(events: &[Event], open: u64, close: u64) {
    for e in events {
        assert!(
            open <= e.start_unix_ms && e.start_unix_ms <= e.end_unix_ms && e.end_unix_ms <= close,
            "{e:?} outside the window {open}..{close}"
        );
    }
    assert!(events
        .windows(2)
        .all(|w| w[0].start_unix_ms <= w[1].start_unix_ms));
}

#[cfg(feature = "rocksdb")]
#[test]
fn a_rocksdb_load_through_small_memtables_shows_its_flushes_and_compactions() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    let file = common::workload("a");
    // 30 000 records of 4 x 250 bytes (~30 MB) through 64 KiB memtables:
    // hundreds of flushes, and L0 compactions every four of them.
    let out = common::kvperf(
        tmp.path(),
        &[
            "load",
            "--engine",
            "rocksdb",
            "--db",
            db,
            "-P",
            &file,
            "-p",
            "recordcount=30000",
            "-p",
            "fieldcount=4",
            "-p",
            "fieldlength=250",
            "-p",
            "rocksdb.write_buffer_size=65536",
            "-p",
            "events.interval=100",
            "-threads",
            "2",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (events, open, close) = events_of(&out.stdout);
    assert_eq!(events.unavailable, None);
    assert_eq!(events.interval_ms, 100);
    assert!(events.polls >= 2, "{events:?}");
    assert_eq!(events.failed_polls, 0);
    assert_on_the_window(&events.events, open, close);

    let of = |kind| -> Vec<&Event> { events.events.iter().filter(|e| e.kind == kind).collect() };
    let flushes = of(EventKind::Flush);
    assert!(!flushes.is_empty(), "no flush in {:#?}", events.events);
    let flushed: u64 = flushes.iter().filter_map(|e| e.finished).sum();
    assert!(
        flushed >= 100,
        "~450 memtables of 64 KiB, {flushed} flushes counted"
    );
    assert!(
        flushes.iter().filter_map(|e| e.bytes).sum::<u64>() > 10_000_000,
        "the flush threads wrote the data: {flushes:#?}"
    );

    let compactions = of(EventKind::Compaction);
    assert!(
        !compactions.is_empty(),
        "no compaction in {:#?}",
        events.events
    );
    assert!(
        compactions
            .iter()
            .any(|e| e.finished_by.keys().any(|p| p.starts_with("into L"))),
        "compactions name the level they wrote into: {compactions:#?}"
    );
    assert!(
        compactions.iter().filter_map(|e| e.bytes).sum::<u64>() > 0,
        "compactions carry their bytes: {compactions:#?}"
    );
    eprintln!("{}", serde_json::to_string_pretty(&events).unwrap());
}

#[cfg(feature = "rocksdb")]
#[test]
fn events_can_be_turned_off() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let file = common::workload("a");
    let out = common::kvperf(
        tmp.path(),
        &[
            "load",
            "--engine",
            "rocksdb",
            "--db",
            db.to_str().unwrap(),
            "-P",
            &file,
            "-p",
            "recordcount=100",
            "-p",
            "events.interval=0",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (events, _, _) = events_of(&out.stdout);
    assert_eq!(events.polls, 0);
    assert!(events.unavailable.unwrap().contains("turned off"));
}

#[test]
fn an_engine_without_background_work_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let out = common::run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=100",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (events, _, _) = events_of(&out.stdout);
    assert!(events.events.is_empty());
    assert!(
        events
            .unavailable
            .as_deref()
            .is_some_and(|w| w.contains("no background work")),
        "{events:?}"
    );
    let listed = common::kvperf(tmp.path(), &["engines"]);
    assert!(
        listed.stdout.contains("events: none (the null engine"),
        "{}",
        listed.stdout
    );
    #[cfg(feature = "rocksdb")]
    assert!(
        listed
            .stdout
            .contains("events: flush, compaction, write_stall, write_slowdown"),
        "{}",
        listed.stdout
    );
}

#[test]
fn a_bad_interval_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = common::run_null(
        tmp.path(),
        "c",
        &["-p", "recordcount=10", "-p", "events.interval=soon"],
    );
    common::assert_input_error(&out, "events.interval");
}

/// Sends one command to Redis in its wire protocol; its one-line reply.
#[cfg(feature = "redis")]
fn redis_command(port: u16, words: &[&str]) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("Redis answers");
    let mut request = format!("*{}\r\n", words.len());
    for w in words {
        request.push_str(&format!("${}\r\n{w}\r\n", w.len()));
    }
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).unwrap();
    reply.trim().to_string()
}

#[cfg(feature = "redis")]
fn redis_args<'a>(phase: &'a str, file: &'a str, port: &'a str) -> Vec<&'a str> {
    vec![
        phase,
        "--engine",
        "redis",
        "-P",
        file,
        "-p",
        port,
        "-p",
        "recordcount=20000",
        "-p",
        "fieldcount=4",
        "-p",
        "fieldlength=100",
    ]
}

#[cfg(feature = "redis")]
#[test]
fn a_redis_bgsave_forced_mid_run_is_an_event() {
    let Some(redis) =
        common::server::Server::start("redis", "a_redis_bgsave_forced_mid_run_is_an_event")
    else {
        return;
    };
    let dir = redis.dir();
    let file = common::workload("b");
    let port = redis.port_property("redis");
    let load = common::kvperf(dir, &redis_args("load", &file, &port));
    assert_eq!(load.code, 0, "{}", load.stderr);

    let mut args = redis_args("run", &file, &port);
    args.extend([
        "-p",
        "operationcount=0",
        "-p",
        "maxexecutiontime=5",
        "-threads",
        "2",
        "--format",
        "json",
    ]);
    let run = run_in_background(dir, &args);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let asked_at = kvperf_clock_ms();
    let reply = redis_command(redis.port, &["BGSAVE"]);
    assert!(reply.starts_with("+Background saving started"), "{reply}");
    let out = run.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);

    let (events, open, close) = events_of(&out.stdout);
    assert_eq!(events.unavailable, None, "{events:?}");
    assert_on_the_window(&events.events, open, close);
    let saves: Vec<&Event> = events
        .events
        .iter()
        .filter(|e| e.kind == EventKind::BgSave)
        .collect();
    assert_eq!(
        saves.len(),
        1,
        "one save, asked at {asked_at}: {:#?}",
        events.events
    );
    let save = saves[0];
    // Seen running, or counted between two polls: either way on the clock
    // where it happened, no earlier than it was asked for.
    assert!(
        save.end_unix_ms >= asked_at,
        "{save:?} ended before {asked_at}"
    );
    assert!(
        save.start_unix_ms <= asked_at + 1000,
        "{save:?} long after {asked_at}"
    );
    assert!(save.finished == Some(1) || !save.between_polls, "{save:?}");
    eprintln!("{}", serde_json::to_string_pretty(&events).unwrap());
}

#[cfg(any(feature = "redis", feature = "postgres"))]
fn kvperf_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[cfg(any(feature = "redis", feature = "postgres"))]
fn run_in_background(
    dir: &std::path::Path,
    args: &[&str],
) -> std::thread::JoinHandle<common::Output> {
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        common::kvperf(&dir, &args)
    })
}

#[cfg(feature = "postgres")]
#[test]
fn a_postgres_checkpoint_forced_mid_run_is_an_event() {
    let test = "a_postgres_checkpoint_forced_mid_run_is_an_event";
    let Some(pg) = common::server::Server::start("postgres", test) else {
        return;
    };
    let dir = pg.dir();
    let file = common::workload("a");
    let port = pg.port_property("postgres");
    let base = [
        "--engine",
        "postgres",
        "-P",
        &file,
        "-p",
        &port,
        "-p",
        "recordcount=20000",
        "-p",
        "fieldcount=4",
        "-p",
        "fieldlength=100",
    ];
    let load = common::kvperf(dir, &[&["load"], &base[..]].concat());
    assert_eq!(load.code, 0, "{}", load.stderr);

    // Updates dirty buffers all along; CHECKPOINT writes them in the middle.
    let mut args = vec!["run"];
    args.extend(base);
    args.extend([
        "-p",
        "operationcount=0",
        "-p",
        "maxexecutiontime=6",
        "-threads",
        "2",
    ]);
    args.extend(["--format", "json"]);
    let run = run_in_background(dir, &args);
    std::thread::sleep(std::time::Duration::from_millis(3000));
    let mut client = postgres::Client::connect(
        &format!(
            "host=127.0.0.1 port={} user=postgres dbname=kvperf",
            pg.port
        ),
        postgres::NoTls,
    )
    .expect("PostgreSQL answers");
    let asked_at = kvperf_clock_ms();
    client.batch_execute("CHECKPOINT").unwrap();
    let done_at = kvperf_clock_ms();
    let out = run.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);

    let (events, open, close) = events_of(&out.stdout);
    assert_eq!(events.unavailable, None, "{events:?}");
    assert_on_the_window(&events.events, open, close);
    let overlapping: Vec<&Event> = events
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Checkpoint)
        .filter(|e| e.start_unix_ms <= done_at + events.interval_ms && e.end_unix_ms >= asked_at)
        .collect();
    assert!(
        !overlapping.is_empty(),
        "no checkpoint at {asked_at}..{done_at}: {:#?}",
        events.events
    );
    assert!(
        overlapping.iter().any(|e| e.bytes.unwrap_or(0) > 0),
        "the checkpoint wrote the dirty buffers: {overlapping:#?}"
    );
    eprintln!("{}", serde_json::to_string_pretty(&events).unwrap());
}

/// The report shades each step's engine events behind its charts over time
/// (one band per event, named in its tooltip), and the verdict's spikes
/// are judged against the same events.
#[cfg(feature = "rocksdb")]
#[test]
fn a_report_shades_the_engine_events_behind_the_charts_over_time() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("events.toml");
    // Updates of 1 kB records through 64 KiB memtables: a flush every ~60
    // updates, for 3 seconds.
    let text = format!(
        r#"
name = "events"
driver = "ycsb"
engine = "rocksdb"
[properties]
recordcount = 5000
operationcount = 100000000
maxexecutiontime = 3
fieldcount = 4
fieldlength = 250
"rocksdb.write_buffer_size" = 65536
"events.interval" = 100
[[configs]]
name = "small-memtables"
db = "{}/db"
[[steps]]
load = true
workloads = ["a"]
threads = [1]
[[steps]]
workloads = ["a"]
threads = [1]
"#,
        tmp.path().display()
    );
    std::fs::write(&plan, text).unwrap();
    let ran = common::kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            &plan.display().to_string(),
            "--results",
            "r.jsonl",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let run: kvperf::results::Record = std::fs::read_to_string(tmp.path().join("r.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .next_back()
        .unwrap();
    let events = run.measured().unwrap().events.clone().unwrap();
    let flushes = events
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Flush)
        .count();
    assert!(flushes > 0, "no flush in the run: {events:#?}");

    let html = std::fs::read_to_string(tmp.path().join("r-report/report.html")).unwrap();
    let bands = html
        .matches("fill=\"#4e9fd1\" fill-opacity=\"0.3\"><title>a flush")
        .count();
    // Two charts over time (ops/s, latency), each with every event, and
    // a legend naming the kinds shaded.
    assert!(
        html.contains("\u{25a0} flush</tspan>"),
        "no legend of the bands"
    );
    assert!(
        bands >= 2 * flushes,
        "{bands} flush bands for {flushes} flushes in the report"
    );
}
