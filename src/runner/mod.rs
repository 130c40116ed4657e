//! The runner: owns threads, pacing, warmup, time limits and status output.
//! Workloads decide *what* each operation is ([`WorkloadThread::step`]) and
//! hold their thread's engine handle; engines only store and fetch.
//!
//! Each thread records into its own histograms; they are merged when a
//! status line asks for them (the thread hands them over at its next
//! operation) and at the end, so there is no shared lock per operation.

mod gate;
mod pacing;
mod status;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use pacing::Pacer;
pub use status::{format_java_decimal, OpsLog, StatusOptions};

use crate::engine::ThreadSlot;
use crate::error::InputError;
use crate::measure::net::{NetworkBytes, SocketBytes};
use crate::measure::{Meter, OpHistograms};
use gate::StartGate;

/// What to run: shared state, and a per-thread handle with its own RNG and
/// engine worker.
pub trait Workload: Sync {
    /// Called on the thread that will use it, before the clock starts.
    fn thread(&self, slot: ThreadSlot) -> anyhow::Result<Box<dyn WorkloadThread + '_>>;

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
    fn step(&mut self, meter: &mut Meter, intended: Instant) -> Step;
}

/// What a thread's step did, and whether the thread goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// One operation done; go on.
    Continue,
    /// One operation done, and the thread stops (YCSB stops a loader whose
    /// insert failed; db_bench a thread whose write failed).
    Stop,
    /// Nothing left to do (readseq past the last key): no operation is
    /// counted and the thread stops.
    Exhausted,
}

impl From<bool> for Step {
    /// `true`: go on; `false`: stop after this operation.
    fn from(keep_going: bool) -> Self {
        if keep_going {
            Step::Continue
        } else {
            Step::Stop
        }
    }
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
    /// Record latency from each operation's intended start too (with a target).
    pub track_intended: bool,
    /// Count the bytes this process's TCP connections move (server engines).
    pub count_network: bool,
    /// A run in which no operation completes for this long, with threads
    /// still inside the engine, is stopped (exit 3): an engine or server
    /// that stopped answering must not hang a plan. `None`: wait forever.
    pub stall_timeout: Option<Duration>,
    /// End the whole run at the first failed operation (a server gone),
    /// keeping what was measured; otherwise failures are counted and the
    /// run goes on, as YCSB does.
    pub stop_on_error: bool,
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
    /// Wall-clock start and end of the measured window.
    pub start_unix_ms: u64,
    pub end_unix_ms: u64,
    /// Operations completed in each second of the measured window.
    pub intervals: Vec<u64>,
    /// CPU seconds the runner's threads spent in the measured window
    /// (driver work and an embedded engine's foreground calls).
    pub client_cpu_s: f64,
    /// Bytes this process's TCP connections sent and received between the
    /// start and the end of the run (`RunSpec::count_network`).
    pub network: Option<NetworkBytes>,
    /// The run ended early at a failed operation (`RunSpec::stop_on_error`).
    pub stopped_on_error: bool,
    /// The run ended early at SIGINT or SIGTERM ([`stop_on_interrupt`]).
    pub interrupted: bool,
}

/// Set by the first SIGINT or SIGTERM after [`stop_on_interrupt`].
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(signal: libc::c_int) {
    INTERRUPTED.store(true, Relaxed);
    // SAFETY: signal() is async-signal-safe; a second signal kills as usual.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}

/// Makes the first Ctrl-C (or SIGTERM) end a run like its time limit, so
/// what it measured is written; a second one kills the process.
pub fn stop_on_interrupt() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores an atomic and calls signal().
        unsafe { libc::signal(signal, on_interrupt as *const () as libc::sighandler_t) };
    }
}

/// Whether a SIGINT or SIGTERM came since [`stop_on_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Relaxed)
}

/// A worker's arrival at the finish line: once, explicitly after its
/// operations, or when it is dropped (an error or a panic).
struct Arrival<'a> {
    gate: &'a StartGate,
    arrived: bool,
}

impl<'a> Arrival<'a> {
    fn new(gate: &'a StartGate) -> Self {
        Self {
            gate,
            arrived: false,
        }
    }

    fn arrive_now(mut self) {
        self.arrived = true;
        self.gate.arrive_and_wait();
    }
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        if !self.arrived {
            self.gate.arrive_and_wait();
        }
    }
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
    /// Set by the first thread that saw a failure under `stop_on_error`.
    stop: AtomicBool,
}

/// Waits for every worker to finish; if none completes an operation for
/// `stall_timeout` after the measured window began while some are still
/// inside the engine, says so and ends the process: those threads cannot
/// be joined, and a hung plan helps nobody.
fn watch_for_stalls(
    finish: &StartGate,
    shared: &Shared,
    stall_timeout: Option<Duration>,
    measure_start: Instant,
) {
    let Some(limit) = stall_timeout else {
        finish.wait_until_all_arrived();
        return;
    };
    let (mut last_ops, mut last_change) = (0, measure_start);
    while !finish.all_arrived_within(Duration::from_secs(1)) {
        let ops: u64 = shared.slots.iter().map(|s| s.ops_done.load(Relaxed)).sum();
        let now = Instant::now();
        if ops != last_ops || now < measure_start {
            (last_ops, last_change) = (ops, now.max(measure_start));
        } else if now.duration_since(last_change) >= limit {
            let stuck = shared
                .slots
                .iter()
                .filter(|s| !s.finished.load(Relaxed))
                .count();
            eprintln!(
                "kvperf: no operation completed in {} s and {stuck} of {} threads are still inside the engine: it stopped answering (stalltimeout={}); stopping",
                limit.as_secs(),
                shared.slots.len(),
                limit.as_secs()
            );
            std::process::exit(i32::from(crate::error::EXIT_RUN));
        }
    }
}

/// Ops of thread `index` when `total` are split YCSB-style: the first
/// `total % threads` threads do one more.
pub fn ops_for_thread(total: u64, threads: usize, index: usize) -> u64 {
    let threads = threads as u64;
    total / threads + u64::from((index as u64) < total % threads)
}

/// The latest instant kvperf schedules: a window must end before it.
const LONGEST_WINDOW: Duration = Duration::from_secs(100 * 365 * 86_400);

pub fn execute(workload: &dyn Workload, spec: &RunSpec) -> anyhow::Result<RunOutcome> {
    let threads = spec.threads.max(1);
    if spec.warmup + spec.max_execution.unwrap_or_default() > LONGEST_WINDOW {
        return Err(InputError::Invalid(format!(
            "warmup plus time limit ({:.0} s) exceed 100 years",
            (spec.warmup + spec.max_execution.unwrap_or_default()).as_secs_f64()
        ))
        .into());
    }
    let shared = Shared {
        slots: (0..threads).map(|_| Slot::new()).collect(),
        epoch: AtomicU64::new(0),
        start: OnceLock::new(),
        all_done: AtomicBool::new(false),
        foreground_left: AtomicU64::new(
            (0..threads).filter(|&i| !workload.is_background(i)).count() as u64,
        ),
        stop: AtomicBool::new(false),
    };
    let gate = StartGate::new(threads);
    // Threads keep their engine handles (and connections) open until every
    // thread is done, so the end of the window can still read them.
    let finish = StartGate::new(threads);
    let per_thread_rate = spec.target_ops_per_sec / threads as f64;
    let paced = per_thread_rate > 0.0;

    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for index in 0..threads {
            let (shared, gate, finish) = (&shared, &gate, &finish);
            let spawned = std::thread::Builder::new()
                .name(format!("kvperf-{index}"))
                .spawn_scoped(scope, move || {
                    // Open per-thread state before the clock starts; a
                    // failure (or a panic) still passes the gate so nobody
                    // waits for it.
                    let setup = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        workload.thread(ThreadSlot {
                            index,
                            count: threads,
                        })
                    }))
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the engine panicked")));
                    if !gate.arrive_and_wait() {
                        return Ok(None); // another thread could not start
                    }
                    // Arrives at the finish line however this thread ends.
                    let arrival = Arrival::new(finish);
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
                        meter: Meter::new(spec.track_intended && !background, paced && !background),
                        background,
                    };
                    let done = run.run(work.as_mut(), quota);
                    arrival.arrive_now();
                    drop(work);
                    Ok::<_, anyhow::Error>(Some((background, done)))
                });
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(err) => {
                    gate.abort();
                    for worker in workers {
                        let _ = worker.join();
                    }
                    return Err(InputError::Invalid(format!(
                        "cannot start thread {} of {threads} ({err}); use fewer threads",
                        index + 1
                    ))
                    .into());
                }
            }
        }

        gate.wait_until_all_arrived();
        let sockets_at_start = spec.count_network.then(SocketBytes::read);
        let start = Instant::now();
        let start_unix_ms = crate::output::unix_ms();
        shared.start.set(start).expect("set once");
        gate.open();
        let measure_start = start + spec.warmup;

        let status = status::spawn(scope, &spec.status, &shared, spec, measure_start);

        let mut outcome = RunOutcome {
            runtime: Duration::ZERO,
            operations: 0,
            histograms: OpHistograms::new(),
            hit_time_limit: false,
            thread_seconds: 0.0,
            start_unix_ms: start_unix_ms + spec.warmup.as_millis() as u64,
            end_unix_ms: 0,
            intervals: Vec::new(),
            client_cpu_s: 0.0,
            network: None,
            stopped_on_error: false,
            interrupted: false,
        };
        watch_for_stalls(&finish, &shared, spec.stall_timeout, measure_start);
        outcome.network = sockets_at_start.map(|s0| SocketBytes::read().since(&s0));
        finish.open();
        let mut first_error = None;
        let mut last_end = measure_start;
        for worker in workers {
            match worker.join() {
                Ok(Ok(Some((true, done)))) => outcome.client_cpu_s += done.cpu_s,
                Ok(Ok(Some((false, done)))) => {
                    outcome.client_cpu_s += done.cpu_s;
                    outcome.operations += done.operations;
                    outcome.histograms.add(&done.histograms);
                    outcome.hit_time_limit |= done.hit_time_limit;
                    last_end = last_end.max(done.end);
                    outcome.thread_seconds += done
                        .end
                        .saturating_duration_since(measure_start)
                        .as_secs_f64();
                }
                Ok(Ok(_)) => {}
                Ok(Err(err)) => first_error = first_error.or(Some(err)),
                Err(_) => {
                    first_error = first_error.or(Some(anyhow::anyhow!("a worker thread panicked")))
                }
            }
        }
        shared.all_done.store(true, Relaxed);
        outcome.stopped_on_error = shared.stop.load(Relaxed) && !INTERRUPTED.load(Relaxed);
        outcome.interrupted = INTERRUPTED.load(Relaxed);
        outcome.intervals = status.join().unwrap_or_default();
        outcome.runtime = last_end.saturating_duration_since(measure_start);
        outcome.end_unix_ms = outcome.start_unix_ms + outcome.runtime.as_millis() as u64;
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
    /// This thread's CPU seconds in the measured window.
    cpu_s: f64,
}

/// CPU seconds the calling thread has used.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into `ts`; the thread CPU clock
    // always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
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
                if work.step(&mut self.meter, intended) != Step::Continue || self.should_stop() {
                    break;
                }
                k += 1;
            }
            self.meter.recording = true;
        }

        let cpu_at_start = thread_cpu_seconds();
        let deadline = self.spec.max_execution.map(|d| measure_start + d);
        let quota = quota.unwrap_or(u64::MAX);
        let mut total = OpHistograms::new();
        let mut seen_epoch = 0;
        let mut done = 0;
        let mut hit_time_limit = false;
        while done < quota {
            let intended = self.pacer.wait_for(measure_start, done);
            let step = work.step(&mut self.meter, intended);
            if step == Step::Exhausted {
                break;
            }
            done += 1;
            if !self.background {
                self.slot.ops_done.store(done, Relaxed);
            }
            let epoch = self.shared.epoch.load(Relaxed);
            if epoch != seen_epoch {
                seen_epoch = epoch;
                self.hand_over(&mut total, epoch);
            }
            if step == Step::Stop || self.should_stop() {
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
            cpu_s: thread_cpu_seconds() - cpu_at_start,
        }
    }

    /// Whether the run ends now: this thread saw a failure under
    /// `stop_on_error` (and tells the others), or another one did.
    #[inline]
    fn should_stop(&self) -> bool {
        if self.spec.stop_on_error && self.meter.errors > 0 {
            self.shared.stop.store(true, Relaxed);
        }
        self.shared.stop.load(Relaxed) || INTERRUPTED.load(Relaxed)
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
