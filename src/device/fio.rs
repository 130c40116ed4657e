//! fio beside kvperf (`--with-fio`): the same corner on the same target,
//! with fio's io_uring engine and the same settings, in the same run.

use std::path::Path;
use std::process::Command;

use super::corners::{Corner, CornersConfig};
use crate::error::InputError;
use crate::results::step::FioFigures;

/// Refuses `--with-fio` when no `fio` runs here, before any I/O: a
/// measurement made first would be thrown away with the failure.
pub fn check_installed() -> Result<(), InputError> {
    match Command::new("fio").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(InputError::Invalid(format!(
            "--with-fio: 'fio --version' failed ({}); reinstall fio (apt-get install fio)",
            out.status
        ))),
        Err(e) => Err(InputError::Invalid(format!(
            "--with-fio: cannot run fio ({e}); install it (apt-get install fio) or leave out --with-fio"
        ))),
    }
}

/// Runs fio for `corner` on `path` (its first `size` bytes).
pub fn run(
    path: &Path,
    size: u64,
    corner: &Corner,
    cfg: &CornersConfig,
) -> anyhow::Result<FioFigures> {
    let p = corner.pattern;
    let output = Command::new("fio")
        .args([
            "--name=kvperf-corner".to_string(),
            format!("--filename={}", path.display()),
            format!("--size={size}"),
            format!("--rw={}", corner.name),
            format!("--bs={}", p.block),
            format!("--iodepth={}", p.depth),
            "--ioengine=io_uring".into(),
            "--direct=1".into(),
            "--time_based".into(),
            // Milliseconds: a ramp or runtime of 1.5 s stays 1.5 s for fio.
            format!("--ramp_time={}ms", cfg.ramp.as_millis()),
            format!("--runtime={}ms", cfg.runtime.as_millis()),
            "--randrepeat=0".into(),
            "--output-format=json".into(),
        ])
        .output()
        .map_err(|e| {
            InputError::Invalid(format!(
                "--with-fio: cannot run fio ({e}); install it (apt-get install fio)"
            ))
        })?;
    if !output.status.success() {
        anyhow::bail!(
            "fio failed on {}: {}",
            corner.name,
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    parse(&String::from_utf8_lossy(&output.stdout), p.write)
}

/// The figures of fio's JSON output (`--output-format=json`).
pub fn parse(json: &str, write: bool) -> anyhow::Result<FioFigures> {
    // fio may print notes before the JSON document.
    let start = json.find('{').unwrap_or(0);
    let doc: serde_json::Value = serde_json::from_str(&json[start..])
        .map_err(|e| anyhow::anyhow!("fio's output is not JSON: {e}"))?;
    let job = &doc["jobs"][0][if write { "write" } else { "read" }];
    let num = |v: &serde_json::Value, what: &str| {
        v.as_f64()
            .ok_or_else(|| anyhow::anyhow!("fio's output has no {what}"))
    };
    Ok(FioFigures {
        version: doc["fio version"].as_str().unwrap_or("fio").to_string(),
        iops: num(&job["iops"], "iops")?,
        mb_per_sec: num(&job["bw_bytes"], "bw_bytes")? / 1e6,
        mean_latency_us: num(&job["lat_ns"]["mean"], "lat_ns.mean")? / 1000.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fios_json() {
        let json = r#"note: both iodepth >= 1 and synchronous I/O engine
{ "fio version" : "fio-3.33", "jobs" : [ { "read" : { "iops" : 19512.3, "bw_bytes" : 79922380,
  "lat_ns" : { "mean" : 1638.5e3 } }, "write" : { "iops" : 0, "bw_bytes" : 0, "lat_ns" : { "mean" : 0 } } } ] }"#;
        let f = parse(json, false).unwrap();
        assert_eq!(f.version, "fio-3.33");
        assert_eq!(f.iops, 19512.3);
        assert!((f.mb_per_sec - 79.92238).abs() < 1e-9);
        assert!((f.mean_latency_us - 1638.5).abs() < 1e-9);
        assert!(parse("{}", true).is_err());
    }
}
