//! `kvperf plan run|show`: a study from a plan file.

use crate::cli::{PlanRunArgs, PlanShowArgs};
use crate::plan::runner::{self, RunOptions};
use crate::plan::{LoadedPlan, StepKind};

fn prepare(
    args: &PlanShowArgs,
    results: std::path::PathBuf,
) -> anyhow::Result<(runner::Prepared, RunOptions)> {
    let opts = RunOptions {
        results,
        scale: args.scale,
        db_overrides: args.db.clone(),
    };
    let loaded = LoadedPlan::from_file(&args.plan)?;
    Ok((runner::prepare(loaded, &opts)?, opts))
}

pub fn run(args: PlanRunArgs) -> anyhow::Result<()> {
    let (prepared, opts) = prepare(&args.plan, args.results)?;
    runner::run(&prepared, &opts)
}

pub fn show(args: PlanShowArgs) -> anyhow::Result<()> {
    let (p, _) = prepare(&args, "results.jsonl".into())?;
    let plan = &p.loaded.plan;
    println!(
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
    if let Err(e) = runner::check_engines(&p) {
        println!("cannot run here: {e}");
    }
    for (i, step) in p.steps.iter().enumerate() {
        let command = match step.kind {
            StepKind::Precondition => format!(
                "(kvperf writes {} bytes of random data into {})",
                step.fill_bytes,
                step.db.join(crate::engine::PRECONDITION_FILE).display()
            ),
            _ => {
                let args = runner::child_args(
                    plan.driver,
                    plan.settle,
                    plan.drop_caches,
                    step,
                    "STEP.json".as_ref(),
                );
                let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
                format!("kvperf {}", quoted.join(" "))
            }
        };
        println!("{:>4}  {}\n      {command}", i + 1, step.id);
    }
    Ok(())
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
