//! `kvperf load` and `kvperf run`: properties -> workload -> engine ->
//! runner -> report, in YCSB's shape.

use std::io::IsTerminal;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cli::{Format, YcsbArgs};
use crate::engine::{self, OpenOptions};
use crate::error::InputError;
use crate::host::HostInfo;
use crate::measure::accounting::{self, Snapshot};
use crate::measure::{OpKind, Outcome};
use crate::output::{self, Integrity, Overall, Provenance, RunReport};
use crate::runner::{self, RunSpec, StatusOptions};
use crate::workload::properties::Properties;
use crate::workload::ycsb::config::unknown_property_warnings;
use crate::workload::ycsb::{CoreConfig, CoreWorkload, Phase};

/// Everything the client (not the workload) reads from properties and flags.
struct ClientSettings {
    threads: usize,
    target: u64,
    max_execution: Option<Duration>,
    warmup: Duration,
    status_interval: Duration,
    percentiles: Vec<f64>,
    report_intended: bool,
    seed: u64,
}

impl ClientSettings {
    fn from(args: &YcsbArgs, p: &Properties) -> Result<Self, InputError> {
        let threads = match args.threads {
            Some(n) => n,
            None => p.u64("threadcount", 1)?,
        };
        if threads == 0 {
            return Err(InputError::property(
                "threadcount",
                "must be greater than 0",
            ));
        }
        let target = match args.target {
            Some(t) => t,
            None => p.u64("target", 0)?,
        };
        let max_execution = match p.u64("maxexecutiontime", 0)? {
            0 => None,
            s => Some(Duration::from_secs(s)),
        };
        let warmup = p.f64("warmuptime", 0.0)?;
        if warmup < 0.0 {
            return Err(InputError::property("warmuptime", "is negative"));
        }
        let status_interval = p.u64("status.interval", 10)?.max(1);
        let percentiles =
            parse_percentiles(&p.string("hdrhistogram.percentiles", "50,95,99,99.9,99.99"))?;
        // YCSB's measurement.interval: op, intended or both. kvperf reports
        // both whenever a target is set, unless told "op".
        let report_intended = match p.string("measurement.interval", "both").as_str() {
            "op" => false,
            "intended" | "both" => target > 0,
            other => {
                return Err(InputError::property(
                    "measurement.interval",
                    format!("'{other}' is not op, intended or both"),
                ))
            }
        };
        let seed = match p.get("seed") {
            Some(_) => p.u64("seed", 0)?,
            None => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        };
        Ok(Self {
            threads: threads as usize,
            target,
            max_execution,
            warmup: Duration::from_secs_f64(warmup),
            status_interval: Duration::from_secs(status_interval),
            percentiles,
            report_intended,
            seed,
        })
    }
}

fn parse_percentiles(text: &str) -> Result<Vec<f64>, InputError> {
    text.split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<f64>() {
            Ok(v) if v > 0.0 && v < 100.0 => Ok(v),
            _ => Err(InputError::property(
                "hdrhistogram.percentiles",
                format!("'{s}' is not a percentile between 0 and 100"),
            )),
        })
        .collect()
}

fn load_properties(args: &YcsbArgs) -> anyhow::Result<Properties> {
    let mut props = Properties::new();
    for file in &args.workload_files {
        if !file.is_file() {
            return Err(InputError::Invalid(format!(
                "workload file '{}' does not exist",
                file.display()
            ))
            .into());
        }
        props.load_file(file)?;
    }
    for assignment in &args.properties {
        props.set_override(assignment)?;
    }
    Ok(props)
}

pub fn run(args: YcsbArgs, phase: Phase) -> anyhow::Result<()> {
    let props = load_properties(&args)?;
    let spec = engine::find(&args.engine)?;
    let prefixes: Vec<String> = engine::registry()
        .iter()
        .map(|s| format!("{}.", s.name))
        .collect();
    let prefixes: Vec<&str> = prefixes.iter().map(String::as_str).collect();
    for warning in unknown_property_warnings(&props, &prefixes) {
        eprintln!("kvperf: warning: {warning}");
    }
    let cfg = CoreConfig::from_properties(&props, phase == Phase::Load)?;
    let client = ClientSettings::from(&args, &props)?;
    if phase == Phase::Run && cfg.operation_count == 0 && client.max_execution.is_none() {
        return Err(InputError::property(
            "operationcount",
            "is required for run (or set maxexecutiontime to run for a fixed time)",
        )
        .into());
    }

    let workload = CoreWorkload::new(cfg, phase, client.seed)?;
    let total_ops = workload.operation_count();
    let operations = (total_ops > 0).then_some(total_ops);
    // YCSB: never more threads than operations.
    let threads = match operations {
        Some(n) => client.threads.min(n as usize),
        None => client.threads,
    };

    let engine = engine::open(
        spec,
        &OpenOptions {
            db_dir: &args.db,
            properties: &props,
        },
    )?;
    let started_at_unix_ms = output::unix_ms();
    let run_spec = RunSpec {
        threads,
        operations,
        target_ops_per_sec: client.target as f64,
        warmup: client.warmup,
        max_execution: client.max_execution,
        status: StatusOptions {
            interval: args.status.then_some(client.status_interval),
            progress: !args.no_progress && std::io::stderr().is_terminal(),
            label: args.label.clone(),
            ops_log: None,
        },
    };
    let data_dir = spec.uses_data_dir.then_some(args.db.as_path());
    let host = HostInfo::collect(data_dir);
    let device = host.block_device();
    let before = Snapshot::take(device);
    let outcome = runner::execute(&workload.bind(engine.as_ref()), &run_spec)?;
    // Closing (a flush for RocksDB) is outside the measured window; YCSB
    // counts it in RunTime, which makes short runs look slow. Its I/O and
    // CPU belong to this run, so accounting includes it.
    engine.close()?;
    let accounting = before.until(
        &Snapshot::take(device),
        device,
        outcome.operations,
        workload.logical_bytes(&outcome.histograms),
        data_dir,
    );
    accounting::warn_unreadable(&accounting);

    let (groups, histograms) = output::summarize_groups(
        &outcome.histograms,
        &client.percentiles,
        client.report_intended,
    );
    let integrity = workload.config().data_integrity.then(|| {
        let verify = outcome.histograms.get(OpKind::Verify);
        let total = verify.map_or(0, |g| g.total_returns());
        let ok = verify.map_or(0, |g| g.count(Outcome::Ok));
        Integrity {
            verified: total,
            failed: total - ok,
        }
    });
    let runtime_s = outcome.runtime.as_secs_f64();
    let report = RunReport {
        kvperf: Provenance::current(),
        command: match phase {
            Phase::Load => "load".into(),
            Phase::Run => "run".into(),
        },
        started_at_unix_ms,
        engine: engine.info(),
        engine_stats: engine.stats(),
        threads,
        target_ops_per_sec: client.target,
        seed: client.seed,
        warmup_s: client.warmup.as_secs_f64(),
        properties: props.as_map().clone(),
        host,
        overall: Overall {
            runtime_ms: runtime_s * 1000.0,
            operations: outcome.operations,
            throughput_ops_per_sec: if runtime_s > 0.0 {
                outcome.operations as f64 / runtime_s
            } else {
                0.0
            },
            hit_time_limit: outcome.hit_time_limit,
        },
        groups,
        integrity: integrity.clone(),
        accounting: Some(accounting),
        histograms,
    };
    let rendered = match args.format {
        Format::Text => output::ycsb_text::render(&report),
        Format::Json => output::json::render(&report),
    };
    match &args.output {
        Some(path) => output::write_atomically(path, rendered.as_bytes())?,
        None => print!("{rendered}"),
    }
    if let Some(Integrity { verified, failed }) = integrity {
        if failed > 0 {
            anyhow::bail!(
                "data integrity check failed: {failed} of {verified} verified reads did not match"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_list_parses_and_rejects() {
        assert_eq!(
            parse_percentiles("50, 99,99.9").unwrap(),
            vec![50.0, 99.0, 99.9]
        );
        assert!(parse_percentiles("50,100").is_err());
        assert!(parse_percentiles("x").is_err());
    }
}
