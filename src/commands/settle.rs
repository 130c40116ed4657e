//! `kvperf settle`: let a store finish its background work between phases.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;

use crate::engine::{self, Capability, OpenMode, OpenOptions};
use crate::properties::Properties;
use crate::step;

#[derive(Debug, Args)]
pub struct SettleArgs {
    /// Engine of the store.
    #[arg(long, value_name = "NAME", default_value = crate::engine::DEFAULT_ENGINE)]
    pub engine: String,
    /// Data directory of an existing store (directory engines; default `kvperf-data`).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Engine option, as for `run` (-p <engine>.<option>=VALUE); repeatable.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub properties: Vec<String>,
    /// Compact the whole store first, so each measurement starts from the
    /// same shape (`kvperf engines` says which engines can).
    /// Engines without compaction refuse it.
    #[arg(long)]
    pub compact: bool,
    /// For a server's engine: how long settle waits for the server, in
    /// seconds, before it fails (a server that stops answering once
    /// connected would hold it for good). An embedded store's background
    /// work is waited for as long as it takes.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub server_timeout: u64,
}

pub fn run(args: SettleArgs) -> anyhow::Result<()> {
    let spec = engine::find(&args.engine)?;
    if args.compact {
        spec.require(Capability::Compact, "settle --compact")?;
    }
    let mut props = Properties::new();
    for assignment in &args.properties {
        props.set_override(assignment)?;
    }
    engine::run_on_asked_library(spec.name, &props)?;
    let db = step::data_dir(spec, args.db.as_deref(), super::ycsb::DEFAULT_DB);
    let engine = engine::open(
        spec,
        &OpenOptions {
            dir: db.as_deref(),
            properties: &props,
            mode: OpenMode::Existing,
            runtime: None,
            clients: None,
        },
    )?;
    let store = db.as_ref().map_or_else(
        || format!("{} store", spec.name),
        |d| format!("{} store in '{}'", spec.name, d.display()),
    );
    if spec.uses_data_dir() {
        return settle(engine, spec, args.compact, &store);
    }
    // A server's engine waits on the server's answers, which nothing here
    // can cancel: the work runs on a thread of its own, waited for at most
    // --server-timeout (a stopped server held settle for good, pass 14)
    // and until SIGINT/SIGTERM, said (pass 16: settle died of it, mute).
    let limit = Duration::from_secs(args.server_timeout);
    let (compact, shown) = (args.compact, store.clone());
    crate::runner::stop_on_interrupt();
    let work = move || settle(engine, spec, compact, &shown);
    step::bounded(work, Some(limit), |ended| {
        match ended {
        step::Ended::Interrupted => format!(
            "settle: interrupted, waiting for the {store} to finish its work"
        ),
        step::Ended::Unanswered(limit) => format!(
            "settle: the {store} did not finish within {} s (--server-timeout): the server stopped answering, or its work takes longer than that",
            limit.as_secs()
        ),
    }
    })?
}

/// Compacts when asked, waits for the store's background work, closes it.
fn settle(
    engine: Box<dyn engine::Engine>,
    spec: &'static engine::EngineSpec,
    compact: bool,
    store: &str,
) -> anyhow::Result<()> {
    if compact {
        let started = Instant::now();
        engine.compact()?;
        eprintln!(
            "kvperf: settle: compacted the {store} in {}",
            seconds(started.elapsed())
        );
    }
    let started = Instant::now();
    engine.settle(true)?;
    let waited = if spec.capabilities.background_work {
        "flushed buffered writes and waited for background work (flushes, compactions) to finish"
    } else {
        "made buffered writes durable (the engine has no background work to wait for)"
    };
    eprintln!(
        "kvperf: settle: {waited} in the {store}: {}",
        seconds(started.elapsed())
    );
    let started = Instant::now();
    engine.close()?;
    eprintln!(
        "kvperf: settle: closed the {store} in {}; done",
        seconds(started.elapsed())
    );
    Ok(())
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
