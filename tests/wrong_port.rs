//! A server engine pointed at a port where something that does not speak
//! its protocol listens: one line naming the address and what was wrong,
//! in bounded time: exit 2 for a wrong protocol; exit 3 at stalltimeout
//! for a silent listener, which looks like a server that stopped
//! answering. The listeners are this test's own.
#![cfg(any(feature = "redis", feature = "postgres"))]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `kvperf load` against `port`, killed if it outlives `limit`.
fn load(engine: &str, port: u16, stalltimeout: &str, limit: Duration) -> common::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["load", "--engine", engine, "-P", &common::workload("a")])
        .args([
            "-p",
            &format!("{engine}.port={port}"),
            "-p",
            "recordcount=10",
            "-p",
            &format!("stalltimeout={stalltimeout}"),
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("kvperf load --engine {engine} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    common::Output::from(out)
}

/// Accepts (the kernel does) and never answers, while it lives.
fn silent() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// Answers every connection as an HTTP server would, then closes it.
fn http() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let _ = stream.read(&mut [0; 1024]);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    port
}

fn check(engine: &str, protocol: &str) {
    // The limit is stalltimeout (3 s); far above it is a hang.
    let limit = Duration::from_secs(60);
    let (_listener, port) = silent();
    let out = load(engine, port, "3", limit);
    assert_eq!(out.code, 3, "{}", out.stderr);
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!(
            "127.0.0.1:{port} did not answer within 3 s while kvperf waited for"
        )) && last.contains(&format!(
            "it stopped answering, or what listens there is not {protocol} (stalltimeout=3)"
        )),
        "{}",
        out.stderr
    );
    let port = http();
    let out = load(engine, port, "300", limit);
    common::assert_input_error(
        &out,
        &format!("the server at 127.0.0.1:{port} does not speak the {protocol} protocol"),
    );
}

#[cfg(feature = "redis")]
#[test]
fn redis_on_a_port_that_is_not_redis_fails_in_one_line() {
    check("redis", "Redis");
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_on_a_port_that_is_not_postgres_fails_in_one_line() {
    check("postgres", "PostgreSQL");
}
