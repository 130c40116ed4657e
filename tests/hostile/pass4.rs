//! The fourth hostile pass (issue 44's last "done when"): what the last
//! session built and nobody had attacked yet, as a hostile but realistic
//! user would: `kvperf replay` interrupted while it waits for a trace's
//! time, absurd `--speed` and `--threads`, and a Redfish service whose
//! links name another host. Each case failed on the main of 2026-11-28.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, assert_input_error, kvperf, Output};

/// `child`'s output once it ends, or None if it still runs after `limit`
/// (then it is killed).
fn ended_within(mut child: Child, limit: Duration) -> Option<Output> {
    let until = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    Some(Output::from(out))
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kvperf starts")
}

/// Ctrl-C while an open-loop replay waits for its next operation's time
/// (a trace with a quiet hour) ends it at once with the JSON written and
/// exit 3. It was ignored until the replay's 300 s stall watchdog called
/// the wait a stall ("it stopped answering"), exit 3 with no JSON at all.
#[test]
fn an_interrupt_while_a_replay_waits_for_the_traces_time_keeps_the_json() {
    let tmp = tempfile::tempdir().unwrap();
    let trace =
        common::import_csv_trace(tmp.path(), "quiet", "0,insert,k1,100\n3600,read,k1,100\n");
    let child = spawn(
        tmp.path(),
        &[
            "replay", &trace, "--engine", "null", "--speed", "1", "--format", "json", "--output",
            "r.json",
        ],
    );
    // The first operation is issued at once; the second waits an hour.
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: a plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = ended_within(child, Duration::from_secs(60))
        .expect("the replay ends at SIGINT, not after its stall timeout");
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(!out.stderr.contains("stopped answering"), "{}", out.stderr);
    let json = std::fs::read_to_string(tmp.path().join("r.json")).expect("the JSON is written");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let error = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("interrupted after 1 operations"), "{json}");
    assert_eq!(doc["measurements"][0]["operations"], 1, "{json}");
}

/// `--speed` so slow the trace would never end (1e-300: a second of it
/// lasts longer than the universe) is refused by name; it was accepted,
/// printed with 300 zeros, and the replay hung.
#[test]
fn a_replay_speed_that_never_ends_is_refused_before_replaying() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = common::import_csv_trace(tmp.path(), "two", "0,insert,k1,100\n1,read,k1,100\n");
    for speed in ["1e-300", "0.0000001"] {
        let child = spawn(
            tmp.path(),
            &["replay", &trace, "--engine", "null", "--speed", speed],
        );
        let out = ended_within(child, Duration::from_secs(60)).expect("refused, not replayed");
        assert_input_error(&out, "--speed");
        assert!(out.stderr.len() < 1000, "{}", out.stderr);
    }
}

/// `--threads 99999999` is refused before a byte per client is allocated:
/// it took 12.5 GB and 26 s before the thread limit refused it (a little
/// more and the kernel's OOM killer ends kvperf, or a neighbour). Under a
/// 4 GB address space that allocation aborted the process.
#[test]
fn replay_refuses_more_clients_than_kvperf_starts_before_allocating_them() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = common::import_csv_trace(tmp.path(), "two", "0,insert,k1,100\n1,read,k1,100\n");
    for threads in ["99999999", "1000000"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kvperf"));
        command
            .args(["replay", &trace, "--engine", "null", "--threads", threads])
            .current_dir(tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: setrlimit only, between fork and exec.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 4 << 30,
                    rlim_max: 4 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
        let out = ended_within(command.spawn().unwrap(), Duration::from_secs(120))
            .expect("refused at once");
        // Past the cap: refused with the arguments. At it: refused by the
        // runner (after the replay's header line), before any slot is made.
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr
                .contains("--threads 99999999 is more than kvperf starts")
                || out
                    .stderr
                    .contains("1000000 client threads are more than this system lets"),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}

/// Serves each request on 127.0.0.1 with `body` (JSON); sends each
/// request's Authorization header (empty without one) on the channel.
pub(crate) fn serve_json(body: String) -> (u16, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut auth = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.strip_prefix("Authorization: ") {
                    auth = v.trim().to_string();
                }
            }
            let _ = tx.send(auth);
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, rx)
}

/// A Redfish service root whose Chassis link reads `@HOST:PORT/...`:
/// appended to the URL's origin it named another host, and curl sent
/// that host the BMC's user and password. Now a link that is not a path
/// on the service is refused in one line and nothing else is asked.
#[test]
fn a_redfish_link_naming_another_host_gets_no_credentials() {
    if Command::new("curl").arg("--version").output().is_err() {
        common::skip_unless_ci(
            "a_redfish_link_naming_another_host_gets_no_credentials",
            "no curl here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (other, asked) = serve_json(r#"{"Members": []}"#.to_string());
    let root =
        format!(r#"{{"Chassis": {{"@odata.id": "@127.0.0.1:{other}/redfish/v1/Chassis"}}}}"#);
    let (bmc, _) = serve_json(root);
    let url = format!("-p=power.redfish.url=http://127.0.0.1:{bmc}/redfish/v1");
    let out = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["run", "--engine", "null", "-P", &common::workload("c")])
        .args(["-p", "recordcount=10", "-p", "operationcount=10"])
        .args(["-p", "power.meter=redfish", &url])
        .env("KVPERF_REDFISH_USER", "root")
        .env("KVPERF_REDFISH_PASSWORD", "h0st-hop-pw")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let out = Output::from(out);
    let leaked: Vec<String> = asked.try_iter().collect();
    assert!(leaked.is_empty(), "another host was asked: {leaked:?}");
    assert_input_error(&out, "not a path on it");
}

/// `-p rocksdb.version=10.2.1` (a release kvperf pins) with the default
/// table format 7, which only RocksDB 10.4 on writes: every load failed
/// after opening, exit 3, in RocksDB's words ("Unsupported
/// BlockBasedTable format_version"). Now one line naming the property,
/// exit 2, and the directory left as it was.
#[cfg(feature = "rocksdb")]
#[test]
fn an_older_rocksdb_release_with_a_format_it_cannot_write_is_said_before_opening() {
    // Fetched first, as a user's earlier use would have: on an empty cache
    // the fetch says so on its own line before the refusal.
    let fetch = std::process::Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/rocksdb-release.sh"
        ))
        .arg("10.2.1")
        .output()
        .unwrap();
    assert!(
        fetch.status.success(),
        "fetching RocksDB 10.2.1: {}",
        String::from_utf8_lossy(&fetch.stderr)
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = common::workload("a");
    let out = kvperf(
        tmp.path(),
        &[
            "load",
            "--engine",
            "rocksdb",
            "-P",
            &file,
            "-p",
            "recordcount=10",
            "-p",
            "rocksdb.version=10.2.1",
            "--db",
            "d",
        ],
    );
    assert_input_error(&out, "rocksdb.format_version");
    assert!(out.stderr.contains("10.2.1"), "{}", out.stderr);
    let left: Vec<_> = std::fs::read_dir(tmp.path().join("d"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "written into d: {left:?}");
}

/// `load --fresh` on a loaded store with a bad engine option (a typo in
/// `rocksdb.format_version`, a compression this RocksDB lacks) emptied
/// the store and only then refused the option (exit 2): the records were
/// gone for a run that never started. Options are checked first now.
#[cfg(feature = "rocksdb")]
#[test]
fn a_bad_engine_option_is_refused_before_a_fresh_load_empties_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let file = common::workload("a");
    let load = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "--engine",
            "rocksdb",
            "-P",
            &file,
            "-p",
            "recordcount=500",
            "--db",
            "d",
        ];
        args.extend_from_slice(extra);
        kvperf(tmp.path(), &args)
    };
    let first = load(&[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let names = || {
        let mut n: Vec<String> = std::fs::read_dir(tmp.path().join("d"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sst") || n.starts_with("CURRENT") || n.ends_with(".log"))
            .collect();
        n.sort();
        n
    };
    let before = names();
    assert!(!before.is_empty());
    let ledger = std::fs::read(tmp.path().join("d/.kvperf-loaded-keys")).unwrap();
    for bad in ["rocksdb.format_version=9", "rocksdb.compression=brotli"] {
        let out = load(&["--fresh", "-p", bad]);
        let named = bad.split(['.', '=']).nth(1).unwrap();
        assert_input_error(&out, named);
        assert_eq!(names(), before, "the store was emptied by {bad}");
        assert_eq!(
            std::fs::read(tmp.path().join("d/.kvperf-loaded-keys")).unwrap(),
            ledger
        );
    }
}

/// A pause in the trace longer than `stalltimeout` (a quiet night in a
/// cache trace) is the trace's time, not a stall: the open-loop replay
/// waits through it and completes. It ended as "it stopped answering",
/// exit 3, after the stall timeout (300 s when this pass found it).
#[test]
fn a_pause_in_the_trace_longer_than_the_stall_timeout_is_no_stall() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = common::import_csv_trace(tmp.path(), "pause", "0,insert,k1,100\n4,read,k1,100\n");
    let child = spawn(
        tmp.path(),
        &[
            "replay",
            &trace,
            "--engine",
            "null",
            "--speed",
            "1",
            "-p",
            "stalltimeout=1",
        ],
    );
    let out = ended_within(child, Duration::from_secs(120)).expect("the replay ends");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("stopped answering"), "{}", out.stderr);
    assert_eq!(common::metric(&out.stdout, "READ", "Operations"), Some(1.0));
}
