//! The processes of this machine as `/proc` shows them: a process tree,
//! one process's CPU time and I/O, the listeners of a port, a working
//! directory. Engines use it to find a server's processes; measure uses it
//! to count what they spend.

/// CPU seconds (its own and its reaped children's) and block-layer bytes
/// of one process; None once it has exited.
pub fn cpu_and_io(pid: u32) -> Option<ProcessCost> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised name: state is field 3.
    let rest = stat.rsplit_once(')').map(|(_, r)| r)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| {
        f.get(i - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut cost = ProcessCost {
        cpu_s: (n(14) + n(15) + n(16) + n(17)) as f64 / ticks,
        ..ProcessCost::default()
    };
    if let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
        let field = |name: &str| {
            io.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        cost.read_bytes = field("read_bytes:");
        cost.write_bytes = field("write_bytes:");
    }
    Some(cost)
}

/// What [`cpu_and_io`] reads of one process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessCost {
    pub cpu_s: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// `roots` and all their descendants, from every process's parent ID.
pub fn descendants(roots: &[u32]) -> Vec<u32> {
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
    fn a_child_is_in_the_tree_of_its_parent() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tree = descendants(&[me]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree[0], me);
        assert!(tree.contains(&child.id()), "{tree:?}");
        assert!(cpu_and_io(me).is_some_and(|c| c.cpu_s > 0.0));
        assert_eq!(cpu_and_io(child.id()), None, "reaped");
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
