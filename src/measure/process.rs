//! What a server spends: CPU seconds and I/O bytes of its processes (the
//! given process IDs and all their descendants, e.g. a server's
//! per-connection backends), read through [`crate::host::processes`]. Descendants that exit during a
//! window are not lost: the kernel adds a reaped child's CPU time
//! (`cutime`, `cstime`) and I/O to its parent's.

use serde::{Deserialize, Serialize};

use crate::host::processes;

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
    /// Processes in the tree at the end (some servers run one per connection).
    pub processes: usize,
}

impl TreeCounters {
    /// Sums `roots` and every descendant of them.
    pub fn read(roots: &[u32]) -> Result<Self, String> {
        if roots.is_empty() {
            return Err("server: no server process known".into());
        }
        let mut total = TreeCounters::default();
        for pid in processes::descendants(roots) {
            let Some(cost) = processes::cpu_and_io(pid) else {
                continue; // exited since the listing
            };
            total.cpu_s += cost.cpu_s;
            total.read_bytes += cost.read_bytes;
            total.write_bytes += cost.write_bytes;
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
        let before = TreeCounters::read(&[me]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let after = TreeCounters::read(&[me]).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(after.processes >= 2);
        assert!(
            after.since(&before, &[me]).cpu_s > 0.0,
            "the child burnt CPU"
        );
        assert!(TreeCounters::read(&[]).is_err());
    }
}
