//! fio beside kvperf (`--with-fio`): the same corner on the same target,
//! with fio's io_uring engine and the same settings, in the same run.

use std::path::Path;
use std::process::Command;

use super::buffers::BufferPages;
use super::corners::{Corner, CornersConfig};
use crate::error::InputError;
use crate::host::proc_number;
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
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let iomem = iomem_for(cfg.buffers, (p.block * p.depth) as u64, &meminfo);
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
            format!("--iomem={iomem}"),
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
    let mut figures = parse(&String::from_utf8_lossy(&output.stdout), p.write)?;
    figures.iomem = iomem.to_string();
    Ok(figures)
}

/// fio's buffers as close to kvperf's as this machine allows. fio has no
/// transparent huge pages for its buffers: huge ones come from the
/// reserved pool (`--iomem=shmhuge`, `sysctl vm.nr_hugepages`), which must
/// hold `bytes` plus the page fio adds for alignment; without it, fio's
/// default `malloc`.
pub fn iomem_for(pages: BufferPages, bytes: u64, meminfo: &str) -> &'static str {
    let free = proc_number(meminfo, "HugePages_Free:").unwrap_or(0);
    let page = proc_number(meminfo, "Hugepagesize:").unwrap_or(2048) * 1024;
    match pages {
        // One page more than the buffers: fio aligns them inside its segment.
        BufferPages::Huge if free > bytes.div_ceil(page) => "shmhuge",
        _ => "malloc",
    }
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
        iomem: String::new(),
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

    #[test]
    fn fio_gets_huge_pages_only_from_a_pool_that_holds_its_buffers() {
        let pool = |free: u64| {
            format!("HugePages_Total:       8\nHugePages_Free:     {free:>4}\nHugepagesize:       2048 kB\n")
        };
        let four_mib = 4 << 20;
        assert_eq!(iomem_for(BufferPages::Huge, four_mib, &pool(3)), "shmhuge");
        assert_eq!(iomem_for(BufferPages::Huge, four_mib, &pool(2)), "malloc");
        assert_eq!(iomem_for(BufferPages::Small, four_mib, &pool(8)), "malloc");
        assert_eq!(iomem_for(BufferPages::Huge, four_mib, ""), "malloc");
    }
}
