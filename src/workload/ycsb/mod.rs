//! YCSB 0.17.0's `CoreWorkload`: the load phase (`doInsert`) and the
//! transaction phase (`doTransaction`), with YCSB's key choice, field
//! choice, values and data-integrity checks.
//!
//! [`CoreWorkload`] is shared by all clients (counters, precomputed zeta);
//! each client gets a [`CoreThread`] with its own RNG and generators. Its
//! operations are drawn and counted once over the engine's [`Operations`]
//! (operation.rs); a client thread settles each engine call at once, a
//! client task awaits it.

pub mod config;
pub mod keys;
mod operation;
pub mod values;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

pub use config::CoreConfig;
use config::{FieldLength, RequestDistribution, ScanLengthDistribution};
use keys::build_key_name;
use values::{append_deterministic_value, RandomValuePool};

use crate::engine::{
    wait, Access, ClientSlot, Engine, OpResult, Operations, Record, Runs, ScanResults, SetupFuture,
    ThreadSlot,
};
use crate::error::InputError;
use crate::measure::accounting::LogicalBytes;
use crate::measure::{Meter, OpHistograms, OpKind, Outcome};
use crate::runner::{Step, StepFuture, Workload, WorkloadTask, WorkloadThread};
use crate::shard::{Shard, Slice};
use crate::trace::capture::{Capture, ClientTrace, Facts};
use crate::trace::OpType;
use crate::workload::generator::{
    rng_from_seed, AcknowledgedCounter, Counter, Discrete, Exponential, HistogramGen, Hotspot, Rng,
    ScrambledZipfian, Sequential, SkewedLatest, UniformLong, Zipfian,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Load,
    Run,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

pub struct CoreWorkload {
    cfg: CoreConfig,
    phase: Phase,
    seed: u64,
    field_names: Vec<String>,
    /// Load phase keys, from `insertstart` (YCSB `keysequence`).
    load_keys: Counter,
    /// Run phase inserts, from `recordcount` (YCSB `transactioninsertkeysequence`).
    run_inserts: AcknowledgedCounter,
    sequential: Option<Sequential>,
    op_chooser: Discrete<Op>,
    /// `latest` needs zeta over `recordcount` items: computed once, cloned per thread.
    latest_zipfian: Option<Zipfian>,
    field_length_histogram: Option<HistogramGen>,
    values: RandomValuePool,
    shard: Shard,
    /// What this shard does of the study: its records (load) or
    /// operations (run), and the whole they are part of.
    slice: Option<Slice>,
    of: Option<Slice>,
    /// Record bytes the clients' successful operations in the measured
    /// window returned and wrote, added by each client as it ends.
    read_bytes: AtomicU64,
    written_bytes: AtomicU64,
    /// Of `written_bytes`, the updates' (the fields each wrote).
    updated_bytes: AtomicU64,
    /// Load inserts that failed after their retries, warm-up included.
    failed_load_inserts: AtomicU64,
}

/// What a load did to its store, warm-up included: the keys it tried to
/// insert (`start..start + tried`, in key-number order) and how many of
/// those inserts failed after their retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadedRange {
    pub start: u64,
    pub tried: u64,
    pub failed: u64,
}

impl CoreWorkload {
    /// Shard `shard` of the phase `cfg` describes ([`Shard::WHOLE`]: all
    /// of it). A load shard inserts its slice of the records, as YCSB's
    /// manual `insertstart`/`insertcount` split does; a run shard performs
    /// its slice of `operationcount` with YCSB's key choice over the whole
    /// key space, and inserts new keys of its own (see `run_insert_keynum`).
    pub fn new(mut cfg: CoreConfig, phase: Phase, seed: u64, shard: Shard) -> anyhow::Result<Self> {
        let of = match phase {
            Phase::Load => Some(Slice {
                start: cfg.insert_start,
                count: cfg.insert_count,
            }),
            Phase::Run => (cfg.operation_count > 0).then_some(Slice {
                start: 0,
                count: cfg.operation_count,
            }),
        };
        let slice = of.map(|of| shard.slice(of.start, of.count));
        if let (Some(mine), Some(of)) = (slice, of) {
            if mine.count == 0 {
                let what = match phase {
                    Phase::Load => "records (insertcount)",
                    Phase::Run => "operations (operationcount)",
                };
                return Err(InputError::Invalid(format!(
                    "shard {shard} has nothing to do: {} {what} over {} shards; use fewer shards",
                    of.count, shard.count
                ))
                .into());
            }
            if phase == Phase::Load {
                cfg.insert_start = mine.start;
                cfg.insert_count = mine.count;
            }
        }
        let mut op_chooser = Discrete::new();
        let p = &cfg.proportions;
        for (weight, op) in [
            (p.read, Op::Read),
            (p.update, Op::Update),
            (p.insert, Op::Insert),
            (p.scan, Op::Scan),
            (p.read_modify_write, Op::ReadModifyWrite),
        ] {
            if weight > 0.0 {
                op_chooser.add(weight, op);
            }
        }
        let run_inserts = AcknowledgedCounter::new(cfg.run_insert_start);
        let sequential = (cfg.request_distribution == RequestDistribution::Sequential)
            .then(|| Sequential::new(cfg.insert_start, cfg.insert_start + cfg.insert_count - 1));
        let latest_zipfian = (phase == Phase::Run
            && cfg.request_distribution == RequestDistribution::Latest)
            .then(|| {
                let items = run_inserts.last().max(1);
                Zipfian::with_theta(0, items - 1, cfg.zipfian_constant)
            });
        let field_length_histogram = match &cfg.field_length {
            FieldLength::Histogram(path) => {
                let text = crate::files::read_input(
                    path.as_ref(),
                    "fieldlengthhistogram",
                    crate::files::bound::HISTOGRAM_FILE,
                )?;
                let gen = HistogramGen::parse(&text).map_err(|e| {
                    crate::error::InputError::Invalid(format!("fieldlengthhistogram '{path}': {e}"))
                })?;
                let longest = gen.max();
                cfg.check_longest_field(
                    longest,
                    &format!("the longest length in fieldlengthhistogram '{path}' ({longest})"),
                )?;
                Some(gen)
            }
            _ => None,
        };
        let mut pool_rng = rng_from_seed(seed, u64::MAX);
        Ok(Self {
            field_names: cfg.field_names(),
            load_keys: Counter::new(cfg.insert_start),
            run_inserts,
            sequential,
            op_chooser,
            latest_zipfian,
            field_length_histogram,
            values: RandomValuePool::new(&mut pool_rng),
            cfg,
            phase,
            seed,
            shard,
            slice,
            of,
            read_bytes: AtomicU64::new(0),
            written_bytes: AtomicU64::new(0),
            updated_bytes: AtomicU64::new(0),
            failed_load_inserts: AtomicU64::new(0),
        })
    }

    /// The keys this load handed to its clients, warm-up and failures
    /// included (the measured window's counts leave the warm-up out).
    pub fn loaded_range(&self) -> LoadedRange {
        let start = self.cfg.insert_start;
        LoadedRange {
            start,
            tried: (self.load_keys.peek() - start).min(self.cfg.insert_count),
            failed: self.failed_load_inserts.load(Relaxed),
        }
    }

    /// This shard's records or operations, and the whole they are part of.
    pub fn shard_slices(&self) -> (Option<Slice>, Option<Slice>) {
        (self.slice, self.of)
    }

    /// The key number of a run-phase insert whose counter value is
    /// `counted`. Each shard counts its inserts from `runinsertstart`
    /// (`recordcount`, as a YCSB client does); interleaving them (shard I
    /// takes the start + I, then + N each time) keeps the shards from
    /// inserting the same keys, which several YCSB clients would. One
    /// shard: the counter value itself.
    fn run_insert_keynum(&self, counted: u64) -> u64 {
        let rc = self.cfg.run_insert_start;
        match counted.checked_sub(rc) {
            Some(k) => rc + k * self.shard.count + self.shard.index,
            None => counted,
        }
    }

    pub fn config(&self) -> &CoreConfig {
        &self.cfg
    }

    /// Operations of this phase (of this shard): `insertcount` records for
    /// a load, `operationcount` for a run; 0: until the time limit.
    pub fn operation_count(&self) -> u64 {
        match self.phase {
            Phase::Load => self.cfg.insert_count,
            Phase::Run => self.slice.map_or(0, |s| s.count),
        }
    }

    /// A load that inserted fewer records than its share (`insertcount`):
    /// the records inserted and the share. A load thread stops at its first
    /// failed insert (after YCSB's insertion retries), so this is how a
    /// server that died mid-load shows.
    pub fn incomplete_load(&self) -> Option<(u64, u64)> {
        // The whole load's inserts: those of a warm-up are in the store too.
        let range = self.loaded_range();
        let inserted = range.tried - range.failed;
        let share = self.cfg.insert_count;
        (self.phase == Phase::Load && inserted < share).then_some((inserted, share))
    }

    /// Logical record bytes (field names and values) the measured
    /// window's successful operations read and wrote, as counted by the
    /// clients, and the data set the phase left: the denominators of read,
    /// write and space amplification. A read-modify-write counts its read
    /// and its update. The data set is records x the configured mean
    /// record size (the loaded records were written by another process).
    /// `whole_records`: the engine stores each record whole, so an update
    /// rewrites the record (`LogicalBytes::whole_records_written`).
    pub fn logical_bytes(&self, h: &OpHistograms, whole_records: bool) -> LogicalBytes {
        let c = &self.cfg;
        let ok = |kind| h.get(kind).map_or(0, |g| g.count(Outcome::Ok));
        let field = match &c.field_length {
            FieldLength::Constant(n) => *n as f64,
            FieldLength::Uniform { min, max } => (min + max) as f64 / 2.0,
            // Zipfian favours short lengths; its mean is not worth a sum here.
            FieldLength::Zipfian { min, .. } => *min as f64,
            FieldLength::Histogram(_) => self
                .field_length_histogram
                .as_ref()
                .map_or(0.0, |g| g.mean()),
        };
        let names: usize = self.field_names.iter().map(String::len).sum();
        let record = field * c.field_count as f64 + names as f64;
        let inserts = ok(OpKind::Insert);
        let records = match self.phase {
            Phase::Load => c.record_count.max(c.insert_start + inserts),
            Phase::Run => c.run_insert_start + inserts,
        };
        let written = self.written_bytes.load(Relaxed);
        // Inserts wrote whole records already; each update rewrote one.
        let rewritten = ok(OpKind::Update) as f64 * record;
        let inserted = written.saturating_sub(self.updated_bytes.load(Relaxed));
        LogicalBytes {
            read: self.read_bytes.load(Relaxed),
            written,
            dataset: (records as f64 * record) as u64,
            whole_records_written: whole_records.then(|| inserted + rewritten as u64),
        }
    }

    fn key_chooser(&self) -> KeyChooser {
        let c = &self.cfg;
        let (lb, ub) = (c.insert_start, c.insert_start + c.insert_count - 1);
        match c.request_distribution {
            RequestDistribution::Uniform => KeyChooser::Uniform(UniformLong::new(lb, ub)),
            RequestDistribution::Zipfian => KeyChooser::Zipfian(ScrambledZipfian::with_theta(
                c.insert_start,
                // All three are at most MAX_KEY_NUMBER (2^48): no overflow.
                c.insert_start + c.insert_count + c.expected_new_keys(),
                c.zipfian_constant,
            )),
            RequestDistribution::PlainZipfian => KeyChooser::PlainZipfian(Zipfian::with_theta(
                c.insert_start,
                c.insert_start + c.insert_count + c.expected_new_keys(),
                c.zipfian_constant,
            )),
            RequestDistribution::Latest => {
                let zipf = self
                    .latest_zipfian
                    .clone()
                    .unwrap_or_else(|| Zipfian::new(0, 1));
                KeyChooser::Latest(SkewedLatest::from_zipfian(zipf))
            }
            RequestDistribution::Hotspot => KeyChooser::Hotspot(Hotspot::new(
                lb,
                ub,
                c.hotspot_data_fraction,
                c.hotspot_opn_fraction,
            )),
            RequestDistribution::Sequential => KeyChooser::Sequential,
            RequestDistribution::Exponential => KeyChooser::Exponential(Exponential::new(
                c.exponential_percentile,
                c.record_count as f64 * c.exponential_frac,
            )),
        }
    }

    fn field_length_gen(&self) -> FieldLengthGen {
        match &self.cfg.field_length {
            FieldLength::Constant(n) => FieldLengthGen::Constant(*n),
            FieldLength::Uniform { min, max } => {
                FieldLengthGen::Uniform(UniformLong::new(*min, *max))
            }
            FieldLength::Zipfian { min, max } => {
                FieldLengthGen::Zipfian(Zipfian::with_theta(*min, *max, self.cfg.zipfian_constant))
            }
            FieldLength::Histogram(_) => FieldLengthGen::Histogram(
                self.field_length_histogram
                    .clone()
                    .expect("loaded in new()"),
            ),
        }
    }
}

impl CoreWorkload {
    /// This workload against `engine`, ready for [`crate::runner::execute`].
    pub fn bind<'a>(&'a self, engine: &'a dyn Engine) -> BoundWorkload<'a> {
        BoundWorkload {
            workload: self,
            engine,
            capture: None,
        }
    }
}

/// A [`CoreWorkload`] and the engine its threads talk to.
pub struct BoundWorkload<'a> {
    workload: &'a CoreWorkload,
    engine: &'a dyn Engine,
    /// `trace.output`: each client records its operations into it.
    capture: Option<&'a Capture>,
}

impl<'a> BoundWorkload<'a> {
    /// The same, with every client recording into `capture`.
    pub fn capturing(self, capture: Option<&'a Capture>) -> Self {
        Self { capture, ..self }
    }

    /// A client's state around its engine client `db`.
    fn client(&self, db: Box<dyn Operations + 'a>, slot: ThreadSlot) -> CoreThread<'a> {
        let wl = self.workload;
        let c = &wl.cfg;
        CoreThread {
            db,
            wl,
            rng: rng_from_seed(wl.seed, slot.index as u64),
            keys: wl.key_chooser(),
            field_length: wl.field_length_gen(),
            field_chooser: UniformLong::new(0, c.field_count - 1),
            scan_length: match c.scan_length_distribution {
                ScanLengthDistribution::Uniform => {
                    ScanLength::Uniform(UniformLong::new(c.min_scan_length, c.max_scan_length))
                }
                ScanLengthDistribution::Zipfian => ScanLength::Zipfian(Zipfian::with_theta(
                    c.min_scan_length,
                    c.max_scan_length,
                    c.zipfian_constant,
                )),
            },
            all_fields: wl.field_names.iter().map(String::as_str).collect(),
            key: Vec::with_capacity(32),
            record: Record::new(),
            read: Record::new(),
            scan: ScanResults::default(),
            read_bytes: 0,
            written_bytes: 0,
            updated_bytes: 0,
            trace: self.capture.map(|c| c.client(slot.index)),
        }
    }
}

impl Workload for BoundWorkload<'_> {
    fn thread(&self, slot: ThreadSlot) -> anyhow::Result<Box<dyn WorkloadThread + '_>> {
        let db = wait(self.engine.client(records(slot, Runs::Thread)))?;
        Ok(Box::new(self.client(db, slot)))
    }

    fn task(&self, slot: ThreadSlot) -> SetupFuture<'_, Box<dyn WorkloadTask + '_>> {
        Box::pin(async move {
            let db = self.engine.client(records(slot, Runs::Task)).await?;
            Ok(Box::new(self.client(db, slot)) as Box<dyn WorkloadTask + '_>)
        })
    }
}

/// The engine client of YCSB's client `slot`: record operations.
fn records(slot: ThreadSlot, runs: Runs) -> ClientSlot {
    ClientSlot {
        index: slot.index,
        count: slot.count,
        runs,
        access: Access::Records,
    }
}

enum KeyChooser {
    Uniform(UniformLong),
    Zipfian(ScrambledZipfian),
    PlainZipfian(Zipfian),
    Latest(SkewedLatest),
    Hotspot(Hotspot),
    Sequential,
    Exponential(Exponential),
}

enum FieldLengthGen {
    Constant(u64),
    Uniform(UniformLong),
    Zipfian(Zipfian),
    Histogram(HistogramGen),
}

impl FieldLengthGen {
    fn next(&mut self, rng: &mut Rng) -> usize {
        (match self {
            FieldLengthGen::Constant(n) => *n,
            FieldLengthGen::Uniform(g) => g.next(rng),
            FieldLengthGen::Zipfian(g) => g.next(rng),
            FieldLengthGen::Histogram(g) => g.next(rng),
        }) as usize
    }
}

enum ScanLength {
    Uniform(UniformLong),
    Zipfian(Zipfian),
}

/// One client of the core workload.
pub struct CoreThread<'a> {
    db: Box<dyn Operations + 'a>,
    wl: &'a CoreWorkload,
    rng: Rng,
    keys: KeyChooser,
    field_length: FieldLengthGen,
    field_chooser: UniformLong,
    scan_length: ScanLength,
    all_fields: Vec<&'a str>,
    key: Vec<u8>,
    record: Record,
    read: Record,
    scan: ScanResults,
    /// Record bytes this client's successful operations in the window
    /// returned and wrote.
    read_bytes: u64,
    written_bytes: u64,
    updated_bytes: u64,
    /// This client's part of the trace being captured, if one is.
    trace: Option<ClientTrace>,
}

impl Drop for CoreThread<'_> {
    fn drop(&mut self) {
        self.wl.read_bytes.fetch_add(self.read_bytes, Relaxed);
        self.wl.written_bytes.fetch_add(self.written_bytes, Relaxed);
        self.wl.updated_bytes.fetch_add(self.updated_bytes, Relaxed);
    }
}

/// The bytes an operation counts: `bytes` if it succeeded in the window.
#[inline]
fn counted(meter: &Meter, result: &OpResult, bytes: usize) -> u64 {
    if meter.recording && result.is_ok() {
        bytes as u64
    } else {
        0
    }
}

impl WorkloadThread for CoreThread<'_> {
    #[inline]
    fn step(&mut self, meter: &mut Meter, intended: Instant) -> Step {
        self.operation_now(meter, intended)
    }
}

impl WorkloadTask for CoreThread<'_> {
    fn step<'s>(&'s mut self, meter: &'s mut Meter, intended: Instant) -> StepFuture<'s> {
        Box::pin(self.operation(meter, intended))
    }
}

impl<'a> CoreThread<'a> {
    /// YCSB `nextKeynum`: redraw until the key has been acknowledged as
    /// inserted, so reads never target keys that do not exist yet.
    fn next_keynum(&mut self) -> u64 {
        let rng = &mut self.rng;
        let last = self.wl.run_insert_keynum(self.wl.run_inserts.last());
        loop {
            let keynum = match &mut self.keys {
                KeyChooser::Exponential(g) => {
                    let back = g.next(rng);
                    match last.checked_sub(back) {
                        Some(k) => return k,
                        None => continue,
                    }
                }
                KeyChooser::Uniform(g) => g.next(rng),
                KeyChooser::Zipfian(g) => g.next(rng),
                KeyChooser::PlainZipfian(g) => g.next(rng),
                KeyChooser::Latest(g) => g.next(rng, last),
                KeyChooser::Hotspot(g) => g.next(rng),
                KeyChooser::Sequential => self
                    .wl
                    .sequential
                    .as_ref()
                    .expect("built for sequential")
                    .next(),
            };
            if keynum <= last {
                return keynum;
            }
        }
    }

    fn build_key(&mut self, keynum: u64) {
        let c = &self.wl.cfg;
        build_key_name(keynum, c.hashed_inserts, c.zero_padding, &mut self.key);
    }

    /// Fills `self.record` with every field (YCSB `buildValues`).
    fn build_all_values(&mut self) {
        self.record.clear();
        let wl = self.wl;
        for name in &wl.field_names {
            self.push_field(name);
        }
    }

    /// Appends field `name` with a value of the configured length.
    fn push_field(&mut self, name: &str) {
        let len = self.field_length.next(&mut self.rng);
        push_value(
            self.wl,
            &mut self.rng,
            &self.key,
            name,
            len,
            &mut self.record,
        );
    }

    /// One random field, or all with `writeallfields` (YCSB `buildSingleValue`).
    fn build_update_values(&mut self) {
        if self.wl.cfg.write_all_fields {
            return self.build_all_values();
        }
        self.record.clear();
        let wl = self.wl;
        let name = &wl.field_names[self.field_chooser.next(&mut self.rng) as usize];
        self.push_field(name);
    }

    /// The field a read or scan asks for, as a range of the client's
    /// field names: `None` is all fields.
    fn read_field(&mut self) -> operation::Fields {
        if self.wl.cfg.read_all_fields {
            None
        } else {
            let at = self.field_chooser.next(&mut self.rng) as usize;
            Some(at..at + 1)
        }
    }

    /// Draws the key an operation on an existing record uses and builds it.
    fn next_key(&mut self) {
        let keynum = self.next_keynum();
        self.build_key(keynum);
    }

    fn next_scan_length(&mut self) -> usize {
        (match &mut self.scan_length {
            ScanLength::Uniform(g) => g.next(&mut self.rng),
            ScanLength::Zipfian(g) => g.next(&mut self.rng),
        }) as usize
    }

    /// Adds the operation just timed to the trace, if one is captured:
    /// `one_field` whether it read one field (else all), `scan_length`
    /// for a scan, `wrote` whether it wrote `self.record`.
    #[inline]
    fn trace(
        &mut self,
        meter: &Meter,
        op: OpType,
        result: &OpResult,
        one_field: bool,
        scan_length: usize,
        wrote: bool,
    ) {
        let Some(trace) = self.trace.as_mut() else {
            return;
        };
        let bytes_read = match op {
            OpType::Scan => self.scan.rows().iter().map(Record::logical_bytes).sum(),
            _ if op.reads() => self.read.logical_bytes(),
            _ => 0,
        };
        trace.record(
            meter,
            Facts {
                op,
                result,
                key: &self.key,
                read_fields: u32::from(one_field),
                scan_length: scan_length as u32,
                written: wrote.then_some(&self.record),
                bytes_read: bytes_read as u64,
            },
        );
    }

    /// YCSB `verifyRow`: every returned field must equal its deterministic
    /// value; no fields at all is an error.
    fn verify(&mut self, meter: &mut Meter) {
        let start = Instant::now();
        let outcome = if self.read.is_empty() {
            Outcome::Error
        } else {
            // dataintegrity requires a constant field length (checked in config).
            let len = match self.wl.cfg.field_length {
                FieldLength::Constant(n) => n as usize,
                _ => 0,
            };
            let mut expected = Vec::with_capacity(len);
            let all_match = self.read.fields().all(|(name, value)| {
                expected.clear();
                append_deterministic_value(&self.key, name, len, &mut expected);
                expected == value
            });
            if all_match {
                Outcome::Ok
            } else {
                Outcome::UnexpectedState
            }
        };
        // A value that does not verify is a failure as any other is
        // (`onerror=stop` stops at it).
        meter.errors += u64::from(outcome != Outcome::Ok);
        if meter.recording {
            meter.histograms.count_outcome(
                OpKind::Verify,
                outcome,
                start.elapsed().as_nanos() as u64,
            );
        }
    }
}

/// Appends one field: deterministic with `dataintegrity`, random otherwise.
fn push_value(
    wl: &CoreWorkload,
    rng: &mut Rng,
    key: &[u8],
    name: &str,
    len: usize,
    record: &mut Record,
) {
    if wl.cfg.data_integrity {
        record.push_with(name.as_bytes(), |buf| {
            append_deterministic_value(key, name.as_bytes(), len, buf)
        });
    } else {
        record.push_with(name.as_bytes(), |buf| wl.values.append(rng, len, buf));
    }
}
