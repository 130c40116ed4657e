//! An embedded engine's own ceiling on YCSB workload A or C: N threads,
//! each issuing exactly the operations kvperf's client of the same index
//! issues for the same workload and seed (the same op chooser, scrambled
//! zipfian key choice, key names, update fields and value bytes, drawn from
//! kvperf's own generators in the same order), but calling the engine's
//! own API: the `rocksdb`, `heed`, `rusqlite`, `fjall` and `redb` crates,
//! and WiredTiger's cursor calls through kvperf's C shim (csrc/). No
//! runner, no timing per operation, no histograms. kvperf's `run` on the
//! same store with the same seed should reach at least 0.95x of it
//! (bench/engines-vs-bare-loop.sh).
//!
//! What it shares with kvperf, on purpose: the store is opened by the
//! engine's `open_store` (the same options and files as `kvperf run`), and
//! records use YCSB's RocksDB-binding layout (`engine::record::codec`): a
//! read decodes the fields it asks for, an update reads, merges one field
//! and writes the record in one transaction, as kvperf's engines do.
//!
//!   cargo build --release --example engine-loop
//!   engine-loop ENGINE DB_DIR WORKLOAD RECORDS OPERATIONS THREADS SEED [KEY=VALUE...]
//!
//! WORKLOAD is `a` or `c` (workloads/workloada, workloadc); KEY=VALUE are
//! the `-p` properties kvperf ran with (fieldcount=10 ...). Prints one line
//! `ENGINE bare loop: ... N ops/s (version V)` with reads and updates found
//! and not found, then YCSB's `[OVERALL]` run time and throughput lines
//! and `[READ]`/`[UPDATE]` operation counts (found or not);
//! fails if any operation failed or more than 1% of reads or of updates
//! found no record.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::Instant;

use anyhow::{bail, ensure, Context};
use kvperf::engine::record::codec;
use kvperf::engine::{Engine, OpenMode, OpenOptions, Record};
use kvperf::properties::Properties;
use kvperf::runner::ops_for_thread;
use kvperf::workload::generator::{
    rng_from_seed, AcknowledgedCounter, Discrete, Rng, ScrambledZipfian, UniformLong,
};
use kvperf::workload::ycsb::config::{FieldLength, RequestDistribution};
use kvperf::workload::ycsb::keys::build_key_name;
use kvperf::workload::ycsb::values::RandomValuePool;
use kvperf::workload::ycsb::CoreConfig;

const USAGE: &str =
    "usage: engine-loop ENGINE DB_DIR WORKLOAD(a|c) RECORDS OPERATIONS THREADS SEED [KEY=VALUE...]";

const ENGINES: [&str; 6] = ["rocksdb", "wiredtiger", "lmdb", "sqlite", "fjall", "redb"];

/// Bad arguments: one line and exit code 2; a failed loop: exit code 1.
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let outcome = match Input::parse(&args) {
        Ok(input) => input.run(),
        Err(e) => {
            eprintln!("engine-loop: {e:#}");
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("engine-loop: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The command line, with the workload it describes.
struct Input {
    engine: String,
    dir: PathBuf,
    workload: String,
    records: u64,
    operations: u64,
    threads: usize,
    props: Properties,
    plan: Plan,
}

impl Input {
    fn parse(args: &[String]) -> anyhow::Result<Self> {
        ensure!(args.len() >= 8, "{USAGE}");
        let engine = args[1].as_str();
        ensure!(
            ENGINES.contains(&engine),
            "engine '{engine}' has no bare loop (one of {})",
            ENGINES.join(", ")
        );
        let dir = PathBuf::from(&args[2]);
        let workload = args[3].as_str();
        ensure!(
            matches!(workload, "a" | "c"),
            "WORKLOAD must be a or c, not '{workload}'"
        );
        let number = |i: usize, what: &str| -> anyhow::Result<u64> {
            args[i]
                .parse()
                .with_context(|| format!("{what} '{}' is not a number", args[i]))
        };
        let (records, operations) = (number(4, "RECORDS")?, number(5, "OPERATIONS")?);
        let threads = number(6, "THREADS")? as usize;
        let seed = number(7, "SEED")?;
        ensure!(
            records > 0 && operations > 0 && threads > 0,
            "RECORDS, OPERATIONS and THREADS must be positive"
        );

        // The properties `kvperf run -P workloads/workloadX -p ...` builds,
        // from the workload shipped in kvperf (the same text as the file),
        // not a path fixed at build time: the binary may have been built in
        // another checkout.
        let mut props = Properties::new();
        let name = format!("workload{workload}");
        let text = kvperf::shipped::named_workload(Path::new(&name))
            .ok_or_else(|| anyhow::anyhow!("no shipped workload {name}"))?;
        props.load_str(text);
        props.set("recordcount", &records.to_string());
        props.set("operationcount", &operations.to_string());
        for assignment in &args[8..] {
            props.set_override(assignment)?;
        }
        let plan = Plan::new(CoreConfig::from_properties(&props, false)?, seed, threads)?;
        Ok(Self {
            engine: engine.to_string(),
            dir,
            workload: workload.to_string(),
            records,
            operations,
            threads,
            props,
            plan,
        })
    }

    /// Opens the store, runs the loop, prints its line; fails if the loop
    /// failed or missed records.
    fn run(self) -> anyhow::Result<()> {
        let Self {
            engine,
            dir,
            workload,
            records,
            operations,
            threads,
            props,
            plan,
        } = self;
        let opts = OpenOptions {
            dir: Some(dir.as_path()),
            properties: &props,
            mode: OpenMode::Existing,
            runtime: None,
            clients: None,
        };
        let (counts, seconds, version) = match engine.as_str() {
            "rocksdb" => {
                let e = kvperf::engine::embedded::rocksdb::open_store(&opts)?;
                finish(&e, plan.run(|| Ok(RocksBare::new(&e))))?
            }
            "lmdb" => {
                let e = kvperf::engine::embedded::lmdb::open_store(&opts)?;
                finish(&e, plan.run(|| Ok(LmdbBare::new(&e))))?
            }
            "sqlite" => {
                let e = kvperf::engine::embedded::sqlite::open_store(&opts)?;
                finish(&e, plan.run(|| Ok(SqliteBare::new(e.connect()?))))?
            }
            "fjall" => {
                let e = kvperf::engine::embedded::fjall::open_store(&opts)?;
                finish(&e, plan.run(|| Ok(FjallBare::new(&e))))?
            }
            "redb" => {
                let e = kvperf::engine::embedded::redb::open_store(&opts)?;
                finish(&e, plan.run(|| RedbBare::new(&e)))?
            }
            "wiredtiger" => {
                let e = kvperf::engine::embedded::wiredtiger::open_store(&opts)?;
                finish(&e, plan.run(|| WtBare::new(&e)))?
            }
            other => unreachable!("checked in parse: {other}"),
        };
        let c = counts;
        let (reads, updates) = (c.reads, c.updates);
        let done = reads.0 + reads.1 + updates.0 + updates.1 + c.errors;
        let rate = operations as f64 / seconds;
        println!(
            "{engine} bare loop: workload {workload}, {threads} threads, {done} ops in {seconds:.3} s \
             (reads {} found, {} not found; updates {} found, {} not found; {} errors), \
             {rate:.0} ops/s (version {version})",
            reads.0, reads.1, updates.0, updates.1, c.errors,
        );
        // As YCSB prints them, so bench/lib.sh reads this like any run.
        println!(
            "[OVERALL], RunTime(ms), {}",
            (seconds * 1000.0).round() as u64
        );
        println!("[OVERALL], Throughput(ops/sec), {rate}");
        // The op counts: equal to kvperf's with the same seed, as the same
        // op chooser on the same RNG stream gives.
        for (group, (found, missing)) in [("READ", reads), ("UPDATE", updates)] {
            if found + missing > 0 {
                println!("[{group}], Operations, {}", found + missing);
            }
        }
        if let Some(first) = &c.first_error {
            bail!("{} operations failed; the first: {first}", c.errors);
        }
        for (what, (found, missing)) in [("reads", reads), ("updates", updates)] {
            // More than 1% missing: the store is not the one kvperf loaded.
            let all = found + missing;
            ensure!(
                missing * 100 <= all,
                "{missing} of {all} {what} found no record: is the store loaded with {records} records?"
            );
        }
        Ok(())
    }
}

/// Closes the engine after the loop; returns the loop's counts and seconds
/// and the engine's version.
fn finish(
    engine: &dyn Engine,
    run: anyhow::Result<(Counts, f64)>,
) -> anyhow::Result<(Counts, f64, String)> {
    let version = engine.info().version;
    let closed = engine.close();
    let (counts, seconds) = run?;
    closed?;
    Ok((counts, seconds, version))
}

#[derive(Clone, Copy)]
enum Op {
    Read,
    Update,
}

/// What every thread shares: the workload's configuration, its value pool
/// and op chooser, built as kvperf's `CoreWorkload::new` builds them.
struct Plan {
    cfg: CoreConfig,
    seed: u64,
    threads: usize,
    field_names: Vec<String>,
    values: RandomValuePool,
    ops: Discrete<Op>,
    field_length: usize,
    /// The highest key number a read may target (YCSB `nextKeynum`).
    last: u64,
}

impl Plan {
    fn new(cfg: CoreConfig, seed: u64, threads: usize) -> anyhow::Result<Self> {
        let p = &cfg.proportions;
        ensure!(
            p.insert == 0.0 && p.scan == 0.0 && p.read_modify_write == 0.0,
            "the bare loop does reads and updates only (workloads a and c)"
        );
        ensure!(
            matches!(
                cfg.request_distribution,
                RequestDistribution::Zipfian | RequestDistribution::Uniform
            ),
            "the bare loop chooses keys as zipfian or uniform only"
        );
        ensure!(!cfg.data_integrity, "the bare loop does not verify values");
        let FieldLength::Constant(field_length) = cfg.field_length else {
            bail!("the bare loop writes constant field lengths only");
        };
        // In the order CoreWorkload::new adds them: the op chooser's draws
        // must map to the same operations.
        let mut ops = Discrete::new();
        for (weight, op) in [(p.read, Op::Read), (p.update, Op::Update)] {
            if weight > 0.0 {
                ops.add(weight, op);
            }
        }
        Ok(Self {
            field_names: cfg.field_names(),
            values: RandomValuePool::new(&mut rng_from_seed(seed, u64::MAX)),
            ops,
            field_length: field_length as usize,
            last: AcknowledgedCounter::new(cfg.run_insert_start).last(),
            cfg,
            seed,
            threads,
        })
    }

    /// Runs every thread's operations on a client `connect` makes for it
    /// (before the clock starts); returns the counts and the seconds from
    /// when all were ready to when the last finished.
    fn run<B: Bare>(
        &self,
        connect: impl Fn() -> anyhow::Result<B> + Sync,
    ) -> anyhow::Result<(Counts, f64)> {
        let ready = Barrier::new(self.threads + 1);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..self.threads)
                .map(|index| {
                    let (ready, connect) = (&ready, &connect);
                    s.spawn(move || {
                        let client = connect();
                        let sequence = Sequence::new(self, index);
                        ready.wait();
                        let quota = ops_for_thread(self.cfg.operation_count, self.threads, index);
                        Ok::<_, anyhow::Error>(sequence.drive(client?, quota))
                    })
                })
                .collect();
            ready.wait();
            let started = Instant::now();
            let mut all = Counts::default();
            for worker in workers {
                let counts = worker.join().expect("a bare loop thread panicked")?;
                all.add(counts);
            }
            Ok((all, started.elapsed().as_secs_f64()))
        })
    }
}

/// One client's operations: kvperf's `CoreThread::do_transaction` for
/// reads and updates, drawing from the same RNG stream in the same order.
struct Sequence<'a> {
    plan: &'a Plan,
    rng: Rng,
    keys: Keys,
    field_chooser: UniformLong,
    key: Vec<u8>,
    update: Record,
}

enum Keys {
    Zipfian(ScrambledZipfian),
    Uniform(UniformLong),
}

impl<'a> Sequence<'a> {
    fn new(plan: &'a Plan, index: usize) -> Self {
        let c = &plan.cfg;
        let keys = match c.request_distribution {
            RequestDistribution::Zipfian => Keys::Zipfian(ScrambledZipfian::with_theta(
                c.insert_start,
                c.insert_start + c.insert_count + c.expected_new_keys(),
                c.zipfian_constant,
            )),
            _ => Keys::Uniform(UniformLong::new(
                c.insert_start,
                c.insert_start + c.insert_count - 1,
            )),
        };
        Self {
            plan,
            rng: rng_from_seed(plan.seed, index as u64),
            keys,
            field_chooser: UniformLong::new(0, c.field_count - 1),
            key: Vec::with_capacity(32),
            update: Record::new(),
        }
    }

    /// Performs `quota` operations on `client`, counting their outcomes.
    fn drive<B: Bare>(mut self, mut client: B, quota: u64) -> Counts {
        let plan = self.plan;
        let all_fields: Vec<&str> = plan.field_names.iter().map(String::as_str).collect();
        let mut out = Record::new();
        let mut counts = Counts::default();
        for _ in 0..quota {
            let op = plan.ops.next(&mut self.rng);
            let keynum = loop {
                let k = match &mut self.keys {
                    Keys::Zipfian(g) => g.next(&mut self.rng),
                    Keys::Uniform(g) => g.next(&mut self.rng),
                };
                if k <= plan.last {
                    break k;
                }
            };
            let c = &plan.cfg;
            build_key_name(keynum, c.hashed_inserts, c.zero_padding, &mut self.key);
            match op {
                Op::Read => {
                    let one = (!c.read_all_fields)
                        .then(|| all_fields[self.field_chooser.next(&mut self.rng) as usize]);
                    let fields = one.as_ref().map(std::slice::from_ref);
                    out.clear();
                    counts.count(true, client.read(&self.key, fields, &mut out));
                }
                Op::Update => {
                    self.build_update();
                    counts.count(false, client.update(&self.key, &self.update));
                }
            }
        }
        counts
    }

    /// YCSB `buildSingleValue` (or `buildValues` with `writeallfields`).
    fn build_update(&mut self) {
        let plan = self.plan;
        self.update.clear();
        let names: &[String] = if plan.cfg.write_all_fields {
            &plan.field_names
        } else {
            let i = self.field_chooser.next(&mut self.rng) as usize;
            std::slice::from_ref(&plan.field_names[i])
        };
        for name in names {
            let rng = &mut self.rng;
            self.update.push_with(name.as_bytes(), |buf| {
                plan.values.append(rng, plan.field_length, buf)
            });
        }
    }
}

/// Found and not-found reads and updates, and failed operations.
#[derive(Default)]
struct Counts {
    reads: (u64, u64),
    updates: (u64, u64),
    errors: u64,
    first_error: Option<String>,
}

impl Counts {
    fn count(&mut self, read: bool, outcome: Outcome) {
        let pair = if read {
            &mut self.reads
        } else {
            &mut self.updates
        };
        match outcome {
            Ok(true) => pair.0 += 1,
            Ok(false) => pair.1 += 1,
            Err(why) => {
                self.errors += 1;
                self.first_error.get_or_insert(why);
            }
        }
    }

    fn add(&mut self, other: Counts) {
        self.reads.0 += other.reads.0;
        self.reads.1 += other.reads.1;
        self.updates.0 += other.updates.0;
        self.updates.1 += other.updates.1;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// `Ok(true)`: done; `Ok(false)`: no such record; `Err`: failed.
type Outcome = Result<bool, String>;

const CORRUPT: &str = "stored value is not a kvperf/YCSB record";

/// One thread's client of an engine, calling the engine's own API.
trait Bare {
    /// Reads `key`'s record, decoding `fields` (all if `None`) into `out`.
    fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome;
    /// Reads `key`'s record, merges `values` in and writes it, atomically.
    fn update(&mut self, key: &[u8], values: &Record) -> Outcome;
}

fn decoded(value: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome {
    if codec::decode(value, fields, out) {
        Ok(true)
    } else {
        Err(CORRUPT.into())
    }
}

fn failed(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The buffers an update merges in.
#[derive(Default)]
struct Merge {
    scratch: Record,
    encoded: Vec<u8>,
}

impl Merge {
    /// Merges `values` into `stored`; the result is in `self.encoded`.
    fn merge(&mut self, stored: &[u8], values: &Record) -> Result<(), String> {
        if codec::merge(stored, values, &mut self.scratch, &mut self.encoded) {
            Ok(())
        } else {
            Err(CORRUPT.into())
        }
    }
}

struct RocksBare<'a> {
    db: &'a ::rocksdb::DB,
    read: ::rocksdb::ReadOptions,
    write: ::rocksdb::WriteOptions,
    merge: Merge,
}

impl<'a> RocksBare<'a> {
    fn new(engine: &'a kvperf::engine::embedded::rocksdb::RocksEngine) -> Self {
        Self {
            db: engine.db(),
            read: ::rocksdb::ReadOptions::default(),
            write: engine.write_options(),
            merge: Merge::default(),
        }
    }
}

impl Bare for RocksBare<'_> {
    fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome {
        match self.db.get_pinned_opt(key, &self.read).map_err(failed)? {
            Some(value) => decoded(&value, fields, out),
            None => Ok(false),
        }
    }

    fn update(&mut self, key: &[u8], values: &Record) -> Outcome {
        match self.db.get_pinned_opt(key, &self.read).map_err(failed)? {
            Some(stored) => self.merge.merge(&stored, values)?,
            None => return Ok(false),
        }
        let written = self.db.put_opt(key, &self.merge.encoded, &self.write);
        written.map(|()| true).map_err(failed)
    }
}

struct LmdbBare<'a> {
    env: &'a ::heed::Env,
    db: kvperf::engine::embedded::lmdb::Db,
    merge: Merge,
}

impl<'a> LmdbBare<'a> {
    fn new(engine: &'a kvperf::engine::embedded::lmdb::LmdbEngine) -> Self {
        Self {
            env: engine.env(),
            db: engine.database(),
            merge: Merge::default(),
        }
    }
}

impl Bare for LmdbBare<'_> {
    fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome {
        let rtxn = self.env.read_txn().map_err(failed)?;
        match self.db.get(&rtxn, key).map_err(failed)? {
            Some(value) => decoded(value, fields, out),
            None => Ok(false),
        }
    }

    fn update(&mut self, key: &[u8], values: &Record) -> Outcome {
        let mut wtxn = self.env.write_txn().map_err(failed)?;
        match self.db.get(&wtxn, key).map_err(failed)? {
            Some(stored) => self.merge.merge(stored, values)?,
            None => return Ok(false),
        }
        self.db
            .put(&mut wtxn, key, &self.merge.encoded)
            .map_err(failed)?;
        wtxn.commit().map(|()| true).map_err(failed)
    }
}

/// A connection configured as kvperf's clients' are; its statements are
/// kvperf's, prepared here and cached by the connection (as kvperf's are).
struct SqliteBare {
    conn: ::rusqlite::Connection,
    merge: Merge,
}

impl SqliteBare {
    fn new(conn: ::rusqlite::Connection) -> Self {
        Self {
            conn,
            merge: Merge::default(),
        }
    }
}

impl Bare for SqliteBare {
    fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome {
        use kvperf::engine::embedded::sqlite::SELECT_ONE;
        let mut stmt = self.conn.prepare_cached(SELECT_ONE).map_err(failed)?;
        let mut rows = stmt.query([key]).map_err(failed)?;
        let Some(row) = rows.next().map_err(failed)? else {
            return Ok(false);
        };
        let value = row.get_ref(0).map_err(failed)?;
        decoded(value.as_blob().map_err(failed)?, fields, out)
    }

    fn update(&mut self, key: &[u8], values: &Record) -> Outcome {
        use kvperf::engine::embedded::sqlite::{SELECT_ONE, UPDATE};
        // IMMEDIATE: the write lock first, as kvperf's update takes it.
        let tx = self
            .conn
            .transaction_with_behavior(::rusqlite::TransactionBehavior::Immediate)
            .map_err(failed)?;
        {
            let mut stmt = tx.prepare_cached(SELECT_ONE).map_err(failed)?;
            let mut rows = stmt.query([key]).map_err(failed)?;
            let Some(row) = rows.next().map_err(failed)? else {
                return Ok(false);
            };
            let stored = row.get_ref(0).map_err(failed)?;
            self.merge
                .merge(stored.as_blob().map_err(failed)?, values)?;
        }
        let mut stmt = tx.prepare_cached(UPDATE).map_err(failed)?;
        stmt.execute((key, &self.merge.encoded[..]))
            .map_err(failed)?;
        drop(stmt);
        tx.commit().map(|()| true).map_err(failed)
    }
}

struct FjallBare<'a> {
    db: &'a ::fjall::SingleWriterTxDatabase,
    keyspace: &'a ::fjall::SingleWriterTxKeyspace,
    persist: Option<::fjall::PersistMode>,
    merge: Merge,
}

impl<'a> FjallBare<'a> {
    fn new(engine: &'a kvperf::engine::embedded::fjall::FjallEngine) -> Self {
        Self {
            db: engine.database(),
            keyspace: engine.keyspace(),
            persist: engine.persist_mode(),
            merge: Merge::default(),
        }
    }
}

impl Bare for FjallBare<'_> {
    fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome {
        match self.keyspace.inner().get(key).map_err(failed)? {
            Some(value) => decoded(&value, fields, out),
            None => Ok(false),
        }
    }

    fn update(&mut self, key: &[u8], values: &Record) -> Outcome {
        use ::fjall::Readable;
        let mut tx = self.db.write_tx();
        match tx.get(self.keyspace.inner(), key).map_err(failed)? {
            Some(stored) => self.merge.merge(&stored, values)?,
            None => return Ok(false),
        }
        tx.insert(self.keyspace, key, &self.merge.encoded[..]);
        tx.commit().map_err(failed)?;
        if let Some(mode) = self.persist {
            self.db.persist(mode).map_err(failed)?;
        }
        Ok(true)
    }
}

/// redb's database, held for the thread; each write transaction takes the
/// durability kvperf's would (`durable_interval_ms`).
struct RedbBare<'a> {
    engine: &'a kvperf::engine::embedded::redb::RedbEngine,
    db: std::sync::RwLockReadGuard<'a, ::redb::Database>,
    merge: Merge,
}

impl<'a> RedbBare<'a> {
    fn new(engine: &'a kvperf::engine::embedded::redb::RedbEngine) -> anyhow::Result<Self> {
        Ok(Self {
            engine,
            db: engine.db().map_err(|e| anyhow::anyhow!("{e:?}"))?,
            merge: Merge::default(),
        })
    }
}

impl Bare for RedbBare<'_> {
    fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome {
        use ::redb::ReadableDatabase;
        use kvperf::engine::embedded::redb::TABLE;
        let txn = self.db.begin_read().map_err(failed)?;
        let table = txn.open_table(TABLE).map_err(failed)?;
        match table.get(key).map_err(failed)? {
            Some(value) => decoded(value.value(), fields, out),
            None => Ok(false),
        }
    }

    fn update(&mut self, key: &[u8], values: &Record) -> Outcome {
        use ::redb::ReadableTable;
        use kvperf::engine::embedded::redb::TABLE;
        let mut txn = self.db.begin_write().map_err(failed)?;
        txn.set_durability(self.engine.next_durability())
            .map_err(failed)?;
        txn.set_two_phase_commit(self.engine.two_phase_commit());
        {
            let mut table = txn.open_table(TABLE).map_err(failed)?;
            let merged = match table.get(key).map_err(failed)? {
                Some(stored) => Some(self.merge.merge(stored.value(), values)),
                None => None,
            };
            match merged {
                Some(Ok(())) => {
                    table.insert(key, &self.merge.encoded[..]).map_err(failed)?;
                }
                other => {
                    drop(table);
                    txn.abort().map_err(failed)?;
                    return other.map_or(Ok(false), |m| m.map(|()| false));
                }
            }
        }
        txn.commit().map(|()| true).map_err(failed)
    }
}

/// A WiredTiger session and its overwrite cursor on `table:usertable`,
/// driven by WiredTiger's own cursor calls (through the C shim, which
/// only forwards them: `WT_CURSOR::search`, `update`, `reset`, ...).
struct WtBare<'a> {
    session: kvperf::engine::embedded::wiredtiger::Session<'a>,
    cursor: *mut c_void,
    merge: Merge,
}

impl<'a> WtBare<'a> {
    fn new(engine: &'a kvperf::engine::embedded::wiredtiger::WtEngine) -> anyhow::Result<Self> {
        let mut session = engine.session()?;
        let cursor = session.cursor().map_err(|e| anyhow::anyhow!("{e:?}"))?;
        Ok(Self {
            session,
            cursor,
            merge: Merge::default(),
        })
    }

    /// The value at the cursor after a successful search.
    ///
    /// # Safety
    /// `v`/`vl` came from a search of this cursor that has not moved since.
    unsafe fn value<'v>(v: *const u8, vl: usize) -> &'v [u8] {
        if vl == 0 {
            &[]
        } else {
            // SAFETY: the caller's guarantee.
            unsafe { std::slice::from_raw_parts(v, vl) }
        }
    }

    /// One attempt of the update transaction; `None`: rolled back on a
    /// conflict, try again.
    fn try_update(&mut self, key: &[u8], values: &Record) -> Option<Outcome> {
        use kvperf::engine::embedded::wiredtiger::{
            ffi, WT_NOTFOUND, WT_PREPARE_CONFLICT, WT_ROLLBACK,
        };
        let (session, cursor) = (self.session.handle(), self.cursor);
        // SAFETY: this thread's session and cursor; the stored value is
        // merged before the cursor moves.
        unsafe {
            let code = ffi::kvperf_wt_begin(session, std::ptr::null());
            if code != 0 {
                return Some(Err(format!("begin_transaction: {code}")));
            }
            let (mut v, mut vl) = (std::ptr::null(), 0);
            let mut code = ffi::kvperf_wt_search(cursor, key.as_ptr(), key.len(), &mut v, &mut vl);
            if code == 0 {
                if let Err(why) = self.merge.merge(Self::value(v, vl), values) {
                    ffi::kvperf_wt_rollback(session);
                    return Some(Err(why));
                }
                let e = &self.merge.encoded;
                code = ffi::kvperf_wt_update_here(cursor, e.as_ptr(), e.len());
            }
            if code != 0 {
                ffi::kvperf_wt_rollback(session);
                return match code {
                    WT_ROLLBACK | WT_PREPARE_CONFLICT => None,
                    WT_NOTFOUND => Some(Ok(false)),
                    _ => Some(Err(format!("update: WiredTiger error {code}"))),
                };
            }
            match ffi::kvperf_wt_commit(session, std::ptr::null()) {
                0 => Some(Ok(true)),
                WT_ROLLBACK | WT_PREPARE_CONFLICT => None,
                code => Some(Err(format!("commit_transaction: WiredTiger error {code}"))),
            }
        }
    }
}

impl Bare for WtBare<'_> {
    fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> Outcome {
        use kvperf::engine::embedded::wiredtiger::{ffi, WT_NOTFOUND};
        let (mut v, mut vl) = (std::ptr::null(), 0);
        // SAFETY: this thread's cursor; the value is decoded before the
        // cursor is reset.
        unsafe {
            let code = ffi::kvperf_wt_search(self.cursor, key.as_ptr(), key.len(), &mut v, &mut vl);
            let outcome = match code {
                0 => decoded(Self::value(v, vl), fields, out),
                WT_NOTFOUND => Ok(false),
                _ => Err(format!("search: WiredTiger error {code}")),
            };
            ffi::kvperf_wt_reset(self.cursor);
            outcome
        }
    }

    fn update(&mut self, key: &[u8], values: &Record) -> Outcome {
        // As kvperf's update: up to 100 attempts, backing off between.
        for attempt in 0..100 {
            match self.try_update(key, values) {
                Some(outcome) => return outcome,
                None => kvperf::engine::embedded::wiredtiger::back_off(attempt),
            }
        }
        Err("update: WiredTiger rolled back 100 attempts".into())
    }
}
