//! The HTML report renders in a real browser (Debian's headless Chromium):
//! the charts are in the rendered DOM and a screenshot is taken.

use crate::common;

use std::path::Path;
use std::process::Command;

/// A results file with known numbers: seed 000's Table 1, two configs.
fn write_results(path: &Path) {
    let threads = [4, 8, 16, 32, 48, 64, 96, 128, 192, 256];
    let a = [
        17060, 28990, 40114, 42012, 41805, 40940, 40477, 40184, 40679, 41808,
    ];
    let b = [
        12694, 17696, 22591, 27635, 28755, 29195, 28987, 28317, 28705, 27987,
    ];
    let mut text = String::new();
    for (config, ops) in [("micron-7400", a), ("gen3", b)] {
        for (i, t) in threads.iter().enumerate() {
            // Little's law: threads / throughput, spread around that mean.
            let mean_ns = 1e9 * *t as f64 / ops[i] as f64;
            let reads: Vec<u64> = (1..=200u64)
                .map(|k| (mean_ns * k as f64 / 100.5) as u64)
                .collect();
            let r = common::run_record(config, "a", *t, ops[i] as f64, &reads);
            text.push_str(&serde_json::to_string(&r).unwrap());
            text.push('\n');
        }
    }
    std::fs::write(path, text).unwrap();
}

fn chromium() -> &'static str {
    for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(candidate).exists() {
            return candidate;
        }
    }
    panic!("Chromium is needed for this test: scripts/ensure-deps.sh --with-chromium installs it");
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("seed-000.jsonl");
    write_results(&results);
    let out_dir = tmp.path().join("report");
    common::report(tmp.path(), &results, &out_dir);
    let html = out_dir.join("report.html");
    let url = format!("file://{}", html.display());
    let browser = |extra: &[&str]| {
        Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs")
    };
    let dom = browser(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<svg"), "rendered DOM has the charts");
    assert_eq!(dom.matches("<polyline").count(), 6, "3 charts x 2 configs");
    assert!(dom.contains("<b>42,012</b>"));

    let png = out_dir.join("report.png");
    let shot = browser(&[
        &format!("--screenshot={}", png.display()),
        "--window-size=1300,1600",
    ]);
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).expect("screenshot saved next to the report");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 20_000, "a page with charts, not a blank one");
}
