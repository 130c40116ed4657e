//! One YCSB operation in three parts: what it asks of the engine, drawn
//! before its clock starts ([`Planned`]); the engine calls, timed; and what
//! it counts after ([`CoreThread::account`]). Only the middle differs
//! between the two ways a client is driven: a client on a thread settles
//! each call at once ([`Call::now`]), with no async state machine around a
//! call a blocking engine has already made (bench/RESULTS.md, "A client on
//! a thread without the state machine"); a client as a task awaits it.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::{counted, CoreThread, Op, Phase};
use crate::engine::{Call, OpResult, Record};
use crate::measure::{Meter, OpKind, Started};
use crate::runner::Step;
use crate::trace::OpType;

/// An operation drawn and its key and values built, before its clock starts.
#[derive(Clone)]
pub(super) enum Planned {
    /// A load's insert.
    LoadInsert,
    /// A run's insert of the `counted`th run insert, acknowledged after.
    RunInsert {
        counted: u64,
    },
    /// `one`: it asks for one field (the trace says so).
    Read {
        fields: Fields,
        one: bool,
    },
    Update,
    Scan {
        len: usize,
        fields: Fields,
    },
    /// YCSB's read-modify-write: a read, then an update, timed also as one.
    ReadModifyWrite {
        fields: Fields,
    },
}

/// The fields a read or scan asks for: `Some(range)` of the client's
/// field names, `None` for all (YCSB passes no list).
pub(super) type Fields = Option<Range<usize>>;

/// One engine call of an operation.
#[derive(Clone)]
pub(super) enum Request {
    Read(Fields),
    Update,
    Insert,
    Scan(usize, Fields),
}

impl Request {
    fn kind(&self) -> OpKind {
        match self {
            Request::Read(_) => OpKind::Read,
            Request::Update => OpKind::Update,
            Request::Insert => OpKind::Insert,
            Request::Scan(..) => OpKind::Scan,
        }
    }
}

impl Planned {
    /// The one call of an operation that makes one.
    #[inline(always)]
    fn request(&self) -> Request {
        match self {
            Planned::LoadInsert | Planned::RunInsert { .. } => Request::Insert,
            Planned::Read { fields, .. } | Planned::ReadModifyWrite { fields } => {
                Request::Read(fields.clone())
            }
            Planned::Update => Request::Update,
            Planned::Scan { len, fields } => Request::Scan(*len, fields.clone()),
        }
    }
}

impl CoreThread<'_> {
    /// One operation on a client thread: each call settled at once.
    pub(super) fn operation_now(&mut self, meter: &mut Meter, intended: Instant) -> Step {
        meter.keep_times |= self.trace.is_some();
        let Some(op) = self.plan() else {
            return Step::Exhausted;
        };
        let result = match op {
            Planned::Read { .. } | Planned::Update | Planned::Scan { .. } => {
                self.timed_now(meter, intended, op.request())
            }
            Planned::LoadInsert | Planned::RunInsert { .. } => {
                let mut tries = 0;
                loop {
                    let result = self.timed_now(meter, intended, Request::Insert);
                    match self.retry_pause(&result, &mut tries) {
                        Some(pause) => std::thread::sleep(pause),
                        None => break result,
                    }
                }
            }
            Planned::ReadModifyWrite { fields } => {
                let started = meter.start();
                let read = self.timed_now(meter, intended, Request::Read(fields.clone()));
                let update = self.timed_now(meter, intended, Request::Update);
                return self.account_both(meter, intended, fields, started, read, update);
            }
        };
        self.account(meter, op, result)
    }

    #[inline(always)]
    fn timed_now(&mut self, meter: &mut Meter, intended: Instant, request: Request) -> OpResult {
        meter.time(request.kind(), intended, || self.call(&request).now())
    }

    /// One operation on a client task: each call awaited.
    pub(super) async fn operation(&mut self, meter: &mut Meter, intended: Instant) -> Step {
        meter.keep_times |= self.trace.is_some();
        let Some(op) = self.plan() else {
            return Step::Exhausted;
        };
        let result = match op {
            Planned::Read { .. } | Planned::Update | Planned::Scan { .. } => {
                self.timed_await(meter, intended, op.request()).await
            }
            Planned::LoadInsert | Planned::RunInsert { .. } => {
                let mut tries = 0;
                loop {
                    let result = self.timed_await(meter, intended, Request::Insert).await;
                    match self.retry_pause(&result, &mut tries) {
                        // A task waits without holding its worker thread.
                        Some(pause) => crate::runner::sleep_until(Instant::now() + pause).await,
                        None => break result,
                    }
                }
            }
            Planned::ReadModifyWrite { fields } => {
                let started = meter.start();
                let read = self
                    .timed_await(meter, intended, Request::Read(fields.clone()))
                    .await;
                let update = self.timed_await(meter, intended, Request::Update).await;
                return self.account_both(meter, intended, fields, started, read, update);
            }
        };
        self.account(meter, op, result)
    }

    async fn timed_await(
        &mut self,
        meter: &mut Meter,
        intended: Instant,
        request: Request,
    ) -> OpResult {
        meter
            .time_await(request.kind(), intended, || self.call(&request))
            .await
    }

    /// Draws the next operation and builds its key and values (YCSB
    /// `doInsert`'s and `doTransaction`'s work before the call); `None`
    /// when a load has inserted all its records.
    #[inline(always)]
    fn plan(&mut self) -> Option<Planned> {
        if self.wl.phase == Phase::Load {
            let keynum = self.wl.load_keys.next();
            // A load inserts insertcount records in all, warm-up included:
            // the window's quota alone would let a warmed-up load insert past them.
            if keynum - self.wl.cfg.insert_start >= self.wl.cfg.insert_count {
                return None;
            }
            self.build_key(keynum);
            self.build_all_values();
            return Some(Planned::LoadInsert);
        }
        // Each arm draws in YCSB's order, so a seed gives YCSB's operations.
        Some(match self.wl.op_chooser.next(&mut self.rng) {
            Op::Read => {
                self.next_key();
                let field = self.read_field();
                let one = field.is_some();
                // YCSB passes the full field list when verifying.
                let all = self.wl.cfg.data_integrity;
                let fields = field.or_else(|| all.then_some(0..self.all_fields.len()));
                self.read.clear();
                Planned::Read { fields, one }
            }
            Op::Update => {
                self.next_key();
                self.build_update_values();
                Planned::Update
            }
            Op::Insert => {
                let counted = self.wl.run_inserts.next();
                self.build_key(self.wl.run_insert_keynum(counted));
                self.build_all_values();
                Planned::RunInsert { counted }
            }
            Op::Scan => {
                self.next_key();
                let len = self.next_scan_length();
                let fields = self.read_field();
                self.scan.clear();
                Planned::Scan { len, fields }
            }
            Op::ReadModifyWrite => {
                self.next_key();
                let fields = self.read_field();
                self.build_update_values();
                self.read.clear();
                Planned::ReadModifyWrite { fields }
            }
        })
    }

    /// The engine call `request` makes on the key and values built.
    #[inline(always)]
    fn call(&mut self, request: &Request) -> Call<'_> {
        let table = self.wl.cfg.table.as_str();
        let names = |fields: &Fields| fields.clone().map(|range| &self.all_fields[range]);
        match request {
            Request::Read(fields) => self
                .db
                .read(table, &self.key, names(fields), &mut self.read),
            Request::Update => self.db.update(table, &self.key, &self.record),
            Request::Insert => self.db.insert(table, &self.key, &self.record),
            Request::Scan(len, fields) => {
                self.db
                    .scan(table, &self.key, *len, names(fields), &mut self.scan)
            }
        }
    }

    /// How long to pause before trying a failed insert again, or `None`
    /// when the call stands: YCSB retries a failed insert
    /// `core_workload_insertion_retry_limit` times, sleeping interval x
    /// U[0.8, 1.2) seconds between tries.
    fn retry_pause(&mut self, result: &OpResult, tries: &mut u64) -> Option<Duration> {
        if result.is_ok() || *tries >= self.wl.cfg.insertion_retry_limit {
            return None;
        }
        *tries += 1;
        eprintln!("kvperf: retrying insertion, retry count: {tries}");
        let jitter = 0.8 + 0.4 * crate::workload::generator::next_f64(&mut self.rng);
        let pause = self.wl.cfg.insertion_retry_interval_s as f64 * jitter;
        Some(Duration::from_secs_f64(pause))
    }

    /// Counts what an operation of one call moved, records it into the
    /// trace, checks what it read under `dataintegrity`, and says whether
    /// to go on.
    #[inline(always)]
    fn account(&mut self, meter: &mut Meter, op: Planned, result: OpResult) -> Step {
        match op {
            Planned::Read { one, .. } => {
                self.read_bytes += counted(meter, &result, self.read.logical_bytes());
                self.trace(meter, OpType::Read, &result, one, 0, false);
                if self.wl.cfg.data_integrity {
                    self.verify(meter);
                }
            }
            Planned::Update => {
                let bytes = counted(meter, &result, self.record.logical_bytes());
                self.written_bytes += bytes;
                self.updated_bytes += bytes;
                self.trace(meter, OpType::Update, &result, false, 0, true);
            }
            Planned::Scan { len, fields } => {
                let rows: usize = self.scan.rows().iter().map(Record::logical_bytes).sum();
                self.read_bytes += counted(meter, &result, rows);
                self.trace(meter, OpType::Scan, &result, fields.is_some(), len, false);
            }
            // Both its calls are counted together, by `account_both`.
            Planned::ReadModifyWrite { .. } => {
                unreachable!("a read-modify-write is accounted by account_both")
            }
            Planned::LoadInsert | Planned::RunInsert { .. } => {
                self.written_bytes += counted(meter, &result, self.record.logical_bytes());
                // Its last try: a retried insert is one operation.
                self.trace(meter, OpType::Insert, &result, false, 0, true);
                if let Planned::RunInsert { counted } = op {
                    // Acknowledged whatever the outcome, as YCSB does in
                    // `finally`. The window only fills with > 2^20 inserts
                    // in flight at once.
                    let _ = self.wl.run_inserts.acknowledge(counted);
                } else if result.is_err() {
                    // YCSB stops a loader whose insert failed.
                    self.wl.failed_load_inserts.fetch_add(1, Relaxed);
                    return Step::Stop;
                }
            }
        }
        Step::Continue
    }

    /// [`Self::account`] for a read-modify-write begun at `started`: its
    /// read and update, and YCSB's extra group around both calls, which
    /// fails if either failed.
    fn account_both(
        &mut self,
        meter: &mut Meter,
        intended: Instant,
        fields: Fields,
        started: Started,
        read: OpResult,
        update: OpResult,
    ) -> Step {
        self.read_bytes += counted(meter, &read, self.read.logical_bytes());
        let bytes = counted(meter, &update, self.record.logical_bytes());
        self.written_bytes += bytes;
        self.updated_bytes += bytes;
        let both: OpResult = read.and(update);
        meter.finish(OpKind::ReadModifyWrite, intended, started, &both);
        self.trace(
            meter,
            OpType::ReadModifyWrite,
            &both,
            fields.is_some(),
            0,
            true,
        );
        if self.wl.cfg.data_integrity {
            self.verify(meter);
        }
        Step::Continue
    }
}
