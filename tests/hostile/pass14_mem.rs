//! The fourteenth hostile pass, memory an input asks for
//! (docs/reliability.md, "Pass 14: memory an input asks for"): a few bytes
//! of input that sized an allocation of gigabytes, so kvperf aborted
//! ("memory allocation of N bytes failed") or grew toward the OOM killer.
//! Each is now one line, exit 2, before anything is sized by it. Fails on
//! 95410e9.

use std::path::Path;

use crate::common::{assert_input_error, workload, Output};

/// `kvperf ARGS` in `dir` with its address space capped, so that a
/// regression aborts fast instead of taking the machine's memory; the
/// assertions are on the refusal, not on the cap.
fn kvperf_capped(dir: &Path, args: &[&str]) -> Output {
    kvperf_capped_to(dir, 2_000_000, args)
}

/// [`kvperf_capped`] with `kib` KiB of address space.
pub(super) fn kvperf_capped_to(dir: &Path, kib: u64, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_kvperf");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib}; exec \"$0\" \"$@\""))
        .arg(exe)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("kvperf runs");
    Output::from(out)
}

/// Pass 14: a `fieldlengthhistogram`'s lengths skipped the 1 GiB record
/// cap and the 4 GiB scan cap (a histogram's longest was taken as 0), so
/// 512 MiB fields x 10 made 5 GiB records and `load` aborted. Its longest
/// is now held to both caps, in every command that makes the workload.
#[test]
fn a_histograms_field_lengths_are_held_to_the_record_and_scan_caps() {
    let dir = tempfile::tempdir().unwrap();
    // 128 MiB fields: 9 of them pass 1 GiB; one, 1000 to a scan, passes 4 GiB.
    std::fs::write(
        dir.path().join("h.txt"),
        "BlockSize\t134217728\n0\t0\n1\t1\n",
    )
    .unwrap();
    let wl = workload("a");
    let histogram = [
        "-p",
        "fieldlengthdistribution=histogram",
        "-p",
        "fieldlengthhistogram=h.txt",
        "-p",
        "recordcount=1",
        "-p",
        "operationcount=1",
    ];
    for (command, fields, needle) in [
        ("load", "fieldcount=9", "1207959552 bytes per record"),
        ("run", "fieldcount=9", "1207959552 bytes per record"),
        ("load", "fieldcount=1", "more than one scan may hold"),
        ("run", "fieldcount=1", "more than one scan may hold"),
    ] {
        let mut args = vec![command, "--engine", "null", "-P", &wl, "-p", fields];
        args.extend(histogram);
        let out = kvperf_capped(dir.path(), &args);
        assert_input_error(&out, needle);
        assert_input_error(&out, "134217728");
    }
    // A plan refuses it before its first step.
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"h\"\ndriver = \"ycsb\"\nengine = \"null\"\n\
             [properties]\nrecordcount = 1\noperationcount = 1\n\
             fieldcount = 9\nfieldlengthdistribution = \"histogram\"\n\
             fieldlengthhistogram = \"{}\"\n\
             [[configs]]\nname = \"n\"\n\
             [[steps]]\nload = true\nworkloads = [\"a\"]\nthreads = [1]\n",
            dir.path().join("h.txt").display()
        ),
    )
    .unwrap();
    let out = kvperf_capped(
        dir.path(),
        &["plan", "run", "p.toml", "--results", "r.jsonl"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("bytes per record"), "{}", out.stderr);
    assert!(
        !dir.path().join("r.jsonl").exists()
            || crate::common::lines(&dir.path().join("r.jsonl")).is_empty()
    );
}

/// A plain HdrHistogram V2 encoding, no counts, of `digits` significant
/// digits from 1 to 2^63 - 1: 40 bytes that decode to 97 MB at 5 digits.
fn wide_histogram(digits: u32) -> String {
    use base64::Engine as _;
    let mut b = Vec::new();
    b.extend(0x1c84_9313u32.to_be_bytes());
    b.extend(0u32.to_be_bytes());
    b.extend(0u32.to_be_bytes());
    b.extend(digits.to_be_bytes());
    b.extend(1u64.to_be_bytes());
    b.extend((i64::MAX as u64).to_be_bytes());
    b.extend(1.0f64.to_be_bytes());
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Every `histogram` in `v` set to `text`.
pub(super) fn set_histograms(v: &mut serde_json::Value, text: &str) {
    match v {
        serde_json::Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "histogram" && value.is_string() {
                    *value = text.into();
                } else {
                    set_histograms(value, text);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| set_histograms(i, text)),
        _ => {}
    }
}

/// Pass 14: a results line whose histogram is a valid ~100-byte encoding
/// of 5 significant digits up to 2^63 - 1 decoded to 97 MB; 40 such lines
/// took 2 GB in `compare`, `report` and a resumed `plan run`. A histogram
/// more precise than kvperf's 3 digits is now refused before it is sized.
#[test]
fn a_histogram_more_precise_than_kvperfs_is_refused_before_it_is_sized() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let line = |config: &str, digits: u32| {
        let record = crate::common::run_record(config, "c", 1, 100.0, &[10_000; 10]);
        let mut v = serde_json::to_value(&record).unwrap();
        set_histograms(&mut v, &wide_histogram(digits));
        serde_json::to_string(&v).unwrap()
    };
    // kvperf's own precision over the widest range reads.
    std::fs::write(&results, format!("{}\n{}\n", line("a", 3), line("b", 3))).unwrap();
    let out = kvperf_capped(dir.path(), &["compare", "r.jsonl"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for digits in [4, 5] {
        let text = (0..8)
            .map(|i| line(["a", "b"][i % 2], digits) + "\n")
            .collect::<String>();
        std::fs::write(&results, text).unwrap();
        let needle = format!("{digits} significant digits (at most 3)");
        assert_input_error(&kvperf_capped(dir.path(), &["compare", "r.jsonl"]), &needle);
        let out = kvperf_capped(dir.path(), &["report", "r.jsonl", "--out", "rep"]);
        assert_input_error(&out, &needle);
    }
}

/// Two shard outputs of a small null run, as `run --shard I/2 --format
/// json` writes them, parsed.
pub(super) fn shard_outputs(dir: &Path) -> [serde_json::Value; 2] {
    let wl = workload("c");
    [0, 1].map(|i| {
        let shard = format!("{i}/2");
        let output = format!("s{i}.json");
        let out = crate::common::kvperf(
            dir,
            &[
                "run",
                "--engine",
                "null",
                "-P",
                &wl,
                "-p",
                "recordcount=100",
                "-p",
                "operationcount=2000",
                "--shard",
                &shard,
                "--format",
                "json",
                "--output",
                &output,
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str(&std::fs::read_to_string(dir.join(&output)).unwrap()).unwrap()
    })
}

/// Pass 14: `merge` sized its timeline by the gap between the shards'
/// clocks: a start moved by 10^11 ms (or to 0), or one interval at
/// start_s 1e9, asked for 2.7 GB and aborted; a shard count of 10^12 made
/// a list of every missing shard. Windows that open more than a day
/// apart, and intervals past what their timeline covers, are now refused
/// before anything is sized; missing shards are counted.
#[test]
fn shards_a_day_apart_or_intervals_past_their_timeline_are_refused_by_merge() {
    let dir = tempfile::tempdir().unwrap();
    let [s0, s1] = shard_outputs(dir.path());
    std::fs::write(dir.path().join("s0.json"), s0.to_string()).unwrap();
    let start = s1["measurements"][0]["start_unix_ms"].as_u64().unwrap();
    let end = s1["measurements"][0]["end_unix_ms"].as_u64().unwrap();
    type Change = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: [(&str, Change, &str); 4] = [
        (
            "+1e11 ms",
            Box::new(move |m: &mut serde_json::Value| {
                m["start_unix_ms"] = (start + 100_000_000_000).into();
                m["end_unix_ms"] = (end + 100_000_000_000).into();
            }),
            "'m.json' opened its window",
        ),
        (
            "start 0",
            Box::new(move |m: &mut serde_json::Value| {
                m["start_unix_ms"] = 0.into();
                m["end_unix_ms"] = (end - start).into();
            }),
            "'s0.json' opened its window",
        ),
        (
            "start_s 1e9",
            Box::new(|m: &mut serde_json::Value| {
                m["timeline"]["intervals"][0]["start_s"] = 1e9.into()
            }),
            "'m.json': its timeline's interval 0",
        ),
        (
            "length_s 1e18",
            Box::new(|m: &mut serde_json::Value| {
                m["timeline"]["intervals"][0]["length_s"] = 1e18.into()
            }),
            "'m.json': its timeline's interval 0",
        ),
    ];
    for (what, change, needle) in cases {
        let mut m = s1.clone();
        change(&mut m["measurements"][0]);
        std::fs::write(dir.path().join("m.json"), m.to_string()).unwrap();
        let out = kvperf_capped(dir.path(), &["merge", "s0.json", "m.json"]);
        assert_input_error(&out, needle);
        assert!(out.stdout.is_empty(), "{what}: {}", out.stdout);
    }
    // A shard count of 10^12 listed every missing shard (found beside).
    let mut many = s0.clone();
    many["shard"]["count"] = 1_000_000_000_000u64.into();
    std::fs::write(dir.path().join("m.json"), many.to_string()).unwrap();
    let out = kvperf_capped(dir.path(), &["merge", "m.json"]);
    assert_input_error(&out, "999999999999 of 1000000000000 shards missing");
    // Shards an hour apart still merge.
    let mut m = s1.clone();
    m["measurements"][0]["start_unix_ms"] = (start + 3_600_000).into();
    m["measurements"][0]["end_unix_ms"] = (end + 3_600_000).into();
    std::fs::write(dir.path().join("m.json"), m.to_string()).unwrap();
    let out = kvperf_capped(dir.path(), &["merge", "s0.json", "m.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}
