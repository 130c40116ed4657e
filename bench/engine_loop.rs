//! The engine's own ceiling for YCSB workload C: N threads, each in a bare
//! loop of uniform random reads of whole records (YCSB's key names, the
//! records `kvperf load` wrote), straight through the engine's handle: no
//! workload generator, no runner, no histograms, no timing per operation.
//! kvperf's `run -P workloads/workloadc` on the same store should reach at
//! least 0.9x of it (bench/engines-vs-bare-loop.sh).
//!
//!   cargo build --release --example engine-loop
//!   engine-loop ENGINE DB_DIR RECORDS OPERATIONS THREADS [KEY=VALUE...]

use std::time::Instant;

use kvperf::engine::{self, wait, Access, ClientSlot, OpenMode, OpenOptions, Record};
use kvperf::properties::Properties;
use kvperf::workload::ycsb::keys::build_key_name;
use rand::{Rng, SeedableRng};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        anyhow::bail!("usage: engine-loop ENGINE DB_DIR RECORDS OPERATIONS THREADS [KEY=VALUE...]");
    }
    let spec = engine::find(&args[1])?;
    let dir = std::path::PathBuf::from(&args[2]);
    let records: u64 = args[3].parse()?;
    let operations: u64 = args[4].parse()?;
    let threads: usize = args[5].parse()?;
    let mut props = Properties::new();
    for assignment in &args[6..] {
        props.set_override(assignment)?;
    }
    let engine = engine::open(
        spec,
        &OpenOptions {
            dir: spec.uses_data_dir().then_some(dir.as_path()),
            properties: &props,
            mode: OpenMode::Existing,
            runtime: None,
        },
    )?;
    let engine = engine.as_ref();
    let per_thread = operations / threads as u64;
    let start = Instant::now();
    let found: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                s.spawn(move || {
                    let slot = ClientSlot::thread(index, threads, Access::Records);
                    let mut w = wait(engine.client(slot)).expect("a client");
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(index as u64 + 1);
                    let (mut key, mut out, mut found) = (Vec::new(), Record::new(), 0u64);
                    for _ in 0..per_thread {
                        build_key_name(rng.gen_range(0..records), true, 1, &mut key);
                        out.clear();
                        found += u64::from(w.read("usertable", &key, None, &mut out).now().is_ok());
                    }
                    found
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .sum()
    });
    let seconds = start.elapsed().as_secs_f64();
    let done = per_thread * threads as u64;
    if found != done {
        anyhow::bail!(
            "{} of {done} reads found no record: is the store loaded with {records} records?",
            done - found
        );
    }
    println!(
        "{} bare loop: {done} reads, {threads} threads, {seconds:.3} s, {:.0} ops/s (version {})",
        spec.name,
        done as f64 / seconds,
        engine.info().version
    );
    engine.close()
}
