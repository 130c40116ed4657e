//! Hostile cases: servers and their data (docs/reliability.md). kvperf
//! acts on a server only as it recorded it when it started it (pid, its
//! start time and executable, port, directory): start, stop, status and a
//! failed start's clean-up touch only that server; `--fresh` empties only
//! a table or key prefix kvperf made and marked. A user's own server is a
//! `redis-server` this test starts itself; a user's own table is made with
//! psql.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, server::free_port, server::Server};

/// A redis-server of the user's own: started by the test, not by kvperf,
/// holding a key of the user's; killed when dropped.
struct UsersRedis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl UsersRedis {
    fn start() -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let Ok(child) = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            eprintln!("SKIPPED: no redis-server here");
            return None;
        };
        let users = Self {
            child,
            port,
            _dir: dir,
        };
        let began = Instant::now();
        while users.cli(&["PING"]).as_deref() != Some("PONG") {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "the user's redis-server never answered"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            users.cli(&["SET", "kv:session", "the user's"]).as_deref(),
            Some("OK")
        );
        Some(users)
    }

    /// redis-cli's answer, or None when it could not reach the server.
    fn cli(&self, args: &[&str]) -> Option<String> {
        redis_cli(self.port, args)
    }

    /// Still running, its key still there.
    fn assert_untouched(&mut self) {
        assert_eq!(self.child.try_wait().unwrap(), None, "the user's redis-server exited");
        assert_eq!(
            self.cli(&["GET", "kv:session"]).as_deref(),
            Some("the user's")
        );
    }
}

impl Drop for UsersRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.starts_with("Could not connect")).then_some(text)
}

/// `kvperf server ACTION redis --dir DIR --port PORT`.
fn server(dir: &Path, action: &str, port: u16) -> common::Output {
    let shown = dir.display().to_string();
    common::kvperf(
        dir.parent().unwrap(),
        &["server", action, "redis", "--dir", &shown, "--port", &port.to_string()],
    )
}

fn answers(port: u16) -> bool {
    redis_cli(port, &["PING"]).as_deref() == Some("PONG")
}

#[test]
fn a_failed_start_on_another_port_leaves_the_running_server_alone() {
    let Some(redis) = Server::start("redis", "servers::failed_start") else {
        return;
    };
    let other = free_port();
    for port in [other, 0] {
        let out = server(&redis.server_dir(), "start", port);
        if port == 0 {
            common::assert_input_error(&out, "--port 0");
        } else {
            common::assert_input_error(
                &out,
                &format!("runs on port {}", redis.port),
            );
        }
        assert!(answers(redis.port), "kvperf's own Redis was stopped by a failed start");
    }
    assert!(!answers(other));
}

#[test]
fn a_stop_naming_another_port_stops_nothing() {
    let Some(redis) = Server::start("redis", "servers::stop_other_port") else {
        return;
    };
    let out = server(&redis.server_dir(), "stop", free_port());
    common::assert_input_error(&out, "nothing stopped");
    assert!(answers(redis.port), "stop --port OTHER stopped kvperf's Redis");
    // Named by its own port, it stops.
    let out = server(&redis.server_dir(), "stop", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!answers(redis.port));
}

/// A stop or status in kvperf's directory naming the port of a user's own
/// redis-server sends that server nothing and says nothing about it.
#[test]
fn stop_and_status_naming_a_users_server_leave_it_alone() {
    let Some(redis) = Server::start("redis", "servers::users_server") else {
        return;
    };
    let Some(mut users) = UsersRedis::start() else {
        return;
    };
    let out = server(&redis.server_dir(), "status", users.port);
    common::assert_input_error(&out, &format!("runs on port {}", redis.port));
    assert!(!out.stdout.contains(&users.port.to_string()), "{}", out.stdout);
    let out = server(&redis.server_dir(), "stop", users.port);
    common::assert_input_error(&out, "nothing stopped");
    users.assert_untouched();
    assert!(answers(redis.port));
    // A directory kvperf never started a server in, the user's port named.
    let empty = tempfile::tempdir().unwrap();
    let out = server(&empty.path().join("none"), "stop", users.port);
    common::assert_input_error(&out, "kvperf has no record of a redis server on port");
    users.assert_untouched();
}

/// kvperf's server died without its pid file going (kill -9, a crash), and
/// its pid now belongs to another process: a user's own redis-server. Stop
/// and status see no kvperf server; a start starts a new one beside it.
#[test]
fn a_pid_file_naming_another_process_is_not_trusted() {
    let Some(redis) = Server::start("redis", "servers::stale_pid_file") else {
        return;
    };
    let Some(mut users) = UsersRedis::start() else {
        return;
    };
    let dir = redis.server_dir();
    let pid_file = dir.join("redis.pid");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let began = Instant::now();
    while answers(redis.port) {
        assert!(began.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&pid_file, format!("{}\n", users.child.id())).unwrap();

    let out = server(&dir, "status", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("not running"), "{}", out.stdout);
    let out = server(&dir, "stop", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    users.assert_untouched();
    // The start launches a server of its own and says so.
    let out = server(&dir, "start", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("started"), "{}", out.stdout);
    assert!(answers(redis.port));
    users.assert_untouched();
    // `redis` stops it when dropped, and only it.
    drop(redis);
    users.assert_untouched();
}
