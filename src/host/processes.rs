//! The processes of this machine as `/proc` shows them: a process tree,
//! one process's CPU time and I/O, the listeners of a port, a working
//! directory. Engines use it to find a server's processes; measure uses it
//! to count what they spend.

use procfs::net::TcpState;
use procfs::process::{FDTarget, Process};

/// CPU seconds (its own and its reaped children's) and block-layer bytes
/// of one process; None once it has exited.
pub fn cpu_and_io(pid: u32) -> Option<ProcessCost> {
    let process = Process::new(pid as i32).ok()?;
    let stat = process.stat().ok()?;
    let ticks = stat.utime + stat.stime + stat.cutime.max(0) as u64 + stat.cstime.max(0) as u64;
    let mut cost = ProcessCost {
        cpu_s: ticks as f64 / procfs::ticks_per_second().max(1) as f64,
        ..ProcessCost::default()
    };
    // Another user's process hides its I/O: its CPU still counts.
    if let Ok(io) = process.io() {
        cost.read_bytes = io.read_bytes;
        cost.write_bytes = io.write_bytes;
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
    let parent_of: Vec<(u32, u32)> = procfs::process::all_processes()
        .into_iter()
        .flatten()
        .filter_map(|p| p.ok()?.stat().ok())
        .map(|stat| (stat.pid as u32, stat.ppid as u32))
        .collect();
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

/// The processes listening on `port` (any address: a cluster's local
/// nodes listen on 127.0.0.1, 127.0.0.2...), found by the sockets' inodes
/// in `/proc/net/tcp{,6}` and the processes' open files.
pub fn listeners_on(port: u16) -> Vec<u32> {
    let inodes: Vec<u64> = [procfs::net::tcp(), procfs::net::tcp6()]
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.state == TcpState::Listen && e.local_address.port() == port)
        .map(|e| e.inode)
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let listens = |p: &Process| {
        p.fd().is_ok_and(|mut fds| {
            fds.any(|fd| {
                fd.is_ok_and(|fd| matches!(fd.target, FDTarget::Socket(i) if inodes.contains(&i)))
            })
        })
    };
    procfs::process::all_processes()
        .into_iter()
        .flatten()
        .flatten()
        .filter(listens)
        .map(|p| p.pid as u32)
        .collect()
}

/// A process's working directory (a database server's is often its data
/// directory).
pub fn cwd_of(pid: u32) -> Option<std::path::PathBuf> {
    Process::new(pid as i32).ok()?.cwd().ok()
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
