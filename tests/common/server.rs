//! A database server started by `kvperf server start` on a free port for
//! one test, and stopped (checked) when dropped. The one helper every test
//! that needs a real server uses.

use std::path::{Path, PathBuf};

pub struct Server {
    /// The server's name for `kvperf server` (redis, postgres, ...).
    pub name: &'static str,
    pub port: u16,
    work: tempfile::TempDir,
    extra: Vec<String>,
}

impl Server {
    /// Starts `name` (redis, postgres); None, with the reason printed as
    /// SKIPPED for `test`, when this machine cannot run it (under CI, a
    /// failure: see `cannot_start`).
    pub fn start(name: &'static str, test: &str) -> Option<Self> {
        Self::start_with(name, test, Vec::new())
    }

    /// Starts `name` with `extra` arguments for `kvperf server start`
    /// (and a free port for each of its other ports).
    pub fn start_with(name: &'static str, test: &str, mut extra: Vec<String>) -> Option<Self> {
        if let Ok(known) = kvperf::server::find(name) {
            for port in known.port_settings {
                extra.extend(["-p".to_string(), format!("{port}={}", free_port())]);
            }
        }
        let server = Self {
            name,
            port: free_port(),
            work: passable_tempdir(),
            extra,
        };
        let out = server.action("start");
        if out.code != 0 {
            let why = format!(
                "`kvperf server start {name}` could not run it here: {}",
                out.stderr.trim()
            );
            match cannot_start(test, &why, std::env::var("CI").ok().as_deref()) {
                Ok(skipped) => super::note_skip(&skipped),
                Err(failed) => panic!("{failed}"),
            }
            return None;
        }
        Some(server)
    }

    /// `kvperf server ACTION NAME --dir DIR` (start also passes the port).
    pub fn action(&self, action: &str) -> super::Output {
        let server_dir = self.server_dir().display().to_string();
        let port = self.port.to_string();
        let mut args = vec!["server", action, self.name, "--dir", &server_dir];
        if action == "start" {
            args.extend(["--port", &port]);
            args.extend(self.extra.iter().map(String::as_str));
        }
        super::kvperf(self.work.path(), &args)
    }

    /// `-p` properties that point the engine of the same name at it.
    pub fn properties(&self) -> Vec<String> {
        vec![self.port_property(self.name)]
    }

    /// `ENGINE.port=PORT` for the engine `engine` that talks to it.
    pub fn port_property(&self, engine: &str) -> String {
        format!("{engine}.port={}", self.port)
    }

    /// A scratch directory that lives as long as the server.
    pub fn dir(&self) -> &Path {
        self.work.path()
    }

    /// Where the server keeps its data (its pid file among them).
    pub fn server_dir(&self) -> PathBuf {
        self.work.path().join("server")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let out = self.action("stop");
        if !std::thread::panicking() {
            assert_eq!(out.code, 0, "stopping {}: {}", self.name, out.stderr);
        }
    }
}

/// What a test whose server cannot start does, given the `CI` variable:
/// Ok(the SKIPPED line) on a developer's machine; under CI (`CI=true`)
/// Err(why it fails), since a skip there would pass a test that never ran.
pub fn cannot_start(test: &str, why: &str, ci: Option<&str>) -> Result<String, String> {
    if ci.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1") {
        Err(format!(
            "FAILED {test}: CI=true and its server cannot start: {why}"
        ))
    } else {
        Ok(format!("SKIPPED {test}: {why}"))
    }
}

/// A port free now, below the kernel's ephemeral range (32768-60999 by
/// default): a port of that range, free when picked, may meanwhile become
/// the local port of any outgoing connection on the machine (a Cassandra
/// started seconds later failed twice to bind one in a whole-suite run).
/// Each pick in this process is another port; the start differs by pid.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static PICKS: AtomicU32 = AtomicU32::new(0);
    let offset = std::process::id().wrapping_mul(7919) % SPAN;
    loop {
        let pick = PICKS.fetch_add(1, Ordering::Relaxed);
        assert!(pick < SPAN, "no free port left below the ephemeral range");
        let port = (LOW + (offset + pick) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A scratch directory of the test's own that a server's OS user may pass:
/// as root, PostgreSQL runs as its own user, and kvperf refuses a --dir
/// behind a directory that user cannot pass (under umask 077, say) rather
/// than change it.
pub fn passable_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    dir
}
