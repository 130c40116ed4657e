//! The floor of one YCSB read on kvperf's own parts, for workload C at
//! YCSB's defaults: a scrambled-zipfian draw of the key number, its FNV
//! scramble and formatting (`user...`), and kvperf's own `Meter` timing a
//! call that does nothing: the same two time-stamp-counter reads and one
//! record into the per-operation histograms as every measured operation.
//! Nothing else: no runner, no pacing, no status thread, no engine. What
//! kvperf's null engine reaches on workload C at the same thread count,
//! over this, is the share of the driver that is not the floor
//! (bench/driver-floor.sh; issue 27, item 7).
//!
//!   cargo build --release --example driver-floor
//!   driver-floor RECORDS SECONDS THREADS
//!
//! Prints `[OVERALL], RunTime(ms)` and `[OVERALL], Throughput(ops/sec)`
//! as YCSB does, so bench/lib.sh reads it like any run.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kvperf::measure::{Meter, OpKind, OpResult};
use kvperf::workload::generator::ScrambledZipfian;
use kvperf::workload::ycsb::keys::build_key_name;
use rand::SeedableRng;

/// Clock reads between checks of the time limit, as a runner batches them.
const BATCH: u64 = 1024;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        anyhow::bail!("usage: driver-floor RECORDS SECONDS THREADS");
    }
    let records: u64 = args[1].parse()?;
    let seconds: f64 = args[2].parse()?;
    let threads: usize = args[3].parse()?;
    anyhow::ensure!(
        records > 0 && seconds > 0.0 && threads > 0,
        "all must be positive"
    );
    let limit = Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let counts: Vec<u64> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut rng = kvperf::workload::generator::Rng::seed_from_u64(t as u64 + 1);
                    let mut keys = ScrambledZipfian::with_theta(0, records - 1, 0.99);
                    let mut key = Vec::with_capacity(32);
                    // Unpaced, no intended start: the meter reads the TSC, as a run's does.
                    let mut meter = Meter::new(false, false);
                    let mut done = 0u64;
                    while started.elapsed() < limit {
                        for _ in 0..BATCH {
                            build_key_name(keys.next(&mut rng), true, 0, &mut key);
                            let _ = black_box(meter.time(OpKind::Read, started, || nothing(&key)));
                        }
                        done += BATCH;
                    }
                    black_box(&meter.histograms);
                    done
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let ops: u64 = counts.iter().sum();
    println!(
        "[OVERALL], RunTime(ms), {}",
        (elapsed * 1000.0).round() as u64
    );
    println!("[OVERALL], Throughput(ops/sec), {}", ops as f64 / elapsed);
    Ok(())
}

/// The engine's call, doing nothing with the key.
#[inline(never)]
fn nothing(key: &[u8]) -> OpResult {
    black_box(key);
    Ok(())
}
