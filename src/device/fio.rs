//! fio beside kvperf (`--with-fio`): the same corner on the same target,
//! with fio's io_uring engine and the same settings, in the same run.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::buffers::BufferPages;
use super::corners::{Corner, CornersConfig};
use super::target::Target;
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

/// Runs fio for `corner` on the target's first `size` bytes.
///
/// fio is handed kvperf's open test file, never its name: fio splits a
/// `--filename` at ':' (and wrote each part, a user's file among them),
/// and opens by name (a link renamed over kvperf's file mid-run led it into
/// a user's file). `/dev/fd/N` reopens the inode kvperf made, whatever its
/// name leads to now. fio runs in its own process group, which a SIGINT or
/// SIGTERM to kvperf ends within seconds (fio ran out its `--runtime`).
pub fn run(target: &Target, corner: &Corner, cfg: &CornersConfig) -> anyhow::Result<FioFigures> {
    let p = corner.pattern;
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let iomem = iomem_for(cfg.buffers, (p.block * p.depth) as u64, &meminfo);
    let fd = target.file.as_raw_fd();
    let mut command = Command::new("fio");
    command
        .args([
            "--name=kvperf-corner".to_string(),
            format!("--filename=/dev/fd/{fd}"),
            // fio lays out a file shorter than --size by unlinking and
            // creating it by name: never here.
            "--allow_file_create=0".into(),
            format!("--size={}", target.size),
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
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: between fork and exec the closure calls only fcntl and prctl,
    // async-signal-safe, on the child's own descriptor table.
    unsafe {
        command.pre_exec(move || {
            // The test file's descriptor stays open across exec (the
            // child's copy only); fio ends if kvperf dies without a word.
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0
                || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| {
        InputError::Invalid(format!(
            "--with-fio: cannot run fio ({e}); install it (apt-get install fio)"
        ))
    })?;
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    // fio's own runtime bounds it; the slack covers its start and its
    // last I/O, and a fio that hangs still ends.
    let deadline = Instant::now() + cfg.ramp + cfg.runtime + Duration::from_secs(60);
    let ended = wait(&mut child, deadline)?;
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    let status = match ended {
        Ended::Exited(status) => status,
        Ended::Interrupted => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                format!("fio's {} ended by the interrupt", corner.name),
            )
            .into())
        }
        Ended::Late => anyhow::bail!(
            "fio ran past its ramp and runtime by 60 s on {} and was killed",
            corner.name
        ),
    };
    if !status.success() {
        anyhow::bail!(
            "fio failed on {}: {}",
            corner.name,
            stderr.lines().last().unwrap_or("")
        );
    }
    let mut figures = parse(&stdout, p.write)?;
    figures.iomem = iomem.to_string();
    Ok(figures)
}

enum Ended {
    Exited(ExitStatus),
    Interrupted,
    Late,
}

/// Waits for fio, ending its process group on an interrupt (SIGTERM,
/// fio's own way to stop, then SIGKILL after 5 s) or past `deadline`.
fn wait(child: &mut Child, deadline: Instant) -> std::io::Result<Ended> {
    let group = child.id() as libc::pid_t;
    let mut stop: Option<(Ended, Instant)> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(stop.map_or(Ended::Exited(status), |(why, _)| why));
        }
        // Not reaped yet: the group's id is still fio's.
        match &stop {
            None if crate::runner::interrupted() || Instant::now() > deadline => {
                let why = if crate::runner::interrupted() {
                    Ended::Interrupted
                } else {
                    Ended::Late
                };
                // SAFETY: kill(2) on fio's process group, which kvperf made.
                unsafe { libc::kill(-group, libc::SIGTERM) };
                stop = Some((why, Instant::now() + Duration::from_secs(5)));
            }
            // SAFETY: as above.
            Some((_, kill_at)) if Instant::now() > *kill_at => unsafe {
                libc::kill(-group, libc::SIGKILL);
            },
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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
