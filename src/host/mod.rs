//! The machine kvperf runs on: the facts a result records (CPU, cores,
//! memory, kernel, the filesystem and device under the data directory),
//! its processes as `/proc` shows them ([`processes`]) and what a
//! directory takes on disk ([`disk_usage`]). Imports nothing of kvperf's
//! upper floors, so engines and measure can both use it.

pub mod disk_usage;
pub mod processes;

use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    pub logical_cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    pub os: String,
    pub data_dir: Option<DataDirInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct DataDirInfo {
    pub path: String,
    pub filesystem: String,
    pub mount_point: String,
    /// Mount source, e.g. /dev/nvme0n1p2 or tmpfs.
    pub source: String,
    /// "major:minor" of the block device, when there is one.
    pub device_number: String,
    pub device_model: Option<String>,
    /// The mount's options and the file system's (mountinfo's two lists),
    /// e.g. "rw,relatime; rw,errors=remount-ro".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mount_options: String,
    /// Bytes of the block device holding the data (the whole disk's, from
    /// sysfs), when the OS knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_bytes: Option<u64>,
    /// The device's firmware revision, when sysfs has it (NVMe, SCSI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_firmware: Option<String>,
}

impl HostInfo {
    pub fn collect(data_dir: Option<&Path>) -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim())
            })
            .unwrap_or("unknown")
            .to_string();
        let memory_bytes =
            proc_number(&read("/proc/meminfo"), "MemTotal:").map_or(0, |kb| kb * 1024);
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        Self {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpu_model,
            logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            os,
            data_dir: data_dir.and_then(DataDirInfo::of),
        }
    }
}

impl HostInfo {
    /// "major:minor" of the data directory's device, for `/proc/diskstats`.
    pub fn block_device(&self) -> Option<&str> {
        self.data_dir.as_ref().map(|d| d.device_number.as_str())
    }

    /// Whether the data directory is on a memory file system (tmpfs).
    pub fn data_dir_in_memory(&self) -> bool {
        self.data_dir
            .as_ref()
            .is_some_and(|d| memory_filesystem(&d.filesystem))
    }
}

/// File systems held in memory: nothing written to them reaches a device.
fn memory_filesystem(fstype: &str) -> bool {
    matches!(fstype, "tmpfs" | "ramfs")
}

impl DataDirInfo {
    /// The mount holding `path` (longest mount point that prefixes it).
    pub fn of(path: &Path) -> Option<Self> {
        let canonical = std::fs::canonicalize(path).ok()?;
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let best = mountinfo
            .lines()
            .filter_map(parse_mountinfo_line)
            .filter(|m| canonical.starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.len())?;
        // A partition's device facts are its disk's, one directory up.
        let sysfs = |file: &str| {
            let dev = &best.device_number;
            std::fs::read_to_string(format!("/sys/dev/block/{dev}/{file}"))
                .or_else(|_| std::fs::read_to_string(format!("/sys/dev/block/{dev}/../{file}")))
                .ok()
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty())
        };
        let partition =
            Path::new(&format!("/sys/dev/block/{}/partition", best.device_number)).exists();
        let whole_disk_sectors = if partition {
            sysfs("../size")
        } else {
            sysfs("size")
        };
        Some(Self {
            path: canonical.display().to_string(),
            device_model: sysfs("device/model"),
            // sysfs counts 512-byte sectors whatever the device's own.
            device_bytes: whole_disk_sectors
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|s| *s > 0)
                .map(|s| s * 512),
            device_firmware: sysfs("device/firmware_rev").or_else(|| sysfs("device/rev")),
            ..best
        })
    }
}

/// The number after `field` on the first line of a /proc file's `text`
/// that starts with it (`MemTotal:    24576000 kB` -> 24576000; units are
/// the file's, kB in meminfo and smaps).
pub fn proc_number(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw` -> fields.
fn parse_mountinfo_line(line: &str) -> Option<DataDirInfo> {
    let (left, right) = line.split_once(" - ")?;
    let left: Vec<&str> = left.split_whitespace().collect();
    let mut right = right.split_whitespace();
    let filesystem = right.next()?.to_string();
    let source = right.next().unwrap_or("").to_string();
    let options: Vec<&str> = [left.get(5).copied(), right.next()]
        .into_iter()
        .flatten()
        .collect();
    Some(DataDirInfo {
        path: String::new(),
        device_number: left.get(2)?.to_string(),
        mount_point: unescape_octal(left.get(4)?),
        filesystem,
        source,
        mount_options: options.join("; "),
        ..Default::default()
    })
}

/// mountinfo escapes spaces and the like as `\040`.
fn unescape_octal(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.by_ref().take(3).collect();
            if let Ok(v) = u8::from_str_radix(&code, 8) {
                out.push(v as char);
                continue;
            }
            out.push(c);
            out.push_str(&code);
        } else {
            out.push(c);
        }
    }
    out
}

/// Syncs and drops the page cache, as the briefs do before each workload
/// (`sync; echo 3 > /proc/sys/vm/drop_caches`); `what` names the option
/// that asked for it in the error.
pub fn drop_page_cache(what: &str) -> anyhow::Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| {
        crate::error::InputError::Invalid(format!(
            "{what}: cannot write /proc/sys/vm/drop_caches ({e}); it needs root outside a container"
        ))
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_numbers_are_read_from_the_first_line_of_their_field() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:  100 kB\nHugePages_Free:        3\n";
        assert_eq!(proc_number(meminfo, "MemTotal:"), Some(24_576_000));
        assert_eq!(proc_number(meminfo, "HugePages_Free:"), Some(3));
        assert_eq!(proc_number(meminfo, "Hugepagesize:"), None);
        assert_eq!(proc_number("MemTotal: lots", "MemTotal:"), None);
    }

    #[test]
    fn parses_a_mountinfo_line() {
        let m = parse_mountinfo_line(
            "36 35 98:0 / /mnt/my\\040disk rw,noatime master:1 - ext4 /dev/sda1 rw",
        )
        .unwrap();
        assert_eq!(m.mount_point, "/mnt/my disk");
        assert_eq!(m.filesystem, "ext4");
        assert_eq!(m.source, "/dev/sda1");
        assert_eq!(m.device_number, "98:0");
        assert_eq!(m.mount_options, "rw,noatime; rw");
    }

    #[test]
    fn this_host_has_facts() {
        let tmp = tempfile::tempdir().unwrap();
        let h = HostInfo::collect(Some(tmp.path()));
        assert!(h.logical_cores >= 1);
        assert!(h.memory_bytes > 0);
        assert!(!h.kernel.is_empty());
        let dir = h.data_dir.expect("temp dir is on some mount");
        assert!(!dir.filesystem.is_empty());
    }
}
