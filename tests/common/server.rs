//! A database server started by `kvperf server start` on a free port for
//! one test, and stopped (checked) when dropped.

use std::path::Path;

pub struct Server {
    pub name: &'static str,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Server {
    /// Starts `name` (redis, postgres); None, with the reason printed as
    /// SKIPPED for `test`, when this machine cannot run it.
    pub fn start(name: &'static str, test: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let server_dir = dir.path().join("server").display().to_string();
        let out = super::kvperf(
            dir.path(),
            &[
                "server",
                "start",
                name,
                "--dir",
                &server_dir,
                "--port",
                &port.to_string(),
            ],
        );
        if out.code != 0 {
            eprintln!(
                "SKIPPED {test}: `kvperf server start {name}` could not run it here: {}",
                out.stderr.trim()
            );
            return None;
        }
        Some(Self { name, port, dir })
    }

    /// `-p` properties that point the engine of the same name at it.
    pub fn properties(&self) -> Vec<String> {
        vec![format!("{}.port={}", self.name, self.port)]
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let server_dir = self.dir.path().join("server").display().to_string();
        let out = super::kvperf(
            self.dir.path(),
            &["server", "stop", self.name, "--dir", &server_dir],
        );
        if !std::thread::panicking() {
            assert_eq!(out.code, 0, "stopping {}: {}", self.name, out.stderr);
        }
    }
}

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
