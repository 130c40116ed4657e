//! What bound a measured step: the device, the engine's own write stalls,
//! kvperf's CPU, the rest of the machine's CPU — or, when no figure is
//! near its limit, "unclear" with the figures, so a reader knows what a
//! throughput number measured.

use serde::{Deserialize, Serialize};

use super::accounting::Accounting;
use super::spikes::{self, Spike};

/// A device this busy is the bound (iostat's %util).
const DEVICE_BUSY_PCT: f64 = 90.0;
/// Write stalls for this share of the window bound the engine.
const STALL_PCT: f64 = 20.0;
/// CPU use this close to every core is a CPU bound.
const CPU_SHARE: f64 = 0.85;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Device,
    EngineStalls,
    ClientCpu,
    /// A server engine's own processes used most of a busy machine.
    ServerCpu,
    MachineCpu,
    Unclear,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub bound: Bound,
    /// One line: "device-bound: 97% busy, queue depth 31".
    pub text: String,
    /// Where the window departed from its steady level, with the engine
    /// events overlapping each departure ([`spikes::find`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spikes: Vec<Spike>,
}

impl Verdict {
    /// The verdict with its largest spikes: "device-bound: ...; spikes: ...".
    pub fn line(&self) -> String {
        match spikes::summary(&self.spikes) {
            Some(spikes) => format!("{}; {spikes}", self.text),
            None => self.text.clone(),
        }
    }
}

/// Judges a window from its accounting and, where the engine reports
/// them, the seconds it spent in write stalls.
pub fn judge(a: &Accounting, stall_s: Option<f64>) -> Verdict {
    let busy = a.derived.device_busy_pct;
    let depth = a.derived.device_queue_depth;
    let process_cores = a.cpu.map(|c| (c.user_s + c.system_s) / a.wall_s.max(1e-9));
    let machine = a.machine_cpu.as_ref();
    let cores = machine.map_or(0, |m| m.cores);
    let stall_pct = stall_s.map(|s| s / a.wall_s.max(1e-9) * 100.0);

    let verdict = |bound, text: String| Verdict {
        bound,
        text,
        spikes: Vec::new(),
    };
    if let Some(b) = busy.filter(|b| *b >= DEVICE_BUSY_PCT) {
        return verdict(
            Bound::Device,
            format!(
                "device-bound: {b:.0}% busy, queue depth {}",
                depth.map_or("unknown".into(), |d| format!("{d:.0}"))
            ),
        );
    }
    if let Some(p) = stall_pct.filter(|p| *p >= STALL_PCT) {
        return verdict(
            Bound::EngineStalls,
            format!("engine stalls: {p:.0}% of the time in write stalls"),
        );
    }
    if let (Some(used), true) = (process_cores, cores > 0) {
        if used >= CPU_SHARE * cores as f64 {
            return verdict(
                Bound::ClientCpu,
                format!("client CPU-bound: kvperf {used:.1} of {cores} cores"),
            );
        }
    }
    let server_cores = a.server.as_ref().map(|s| s.cpu_s / a.wall_s.max(1e-9));
    if let Some(m) = machine.filter(|m| m.busy_cores >= CPU_SHARE * m.cores as f64) {
        // A server sharing the machine with kvperf: name it when it is the
        // largest user, so "machine CPU-bound" is not read as "client".
        if let Some(server) = server_cores.filter(|s| *s >= m.busy_cores / 2.0) {
            let client = process_cores.unwrap_or(0.0);
            return verdict(
                Bound::ServerCpu,
                format!(
                    "server CPU-bound: the server {server:.1} of {} cores (kvperf {client:.1}, other processes {:.1})",
                    m.cores,
                    (m.busy_cores - server - client).max(0.0)
                ),
            );
        }
        let others = process_cores.map_or(String::new(), |p| {
            format!(
                " (kvperf {p:.1}, other processes {:.1})",
                (m.busy_cores - p).max(0.0)
            )
        });
        return verdict(
            Bound::MachineCpu,
            format!(
                "machine CPU-bound: {:.1} of {} cores busy{others}",
                m.busy_cores, m.cores
            ),
        );
    }
    let mut figures = Vec::new();
    figures.push(match busy {
        Some(b) => format!(
            "device {b:.0}% busy, queue depth {}",
            depth.map_or("unknown".into(), |d| format!("{d:.1}"))
        ),
        None => "device unknown (no block device)".into(),
    });
    if let (Some(p), true) = (process_cores, cores > 0) {
        figures.push(format!("kvperf {p:.1} of {cores} cores"));
    }
    if let Some(m) = machine {
        figures.push(format!("machine {:.1} of {} cores", m.busy_cores, m.cores));
    }
    if let Some(p) = stall_pct {
        figures.push(format!("stalls {p:.0}%"));
    }
    verdict(Bound::Unclear, format!("unclear: {}", figures.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::accounting::{CpuTimes, Derived, LogicalBytes, MachineCpu};

    fn window(busy: Option<f64>, depth: f64, kvperf_cores: f64, machine_cores: f64) -> Accounting {
        Accounting {
            wall_s: 10.0,
            operations: 1000,
            device: None,
            device_io: None,
            process_io: None,
            cpu: Some(CpuTimes {
                user_s: kvperf_cores * 10.0,
                system_s: 0.0,
            }),
            client_threads_cpu_s: None,
            network: None,
            server: None,
            machine_cpu: Some(MachineCpu {
                cores: 2,
                busy_cores: machine_cores,
                per_core_busy_pct: vec![machine_cores * 50.0; 2],
            }),
            energy_joules: None,
            power: None,
            drive: None,
            data_dir_bytes: None,
            logical: LogicalBytes::default(),
            derived: Derived {
                device_busy_pct: busy,
                device_queue_depth: busy.map(|_| depth),
                ..Derived::default()
            },
            unavailable: Vec::new(),
            memory_filesystem: false,
        }
    }

    #[test]
    fn each_bound_has_its_line() {
        let v = judge(&window(Some(97.0), 31.0, 0.4, 0.5), None);
        assert_eq!(v.bound, Bound::Device);
        assert_eq!(v.text, "device-bound: 97% busy, queue depth 31");

        let v = judge(&window(Some(40.0), 2.0, 0.5, 0.6), Some(4.1));
        assert_eq!(v.text, "engine stalls: 41% of the time in write stalls");

        let v = judge(&window(Some(10.0), 1.0, 1.9, 1.95), Some(0.0));
        assert_eq!(v.text, "client CPU-bound: kvperf 1.9 of 2 cores");

        let v = judge(&window(None, 0.0, 0.6, 1.9), None);
        assert_eq!(v.bound, Bound::MachineCpu);
        assert!(
            v.text
                .contains("1.9 of 2 cores busy (kvperf 0.6, other processes 1.3)"),
            "{}",
            v.text
        );

        // The same busy machine, most of it a server kvperf talks to.
        let mut a = window(None, 0.0, 0.2, 1.9);
        a.server = Some(crate::measure::process::ServerCost {
            cpu_s: 14.0,
            ..Default::default()
        });
        let v = judge(&a, None);
        assert_eq!(v.bound, Bound::ServerCpu);
        assert_eq!(
            v.text,
            "server CPU-bound: the server 1.4 of 2 cores (kvperf 0.2, other processes 0.3)"
        );

        let v = judge(&window(Some(30.0), 1.2, 0.8, 1.0), Some(0.2));
        assert_eq!(v.bound, Bound::Unclear);
        assert_eq!(
            v.text,
            "unclear: device 30% busy, queue depth 1.2, kvperf 0.8 of 2 cores, machine 1.0 of 2 cores, stalls 2%"
        );
    }
}
