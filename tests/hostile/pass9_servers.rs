//! The ninth hostile pass, servers and their data (docs/reliability.md,
//! "Pass 9: servers"). Each case failed on main of 2026-11-29 (31ece17).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;

/// `kvperf server ACTION redis --dir DIR --port PORT`.
fn redis(dir: &Path, action: &str, port: u16) -> common::Output {
    let shown = dir.display().to_string();
    let port = port.to_string();
    common::kvperf(
        dir.parent().unwrap(),
        &["server", action, "redis", "--dir", &shown, "--port", &port],
    )
}

/// The live process `pid`'s command line, if it runs.
fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&raw).replace('\0', " "))
}

/// What a killed start left, ended when the test ends (pass or fail): the
/// start script's process group and the redis-server it launched.
struct Leftovers {
    script_groups: Vec<i32>,
    server: Option<i32>,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for group in &self.script_groups {
            // SAFETY: the process group of the script this test's kvperf ran.
            unsafe { libc::killpg(*group, libc::SIGKILL) };
        }
        if let Some(pid) = self.server {
            if cmdline(pid).is_some_and(|c| c.contains("redis-server")) {
                // SAFETY: the redis-server this test's start launched.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// A redis `server start` in `work/redis` killed (`kill -9`) after its
/// script launched redis-server, before the start ended: its directory,
/// port and server's pid, and what the test ends when it ends. `None`
/// (skipped, or failed under CI) without redis.
fn killed_start(work: &Path, test: &str) -> Option<(std::path::PathBuf, u16, i32, Leftovers)> {
    let have = std::process::Command::new("sh")
        .args(["-c", "command -v redis-server && command -v redis-cli"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        common::skip_unless_ci(test, "no redis-server here (apt-get install redis-server)");
        return None;
    }
    let dir = work.join("redis");
    let port = common::server::free_port();
    // A redis-cli that never hears PONG: the start script waits after it
    // launched redis-server (up to its 60 s), which is the moment killed.
    let bin = work.join("bin");
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
    let mut start = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["server", "start", "redis", "--dir"])
        .arg(&dir)
        .args(["--port", &port.to_string()])
        .env("PATH", path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut left = Leftovers {
        script_groups: Vec::new(),
        server: None,
    };
    // The server is launched once its pid file names a live redis-server.
    let began = Instant::now();
    let server = loop {
        let pid = std::fs::read_to_string(dir.join("redis.pid"))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok());
        if let Some(pid) = pid.filter(|p| cmdline(*p).is_some_and(|c| c.contains("redis-server"))) {
            break pid;
        }
        assert!(
            start.try_wait().unwrap().is_none(),
            "the start ended before it launched redis-server"
        );
        assert!(
            began.elapsed() < Duration::from_secs(50),
            "no redis-server launched within 50 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    left.server = Some(server);
    // Its script (its own process group) outlives it: ended at the end.
    for task in std::fs::read_dir(format!("/proc/{}/task", start.id())).unwrap() {
        let children = std::fs::read_to_string(task.unwrap().path().join("children"));
        left.script_groups.extend(
            children
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    start.kill().unwrap();
    start.wait().unwrap();
    Some((dir, port, server, left))
}

/// `kill -9` of `kvperf server start` after its script launched the
/// server, before the record was written (an OOM kill, a CI job's
/// timeout): the server ran on with no record naming it. `status` said
/// "not running" while it ran, the next `start` "port ... in use by another
/// process", `stop --port` "has no record": kvperf could not stop its own
/// server. The start now records itself before its script runs; what that
/// script launched is then kvperf's, and `status` and `stop` act on it.
#[test]
fn a_start_killed_after_its_script_launched_the_server_leaves_it_recorded() {
    let work = tempfile::tempdir().unwrap();
    let Some((dir, port, server, _left)) = killed_start(work.path(), "pass9_servers::killed_start")
    else {
        return;
    };

    let status = redis(&dir, "status", port);
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(
        status
            .stdout
            .contains(&format!("redis: running pid={server} ")),
        "the killed start's server runs, unrecorded: {}",
        status.stdout
    );
    let again = redis(&dir, "start", port);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("already running"), "{}", again.stdout);
    let stop = redis(&dir, "stop", port);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(
        stop.stdout.contains(&format!("stopped pid={server} ")),
        "{}",
        stop.stdout
    );
    assert!(
        !cmdline(server).is_some_and(|c| c.contains("redis-server")),
        "`server stop` left the killed start's redis-server running"
    );
}

/// Pass 10 (lead): a start killed after its script launched the server
/// leaves a `starting` record, whose server is found by its pid files. If
/// that server then died (`kill -9`, a crash) and its pid was reused by
/// another process, `server stop` signalled that process: found by a pid
/// file no older than the record and begun after the killed kvperf, it
/// passed for the server (seen with a `sleep` at the pid file's pid: "redis:
/// stopped pid=N", the `sleep` killed). A process begun later than the
/// start could have lasted after its record was written is now not the
/// start's server. (Here the record and pid file are dated back ten minutes,
/// as when the pid is reused long after; a reuse within the start's own
/// time limit stays indistinguishable.)
#[test]
fn a_pid_reused_after_a_killed_starts_server_died_is_not_signalled() {
    let work = tempfile::tempdir().unwrap();
    let Some((dir, port, server, _left)) =
        killed_start(work.path(), "pass9_servers::reused_pid_after_killed_start")
    else {
        return;
    };
    // The server dies; its pid file stays, naming a pid now a stranger's.
    // SAFETY: the redis-server this test's start launched.
    unsafe { libc::kill(server, libc::SIGKILL) };
    let began = Instant::now();
    while cmdline(server).is_some_and(|c| c.contains("redis-server")) {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "redis-server did not die"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stranger = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    struct Ends<'a>(&'a mut std::process::Child);
    impl Drop for Ends<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let pid = stranger.id();
    let stranger = Ends(&mut stranger);
    std::fs::write(dir.join("redis.pid"), format!("{pid}\n")).unwrap();
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(600);
    for name in [".kvperf-server-run", "redis.pid"] {
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join(name))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    let stop = redis(&dir, "stop", port);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(
        stop.stdout.contains("redis: not running"),
        "{}",
        stop.stdout
    );
    assert!(
        stranger.0.try_wait().unwrap().is_none(),
        "`server stop` signalled the process that reused the dead server's pid: {}",
        stop.stdout
    );
}
