//! What a server spends: CPU seconds and I/O bytes of its processes (the
//! given process IDs and all their descendants, e.g. PostgreSQL's backends),
//! from `/proc/PID/stat` and `/proc/PID/io`. Descendants that exit during a
//! window are not lost: the kernel adds a reaped child's CPU time
//! (`cutime`, `cstime`) and I/O to its parent's.

use serde::{Deserialize, Serialize};

/// Counters of a process tree at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TreeCounters {
    pub cpu_s: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub processes: usize,
}

/// A server's cost over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCost {
    pub pids: Vec<u32>,
    pub cpu_s: f64,
    /// Bytes the server made the block layer read and write.
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Processes in the tree at the end (PostgreSQL: one per connection).
    pub processes: usize,
}

impl TreeCounters {
    /// Sums `roots` and every descendant of them.
    pub fn read(roots: &[u32]) -> Result<Self, String> {
        if roots.is_empty() {
            return Err("server: no server process known".into());
        }
        let tree = descendants(roots);
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let mut total = TreeCounters::default();
        for pid in tree {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue; // exited since the listing
            };
            // Fields after the parenthesised name: state is field 3.
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let n = |i: usize| {
                f.get(i - 3)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            total.cpu_s += (n(14) + n(15) + n(16) + n(17)) as f64 / ticks;
            if let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
                let field = |name: &str| {
                    io.lines()
                        .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
                        .unwrap_or(0)
                };
                total.read_bytes += field("read_bytes:");
                total.write_bytes += field("write_bytes:");
            }
            total.processes += 1;
        }
        if total.processes == 0 {
            return Err(format!("server: processes {roots:?} are not running"));
        }
        Ok(total)
    }

    pub fn since(&self, earlier: &Self, pids: &[u32]) -> ServerCost {
        ServerCost {
            pids: pids.to_vec(),
            cpu_s: (self.cpu_s - earlier.cpu_s).max(0.0),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            processes: self.processes,
        }
    }
}

/// `roots` and all their descendants, from every process's parent ID.
fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let ppid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1.to_string();
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                });
            if let Some(ppid) = ppid {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut tree: Vec<u32> = roots.to_vec();
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        for &(pid, ppid) in &parent_of {
            if ppid == parent && !tree.contains(&pid) {
                tree.push(pid);
            }
        }
        i += 1;
    }
    tree
}

/// The processes listening on `port` (any address: a Cassandra cluster's
/// nodes listen on 127.0.0.1, 127.0.0.2...), found by the sockets' inodes
/// in `/proc/net/tcp{,6}` and the processes' open files.
pub fn listeners_on(port: u16) -> Vec<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address is HEXIP:HEXPORT; state 0A is LISTEN.
            let listening = f.get(3) == Some(&"0A");
            let local_port = f
                .get(1)
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if listening && local_port == Some(port) {
                if let Some(inode) = f.get(9) {
                    inodes.push(format!("socket:[{inode}]"));
                }
            }
        }
    }
    let mut pids = Vec::new();
    if inodes.is_empty() {
        return pids;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in procs.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let listens = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|link| inodes.iter().any(|i| link.as_os_str() == i.as_str()))
        });
        if listens {
            pids.push(pid);
        }
    }
    pids
}

/// A process's working directory (PostgreSQL's is its data directory).
pub fn cwd_of(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_process_is_counted_with_its_parent() {
        let me = std::process::id();
        // A child that burns CPU is in the tree of this process.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 5",
            ])
            .spawn()
            .unwrap();
        let tree = descendants(&[me]);
        assert!(tree.contains(&child.id()), "{tree:?}");
        let before = TreeCounters::read(&[me]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let after = TreeCounters::read(&[me]).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(after.processes >= 2);
        assert!(after.since(&before, &[me]).cpu_s >= 0.0);
        assert!(TreeCounters::read(&[]).is_err());
    }

    #[test]
    fn the_listener_of_a_port_is_found() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(listeners_on(port), vec![std::process::id()]);
        assert_eq!(cwd_of(std::process::id()), std::env::current_dir().ok());
        drop(listener);
        assert_eq!(listeners_on(port), Vec::<u32>::new());
    }
}
