//! Preconditioning to steady state, as SNIA's Solid State Storage
//! Performance Test Specification asks: a workload-independent fill (the
//! file written sequentially, `passes` times), then workload-dependent
//! rounds (4 KiB random writes at queue depth 32) until the rounds' IOPS
//! are steady over a window, or a round limit is reached.

use std::time::Duration;

use super::buffers::BufferPages;
use super::corners::Corner;
use super::target::Target;
use super::uring::{self, Pattern, Until};
use crate::measure::steady::{Steadiness, SteadyCriterion};
use crate::results::step::{DeviceFigures, Measurement, WindowBounds};

#[derive(Debug, Clone, Copy)]
pub struct PreconditionConfig {
    pub passes: u32,
    /// Rounds until steady; `None` skips the rounds.
    pub steady: Option<SteadyCriterion>,
    pub round: Duration,
    pub max_rounds: usize,
}

/// The fill's passes and the rounds, one measurement each, and whether
/// the rounds reached steady state.
pub fn run(
    target: &Target,
    cfg: &PreconditionConfig,
) -> std::io::Result<(Vec<Measurement>, Option<Steadiness>)> {
    let mut out = Vec::new();
    let fill = Corner {
        name: "fill",
        pattern: Pattern {
            write: true,
            random: false,
            block: super::FILL_BLOCK as usize,
            depth: 8,
        },
    };
    for pass in 1..=cfg.passes {
        let done = uring::run(
            &target.file,
            target.size,
            fill.pattern,
            Until::OnePass,
            BufferPages::Huge,
            u64::from(pass),
        )?;
        out.push(figures(format!("fill pass {pass}"), &fill, &done));
    }
    let Some(criterion) = cfg.steady else {
        return Ok((out, None));
    };
    let round = Corner {
        name: "randwrite",
        pattern: Pattern {
            write: true,
            random: true,
            block: 4096,
            depth: 32,
        },
    };
    let mut iops = Vec::new();
    let mut verdict = criterion.check(&iops);
    for n in 1..=cfg.max_rounds {
        let until = Until::Time {
            ramp: Duration::ZERO,
            runtime: cfg.round,
        };
        let done = uring::run(
            &target.file,
            target.size,
            round.pattern,
            until,
            BufferPages::Huge,
            100 + n as u64,
        )?;
        let m = figures(format!("round {n}"), &round, &done);
        iops.push(m.ops_per_sec);
        out.push(m);
        verdict = criterion.check(&iops);
        if matches!(verdict, Steadiness::Steady { .. }) {
            break;
        }
    }
    Ok((out, Some(verdict)))
}

fn figures(name: String, corner: &Corner, done: &uring::Done) -> Measurement {
    let p = corner.pattern;
    let window = WindowBounds {
        runtime_s: done.seconds,
        operations: done.ios,
        ..WindowBounds::default()
    };
    Measurement {
        threads: 1,
        device: Some(DeviceFigures {
            block_bytes: p.block as u64,
            queue_depth: p.depth as u64,
            random: p.random,
            write: p.write,
            mb_per_sec: done.bytes as f64 / 1e6 / done.seconds.max(1e-9),
            fio: None,
            buffers: Some(done.buffers.clone()),
        }),
        ..Measurement::of_window(name, window)
    }
}
