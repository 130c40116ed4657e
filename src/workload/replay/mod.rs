//! `kvperf replay`: a trace's operations issued again on any engine,
//! through the runner (its clients, meter, histograms and outputs):
//! closed-loop, N clients taking the next operation as soon as they are
//! free, or open-loop, each operation issued at its time in the trace
//! (divided by the speed) and its latency measured from that time.

pub mod preload;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::engine::{wait, Access, ClientSlot, Engine, OpResult, Operations, Record, Runs};
use crate::engine::{ScanResults, ThreadSlot};
use crate::measure::accounting::LogicalBytes;
use crate::measure::{Meter, OpKind};
use crate::runner::{Step, Workload, WorkloadThread};
use crate::trace::capture::{Capture, ClientTrace, Facts};
use crate::trace::{OpType, TraceOp};
use crate::workload::generator::{rng_from_seed, Rng};
use crate::workload::ycsb::values::RandomValuePool;

/// Open-loop timing: operation i is due at the replay's start plus its
/// time in the trace (from the first operation's) divided by `speed`.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub speed: f64,
}

/// How late an open-loop replay started its operations.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Lateness {
    pub max: Duration,
    /// Operations started more than [`LATE`] after their time.
    pub late: u64,
    pub operations: u64,
}

/// An operation started later than this after its time is late.
pub const LATE: Duration = Duration::from_millis(1);
/// How often a client waiting for an operation's time looks for SIGINT.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// A trace to replay on one engine.
pub struct Replay<'a> {
    ops: &'a [TraceOp],
    table: &'a str,
    engine: &'a dyn Engine,
    schedule: Option<Schedule>,
    next: AtomicUsize,
    started: OnceLock<Instant>,
    field_names: Vec<String>,
    values: RandomValuePool,
    seed: u64,
    max_late_ns: AtomicU64,
    late: AtomicU64,
    read_bytes: AtomicU64,
    written_bytes: AtomicU64,
    /// `-p trace.output`: the replay's own operations, captured.
    capture: Option<&'a Capture>,
}

impl<'a> Replay<'a> {
    /// The same, each client recording what it replays into `capture`.
    pub fn capturing(self, capture: Option<&'a Capture>) -> Self {
        Self { capture, ..self }
    }

    /// `ops` in time order ([`crate::trace::in_time_order`]).
    pub fn new(
        ops: &'a [TraceOp],
        table: &'a str,
        engine: &'a dyn Engine,
        schedule: Option<Schedule>,
        seed: u64,
    ) -> Self {
        let most_fields = ops
            .iter()
            .map(|op| op.value_sizes.len().max(op.read_fields as usize))
            .max()
            .unwrap_or(0);
        let mut rng = rng_from_seed(seed, u64::MAX);
        Self {
            ops,
            table,
            engine,
            schedule,
            next: AtomicUsize::new(0),
            started: OnceLock::new(),
            field_names: field_names(most_fields),
            values: RandomValuePool::new(&mut rng),
            seed,
            max_late_ns: AtomicU64::new(0),
            late: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            written_bytes: AtomicU64::new(0),
            capture: None,
        }
    }

    /// The longest an open-loop client waits between two operations of
    /// the trace (zero in a closed loop): no stall, however long.
    pub fn longest_pause(&self) -> Duration {
        let Some(schedule) = self.schedule else {
            return Duration::ZERO;
        };
        let gap = self
            .ops
            .windows(2)
            .map(|w| w[1].intended_ns.saturating_sub(w[0].intended_ns))
            .max()
            .unwrap_or(0);
        Duration::from_secs_f64((gap as f64 / 1e9 / schedule.speed).min(1e12))
    }

    /// How late the operations started (open loop).
    pub fn lateness(&self) -> Lateness {
        Lateness {
            max: Duration::from_nanos(self.max_late_ns.load(Relaxed)),
            late: self.late.load(Relaxed),
            operations: self.next.load(Relaxed).min(self.ops.len()) as u64,
        }
    }

    /// The record bytes the window's successful operations read and wrote;
    /// `dataset` the bytes loaded before it.
    pub fn logical_bytes(&self, dataset: u64) -> LogicalBytes {
        let written = self.written_bytes.load(Relaxed);
        LogicalBytes {
            read: self.read_bytes.load(Relaxed),
            written,
            dataset: dataset + written,
            whole_records_written: None,
        }
    }

    /// Inserts `loads` through one client, before the replay; the bytes
    /// loaded, or the first failure.
    pub fn load(&self, loads: &[preload::Preload]) -> anyhow::Result<u64> {
        let mut client = self.client(ThreadSlot { index: 0, count: 1 })?;
        let mut bytes = 0u64;
        for load in loads {
            client.fill(&load.value_sizes);
            bytes += client.record.logical_bytes() as u64;
            let result = wait(client.db.insert(self.table, &load.key, &client.record));
            result.map_err(|e| {
                let why = match e {
                    crate::measure::OpError::NotFound => "NOT_FOUND".to_string(),
                    crate::measure::OpError::Failed(words) => words.to_string(),
                };
                anyhow::anyhow!(
                    "loading key '{}' before the replay failed: {why}",
                    crate::trace::show::shown_key(&load.key)
                )
            })?;
        }
        Ok(bytes)
    }

    fn client(&self, slot: ThreadSlot) -> anyhow::Result<ReplayClient<'_>> {
        let db = wait(self.engine.client(ClientSlot {
            index: slot.index,
            count: slot.count,
            runs: Runs::Thread,
            access: Access::Records,
        }))?;
        Ok(ReplayClient {
            replay: self,
            db,
            rng: rng_from_seed(self.seed, slot.index as u64),
            record: Record::new(),
            read: Record::new(),
            scan: ScanResults::default(),
            max_late_ns: 0,
            late: 0,
            read_bytes: 0,
            written_bytes: 0,
            trace: self.capture.map(|c| c.client(slot.index)),
        })
    }
}

/// `field0`, `field1`, ...: YCSB's names.
fn field_names(n: usize) -> Vec<String> {
    (0..n.max(1)).map(|i| format!("field{i}")).collect()
}

impl Workload for Replay<'_> {
    fn thread(&self, slot: ThreadSlot) -> anyhow::Result<Box<dyn WorkloadThread + '_>> {
        Ok(Box::new(self.client(slot)?))
    }

    /// Clients take operations from one queue until it is empty.
    fn thread_quota(&self, _total: Option<u64>, _threads: usize, _index: usize) -> Option<u64> {
        None
    }
}

struct ReplayClient<'a> {
    replay: &'a Replay<'a>,
    db: Box<dyn Operations + 'a>,
    rng: Rng,
    record: Record,
    read: Record,
    scan: ScanResults,
    max_late_ns: u64,
    late: u64,
    read_bytes: u64,
    written_bytes: u64,
    trace: Option<ClientTrace>,
}

impl Drop for ReplayClient<'_> {
    fn drop(&mut self) {
        let r = self.replay;
        r.max_late_ns.fetch_max(self.max_late_ns, Relaxed);
        r.late.fetch_add(self.late, Relaxed);
        r.read_bytes.fetch_add(self.read_bytes, Relaxed);
        r.written_bytes.fetch_add(self.written_bytes, Relaxed);
    }
}

impl WorkloadThread for ReplayClient<'_> {
    fn step(&mut self, meter: &mut Meter, intended: Instant) -> Step {
        let replay = self.replay;
        let index = replay.next.fetch_add(1, Relaxed);
        let Some(op) = replay.ops.get(index) else {
            return Step::Exhausted;
        };
        let intended = match replay.schedule {
            Some(schedule) => match self.wait_for(op, schedule, meter) {
                Some(due) => due,
                // SIGINT or SIGTERM while waiting: the run ends, measured.
                None => return Step::Exhausted,
            },
            None => intended,
        };
        meter.keep_times |= self.trace.is_some();
        let result = self.issue(op, meter, intended);
        if let Some(trace) = self.trace.as_mut() {
            let bytes_read = match op.op {
                OpType::Scan => self.scan.rows().iter().map(Record::logical_bytes).sum(),
                _ if op.op.reads() => self.read.logical_bytes(),
                _ => 0,
            };
            trace.record(
                meter,
                Facts {
                    op: op.op,
                    result: &result,
                    key: &op.key,
                    read_fields: op.read_fields,
                    scan_length: op.scan_length,
                    written: op.op.writes().then_some(&self.record),
                    bytes_read: bytes_read as u64,
                },
            );
        }
        Step::Continue
    }
}

impl ReplayClient<'_> {
    /// Sleeps until `op` is due and returns when that is; counts how late
    /// the start is. None when SIGINT or SIGTERM came meanwhile: a trace's
    /// pause may be hours long, and the interrupt ends the replay.
    fn wait_for(&mut self, op: &TraceOp, schedule: Schedule, meter: &mut Meter) -> Option<Instant> {
        let replay = self.replay;
        // Latency from the trace's time: the meter measures from `intended`.
        meter.set_paced(true);
        let start = *replay.started.get_or_init(Instant::now);
        let first = replay.ops.first().map_or(0, |o| o.intended_ns);
        let offset = (op.intended_ns - first) as f64 / schedule.speed;
        let due = start + Duration::from_nanos(offset as u64);
        let now = Instant::now();
        if due > now {
            while let Some(left) = due.checked_duration_since(Instant::now()) {
                if crate::runner::interrupted() {
                    return None;
                }
                std::thread::sleep(left.min(INTERRUPT_POLL));
            }
        } else if meter.recording {
            let late = now - due;
            self.max_late_ns = self.max_late_ns.max(late.as_nanos() as u64);
            self.late += u64::from(late > LATE);
        }
        Some(due)
    }

    /// Fills `self.record` with a field per size.
    fn fill(&mut self, sizes: &[u32]) {
        self.record.clear();
        for (name, &size) in self.replay.field_names.iter().zip(sizes) {
            let (values, rng) = (&self.replay.values, &mut self.rng);
            self.record.push_with(name.as_bytes(), |buf| {
                values.append(rng, size as usize, buf)
            });
        }
    }

    /// Issues `op`, timed; its result.
    fn issue(&mut self, op: &TraceOp, meter: &mut Meter, intended: Instant) -> OpResult {
        let table = self.replay.table;
        let names: Vec<&str> = self.replay.field_names[..op.read_fields as usize]
            .iter()
            .map(String::as_str)
            .collect();
        let fields = (op.read_fields > 0).then_some(names.as_slice());
        let key = op.key.as_slice();
        let recording = meter.recording;
        let ok = |r: &OpResult, bytes: usize| {
            if r.is_ok() && recording {
                bytes as u64
            } else {
                0
            }
        };
        match op.op {
            OpType::Read => {
                self.read.clear();
                let r = meter.time(OpKind::Read, intended, || {
                    wait(self.db.read(table, key, fields, &mut self.read))
                });
                self.read_bytes += ok(&r, self.read.logical_bytes());
                r
            }
            OpType::Scan => {
                self.scan.clear();
                let len = op.scan_length as usize;
                let r = meter.time(OpKind::Scan, intended, || {
                    wait(self.db.scan(table, key, len, fields, &mut self.scan))
                });
                let rows = self.scan.rows().iter().map(Record::logical_bytes).sum();
                self.read_bytes += ok(&r, rows);
                r
            }
            OpType::Update | OpType::Insert => {
                self.fill(&op.value_sizes);
                let kind = op.op.op_kind();
                let r = meter.time(kind, intended, || {
                    let call = match op.op {
                        OpType::Insert => self.db.insert(table, key, &self.record),
                        _ => self.db.update(table, key, &self.record),
                    };
                    wait(call)
                });
                self.written_bytes += ok(&r, self.record.logical_bytes());
                r
            }
            OpType::Delete => meter.time(OpKind::Delete, intended, || {
                wait(self.db.delete(table, key))
            }),
            OpType::ReadModifyWrite => {
                self.fill(&op.value_sizes);
                self.read.clear();
                let started = meter.start();
                let read = meter.time(OpKind::Read, intended, || {
                    wait(self.db.read(table, key, fields, &mut self.read))
                });
                let update = meter.time(OpKind::Update, intended, || {
                    wait(self.db.update(table, key, &self.record))
                });
                self.read_bytes += ok(&read, self.read.logical_bytes());
                self.written_bytes += ok(&update, self.record.logical_bytes());
                let both = read.and(update);
                meter.finish(OpKind::ReadModifyWrite, intended, started, &both);
                both
            }
        }
    }
}
