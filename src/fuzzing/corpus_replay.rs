//! The fuzz targets' seed inputs (fuzz/seeds/, YCSB's workload files,
//! the shipped plans), each as it is and in mutated forms, through every
//! reader of user input (`kvperf::fuzzing`), on stable Rust: none may
//! panic or hang. The open-ended search is scripts/fuzz.sh (cargo-fuzz).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Where each target's seed inputs are, relative to the repository.
const SEEDS: [(&str, &[&str]); 5] = [
    ("workload_properties", &["workloads"]),
    ("plan", &["plans"]),
    ("command_line", &["fuzz/seeds/command_line"]),
    ("results", &["fuzz/seeds/results"]),
    ("histogram", &["fuzz/seeds/histogram"]),
];

/// Mutants made of each seed: enough to reach past the first check of
/// every reader, few enough to keep the test at a few seconds.
const MUTANTS_PER_SEED: usize = 48;

/// The longest one input may take before the reader counts as hung.
const HANG_LIMIT: Duration = Duration::from_secs(30);

/// Values that sit on the edges of what the readers parse.
const EDGES: [&[u8]; 14] = [
    b"0",
    b"-1",
    b"18446744073709551616",
    b"1e308",
    b"NaN",
    b"\n",
    b"\r\n",
    b"\"",
    b"=",
    b"[",
    b"{",
    b"\xef\xbb\xbf",
    b"\0",
    b"\xff\xff\xff\xff",
];

/// xorshift64*: a fixed sequence, so a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `seed` with one to four random edits.
fn mutant(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(5) {
            0 if at < data.len() => data[at] ^= 1 << rng.below(8),
            1 => {
                let end = (at + 1 + rng.below(64)).min(data.len());
                data.drain(at..end);
            }
            2 => {
                let edge = EDGES[rng.below(EDGES.len())];
                data.splice(at..at, edge.iter().copied());
            }
            3 => {
                let end = (at + 1 + rng.below(32)).min(data.len());
                let copy = data[at..end].to_vec();
                data.splice(at..at, copy);
            }
            _ => data.truncate(at),
        }
    }
    data
}

fn seeds(dirs: &[&str]) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("seed directory {dir}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap();
            out.push((file, data));
        }
    }
    out
}

/// Runs `target` on every seed and its mutants on a thread of its own,
/// so that a hang is reported (naming the input) instead of stalling.
fn replay(name: &str, target: fn(&[u8]), dirs: &[&str]) -> usize {
    let seeds = seeds(dirs);
    assert!(!seeds.is_empty(), "no seed inputs for {name} in {dirs:?}");
    let (tx, rx) = mpsc::channel::<Result<String, String>>();
    let worker = std::thread::spawn(move || {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for (file, seed) in seeds {
            let inputs = std::iter::once(seed.clone())
                .chain((0..MUTANTS_PER_SEED).map(|_| mutant(&seed, &mut rng)));
            for (i, input) in inputs.enumerate() {
                let what = format!("{} mutant {i}", file.display());
                let _ = tx.send(Ok(format!("starting {what}")));
                if std::panic::catch_unwind(|| target(&input)).is_err() {
                    let _ = tx.send(Err(format!(
                        "panicked on {what}; input (lossy): {:?}",
                        String::from_utf8_lossy(&input)
                    )));
                    return;
                }
            }
        }
    });
    let mut inputs = 0;
    let mut last = String::from("the first input");
    loop {
        match rx.recv_timeout(HANG_LIMIT) {
            Ok(Ok(started)) => {
                last = started;
                inputs += 1;
            }
            Ok(Err(panicked)) => panic!("{name}: {panicked}"),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("{name}: no answer within {HANG_LIMIT:?} after {last}")
            }
        }
    }
    worker.join().expect("the worker reports its own panics");
    inputs
}

#[test]
fn every_reader_survives_its_seeds_and_their_mutants() {
    for (name, target) in super::TARGETS {
        let dirs = SEEDS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| *d)
            .unwrap_or_else(|| panic!("target {name} has no seed directory in SEEDS"));
        let inputs = replay(name, target, dirs);
        assert!(
            inputs > MUTANTS_PER_SEED,
            "{name}: only {inputs} inputs ran"
        );
    }
}
