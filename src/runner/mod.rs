//! The runner: owns clients, pacing, warmup, time limits and status output.
//! Workloads decide *what* each operation is ([`WorkloadThread::step`]) and
//! hold their client's engine handle; engines only store and fetch.
//!
//! A client is a closed loop with one operation in flight ([`client`]). It
//! runs on its own thread ([`execute`], every engine), or as a task on the
//! runner's runtime ([`execute_tasks`], an engine with async operations:
//! N clients on W worker threads, see [`ClientRuntime`]).
//!
//! Each client records into its own histograms; they are merged when a
//! status line asks for them (the client hands them over after its next
//! operation) and at the end, so there is no shared lock per operation.

pub mod before_window;
mod client;
mod cpu;
mod gate;
mod pacing;
mod progress;
mod runtime;
mod stall;
mod status;
mod tasks;
mod threads;
mod timer;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use before_window::BeforeWindow;
pub use pacing::Pacer;
pub use runtime::{ClientRuntime, TaskScheduling};
pub use stall::StallKeeper;
pub use status::{format_java_decimal, lost_ops_log, OpsLog, StatusOptions, OPS_LOG_WRITTEN};

use crate::measure::interval_log::IntervalLogs;
use crate::measure::timeline::Timeline;
pub use timer::sleep_until;

use crate::engine::{SetupFuture, ThreadSlot};
use crate::error::InputError;
use crate::measure::accounting::{Probe, Snapshot};
use crate::measure::{ClientHistograms, Meter, OpHistograms};
use client::ClientDone;

/// What to run: shared state, and a per-client handle with its own RNG and
/// engine worker.
pub trait Workload: Sync {
    /// Called on the thread that will use it, before the clock starts.
    fn thread(&self, slot: ThreadSlot) -> anyhow::Result<Box<dyn WorkloadThread + '_>>;

    /// A client that runs as a task ([`execute_tasks`]), made on the
    /// runner's runtime before the clock starts. By default a workload runs
    /// on threads only.
    fn task(&self, _slot: ThreadSlot) -> SetupFuture<'_, Box<dyn WorkloadTask + '_>> {
        Box::pin(std::future::ready(Err(anyhow::anyhow!(
            "internal: this workload runs its clients on threads only"
        ))))
    }

    /// Operations client `index` performs; `None` runs until the time limit.
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

    /// Called once when the client's loop ends, before it waits for the
    /// other clients to end theirs.
    fn finished(&mut self) {}
}

/// One operation of a client task.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = Step> + Send + 'a>>;

/// [`WorkloadThread`] for a client that is a task: its step awaits the
/// engine instead of blocking a thread.
pub trait WorkloadTask: Send {
    fn step<'a>(&'a mut self, meter: &'a mut Meter, intended: Instant) -> StepFuture<'a>;
}

/// What a client's step did, and whether the client goes on.
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
    /// Clients: one thread each ([`execute`]) or one task each
    /// ([`execute_tasks`]); YCSB's `threadcount`.
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
    /// The cost counters read at the measured window's open and close;
    /// None reads none.
    pub costs: Option<Probe>,
    /// A run in which no operation completes for this long, with threads
    /// still inside the engine, is stopped (exit 3): an engine or server
    /// that stopped answering must not hang a plan. `None`: wait forever.
    /// Needs a [`RunSpec::stall_keeper`] to hand the stall to: a run with
    /// one and not the other is refused before it starts.
    pub stall_timeout: Option<Duration>,
    /// End the whole run at the first failed operation (a server gone),
    /// keeping what was measured; otherwise failures are counted and the
    /// run goes on, as YCSB does.
    pub stop_on_error: bool,
    pub status: StatusOptions,
    /// The step's watching before its window, which the runner names the
    /// clients' set-up to and ends as the window opens; None: not watched.
    pub before_window: Option<BeforeWindow>,
    /// What the step keeps when a stall ends the process, and how it ends
    /// it; None: no stall is watched (and `stall_timeout` must be None).
    pub stall_keeper: Option<StallKeeper>,
}

#[derive(Debug)]
pub struct RunOutcome {
    /// From the start of the measured window to the last thread's end.
    pub runtime: Duration,
    pub operations: u64,
    pub histograms: OpHistograms,
    pub hit_time_limit: bool,
    /// Sum over foreground clients of their time in the measured window
    /// (db_bench's `micros/op` divides this by the operations).
    pub thread_seconds: f64,
    /// Wall-clock start and end of the measured window.
    pub start_unix_ms: u64,
    pub end_unix_ms: u64,
    /// Operations completed in each interval of `timeline`, in order.
    pub intervals: Vec<u64>,
    /// Per interval: operations, failures and percentiles of each type.
    pub timeline: Timeline,
    /// Each interval's histograms, when the status options asked for them.
    pub interval_logs: Option<IntervalLogs>,
    /// CPU seconds the clients spent in the measured window: the client
    /// threads' (driver work and an embedded engine's foreground calls), or
    /// with tasks the runtime's worker threads' (the driver's I/O included).
    pub client_cpu_s: f64,
    /// `RunSpec::costs` at the measured window's open and close.
    pub costs: Option<WindowCounters>,
    /// The run ended early at a failed operation (`RunSpec::stop_on_error`).
    pub stopped_on_error: bool,
    /// The run ended early at SIGINT or SIGTERM ([`stop_on_interrupt`]).
    pub interrupted: bool,
}

/// Set by the first SIGINT, SIGTERM or SIGHUP after [`stop_on_interrupt`].
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes the first Ctrl-C (or SIGTERM, or SIGHUP: the terminal or the
/// ssh session closed) end a run like its time limit, so what it measured
/// is written; a second one kills the process as the signal does by
/// default. A SIGHUP ignored when kvperf started (`nohup`) stays ignored.
/// Later calls change nothing.
pub fn stop_on_interrupt() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut signals = vec![signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];
        if !ignored(libc::SIGHUP) {
            signals.push(signal_hook::consts::SIGHUP);
        }
        for signal in signals {
            // Handlers run in the order registered: a signal that finds the
            // flag already set (the second) dies of it, the first sets it.
            signal_hook::flag::register_conditional_default(signal, &INTERRUPTED)
                .and_then(|_| signal_hook::flag::register(signal, &INTERRUPTED))
                .expect("SIGINT, SIGTERM and SIGHUP take handlers");
        }
    });
}

/// Whether `signal`'s disposition is to be ignored (as `nohup` leaves
/// SIGHUP for the program it starts).
pub(crate) fn ignored(signal: libc::c_int) -> bool {
    // SAFETY: sigaction(2) with no new action only reads the current one
    // into a zeroed struct this function owns.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Whether a SIGINT or SIGTERM came since [`stop_on_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Relaxed)
}

/// Per-client shared state, on its own cache lines.
#[repr(align(128))]
struct Slot {
    ops_done: AtomicU64,
    published_epoch: AtomicU64,
    finished: AtomicBool,
    /// Histograms handed over since the last status line.
    interval: Mutex<ClientHistograms>,
}

impl Slot {
    fn new() -> Self {
        Self {
            ops_done: AtomicU64::new(0),
            published_epoch: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            interval: Mutex::new(ClientHistograms::default()),
        }
    }
}

struct Shared {
    slots: Vec<Slot>,
    /// Bumped by the status thread; a client that sees a new value hands over.
    epoch: AtomicU64,
    start: OnceLock<Instant>,
    /// Set when every client has finished; ends the status thread.
    all_done: AtomicBool,
    /// Foreground clients still running; background threads stop at 0.
    foreground_left: AtomicU64,
    /// Set by the first client that saw a failure under `stop_on_error`.
    stop: AtomicBool,
    /// Target rate of each client (0: unpaced).
    per_client_rate: f64,
    /// The measured window's histograms handed over so far, added up by
    /// the status thread; a stall keeps them ([`watch_for_stalls`]).
    window: Mutex<OpHistograms>,
}

impl Shared {
    fn new(workload: &dyn Workload, spec: &RunSpec, clients: usize) -> Self {
        Self {
            slots: (0..clients).map(|_| Slot::new()).collect(),
            epoch: AtomicU64::new(0),
            start: OnceLock::new(),
            all_done: AtomicBool::new(false),
            foreground_left: AtomicU64::new(
                (0..clients).filter(|&i| !workload.is_background(i)).count() as u64,
            ),
            stop: AtomicBool::new(false),
            per_client_rate: spec.target_ops_per_sec / clients as f64,
            window: Mutex::new(OpHistograms::new()),
        }
    }
}

/// The cost counters at the measured window's open and close.
#[derive(Debug)]
pub struct WindowCounters {
    pub open: Snapshot,
    pub close: Snapshot,
}

/// The run's clock, started once every client is ready.
struct Clock {
    start_unix_ms: u64,
    /// When the clock started (the warmup's start).
    started: Instant,
    measure_start: Instant,
    costs: Option<Probe>,
    /// The counters when the measured window opened, until its close.
    opened: Arc<Mutex<Option<Snapshot>>>,
}

/// How often a warmup's watcher looks for an interrupt.
const WARMUP_POLL: Duration = Duration::from_millis(50);

impl Clock {
    /// Starts the clock for every client (they read it from `shared`);
    /// without warmup the measured window opens now.
    fn start(shared: &Shared, spec: &RunSpec) -> Self {
        let opened = spec
            .costs
            .as_ref()
            .filter(|_| spec.warmup.is_zero())
            .map(Probe::take);
        let opened = Arc::new(Mutex::new(opened));
        let start = Instant::now();
        let start_unix_ms = crate::clock::unix_ms();
        shared.start.set(start).expect("set once");
        Self {
            start_unix_ms,
            started: start,
            measure_start: start + spec.warmup,
            costs: spec.costs.clone(),
            opened,
        }
    }

    /// When the measured window opens (after the warmup).
    fn window_start(&self) -> WindowStart {
        WindowStart {
            at: self.measure_start,
            unix_ms: self.start_unix_ms + (self.measure_start - self.started).as_millis() as u64,
        }
    }

    /// After a warmup, reads the counters when the window opens, on a
    /// thread that sleeps through the warmup (an interrupt ends it early).
    fn watch_for_window<'scope>(&self, scope: &'scope std::thread::Scope<'scope, '_>) {
        let Some(probe) = self.costs.clone() else {
            return;
        };
        if lock(&self.opened).is_some() {
            return;
        }
        let (opened, measure_start) = (self.opened.clone(), self.measure_start);
        scope.spawn(move || {
            while let Some(left) = measure_start.checked_duration_since(Instant::now()) {
                if INTERRUPTED.load(Relaxed) {
                    break;
                }
                std::thread::sleep(left.min(WARMUP_POLL));
            }
            // Ignored when it comes after the close (an interrupted warmup).
            lock(&opened).get_or_insert_with(|| probe.take());
        });
    }

    /// The counters at the window's close, read while the clients'
    /// connections are still open; a window that never opened opens here,
    /// empty.
    fn close(&self) -> Option<WindowCounters> {
        let probe = self.costs.as_ref()?;
        let open = lock(&self.opened).take().unwrap_or_else(|| probe.take());
        Some(WindowCounters {
            open,
            close: probe.take(),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What an executor hands back once every client has ended.
struct Ended {
    clock: Clock,
    /// Per client: its figures, None if it never ran, or why it failed.
    clients: Vec<anyhow::Result<Option<ClientDone>>>,
    costs: Option<WindowCounters>,
    recorded: status::Recorded,
    /// The runtime's CPU in the window (tasks); threads measure their own.
    runtime_cpu_s: Option<f64>,
}

/// What the window had measured when a stall was found: the histograms
/// the clients had handed over (a stuck client's operations since its
/// last hand-over, at most one status interval's, are not among them),
/// over the window up to the last operation that completed.
fn stalled_outcome(shared: &Shared, window: &WindowStart, last_change: Instant) -> RunOutcome {
    let mut histograms = lock(&shared.window).clone();
    status::take_handed_over(shared, &mut histograms);
    let runtime = last_change.saturating_duration_since(window.at);
    RunOutcome {
        runtime,
        operations: histograms.client_operations(),
        histograms,
        hit_time_limit: false,
        thread_seconds: 0.0,
        start_unix_ms: window.unix_ms,
        end_unix_ms: window.unix_ms + runtime.as_millis() as u64,
        intervals: Vec::new(),
        timeline: Timeline {
            interval_s: crate::measure::timeline::INTERVAL.as_secs_f64(),
            ..Timeline::default()
        },
        interval_logs: None,
        client_cpu_s: 0.0,
        costs: None,
        stopped_on_error: false,
        interrupted: false,
    }
}

/// When the measured window opens: on the monotonic clock and the wall clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct WindowStart {
    pub at: Instant,
    pub unix_ms: u64,
}

/// After the window closes, the calls the engine still gets (the events
/// sampler's last poll, its close, its size on disk, its counters) are
/// watched: one line when they have taken [`AFTER_WINDOW_NOTICE`], and
/// the process ends with what was measured kept (exit 3) at SIGINT or
/// SIGTERM, or when they outlive `stalltimeout`. A blocking read of a
/// server that stopped answering cannot be cancelled from here, so, as a
/// stall does, the process ends around it.
pub struct AfterWindow {
    done: std::sync::mpsc::Sender<()>,
    waiting_for: Arc<Mutex<&'static str>>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

/// How long the calls after a window may take before kvperf says so.
pub const AFTER_WINDOW_NOTICE: Duration = Duration::from_secs(2);

impl AfterWindow {
    /// Starts watching; `measured` is kept if the wait ends the process,
    /// `limit` is `stalltimeout` (None: only an interrupt ends it).
    /// `keeper` keeps what was measured and ends the process (None: the
    /// calls are not watched).
    pub fn watch(
        measured: &RunOutcome,
        limit: Option<Duration>,
        keeper: Option<StallKeeper>,
    ) -> Self {
        let kept = RunOutcome {
            histograms: measured.histograms.clone(),
            intervals: measured.intervals.clone(),
            timeline: measured.timeline.clone(),
            interval_logs: None,
            costs: None,
            ..*measured
        };
        let (done, ended) = std::sync::mpsc::channel::<()>();
        let waiting_for = Arc::new(Mutex::new("the engine"));
        let what = waiting_for.clone();
        let watcher = keeper.and_then(|keeper| {
            std::thread::Builder::new()
            .name("kvperf-after-window".into())
            .spawn(move || {
                let started = Instant::now();
                // An interrupt that ended the window early was answered by
                // ending it; a second one kills the process as by default.
                let interrupted_before = INTERRUPTED.load(Relaxed);
                let mut said = false;
                loop {
                    // An interrupt that cut a call short (EINTR) may let
                    // the calls end before this sees it: it still ends the step.
                    let over = !matches!(
                        ended.recv_timeout(WARMUP_POLL),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    );
                    let waited = started.elapsed();
                    let now_waiting_for = *lock(&what);
                    if !interrupted_before && INTERRUPTED.load(Relaxed) {
                        keeper.keep_and_end(
                            &format!(
                                "interrupted after the measured window, waiting for {now_waiting_for}; what was measured is kept"
                            ),
                            Some(&kept),
                        );
                    }
                    if over {
                        return;
                    }
                    if let Some(limit) = limit.filter(|l| waited >= *l) {
                        keeper.keep_and_end(
                            &format!(
                                "{now_waiting_for} did not answer within {} s after the measured window: it stopped answering (stalltimeout={}); what was measured is kept",
                                limit.as_secs_f64(),
                                limit.as_secs_f64()
                            ),
                            Some(&kept),
                        );
                    }
                    if !said && waited >= AFTER_WINDOW_NOTICE {
                        said = true;
                        eprintln!(
                            "kvperf: the measured window ended {} s ago; waiting for {now_waiting_for}{} (Ctrl-C ends the wait, keeping what was measured)",
                            waited.as_secs(),
                            limit.map_or(String::new(), |l| format!(
                                ", at most stalltimeout={} s",
                                l.as_secs_f64()
                            ))
                        );
                    }
                }
            })
            .ok()
        });
        Self {
            done,
            waiting_for,
            watcher,
        }
    }

    /// Names what is waited for now ("the engine's size on disk").
    pub fn now(&self, what: &'static str) {
        *lock(&self.waiting_for) = what;
    }

    /// The calls after the window are over: the watching ends.
    pub fn done(mut self) {
        let _ = self.done.send(());
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}

/// Watches a run until every client has ended (`ended_within` waits at
/// most the given time and says whether they have). If none completes an
/// operation for `limit` after the measured window began while some are
/// still inside the engine, says so and ends the process: those clients
/// cannot be joined, and a hung plan helps nobody. `clients` names them
/// in that line ("threads", "client tasks").
fn watch_for_stalls(
    mut ended_within: impl FnMut(Duration) -> bool,
    shared: &Shared,
    (limit, keeper): (Duration, &StallKeeper),
    window: WindowStart,
    clients: &str,
) {
    let measure_start = window.at;
    let (mut last_ops, mut last_change) = (0, measure_start);
    // An interrupt seen by the last round: clients still inside the engine
    // a round after it are stuck there (a stopped server), so the step ends
    // at the interrupt, not at `limit` (it waited out stalltimeout).
    let mut interrupted = false;
    while !ended_within(Duration::from_secs(1)) {
        let ops: u64 = shared.slots.iter().map(|s| s.ops_done.load(Relaxed)).sum();
        let now = Instant::now();
        let stalled = now.duration_since(last_change) >= limit;
        if ops != last_ops || now < measure_start {
            (last_ops, last_change) = (ops, now.max(measure_start));
        } else if stalled || interrupted {
            let stuck = shared
                .slots
                .iter()
                .filter(|s| !s.finished.load(Relaxed))
                .count();
            let measured = stalled_outcome(shared, &window, last_change);
            let missing = ops.saturating_sub(measured.operations);
            let what = match stalled {
                true => format!(
                    "no operation completed in {} s and {stuck} of {} {clients} are still inside the engine after {ops} operations: it stopped answering (stalltimeout={})",
                    limit.as_secs(),
                    shared.slots.len(),
                    limit.as_secs()
                ),
                false => format!(
                    "interrupted after {ops} operations while {stuck} of {} {clients} were still inside the engine (it does not answer)",
                    shared.slots.len()
                ),
            };
            let why = format!(
                "{what}; stopping, what was measured is kept{}",
                if missing > 0 {
                    format!(
                        " (but {missing} operations the stuck {clients} had not handed over yet)"
                    )
                } else {
                    String::new()
                }
            );
            keeper.keep_and_end(&why, Some(&measured));
        }
        interrupted = INTERRUPTED.load(Relaxed);
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

/// Runs `workload` with one thread per client (every engine).
pub fn execute(workload: &dyn Workload, spec: &RunSpec) -> anyhow::Result<RunOutcome> {
    threads::check_room(spec.threads.max(1))?;
    let (clients, shared) = prepare(workload, spec)?;
    let ended = threads::run(workload, spec, &shared, clients)?;
    outcome(spec, &shared, ended)
}

/// Runs `workload` with each client a task on `runtime` (an engine with
/// async operations, opened with the runtime's handle): `spec.threads`
/// closed-loop clients on the runtime's worker threads.
pub fn execute_tasks(
    workload: &dyn Workload,
    spec: &RunSpec,
    runtime: &ClientRuntime,
) -> anyhow::Result<RunOutcome> {
    let (clients, shared) = prepare(workload, spec)?;
    let ended = tasks::run(workload, spec, &shared, clients, runtime)?;
    outcome(spec, &shared, ended)
}

fn prepare(workload: &dyn Workload, spec: &RunSpec) -> anyhow::Result<(usize, Shared)> {
    check_stall_watch(spec)?;
    if let Some(before) = &spec.before_window {
        before.now("the clients to open their sessions", spec.stall_timeout);
    }
    let clients = spec.threads.max(1);
    if spec.warmup + spec.max_execution.unwrap_or_default() > LONGEST_WINDOW {
        return Err(InputError::Invalid(format!(
            "warmup plus time limit ({:.0} s) exceed 100 years",
            (spec.warmup + spec.max_execution.unwrap_or_default()).as_secs_f64()
        ))
        .into());
    }
    Ok((clients, Shared::new(workload, spec, clients)))
}

/// A stall timeout is watched only with a keeper to hand the stall to: a
/// library caller who sets one without the other is told, not left with a
/// run that no stall ends.
fn check_stall_watch(spec: &RunSpec) -> Result<(), InputError> {
    match (spec.stall_timeout, &spec.stall_keeper) {
        (Some(limit), None) => Err(InputError::Invalid(format!(
            "the run's stall timeout ({} s) has no stall keeper to end a stall with: give RunSpec a stall_keeper, or no stall_timeout",
            limit.as_secs_f64()
        ))),
        _ => Ok(()),
    }
}

/// Adds up the clients' figures; the first client error is the run's.
fn outcome(spec: &RunSpec, shared: &Shared, ended: Ended) -> anyhow::Result<RunOutcome> {
    let measure_start = ended.clock.measure_start;
    let mut outcome = RunOutcome {
        runtime: Duration::ZERO,
        operations: 0,
        histograms: ended.recorded.histograms,
        hit_time_limit: false,
        thread_seconds: 0.0,
        start_unix_ms: ended.clock.start_unix_ms + spec.warmup.as_millis() as u64,
        end_unix_ms: 0,
        intervals: Vec::new(),
        timeline: ended.recorded.timeline,
        interval_logs: ended.recorded.interval_logs,
        client_cpu_s: 0.0,
        costs: ended.costs,
        stopped_on_error: shared.stop.load(Relaxed) && !INTERRUPTED.load(Relaxed),
        interrupted: INTERRUPTED.load(Relaxed),
    };
    let mut first_error = None;
    let mut last_end = measure_start;
    for client in ended.clients {
        match client {
            Ok(Some(done)) => {
                outcome.client_cpu_s += done.cpu_s.unwrap_or(0.0);
                if done.background {
                    continue;
                }
                outcome.operations += done.operations;
                outcome.hit_time_limit |= done.hit_time_limit;
                last_end = last_end.max(done.end);
                outcome.thread_seconds += done
                    .end
                    .saturating_duration_since(measure_start)
                    .as_secs_f64();
            }
            Ok(None) => {}
            Err(err) => first_error = first_error.or(Some(err)),
        }
    }
    if let Some(cpu) = ended.runtime_cpu_s {
        outcome.client_cpu_s = cpu;
    }
    outcome.runtime = last_end.saturating_duration_since(measure_start);
    outcome.end_unix_ms = outcome.start_unix_ms + outcome.runtime.as_millis() as u64;
    // One source for throughput over time: the timeline, ended with the window.
    outcome.timeline.clip_to(outcome.runtime.as_secs_f64());
    outcome.intervals = outcome.timeline.counts();
    match first_error {
        Some(err) => Err(err),
        None => Ok(outcome),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload no run may reach: the checks before the clients start
    /// refuse the run first.
    struct Unreached;

    impl Workload for Unreached {
        fn thread(&self, _slot: ThreadSlot) -> anyhow::Result<Box<dyn WorkloadThread + '_>> {
            panic!("a refused run started a client")
        }
    }

    fn spec(stall_timeout: Option<Duration>, stall_keeper: Option<StallKeeper>) -> RunSpec {
        RunSpec {
            threads: 1,
            operations: Some(1),
            target_ops_per_sec: 0.0,
            warmup: Duration::ZERO,
            max_execution: None,
            track_intended: false,
            costs: None,
            stall_timeout,
            stop_on_error: false,
            status: StatusOptions::default(),
            before_window: None,
            stall_keeper,
        }
    }

    #[test]
    fn a_stall_timeout_without_a_keeper_is_refused_before_the_run() {
        let lone = spec(Some(Duration::from_secs(5)), None);
        let err = execute(&Unreached, &lone).expect_err("no keeper");
        assert!(err.to_string().contains("no stall keeper"), "{err:#}");
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_INPUT);
        let runtime = ClientRuntime::new(1, TaskScheduling::Stealing).expect("a runtime");
        let err = execute_tasks(&Unreached, &lone, &runtime).expect_err("no keeper");
        assert!(err.to_string().contains("no stall keeper"), "{err:#}");
        // Either alone is fine: a keeper without a timeout watches nothing.
        fn never(_: &str) -> ! {
            unreachable!("no stall")
        }
        assert!(check_stall_watch(&spec(None, Some(StallKeeper::new(never)))).is_ok());
        assert!(check_stall_watch(&spec(None, None)).is_ok());
        assert!(check_stall_watch(&spec(
            Some(Duration::from_secs(5)),
            Some(StallKeeper::new(never))
        ))
        .is_ok());
    }

    #[test]
    fn splits_operations_like_ycsb() {
        let split: Vec<u64> = (0..3).map(|i| ops_for_thread(10, 3, i)).collect();
        assert_eq!(split, vec![4, 3, 3]);
        assert_eq!((0..4).map(|i| ops_for_thread(2, 4, i)).sum::<u64>(), 2);
    }
}
