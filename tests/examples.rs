//! The shipped example reports are what `kvperf report` makes of their own
//! raw results: each example in docs/examples that ships a results.jsonl
//! is re-rendered and compared, file by file, with what is shipped.

use std::path::Path;

use crate::common::kvperf;

#[test]
fn shipped_examples_rerender_from_their_results_unchanged() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&examples).unwrap() {
        let dir = entry.unwrap().path();
        let results = dir.join("results.jsonl");
        if !results.exists() {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let out = kvperf(
            tmp.path(),
            &["report", &results.display().to_string(), "--out", "report"],
        );
        assert_eq!(out.code, 0, "{}: {}", dir.display(), out.stderr);
        for file in ["report.md", "report.csv", "report.html"] {
            let shipped = std::fs::read_to_string(dir.join(file))
                .unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()));
            let made = std::fs::read_to_string(tmp.path().join("report").join(file)).unwrap();
            assert!(
                shipped == made,
                "{}/{file} differs from what `kvperf report` makes of its results.jsonl now; first differing line: {:?}",
                dir.display(),
                shipped
                    .lines()
                    .zip(made.lines())
                    .find(|(a, b)| a != b)
            );
        }
        checked.push(dir);
    }
    assert!(
        checked.len() >= 5,
        "an example with its results for each runnable seed: {checked:?}"
    );
}
