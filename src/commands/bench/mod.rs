//! `kvperf bench`: db_bench's benchmarks, flags and output on kvperf's
//! runner and engines. Each benchmark's result line is printed (and the
//! JSON file rewritten) as soon as it finishes, so an interrupted sequence
//! keeps what it measured.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::cli::BenchArgs;
use crate::engine::{self, Engine, EngineInfo, EngineSpec, OpenOptions};
use crate::error::InputError;
use crate::host::HostInfo;
use crate::measure::accounting::{self, Accounting, Snapshot};
use crate::measure::{OpGroup, OpHistograms, OpKind, Outcome};
use crate::output::dbbench_text::{render_result_line, DbBenchHistogram, ResultLine};
use crate::output::{self, Provenance};
use crate::runner::{self, OpsLog, RunSpec, StatusOptions};
use crate::workload::dbbench::{BenchConfig, BenchWorkload, Benchmark};
use crate::workload::properties::Properties;

/// db_bench's histogram order (its `OperationType` enum) and names.
const HISTOGRAM_ORDER: [(OpKind, &str); 5] = [
    (OpKind::Read, "read"),
    (OpKind::Write, "write"),
    (OpKind::Delete, "delete"),
    (OpKind::Seek, "seek"),
    (OpKind::Update, "update"),
];

#[derive(Debug, Serialize)]
struct BenchReport {
    kvperf: Provenance,
    command: &'static str,
    started_at_unix_ms: u128,
    engine: EngineInfo,
    /// Every db_bench flag with its effective value.
    flags: BTreeMap<String, String>,
    seed_base: u64,
    host: HostInfo,
    results: Vec<BenchResult>,
}

#[derive(Debug, Serialize)]
struct BenchResult {
    #[serde(flatten)]
    line: ResultLine,
    threads: usize,
    /// Reads, found keys, writes and bytes over all measured threads (the
    /// text message shows the first thread's, as db_bench's does).
    totals: BTreeMap<&'static str, u64>,
    latency: BTreeMap<String, Latency>,
    /// Device and process I/O, CPU and energy of this benchmark's window.
    accounting: Accounting,
}

#[derive(Debug, Serialize)]
struct Latency {
    count: u64,
    failed: u64,
    average_us: f64,
    /// Interpolated in db_bench's buckets, as db_bench prints them.
    db_bench_percentiles_us: BTreeMap<String, f64>,
    /// From the exact HdrHistogram.
    exact_percentiles_us: BTreeMap<String, f64>,
    max_us: f64,
    /// Base64 HdrHistogram V2 (nanoseconds), all operations of this type.
    hdr_histogram: String,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let benches = parse_benchmarks(&args.benchmarks)?;
    if !(args.compression_ratio > 0.0 && args.compression_ratio <= 1.0) {
        return Err(InputError::Invalid(format!(
            "--compression_ratio={} must be in (0, 1]",
            args.compression_ratio
        ))
        .into());
    }
    let cfg = BenchConfig {
        num: args.num,
        reads: if args.reads < 0 {
            args.num
        } else {
            args.reads as u64
        },
        key_size: args.key_size as usize,
        value_size: args.value_size as usize,
        compression_ratio: args.compression_ratio,
        read_write_percent: args.readwritepercent,
        seek_nexts: args.seek_nexts,
        duration: (args.duration > 0).then(|| Duration::from_secs(args.duration)),
        write_rate_limit: args.benchmark_write_rate_limit,
    };
    let props = engine_properties(&args);
    let spec = engine::find(&args.engine)?;
    let db = args.db.clone().unwrap_or_else(default_db_dir);
    if spec.uses_data_dir {
        prepare_store(spec, &db, args.use_existing_db)?;
    }
    let seed_base = match args.seed {
        0 => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
        s => s,
    };
    let open = || {
        engine::open(
            spec,
            &OpenOptions {
                db_dir: &db,
                properties: &props,
            },
        )
    };
    let mut engine = open()?;
    print_header(&args, &cfg, engine.as_ref(), &db);

    let mut report = BenchReport {
        kvperf: Provenance::current(),
        command: "bench",
        started_at_unix_ms: output::unix_ms(),
        engine: engine.info(),
        flags: flag_map(&args, &db),
        seed_base,
        host: HostInfo::collect(spec.uses_data_dir.then_some(db.as_path())),
        results: Vec::new(),
    };
    // db_bench seeds thread i of the run with seed_base + (threads started so far).
    let mut threads_started = 0u64;
    for (index, &bench) in benches.iter().enumerate() {
        if bench.needs_fresh_db() {
            if args.use_existing_db {
                println!("{:<12} : skipped (--use_existing_db is true)", bench.name());
                continue;
            }
            if index > 0 && spec.uses_data_dir {
                engine.close()?;
                drop(engine);
                engine::wipe_store(&db)?;
                engine = open()?;
            }
        }
        if bench == Benchmark::WaitForCompaction {
            // db_bench's two lines; nothing is measured.
            println!("waitforcompaction({}): started", db.display());
            engine.settle(false)?;
            println!(
                "waitforcompaction({}): finished with status (OK)",
                db.display()
            );
            continue;
        }
        if args.drop_caches {
            crate::host::drop_page_cache("--drop_caches")?;
        }
        let result = run_one(
            &args,
            &cfg,
            bench,
            engine.as_ref(),
            seed_base + threads_started,
            Where {
                device: report.host.block_device(),
                data_dir: spec.uses_data_dir.then_some(db.as_path()),
            },
        )?;
        threads_started += result.threads as u64;
        print!("{}", render_result_line(&result.line));
        if matches!(
            bench,
            Benchmark::ReadRandom | Benchmark::ReadWhileWriting | Benchmark::SeekRandom
        ) {
            // db_bench's "(N of M found)\n" message ends in its own newline.
            println!();
        }
        if args.histogram {
            print_histograms(&result.histograms);
        }
        std::io::stdout().flush()?;
        report.results.push(result.into_json());
        if let Some(path) = &args.json {
            output::write_atomically(path, output::json::to_pretty(&report).as_bytes())?;
        }
    }
    if let Some(stats) = engine.statistics_text() {
        println!("STATISTICS:\n{stats}");
    }
    engine.close()
}

struct Measured {
    line: ResultLine,
    threads: usize,
    totals: BTreeMap<&'static str, u64>,
    histograms: OpHistograms,
    accounting: Accounting,
}

impl Measured {
    fn into_json(self) -> BenchResult {
        let latency = HISTOGRAM_ORDER
            .iter()
            .filter_map(|&(kind, name)| {
                Some((
                    name.to_string(),
                    latency_summary(self.histograms.get(kind)?),
                ))
            })
            .collect();
        BenchResult {
            line: self.line,
            threads: self.threads,
            totals: self.totals,
            latency,
            accounting: self.accounting,
        }
    }
}

/// The data directory and its block device, for I/O accounting.
#[derive(Clone, Copy)]
struct Where<'a> {
    device: Option<&'a str>,
    data_dir: Option<&'a Path>,
}

fn run_one(
    args: &BenchArgs,
    cfg: &BenchConfig,
    bench: Benchmark,
    engine: &dyn Engine,
    seed: u64,
    at: Where,
) -> anyhow::Result<Measured> {
    let workload = BenchWorkload::new(bench, cfg, engine, seed);
    let foreground = args.threads as usize;
    let threads = bench.total_threads(foreground);
    let per_thread = cfg.ops_per_thread(bench);
    let spec = RunSpec {
        threads,
        operations: per_thread.map(|n| n * foreground as u64),
        target_ops_per_sec: 0.0,
        warmup: Duration::ZERO,
        max_execution: if per_thread.is_none() {
            cfg.duration
        } else {
            None
        },
        status: StatusOptions {
            interval: None,
            progress: !args.no_progress && std::io::stderr().is_terminal(),
            label: String::new(),
            ops_log: (args.report_interval_seconds > 0).then(|| OpsLog {
                interval: Duration::from_secs(args.report_interval_seconds),
                path: args.report_file.clone(),
            }),
        },
    };
    let before = Snapshot::take(at.device);
    let outcome = runner::execute(&workload, &spec)?;
    let accounting = before.until(
        &Snapshot::take(at.device),
        at.device,
        outcome.operations,
        workload.logical_bytes(),
        at.data_dir,
    );
    accounting::warn_unreadable(&accounting);
    let seconds = outcome.runtime.as_secs_f64().max(1e-9);
    let operations = outcome.operations.max(1); // db_bench: "at least one op"
    let tally = &workload.tally;
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    let bytes = load(&tally.bytes);
    let totals = BTreeMap::from([
        ("reads", load(&tally.reads)),
        ("found", load(&tally.found)),
        ("writes", load(&tally.writes)),
        ("bytes", bytes),
    ]);
    report_failures(&outcome.histograms);
    Ok(Measured {
        line: ResultLine {
            name: bench.name().to_string(),
            micros_per_op: outcome.thread_seconds * 1e6 / operations as f64,
            ops_per_sec: operations as f64 / seconds,
            seconds,
            operations,
            mb_per_sec: (bytes > 0).then(|| bytes as f64 / 1_048_576.0 / seconds),
            message: workload.message(),
        },
        threads,
        totals,
        histograms: outcome.histograms,
        accounting,
    })
}

fn parse_benchmarks(list: &str) -> Result<Vec<Benchmark>, InputError> {
    let benches: Vec<Benchmark> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Benchmark::parse)
        .collect::<Result<_, _>>()?;
    if benches.is_empty() {
        return Err(InputError::Invalid("--benchmarks is empty".into()));
    }
    Ok(benches)
}

/// db_bench's default `--db`: /tmp/rocksdbtest-<uid>/dbbench.
fn default_db_dir() -> PathBuf {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    PathBuf::from(format!("/tmp/rocksdbtest-{uid}/dbbench"))
}

/// db_bench destroys the database first unless `--use_existing_db`; kvperf
/// does so only for a store it created, and checks an existing one is there.
fn prepare_store(spec: &EngineSpec, db: &Path, use_existing: bool) -> anyhow::Result<()> {
    if use_existing {
        if !engine::holds_store(db) {
            return Err(InputError::Invalid(format!(
                "--use_existing_db=1 but --db '{}' holds no database; run a fill benchmark first",
                db.display()
            ))
            .into());
        }
        return engine::prepare_data_dir(db, spec.name);
    }
    engine::prepare_empty_store(db, spec.name)
}

/// RocksDB options db_bench sets to values other than RocksDB's defaults.
const DB_BENCH_OPTIONS: &str =
    "level_compaction_dynamic_level_bytes=false;enable_pipelined_write=true;\
     delayed_write_rate=8388608;hard_pending_compaction_bytes_limit=137438953472;\
     table_cache_numshardbits=4";

/// The engine options db_bench's flags set, as kvperf engine properties.
fn engine_properties(args: &BenchArgs) -> Properties {
    let mut props = Properties::new();
    if args.engine != "rocksdb" {
        return props;
    }
    let bloom_bits = if args.bloom_bits > 0.0 {
        args.bloom_bits as u64
    } else {
        0
    };
    for (name, value) in [
        ("block_cache_size", args.cache_size.to_string()),
        ("bloom_bits", bloom_bits.to_string()),
        ("compression", args.compression_type.clone()),
        ("write_buffer_size", args.write_buffer_size.to_string()),
        ("max_background_jobs", args.max_background_jobs.to_string()),
        ("wal", (!args.disable_wal).to_string()),
        ("sync", args.sync.to_string()),
        ("statistics", args.statistics.to_string()),
        // Where db_bench's defaults differ from RocksDB's own (db_bench_tool.cc
        // InitializeOptionsFromFlags; see docs/semantics.md).
        ("cache_type", "hyper_clock".to_string()),
        ("auto_readahead_size", "false".to_string()),
        ("options", DB_BENCH_OPTIONS.to_string()),
    ] {
        props.set(&format!("rocksdb.{name}"), &value);
    }
    props
}

fn flag_map(args: &BenchArgs, db: &Path) -> BTreeMap<String, String> {
    // Every flag, from the parsed arguments themselves, so none is forgotten.
    let serde_json::Value::Object(fields) =
        serde_json::to_value(args).expect("flags always serialize")
    else {
        unreachable!("BenchArgs serializes as an object")
    };
    let mut flags: BTreeMap<String, String> = fields
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| match v {
            serde_json::Value::String(text) => (k, text),
            other => (k, other.to_string()),
        })
        .collect();
    flags.insert("db".into(), db.display().to_string());
    flags
}

fn print_header(args: &BenchArgs, cfg: &BenchConfig, engine: &dyn Engine, db: &Path) {
    let info = engine.info();
    let compressed = (cfg.value_size as f64 * cfg.compression_ratio) as u64;
    let raw_mb = (cfg.key_size + cfg.value_size) as f64 * cfg.num as f64 / 1_048_576.0;
    println!("kvperf:     {} (db_bench mode)", env!("CARGO_PKG_VERSION"));
    println!("Engine:     {} {}", info.name, info.version);
    println!("Keys:       {} bytes each", cfg.key_size);
    println!(
        "Values:     {} bytes each ({compressed} bytes after compression)",
        cfg.value_size
    );
    println!("Entries:    {}", cfg.num);
    println!("RawSize:    {raw_mb:.1} MB (estimated)");
    println!("Compression: {}", args.compression_type);
    println!("DB path: [{}]", db.display());
}

fn all_operations(group: &OpGroup) -> hdrhistogram::Histogram<u64> {
    let mut all = group.ok.clone();
    let _ = all.add(&group.failed);
    all
}

fn print_histograms(histograms: &OpHistograms) {
    for (kind, name) in HISTOGRAM_ORDER {
        if let Some(group) = histograms.get(kind) {
            let h = DbBenchHistogram::from_nanos(&all_operations(group));
            println!("Microseconds per {name}:\n{}", h.render());
        }
    }
}

fn latency_summary(group: &OpGroup) -> Latency {
    let all = &all_operations(group);
    let buckets = DbBenchHistogram::from_nanos(all);
    let points = [
        ("p50", 50.0),
        ("p75", 75.0),
        ("p99", 99.0),
        ("p99.9", 99.9),
        ("p99.99", 99.99),
    ];
    Latency {
        count: all.len(),
        failed: group.count(Outcome::Error),
        average_us: all.mean() / 1000.0,
        db_bench_percentiles_us: points
            .iter()
            .map(|&(n, p)| (n.to_string(), buckets.percentile(p)))
            .collect(),
        exact_percentiles_us: points
            .iter()
            .map(|&(n, p)| {
                (
                    n.to_string(),
                    all.value_at_quantile(p / 100.0) as f64 / 1000.0,
                )
            })
            .collect(),
        max_us: all.max() as f64 / 1000.0,
        hdr_histogram: output::encode_histogram(all),
    }
}

/// Engine errors are counted, not fatal; say how many on stderr.
fn report_failures(histograms: &OpHistograms) {
    for (kind, group) in histograms.iter() {
        let failed = group.count(Outcome::Error);
        if failed > 0 {
            let why = group.first_error.as_deref().unwrap_or("unknown error");
            eprintln!(
                "kvperf: {failed} {} operations failed (first: {why})",
                kind.ycsb_name()
            );
        }
    }
}
