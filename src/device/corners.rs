//! The "4 corners" of a storage device, as seed 004 prints them next to
//! its application results: 128 KiB sequential read and write (MB/s) and
//! 4 KiB random read and write (IOPS), each with direct I/O at a queue
//! depth of 32, a ramp that is not counted, and a fixed runtime (fio's
//! usual settings). The target is written once, sequentially, before the
//! reads, so no read lands on a hole, and synced, so no corner pays for
//! the layout's writes still in the device's cache (fio's `create_fsync`).

use std::time::Duration;

use super::buffers::BufferPages;
use super::target::Target;
use super::uring::{self, Pattern, Until};
use crate::measure::OpKind;
use crate::results::step::{DeviceFigures, Latency, Measurement, OpStats, WindowBounds};

#[derive(Debug, Clone, Copy)]
pub struct CornersConfig {
    pub seq_block: usize,
    pub rand_block: usize,
    pub seq_depth: usize,
    pub rand_depth: usize,
    pub ramp: Duration,
    pub runtime: Duration,
    pub buffers: BufferPages,
}

impl Default for CornersConfig {
    fn default() -> Self {
        Self {
            seq_block: 128 << 10,
            rand_block: 4 << 10,
            seq_depth: 32,
            rand_depth: 32,
            ramp: Duration::from_secs(5),
            runtime: Duration::from_secs(30),
            buffers: BufferPages::Huge,
        }
    }
}

/// One corner: its name (fio's `rw=`) and pattern.
pub struct Corner {
    pub name: &'static str,
    pub pattern: Pattern,
}

impl CornersConfig {
    /// In the order fio's 4-corners scripts run them: reads first, on the
    /// laid-out file, then writes.
    pub fn corners(&self) -> [Corner; 4] {
        let p = |write, random, block, depth| Pattern {
            write,
            random,
            block,
            depth,
        };
        [
            Corner {
                name: "read",
                pattern: p(false, false, self.seq_block, self.seq_depth),
            },
            Corner {
                name: "randread",
                pattern: p(false, true, self.rand_block, self.rand_depth),
            },
            Corner {
                name: "write",
                pattern: p(true, false, self.seq_block, self.seq_depth),
            },
            Corner {
                name: "randwrite",
                pattern: p(true, true, self.rand_block, self.rand_depth),
            },
        ]
    }
}

/// Lays the target out with one sequential pass of 1 MiB writes, then
/// syncs it.
pub fn layout(target: &Target) -> std::io::Result<uring::Done> {
    let fill = Pattern {
        write: true,
        random: false,
        block: super::FILL_BLOCK as usize,
        depth: 8,
    };
    let done = uring::run(
        &target.file,
        target.size,
        fill,
        Until::OnePass,
        BufferPages::Huge,
        7,
    )?;
    target.file.sync_all()?;
    Ok(done)
}

/// Measures one corner on the laid-out target.
pub fn measure(
    target: &Target,
    corner: &Corner,
    cfg: &CornersConfig,
) -> std::io::Result<Measurement> {
    let until = Until::Time {
        ramp: cfg.ramp,
        runtime: cfg.runtime,
    };
    let started = crate::clock::unix_ms();
    let done = uring::run(
        &target.file,
        target.size,
        corner.pattern,
        until,
        cfg.buffers,
        11,
    )?;
    let p = corner.pattern;
    let kind = if p.write { OpKind::Write } else { OpKind::Read };
    let window = WindowBounds {
        start_unix_ms: started + cfg.ramp.as_millis() as u64,
        end_unix_ms: crate::clock::unix_ms(),
        runtime_s: done.seconds,
        operations: done.ios,
    };
    let ops = [(
        kind,
        OpStats {
            returns: [("OK".to_string(), done.ios)].into(),
            first_error: None,
            latency: Latency::of(&done.latency),
            failed: None,
            intended: None,
            intended_failed: None,
        },
    )]
    .into();
    Ok(Measurement {
        threads: 1,
        clients: Default::default(),
        target_ops_per_sec: 0.0,
        warmup_s: cfg.ramp.as_secs_f64(),
        hit_time_limit: true,
        ops,
        intervals: Vec::new(),
        timeline: None,
        accounting: None,
        engine_stats: Default::default(),
        integrity: None,
        db_bench: None,
        verdict: None,
        device: Some(DeviceFigures {
            block_bytes: p.block as u64,
            queue_depth: p.depth as u64,
            random: p.random,
            write: p.write,
            mb_per_sec: done.bytes as f64 / 1e6 / done.seconds,
            fio: None,
            buffers: Some(done.buffers),
        }),
        events: None,
        ..Measurement::of_window(corner.name, window)
    })
}

/// The corners as seed 004 shows them: MB/s for sequential, IOPS for random.
pub fn headline(m: &Measurement) -> String {
    match &m.device {
        Some(d) if d.random => format!("{:.0} IOPS", m.ops_per_sec),
        Some(d) => format!("{:.0} MB/s", d.mb_per_sec),
        None => "-".into(),
    }
}
