//! `kvperf settle`: let a store finish its background work between phases.

use crate::cli::SettleArgs;
use crate::engine::{self, OpenOptions};
use crate::error::InputError;
use crate::workload::properties::Properties;

pub fn run(args: SettleArgs) -> anyhow::Result<()> {
    let spec = engine::find(&args.engine)?;
    if spec.uses_data_dir && !engine::holds_store(&args.db) {
        return Err(InputError::Invalid(format!(
            "--db '{}' holds no store to settle",
            args.db.display()
        ))
        .into());
    }
    let mut props = Properties::new();
    for assignment in &args.properties {
        props.set_override(assignment)?;
    }
    let engine = engine::open(
        spec,
        &OpenOptions {
            db_dir: &args.db,
            properties: &props,
        },
    )?;
    if args.compact {
        engine.compact()?;
    }
    engine.settle(true)?;
    engine.close()
}
