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

/// `kill -9` of `kvperf server start` after its script launched the
/// server, before the record was written (an OOM kill, a CI job's
/// timeout): the server ran on with no record naming it. `status` said
/// "not running" while it ran, the next `start` "port ... in use by another
/// process", `stop --port` "has no record": kvperf could not stop its own
/// server. The start now records itself before its script runs; what that
/// script launched is then kvperf's, and `status` and `stop` act on it.
#[test]
fn a_start_killed_after_its_script_launched_the_server_leaves_it_recorded() {
    let have = std::process::Command::new("sh")
        .args(["-c", "command -v redis-server && command -v redis-cli"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        common::skip_unless_ci(
            "pass9_servers::killed_start",
            "no redis-server here (apt-get install redis-server)",
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("redis");
    let port = common::server::free_port();
    // A redis-cli that never hears PONG: the start script waits after it
    // launched redis-server (up to its 60 s), which is the moment killed.
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
