//! The sixteenth hostile pass, every histogram of a file within one bound
//! (docs/reliability.md, "Pass 16: every histogram of a file within one
//! bound"): at kvperf's 3 significant digits a histogram of ~60 bytes may
//! hold one count at 2^62, 440 KiB of counts decoded, and every histogram
//! of a results file was held decoded while it was read: 4,000 such lines
//! (23 MB) took 2-4 GB in `compare`, `report`, `merge` and a resumed
//! `plan run`. Histograms are now held as their text and decoded one at a
//! time where they are used. Fails on 4a1cd29.

use super::pass14_mem::{kvperf_capped_to, set_histograms, shard_outputs};

/// 1 GB of address space: several times what kvperf takes for these
/// files, less than the old code took for them.
const CAP_KIB: u64 = 1_000_000;

/// A histogram over HdrHistogram's widest range at kvperf's 3 digits,
/// holding one count at 2^62: ~60 bytes of text, 440 KiB decoded.
fn one_far_count() -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::new_with_bounds(1, u64::MAX, 3).unwrap();
    h.record(1 << 62).unwrap();
    h
}

#[test]
fn a_files_histograms_take_what_their_text_does() {
    let dir = tempfile::tempdir().unwrap();
    let far = one_far_count();
    let text = kvperf::measure::hdr::encode(&far);
    assert!(text.len() < 100, "{text}");
    // 2,000 results lines, each a repeat of config a or b.
    let lines: String = (0..2000)
        .map(|i| {
            let config = ["a", "b"][i % 2];
            let record = crate::common::run_record(config, "c", 1, 100.0, &[10_000; 10]);
            let mut v = serde_json::to_value(&record).unwrap();
            set_histograms(&mut v, &text);
            v["step"]["repeat"] = (i / 2 + 1).into();
            v["step"]["id"] = format!("{config}/c-t1-r{}", i / 2 + 1).into();
            serde_json::to_string(&v).unwrap() + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("r.jsonl"), lines).unwrap();
    let out = kvperf_capped_to(dir.path(), CAP_KIB, &["compare", "r.jsonl"]);
    assert_eq!(out.code, 0, "compare: {}", out.stderr);
    assert!(out.stdout.contains("read p99"), "{}", out.stdout);
    let out = kvperf_capped_to(dir.path(), CAP_KIB, &["report", "r.jsonl", "--out", "rep"]);
    assert_eq!(out.code, 0, "report: {}", out.stderr);
    assert!(dir.path().join("rep/report.md").is_file());

    // 3,000 shards of one study, each with the same histogram: merged
    // exactly, every count at its value.
    let [mut shard, _] = shard_outputs(dir.path());
    set_histograms(&mut shard, &text);
    let shards = 3000;
    let mut args = vec!["merge".to_string()];
    for i in 0..shards {
        shard["shard"]["index"] = i.into();
        shard["shard"]["count"] = shards.into();
        shard["shard"]["slice"] = serde_json::json!({"start": i, "count": 1});
        shard["shard"]["of"] = serde_json::json!({"start": 0, "count": shards});
        let name = format!("s{i}.json");
        std::fs::write(dir.path().join(&name), shard.to_string()).unwrap();
        args.push(name);
    }
    args.extend(["--format", "json", "--output", "m.json"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = kvperf_capped_to(dir.path(), CAP_KIB, &args);
    assert_eq!(out.code, 0, "merge: {}", out.stderr);
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("m.json")).unwrap()).unwrap();
    let read = &merged["measurements"][0]["ops"]["read"]["latency"];
    assert_eq!(read["count"], shards);
    assert_eq!(read["max_us"], far.max() as f64 / 1000.0);
}
