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
                format!("kvperf {}", args.join(" "))
            }
        };
        println!("{:>4}  {}\n      {command}", i + 1, step.id);
    }
    Ok(())
}
