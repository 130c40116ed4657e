//! db_bench's benchmarks (RocksDB 11.8 `tools/db_bench_tool.cc`), on any
//! engine client with raw key-value access ([`crate::engine::Access::Raw`]).
//!
//! What db_bench does, and kvperf with it:
//! - each thread performs the full count (`--num` writes for fills,
//!   `--reads` for reads, max(reads, writes) = `--num` for mixed ones); it
//!   is not split across threads;
//! - `--duration` > 0 runs each thread for that long instead (fillseq and
//!   readseq ignore it);
//! - random keys are uniform over `0..num`;
//! - `readwhilewriting` adds one writer thread whose operations are left
//!   out of the figures; it stops when the readers are done;
//! - `readrandomwriterandom` interleaves `readwritepercent` reads and the
//!   rest writes in each run of 100 operations.

pub mod keys;
pub mod values;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::engine::{
    Access, ClientSlot, Engine, KvSupport, OpError, OpResult, Operations, Runs, ThreadSlot,
};
use crate::error::InputError;
use crate::measure::accounting::LogicalBytes;
use crate::measure::{Meter, OpKind};
use crate::runner::{Step, Workload, WorkloadThread};
use crate::workload::generator::{rng_from_seed, Rng};

use rand::Rng as _;
use values::ValueGenerator;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Benchmark {
    FillSeq,
    FillRandom,
    Overwrite,
    ReadRandom,
    ReadSeq,
    ReadWhileWriting,
    ReadRandomWriteRandom,
    SeekRandom,
    UpdateRandom,
    DeleteRandom,
    /// Not measured: waits for the engine's compactions (db_bench's
    /// `waitforcompaction`), so the next benchmark starts from a quiet store.
    WaitForCompaction,
    /// Not measured: compacts the whole key range (db_bench's `compact`,
    /// which benchmark.sh runs after a bulk load).
    Compact,
    /// Not measured: prints the engine's report of the store (db_bench's
    /// `stats`: RocksDB's `rocksdb.stats`).
    Stats,
    /// Not measured: the engine's report per level (db_bench's
    /// `levelstats`: RocksDB's `rocksdb.levelstats`).
    LevelStats,
}

impl Benchmark {
    pub const ALL: [Benchmark; 14] = [
        Benchmark::FillSeq,
        Benchmark::FillRandom,
        Benchmark::Overwrite,
        Benchmark::ReadRandom,
        Benchmark::ReadSeq,
        Benchmark::ReadWhileWriting,
        Benchmark::ReadRandomWriteRandom,
        Benchmark::SeekRandom,
        Benchmark::UpdateRandom,
        Benchmark::DeleteRandom,
        Benchmark::WaitForCompaction,
        Benchmark::Compact,
        Benchmark::Stats,
        Benchmark::LevelStats,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadSeq => "readseq",
            Benchmark::ReadWhileWriting => "readwhilewriting",
            Benchmark::ReadRandomWriteRandom => "readrandomwriterandom",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::UpdateRandom => "updaterandom",
            Benchmark::DeleteRandom => "deleterandom",
            Benchmark::WaitForCompaction => "waitforcompaction",
            Benchmark::Compact => "compact",
            Benchmark::Stats => "stats",
            Benchmark::LevelStats => "levelstats",
        }
    }

    pub fn parse(name: &str) -> Result<Self, InputError> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let names = Self::ALL.map(Benchmark::name);
                let hint = crate::error::did_you_mean(name, names.iter().copied())
                    .map(|n| format!(" (did you mean '{n}'?)"))
                    .unwrap_or_default();
                InputError::Invalid(format!(
                    "unknown benchmark '{name}'{hint}; kvperf bench runs: {}",
                    names.join(", ")
                ))
            })
    }

    /// What the benchmark needs of an engine's raw key-value access.
    pub fn kv_support(self) -> KvSupport {
        match self {
            Benchmark::ReadSeq | Benchmark::SeekRandom => KvSupport::Ordered,
            _ => KvSupport::Point,
        }
    }

    /// Maintenance between benchmarks: run on the engine, not measured.
    pub fn is_maintenance(self) -> bool {
        matches!(
            self,
            Benchmark::WaitForCompaction
                | Benchmark::Compact
                | Benchmark::Stats
                | Benchmark::LevelStats
        )
    }

    /// db_bench starts these from an empty database (`fresh_db`).
    pub fn needs_fresh_db(self) -> bool {
        matches!(self, Benchmark::FillSeq | Benchmark::FillRandom)
    }

    /// db_bench's `DoWrite(SEQUENTIAL)` and `ReadSequential` ignore `--duration`.
    fn honours_duration(self) -> bool {
        !matches!(self, Benchmark::FillSeq | Benchmark::ReadSeq)
    }

    /// Threads db_bench starts: one more (the writer) for readwhilewriting.
    pub fn total_threads(self, threads: usize) -> usize {
        threads + usize::from(self == Benchmark::ReadWhileWriting)
    }
}

/// The flags that shape the operations (engine options are separate).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub num: u64,
    /// `--reads`; negative in db_bench means `--num`.
    pub reads: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub compression_ratio: f64,
    pub read_write_percent: u32,
    pub seek_nexts: u64,
    pub duration: Option<Duration>,
    /// Bytes per second for readwhilewriting's writer; 0 = unlimited.
    pub write_rate_limit: u64,
}

impl BenchConfig {
    /// Operations each thread performs; `None` when `--duration` rules.
    pub fn ops_per_thread(&self, bench: Benchmark) -> Option<u64> {
        if self.duration.is_some() && bench.honours_duration() {
            return None;
        }
        Some(match bench {
            Benchmark::FillSeq
            | Benchmark::FillRandom
            | Benchmark::Overwrite
            | Benchmark::DeleteRandom => self.num,
            Benchmark::ReadRandom
            | Benchmark::ReadSeq
            | Benchmark::ReadWhileWriting
            | Benchmark::SeekRandom => self.reads,
            // db_bench `readwrites_`: reads (= num unless --reads is given).
            Benchmark::ReadRandomWriteRandom | Benchmark::UpdateRandom => self.reads,
            Benchmark::WaitForCompaction
            | Benchmark::Compact
            | Benchmark::Stats
            | Benchmark::LevelStats => 0,
        })
    }
}

/// Counters behind db_bench's messages and MB/s figure, summed over the
/// foreground threads; db_bench's message shows its first measured thread's
/// counts only, so those are kept apart.
#[derive(Debug, Default)]
pub struct Tally {
    pub reads: AtomicU64,
    pub found: AtomicU64,
    pub writes: AtomicU64,
    /// Key and value bytes moved, for db_bench's MB/s figure.
    pub bytes: AtomicU64,
    pub first_thread_reads: AtomicU64,
    pub first_thread_found: AtomicU64,
    pub first_thread_writes: AtomicU64,
}

/// One benchmark bound to an engine.
pub struct BenchWorkload<'a> {
    pub bench: Benchmark,
    pub cfg: &'a BenchConfig,
    pub engine: &'a dyn Engine,
    /// Seed of this benchmark's threads (db_bench: seed base + thread number).
    pub seed: u64,
    pub tally: Tally,
    /// Foreground threads not yet finished: readwhilewriting's writer
    /// stops waiting on its rate once none is left.
    readers: AtomicUsize,
}

impl<'a> BenchWorkload<'a> {
    pub fn new(bench: Benchmark, cfg: &'a BenchConfig, engine: &'a dyn Engine, seed: u64) -> Self {
        Self {
            bench,
            cfg,
            engine,
            seed,
            tally: Tally::default(),
            readers: AtomicUsize::new(0),
        }
    }

    /// Logical key+value bytes read (found keys) and written, and the data
    /// set of `--num` keys: the denominators of the amplification figures.
    pub fn logical_bytes(&self) -> LogicalBytes {
        let pair = (self.cfg.key_size + self.cfg.value_size) as u64;
        LogicalBytes {
            read: self.tally.found.load(Relaxed) * pair,
            written: self.tally.writes.load(Relaxed) * pair,
            dataset: self.cfg.num * pair,
            whole_records_written: None,
        }
    }

    /// db_bench's message after the figures, e.g. `(632 of 1000 found)`,
    /// with the first measured thread's counts, as db_bench prints it.
    pub fn message(&self) -> String {
        let t = &self.tally;
        let (reads, found, writes) = (
            t.first_thread_reads.load(Relaxed),
            t.first_thread_found.load(Relaxed),
            t.first_thread_writes.load(Relaxed),
        );
        match self.bench {
            Benchmark::ReadRandom | Benchmark::ReadWhileWriting | Benchmark::SeekRandom => {
                format!("({found} of {reads} found)")
            }
            Benchmark::ReadRandomWriteRandom => {
                let total = self.cfg.reads;
                format!("( reads:{reads} writes:{writes} total:{total} found:{found})")
            }
            Benchmark::UpdateRandom => format!("( updates:{} found:{found})", self.cfg.reads),
            _ => String::new(),
        }
    }
}

impl Workload for BenchWorkload<'_> {
    fn thread(&self, slot: ThreadSlot) -> anyhow::Result<Box<dyn WorkloadThread + '_>> {
        let index = slot.index;
        let background = self.is_background(index);
        if !background {
            self.readers.fetch_add(1, Relaxed);
        }
        Ok(Box::new(BenchThread {
            wl: self,
            index,
            kv: crate::engine::wait(self.engine.client(ClientSlot {
                index,
                count: slot.count,
                runs: Runs::Thread,
                access: Access::Raw,
            }))?,
            rng: rng_from_seed(self.seed, index as u64),
            key: vec![0; self.cfg.key_size],
            values: ValueGenerator::new(self.cfg.value_size, self.cfg.compression_ratio),
            next_seq: 0,
            mix_reads_left: 0,
            mix_writes_left: 0,
            background,
            rate: WriteRate::new(if background {
                self.cfg.write_rate_limit
            } else {
                0
            }),
            counts: LocalTally::default(),
        }))
    }

    fn thread_quota(&self, _total: Option<u64>, _threads: usize, index: usize) -> Option<u64> {
        if self.is_background(index) {
            return None;
        }
        self.cfg.ops_per_thread(self.bench)
    }

    fn is_background(&self, index: usize) -> bool {
        self.bench == Benchmark::ReadWhileWriting && index == 0
    }
}

impl BenchWorkload<'_> {
    /// The thread whose counts db_bench's message shows (the writer of
    /// readwhilewriting is thread 0 and excluded).
    fn first_measured_thread(&self) -> usize {
        usize::from(self.bench == Benchmark::ReadWhileWriting)
    }
}

#[derive(Default)]
struct LocalTally {
    reads: u64,
    found: u64,
    writes: u64,
    bytes: u64,
}

struct BenchThread<'a> {
    wl: &'a BenchWorkload<'a>,
    index: usize,
    kv: Box<dyn Operations + 'a>,
    rng: Rng,
    key: Vec<u8>,
    values: ValueGenerator,
    next_seq: u64,
    /// readrandomwriterandom's interleave: what is left of this run of 100.
    mix_reads_left: u32,
    mix_writes_left: u32,
    background: bool,
    rate: WriteRate,
    counts: LocalTally,
}

impl WorkloadThread for BenchThread<'_> {
    fn finished(&mut self) {
        if !self.background {
            self.wl.readers.fetch_sub(1, Relaxed);
        }
    }

    fn step(&mut self, meter: &mut Meter, intended: Instant) -> Step {
        let keep_going = match self.wl.bench {
            Benchmark::FillSeq => {
                let k = self.next_seq;
                self.next_seq += 1;
                self.put(meter, intended, k)
            }
            Benchmark::FillRandom | Benchmark::Overwrite => {
                let k = self.random_key();
                self.put(meter, intended, k)
            }
            Benchmark::ReadRandom => self.get(meter, intended),
            Benchmark::ReadWhileWriting if self.background => {
                let k = self.random_key();
                let ok = self.put(meter, intended, k);
                let wl = self.wl;
                let end = wl.cfg.duration.map(|d| self.rate.start + d);
                let over = || crate::runner::interrupted() || wl.readers.load(Relaxed) == 0;
                self.rate
                    .wait((self.key.len() + wl.cfg.value_size) as u64, end, &over);
                ok
            }
            Benchmark::ReadWhileWriting => self.get(meter, intended),
            Benchmark::ReadRandomWriteRandom => self.read_write_mix(meter, intended),
            Benchmark::ReadSeq => return self.read_next(meter, intended),
            Benchmark::SeekRandom => self.seek_random(meter, intended),
            Benchmark::UpdateRandom => self.update_random(meter, intended),
            Benchmark::WaitForCompaction
            | Benchmark::Compact
            | Benchmark::Stats
            | Benchmark::LevelStats => return Step::Exhausted,
            Benchmark::DeleteRandom => {
                let k = self.random_key();
                keys::fill_key(k, &mut self.key);
                let (kv, key) = (&mut self.kv, &self.key);
                meter
                    .time(OpKind::Delete, intended, || kv.remove(key).now())
                    .is_ok()
            }
        };
        keep_going.into()
    }
}

impl BenchThread<'_> {
    fn random_key(&mut self) -> u64 {
        self.rng.gen_range(0..self.wl.cfg.num)
    }

    /// A failed write ends the thread: db_bench exits on one.
    fn put(&mut self, meter: &mut Meter, intended: Instant, number: u64) -> bool {
        keys::fill_key(number, &mut self.key);
        let value = self.values.generate();
        let (kv, key) = (&mut self.kv, &self.key);
        let result = meter.time(OpKind::Write, intended, || kv.put(key, value).now());
        self.counts.writes += 1;
        self.counts.bytes += (key.len() + value.len()) as u64;
        keeps_going(&result)
    }

    /// One point read; "not found" is a normal outcome, counted as db_bench does.
    fn get(&mut self, meter: &mut Meter, intended: Instant) -> bool {
        let k = self.random_key();
        keys::fill_key(k, &mut self.key);
        let (kv, key) = (&mut self.kv, &self.key);
        let mut found = None;
        let result = meter.time(OpKind::Read, intended, || match kv.get(key).now() {
            Ok(len) => {
                found = Some(len);
                Ok(())
            }
            Err(OpError::NotFound) => Ok(()),
            Err(e) => Err(e),
        });
        self.counts.reads += 1;
        if let Some(len) = found {
            self.counts.found += 1;
            self.counts.bytes += (self.key.len() + len) as u64;
        }
        keeps_going(&result)
    }

    fn read_write_mix(&mut self, meter: &mut Meter, intended: Instant) -> bool {
        if self.mix_reads_left == 0 && self.mix_writes_left == 0 {
            self.mix_reads_left = self.wl.cfg.read_write_percent;
            self.mix_writes_left = 100 - self.wl.cfg.read_write_percent;
        }
        if self.mix_reads_left > 0 {
            self.mix_reads_left -= 1;
            self.get(meter, intended)
        } else {
            self.mix_writes_left -= 1;
            let k = self.random_key();
            self.put(meter, intended, k)
        }
    }

    /// readseq: one step of a single forward pass. As in db_bench, only
    /// steps that land on an entry count: moving past the last key ends the
    /// thread without an operation.
    fn read_next(&mut self, meter: &mut Meter, intended: Instant) -> Step {
        let first = self.next_seq == 0;
        self.next_seq += 1;
        let started = meter.start();
        let moved = if first {
            self.kv.seek(None, true).now()
        } else {
            self.kv.next().now()
        };
        let result = match moved {
            Ok(false) => return Step::Exhausted,
            Ok(true) => Ok(()),
            Err(e) => Err(e),
        };
        meter.finish(OpKind::Read, intended, started, &result);
        if let Some((k, v)) = self.kv.current() {
            self.counts.bytes += (k.len() + v.len()) as u64;
        }
        self.counts.reads += 1;
        keeps_going(&result).into()
    }

    fn seek_random(&mut self, meter: &mut Meter, intended: Instant) -> bool {
        let k = self.random_key();
        keys::fill_key(k, &mut self.key);
        let nexts = self.wl.cfg.seek_nexts;
        let (kv, key) = (&mut self.kv, &self.key);
        let mut found = false;
        let mut bytes = 0;
        // db_bench opens a new iterator for every seek (no tailing iterator).
        let result = meter.time(OpKind::Seek, intended, || {
            let mut valid = kv.seek(Some(key), true).now()?;
            found = valid && kv.current().is_some_and(|(k, _)| k == key.as_slice());
            let mut n = 0;
            while n < nexts && valid {
                if let Some((k, v)) = kv.current() {
                    bytes += (k.len() + v.len()) as u64;
                }
                valid = kv.next().now()?;
                n += 1;
            }
            Ok(())
        });
        self.counts.reads += 1;
        self.counts.found += u64::from(found);
        self.counts.bytes += bytes;
        keeps_going(&result)
    }

    /// updaterandom: a read and a write of the same key, timed as one update.
    fn update_random(&mut self, meter: &mut Meter, intended: Instant) -> bool {
        let k = self.random_key();
        keys::fill_key(k, &mut self.key);
        let new_value = self.values.generate();
        let (kv, key) = (&mut self.kv, &self.key);
        let mut found = None;
        let result = meter.time(OpKind::Update, intended, || {
            match kv.get(key).now() {
                Ok(len) => found = Some(len),
                Err(OpError::NotFound) => {}
                Err(e) => return Err(e),
            }
            kv.put(key, new_value).now()
        });
        self.counts.found += u64::from(found.is_some());
        self.counts.bytes += (2 * self.key.len() + found.unwrap_or(0) + new_value.len()) as u64;
        keeps_going(&result)
    }
}

impl Drop for BenchThread<'_> {
    fn drop(&mut self) {
        if self.background {
            return; // db_bench leaves the writer out of every figure
        }
        let t = &self.wl.tally;
        t.reads.fetch_add(self.counts.reads, Relaxed);
        t.found.fetch_add(self.counts.found, Relaxed);
        t.writes.fetch_add(self.counts.writes, Relaxed);
        t.bytes.fetch_add(self.counts.bytes, Relaxed);
        if self.index == self.wl.first_measured_thread() {
            t.first_thread_reads.store(self.counts.reads, Relaxed);
            t.first_thread_found.store(self.counts.found, Relaxed);
            t.first_thread_writes.store(self.counts.writes, Relaxed);
        }
    }
}

/// db_bench stops a thread on an I/O error; kvperf records it (the runner
/// counts it per operation type, and the step's warnings say how many
/// failed and why) and stops the thread too.
fn keeps_going(result: &OpResult) -> bool {
    !matches!(result, Err(OpError::Failed(_)))
}

/// `--benchmark_write_rate_limit`: bytes per second for the writer, like
/// RocksDB's generic rate limiter (refilled continuously here).
/// The longest a rate-limited writer sleeps before it looks again
/// whether its benchmark is over.
const RATE_SLICE: Duration = Duration::from_millis(50);

struct WriteRate {
    bytes_per_sec: u64,
    start: Instant,
    granted: u64,
}

impl WriteRate {
    fn new(bytes_per_sec: u64) -> Self {
        Self {
            bytes_per_sec,
            start: Instant::now(),
            granted: 0,
        }
    }

    /// Sleeps until `bytes` more fit in the budget since the start, in
    /// slices: never past `end` (the benchmark's `--duration`) nor once
    /// `over` says the benchmark is over (its readers done, an interrupt).
    fn wait(&mut self, bytes: u64, end: Option<Instant>, over: &dyn Fn() -> bool) {
        if self.bytes_per_sec == 0 {
            return;
        }
        self.granted += bytes;
        let due =
            self.start + Duration::from_secs_f64(self.granted as f64 / self.bytes_per_sec as f64);
        let until = end.map_or(due, |end| due.min(end));
        loop {
            let now = Instant::now();
            if now >= until || over() {
                return;
            }
            std::thread::sleep((until - now).min(RATE_SLICE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benchmark_names_round_trip_and_typos_get_a_hint() {
        for b in Benchmark::ALL {
            assert_eq!(Benchmark::parse(b.name()).unwrap(), b);
        }
        let err = Benchmark::parse("readrandm").unwrap_err().to_string();
        assert!(err.contains("did you mean 'readrandom'"), "{err}");
    }

    #[test]
    fn each_thread_does_the_full_count_unless_duration_rules() {
        let mut cfg = BenchConfig {
            num: 1000,
            reads: 500,
            key_size: 16,
            value_size: 100,
            compression_ratio: 0.5,
            read_write_percent: 90,
            seek_nexts: 0,
            duration: None,
            write_rate_limit: 0,
        };
        assert_eq!(cfg.ops_per_thread(Benchmark::FillRandom), Some(1000));
        assert_eq!(cfg.ops_per_thread(Benchmark::ReadRandom), Some(500));
        cfg.duration = Some(Duration::from_secs(1));
        assert_eq!(cfg.ops_per_thread(Benchmark::ReadRandom), None);
        assert_eq!(
            cfg.ops_per_thread(Benchmark::FillSeq),
            Some(1000),
            "fillseq ignores duration"
        );
    }

    #[test]
    fn write_rate_limit_paces_the_writer() {
        let mut rate = WriteRate::new(1_000_000);
        let start = Instant::now();
        for _ in 0..100 {
            rate.wait(1000, None, &|| false); // 100 KB at 1 MB/s: 0.1 s
        }
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(99), "{elapsed:?}");
        assert!(elapsed < Duration::from_millis(600), "{elapsed:?}");
    }
}
