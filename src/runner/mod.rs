//! The runner: owns threads, pacing, warmup, time limits and status output.
//! Workloads decide *what* each operation is ([`WorkloadThread::step`]) and
//! hold their thread's engine handle; engines only store and fetch.
//!
//! Each thread records into its own histograms; they are merged when a
//! status line asks for them (the thread hands them over at its next
//! operation) and at the end, so there is no shared lock per operation.

mod pacing;
mod status;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use pacing::Pacer;
pub use status::{format_java_decimal, OpsLog, StatusOptions};

use crate::measure::{Meter, OpHistograms};

/// What to run: shared state, and a per-thread handle with its own RNG and
/// engine worker.
pub trait Workload: Sync {
    /// Called on the thread that will use it, before the clock starts.
    fn thread(&self, index: usize) -> anyhow::Result<Box<dyn WorkloadThread + '_>>;

    /// Operations thread `index` performs; `None` runs until the time limit.
    /// By default `total` is split YCSB-style.
    fn thread_quota(&self, total: Option<u64>, threads: usize, index: usize) -> Option<u64> {
        total.map(|t| ops_for_thread(t, threads, index))
    }

    /// A background thread (db_bench's writer in `readwhilewriting`) runs
    /// until every foreground thread is done and is left out of the figures.
    fn is_background(&self, _index: usize) -> bool {
        false
    }
}

pub trait WorkloadThread: Send {
    /// Performs one operation, timing its engine calls with `meter`.
    /// `intended` is when the operation was scheduled to start.
    /// Returns false to stop this thread (YCSB stops a loader whose insert failed).
    fn step(&mut self, meter: &mut Meter, intended: Instant) -> bool;
}

#[derive(Debug, Clone)]
pub struct RunSpec {
    pub threads: usize,
    /// Operations in the measured window; `None` runs until `max_execution`.
    pub operations: Option<u64>,
    /// Total target rate in ops/s across threads; 0 = as fast as possible.
    pub target_ops_per_sec: f64,
    /// Excluded from every figure; runs before the measured window.
    pub warmup: Duration,
    pub max_execution: Option<Duration>,
    pub status: StatusOptions,
}

#[derive(Debug)]
pub struct RunOutcome {
    /// From the start of the measured window to the last thread's end.
    pub runtime: Duration,
    pub operations: u64,
    pub histograms: OpHistograms,
    pub hit_time_limit: bool,
    /// Sum over foreground threads of their time in the measured window
    /// (db_bench's `micros/op` divides this by the operations).
    pub thread_seconds: f64,
}

/// Per-thread shared state, on its own cache lines.
#[repr(align(128))]
struct Slot {
    ops_done: AtomicU64,
    published_epoch: AtomicU64,
    finished: AtomicBool,
    /// Histograms handed over since the last status line.
    interval: Mutex<OpHistograms>,
}

impl Slot {
    fn new() -> Self {
        Self {
            ops_done: AtomicU64::new(0),
            published_epoch: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            interval: Mutex::new(OpHistograms::new()),
        }
    }
}

struct Shared {
    slots: Vec<Slot>,
    /// Bumped by the status thread; a worker that sees a new value hands over.
    epoch: AtomicU64,
    start: OnceLock<Instant>,
    /// Set when every worker has finished; ends the status thread.
    all_done: AtomicBool,
    /// Foreground threads still running; background threads stop at 0.
    foreground_left: AtomicU64,
}

/// Ops of thread `index` when `total` are split YCSB-style: the first
/// `total % threads` threads do one more.
pub fn ops_for_thread(total: u64, threads: usize, index: usize) -> u64 {
    let threads = threads as u64;
    total / threads + u64::from((index as u64) < total % threads)
}

pub fn execute(workload: &dyn Workload, spec: &RunSpec) -> anyhow::Result<RunOutcome> {
    let threads = spec.threads.max(1);
    let shared = Shared {
        slots: (0..threads).map(|_| Slot::new()).collect(),
        epoch: AtomicU64::new(0),
        start: OnceLock::new(),
        all_done: AtomicBool::new(false),
        foreground_left: AtomicU64::new(
            (0..threads).filter(|&i| !workload.is_background(i)).count() as u64,
        ),
    };
    let ready = Barrier::new(threads + 1);
    let go = Barrier::new(threads + 1);
    let per_thread_rate = spec.target_ops_per_sec / threads as f64;
    let track_intended = per_thread_rate > 0.0;

    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|index| {
                let (shared, ready, go) = (&shared, &ready, &go);
                std::thread::Builder::new()
                    .name(format!("kvperf-{index}"))
                    .spawn_scoped(scope, move || {
                        // Open per-thread state before the clock starts; a
                        // failure still reaches both barriers so nobody hangs.
                        let setup = workload.thread(index);
                        ready.wait();
                        go.wait();
                        let background = workload.is_background(index);
                        let mut work = match setup {
                            Ok(work) => work,
                            Err(err) => {
                                if !background {
                                    shared.foreground_left.fetch_sub(1, Relaxed);
                                }
                                return Err(err.context(format!("thread {index} setup")));
                            }
                        };
                        let quota = if background {
                            None
                        } else {
                            workload.thread_quota(spec.operations, threads, index)
                        };
                        let run = ThreadRun {
                            slot: &shared.slots[index],
                            shared,
                            spec,
                            pacer: Pacer::new(if background { 0.0 } else { per_thread_rate }),
                            meter: Meter::new(track_intended),
                            background,
                        };
                        Ok::<_, anyhow::Error>((background, run.run(work.as_mut(), quota)))
                    })
                    .expect("spawning a thread")
            })
            .collect();

        ready.wait();
        let start = Instant::now();
        shared.start.set(start).expect("set once");
        go.wait();
        let measure_start = start + spec.warmup;

        let status = status::spawn(scope, &spec.status, &shared, spec, measure_start);

        let mut outcome = RunOutcome {
            runtime: Duration::ZERO,
            operations: 0,
            histograms: OpHistograms::new(),
            hit_time_limit: false,
            thread_seconds: 0.0,
        };
        let mut first_error = None;
        let mut last_end = measure_start;
        for worker in workers {
            match worker.join().expect("worker thread panicked") {
                Ok((true, _background)) => {}
                Ok((false, done)) => {
                    outcome.operations += done.operations;
                    outcome.histograms.add(&done.histograms);
                    outcome.hit_time_limit |= done.hit_time_limit;
                    last_end = last_end.max(done.end);
                    outcome.thread_seconds += done
                        .end
                        .saturating_duration_since(measure_start)
                        .as_secs_f64();
                }
                Err(err) => first_error = first_error.or(Some(err)),
            }
        }
        shared.all_done.store(true, Relaxed);
        if let Some(status) = status {
            let _ = status.join();
        }
        outcome.runtime = last_end.saturating_duration_since(measure_start);
        match first_error {
            Some(err) => Err(err),
            None => Ok(outcome),
        }
    })
}

struct ThreadRun<'a> {
    slot: &'a Slot,
    shared: &'a Shared,
    spec: &'a RunSpec,
    pacer: Pacer,
    meter: Meter,
    background: bool,
}

struct ThreadDone {
    operations: u64,
    histograms: OpHistograms,
    end: Instant,
    hit_time_limit: bool,
}

impl ThreadRun<'_> {
    fn run(mut self, work: &mut dyn WorkloadThread, quota: Option<u64>) -> ThreadDone {
        let start = *self.shared.start.get().expect("set before go");
        let measure_start = start + self.spec.warmup;
        if !self.spec.warmup.is_zero() {
            self.meter.recording = false;
            let mut k = 0;
            while Instant::now() < measure_start {
                let intended = self.pacer.wait_for(start, k);
                if !work.step(&mut self.meter, intended) {
                    break;
                }
                k += 1;
            }
            self.meter.recording = true;
        }

        let deadline = self.spec.max_execution.map(|d| measure_start + d);
        let quota = quota.unwrap_or(u64::MAX);
        let mut total = OpHistograms::new();
        let mut seen_epoch = 0;
        let mut done = 0;
        let mut hit_time_limit = false;
        while done < quota {
            let intended = self.pacer.wait_for(measure_start, done);
            let keep_going = work.step(&mut self.meter, intended);
            done += 1;
            if !self.background {
                self.slot.ops_done.store(done, Relaxed);
            }
            let epoch = self.shared.epoch.load(Relaxed);
            if epoch != seen_epoch {
                seen_epoch = epoch;
                self.hand_over(&mut total, epoch);
            }
            if !keep_going {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                hit_time_limit = true;
                break;
            }
            if self.background && self.shared.foreground_left.load(Relaxed) == 0 {
                break;
            }
        }
        let end = Instant::now();
        if !self.background {
            self.shared.foreground_left.fetch_sub(1, Relaxed);
        }
        self.publish(&mut total);
        self.slot.finished.store(true, Relaxed);
        ThreadDone {
            operations: done,
            histograms: total,
            end,
            hit_time_limit,
        }
    }

    /// Adds this thread's histograms to its total and, for a foreground
    /// thread, to what the next status line reports.
    fn publish(&mut self, total: &mut OpHistograms) {
        total.add(&self.meter.histograms);
        if !self.background {
            self.slot
                .interval
                .lock()
                .expect("not poisoned")
                .add(&self.meter.histograms);
        }
    }

    fn hand_over(&mut self, total: &mut OpHistograms, epoch: u64) {
        self.publish(total);
        self.meter.histograms.clear();
        self.slot.published_epoch.store(epoch, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_operations_like_ycsb() {
        let split: Vec<u64> = (0..3).map(|i| ops_for_thread(10, 3, i)).collect();
        assert_eq!(split, vec![4, 3, 3]);
        assert_eq!((0..4).map(|i| ops_for_thread(2, 4, i)).sum::<u64>(), 2);
    }
}
