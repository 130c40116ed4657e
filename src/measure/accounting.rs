//! What a measured window cost the machine: the data directory's block
//! device I/O (`/proc/diskstats`), the process's own I/O (`/proc/self/io`),
//! CPU seconds (`getrusage`, all threads, the engine's background threads
//! included) and, where RAPL counters are readable, energy.
//!
//! A counter that cannot be read is recorded as unavailable with the reason,
//! never as zero: a figure kvperf did not measure is not printed.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Bytes per sector in `/proc/diskstats`, whatever the device's own size.
const SECTOR_BYTES: u64 = 512;
const RAPL_DIR: &str = "/sys/class/powercap/intel-rapl:0";

/// Counters at one instant; two of them make an [`Accounting`].
pub struct Snapshot {
    at: Instant,
    device: Result<DeviceCounters, String>,
    process: Result<ProcessIo, String>,
    cpu: CpuTimes,
    energy_uj: Result<u64, String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceCounters {
    pub read_ios: u64,
    pub read_bytes: u64,
    pub write_ios: u64,
    pub write_bytes: u64,
}

/// `/proc/self/io`: `rchar`/`wchar` count every read/write syscall's bytes
/// (page cache hits and tmpfs included); `read_bytes`/`write_bytes` what
/// this process made the block layer fetch or write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessIo {
    pub rchar: u64,
    pub wchar: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user_s: f64,
    pub system_s: f64,
}

/// Logical bytes of the records an interval moved and the data set it left:
/// the denominators of the amplification figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LogicalBytes {
    pub read: u64,
    pub written: u64,
    pub dataset: u64,
}

/// The cost of one measured window, raw counters and derived figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    pub wall_s: f64,
    pub operations: u64,
    /// Block device of the data directory ("major:minor"), when it has one.
    pub device: Option<String>,
    pub device_io: Option<DeviceCounters>,
    pub process_io: Option<ProcessIo>,
    pub cpu: CpuTimes,
    pub energy_joules: Option<f64>,
    /// Size on disk of the data directory after the window (allocated blocks).
    pub data_dir_bytes: Option<u64>,
    pub logical: LogicalBytes,
    pub derived: Derived,
    /// Why a figure above is missing, one line per counter.
    pub unavailable: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub device_read_bytes_per_op: Option<f64>,
    pub device_write_bytes_per_op: Option<f64>,
    pub process_read_bytes_per_op: Option<f64>,
    pub process_write_bytes_per_op: Option<f64>,
    /// Device bytes read / logical bytes read.
    pub read_amplification: Option<f64>,
    /// Device bytes written / logical bytes written.
    pub write_amplification: Option<f64>,
    /// Size on disk / logical data set size.
    pub space_amplification: Option<f64>,
    pub cpu_s_per_op: Option<f64>,
    pub ops_per_cpu_s: Option<f64>,
    pub ops_per_joule: Option<f64>,
}

impl Snapshot {
    /// Reads every counter now; `device` is the data directory's
    /// "major:minor" (None: no data directory, or no block device under it).
    pub fn take(device: Option<&str>) -> Self {
        Self {
            at: Instant::now(),
            device: match device {
                Some(dev) => DeviceCounters::read(Path::new("/proc/diskstats"), dev),
                None => Err("device I/O: the data directory is not on a block device".into()),
            },
            process: ProcessIo::read(Path::new("/proc/self/io")),
            cpu: CpuTimes::now(),
            energy_uj: read_u64(&Path::new(RAPL_DIR).join("energy_uj"))
                .map_err(|e| format!("energy: RAPL counters not readable here ({e})")),
        }
    }

    /// The cost from `self` to `end`, for `operations` operations.
    pub fn until(
        &self,
        end: &Snapshot,
        device: Option<&str>,
        operations: u64,
        logical: LogicalBytes,
        data_dir: Option<&Path>,
    ) -> Accounting {
        let mut unavailable = Vec::new();
        let u = &mut unavailable;
        let device_io = available(delta(&self.device, &end.device, |a, b| b.since(a)), u);
        let process_io = available(delta(&self.process, &end.process, |a, b| b.since(a)), u);
        let energy_joules = available(
            delta(&self.energy_uj, &end.energy_uj, |a, b| {
                energy_delta_uj(*a, *b) as f64 / 1e6
            }),
            u,
        );
        let data_dir_bytes = data_dir.and_then(|d| {
            let size =
                size_on_disk(d).map_err(|e| format!("size on disk of '{}': {e}", d.display()));
            available(size, u)
        });
        let cpu = CpuTimes {
            user_s: (end.cpu.user_s - self.cpu.user_s).max(0.0),
            system_s: (end.cpu.system_s - self.cpu.system_s).max(0.0),
        };
        let mut accounting = Accounting {
            wall_s: end.at.duration_since(self.at).as_secs_f64(),
            operations,
            device: device_io.and(device.map(str::to_string)),
            device_io,
            process_io,
            cpu,
            energy_joules,
            data_dir_bytes,
            logical,
            derived: Derived::default(),
            unavailable,
        };
        accounting.derived = accounting.derive();
        accounting
    }
}

impl Accounting {
    fn derive(&self) -> Derived {
        let per_op = |bytes: u64| ratio(bytes as f64, self.operations as f64);
        let cpu_s = self.cpu.user_s + self.cpu.system_s;
        let dev = self.device_io;
        let proc_io = self.process_io;
        Derived {
            device_read_bytes_per_op: dev.and_then(|d| per_op(d.read_bytes)),
            device_write_bytes_per_op: dev.and_then(|d| per_op(d.write_bytes)),
            process_read_bytes_per_op: proc_io.and_then(|p| per_op(p.rchar)),
            process_write_bytes_per_op: proc_io.and_then(|p| per_op(p.wchar)),
            read_amplification: dev
                .and_then(|d| ratio(d.read_bytes as f64, self.logical.read as f64)),
            write_amplification: dev
                .and_then(|d| ratio(d.write_bytes as f64, self.logical.written as f64)),
            space_amplification: self
                .data_dir_bytes
                .and_then(|s| ratio(s as f64, self.logical.dataset as f64)),
            cpu_s_per_op: ratio(cpu_s, self.operations as f64),
            ops_per_cpu_s: ratio(self.operations as f64, cpu_s),
            ops_per_joule: self
                .energy_joules
                .and_then(|j| ratio(self.operations as f64, j)),
        }
    }
}

/// The change between two readings, or why one of them failed.
fn delta<T, R>(
    before: &Result<T, String>,
    after: &Result<T, String>,
    change: impl Fn(&T, &T) -> R,
) -> Result<R, String> {
    match (before, after) {
        (Ok(a), Ok(b)) => Ok(change(a, b)),
        (Err(why), _) | (_, Err(why)) => Err(why.clone()),
    }
}

/// The figure, or None with its reason noted once in `unavailable`.
fn available<R>(figure: Result<R, String>, unavailable: &mut Vec<String>) -> Option<R> {
    figure
        .map_err(|why| {
            if !unavailable.contains(&why) {
                unavailable.push(why);
            }
        })
        .ok()
}

/// One warning line per counter that exists on Linux but could not be read
/// (not for tmpfs or RAPL-less machines, where absence is normal).
pub fn warn_unreadable(a: &Accounting) {
    for why in a.unavailable.iter().filter(|w| w.contains("cannot read")) {
        eprintln!("kvperf: warning: {why}; recorded as unavailable");
    }
}

/// `a / b`, or None when `b` is zero (a ratio over nothing is not a figure).
fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

impl DeviceCounters {
    /// The line of `device` ("major:minor") in a diskstats file.
    pub fn read(diskstats: &Path, device: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(diskstats)
            .map_err(|e| format!("device I/O: cannot read {} ({e})", diskstats.display()))?;
        let (major, minor) = device.split_once(':').unwrap_or((device, ""));
        text.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() >= 10 && f[0] == major && f[1] == minor)
            .map(|f| {
                let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
                Self {
                    read_ios: n(3),
                    read_bytes: n(5) * SECTOR_BYTES,
                    write_ios: n(7),
                    write_bytes: n(9) * SECTOR_BYTES,
                }
            })
            .ok_or_else(|| {
                format!(
                    "device I/O: device {device} is not in {} (not a block device)",
                    diskstats.display()
                )
            })
    }

    fn since(&self, earlier: &Self) -> Self {
        Self {
            read_ios: self.read_ios.saturating_sub(earlier.read_ios),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_ios: self.write_ios.saturating_sub(earlier.write_ios),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
        }
    }
}

impl ProcessIo {
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("process I/O: cannot read {} ({e})", path.display()))?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("process I/O: no '{name}' in {}", path.display()))
        };
        Ok(Self {
            rchar: field("rchar")?,
            wchar: field("wchar")?,
            read_bytes: field("read_bytes")?,
            write_bytes: field("write_bytes")?,
        })
    }

    fn since(&self, earlier: &Self) -> Self {
        Self {
            rchar: self.rchar.saturating_sub(earlier.rchar),
            wchar: self.wchar.saturating_sub(earlier.wchar),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
        }
    }
}

impl CpuTimes {
    /// User and system CPU of the whole process (every thread).
    pub fn now() -> Self {
        // SAFETY: getrusage writes into the zeroed struct we pass.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut usage);
            usage
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Self {
            user_s: secs(usage.ru_utime),
            system_s: secs(usage.ru_stime),
        }
    }
}

/// RAPL's counter wraps at `max_energy_range_uj`.
fn energy_delta_uj(before: u64, after: u64) -> u64 {
    if after >= before {
        return after - before;
    }
    let range = read_u64(&Path::new(RAPL_DIR).join("max_energy_range_uj")).unwrap_or(0);
    range.saturating_sub(before) + after
}

fn read_u64(path: &Path) -> Result<u64, String> {
    std::fs::read_to_string(path)
        .map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("{e}"))
}

/// Allocated bytes of every file under `dir` (what `du` counts), without
/// following symbolic links.
pub fn size_on_disk(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        total += meta.blocks() * 512;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn parses_a_diskstats_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("diskstats");
        std::fs::write(
            &path,
            "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0\n \
             252       0 vda 100 5 2048 30 40 2 8192 50 0 60 80\n",
        )
        .unwrap();
        let c = DeviceCounters::read(&path, "252:0").unwrap();
        assert_eq!(
            c,
            DeviceCounters {
                read_ios: 100,
                read_bytes: 2048 * 512,
                write_ios: 40,
                write_bytes: 8192 * 512
            }
        );
        let missing = DeviceCounters::read(&path, "0:45").unwrap_err();
        assert!(missing.contains("0:45"), "{missing}");
    }

    #[test]
    fn unreadable_diskstats_is_unavailable_not_zero() {
        let err = DeviceCounters::read(Path::new("/nonexistent/diskstats"), "8:0").unwrap_err();
        assert!(err.contains("cannot read /nonexistent/diskstats"), "{err}");
        let before = Snapshot::take(None);
        let after = Snapshot::take(None);
        let a = before.until(&after, None, 10, LogicalBytes::default(), None);
        assert_eq!(a.device_io, None);
        assert_eq!(a.derived.write_amplification, None);
        assert!(a.unavailable.iter().any(|u| u.starts_with("device I/O")));
    }

    #[test]
    fn process_io_counts_a_known_write() {
        let dir = tempfile::tempdir().unwrap();
        let before = ProcessIo::read(Path::new("/proc/self/io")).unwrap();
        let mut f = std::fs::File::create(dir.path().join("x")).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        let after = ProcessIo::read(Path::new("/proc/self/io")).unwrap();
        assert!(after.since(&before).wchar >= 1 << 20);
    }

    #[test]
    fn derived_figures_divide_by_what_was_measured() {
        let mut a = Accounting {
            wall_s: 2.0,
            operations: 1000,
            device: Some("8:0".into()),
            device_io: Some(DeviceCounters {
                read_ios: 10,
                read_bytes: 40_000,
                write_ios: 20,
                write_bytes: 300_000,
            }),
            process_io: None,
            cpu: CpuTimes {
                user_s: 1.5,
                system_s: 0.5,
            },
            energy_joules: None,
            data_dir_bytes: Some(3_000_000),
            logical: LogicalBytes {
                read: 20_000,
                written: 100_000,
                dataset: 1_000_000,
            },
            derived: Derived::default(),
            unavailable: vec![],
        };
        a.derived = a.derive();
        let d = a.derived;
        assert_eq!(d.device_write_bytes_per_op, Some(300.0));
        assert_eq!(d.read_amplification, Some(2.0));
        assert_eq!(d.write_amplification, Some(3.0));
        assert_eq!(d.space_amplification, Some(3.0));
        assert_eq!(d.ops_per_cpu_s, Some(500.0));
        assert_eq!(d.ops_per_joule, None);
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let before = CpuTimes::now();
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed().as_millis() < 50 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = CpuTimes::now();
        assert!(after.user_s + after.system_s > before.user_s + before.system_s + 0.02);
    }

    #[test]
    fn size_on_disk_counts_allocated_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("data")).unwrap();
        f.write_all(&vec![1u8; 256 * 1024]).unwrap();
        f.sync_all().unwrap();
        assert!(size_on_disk(dir.path()).unwrap() >= 256 * 1024);
    }
}
