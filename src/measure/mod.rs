//! Measurements: one latency histogram per operation type, recorded in
//! nanoseconds (HdrHistogram, 3 significant digits, up to one hour) and
//! reported in microseconds, plus YCSB's per-type return-code counts.
//!
//! Each runner thread records into its own [`OpHistograms`]; they are merged
//! by adding histograms, never by averaging percentiles.

pub mod accounting;
pub mod amplification;
mod compact;
pub mod drive;
pub mod events;
pub mod few_samples;
pub mod hdr;
pub mod interval_log;
pub mod latency_start;
pub mod live;
pub mod net;
mod outcome;
pub mod periodic;
pub mod power;
pub mod process;
pub mod spikes;
pub mod spread;
pub mod stats;
pub mod steady;
mod summary;
pub mod timeline;
pub mod verdict;
pub mod window_warnings;

use std::ops::Deref;
use std::sync::OnceLock;
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub use compact::CompactHistogram;
pub use outcome::{Failure, OpError, OpResult};
pub use summary::{percentile_label, GroupSummary};

/// Longest latency tracked: one hour, in nanoseconds.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// Operation types; results name them in lower case (`read`,
/// `read-modify-write`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    Delete,
    ReadModifyWrite,
    Verify,
    /// db_bench's op types beyond YCSB's.
    Write,
    Seek,
}

impl OpKind {
    pub const ALL: [OpKind; 9] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::Delete,
        OpKind::ReadModifyWrite,
        OpKind::Verify,
        OpKind::Write,
        OpKind::Seek,
    ];

    /// The group name YCSB prints (`[READ]`, `[READ-MODIFY-WRITE]`...).
    pub fn ycsb_name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan => "SCAN",
            OpKind::Delete => "DELETE",
            OpKind::ReadModifyWrite => "READ-MODIFY-WRITE",
            OpKind::Verify => "VERIFY",
            OpKind::Write => "WRITE",
            OpKind::Seek => "SEEK",
        }
    }

    /// The name in results and reports: `read`, `read-modify-write`...
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::Delete => "delete",
            OpKind::ReadModifyWrite => "read-modify-write",
            OpKind::Verify => "verify",
            OpKind::Write => "write",
            OpKind::Seek => "seek",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// YCSB's `Status` names as counted in `Return=` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    NotFound,
    Error,
    UnexpectedState,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [
        Outcome::Ok,
        Outcome::NotFound,
        Outcome::Error,
        Outcome::UnexpectedState,
    ];

    pub fn ycsb_name(self) -> &'static str {
        match self {
            Outcome::Ok => "OK",
            Outcome::NotFound => "NOT_FOUND",
            Outcome::Error => "ERROR",
            Outcome::UnexpectedState => "UNEXPECTED_STATE",
        }
    }

    pub fn of(result: &OpResult) -> Outcome {
        match result {
            Ok(()) => Outcome::Ok,
            Err(OpError::NotFound) => Outcome::NotFound,
            Err(OpError::Failed(_)) => Outcome::Error,
        }
    }
}

pub fn new_histogram() -> Histogram<u64> {
    new_histogram_of()
}

fn new_histogram_of<C: hdrhistogram::Counter>() -> Histogram<C> {
    // Auto-resizing: memory follows the largest latency actually seen, so
    // hundreds of threads x op types stay small.
    let mut h = Histogram::new(3).expect("3 significant digits is valid");
    h.auto(true);
    h
}

/// A histogram that is usually never recorded (failures, intended
/// starts): allocated on its first value, read as an empty histogram until
/// then. Four eager histograms per op type and client were most of the
/// memory of a 1,024-thread run.
#[derive(Debug, Clone, Default)]
pub struct RareHistogram(Option<Box<Histogram<u64>>>);

impl RareHistogram {
    #[inline]
    fn record(&mut self, ns: u64) {
        let _ = self
            .0
            .get_or_insert_with(|| Box::new(new_histogram()))
            .record(ns);
    }

    fn add(&mut self, other: &RareHistogram) {
        if let Some(theirs) = &other.0 {
            let mine = self.0.get_or_insert_with(|| Box::new(new_histogram()));
            // Auto-resizing histograms cannot fail to add.
            let _ = mine.add(&**theirs);
        }
    }

    /// Bytes of counts held (0 until the first value).
    pub fn allocated_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |h| counts_bytes(h))
    }
}

impl Deref for RareHistogram {
    type Target = Histogram<u64>;

    fn deref(&self) -> &Histogram<u64> {
        static EMPTY: OnceLock<Histogram<u64>> = OnceLock::new();
        self.0
            .as_deref()
            .unwrap_or_else(|| EMPTY.get_or_init(new_histogram))
    }
}

/// Bytes of a histogram's counts array (its size follows the largest value).
fn counts_bytes(h: &Histogram<u64>) -> usize {
    h.distinct_values() * std::mem::size_of::<u64>()
}

/// The success histogram of an [`OpGroup`]: 64-bit counts in totals, a
/// [`CompactHistogram`] in a client's hands.
pub trait OkCounts: Clone + std::fmt::Debug {
    /// Empty, auto-resizing, 3 significant digits.
    fn empty() -> Self;
    fn record(&mut self, ns: u64);
    fn add(&mut self, other: &Self);
    fn allocated_bytes(&self) -> usize;
}

impl OkCounts for Histogram<u64> {
    fn empty() -> Self {
        new_histogram()
    }

    #[inline]
    fn record(&mut self, ns: u64) {
        // Auto-resizing: a value in range is always recorded.
        let _ = Histogram::record(self, ns);
    }

    fn add(&mut self, other: &Self) {
        // Auto-resizing histograms cannot fail to add.
        let _ = Histogram::add(self, other);
    }

    fn allocated_bytes(&self) -> usize {
        counts_bytes(self)
    }
}

impl OkCounts for CompactHistogram {
    fn empty() -> Self {
        CompactHistogram::default()
    }

    #[inline]
    fn record(&mut self, ns: u64) {
        CompactHistogram::record(self, ns);
    }

    fn add(&mut self, other: &Self) {
        CompactHistogram::add(self, other);
    }

    fn allocated_bytes(&self) -> usize {
        CompactHistogram::allocated_bytes(self)
    }
}

/// Everything measured for one operation type.
#[derive(Debug, Clone)]
pub struct OpGroup<Ok = Histogram<u64>> {
    /// Latency of successful operations, from actual start.
    pub ok: Ok,
    /// Latency of failed operations (YCSB's `<OP>-FAILED` group).
    pub failed: RareHistogram,
    /// Latency from the intended start (only with a target rate).
    pub intended: RareHistogram,
    pub intended_failed: RareHistogram,
    pub returns: [u64; 4],
    pub first_error: Option<String>,
}

impl<Ok: OkCounts> OpGroup<Ok> {
    fn new() -> Self {
        Self {
            ok: Ok::empty(),
            failed: RareHistogram::default(),
            intended: RareHistogram::default(),
            intended_failed: RareHistogram::default(),
            returns: [0; 4],
            first_error: None,
        }
    }

    fn add(&mut self, other: &Self) {
        self.add_with(other, Ok::add);
    }

    /// Adds `other`'s figures; `add_ok` adds its success histogram, which
    /// may be of another kind (a client's compact one into a total).
    fn add_with<O>(&mut self, other: &OpGroup<O>, add_ok: impl FnOnce(&mut Ok, &O)) {
        add_ok(&mut self.ok, &other.ok);
        self.failed.add(&other.failed);
        self.intended.add(&other.intended);
        self.intended_failed.add(&other.intended_failed);
        for (a, b) in self.returns.iter_mut().zip(other.returns) {
            *a += b;
        }
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }

    /// Bytes of histogram counts this group holds.
    pub fn allocated_bytes(&self) -> usize {
        self.ok.allocated_bytes()
            + self.failed.allocated_bytes()
            + self.intended.allocated_bytes()
            + self.intended_failed.allocated_bytes()
    }

    pub fn count(&self, outcome: Outcome) -> u64 {
        self.returns[outcome as usize]
    }

    pub fn total_returns(&self) -> u64 {
        self.returns.iter().sum()
    }

    /// Operations whose return was not `OK` (`NOT_FOUND`, `ERROR`,
    /// `UNEXPECTED_STATE`): the failures every count of them means.
    pub fn unsuccessful(&self) -> u64 {
        self.total_returns() - self.count(Outcome::Ok)
    }

    /// The first failure in words: the engine's message, or the status
    /// (`NOT_FOUND`, ...) when no engine error came with it.
    pub fn first_failure(&self) -> String {
        match &self.first_error {
            Some(words) if self.count(Outcome::Error) > 0 => words.clone(),
            _ => Outcome::ALL[1..]
                .iter()
                .find(|o| self.count(**o) > 0)
                .map_or("unknown error".into(), |o| match o {
                    Outcome::NotFound => "NOT_FOUND (the record is not in the store)".into(),
                    other => other.ycsb_name().to_string(),
                }),
        }
    }
}

/// One [`OpGroup`] per [`OpKind`], created on first use.
#[derive(Debug, Clone)]
pub struct OpHistograms<Ok = Histogram<u64>> {
    groups: [Option<Box<OpGroup<Ok>>>; OpKind::ALL.len()],
}

/// What a client records into and hands over: compact success counts.
pub type ClientHistograms = OpHistograms<CompactHistogram>;

impl<Ok> Default for OpHistograms<Ok> {
    fn default() -> Self {
        Self {
            groups: Default::default(),
        }
    }
}

impl OpHistograms {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a client's hand-over, its compact counts made 64-bit.
    pub fn add_client(&mut self, theirs: &ClientHistograms) {
        for (mine, theirs) in self.groups.iter_mut().zip(&theirs.groups) {
            if let Some(theirs) = theirs {
                mine.get_or_insert_with(|| Box::new(OpGroup::new()))
                    .add_with(theirs, |total, compact| compact.add_to(total));
            }
        }
    }
}

impl<Ok: OkCounts> OpHistograms<Ok> {
    #[inline]
    pub fn record(
        &mut self,
        kind: OpKind,
        latency_ns: u64,
        intended_ns: Option<u64>,
        result: &OpResult,
    ) {
        let group = self.groups[kind.index()].get_or_insert_with(|| Box::new(OpGroup::new()));
        let outcome = Outcome::of(result);
        group.returns[outcome as usize] += 1;
        let clamp = |ns: u64| ns.clamp(1, MAX_LATENCY_NS);
        if outcome == Outcome::Ok {
            group.ok.record(clamp(latency_ns));
            if let Some(ns) = intended_ns {
                group.intended.record(clamp(ns));
            }
        } else {
            if let (Err(OpError::Failed(msg)), None) = (result, &group.first_error) {
                group.first_error = Some(msg.to_string());
            }
            group.failed.record(clamp(latency_ns));
            if let Some(ns) = intended_ns {
                group.intended_failed.record(clamp(ns));
            }
        }
    }

    /// Counts an outcome without a latency (e.g. a verification result).
    pub fn count_outcome(&mut self, kind: OpKind, outcome: Outcome, latency_ns: u64) {
        let group = self.groups[kind.index()].get_or_insert_with(|| Box::new(OpGroup::new()));
        group.returns[outcome as usize] += 1;
        group.ok.record(latency_ns.clamp(1, MAX_LATENCY_NS));
    }

    pub fn add(&mut self, other: &Self) {
        for (mine, theirs) in self.groups.iter_mut().zip(&other.groups) {
            if let Some(theirs) = theirs {
                mine.get_or_insert_with(|| Box::new(OpGroup::new()))
                    .add(theirs);
            }
        }
    }

    /// [`OpHistograms::add`] that takes `other`: a group this side lacks
    /// is moved, not copied, so handing a client's histograms over does
    /// not hold two copies.
    pub fn absorb(&mut self, other: Self) {
        for (mine, theirs) in self.groups.iter_mut().zip(other.groups) {
            let Some(theirs) = theirs else { continue };
            match mine {
                Some(mine) => mine.add(&theirs),
                None => *mine = Some(theirs),
            }
        }
    }

    pub fn clear(&mut self) {
        self.groups.iter_mut().for_each(|g| *g = None);
    }

    /// Bytes of histogram counts held, all groups.
    pub fn allocated_bytes(&self) -> usize {
        self.iter().map(|(_, g)| g.allocated_bytes()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(Option::is_none)
    }

    pub fn get(&self, kind: OpKind) -> Option<&OpGroup<Ok>> {
        self.groups[kind.index()].as_deref()
    }

    pub fn iter(&self) -> impl Iterator<Item = (OpKind, &OpGroup<Ok>)> {
        OpKind::ALL
            .iter()
            .zip(&self.groups)
            .filter_map(|(k, g)| g.as_deref().map(|g| (*k, g)))
    }

    /// The client operations these groups hold: see [`client_operations`].
    pub fn client_operations(&self) -> u64 {
        client_operations(self.iter().map(|(kind, g)| (kind, g.total_returns())))
    }
}

/// Client operations (one per client step, what ops/s counts) from the
/// operations completed per type: every type's but VERIFY's (a read's
/// check), less one per READ-MODIFY-WRITE (its READ and UPDATE are in
/// their own groups).
pub fn client_operations(per_type: impl IntoIterator<Item = (OpKind, u64)>) -> u64 {
    let (mut steps, mut read_modify_writes) = (0u64, 0u64);
    for (kind, operations) in per_type {
        match kind {
            OpKind::Verify => {}
            OpKind::ReadModifyWrite => read_modify_writes += operations,
            _ => steps += operations,
        }
    }
    steps.saturating_sub(read_modify_writes)
}

/// A thread's recorder: times operations and files them by type.
///
/// Unpaced, operations are timed with the CPU's time-stamp counter
/// (`quanta`, calibrated against the monotonic clock): two reads per
/// operation cost a few nanoseconds instead of two `clock_gettime` calls.
/// Paced, the system clock is used, since latency is then also measured
/// from the intended start, which is an `Instant`.
pub struct Meter {
    pub histograms: ClientHistograms,
    /// False during warmup: operations run but are not recorded.
    pub recording: bool,
    /// Record latency from the intended start too.
    pub track_intended: bool,
    /// Operations have intended starts (a target rate); unpaced, an
    /// operation's intended start is its actual start, as in YCSB.
    paced: bool,
    clock: quanta::Clock,
    /// Operations that did not succeed (any return but `OK`, `NOT_FOUND`
    /// included: YCSB's failed statuses), recorded or not: the runner's
    /// `stop_on_error` watches it.
    pub errors: u64,
    /// The end of the last operation recorded, until [`Meter::passed`]
    /// takes it: a time limit is checked against it instead of another
    /// clock read.
    last_end: Option<Started>,
    /// Time operations on the system clock and keep the last one's times
    /// in `last_times` (a trace's capture wants them as instants).
    pub keep_times: bool,
    pub last_times: Option<OpTimes>,
}

/// When an operation was due, began and ended (see [`Meter::keep_times`]).
#[derive(Debug, Clone, Copy)]
pub struct OpTimes {
    /// Its start when the run is not paced.
    pub intended: Instant,
    pub start: Instant,
    pub end: Instant,
}

/// A moment to stop at, checked against the meter's own readings. A run's
/// time limit is checked after every operation; reading the system clock
/// for it (`clock_gettime`, ~10-20 ns under KVM) cost more than the
/// time-stamp-counter reads that time the operation.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    /// The meter's counter when the deadline was set, and the nanoseconds
    /// from then to `at`.
    counter_then: u64,
    ns_after: u64,
}

/// When an operation started, in the clock the meter uses.
#[derive(Debug, Clone, Copy)]
pub enum Started {
    Counter(u64),
    Clock(Instant),
}

impl Meter {
    pub fn new(track_intended: bool, paced: bool) -> Self {
        Self {
            histograms: ClientHistograms::default(),
            recording: true,
            track_intended,
            paced,
            clock: quanta::Clock::new(),
            errors: 0,
            last_end: None,
            keep_times: false,
            last_times: None,
        }
    }

    /// Operations have intended starts of their own (a replay at a
    /// trace's times): latency from them is measured with a clock.
    pub fn set_paced(&mut self, paced: bool) {
        self.paced = paced;
    }

    /// `at` as a deadline this meter can check cheaply.
    pub fn deadline(&self, at: Instant) -> Deadline {
        let counter_then = self.clock.raw();
        let ns_after = at.saturating_duration_since(Instant::now()).as_nanos() as u64;
        Deadline {
            at,
            counter_then,
            ns_after,
        }
    }

    /// Whether `deadline` has passed: at the end of the last operation
    /// recorded since the previous check, read then, or now when none was.
    #[inline]
    pub fn passed(&mut self, deadline: &Deadline) -> bool {
        match self.last_end.take() {
            // The counter's calibration to nanoseconds is off by a few
            // parts per million (50 us in 10 s was seen): the system clock
            // confirms, or a window of 10 s measured 9.99995 s.
            Some(Started::Counter(end)) => {
                self.clock.delta_as_nanos(deadline.counter_then, end) >= deadline.ns_after
                    && Instant::now() >= deadline.at
            }
            Some(Started::Clock(end)) => end >= deadline.at,
            None => Instant::now() >= deadline.at,
        }
    }

    /// Runs `op`, timing it, and records it under `kind`.
    #[inline]
    pub fn time(
        &mut self,
        kind: OpKind,
        intended: Instant,
        op: impl FnOnce() -> OpResult,
    ) -> OpResult {
        let started = self.start();
        let result = op();
        self.finish(kind, intended, started, &result);
        result
    }

    /// [`Meter::time`] for an operation that may wait: `call` makes the
    /// engine call (after the clock starts), and its future is awaited.
    #[inline]
    pub async fn time_await<F: std::future::IntoFuture<Output = OpResult>>(
        &mut self,
        kind: OpKind,
        intended: Instant,
        call: impl FnOnce() -> F,
    ) -> OpResult {
        let started = self.start();
        let result = call().await;
        self.finish(kind, intended, started, &result);
        result
    }

    #[inline]
    pub fn start(&self) -> Started {
        if self.track_intended || self.keep_times {
            Started::Clock(Instant::now())
        } else {
            Started::Counter(self.clock.raw())
        }
    }

    /// Records an operation that began at `started` and ends now.
    #[inline]
    pub fn finish(&mut self, kind: OpKind, intended: Instant, started: Started, result: &OpResult) {
        self.errors += u64::from(result.is_err());
        if !self.recording {
            return;
        }
        let (latency, from_intended) = match started {
            Started::Counter(raw) => {
                let end = self.clock.raw();
                self.last_end = Some(Started::Counter(end));
                (self.clock.delta_as_nanos(raw, end), None)
            }
            Started::Clock(start) => {
                let end = Instant::now();
                self.last_end = Some(Started::Clock(end));
                if self.keep_times {
                    let intended = if self.paced { intended } else { start };
                    self.last_times = Some(OpTimes {
                        intended,
                        start,
                        end,
                    });
                }
                let latency = end.saturating_duration_since(start).as_nanos() as u64;
                let from_intended = self.track_intended.then(|| {
                    if self.paced {
                        end.saturating_duration_since(intended).as_nanos() as u64
                    } else {
                        latency
                    }
                });
                (latency, from_intended)
            }
        };
        self.histograms.record(kind, latency, from_intended, result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workload F with integrity checks: 10 reads, 6 read-modify-writes
    /// (each also a READ and an UPDATE) and 16 checks are 10 + 6 client
    /// operations.
    #[test]
    fn client_operations_leave_out_checks_and_count_a_read_modify_write_once() {
        let per_type = [
            (OpKind::Read, 16),
            (OpKind::Update, 6),
            (OpKind::ReadModifyWrite, 6),
            (OpKind::Verify, 16),
        ];
        assert_eq!(client_operations(per_type), 16);
        assert_eq!(
            client_operations([(OpKind::Write, 5), (OpKind::Seek, 2)]),
            7
        );
    }

    /// A time limit is read from the last operation's own end reading,
    /// on either clock, and from the clock when no operation was timed.
    #[test]
    fn a_deadline_is_checked_against_the_last_operations_end() {
        let hour = std::time::Duration::from_secs(3600);
        for track_intended in [false, true] {
            let mut meter = Meter::new(track_intended, false);
            let now = Instant::now();
            let later = meter.deadline(now + hour);
            let _ = meter.time(OpKind::Read, now, || Ok(()));
            assert!(!meter.passed(&later));
            assert!(!meter.passed(&later), "no operation since: the clock");
            // Wide margins: a stalled test thread must not pass `soon` early.
            let soon = meter.deadline(Instant::now() + std::time::Duration::from_millis(200));
            let _ = meter.time(OpKind::Read, now, || Ok(()));
            assert!(!meter.passed(&soon));
            let _ = meter.time(OpKind::Read, now, || {
                std::thread::sleep(std::time::Duration::from_millis(250));
                Ok(())
            });
            assert!(meter.passed(&soon), "an operation that ended after it");
            let past = meter.deadline(now);
            assert!(meter.passed(&past), "no operation since: the clock");
        }
    }

    /// A window ends no earlier than its deadline on the system clock,
    /// which times the window: the counter alone passed 50 us early.
    #[test]
    fn a_deadline_never_passes_before_the_system_clock_reaches_it() {
        let mut meter = Meter::new(false, false);
        for _ in 0..20 {
            let at = Instant::now() + std::time::Duration::from_millis(2);
            let deadline = meter.deadline(at);
            loop {
                let _ = meter.time(OpKind::Read, Instant::now(), || Ok(()));
                if meter.passed(&deadline) {
                    break;
                }
            }
            assert!(Instant::now() >= at);
        }
    }

    #[test]
    fn records_per_type_and_splits_failures() {
        let mut h = OpHistograms::new();
        h.record(OpKind::Read, 1_500, None, &Ok(()));
        h.record(OpKind::Read, 2_500, None, &Err(OpError::NotFound));
        h.record(
            OpKind::Update,
            9_000,
            Some(20_000),
            &Err(OpError::Failed("disk full".into())),
        );
        let read = h.get(OpKind::Read).unwrap();
        assert_eq!(read.ok.len(), 1);
        assert_eq!(read.failed.len(), 1);
        assert_eq!(read.count(Outcome::NotFound), 1);
        let update = h.get(OpKind::Update).unwrap();
        assert_eq!(update.first_error.as_deref(), Some("disk full"));
        assert_eq!(update.intended_failed.len(), 1);
        assert!(h.get(OpKind::Scan).is_none());
    }

    #[test]
    fn merging_adds_counts_and_keeps_exact_extremes() {
        let mut a = OpHistograms::new();
        let mut b = OpHistograms::new();
        for ns in [1_000u64, 2_000, 3_000] {
            a.record(OpKind::Read, ns, None, &Ok(()));
        }
        b.record(OpKind::Read, 7_000_000_000, None, &Ok(()));
        a.add(&b);
        let read = a.get(OpKind::Read).unwrap();
        assert_eq!(read.ok.len(), 4);
        assert_eq!(read.ok.min(), 1_000);
        // Within HdrHistogram's 3-digit precision.
        let max = read.ok.max() as f64;
        assert!((max - 7e9).abs() / 7e9 < 1e-3, "{max}");
    }

    #[test]
    fn both_clocks_measure_a_known_delay() {
        for paced in [false, true] {
            let mut m = Meter::new(paced, paced);
            let outer = Instant::now();
            let _ = m.time(OpKind::Read, outer, || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                Ok(())
            });
            // Between the sleep and the wall time seen around the call (a
            // busy machine may oversleep; the meter must not over- or under-count).
            let around = outer.elapsed().as_nanos() as f64;
            let mut total = OpHistograms::new();
            total.add_client(&m.histograms);
            let ns = total.get(OpKind::Read).unwrap().ok.max() as f64;
            assert!(
                ns >= 19.9e6 && ns <= around * 1.001,
                "paced={paced}: {ns} ns for a 20 ms sleep ({around} ns around it)"
            );
        }
    }

    #[test]
    fn warmup_records_nothing() {
        let mut m = Meter::new(false, false);
        m.recording = false;
        let now = Instant::now();
        let _ = m.time(OpKind::Read, now, || Ok(()));
        assert!(m.histograms.is_empty());
        m.recording = true;
        let _ = m.time(OpKind::Read, now, || Ok(()));
        assert_eq!(m.histograms.get(OpKind::Read).unwrap().ok.len(), 1);
    }

    #[test]
    fn rare_histograms_are_allocated_only_when_recorded() {
        let mut h = OpHistograms::new();
        for ns in [100u64, 1_000, 10_000] {
            h.record(OpKind::Read, ns, None, &Ok(()));
        }
        let read = h.get(OpKind::Read).unwrap();
        assert_eq!(read.failed.allocated_bytes(), 0);
        assert_eq!(read.intended.allocated_bytes(), 0);
        assert_eq!(read.intended_failed.allocated_bytes(), 0);
        // Only the success histogram's counts are held.
        assert_eq!(read.allocated_bytes(), read.ok.distinct_values() * 8);
        // Unrecorded, they read as empty histograms.
        assert!(read.failed.is_empty() && read.intended.is_empty());

        h.record(OpKind::Read, 5_000, Some(7_000), &Err(OpError::NotFound));
        let read = h.get(OpKind::Read).unwrap();
        assert!(read.failed.allocated_bytes() > 0);
        assert!(read.intended_failed.allocated_bytes() > 0);
        assert_eq!(read.intended.allocated_bytes(), 0);
        assert_eq!((read.failed.len(), read.intended_failed.len()), (1, 1));
        let max = read.intended_failed.max();
        assert!(read.intended_failed.equivalent(max, 7_000), "{max}");
    }

    #[test]
    fn absorbing_moves_missing_groups_and_adds_present_ones() {
        let mut total = OpHistograms::new();
        total.record(OpKind::Read, 1_000, None, &Ok(()));
        let mut handed = OpHistograms::new();
        handed.record(OpKind::Read, 2_000, None, &Ok(()));
        handed.record(OpKind::Update, 3_000, Some(4_000), &Err(OpError::NotFound));
        let update_counts = handed.get(OpKind::Update).unwrap().failed.allocated_bytes();
        let mut added = total.clone();
        added.add(&handed);
        total.absorb(handed);
        for kind in [OpKind::Read, OpKind::Update] {
            let (a, b) = (total.get(kind).unwrap(), added.get(kind).unwrap());
            assert_eq!(a.returns, b.returns, "{kind:?}");
            assert_eq!(
                (a.ok.len(), a.ok.max()),
                (b.ok.len(), b.ok.max()),
                "{kind:?}"
            );
            assert_eq!(a.failed.len(), b.failed.len(), "{kind:?}");
            assert_eq!(a.intended_failed.max(), b.intended_failed.max(), "{kind:?}");
        }
        assert_eq!(total.get(OpKind::Read).unwrap().ok.len(), 2);
        assert_eq!(
            total.get(OpKind::Update).unwrap().failed.allocated_bytes(),
            update_counts
        );
    }
}
