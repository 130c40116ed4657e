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

use super::drive::{DriveCounters, DriveWrites, NvmeNamespace};
use super::net::{NetworkBytes, SocketBytes};
use super::power::PowerUse;
use super::process::{ServerCost, TreeCounters};

/// Bytes per sector in `/proc/diskstats`, whatever the device's own size.
const SECTOR_BYTES: u64 = 512;
const RAPL_DIR: &str = "/sys/class/powercap/intel-rapl:0";
/// Fewer logical bytes than this make amplification a ratio of noise: a
/// few pages of the engine's own metadata would swing it.
pub const MIN_LOGICAL_BYTES: u64 = 1 << 20;
/// Above this share of a device's bytes not being the engine's, device
/// bytes cannot stand for the engine's I/O.
pub const MAX_FOREIGN_DEVICE_PCT: f64 = 20.0;

/// What a window reads besides this process's own counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probe {
    /// The data directory's block device ("major:minor"); None: no data
    /// directory, or no block device under it.
    pub device: Option<String>,
    /// A server engine's processes (empty: none).
    pub server_pids: Vec<u32>,
    /// This process's TCP sockets (a server engine's connections).
    pub network: bool,
    /// The data directory is on a memory file system (tmpfs, ramfs).
    pub memory_filesystem: bool,
}

impl Probe {
    /// Every counter, now.
    pub fn take(&self) -> Snapshot {
        Snapshot::take(self)
    }
}

/// Counters at one instant; two of them make an [`Accounting`].
#[derive(Debug)]
pub struct Snapshot {
    at: Instant,
    device_name: Option<String>,
    device: Result<DeviceCounters, String>,
    process: Result<ProcessIo, String>,
    cpu: Result<CpuTimes, String>,
    machine: Result<MachineTicks, String>,
    /// A server engine's processes, and their counters.
    server: Option<(Vec<u32>, Result<TreeCounters, String>)>,
    energy_uj: Result<u64, String>,
    sockets: Option<SocketBytes>,
    /// The data directory's NVMe drive and its counters.
    drive: Result<(NvmeNamespace, DriveCounters), String>,
    memory_filesystem: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceCounters {
    pub read_ios: u64,
    pub read_bytes: u64,
    pub write_ios: u64,
    pub write_bytes: u64,
    /// Milliseconds with at least one I/O in flight (`io_ticks`).
    #[serde(default)]
    pub busy_ms: u64,
    /// Milliseconds of I/O in flight, weighted by how many (`time_in_queue`).
    #[serde(default)]
    pub queue_ms: u64,
}

/// The machine's CPUs from `/proc/stat`: busy and total clock ticks per CPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineTicks {
    per_cpu: Vec<(u64, u64)>,
}

/// How busy the machine's CPUs were over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineCpu {
    pub cores: usize,
    /// Busy cores on average over the window (0..=cores), every process.
    pub busy_cores: f64,
    /// Each CPU's busy share, in %.
    pub per_core_busy_pct: Vec<f64>,
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
    /// Where the engine stores each record whole (an update of one field
    /// rewrites all of it): the bytes of the whole records the window's
    /// writes wrote, each insert's record and, per update, the record it
    /// changed at the configured mean record size. None: the engine writes
    /// only the fields given, or a workload of whole values (db_bench).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_records_written: Option<u64>,
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
    /// CPU of this process, every thread (the engine's included when it
    /// is embedded).
    pub cpu: Option<CpuTimes>,
    /// CPU seconds of kvperf's own client threads (the runner threads,
    /// which also run an embedded engine's foreground calls).
    #[serde(default)]
    pub client_threads_cpu_s: Option<f64>,
    /// Every CPU of the machine, all processes.
    #[serde(default)]
    pub machine_cpu: Option<MachineCpu>,
    /// What this process's TCP connections sent and received (server engines).
    #[serde(default)]
    pub network: Option<NetworkBytes>,
    /// A server engine's own CPU and I/O, from its processes.
    #[serde(default)]
    pub server: Option<ServerCost>,
    /// Energy of the window: from the meter `power.meter` chose (see
    /// `power`), else RAPL's package counter where readable.
    pub energy_joules: Option<f64>,
    /// Power drawn over the window by the meter `power.meter` chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerUse>,
    /// What the data directory's NVMe drive counted over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive: Option<DriveWrites>,
    /// Size on disk of the engine's own data after the window (allocated
    /// blocks of its files; nothing else in the data directory counts).
    pub data_dir_bytes: Option<u64>,
    pub logical: LogicalBytes,
    pub derived: Derived,
    /// Why a figure above is missing, one line per counter.
    pub unavailable: Vec<String>,
    /// The data directory is on a memory file system (tmpfs): no device
    /// under it and no block-layer bytes, so no amplification is a figure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub memory_filesystem: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub device_read_bytes_per_op: Option<f64>,
    pub device_write_bytes_per_op: Option<f64>,
    pub process_read_bytes_per_op: Option<f64>,
    pub process_write_bytes_per_op: Option<f64>,
    /// The engine's processes' block-layer bytes read (`/proc/PID/io`
    /// `read_bytes`: a server engine's processes, else kvperf's own) /
    /// logical bytes read; None when unreliable (below), not measured, or
    /// nothing to divide by.
    #[serde(alias = "read_amplification")]
    pub read_amplification_process: Option<f64>,
    /// The same for bytes written (`write_bytes`).
    #[serde(alias = "write_amplification")]
    pub write_amplification_process: Option<f64>,
    /// The ratio was not a figure: too few logical bytes.
    #[serde(default, alias = "read_amplification_unreliable")]
    pub read_amplification_process_unreliable: bool,
    #[serde(default, alias = "write_amplification_unreliable")]
    pub write_amplification_process_unreliable: bool,
    /// The data directory's device's bytes read (`/proc/diskstats` sectors
    /// x 512, every process's) / logical bytes read; None as above.
    #[serde(default)]
    pub read_amplification_device: Option<f64>,
    /// The same for bytes written.
    #[serde(default)]
    pub write_amplification_device: Option<f64>,
    #[serde(default)]
    pub read_amplification_device_unreliable: bool,
    #[serde(default)]
    pub write_amplification_device_unreliable: bool,
    /// The device's figures are not the engine's alone: more than
    /// MAX_FOREIGN_DEVICE_PCT of its bytes were another process's, or the
    /// engine's share could not be told.
    #[serde(default)]
    pub device_amplification_shared: bool,
    /// Whole-record bytes written / logical bytes written (from
    /// `LogicalBytes::whole_records_written`): how much of either write
    /// amplification is updates rewriting whole records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_rewrite_factor: Option<f64>,
    /// Share of the device's bytes (read + written) in the window that
    /// were not the engine's, in %.
    #[serde(default)]
    pub device_foreign_pct: Option<f64>,
    /// Size on disk / logical data set size.
    pub space_amplification: Option<f64>,
    /// Operations per joule above the idle baseline (`power.idle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_joule_above_idle: Option<f64>,
    /// Bytes the NVMe drive received from hosts per operation (every
    /// process's: see `device_foreign_pct`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_write_bytes_per_op: Option<f64>,
    /// Flash bytes / host bytes the drive received (OCP C0h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_write_amplification: Option<f64>,
    /// Flash bytes / logical bytes the workload wrote; None when
    /// unreliable (below) or not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_to_end_write_amplification: Option<f64>,
    /// The flash bytes could not stand for the engine's: too few logical
    /// bytes, or more than MAX_FOREIGN_DEVICE_PCT of the device's bytes
    /// were another process's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub end_to_end_write_amplification_unreliable: bool,
    /// Drive capacities written per day at this window's rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_writes_per_day: Option<f64>,
    /// Years until the host writes reach the drive's Endurance Estimate at
    /// this window's rate, where the drive reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub years_to_endurance_estimate: Option<f64>,
    /// Share of the window the device had I/O in flight, in %.
    #[serde(default)]
    pub device_busy_pct: Option<f64>,
    /// Average number of I/Os in flight (iostat's aqu-sz).
    #[serde(default)]
    pub device_queue_depth: Option<f64>,
    #[serde(default)]
    pub network_sent_bytes_per_op: Option<f64>,
    #[serde(default)]
    pub network_received_bytes_per_op: Option<f64>,
    #[serde(default)]
    pub server_cpu_s_per_op: Option<f64>,
    pub cpu_s_per_op: Option<f64>,
    pub ops_per_cpu_s: Option<f64>,
    pub ops_per_joule: Option<f64>,
}

impl Snapshot {
    /// Reads every counter `probe` names, and this process's, now.
    pub fn take(probe: &Probe) -> Self {
        let server_pids = &probe.server_pids;
        Self {
            at: Instant::now(),
            device_name: probe.device.clone(),
            device: match &probe.device {
                Some(dev) => DeviceCounters::read(Path::new("/proc/diskstats"), dev),
                None => Err("device I/O: the data directory is not on a block device".into()),
            },
            process: ProcessIo::read(Path::new("/proc/self/io")),
            cpu: CpuTimes::now(),
            machine: MachineTicks::read(Path::new("/proc/stat")),
            server: (!server_pids.is_empty())
                .then(|| (server_pids.to_vec(), TreeCounters::read(server_pids))),
            energy_uj: read_u64(&Path::new(RAPL_DIR).join("energy_uj"))
                .map_err(|e| format!("energy: RAPL counters not readable here ({e})")),
            sockets: probe.network.then(SocketBytes::read),
            memory_filesystem: probe.memory_filesystem,
            drive: match &probe.device {
                Some(dev) => {
                    super::drive::namespace_of(dev).and_then(|ns| ns.read().map(|c| (ns, c)))
                }
                None => Err("drive writes: the data directory is not on a block device".into()),
            },
        }
    }

    /// When the counters were read.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// The cost from `self` to `end`, for `operations` operations;
    /// `footprint` is the engine's size on disk, or why it is unknown.
    pub fn until(
        &self,
        end: &Snapshot,
        operations: u64,
        logical: LogicalBytes,
        footprint: Result<u64, String>,
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
        let data_dir_bytes = available(footprint.map_err(|e| format!("space: {e}")), u);
        let drive = available(
            delta(&self.drive, &end.drive, |(ns, a), (_, b)| {
                DriveWrites::between(ns, a, b)
            })
            .and_then(|d| d),
            u,
        );
        let cpu = available(
            delta(&self.cpu, &end.cpu, |a, b| CpuTimes {
                user_s: (b.user_s - a.user_s).max(0.0),
                system_s: (b.system_s - a.system_s).max(0.0),
            }),
            u,
        );
        let wall_s = end.at.duration_since(self.at).as_secs_f64();
        let machine_cpu = available(delta(&self.machine, &end.machine, |a, b| b.since(a)), u);
        let server = match (&self.server, &end.server) {
            (Some((pids, a)), Some((_, b))) => available(delta(a, b, |a, b| b.since(a, pids)), u),
            _ => None,
        };
        let mut accounting = Accounting {
            wall_s,
            operations,
            device: device_io.and(self.device_name.clone()),
            device_io,
            process_io,
            cpu,
            client_threads_cpu_s: None,
            machine_cpu,
            network: match (&self.sockets, &end.sockets) {
                (Some(a), Some(b)) => Some(b.since(a)),
                _ => None,
            },
            server,
            energy_joules,
            power: None,
            drive,
            data_dir_bytes,
            logical,
            derived: Derived::default(),
            unavailable,
            memory_filesystem: self.memory_filesystem,
        };
        accounting.derived = accounting.derive();
        accounting
    }
}

/// Windows' server costs added (the processes the most of any window,
/// the pids the last window's), if every window has one.
fn combined_server(parts: &[Accounting], last: &Accounting) -> Option<ServerCost> {
    parts
        .iter()
        .map(|a| a.server.clone())
        .collect::<Option<Vec<_>>>()
        .map(|v| {
            v.iter().fold(
                ServerCost {
                    pids: last
                        .server
                        .as_ref()
                        .map_or_else(Vec::new, |s| s.pids.clone()),
                    ..ServerCost::default()
                },
                |t, s| ServerCost {
                    cpu_s: t.cpu_s + s.cpu_s,
                    read_bytes: t.read_bytes + s.read_bytes,
                    write_bytes: t.write_bytes + s.write_bytes,
                    processes: t.processes.max(s.processes),
                    pids: t.pids,
                },
            )
        })
}

/// Windows' machine CPU as one: busy cores weighted by each window's
/// length, if every window has it.
fn combined_machine_cpu(parts: &[Accounting]) -> Option<MachineCpu> {
    parts
        .iter()
        .map(|a| a.machine_cpu.clone())
        .collect::<Option<Vec<_>>>()
        .map(|v| {
            // Busy cores weighted by each window's length.
            let wall: f64 = parts.iter().map(|a| a.wall_s).sum::<f64>().max(1e-9);
            let busy = v
                .iter()
                .zip(parts)
                .map(|(m, a)| m.busy_cores * a.wall_s)
                .sum::<f64>()
                / wall;
            MachineCpu {
                cores: v[0].cores,
                busy_cores: busy,
                per_core_busy_pct: Vec::new(),
            }
        })
}

impl Accounting {
    /// Several windows (a cell's repeats) as one: counters added, the
    /// data set and size on disk of the last, figures derived again.
    pub fn combine(parts: &[Accounting]) -> Option<Accounting> {
        let last = parts.last()?;
        let sum_opt = |f: &dyn Fn(&Accounting) -> Option<f64>| -> Option<f64> {
            parts.iter().map(f).sum::<Option<f64>>()
        };
        let mut all = last.clone();
        all.wall_s = parts.iter().map(|a| a.wall_s).sum();
        all.operations = parts.iter().map(|a| a.operations).sum();
        all.device_io = parts
            .iter()
            .map(|a| a.device_io)
            .collect::<Option<Vec<_>>>()
            .map(|v| {
                v.iter()
                    .fold(DeviceCounters::default(), |t, d| DeviceCounters {
                        read_ios: t.read_ios + d.read_ios,
                        read_bytes: t.read_bytes + d.read_bytes,
                        write_ios: t.write_ios + d.write_ios,
                        write_bytes: t.write_bytes + d.write_bytes,
                        busy_ms: t.busy_ms + d.busy_ms,
                        queue_ms: t.queue_ms + d.queue_ms,
                    })
            });
        all.process_io = parts
            .iter()
            .map(|a| a.process_io)
            .collect::<Option<Vec<_>>>()
            .map(|v| {
                v.iter().fold(ProcessIo::default(), |t, p| ProcessIo {
                    rchar: t.rchar + p.rchar,
                    wchar: t.wchar + p.wchar,
                    read_bytes: t.read_bytes + p.read_bytes,
                    write_bytes: t.write_bytes + p.write_bytes,
                })
            });
        all.cpu = parts
            .iter()
            .map(|a| a.cpu)
            .collect::<Option<Vec<_>>>()
            .map(|v| CpuTimes {
                user_s: v.iter().map(|c| c.user_s).sum(),
                system_s: v.iter().map(|c| c.system_s).sum(),
            });
        all.client_threads_cpu_s = sum_opt(&|a| a.client_threads_cpu_s);
        all.energy_joules = sum_opt(&|a| a.energy_joules);
        all.power = parts
            .iter()
            .map(|a| a.power.as_ref().map(|p| (a.wall_s, p)))
            .collect::<Option<Vec<_>>>()
            .and_then(|v| PowerUse::combine(&v));
        all.drive = parts
            .iter()
            .map(|a| a.drive.clone())
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().reduce(|t, d| t.add(&d)));
        all.network = parts
            .iter()
            .map(|a| a.network)
            .collect::<Option<Vec<_>>>()
            .map(|v| {
                v.iter().fold(NetworkBytes::default(), |t, n| NetworkBytes {
                    sent: t.sent + n.sent,
                    received: t.received + n.received,
                    sockets: t.sockets.max(n.sockets),
                })
            });
        all.server = combined_server(parts, last);
        all.machine_cpu = combined_machine_cpu(parts);
        all.logical.read = parts.iter().map(|a| a.logical.read).sum();
        all.logical.written = parts.iter().map(|a| a.logical.written).sum();
        all.logical.whole_records_written =
            parts.iter().map(|a| a.logical.whole_records_written).sum();
        all.memory_filesystem = parts.iter().any(|a| a.memory_filesystem);
        let mut unavailable: Vec<String> = Vec::new();
        for why in parts.iter().flat_map(|a| &a.unavailable) {
            if !unavailable.contains(why) {
                unavailable.push(why.clone());
            }
        }
        all.unavailable = unavailable;
        all.derived = all.derive();
        Some(all)
    }

    /// Windows measured at the same time by several processes (the shards
    /// of one study) as one window of `wall_s` seconds; `parts` pairs each
    /// window with the host it was measured on. A process's own counters
    /// (its CPU and I/O, its network bytes, the records it moved) add up.
    /// Machine-wide counters (the device, every CPU, a local server's
    /// processes, energy, the store's size) were read by every process of
    /// a host over overlapping windows, so each host counts once, with its
    /// widest window's figures; hosts then add up, none sharing a counter.
    pub fn concurrent(parts: &[(String, Accounting)], wall_s: f64) -> Option<Accounting> {
        let mut hosts: Vec<&str> = Vec::new();
        for (host, _) in parts {
            if !hosts.contains(&host.as_str()) {
                hosts.push(host);
            }
        }
        let per_host: Vec<Accounting> = hosts
            .iter()
            .filter_map(|host| {
                let mine: Vec<Accounting> = parts
                    .iter()
                    .filter(|(h, _)| h == host)
                    .map(|(_, a)| a.clone())
                    .collect();
                let widest = mine.iter().max_by(|a, b| a.wall_s.total_cmp(&b.wall_s))?;
                let mut total = Accounting::combine(&mine)?;
                total.wall_s = widest.wall_s;
                total.device.clone_from(&widest.device);
                total.device_io = widest.device_io;
                total.machine_cpu.clone_from(&widest.machine_cpu);
                total.server.clone_from(&widest.server);
                total.energy_joules = widest.energy_joules;
                total.power.clone_from(&widest.power);
                total.drive.clone_from(&widest.drive);
                total.data_dir_bytes = widest.data_dir_bytes;
                Some(total)
            })
            .collect();
        let mut all = Accounting::combine(&per_host)?;
        all.machine_cpu = per_host
            .iter()
            .map(|a| a.machine_cpu.clone())
            .collect::<Option<Vec<_>>>()
            .map(|v| MachineCpu {
                cores: v.iter().map(|m| m.cores).sum(),
                busy_cores: v.iter().map(|m| m.busy_cores).sum(),
                per_core_busy_pct: match v.as_slice() {
                    [one] => one.per_core_busy_pct.clone(),
                    _ => Vec::new(),
                },
            });
        all.data_dir_bytes = per_host.iter().map(|a| a.data_dir_bytes).sum();
        // Every shard's data set is the study's (a load shard counts every
        // record); a run's inserts of other shards are not in it.
        all.logical.dataset = parts.iter().map(|(_, a)| a.logical.dataset).max()?;
        all.wall_s = wall_s;
        all.derived = all.derive();
        Some(all)
    }

    /// The derived figures of the raw counters (again, after a caller
    /// added one, such as the network bytes).
    pub fn derive(&self) -> Derived {
        let per_op = |bytes: u64| ratio(bytes as f64, self.operations as f64);
        let cpu_s = self.cpu.map(|c| c.user_s + c.system_s);
        let dev = self.device_io;
        let proc_io = self.process_io;
        // The engine's own block-layer bytes: its server's processes, or
        // this process for an embedded engine.
        let engine_io = match &self.server {
            Some(s) => Some((s.read_bytes, s.write_bytes)),
            None => proc_io.map(|p| (p.read_bytes, p.write_bytes)),
        };
        let device_foreign_pct = match (dev, engine_io) {
            (Some(d), Some((r, w))) => {
                let total = d.read_bytes + d.write_bytes;
                ratio(total.saturating_sub(r + w) as f64 * 100.0, total as f64)
            }
            _ => None,
        };
        let amp = |bytes: Option<u64>, logical: u64| -> (Option<f64>, bool) {
            match bytes {
                // Nothing reaches a device from a memory file system: its
                // block-layer counters stay 0, which is no ratio.
                _ if self.memory_filesystem => (None, false),
                Some(_) if logical > 0 && logical < MIN_LOGICAL_BYTES => (None, true),
                Some(bytes) => (ratio(bytes as f64, logical as f64), false),
                None => (None, false),
            }
        };
        let (read_amplification_process, read_amplification_process_unreliable) =
            amp(engine_io.map(|e| e.0), self.logical.read);
        let (write_amplification_process, write_amplification_process_unreliable) =
            amp(engine_io.map(|e| e.1), self.logical.written);
        let (read_amplification_device, read_amplification_device_unreliable) =
            amp(dev.map(|d| d.read_bytes), self.logical.read);
        let (write_amplification_device, write_amplification_device_unreliable) =
            amp(dev.map(|d| d.write_bytes), self.logical.written);
        let device_amplification_shared =
            dev.is_some() && device_foreign_pct.is_none_or(|pct| pct > MAX_FOREIGN_DEVICE_PCT);
        let record_rewrite_factor = self
            .logical
            .whole_records_written
            .and_then(|w| ratio(w as f64, self.logical.written as f64));
        // Flash bytes are every process's: they stand for the engine's
        // only while others moved little of the device's bytes.
        let drive = self.drive.as_ref();
        let engine_owns_device =
            device_foreign_pct.is_some_and(|pct| pct <= MAX_FOREIGN_DEVICE_PCT);
        let (end_to_end_write_amplification, end_to_end_write_amplification_unreliable) =
            match drive.and_then(|d| d.media_bytes_written) {
                Some(_) if !engine_owns_device && self.logical.written > 0 => (None, true),
                media => amp(media, self.logical.written),
            };
        Derived {
            device_read_bytes_per_op: dev.and_then(|d| per_op(d.read_bytes)),
            device_write_bytes_per_op: dev.and_then(|d| per_op(d.write_bytes)),
            process_read_bytes_per_op: proc_io.and_then(|p| per_op(p.rchar)),
            process_write_bytes_per_op: proc_io.and_then(|p| per_op(p.wchar)),
            read_amplification_process,
            write_amplification_process,
            read_amplification_process_unreliable,
            write_amplification_process_unreliable,
            read_amplification_device,
            write_amplification_device,
            read_amplification_device_unreliable,
            write_amplification_device_unreliable,
            device_amplification_shared,
            record_rewrite_factor,
            device_foreign_pct,
            space_amplification: self
                .data_dir_bytes
                .and_then(|s| ratio(s as f64, self.logical.dataset as f64)),
            network_sent_bytes_per_op: self.network.and_then(|n| per_op(n.sent)),
            network_received_bytes_per_op: self.network.and_then(|n| per_op(n.received)),
            server_cpu_s_per_op: self
                .server
                .as_ref()
                .and_then(|s| ratio(s.cpu_s, self.operations as f64)),
            device_busy_pct: dev.and_then(|d| ratio(d.busy_ms as f64 / 10.0, self.wall_s)),
            device_queue_depth: dev.and_then(|d| ratio(d.queue_ms as f64 / 1000.0, self.wall_s)),
            cpu_s_per_op: cpu_s.and_then(|c| ratio(c, self.operations as f64)),
            ops_per_cpu_s: cpu_s.and_then(|c| ratio(self.operations as f64, c)),
            ops_per_joule: self
                .energy_joules
                .and_then(|j| ratio(self.operations as f64, j)),
            ops_per_joule_above_idle: self
                .power
                .as_ref()
                .and_then(|p| p.joules_above_idle)
                .and_then(|j| ratio(self.operations as f64, j)),
            drive_write_bytes_per_op: drive.and_then(|d| per_op(d.host_bytes_written)),
            drive_write_amplification: drive.and_then(DriveWrites::drive_write_amplification),
            end_to_end_write_amplification,
            end_to_end_write_amplification_unreliable,
            drive_writes_per_day: drive.and_then(|d| d.drive_writes_per_day(self.wall_s)),
            years_to_endurance_estimate: drive
                .and_then(|d| d.years_to_endurance_estimate(self.wall_s)),
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
            .filter_map(|l| procfs::DiskStat::from_line(l).ok())
            .find(|d| d.major.to_string() == major && d.minor.to_string() == minor)
            .map(|d| Self {
                read_ios: d.reads,
                read_bytes: d.sectors_read * SECTOR_BYTES,
                write_ios: d.writes,
                write_bytes: d.sectors_written * SECTOR_BYTES,
                busy_ms: d.time_in_progress,
                queue_ms: d.weighted_time_in_progress,
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
            busy_ms: self.busy_ms.saturating_sub(earlier.busy_ms),
            queue_ms: self.queue_ms.saturating_sub(earlier.queue_ms),
        }
    }
}

impl MachineTicks {
    /// The `cpuN` lines of `/proc/stat`: busy = everything but idle and iowait.
    /// By hand: procfs's `KernelStats` wants the whole file (boot time,
    /// context switches...) where only these lines count.
    pub fn read(stat: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(stat)
            .map_err(|e| format!("machine CPU: cannot read {} ({e})", stat.display()))?;
        let per_cpu: Vec<(u64, u64)> = text
            .lines()
            .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .map(|l| {
                let v: Vec<u64> = l
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                let total: u64 = v.iter().take(8).sum();
                let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
                (total.saturating_sub(idle), total)
            })
            .collect();
        if per_cpu.is_empty() {
            return Err(format!("machine CPU: no cpuN lines in {}", stat.display()));
        }
        Ok(Self { per_cpu })
    }

    fn since(&self, earlier: &Self) -> MachineCpu {
        let per_core_busy_pct: Vec<f64> = self
            .per_cpu
            .iter()
            .zip(&earlier.per_cpu)
            .map(|((b1, t1), (b0, t0))| {
                let total = t1.saturating_sub(*t0);
                ratio(b1.saturating_sub(*b0) as f64 * 100.0, total as f64).unwrap_or(0.0)
            })
            .collect();
        MachineCpu {
            cores: per_core_busy_pct.len(),
            busy_cores: per_core_busy_pct.iter().sum::<f64>() / 100.0,
            per_core_busy_pct,
        }
    }
}

impl ProcessIo {
    pub fn read(path: &Path) -> Result<Self, String> {
        use procfs::FromRead;
        let io = procfs::process::Io::from_file(path)
            .map_err(|e| format!("process I/O: cannot read {} ({e})", path.display()))?;
        Ok(Self {
            rchar: io.rchar,
            wchar: io.wchar,
            read_bytes: io.read_bytes,
            write_bytes: io.write_bytes,
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
    pub fn now() -> Result<Self, String> {
        // SAFETY: getrusage writes into the zeroed struct we pass.
        let (rc, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            let rc = libc::getrusage(libc::RUSAGE_SELF, &mut usage);
            (rc, usage)
        };
        if rc != 0 {
            return Err(format!(
                "CPU time: getrusage failed ({})",
                std::io::Error::last_os_error()
            ));
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Ok(Self {
            user_s: secs(usage.ru_utime),
            system_s: secs(usage.ru_stime),
        })
    }
}

/// RAPL's counter wraps at `max_energy_range_uj`.
fn energy_delta_uj(before: u64, after: u64) -> u64 {
    let range = read_u64(&Path::new(RAPL_DIR).join("max_energy_range_uj")).unwrap_or(0);
    super::power::wrapped_delta_uj(before, after, range)
}

fn read_u64(path: &Path) -> Result<u64, String> {
    std::fs::read_to_string(path)
        .map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("{e}"))
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
                write_bytes: 8192 * 512,
                busy_ms: 60,
                queue_ms: 80,
            }
        );
        let missing = DeviceCounters::read(&path, "0:45").unwrap_err();
        assert!(missing.contains("0:45"), "{missing}");
    }

    #[test]
    fn unreadable_diskstats_is_unavailable_not_zero() {
        let err = DeviceCounters::read(Path::new("/nonexistent/diskstats"), "8:0").unwrap_err();
        assert!(err.contains("cannot read /nonexistent/diskstats"), "{err}");
        let before = Probe::default().take();
        let after = Probe::default().take();
        let a = before.until(&after, 10, LogicalBytes::default(), Err("no store".into()));
        assert_eq!(a.device_io, None);
        assert_eq!(a.derived.write_amplification_process, None);
        assert!(a.unavailable.iter().any(|u| u.starts_with("device I/O")));
        assert!(a.unavailable.iter().any(|u| u == "space: no store"));
        assert_eq!(a.data_dir_bytes, None);
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
                busy_ms: 1_500,
                queue_ms: 6_000,
            }),
            process_io: Some(ProcessIo {
                read_bytes: 4 << 20,
                write_bytes: 30 << 20,
                ..Default::default()
            }),
            cpu: Some(CpuTimes {
                user_s: 1.5,
                system_s: 0.5,
            }),
            client_threads_cpu_s: None,
            machine_cpu: None,
            network: None,
            server: None,
            energy_joules: None,
            power: None,
            drive: None,
            data_dir_bytes: Some(3_000_000),
            logical: LogicalBytes {
                read: 2 << 20,
                written: 10 << 20,
                dataset: 1_000_000,
                whole_records_written: None,
            },
            derived: Derived::default(),
            unavailable: vec![],
            memory_filesystem: false,
        };
        a.derived = a.derive();
        let d = a.derived;
        assert_eq!(d.device_write_bytes_per_op, Some(300.0));
        // The process's own block-layer bytes, not the device's.
        assert_eq!(d.read_amplification_process, Some(2.0));
        assert_eq!(d.write_amplification_process, Some(3.0));
        assert_eq!(d.space_amplification, Some(3.0));
        assert_eq!(d.ops_per_cpu_s, Some(500.0));
        assert_eq!(d.ops_per_joule, None);
        assert_eq!(d.device_busy_pct, Some(75.0), "1.5 s busy in 2 s");
        assert_eq!(d.device_queue_depth, Some(3.0), "6 s of queued I/O in 2 s");
    }

    #[test]
    fn repeats_combine_by_adding_counters() {
        let one = |ops: u64, written: u64| {
            let mut a = Accounting {
                wall_s: 1.0,
                operations: ops,
                device: Some("8:0".into()),
                device_io: Some(DeviceCounters {
                    write_bytes: written,
                    busy_ms: 500,
                    ..Default::default()
                }),
                process_io: Some(ProcessIo {
                    write_bytes: written,
                    ..Default::default()
                }),
                cpu: Some(CpuTimes {
                    user_s: 0.5,
                    system_s: 0.0,
                }),
                client_threads_cpu_s: None,
                machine_cpu: None,
                network: None,
                server: None,
                energy_joules: None,
                power: None,
                drive: None,
                data_dir_bytes: Some(1000),
                logical: LogicalBytes {
                    read: 0,
                    written: ops << 20,
                    dataset: 100,
                    whole_records_written: None,
                },
                derived: Derived::default(),
                unavailable: vec![],
                memory_filesystem: false,
            };
            a.derived = a.derive();
            a
        };
        // Write amplification 1, 3 and 2: together 600 MiB written over
        // 300 MiB logical, every pass's bytes over every pass's.
        let all = Accounting::combine(&[
            one(100, 100 << 20),
            one(100, 300 << 20),
            one(100, 200 << 20),
        ])
        .unwrap();
        assert_eq!(all.operations, 300);
        assert_eq!(all.logical.written, 300 << 20);
        assert_eq!(all.derived.write_amplification_process, Some(2.0));
        assert_eq!(all.derived.device_busy_pct, Some(50.0));
        assert_eq!(all.derived.ops_per_cpu_s, Some(200.0));
        assert!(Accounting::combine(&[]).is_none());
    }

    #[test]
    fn concurrent_shards_add_their_own_counters_and_count_a_host_once() {
        let shard = |wall_s: f64, ops: u64, server_cpu_s: f64| {
            let mut a = Accounting {
                wall_s,
                operations: ops,
                device: Some("8:0".into()),
                device_io: Some(DeviceCounters {
                    write_bytes: 1000 * wall_s as u64,
                    ..Default::default()
                }),
                process_io: None,
                cpu: Some(CpuTimes {
                    user_s: 1.0,
                    system_s: 0.0,
                }),
                client_threads_cpu_s: Some(0.5),
                machine_cpu: Some(MachineCpu {
                    cores: 2,
                    busy_cores: 1.5,
                    per_core_busy_pct: vec![80.0, 70.0],
                }),
                network: None,
                server: Some(ServerCost {
                    cpu_s: server_cpu_s,
                    ..ServerCost::default()
                }),
                energy_joules: None,
                power: None,
                drive: None,
                data_dir_bytes: Some(5000),
                logical: LogicalBytes {
                    read: ops,
                    written: 0,
                    dataset: 100,
                    whole_records_written: None,
                },
                derived: Derived::default(),
                unavailable: vec![],
                memory_filesystem: false,
            };
            a.derived = a.derive();
            a
        };
        let one_host = [
            ("h".to_string(), shard(9.0, 100, 3.0)),
            ("h".to_string(), shard(10.0, 300, 4.0)),
        ];
        let all = Accounting::concurrent(&one_host, 10.0).unwrap();
        assert_eq!(all.operations, 400);
        assert_eq!(all.cpu.map(|c| c.user_s), Some(2.0), "processes add");
        assert_eq!(all.client_threads_cpu_s, Some(1.0));
        assert_eq!(all.logical.read, 400);
        // The host's server and device counted once, from the widest window.
        assert_eq!(all.server.as_ref().map(|s| s.cpu_s), Some(4.0));
        assert_eq!(all.device_io.map(|d| d.write_bytes), Some(10_000));
        assert_eq!(all.derived.server_cpu_s_per_op, Some(0.01));
        assert_eq!(all.machine_cpu.as_ref().map(|m| m.cores), Some(2));
        assert_eq!(all.data_dir_bytes, Some(5000));
        assert_eq!(all.wall_s, 10.0);
        let two_hosts = [
            ("a".to_string(), shard(10.0, 100, 3.0)),
            ("b".to_string(), shard(10.0, 100, 4.0)),
        ];
        let all = Accounting::concurrent(&two_hosts, 10.0).unwrap();
        assert_eq!(all.server.as_ref().map(|s| s.cpu_s), Some(7.0));
        assert_eq!(all.machine_cpu.as_ref().map(|m| m.cores), Some(4));
        assert_eq!(all.data_dir_bytes, Some(10_000));
        assert_eq!(all.logical.dataset, 100);
        assert!(Accounting::concurrent(&[], 1.0).is_none());
    }

    #[test]
    fn amplification_is_the_engines_own_io_or_marked_unreliable() {
        let mut a = Accounting {
            wall_s: 1.0,
            operations: 10,
            device: Some("8:0".into()),
            device_io: Some(DeviceCounters {
                read_bytes: 10 << 20,
                write_bytes: 30 << 20,
                ..Default::default()
            }),
            process_io: Some(ProcessIo {
                read_bytes: 2 << 20,
                write_bytes: 6 << 20,
                ..Default::default()
            }),
            cpu: None,
            client_threads_cpu_s: None,
            machine_cpu: None,
            network: None,
            server: None,
            energy_joules: None,
            power: None,
            drive: None,
            data_dir_bytes: None,
            logical: LogicalBytes {
                read: 1 << 20,
                written: 2 << 20,
                dataset: 0,
                whole_records_written: None,
            },
            derived: Derived::default(),
            unavailable: vec![],
            memory_filesystem: false,
        };
        let d = a.derive();
        // Another process moved 32 of the device's 40 MiB; the engine's own
        // 8 are the process figure, the device's 40 the device figure,
        // marked shared.
        assert_eq!(d.read_amplification_process, Some(2.0));
        assert_eq!(d.write_amplification_process, Some(3.0));
        assert_eq!(d.read_amplification_device, Some(10.0));
        assert_eq!(d.write_amplification_device, Some(15.0));
        assert_eq!(d.device_foreign_pct, Some(80.0));
        assert!(d.device_amplification_shared);
        assert!(!d.write_amplification_process_unreliable);
        // The engine's alone: 8 of 9 MiB on the device are its own.
        a.device_io = Some(DeviceCounters {
            read_bytes: 2 << 20,
            write_bytes: 7 << 20,
            ..Default::default()
        });
        let d = a.derive();
        assert_eq!(d.write_amplification_device, Some(3.5));
        assert!(!d.device_amplification_shared);
        // A server engine: its processes' bytes, not this process's.
        a.server = Some(ServerCost {
            read_bytes: 3 << 20,
            write_bytes: 8 << 20,
            ..ServerCost::default()
        });
        let d = a.derive();
        assert_eq!(d.read_amplification_process, Some(3.0));
        assert_eq!(d.write_amplification_process, Some(4.0));
        // Only device counters: no process figure, and the device's
        // cannot be told apart from other processes' bytes.
        a.server = None;
        a.process_io = None;
        let d = a.derive();
        assert_eq!(d.write_amplification_process, None);
        assert!(!d.write_amplification_process_unreliable);
        assert_eq!(d.write_amplification_device, Some(3.5));
        assert!(d.device_amplification_shared);
        assert_eq!(d.device_foreign_pct, None);
        // Too few logical bytes to divide by.
        a.process_io = Some(ProcessIo::default());
        a.logical.written = MIN_LOGICAL_BYTES - 1;
        let d = a.derive();
        assert_eq!(d.write_amplification_process, None);
        assert!(d.write_amplification_process_unreliable);
        assert!(!d.read_amplification_process_unreliable);
        assert!(d.write_amplification_device_unreliable);
        // Nothing written: nothing to mark.
        a.logical.written = 0;
        assert!(!a.derive().write_amplification_process_unreliable);
        // Updates of one field of four rewrite whole records: 4x of it.
        a.logical.written = 2 << 20;
        a.logical.whole_records_written = Some(8 << 20);
        assert_eq!(a.derive().record_rewrite_factor, Some(4.0));
        // tmpfs: its counters read 0, which is no amplification.
        a.device_io = None;
        a.memory_filesystem = true;
        let d = a.derive();
        assert_eq!(d.write_amplification_process, None);
        assert_eq!(d.write_amplification_device, None);
        assert!(!d.write_amplification_process_unreliable);
    }

    #[test]
    fn machine_cpu_comes_from_proc_stat() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        let write = |lines: &str| std::fs::write(&path, lines).unwrap();
        // user nice system idle iowait irq softirq steal
        write("cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0\ncpu1 0 0 0 200 0 0 0 0\nintr 5\n");
        let before = MachineTicks::read(&path).unwrap();
        write(
            "cpu  0 0 0 0 0 0 0 0\ncpu0 190 0 10 100 0 0 0 0\ncpu1 25 0 25 250 0 0 0 0\nintr 9\n",
        );
        let after = MachineTicks::read(&path).unwrap();
        let m = after.since(&before);
        assert_eq!(m.cores, 2);
        assert_eq!(m.per_core_busy_pct, vec![100.0, 50.0]);
        assert!((m.busy_cores - 1.5).abs() < 1e-9);
        assert!(!MachineTicks::read(Path::new("/proc/stat"))
            .unwrap()
            .per_cpu
            .is_empty());
    }

    #[test]
    fn cpu_time_grows_with_work() {
        // This thread's own CPU clock is the reference, so a busy machine
        // (less CPU per wall second) cannot fail the test.
        let thread_cpu = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes only into `ts`.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
        };
        let before = CpuTimes::now().unwrap();
        let spun_from = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - spun_from < 0.05 {
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let after = CpuTimes::now().unwrap();
        let grew = (after.user_s + after.system_s) - (before.user_s + before.system_s);
        assert!(grew >= 0.04, "50 ms of CPU spun, getrusage grew {grew} s");
    }
}
