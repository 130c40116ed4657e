//! Runs a plan's steps unattended: each measured step is a child kvperf
//! process (`kvperf load|run|bench`, as a user would type it), so a step
//! starts from a fresh process like a YCSB or db_bench invocation, and its
//! command line is recorded for reproduction. Each finished step becomes one
//! durable line in the results file; a rerun skips the steps already there.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::expand::{self, Step, StepKind};
use super::{Driver, LoadedPlan, Settle};
use crate::engine;
use crate::error::InputError;
use crate::host::HostInfo;
use crate::output::{decode_histogram, unix_ms, Provenance};
use crate::results::{self, Appender, LatencySummary, PlanId, Record, StepId, Summary};

pub struct RunOptions {
    pub results: PathBuf,
    pub scale: f64,
    pub db_overrides: Vec<(String, PathBuf)>,
}

/// A plan ready to run: its steps at the chosen scale and its identity.
pub struct Prepared {
    pub loaded: LoadedPlan,
    pub steps: Vec<Step>,
    pub id: PlanId,
}

pub fn prepare(loaded: LoadedPlan, opts: &RunOptions) -> anyhow::Result<Prepared> {
    if !(opts.scale > 0.0 && opts.scale.is_finite()) {
        return Err(InputError::Invalid(format!(
            "--scale {} must be a number greater than 0 (e.g. 0.001)",
            opts.scale
        ))
        .into());
    }
    for (name, _) in &opts.db_overrides {
        expand::check_config_name(&loaded.plan, name).map_err(InputError::Invalid)?;
    }
    let steps = expand::steps(&loaded, opts.scale, &opts.db_overrides)?;
    let id = PlanId {
        name: loaded.plan.name.clone(),
        fingerprint: expand::fingerprint(&loaded.plan, opts.scale, &steps),
        scale: opts.scale,
        file: loaded.path.display().to_string(),
    };
    Ok(Prepared { loaded, steps, id })
}

/// Engines the plan names that this binary lacks: one clear error.
pub fn check_engines(p: &Prepared) -> Result<(), InputError> {
    let available: Vec<&str> = engine::registry().iter().map(|s| s.name).collect();
    for step in &p.steps {
        if !available.contains(&step.engine.as_str()) {
            return Err(InputError::Invalid(format!(
                "plan '{}' needs engine '{}' (config '{}'), which this kvperf does not have yet; available: {}",
                p.id.name,
                step.engine,
                step.config,
                available.join(", ")
            )));
        }
    }
    Ok(())
}

pub fn run(p: &Prepared, opts: &RunOptions) -> anyhow::Result<()> {
    check_engines(p)?;
    let loaded = results::read(&opts.results)?;
    if let Some(other) = loaded
        .records
        .iter()
        .find(|r| r.plan.fingerprint != p.id.fingerprint)
    {
        return Err(InputError::Invalid(format!(
            "results file '{}' holds results of another plan ('{}' at scale {}, fingerprint {}; this is '{}' at scale {}, fingerprint {}); use a new --results file",
            opts.results.display(),
            other.plan.name,
            other.plan.scale,
            other.plan.fingerprint,
            p.id.name,
            p.id.scale,
            p.id.fingerprint
        ))
        .into());
    }
    if loaded.torn_tail > 0 {
        eprintln!(
            "kvperf: dropping an incomplete last line ({} bytes) of '{}': a step interrupted while it was written",
            loaded.torn_tail,
            opts.results.display()
        );
    }
    let done: std::collections::BTreeSet<String> =
        loaded.records.iter().map(|r| r.step.id.clone()).collect();
    let plan = &p.loaded.plan;
    if plan.drop_caches && p.steps.iter().any(|s| !done.contains(&s.id)) {
        // Fail now, not after the load.
        crate::host::drop_page_cache("plan drop_caches")?;
    }
    let mut out = Appender::open(&opts.results, &loaded)?;
    let total = p.steps.len();
    let started = Instant::now();
    let mut ran = 0u32;
    let mut ran_time = Duration::ZERO;
    for (index, step) in p.steps.iter().enumerate() {
        if done.contains(&step.id) {
            eprintln!("[{}/{total}] {}: done earlier, skipped", index + 1, step.id);
            continue;
        }
        let remaining = p.steps[index..]
            .iter()
            .filter(|s| !done.contains(&s.id))
            .count();
        let eta = (ran > 0).then(|| ran_time / ran * remaining as u32);
        eprintln!(
            "[{}/{total}] {} ({} threads) - elapsed {}, ETA {}",
            index + 1,
            step.id,
            step.threads,
            clock(started.elapsed()),
            eta.map_or("-".into(), clock)
        );
        let step_started = Instant::now();
        let record = run_step(p, step, &opts.results).map_err(|e| {
            anyhow::anyhow!(
                "step {} failed: {e:#} (finished steps are kept in '{}'; rerun the same command to resume)",
                step.id,
                opts.results.display()
            )
        })?;
        out.append(&record)?;
        eprintln!("        {}", one_line(&record.summary));
        ran += 1;
        ran_time += step_started.elapsed();
    }
    eprintln!(
        "plan '{}' complete: {} steps in '{}' ({} run now, in {}); next: kvperf report {} --out DIR",
        p.id.name,
        total,
        opts.results.display(),
        ran,
        clock(started.elapsed()),
        opts.results.display()
    );
    Ok(())
}

fn run_step(p: &Prepared, step: &Step, results: &Path) -> anyhow::Result<Record> {
    let started_at = unix_ms();
    let plan = &p.loaded.plan;
    let (summary, command, result) = match step.kind {
        StepKind::Precondition => (precondition(step)?, Vec::new(), serde_json::Value::Null),
        StepKind::Load | StepKind::Run => {
            if step.kind == StepKind::Run && plan.driver == Driver::Ycsb {
                if !engine::holds_store(&step.db) {
                    return Err(InputError::Invalid(format!(
                        "the store in '{}' is gone (a tmpfs after a reboot?); its load is already recorded, so start over with a new --results file",
                        step.db.display()
                    ))
                    .into());
                }
                if plan.settle.waits() {
                    run_child(&settle_args(step, plan.settle.compacts()))?;
                }
                if plan.drop_caches {
                    crate::host::drop_page_cache("plan drop_caches")?;
                }
            }
            if step.kind == StepKind::Load && plan.driver == Driver::Ycsb {
                fresh_store(step)?;
            }
            let json_path = step_output_path(results);
            let args = child_args(plan.driver, plan.settle, plan.drop_caches, step, &json_path);
            run_child(&args)?;
            let text = std::fs::read_to_string(&json_path).with_context(|| {
                format!("the step wrote no result to '{}'", json_path.display())
            })?;
            let _ = std::fs::remove_file(&json_path);
            let result: serde_json::Value =
                serde_json::from_str(&text).context("the step's JSON result does not parse")?;
            (summarize(plan.driver, &result)?, args, result)
        }
    };
    let accounting = results::measured(&result)
        .and_then(|m| m.get("accounting"))
        .and_then(|a| serde_json::from_value(a.clone()).ok());
    let host = match result.get("host") {
        Some(h) => h.clone(),
        None => serde_json::to_value(HostInfo::collect(Some(&step.db)))?,
    };
    Ok(Record {
        kvperf_results: results::FORMAT,
        plan: p.id.clone(),
        step: StepId {
            id: step.id.clone(),
            config: step.config.clone(),
            kind: step.kind.name().to_string(),
            workload: step.workload.clone(),
            label: step.label.clone(),
            threads: step.threads,
            repeat: step.repeat,
            db: step.db.display().to_string(),
        },
        started_at_unix_ms: started_at,
        finished_at_unix_ms: unix_ms(),
        kvperf: serde_json::to_value(Provenance::current())?,
        command,
        summary,
        accounting,
        host,
        engine: result.get("engine").cloned().unwrap_or_default(),
        result,
    })
}

/// The child command line of a load or run step (without the program).
pub fn child_args(
    driver: Driver,
    settle: Settle,
    drop_caches: bool,
    step: &Step,
    json: &Path,
) -> Vec<String> {
    let mut args = Vec::new();
    match driver {
        Driver::Ycsb => {
            args.push(
                if step.kind == StepKind::Load {
                    "load"
                } else {
                    "run"
                }
                .to_string(),
            );
            args.extend(["--engine".into(), step.engine.clone()]);
            args.extend(["--db".into(), step.db.display().to_string()]);
            args.extend(["--threads".into(), step.threads.to_string()]);
            for (k, v) in &step.properties {
                args.extend(["-p".into(), format!("{k}={v}")]);
            }
            args.extend(["--format".into(), "json".into()]);
            args.extend(["--output".into(), json.display().to_string()]);
        }
        Driver::DbBench => {
            let load = step.kind == StepKind::Load;
            let benchmarks = if settle.waits() && !load {
                format!("waitforcompaction,{}", step.workload)
            } else {
                step.workload.clone()
            };
            args.push("bench".into());
            args.push(format!("--engine={}", step.engine));
            args.push(format!("--db={}", step.db.display()));
            args.push(format!("--benchmarks={benchmarks}"));
            args.push(format!("--threads={}", step.threads));
            args.push(format!("--use_existing_db={}", u8::from(!load)));
            if drop_caches && !load {
                args.push("--drop_caches=1".into());
            }
            for (k, v) in &step.properties {
                args.push(format!("--{k}={v}"));
            }
            args.push(format!("--json={}", json.display()));
        }
    }
    args
}

fn settle_args(step: &Step, compact: bool) -> Vec<String> {
    let mut args = vec!["settle".to_string(), "--engine".into(), step.engine.clone()];
    if compact {
        args.push("--compact".into());
    }
    args.extend(["--db".into(), step.db.display().to_string()]);
    let prefix = format!("{}.", step.engine);
    for (k, v) in step
        .properties
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
    {
        args.extend(["-p".into(), format!("{k}={v}")]);
    }
    args
}

/// Runs `kvperf ARGS`; it dies with this process (so `kill -9` of a plan
/// leaves no orphan writing to the store). Its warnings are passed on; its
/// error line becomes this step's error.
fn run_child(args: &[String]) -> anyhow::Result<()> {
    use std::io::BufRead;
    let exe = std::env::current_exe().context("cannot find the kvperf executable")?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("cannot start kvperf for the step")?;
    let mut error = None;
    if let Some(stderr) = child.stderr.take() {
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            match line.strip_prefix("kvperf: ") {
                Some(msg) if !msg.starts_with("warning:") => error = Some(msg.to_string()),
                _ => eprintln!("{line}"),
            }
        }
    }
    let status = child.wait().context("lost the step's kvperf process")?;
    if status.success() {
        return Ok(());
    }
    Err(anyhow::anyhow!(error.unwrap_or_else(|| format!(
        "`kvperf {}` {}",
        args.first().map_or("", String::as_str),
        match status.code() {
            Some(c) => format!("exited with {c}"),
            None => "was killed".into(),
        }
    ))))
}

/// A load starts from an empty store: kvperf empties a directory it created,
/// and refuses any other (never deleting what it did not make).
fn fresh_store(step: &Step) -> anyhow::Result<()> {
    let spec = engine::find(&step.engine)?;
    if spec.uses_data_dir {
        engine::prepare_empty_store(&step.db, spec.name)?;
    }
    Ok(())
}

fn step_output_path(results: &Path) -> PathBuf {
    let name = results
        .file_name()
        .map_or("results".into(), |n| n.to_string_lossy().into_owned());
    results.with_file_name(format!(".{name}.step-{}.json", std::process::id()))
}

/// Throughput and latency, from a YCSB or db_bench JSON result.
pub fn summarize(driver: Driver, result: &serde_json::Value) -> anyhow::Result<Summary> {
    let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0);
    let part = results::measured(result).context("no measured result in the step's output")?;
    let (operations, runtime_s, ops_per_sec) = match driver {
        Driver::Ycsb => {
            let overall = part.get("overall").context("no 'overall' in the result")?;
            (
                num(overall, "operations"),
                num(overall, "runtime_ms") / 1000.0,
                num(overall, "throughput_ops_per_sec"),
            )
        }
        Driver::DbBench => (
            num(part, "operations"),
            num(part, "seconds"),
            num(part, "ops_per_sec"),
        ),
    };
    let mut latency_us = std::collections::BTreeMap::new();
    for (op, encoded) in results::op_histograms(result) {
        let h = decode_histogram(encoded)?;
        if !h.is_empty() {
            latency_us.insert(op, LatencySummary::of(&h));
        }
    }
    Ok(Summary {
        operations: operations as u64,
        runtime_s,
        ops_per_sec,
        latency_us,
    })
}

/// Writes `fill_bytes` of incompressible data next to the store and syncs
/// it, as SSD studies precondition a drive before measuring.
fn precondition(step: &Step) -> anyhow::Result<Summary> {
    use rand::{RngCore, SeedableRng};
    let spec = engine::find(&step.engine)?;
    engine::prepare_data_dir(&step.db, spec.name)?;
    let path = step.db.join(engine::PRECONDITION_FILE);
    let started = Instant::now();
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&path)?;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
        let mut block = vec![0u8; 1 << 20];
        let mut left = step.fill_bytes;
        while left > 0 {
            rng.fill_bytes(&mut block);
            let n = left.min(block.len() as u64) as usize;
            file.write_all(&block[..n])?;
            left -= n as u64;
        }
        file.sync_all()
    };
    write().with_context(|| {
        format!(
            "precondition: cannot write {} bytes to '{}'",
            step.fill_bytes,
            path.display()
        )
    })?;
    let secs = started.elapsed().as_secs_f64();
    let mib = step.fill_bytes as f64 / 1_048_576.0;
    Ok(Summary {
        operations: mib.ceil() as u64,
        runtime_s: secs,
        ops_per_sec: if secs > 0.0 { mib / secs } else { 0.0 },
        latency_us: Default::default(),
    })
}

fn one_line(s: &Summary) -> String {
    let mut line = format!(
        "{:.0} ops/s, {} ops in {:.1} s",
        s.ops_per_sec, s.operations, s.runtime_s
    );
    for (op, l) in &s.latency_us {
        line.push_str(&format!("; {op} avg {:.0} us p99 {:.0} us", l.avg, l.p99));
    }
    line
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::encode_histogram;

    fn encoded(values: &[u64]) -> String {
        let mut h = crate::measure::new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        encode_histogram(&h)
    }

    #[test]
    fn summarizes_both_drivers_outputs() {
        let ycsb = serde_json::json!({
            "overall": { "operations": 200, "runtime_ms": 2000.0, "throughput_ops_per_sec": 100.0 },
            "histograms": {
                "READ": encoded(&[10_000, 20_000]),
                "READ-FAILED": encoded(&[5_000_000]),
                "Intended-READ": encoded(&[9_000_000]),
            },
        });
        let s = summarize(Driver::Ycsb, &ycsb).unwrap();
        assert_eq!(
            (s.operations, s.runtime_s, s.ops_per_sec),
            (200, 2.0, 100.0)
        );
        assert_eq!(s.latency_us.keys().collect::<Vec<_>>(), ["read"]);
        assert!(
            s.latency_us["read"].max < 21.0,
            "failed and intended groups left out"
        );

        let db_bench = serde_json::json!({ "results": [
            { "operations": 1, "seconds": 9.0, "ops_per_sec": 1.0, "latency": {} },
            { "operations": 500, "seconds": 5.0, "ops_per_sec": 100.0,
              "latency": { "read": { "hdr_histogram": encoded(&[3_000]) },
                           "write": { "hdr_histogram": encoded(&[7_000]) } } },
        ]});
        let s = summarize(Driver::DbBench, &db_bench).unwrap();
        assert_eq!(
            (s.operations, s.runtime_s, s.ops_per_sec),
            (500, 5.0, 100.0)
        );
        assert_eq!(s.latency_us.keys().collect::<Vec<_>>(), ["read", "write"]);
        assert!(summarize(Driver::DbBench, &serde_json::json!({ "results": [] })).is_err());
    }
}
