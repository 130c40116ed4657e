//! `kvperf plan run|show`: a study from a plan file.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::plan::child;
use crate::plan::runner::{self, RunOptions, StepCheck};
use crate::plan::LoadedPlan;
use crate::report;

#[derive(Debug, Args)]
pub struct PlanShowArgs {
    /// Plan file (TOML), or a shipped plan's name (`seed-004`,
    /// `quickstart`: see `kvperf plan list`) when no such file exists.
    pub plan: PathBuf,
    /// Multiply record and operation counts and durations by F (e.g. 0.001).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub scale: f64,
    /// Run configuration NAME on DIR, and only the configurations named by
    /// `--db`; repeatable. NAME is one of the plan's configs, or a new name
    /// that takes the plan's first config's settings (`--db mine=/mnt/nvme/kv`).
    #[arg(long = "db", value_name = "NAME=DIR", value_parser = parse_db_override)]
    pub db: Vec<(String, PathBuf)>,
    /// Change a plan value without editing the file; repeatable. KEY is a
    /// dotted path: `recordcount=1000` (a property), `threads=[1,2]` (every
    /// measured step), `steps.1.operations=5000`, `configs.disk.db=/mnt/kv`,
    /// `drop_caches=true`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// How the clients of a step with `clients > 1` start: `local` (child
    /// processes here), `srun` (one Slurm job step per step, a task per
    /// client, placed in the allocation when run inside one) or
    /// `kubernetes` (one Indexed Job per step, a pod per client, with the
    /// kubectl context of `KUBECONFIG` and the plan's `[kubernetes]`). The same as
    /// `--set launcher=...`: a `[[steps]]` entry's own `launcher` wins.
    #[arg(long, value_name = "LAUNCHER")]
    pub launcher: Option<crate::plan::Launcher>,
}

impl PlanShowArgs {
    /// `--set` with `--launcher` last, as `--set launcher=...`.
    fn sets(&self) -> Vec<String> {
        let mut sets = self.set.clone();
        if let Some(l) = self.launcher {
            sets.push(format!("launcher={}", l.name()));
        }
        sets
    }
}

#[derive(Debug, Args)]
pub struct PlanRunArgs {
    #[command(flatten)]
    pub plan: PlanShowArgs,
    /// Results file (JSON lines): appended to, and read to skip finished steps.
    #[arg(long, value_name = "FILE")]
    pub results: PathBuf,
    /// Where the report (report.md, report.csv, report.html) is written when
    /// the plan finishes; default: the results file's name without
    /// `.jsonl`, plus `-report`.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Stop the study at the first configuration whose servers cannot
    /// start (by default its steps are recorded as failed and the other
    /// configurations go on).
    #[arg(long)]
    pub fail_fast: bool,
    /// Serve the study's progress and the step in progress's figures (per
    /// second: ops/s, failures, p50/p99/p99.9/max per operation type) at
    /// http://ADDR/metrics in the Prometheus text format, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<String>,
}

fn parse_db_override(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, dir)) if !name.is_empty() && !dir.is_empty() => {
            Ok((name.to_string(), PathBuf::from(dir)))
        }
        _ => Err(format!(
            "'{text}' is not NAME=DIR (e.g. --db disk=/mnt/nvme/kv)"
        )),
    }
}

fn prepare(
    args: &PlanShowArgs,
    check_step: StepCheck,
    results: PathBuf,
    fail_fast: bool,
    metrics_addr: Option<String>,
) -> anyhow::Result<(runner::Prepared, RunOptions)> {
    let opts = RunOptions {
        results,
        scale: args.scale,
        db_overrides: args.db.clone(),
        fail_fast,
        metrics_addr,
        check_step,
    };
    let loaded = LoadedPlan::from_file_with(&args.plan, &args.sets())?;
    Ok((runner::prepare(loaded, &opts)?, opts))
}

/// Runs the plan; `check_step` checks each step's command line as the
/// step's own command will.
pub fn run(args: PlanRunArgs, check_step: StepCheck) -> anyhow::Result<()> {
    let report_dir = args
        .report
        .clone()
        .unwrap_or_else(|| default_report_dir(&args.results));
    // The report's place is checked before the first step runs, and every
    // file the run writes has a path of its own.
    runner::check_outputs(&args.results, &report_dir)?;
    let report_dir = report::check_out(&report_dir, "--report", &[&args.results, &args.plan.plan])?;
    let (prepared, opts) = prepare(
        &args.plan,
        check_step,
        args.results,
        args.fail_fast,
        args.metrics_addr,
    )
    .inspect_err(|_| report_dir.discard())?;
    let existed = std::fs::symlink_metadata(&opts.results).is_ok();
    let ran = runner::run(&prepared, &opts);
    // A study that failed part of the way still gets its report, failures
    // marked, when anything reached the results (not after bad input).
    // The runner appends whole records only, so anything in it is one.
    let has_results = std::fs::metadata(&opts.results).is_ok_and(|m| m.len() > 0);
    let input_error = ran
        .as_ref()
        .is_err_and(|e| crate::error::exit_code(e) == crate::error::EXIT_INPUT);
    if input_error && !existed && !has_results {
        // Bad input leaves no empty results file this run created behind
        // (never one another plan run made since and holds).
        crate::results::remove_if_new_and_unused(&opts.results);
    }
    let interrupted = crate::runner::interrupted();
    if !has_results || input_error || interrupted {
        // No report: a directory made for it at the check goes, if empty.
        report_dir.discard();
        // Interrupted after its last step: the exit and the words say so,
        // never "complete" with exit 0 beside an earlier report (pass 16).
        if interrupted && has_results && ran.is_ok() {
            anyhow::bail!(
                "interrupted before the report was written: every step's result is kept in '{}', but no report was made in '{}' (anything there is older); rerun the same command, or `kvperf report`, to make it",
                opts.results.display(),
                report_dir.path().display()
            );
        }
    } else if let Err(why) = write_report(&opts.results, &report_dir) {
        match ran {
            Ok(()) => {
                return Err(why).with_context(|| {
                    format!(
                        "every step's result is kept in '{}', but its report",
                        opts.results.display()
                    )
                })
            }
            // The failed step is what the exit says; the report's failure
            // is said beside it, never in its place (pass 12: a replaced
            // results file's failure, and where its record was kept, were
            // hidden behind the report's).
            Err(_) => eprintln!("kvperf: warning: no report: {why:#}"),
        }
    }
    ran
}

/// The study's report from `results` into `report_dir`, its files named.
fn write_report(results: &Path, report_dir: &report::ReportDir) -> anyhow::Result<()> {
    let study = report::load(std::slice::from_ref(&results.to_path_buf()))?;
    report::write(&study, report_dir, &[results])?;
    eprintln!(
        "report: {}",
        ["report.md", "report.csv", "report.html"]
            .map(|f| report_dir.path().join(f).display().to_string())
            .join(", ")
    );
    Ok(())
}

/// `results/seed-000.jsonl` -> `results/seed-000-report`.
fn default_report_dir(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map_or_else(|| "results".into(), |s| s.to_string_lossy().into_owned());
    results.with_file_name(format!("{stem}-report"))
}

pub fn show(args: PlanShowArgs, check_step: StepCheck) -> anyhow::Result<()> {
    let (p, _) = prepare(&args, check_step, "results.jsonl".into(), false, None)?;
    let plan = &p.loaded.plan;
    crate::say!(
        "plan '{}' ({} driver) at scale {}: {} steps, fingerprint {}",
        p.id.name,
        match plan.driver {
            crate::plan::Driver::Ycsb => "ycsb",
            crate::plan::Driver::DbBench => "db_bench",
        },
        p.id.scale,
        p.steps.len(),
        p.id.fingerprint
    );
    let checked = runner::check_engines(&p)
        .map_err(anyhow::Error::from)
        .and_then(|()| runner::check_steps(&p, "results.jsonl".as_ref(), check_step));
    if let Err(e) = checked {
        crate::say!("cannot run here: {e:#}");
    }
    if p.id.scale != 1.0 {
        let full = crate::plan::expand_steps(&p.loaded, 1.0, &[])?;
        crate::output::stdout::say(&sizes(plan.driver, &full, &p.steps, p.id.scale));
    }
    for (i, step) in p.steps.iter().enumerate() {
        let args = child::child_args(
            plan.driver,
            plan.settle,
            plan.drop_caches,
            step,
            "STEP.json".as_ref(),
        );
        let quoted: Vec<String> = child::redacted_args(&args)
            .iter()
            .map(|a| shell_quote(a))
            .collect();
        let mut command = format!("kvperf {}", quoted.join(" "));
        if step.clients > 1 && step.launcher == crate::plan::Launcher::Srun {
            command = format!(
                "srun --ntasks={0} --kill-on-bad-exit=1 {command}   # {0} srun tasks, each shard SLURM_PROCID of {0}",
                step.clients
            );
        } else if step.clients > 1 && step.launcher == crate::plan::Launcher::Kubernetes {
            command = format!(
                "{command}   # one Indexed Job of {0} pods, each shard JOB_COMPLETION_INDEX of {0}",
                step.clients
            );
        } else if step.clients > 1 {
            command.push_str(&format!(
                " --shard I/{0}   # {0} clients at once, I = 0..{1}",
                step.clients,
                step.clients - 1
            ));
        }
        crate::say!("{:>4}  {}\n      {command}", i + 1, step.id);
    }
    Ok(())
}

/// `kvperf plan list`: each shipped plan's name and description.
pub fn list() -> anyhow::Result<()> {
    for (name, text) in crate::shipped::PLANS {
        let description = crate::plan::parse(text)
            .map(|p| p.description)
            .unwrap_or_default();
        crate::say!("{name:<26} {description}");
    }
    Ok(())
}

/// What `--scale` changed, full scale beside scaled, each value once:
/// the brief's sizes next to the ones this run uses.
fn sizes(
    driver: crate::plan::Driver,
    full: &[crate::plan::Step],
    scaled: &[crate::plan::Step],
    scale: f64,
) -> String {
    let keys = crate::plan::scaled_keys(driver);
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for (f, s) in full.iter().zip(scaled) {
        for (key, value) in &f.properties {
            let Some(now) = s.properties.iter().find(|(k, _)| k == key) else {
                continue;
            };
            let row = (key.clone(), value.clone(), now.1.clone());
            if keys.contains(&key.as_str()) && !rows.contains(&row) {
                rows.push(row);
            }
        }
    }
    let mut text = format!("sizes at full scale -> at scale {scale}:\n");
    for (key, full, now) in rows {
        text.push_str(&format!("  {key:<18} {full:>14} -> {now}\n"));
    }
    if let Some(bytes) = data_bytes(driver, full.first()) {
        let now = data_bytes(driver, scaled.first()).unwrap_or(0);
        text.push_str(&format!(
            "  {:<18} {:>14} -> {}\n",
            "data (raw)",
            crate::plan::format_size(bytes),
            crate::plan::format_size(now)
        ));
    }
    text
}

/// Raw bytes a plan's records hold: YCSB records x fields x field length,
/// or db_bench keys x (key + value size), with each driver's defaults.
fn data_bytes(driver: crate::plan::Driver, step: Option<&crate::plan::Step>) -> Option<u64> {
    let text = |k: &str| -> Option<&str> {
        step?
            .properties
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let get = |k: &str| text(k).and_then(|v| v.parse::<u64>().ok());
    let bytes = |k: &str| text(k).and_then(|v| crate::units::parse_size(v).ok());
    match driver {
        crate::plan::Driver::Ycsb => Some(
            get("recordcount")?
                * get("fieldcount").unwrap_or(10)
                * bytes("fieldlength").unwrap_or(100),
        ),
        crate::plan::Driver::DbBench => Some(
            get("num")? * (bytes("key_size").unwrap_or(16) + bytes("value_size").unwrap_or(100)),
        ),
    }
}

/// `a` as a shell word, so a shown command can be pasted (`;` in RocksDB
/// option strings, spaces in paths).
fn shell_quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn shown_commands_are_shell_words() {
        assert_eq!(shell_quote("--threads"), "--threads");
        assert_eq!(
            shell_quote("rocksdb.options=a=1;b=2"),
            "'rocksdb.options=a=1;b=2'"
        );
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
