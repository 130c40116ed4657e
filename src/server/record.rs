//! What kvperf recorded about a server it started, and the proof that a
//! process is still that server. `kvperf server start` writes the record
//! (`.kvperf-server-run` in the server's directory) once the server
//! answers: its port and, for each process, the pid, the process's start
//! time (field 22 of `/proc/PID/stat`, in clock ticks since boot) and its
//! executable. `stop`, `status` and the clean-up of a failed start act on
//! a process only when all of these still match, and signal it through a
//! pidfd opened before the check, so a pid reused meanwhile is never hit.
//! A pid file alone proves nothing: its pid may now be another process's.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

/// The record's file name in the server directory.
pub const RECORD: &str = ".kvperf-server-run";
/// The record's first line: a token and its format's version.
const HEADER: &str = "kvperf-server-run 1";
/// A record is a few lines; anything longer is not one.
const MAX_LEN: u64 = 64 * 1024;

/// One process of a server, as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    /// Field 22 of /proc/PID/stat: clock ticks after boot.
    pub start: u64,
    /// /proc/PID/exe, when it can be read.
    pub exe: Option<PathBuf>,
}

impl Proc {
    /// `PID START [EXE]`, as [`Record`] writes it.
    fn parse(text: &str) -> Option<Proc> {
        let mut parts = text.splitn(3, ' ');
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok()?;
        let exe = parts.next().map(PathBuf::from);
        Some(Proc { pid, start, exe })
    }

    /// When the process began, by the wall clock: the boot (now less
    /// /proc/uptime) plus its start time in clock ticks.
    pub fn began(&self) -> Option<std::time::SystemTime> {
        let uptime: f64 = std::fs::read_to_string("/proc/uptime")
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if ticks <= 0 {
            return None;
        }
        let boot = std::time::SystemTime::now().checked_sub(Duration::from_secs_f64(uptime))?;
        boot.checked_add(Duration::from_secs_f64(self.start as f64 / ticks as f64))
    }

    /// The live (not zombie) process `pid` as it is now.
    pub fn observe(pid: u32) -> Option<Proc> {
        let (state, start) = stat(pid)?;
        if state == 'Z' || state == 'X' {
            return None;
        }
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        Some(Proc { pid, start, exe })
    }

    /// The process still runs and is the one recorded: same start time,
    /// same executable (when both could be read).
    pub fn is_alive(&self) -> bool {
        Proc::observe(self.pid).is_some_and(|now| {
            now.start == self.start
                && match (&now.exe, &self.exe) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        })
    }
}

/// State and start time of `pid` from /proc/PID/stat (the command name in
/// parentheses may hold spaces and parentheses: fields follow the last `)`).
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// kvperf's own start time, in the ticks of [`Proc::start`]: a process
/// that started before it was not launched by this command.
pub fn own_start() -> u64 {
    stat(std::process::id()).map_or(0, |(_, start)| start)
}

/// A server kvperf started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub server: String,
    pub port: u16,
    pub procs: Vec<Proc>,
    /// The server directory's device and inode when the record was written
    /// (None in a record of an older kvperf): a record read in another
    /// directory was copied there with it (`cp -a`), and its processes are
    /// that other directory's server.
    pub dir: Option<(u64, u64)>,
    /// The kvperf whose start had not finished (its script at work, no
    /// process recorded yet): written before the script runs, so a start
    /// killed (`kill -9`) after its script launched the server leaves a
    /// record of it, not a server that no record names.
    pub starting: Option<Proc>,
}

impl Record {
    /// The record in `dir`, if there is one. A record that is not a
    /// regular file, or does not parse, is an error (never trusted).
    pub fn read(dir: &Path) -> anyhow::Result<Option<Record>> {
        let path = dir.join(RECORD);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path);
        let file = match file {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(crate::error::InputError::Invalid(format!(
                    "cannot read kvperf's server record '{}': {e}",
                    path.display()
                ))
                .into())
            }
        };
        let bad = || {
            crate::error::InputError::Invalid(format!(
                "'{}' is not a server record kvperf wrote; remove it if the server in '{}' is stopped",
                path.display(),
                dir.display()
            ))
        };
        if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
            return Err(bad().into());
        }
        let mut text = String::new();
        file.take(MAX_LEN)
            .read_to_string(&mut text)
            .map_err(|_| bad())?;
        let record = Record::parse(&text).ok_or_else(bad)?;
        // A copy of another server directory holds that directory's
        // record: no server of this one (its `stop` stopped the other).
        if record.dir.is_some() && record.dir != Record::identity(dir) {
            return Ok(None);
        }
        Ok(Some(record))
    }

    /// The device and inode of `dir` (through a link to it, the linked
    /// directory's).
    pub fn identity(dir: &Path) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
    }

    fn parse(text: &str) -> Option<Record> {
        let mut lines = text.lines();
        if lines.next()? != HEADER {
            return None;
        }
        let (mut server, mut port, mut procs, mut dir) = (None, None, Vec::new(), None);
        let mut starting = None;
        for line in lines {
            let mut words = line.splitn(2, ' ');
            match (words.next()?, words.next()) {
                ("server", Some(name)) => server = Some(name.to_string()),
                ("port", Some(p)) => port = Some(p.parse().ok()?),
                ("dir", Some(id)) => {
                    let (dev, ino) = id.split_once(' ')?;
                    dir = Some((dev.parse().ok()?, ino.parse().ok()?));
                }
                // proc PID START [EXE]; starting PID START [EXE]
                ("proc", Some(rest)) => procs.push(Proc::parse(rest)?),
                ("starting", Some(rest)) => starting = Some(Proc::parse(rest)?),
                _ => return None,
            }
        }
        if procs.is_empty() && starting.is_none() {
            return None;
        }
        Some(Record {
            server: server?,
            port: port?,
            procs,
            dir,
            starting,
        })
    }

    fn text(&self) -> String {
        let mut text = format!("{HEADER}\nserver {}\nport {}\n", self.server, self.port);
        if let Some((dev, ino)) = self.dir {
            text.push_str(&format!("dir {dev} {ino}\n"));
        }
        let lines = self.procs.iter().map(|p| ("proc", p));
        for (word, p) in lines.chain(self.starting.iter().map(|p| ("starting", p))) {
            text.push_str(&format!("{word} {} {}", p.pid, p.start));
            if let Some(exe) = p.exe.as_ref().and_then(|e| e.to_str()) {
                if !exe.contains('\n') {
                    text.push_str(&format!(" {exe}"));
                }
            }
            text.push('\n');
        }
        text
    }

    /// Writes the record into `dir` atomically (a new file renamed over it).
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        use std::io::Write;
        let tmp = dir.join(format!("{RECORD}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .with_context(|| format!("cannot write the server record in '{}'", dir.display()))?;
        let written = file
            .write_all(self.text().as_bytes())
            .and_then(|_| file.sync_all())
            .and_then(|_| std::fs::rename(&tmp, dir.join(RECORD)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e)
                .with_context(|| format!("cannot write the server record in '{}'", dir.display()));
        }
        Ok(())
    }

    /// The recorded processes that still run and are still the ones recorded.
    pub fn alive(&self) -> Vec<&Proc> {
        self.procs.iter().filter(|p| p.is_alive()).collect()
    }

    /// `1234` or `1234,1240`.
    pub fn pid_list(procs: &[&Proc]) -> String {
        let pids: Vec<String> = procs.iter().map(|p| p.pid.to_string()).collect();
        pids.join(",")
    }
}

/// Sends `signal` to `proc` if it is still that process: the pidfd is
/// opened first and the identity checked after, so the signal reaches the
/// checked process or none. False if it is gone or another process.
pub fn signal(proc: &Proc, signal: libc::c_int) -> bool {
    // SAFETY: pidfd_open takes a pid and flags, and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, proc.pid as libc::pid_t, 0) } as i32;
    if fd < 0 {
        // No pidfds (a kernel before 5.3): check, then signal by pid.
        if !proc.is_alive() {
            return false;
        }
        // SAFETY: kill takes a pid and a signal number.
        return unsafe { libc::kill(proc.pid as libc::pid_t, signal) } == 0;
    }
    let sent = proc.is_alive()
        // SAFETY: the fd is the pidfd just opened; no siginfo.
        && unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        } == 0;
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    sent
}

/// Stops the processes: `stop_signal` to each, then waits up to `limit`
/// for them to exit; SIGKILL for those still there if `kill_stuck`. The
/// pids that did not exit, if any. Once `interrupted` says so it waits no
/// more and sends no SIGKILL.
pub fn stop(
    procs: &[&Proc],
    stop_signal: libc::c_int,
    kill_stuck: bool,
    limit: Duration,
    interrupted: &dyn Fn() -> bool,
) -> Vec<u32> {
    for p in procs {
        signal(p, stop_signal);
    }
    let deadline = Instant::now() + limit;
    let left = |procs: &[&Proc]| -> Vec<u32> {
        procs
            .iter()
            .filter(|p| p.is_alive())
            .map(|p| p.pid)
            .collect()
    };
    while !left(procs).is_empty() && Instant::now() < deadline {
        if interrupted() {
            return left(procs);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if kill_stuck && !left(procs).is_empty() {
        for p in procs {
            signal(p, libc::SIGKILL);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !left(procs).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    left(procs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_junk_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(Record::read(tmp.path()).unwrap(), None);
        let me = Proc::observe(std::process::id()).unwrap();
        assert!(me.is_alive());
        let record = Record {
            server: "redis".into(),
            port: 6379,
            procs: vec![me.clone()],
            dir: Record::identity(tmp.path()),
            starting: None,
        };
        record.write(tmp.path()).unwrap();
        assert_eq!(Record::read(tmp.path()).unwrap(), Some(record.clone()));
        // Copied into another directory, it is no record of that one's.
        let copy = tempfile::tempdir().unwrap();
        std::fs::copy(tmp.path().join(RECORD), copy.path().join(RECORD)).unwrap();
        assert_eq!(Record::read(copy.path()).unwrap(), None);
        // An older kvperf's record (no directory line) is read as before.
        let old = Record {
            dir: None,
            ..record
        };
        old.write(copy.path()).unwrap();
        assert_eq!(Record::read(copy.path()).unwrap(), Some(old));
        std::fs::write(tmp.path().join(RECORD), "pid=1\n").unwrap();
        let err = Record::read(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("not a server record kvperf wrote"), "{err}");
        assert_eq!(
            crate::error::exit_code(&Record::read(tmp.path()).unwrap_err()),
            2
        );
    }

    /// A start's record before its script ran names the starting kvperf
    /// and no process yet.
    #[test]
    fn a_starting_record_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let record = Record {
            server: "redis".into(),
            port: 6379,
            procs: Vec::new(),
            dir: Record::identity(tmp.path()),
            starting: Proc::observe(std::process::id()),
        };
        assert!(record.starting.is_some());
        record.write(tmp.path()).unwrap();
        assert_eq!(Record::read(tmp.path()).unwrap(), Some(record));
        // Neither a process nor a start: not a record.
        std::fs::write(
            tmp.path().join(RECORD),
            format!("{HEADER}\nserver redis\nport 1\n"),
        )
        .unwrap();
        assert!(Record::read(tmp.path()).is_err());
    }

    /// A pid whose start time differs is another process: never signalled.
    #[test]
    fn a_reused_pid_is_not_the_recorded_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut proc = Proc::observe(child.id()).unwrap();
        proc.start += 1;
        assert!(!proc.is_alive());
        assert!(!signal(&proc, libc::SIGTERM));
        assert_eq!(child.try_wait().unwrap(), None);
        proc.start -= 1;
        assert!(proc.is_alive());
        assert!(stop(
            &[&proc],
            libc::SIGTERM,
            true,
            Duration::from_secs(10),
            &|| false
        )
        .is_empty());
        let _ = child.wait();
        assert!(!proc.is_alive());
    }
}
