//! One client's closed loop, the same whether the client is a thread or a
//! task: warmup, then the measured window; when each operation is due
//! (pacing); its quota, the time limit and stopping; handing histograms
//! over to the status thread. The thread and the task around it only wait
//! and call the workload's step, each in its own way:
//!
//! ```text
//! while client.going() {
//!     let intended = <wait until client.due()>;
//!     let step = <the workload's step>(&mut client.meter, intended);
//!     client.record(step);
//! }
//! ```

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::cpu::thread_cpu_seconds;
use super::{Pacer, RunSpec, Shared, Slot, Step, INTERRUPTED};
use crate::measure::{Deadline, Meter};

/// The longest a paced client sleeps before it looks again whether it is
/// to stop.
const PAUSE_SLICE: Duration = Duration::from_millis(50);

/// What a paced client does next ([`ClientLoop::pause`]).
pub(super) enum Pause {
    /// Sleep until then, and ask again.
    Sleep(Instant),
    /// The operation is due: run it.
    Due,
    /// Its phase changed or it is to stop: back to [`ClientLoop::going`].
    Recheck,
}

pub(super) struct ClientLoop<'a> {
    shared: &'a Shared,
    spec: &'a RunSpec,
    slot: &'a Slot,
    pacer: Pacer,
    pub meter: Meter,
    background: bool,
    start: Instant,
    measure_start: Instant,
    deadline: Option<Instant>,
    /// `deadline` on the meter's clock, from when the window opens.
    window_deadline: Option<Deadline>,
    quota: u64,
    warming_up: bool,
    /// Operations done in the current phase (warmup, then the window).
    done: u64,
    stopped: bool,
    hit_time_limit: bool,
    seen_epoch: u64,
    /// The thread's CPU clock at the window's start (clients on threads).
    thread_cpu_at_start: Option<f64>,
    measures_thread_cpu: bool,
}

/// What a client did in the measured window.
pub(super) struct ClientDone {
    pub operations: u64,
    pub end: Instant,
    pub hit_time_limit: bool,
    pub background: bool,
    /// The client thread's CPU seconds in the window (None for a task,
    /// whose CPU is the runtime's).
    pub cpu_s: Option<f64>,
}

impl<'a> ClientLoop<'a> {
    /// Client `index` of the run; `quota` None runs until the time limit.
    /// `on_thread`: the client is a thread, so its own CPU clock measures it.
    pub fn new(
        shared: &'a Shared,
        spec: &'a RunSpec,
        index: usize,
        quota: Option<u64>,
        background: bool,
        on_thread: bool,
    ) -> Self {
        let start = *shared.start.get().expect("set before clients start");
        let measure_start = start + spec.warmup;
        let paced = shared.per_client_rate > 0.0 && !background;
        let mut meter = Meter::new(spec.track_intended && !background, paced);
        let warming_up = !spec.warmup.is_zero();
        meter.recording = !warming_up;
        let deadline = spec.max_execution.map(|d| measure_start + d);
        // Without warmup the window opens now.
        let window_deadline = deadline
            .filter(|_| !warming_up)
            .map(|at| meter.deadline(at));
        Self {
            shared,
            spec,
            slot: &shared.slots[index],
            pacer: Pacer::new(if paced { shared.per_client_rate } else { 0.0 }),
            meter,
            background,
            start,
            measure_start,
            deadline,
            window_deadline,
            quota: if background {
                u64::MAX
            } else {
                quota.unwrap_or(u64::MAX)
            },
            warming_up,
            done: 0,
            stopped: false,
            hit_time_limit: false,
            seen_epoch: 0,
            // Without warmup the window opens now.
            thread_cpu_at_start: (on_thread && !warming_up).then(thread_cpu_seconds),
            measures_thread_cpu: on_thread,
        }
    }

    /// Whether another operation is to run; opens the measured window when
    /// warmup is over.
    #[inline]
    pub fn going(&mut self) -> bool {
        if self.warming_up {
            if !self.stopped && Instant::now() < self.measure_start {
                return true;
            }
            self.open_window();
        }
        !self.stopped && self.done < self.quota
    }

    /// Whether the measured window has begun for this client.
    pub fn in_window(&self) -> bool {
        !self.warming_up
    }

    /// The next operation's pace: its phase's start, the operation's number
    /// in it, and the pacer that turns them into a due time.
    #[inline]
    pub fn schedule(&self) -> (Pacer, Instant, u64) {
        let phase_start = if self.warming_up {
            self.start
        } else {
            self.measure_start
        };
        (self.pacer, phase_start, self.done)
    }

    /// Where a paced client's wait for its next operation, due at `due`,
    /// goes next: it sleeps in slices, so a slow pace (a target under one
    /// operation per second per client) never holds it past the run's time
    /// limit, its warmup's end, an interrupt or another client's failure.
    pub fn pause(&mut self, due: Instant) -> Pause {
        let now = Instant::now();
        if self.should_stop() || self.background_done() {
            self.stopped = true;
            return Pause::Recheck;
        }
        let phase_end = match self.warming_up {
            true => Some(self.measure_start),
            false => self.deadline,
        };
        if phase_end.is_some_and(|end| now >= end) {
            if !self.warming_up {
                self.hit_time_limit = true;
                self.stopped = true;
            }
            return Pause::Recheck;
        }
        if now >= due {
            return Pause::Due;
        }
        let slice = due.min(now + PAUSE_SLICE);
        Pause::Sleep(phase_end.map_or(slice, |end| slice.min(end)))
    }

    fn background_done(&self) -> bool {
        self.background && self.shared.foreground_left.load(Relaxed) == 0
    }

    /// Books the operation just done and decides whether the client stops.
    #[inline]
    pub fn record(&mut self, step: Step) {
        if self.warming_up {
            // A warmup that ends early still leaves the measured window to run.
            if step != Step::Continue || self.should_stop() {
                self.stopped = true;
            } else {
                self.done += 1;
            }
            return;
        }
        if step == Step::Exhausted {
            self.stopped = true;
            return;
        }
        self.done += 1;
        if !self.background {
            self.slot.ops_done.store(self.done, Relaxed);
        }
        let epoch = self.shared.epoch.load(Relaxed);
        if epoch != self.seen_epoch {
            self.seen_epoch = epoch;
            self.hand_over(epoch);
        }
        // should_stop first: a failed load insert (Step::Stop) under
        // onerror=stop must still tell the others and mark the run stopped.
        if self.should_stop() || step == Step::Stop {
            self.stopped = true;
        } else if self
            .window_deadline
            .as_ref()
            .is_some_and(|d| self.meter.passed(d))
        {
            self.hit_time_limit = true;
            self.stopped = true;
        } else if self.background_done() {
            self.stopped = true;
        }
    }

    fn open_window(&mut self) {
        self.warming_up = false;
        self.stopped = false;
        self.done = 0;
        self.meter.recording = true;
        self.window_deadline = self.deadline.map(|at| self.meter.deadline(at));
        if self.measures_thread_cpu {
            self.thread_cpu_at_start = Some(thread_cpu_seconds());
        }
    }

    /// Ends the client: its last histograms to the status thread, and its
    /// figures.
    pub fn finish(mut self) -> ClientDone {
        let end = Instant::now();
        if !self.background {
            self.shared.foreground_left.fetch_sub(1, Relaxed);
        }
        self.publish();
        self.slot.finished.store(true, Relaxed);
        ClientDone {
            operations: self.done,
            end,
            hit_time_limit: self.hit_time_limit,
            background: self.background,
            cpu_s: self
                .thread_cpu_at_start
                .map(|at_start| thread_cpu_seconds() - at_start),
        }
    }

    /// Whether the run ends now: this client saw a failure under
    /// `stop_on_error` (and tells the others), or another one did.
    #[inline]
    fn should_stop(&self) -> bool {
        if self.spec.stop_on_error && self.meter.errors > 0 {
            self.shared.stop.store(true, Relaxed);
        }
        self.shared.stop.load(Relaxed) || INTERRUPTED.load(Relaxed)
    }

    /// Moves this client's histograms to its slot, where the status thread
    /// takes them into the interval and the window's total; the client
    /// keeps no total of its own (one copy per client, not two: a 1,024-
    /// thread run's memory is mostly these). A background client's
    /// operations are not the window's and are dropped.
    fn publish(&mut self) {
        let handed_over = std::mem::take(&mut self.meter.histograms);
        if !self.background {
            self.slot
                .interval
                .lock()
                .expect("not poisoned")
                .absorb(handed_over);
        }
    }

    fn hand_over(&mut self, epoch: u64) {
        self.publish();
        self.slot.published_epoch.store(epoch, Relaxed);
    }
}
