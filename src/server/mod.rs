//! Database servers that kvperf starts itself: installed from the package
//! registries if missing (Debian packages for Redis and PostgreSQL,
//! Cassandra's jars from Maven Central, FerretDB built from the Go module
//! proxy), run on 127.0.0.1 only, in a data directory kvperf owns, and
//! stopped cleanly. Each server is one entry in [`SERVERS`] and its steps
//! one small shell script (`scripts/NAME.sh`, after the shared
//! `scripts/common.sh`, embedded in the binary); this module runs them with
//! a time limit and turns their one-line answers into results or errors.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::error::InputError;

mod input;
mod record;
mod registry;
pub use input::{check_dir, check_setting};
use record::{Proc, Record};
pub use registry::{find, Server, Setting, SERVERS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    /// Before a start makes anything: what the server's script refuses in
    /// the place it was given (not a command of its own).
    Check,
    Start,
    Stop,
    Status,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Install => "install",
            Action::Check => "check",
            Action::Start => "start",
            Action::Stop => "stop",
            Action::Status => "status",
        }
    }
}

/// Where and how a server runs.
#[derive(Debug, Clone)]
pub struct Instance {
    pub server: &'static Server,
    pub dir: PathBuf,
    pub port: u16,
    /// Whether the port was named (`--port`): stop and status then act
    /// only on a server kvperf recorded on that port.
    pub port_given: bool,
    pub nodes: u32,
    /// Server settings as the scripts' KVPERF_* variables (e.g.
    /// `KVPERF_PG_SYNC_COMMIT=off`).
    pub settings: BTreeMap<String, String>,
}

/// What a script said: `running` is false only for `status` of a stopped server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub running: bool,
    /// The `key=value` words of its summary line (pid, addr, version...).
    pub facts: BTreeMap<String, String>,
    pub line: String,
}

/// The default data directory of a server: outside /root when root (the
/// PostgreSQL server runs as its own user and must reach it).
pub fn default_dir(server: &Server) -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let base = if root {
        PathBuf::from("/var/lib/kvperf/servers")
    } else {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".local/share/kvperf/servers")
    };
    base.join(server.name)
}

/// The marker kvperf leaves in a server directory it made.
const MARKER: &str = ".kvperf-server";

impl Instance {
    /// Runs `action`, installing first for `start`; bounded in time.
    ///
    /// Only the server kvperf recorded in this directory is acted on
    /// ([`record`]): `stop` and `status` naming a port it has no record of
    /// there are refused, a start never stops a server that ran before it,
    /// and a failed start stops only the processes it launched.
    pub fn run(&self, action: Action) -> anyhow::Result<Answer> {
        let name = self.server.name;
        let shown = self.dir.display();
        if action == Action::Install {
            return self.script(action, self.server.install_timeout_s, None);
        }
        if action == Action::Start {
            input::check_dir(&self.dir)?;
            self.claim_dir()?;
        } else if std::fs::symlink_metadata(self.dir.join(MARKER)).is_ok() {
            self.check_server_named()?;
        } else if std::fs::symlink_metadata(self.dir.join(record::RECORD)).is_err() {
            // No marker and no record. (A record without its marker, the
            // marker moved away, still names a server kvperf started here:
            // it was called "not running" while it ran.)
            if self.port_given && action == Action::Stop {
                return Err(self.no_record().into());
            }
            return Ok(Answer {
                running: false,
                facts: BTreeMap::new(),
                line: format!("{name}: not running (no kvperf server in '{shown}')"),
            });
        }
        let _alone = self.hold_dir()?;
        let recorded = Record::read(&self.dir)?;
        if let Some(r) = recorded.as_ref().filter(|r| r.server != name) {
            return Err(InputError::Invalid(format!(
                "--dir '{shown}' holds kvperf's record of a {0} server, not {name}'s: nothing done; name {0}, or give {name} another --dir",
                r.server
            ))
            .into());
        }
        let alive: Vec<Proc> = match recorded.as_ref() {
            Some(r) if r.procs.is_empty() => self.launched_by_unfinished_start(r),
            Some(r) => r.alive().into_iter().cloned().collect(),
            None => Vec::new(),
        };
        if let Some(r) = recorded.as_ref().filter(|_| !alive.is_empty()) {
            if r.port != self.port && (self.port_given || action == Action::Start) {
                let pids = Record::pid_list(&alive.iter().collect::<Vec<_>>());
                let what = match action {
                    Action::Stop => ": nothing stopped",
                    Action::Start => ": nothing started; stop it first, or give another --dir",
                    _ => "",
                };
                return Err(InputError::Invalid(format!(
                    "kvperf's {name} in '{shown}' runs on port {} (pid {pids}), not {}{what}",
                    r.port, self.port
                ))
                .into());
            }
        } else if self.port_given
            && action == Action::Stop
            && recorded.as_ref().is_none_or(|r| r.port != self.port)
        {
            // What kvperf last started here is gone (stopped, crashed,
            // rebooted): "not running" on its port, none other is its.
            return Err(self.no_record().into());
        }
        match action {
            Action::Start => self.start(&alive),
            Action::Stop => self.stop(recorded.as_ref().map_or(self.port, |r| r.port), &alive),
            _ => {
                if alive.is_empty() {
                    return Ok(Answer {
                        running: false,
                        facts: BTreeMap::new(),
                        line: format!("{name}: not running"),
                    });
                }
                let port = recorded.as_ref().map_or(self.port, |r| r.port);
                let mut at = self.clone();
                at.port = port;
                at.script(Action::Status, 180, Some(&alive))
            }
        }
    }

    /// One kvperf at a time acts on a server directory (held until the
    /// file is dropped; closed on exec, so no server inherits it): two
    /// starts at once each launched a server and the record kept one, the
    /// other left running unrecorded, named by neither start.
    fn hold_dir(&self) -> anyhow::Result<std::fs::File> {
        let shown = self.dir.display();
        let dir =
            std::fs::File::open(&self.dir).with_context(|| format!("cannot open '{shown}'"))?;
        match dir.try_lock() {
            Ok(()) => Ok(dir),
            Err(std::fs::TryLockError::WouldBlock) => Err(InputError::Invalid(format!(
                "another kvperf is starting, stopping or asking after the {} server in '{shown}' now: nothing done; run this command after it",
                self.server.name
            ))
            .into()),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(anyhow::Error::new(e).context(format!("cannot lock '{shown}'")))
            }
        }
    }

    /// The processes a start that never finished (its kvperf killed, its
    /// record still `starting`) launched: those its pid files here name
    /// that began after that kvperf, no later than the start could have
    /// lasted after its record was written, and whose pid file is no older
    /// than the record (a pid file an earlier server left, or one the
    /// killed start's server left when it died, may name a pid now another
    /// process's: one begun long after the start is not its server).
    fn launched_by_unfinished_start(&self, record: &Record) -> Vec<Proc> {
        let Some(starter) = record.starting.as_ref() else {
            return Vec::new();
        };
        let recorded = std::fs::symlink_metadata(self.dir.join(record::RECORD))
            .and_then(|m| m.modified())
            .ok();
        let Some(recorded) = recorded else {
            return Vec::new();
        };
        let written = recorded
            .checked_sub(Duration::from_secs(1))
            .unwrap_or(recorded);
        let longest = self.server.start_timeout_s * u64::from(self.nodes.max(1)) + 5;
        let latest = recorded + Duration::from_secs(longest);
        let mut launched: Vec<Proc> = pid_files(&self.dir)
            .into_iter()
            .filter(|(path, _)| {
                std::fs::symlink_metadata(path)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t >= written)
            })
            .filter_map(|(_, pid)| Proc::observe(pid))
            .filter(|p| p.start >= starter.start && p.pid != starter.pid)
            .filter(|p| p.began().is_some_and(|b| b <= latest))
            // A pid reused within that time names another program: the
            // start's server runs this server's.
            .filter(|p| runs(p.pid, self.server.process))
            .collect();
        launched.sort_by_key(|p| p.pid);
        launched.dedup();
        launched
    }

    /// `stop --port P` where kvperf recorded no server on P in this directory.
    fn no_record(&self) -> InputError {
        InputError::Invalid(format!(
            "kvperf has no record of a {} server on port {} in '{}': nothing stopped",
            self.server.name,
            self.port,
            self.dir.display()
        ))
    }

    fn start(&self, alive: &[Proc]) -> anyhow::Result<Answer> {
        self.script(Action::Install, self.server.install_timeout_s, None)?;
        let began = record::own_start();
        if alive.is_empty() {
            // Recorded before the script launches anything: killed
            // (`kill -9`) after it did, this kvperf left a server that no
            // record named ("not running" while it ran, its port "in use
            // by another process" to the next start, which nothing stopped).
            Record {
                server: self.server.name.to_string(),
                port: self.port,
                procs: Vec::new(),
                dir: Record::identity(&self.dir),
                starting: Proc::observe(std::process::id()),
            }
            .write(&self.dir)?;
        }
        let started = self.script(
            Action::Start,
            self.server.start_timeout_s * u64::from(self.nodes.max(1)),
            Some(alive),
        );
        let answer = match started {
            Ok(answer) => answer,
            Err(e) => {
                // Nodes this start launched are not left running; a server
                // that ran before it is not touched.
                if alive.is_empty() {
                    // Begun after kvperf and running the server's
                    // program: a pid file's pid may be reused by then.
                    let launched: Vec<Proc> = pids_in(&self.dir)
                        .into_iter()
                        .filter_map(Proc::observe)
                        .filter(|p| p.start >= began && runs(p.pid, self.server.process))
                        .collect();
                    let launched: Vec<&Proc> = launched.iter().collect();
                    record::stop(
                        &launched,
                        self.server.stop_signal,
                        self.server.kill_stuck,
                        Duration::from_secs(self.server.stop_timeout_s),
                        &|| false,
                    );
                }
                return Err(e);
            }
        };
        let pids = answer
            .facts
            .get("pid")
            .or_else(|| answer.facts.get("pids"))
            .cloned()
            .unwrap_or_default();
        let procs: Vec<Proc> = pids
            .split(',')
            .filter_map(|p| p.parse().ok())
            .filter_map(Proc::observe)
            .collect();
        if procs.is_empty() {
            anyhow::bail!(
                "kvperf server start {}: started, but no process to record (pid '{pids}'); see the logs in '{}'",
                self.server.name,
                self.dir.display()
            );
        }
        Record {
            server: self.server.name.to_string(),
            port: self.port,
            procs,
            dir: Record::identity(&self.dir),
            starting: None,
        }
        .write(&self.dir)?;
        Ok(answer)
    }

    /// Stops the recorded processes that still run, each checked before
    /// its signal.
    fn stop(&self, port: u16, alive: &[Proc]) -> anyhow::Result<Answer> {
        let name = self.server.name;
        if alive.is_empty() {
            return Ok(Answer {
                running: false,
                facts: BTreeMap::new(),
                line: format!("{name}: not running"),
            });
        }
        let began = Instant::now();
        let procs: Vec<&Proc> = alive.iter().collect();
        let pids = Record::pid_list(&procs);
        // Interrupted while it waits, it says what it had done: it died of
        // the signal, its server's shutdown begun and no word of it.
        catch_interrupts();
        let left = record::stop(
            &procs,
            self.server.stop_signal,
            self.server.kill_stuck,
            Duration::from_secs(self.server.stop_timeout_s),
            &|| INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed),
        );
        if INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) && !left.is_empty() {
            anyhow::bail!(
                "kvperf server stop {name}: interrupted (SIGINT, SIGTERM or SIGHUP) while pid {pids} shut down: its stop signal was sent, so it may still be going; `kvperf server status {name} --dir '{}'` says when it is gone",
                self.dir.display()
            );
        }
        if !left.is_empty() {
            anyhow::bail!(
                "kvperf server stop {name}: pid {left:?} did not exit within {} s; see the logs in '{}'",
                self.server.stop_timeout_s,
                self.dir.display()
            );
        }
        forget_pid_files(&self.dir, alive);
        let key = if alive.len() > 1 { "pids" } else { "pid" };
        let line = format!(
            "{name}: stopped {key}={pids} addr=127.0.0.1:{port} elapsed={:.1}s",
            began.elapsed().as_secs_f64()
        );
        Ok(Answer {
            running: false,
            facts: facts(&line),
            line,
        })
    }

    /// A server directory is kvperf's: made (and marked) here, or marked
    /// before; anything else that is not empty is refused.
    fn claim_dir(&self) -> anyhow::Result<()> {
        let shown = self.dir.display();
        let marker = self.dir.join(MARKER);
        if std::fs::symlink_metadata(&marker).is_ok() {
            // Its name is no proof: a user's `.kvperf-server` made a
            // directory of notes kvperf's (a server started in it).
            let one_file =
                std::fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file() && m.nlink() == 1);
            let ours = one_file
                && crate::files::read_input(&marker, "marker", crate::files::bound::MARKER)
                    .is_ok_and(|text| {
                        text.split_once('\n')
                            .is_some_and(|(_, rest)| rest.starts_with("created by kvperf "))
                    });
            if !ours {
                return Err(InputError::Invalid(format!(
                    "--dir '{shown}' has a '{MARKER}' that is not kvperf's marker (a link, a file with another name, or other text); use a new or empty directory"
                ))
                .into());
            }
            self.check_server_named()?;
            self.check_no_links()?;
            return self.check_place();
        }
        if self.dir.exists() && !self.dir.is_dir() {
            return Err(InputError::Invalid(format!(
                "--dir '{shown}' is not a directory; give a new or empty directory"
            ))
            .into());
        }
        if self.dir.exists() {
            let empty = std::fs::read_dir(&self.dir)
                .with_context(|| format!("cannot list '{shown}'"))?
                .next()
                .is_none();
            if !empty {
                return Err(InputError::Invalid(format!(
                    "--dir '{shown}' is not empty and not a kvperf server directory; use a new or empty directory"
                ))
                .into());
            }
        }
        self.check_place()?;
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create server directory '{shown}'"))?;
        // Atomically, never through a link (docs/reliability.md, "Links").
        let written = crate::files::owned::write_atomically(
            &self.dir,
            MARKER,
            format!(
                "{}\ncreated by kvperf {}\n",
                self.server.name,
                env!("CARGO_PKG_VERSION")
            )
            .as_bytes(),
            crate::files::owned::Place::New,
        );
        match written {
            // Another kvperf claimed it at the same moment: judge its marker.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.claim_dir(),
            other => other.with_context(|| format!("cannot write to '{shown}'")),
        }
    }

    /// The script's refusals of the place (a parent directory PostgreSQL's
    /// OS user cannot pass, which kvperf will not change), before anything
    /// is made there.
    fn check_place(&self) -> anyhow::Result<()> {
        self.script(Action::Check, 60, None).map(|_| ())
    }

    /// The server directory is this server's: its marker's first line
    /// names the server that claimed it. `server stop redis --dir D` where
    /// kvperf's PostgreSQL ran in D stopped the PostgreSQL server (its
    /// recorded processes), and `server start postgres` in a stopped Redis
    /// server's directory made a PostgreSQL cluster beside Redis's files.
    fn check_server_named(&self) -> anyhow::Result<()> {
        let name = self.server.name;
        let shown = self.dir.display();
        let marker = self.dir.join(MARKER);
        let owner = std::fs::symlink_metadata(&marker)
            .is_ok_and(|m| m.is_file())
            .then(|| crate::files::read_input(&marker, "marker", crate::files::bound::MARKER).ok())
            .flatten()
            .and_then(|text| text.lines().next().map(str::to_string));
        match owner {
            Some(owner) if owner == name => Ok(()),
            Some(owner) if find(&owner).is_ok() => Err(InputError::Invalid(format!(
                "--dir '{shown}' is kvperf's {owner} server directory, not {name}'s: nothing done; name {owner} (kvperf server ... {owner} --dir '{shown}'), or give {name} another --dir"
            ))
            .into()),
            _ => Err(InputError::Invalid(format!(
                "--dir '{shown}' has a '{MARKER}' that is not kvperf's marker of a {name} server directory: nothing done; give another --dir"
            ))
            .into()),
        }
    }

    /// No link and no file with another name among the server directory's
    /// entries: the server opens its own log and pid file (and its data)
    /// following links, so a `redis.log` linked to a user's file had the
    /// server's log appended to that file.
    fn check_no_links(&self) -> anyhow::Result<()> {
        let shown = self.dir.display();
        for entry in
            std::fs::read_dir(&self.dir).with_context(|| format!("cannot list '{shown}'"))?
        {
            let entry = entry.with_context(|| format!("cannot list '{shown}'"))?;
            let meta = entry
                .metadata()
                .with_context(|| format!("cannot list '{shown}'"))?;
            let what = if meta.file_type().is_symlink() {
                "is a symbolic link".to_string()
            } else if meta.is_file() && meta.nlink() > 1 {
                format!("has {} hard links", meta.nlink())
            } else {
                continue;
            };
            return Err(InputError::Invalid(format!(
                "'{}' in server directory '{shown}' {what}: the server would write through it into a file kvperf did not make; move it away",
                entry.path().display()
            ))
            .into());
        }
        Ok(())
    }

    /// Runs the server's script for `action`. `verified`: the processes
    /// kvperf recorded and checked as this directory's server (the script
    /// trusts no other pid file until it launches a server itself).
    fn script(
        &self,
        action: Action,
        limit_s: u64,
        verified: Option<&[Proc]>,
    ) -> anyhow::Result<Answer> {
        let name = self.server.name;
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(self.server.script_text())
            .arg(format!("{name}.sh"))
            .arg(action.word())
            .env("KVPERF_DIR", &self.dir)
            .env("KVPERF_PORT", self.port.to_string())
            .env("KVPERF_NODES", self.nodes.to_string())
            .env(
                "KVPERF_START_TIMEOUT",
                self.server.start_timeout_s.to_string(),
            )
            .envs(&self.settings)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        without_servers_variables(&mut cmd, action, name);
        if let Some(procs) = verified {
            let pids = Record::pid_list(&procs.iter().collect::<Vec<_>>());
            cmd.env(
                "KVPERF_VERIFIED",
                if pids.is_empty() { "none".into() } else { pids },
            );
        }
        // Its own process group: a Ctrl-C at the terminal reaches kvperf,
        // which ends the script and what it launched (below); killed
        // alone, kvperf left its script to start a server no record named.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        catch_interrupts();
        let mut child = cmd
            .spawn()
            .context("cannot run bash for the server script")?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let read_all = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_string(&mut text);
                }
                text
            })
        };
        let out = read_all(stdout.map(|p| Box::new(p) as Box<dyn Read + Send>));
        let err = read_all(stderr.map(|p| Box::new(p) as Box<dyn Read + Send>));
        let deadline = Instant::now() + Duration::from_secs(limit_s);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
                end_group(&mut child);
                anyhow::bail!(
                    "kvperf server {} {name}: interrupted (SIGINT, SIGTERM or SIGHUP); its script was stopped{}",
                    action.word(),
                    if action == Action::Start {
                        ", and so is what it had started"
                    } else {
                        ""
                    }
                );
            }
            if Instant::now() > deadline {
                // The whole group: killed alone, bash left its children
                // (a `psql` waiting on a server) waiting on.
                end_group(&mut child);
                anyhow::bail!(
                    "kvperf server {} {name}: no answer within {limit_s} s; see the logs in '{}'",
                    action.word(),
                    self.dir.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (stdout, stderr) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        for note in stderr.lines().filter(|l| !l.contains(": error: ")) {
            eprintln!("kvperf: {}", note.trim_start_matches("kvperf-server "));
        }
        let line = stdout.lines().last().unwrap_or("").trim().to_string();
        match status.code() {
            Some(0) => Ok(Answer {
                running: true,
                facts: facts(&line),
                line,
            }),
            Some(3) if action == Action::Status => Ok(Answer {
                running: false,
                facts: facts(&line),
                line,
            }),
            _ => {
                let why = stderr
                    .lines()
                    .rev()
                    .find(|l| l.contains(": error: "))
                    .map(|l| l.split(": error: ").nth(1).unwrap_or(l).to_string())
                    // No error line: its summary says what it found
                    // ("running pid=9 but not answering on ...").
                    .or_else(|| {
                        line.strip_prefix(&format!("{name}: "))
                            .filter(|l| !l.is_empty())
                            .map(str::to_string)
                    })
                    .unwrap_or_else(|| format!("the {} script failed ({status})", action.word()));
                if status.code() == Some(64) {
                    // Refused: a user's file where the script writes (scripts/common.sh).
                    return Err(InputError::Invalid(format!(
                        "kvperf server {} {name}: {why}",
                        action.word()
                    ))
                    .into());
                }
                anyhow::bail!("kvperf server {} {name}: {why}", action.word())
            }
        }
    }
}

/// Ends a server script and what it runs (its own process group): SIGTERM,
/// SIGKILL 5 s later; a start then stops what it launched
/// ([`Instance::start`]).
fn end_group(child: &mut std::process::Child) {
    let group = child.id() as libc::pid_t;
    // SAFETY: killpg takes a process group id and a signal.
    unsafe { libc::killpg(group, libc::SIGTERM) };
    let until = Instant::now() + Duration::from_secs(5);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe { libc::killpg(group, libc::SIGKILL) };
    let _ = child.wait();
}

/// Set by SIGINT, SIGTERM or SIGHUP once a server script has run in this process.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From the first server script on, SIGINT, SIGTERM and SIGHUP (each time, a
/// plan's forwarded SIGTERM after the terminal's Ctrl-C too) end the
/// script and what it launched rather than kvperf alone: killed, kvperf
/// left its script to start a server that no record named.
fn catch_interrupts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut signals = vec![signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];
        // The terminal or the ssh session closed: by default kvperf died
        // of it, its script going on to start a server no record named.
        // Ignored at start (`nohup`), it stays ignored.
        if !crate::runner::ignored(libc::SIGHUP) {
            signals.push(signal_hook::consts::SIGHUP);
        }
        for signal in signals {
            signal_hook::flag::register(signal, &INTERRUPTED)
                .expect("SIGINT, SIGTERM and SIGHUP take handlers");
        }
    });
}

/// A variable of the user's environment that the servers kvperf starts,
/// or the tools their scripts run, read in place of kvperf's own settings:
/// libpq's, initdb's and pg_ctl's `PG*` (PGSSLMODE, PGSERVICE, PGOPTIONS,
/// PGDATA...), FerretDB's `FERRETDB_*` (each a flag, FERRETDB_MODE and
/// FERRETDB_PROXY_ADDR among them), redis-cli's `REDISCLI_*`, Cassandra's
/// `CASSANDRA_*` and the JVM's options; and what bash itself reads as it
/// starts a script ([`READ_BY_BASH`]). None reaches a server script but
/// its install.
fn read_by_servers(name: &str) -> bool {
    ["PG", "FERRETDB_", "REDISCLI_", "CASSANDRA_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || matches!(
            name,
            "JAVA_TOOL_OPTIONS" | "JDK_JAVA_OPTIONS" | "_JAVA_OPTIONS" | "JVM_OPTS"
        )
        || READ_BY_BASH.contains(&name)
}

/// What bash reads as it starts a script, kept from every script kvperf
/// runs, its installs too: `BASH_ENV` and `ENV` name a file sourced first
/// (a user's `export PG...` there brought back every variable
/// [`read_by_servers`] leaves out); `SHELLOPTS` and `BASHOPTS` set options
/// (`xtrace` printed a PostgreSQL URL's password); `CDPATH` made a
/// relative `--dir` a user's directory.
const READ_BY_BASH: [&str; 5] = ["BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "CDPATH"];

/// Leaves out of `cmd`'s environment the user's variables that a server
/// or its tools read ([`read_by_servers`]): with FERRETDB_MODE=proxy
/// kvperf's FerretDB wrote into the server FERRETDB_PROXY_ADDR named;
/// PGSSLMODE=require or PGSERVICE had a start wait 120 s for its own
/// server. A start names them in a note. (An install keeps them, but for
/// bash's own ([`READ_BY_BASH`]): a proxy's settings for Maven or Go, say.)
fn without_servers_variables(cmd: &mut Command, action: Action, name: &str) {
    for key in READ_BY_BASH {
        cmd.env_remove(key);
    }
    if action == Action::Install {
        return;
    }
    let mut foreign: Vec<std::ffi::OsString> = std::env::vars_os()
        .map(|(key, _)| key)
        .filter(|key| read_by_servers(&key.to_string_lossy()))
        .collect();
    foreign.sort();
    for key in &foreign {
        cmd.env_remove(key);
    }
    if action == Action::Start && !foreign.is_empty() {
        let names: Vec<String> = foreign
            .iter()
            .map(|k| k.to_string_lossy().into_owned())
            .collect();
        eprintln!(
            "kvperf: note: {} not passed to the {name} server and its tools: kvperf's server runs on kvperf's settings alone (-p KEY=VALUE)",
            names.join(", ")
        );
    }
}

/// The live process `pid` runs `program` (a registry's `process`): the
/// file name of its argv[0]'s first word (redis-server retitles itself
/// "redis-server 127.0.0.1:P") or of its executable, exactly; or it is a
/// `java` whose main class is `program`. A word anywhere in its command
/// line is not: `tail -f my-redis-server-notes.txt` passed that check. As
/// scripts/common.sh's `is_program`.
fn runs(pid: u32, program: &str) -> bool {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let raw = String::from_utf8_lossy(&raw);
    let mut args = raw.split('\0');
    let first = args.next().unwrap_or_default();
    let argv0 = first.split(' ').next().unwrap_or_default();
    let argv0 = argv0.rsplit('/').next().unwrap_or_default();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let exe = exe
        .as_ref()
        .and_then(|e| e.file_name())
        .map(|n| n.to_string_lossy());
    let is = |name: &str| argv0 == name || exe.as_deref() == Some(name);
    is(program) || (is("java") && args.any(|a| a == program))
}

/// `redis: started pid=9135 addr=127.0.0.1:6379 version=7.0.15` -> the pairs.
fn facts(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The pid files below `dir` (at most 64 folders deep in all, hidden
/// folders and links not followed) with the process ID on each one's
/// first line; a pid file that is not a small regular file is skipped.
fn pid_files(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else {
                continue;
            };
            if kind.is_dir() && !name.starts_with('.') && pending.len() < 64 {
                pending.push(path);
            } else if name.ends_with(".pid") && kind.is_file() {
                let pid = crate::files::read_input(&path, "pid file", crate::files::bound::MARKER)
                    .ok()
                    .and_then(|t| t.lines().next()?.trim().parse::<u32>().ok());
                if let Some(pid) = pid {
                    found.push((path, pid));
                }
            }
        }
    }
    found
}

/// Removes the pid files in `dir` that name the stopped processes.
fn forget_pid_files(dir: &Path, stopped: &[Proc]) {
    for (path, pid) in pid_files(dir) {
        if stopped.iter().any(|p| p.pid == pid) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The process IDs of a kvperf server in `dir`, from its pid files, for
/// accounting of the server's CPU and I/O.
pub fn pids_in(dir: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = pid_files(dir).into_iter().map(|(_, pid)| pid).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_become_facts() {
        let f = facts(
            "redis: started pid=9135 addr=127.0.0.1:6379 persist=0 version=7.0.15 elapsed=0.1s",
        );
        assert_eq!(f["pid"], "9135");
        assert_eq!(f["addr"], "127.0.0.1:6379");
        assert_eq!(f.len(), 5);
    }

    /// Each server's script, after the shared part, defines what the
    /// shared part's dispatch, stop and status call.
    #[test]
    fn every_script_defines_what_the_shared_part_calls() {
        let check = r#"
for f in do_install do_start do_stop do_status; do declare -F "$f" >/dev/null || exit 11; done
if declare -f do_stop | grep -q stop_server; then
    declare -F stop_server answers >/dev/null || exit 12
    [ -n "${PROCESS:-}" ] || exit 13
fi
echo "$name"
"#;
        for server in &SERVERS {
            let text = server.script_text();
            let body = text.strip_suffix("dispatch \"$@\"\n").unwrap();
            let out = Command::new("bash")
                .arg("-c")
                .arg(format!("{body}{check}"))
                .arg(format!("{}.sh", server.name))
                .env("KVPERF_PORT", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}: {:?} {}",
                server.name,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), server.name);
        }
    }

    /// The scripts' own variables are not taken from the environment:
    /// `LAUNCHED=1` there made `verified` trust a pid kvperf never checked.
    #[test]
    fn a_pid_kvperf_did_not_check_is_not_verified_whatever_the_environment() {
        let text = find("redis").unwrap().script_text();
        let body = text.strip_suffix("dispatch \"$@\"\n").unwrap();
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("{body}\nif verified 12345; then exit 1; fi\n"))
            .arg("redis.sh")
            .env("KVPERF_PORT", "1")
            .env("KVPERF_VERIFIED", "none")
            .env("LAUNCHED", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{:?}", out.status);
    }

    #[test]
    fn a_foreign_directory_is_not_taken() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("photo.jpg"), "x").unwrap();
        let i = Instance {
            server: find("redis").unwrap(),
            dir: tmp.path().to_path_buf(),
            port: 1,
            port_given: false,
            nodes: 1,
            settings: BTreeMap::new(),
        };
        let err = i.run(Action::Start).unwrap_err().to_string();
        assert!(err.contains("not a kvperf server directory"), "{err}");
        assert!(!tmp.path().join(MARKER).exists());
        let status = i.run(Action::Status).unwrap();
        assert!(!status.running);
    }

    /// Writes an executable stand-in for a tool at `path`.
    fn stand_in(path: &Path, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A FerretDB start in `tmp` on the postgresql handler with the _id
    /// index (so its script runs psql): stand-ins for the FerretDB binary
    /// (it exits at once, `argv` and `env` in its dir say what it got) and
    /// for psql (`psql`); the listener stands for PostgreSQL's port.
    fn ferretdb_on_postgres(tmp: &Path, psql: &str) -> (Instance, std::net::TcpListener) {
        stand_in(
            &tmp.join("cache/servers/ferretdb-v1.24.0/bin/ferretdb"),
            "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'version: v1.24.0'; exit 0; }\n\
             printf '%s\\n' \"$@\" > \"$KVPERF_DIR/argv\"\n\
             printf '%s' \"$FERRETDB_POSTGRESQL_URL\" > \"$KVPERF_DIR/env\"\nexit 1\n",
        );
        let psql_bin = tmp.join("psql-bin");
        stand_in(&psql_bin.join("psql"), psql);
        // The script checks that PostgreSQL's port answers before starting.
        let pg = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!(
            "postgres://kv:p@ss/w:rd%21@127.0.0.1:{}/kvperf?pool_max_conns=4",
            pg.local_addr().unwrap().port()
        );
        let dir = tmp.join("f");
        std::fs::create_dir_all(&dir).unwrap();
        let i = Instance {
            server: find("ferretdb").unwrap(),
            dir,
            port,
            port_given: true,
            nodes: 1,
            settings: [
                ("KVPERF_CACHE", tmp.join("cache").display().to_string()),
                ("KVPERF_FERRETDB_HANDLER", "postgresql".into()),
                ("KVPERF_FERRETDB_PG_URL", url),
                ("KVPERF_FERRETDB_PG_ID_INDEX", "gin".into()),
                (
                    "PATH",
                    format!(
                        "{}:{}",
                        psql_bin.display(),
                        std::env::var("PATH").unwrap_or_default()
                    ),
                ),
            ]
            .map(|(k, v)| (k.to_string(), v))
            .into(),
        };
        (i, pg)
    }

    /// Stand-ins for the FerretDB binary and psql record what they were
    /// given; the PostgreSQL URL's password must be in their environment,
    /// not their argv.
    #[test]
    fn ferretdb_gets_the_postgresql_url_from_its_environment() {
        let tmp = tempfile::tempdir().unwrap();
        // psql (for the _id index) gets the password in PGPASSWORD too.
        let (i, pg) = ferretdb_on_postgres(
            tmp.path(),
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$KVPERF_DIR/psql-argv\"\n\
             printf '%s' \"$PGPASSWORD\" > \"$KVPERF_DIR/psql-env\"\ncat >/dev/null\n",
        );
        let url = i.settings["KVPERF_FERRETDB_PG_URL"].clone();
        let dir = i.dir.clone();
        // The stand-in exits at once: the start fails after it ran.
        let err = i.script(Action::Start, 30, None).unwrap_err().to_string();
        assert!(!err.contains("ss/w"), "{err}");
        let argv = std::fs::read_to_string(dir.join("argv")).unwrap();
        assert!(argv.contains("--handler=postgresql"), "{argv}");
        assert!(
            !argv.contains("ss/w") && !argv.contains("postgres://"),
            "{argv}"
        );
        assert_eq!(std::fs::read_to_string(dir.join("env")).unwrap(), url);
        let psql_argv = std::fs::read_to_string(dir.join("psql-argv")).unwrap();
        assert_eq!(
            psql_argv.lines().next(),
            Some(
                format!(
                    "postgres://kv@127.0.0.1:{}/kvperf",
                    pg.local_addr().unwrap().port()
                )
                .as_str()
            ),
            "{psql_argv}"
        );
        assert!(!psql_argv.contains("ss/w"), "{psql_argv}");
        assert_eq!(
            std::fs::read_to_string(dir.join("psql-env")).unwrap(),
            "p@ss/w:rd!",
            "PGPASSWORD, its %21 decoded as libpq decodes a URL's"
        );
    }

    /// A start past its time limit ended bash alone: its psql (no connect
    /// timeout; a PostgreSQL that accepts and never answers) waited on,
    /// reparented, for as long as it liked. The script's whole process
    /// group ends at the limit now, and psql has a connect timeout.
    #[test]
    fn a_script_past_its_limit_leaves_no_child_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let (i, _pg) = ferretdb_on_postgres(
            tmp.path(),
            "#!/bin/sh\nprintf '%s' \"$PGCONNECT_TIMEOUT\" > \"$KVPERF_DIR/psql-timeout\"\n\
             echo $$ > \"$KVPERF_DIR/psql.tmp\"; mv \"$KVPERF_DIR/psql.tmp\" \"$KVPERF_DIR/psql.pid\"\n\
             exec sleep 600\n",
        );
        let err = i.script(Action::Start, 3, None).unwrap_err().to_string();
        assert!(err.contains("no answer within 3 s"), "{err}");
        let psql: u32 = std::fs::read_to_string(i.dir.join("psql.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        while Proc::observe(psql).is_some() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left = Proc::observe(psql).is_some();
        if left {
            // SAFETY: the stand-in this test's script started.
            unsafe { libc::kill(psql as i32, libc::SIGKILL) };
        }
        assert!(!left, "the script's psql still waits");
        assert_eq!(
            std::fs::read_to_string(i.dir.join("psql-timeout")).unwrap(),
            "5"
        );
    }

    #[test]
    fn pid_files_are_found_under_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("node2")).unwrap();
        std::fs::write(tmp.path().join("redis.pid"), "42\n").unwrap();
        std::fs::write(tmp.path().join("node2/cassandra.pid"), "7").unwrap();
        std::fs::write(tmp.path().join("notes.txt"), "99").unwrap();
        assert_eq!(pids_in(tmp.path()), vec![7, 42]);
    }
}
