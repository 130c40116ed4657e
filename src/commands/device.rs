//! `kvperf device corners`: the 4 corners of the device under a data
//! directory (or of a raw device), fio's way, with fio beside it if asked.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::device::buffers::BufferPages;
use crate::device::corners::{self, CornersConfig};
use crate::device::precondition::{self, PreconditionConfig};
use crate::device::{fio, target, FILL_BLOCK};
use crate::engine::store::PRECONDITION_FILE;
use crate::error::InputError;
use crate::files::Destination;
use crate::host::HostInfo;
use crate::measure::steady::SteadyCriterion;
use crate::output::{self, Format};
use crate::plan::parse_size;
use crate::results::step::{Measurement, StepOutput};
use crate::step::{self, Finished};

#[derive(Debug, Subcommand)]
pub enum DeviceCommand {
    /// 128 KiB sequential read/write MB/s and 4 KiB random read/write IOPS.
    #[command(
        long_about = "Measure the 4 corners of a device as fio's scripts do: 128 KiB\n\
        sequential read and write (MB/s) and 4 KiB random read and write (IOPS), direct\n\
        I/O through io_uring at queue depth 32, a ramp that is not counted and a fixed\n\
        runtime. TARGET is a directory (kvperf writes its own test file there and removes\n\
        it afterwards), a new file name, or a raw block device (its data is destroyed:\n\
        it must be named again with --destroy-data-on, and must not be mounted).\n\n\
        Example:\n  kvperf device corners /mnt/nvme --size 64G --runtime 1m --with-fio"
    )]
    Corners(CornersArgs),
    /// Fill a data directory's device (sequential passes), then write 4 KiB
    /// random rounds until steady state (SNIA PTS), keeping the fill file.
    #[command(
        long_about = "Precondition the device under a data directory as SSD studies do:\n\
        write kvperf's fill file (kvperf-precondition.fill, kept, owned by no engine) of\n\
        --size bytes sequentially --passes times, then, with --steady, run rounds of\n\
        4 KiB random writes at queue depth 32 until the rounds' IOPS are steady over a\n\
        window of 5 rounds (,window:N to change) or --max-rounds. --steady names the rule:\n\
        snia          range (max - min) within 20% and best-fit excursion within 10% of the mean\n\
        iops:N%       fio's: every round within +/-N% of the mean (bw:N% is the same here)\n\
        iops_slope:N% fio's: best-fit slope within N% of the mean per round\n\
        iops:N% also takes ,slope:N% (SNIA's excursion limit as well).\n\n\
        Example:\n  kvperf device precondition /mnt/nvme/kv --size 900GB --passes 2 --steady iops:20%"
    )]
    Precondition(PreconditionArgs),
}

#[derive(Debug, Args)]
pub struct PreconditionArgs {
    /// The data directory (created and marked by kvperf if missing).
    pub dir: PathBuf,
    /// Bytes of the fill file: 900GB, 64MiB, or fio's 2G (GiB).
    #[arg(long, value_name = "BYTES")]
    pub size: String,
    /// Sequential passes over the fill file (workload-independent).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub passes: u32,
    /// Then random-write rounds until steady: `snia`, or fio's `iops:N%`
    /// (every round within ±N% of the mean) or `iops_slope:N%`, with an
    /// optional `,window:N`.
    #[arg(long, value_name = "CRITERION")]
    pub steady: Option<String>,
    /// Seconds per round (or with a unit: 30s, 2m).
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = crate::units::duration_arg(1, 86_400))]
    pub round_seconds: Duration,
    /// Rounds at most (SNIA: 25).
    #[arg(long, value_name = "N", default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub max_rounds: u64,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CornersArgs {
    /// A directory, a new file, or a block device.
    pub target: PathBuf,
    /// Bytes of the test file or device to use, as fio takes them (2G is
    /// 2 GiB; also 64MiB, 1TB) (default: twice the machine's memory for a
    /// file, the whole device for a device).
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// Seconds measured per corner (or with a unit, as fio: 10s, 1m, 1.5).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = crate::units::duration_arg(1, 86_400))]
    pub runtime: Duration,
    /// Seconds run before each corner's measurement starts (not counted).
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = crate::units::duration_arg(0, 3_600))]
    pub ramp: Duration,
    /// Queue depth of the sequential corners.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub seq_depth: u64,
    /// Queue depth of the random corners.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub rand_depth: u64,
    /// Pages of the I/O buffers: huge (2 MiB transparent huge pages, one
    /// segment per block) or small (4 KiB pages wherever the kernel puts
    /// them, as fio's default buffers). The figures say how many bytes got
    /// huge pages.
    #[arg(long, value_enum, value_name = "PAGES", default_value_t = BufferPages::Huge)]
    pub io_buffers: BufferPages,
    /// Also run fio on the same target and print its figures beside kvperf's.
    #[arg(long)]
    pub with_fio: bool,
    /// Confirms that TARGET, a raw block device, may be overwritten.
    #[arg(long, value_name = "DEVICE")]
    pub destroy_data_on: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(command: DeviceCommand) -> anyhow::Result<()> {
    let (format, output, target) = match &command {
        DeviceCommand::Corners(args) => (args.format, &args.output, &args.target),
        DeviceCommand::Precondition(args) => (args.format, &args.output, &args.dir),
    };
    // fio's absence is known before anything is laid out or measured.
    if let DeviceCommand::Corners(args) = &command {
        if args.with_fio {
            fio::check_installed()?;
        }
    }
    // Checked before the device is touched; never the target itself.
    let destination = output
        .as_deref()
        .map(|p| Destination::check_or_stream(p, "--output", output::written_as(format), &[target]))
        .transpose()?;
    // Ctrl-C, SIGTERM or SIGHUP end the corner (or the fill) in progress:
    // the corners measured are written and kvperf's test file removed (by
    // default the signal ended the process, losing both, and the next run
    // refused the file left behind).
    crate::runner::stop_on_interrupt();
    let (mut out, measured) = match &command {
        DeviceCommand::Corners(args) => {
            let mut out = StepOutput::begin("corners");
            let measured = corners_into(args, &mut out);
            (out, measured)
        }
        DeviceCommand::Precondition(args) => {
            let mut out = StepOutput::begin("precondition");
            let measured = precondition_into(args, &mut out);
            (out, measured)
        }
    };
    let finished = step::finish(&mut out, measured);
    let text = match format {
        Format::Json => Some(output::json::to_pretty(&out)),
        // Corners measured before an interrupt or a failure are shown too.
        Format::Text => (finished.is_ok() || !out.measurements.is_empty()).then(|| render(&out)),
    };
    if let Some(text) = text {
        output::emit(text, format, &out.command, destination.as_ref())?;
    }
    finished.map(|Finished| ())
}

/// `--size`, at least one block of the fill's and the layout's writes: a
/// smaller target was made (a fill file of 1 byte), then failed at its
/// first write, exit 3.
fn size_arg(text: &str) -> Result<u64, InputError> {
    let size = parse_size(text).map_err(|e| InputError::Invalid(format!("--size {e}")))?;
    if size < FILL_BLOCK {
        return Err(InputError::Invalid(format!(
            "--size {text} ({size} bytes) is smaller than one {FILL_BLOCK}-byte block (1 MiB), the least kvperf writes and measures"
        )));
    }
    Ok(size)
}

fn steady_arg(text: Option<&str>) -> Result<Option<SteadyCriterion>, InputError> {
    text.map(|t| {
        SteadyCriterion::parse(t).map_err(|e| InputError::Invalid(format!("--steady {e}")))
    })
    .transpose()
}

/// Checks a device step's flags as the step does before it touches its
/// target (the plan runner's steps, before the first runs).
pub fn check_step(command: &DeviceCommand) -> Result<(), InputError> {
    match command {
        DeviceCommand::Corners(args) => args.size.as_deref().map(size_arg).transpose().map(drop),
        DeviceCommand::Precondition(args) => {
            size_arg(&args.size)?;
            steady_arg(args.steady.as_deref()).map(drop)
        }
    }
}

fn precondition_into(args: &PreconditionArgs, out: &mut StepOutput) -> anyhow::Result<()> {
    let size = size_arg(&args.size)?;
    let steady = steady_arg(args.steady.as_deref())?;
    let cfg = PreconditionConfig {
        passes: args.passes,
        steady,
        round: args.round_seconds,
        max_rounds: args.max_rounds as usize,
    };
    if !args.dir.is_dir() {
        std::fs::create_dir_all(&args.dir).map_err(|e| {
            InputError::Invalid(format!("cannot create '{}': {e}", args.dir.display()))
        })?;
    }
    let target = target::open_fill(&args.dir, PRECONDITION_FILE, size)?;
    out.host = HostInfo::collect(Some(&args.dir));
    out.engine.name = "io_uring".into();
    out.engine.version = kernel_release();
    out.settings = [
        ("target".to_string(), target.path.display().to_string()),
        ("size".to_string(), size.to_string()),
        ("passes".to_string(), args.passes.to_string()),
        (
            "steady".to_string(),
            args.steady.clone().unwrap_or_default(),
        ),
        (
            "steady_rule".to_string(),
            steady.map_or(String::new(), |c| {
                format!("{}, window {} rounds", c.rule.describe(), c.window)
            }),
        ),
        (
            "round_seconds".to_string(),
            args.round_seconds.as_secs_f64().to_string(),
        ),
    ]
    .into();
    let (measurements, steadiness) = precondition::run(&target, &cfg)
        .map_err(|e| anyhow::anyhow!("precondition of '{}': {e}", target.path.display()))?;
    out.measurements = measurements;
    out.steady = steadiness;
    Ok(())
}

fn corners_into(args: &CornersArgs, out: &mut StepOutput) -> anyhow::Result<()> {
    let size = match &args.size {
        Some(s) => Some(size_arg(s)?),
        None => None,
    };
    let cfg = CornersConfig {
        seq_depth: args.seq_depth as usize,
        rand_depth: args.rand_depth as usize,
        ramp: args.ramp,
        runtime: args.runtime,
        buffers: args.io_buffers,
        ..CornersConfig::default()
    };
    let target = target::open(&args.target, size, args.destroy_data_on.as_deref())?;
    out.host = HostInfo::collect(target.path.parent().filter(|_| !target.is_device));
    out.settings = [
        ("target".to_string(), target.path.display().to_string()),
        ("size".to_string(), target.size.to_string()),
        (
            "runtime_s".to_string(),
            args.runtime.as_secs_f64().to_string(),
        ),
        ("ramp_s".to_string(), args.ramp.as_secs_f64().to_string()),
        ("engine".to_string(), "io_uring, O_DIRECT".to_string()),
        ("io_buffers".to_string(), args.io_buffers.name().to_string()),
    ]
    .into();
    out.engine.name = "io_uring".into();
    out.engine.version = kernel_release();
    let shown = target.path.display().to_string();
    eprintln!("kvperf: laying out {shown} ({} bytes)...", target.size);
    corners::layout(&target).map_err(|e| {
        if e.kind() == std::io::ErrorKind::Interrupted {
            anyhow::anyhow!("interrupted while laying out '{shown}', before the first corner; nothing was measured")
        } else {
            anyhow::anyhow!("cannot write '{shown}': {e}")
        }
    })?;
    for corner in cfg.corners() {
        eprintln!("kvperf: {} ...", corner.name);
        let m = corners::measure(&target, &corner, &cfg).map_err(|e| {
            if e.kind() == std::io::ErrorKind::Interrupted {
                anyhow::anyhow!(
                    "interrupted during the {} corner on '{shown}'; the corners measured before it are kept ({} of 4), that one is not",
                    corner.name,
                    out.measurements.len()
                )
            } else {
                anyhow::anyhow!("{} on '{shown}': {e}", corner.name)
            }
        })?;
        // Kept before fio runs: fio's failure or an interrupt during it
        // lost kvperf's corners measured until then.
        out.measurements.push(m);
        if args.with_fio {
            let figures = fio::run(&target, &corner, &cfg).map_err(|e| {
                let kept = out.measurements.len();
                if crate::runner::interrupted() {
                    anyhow::anyhow!(
                        "interrupted while fio ran the {} corner on '{shown}'; kvperf's corners measured are kept ({kept} of 4), fio's figures for that one are not",
                        corner.name
                    )
                } else {
                    anyhow::anyhow!("{e}; kvperf's corners measured are kept ({kept} of 4)")
                }
            })?;
            let m = out.measurements.last_mut().expect("pushed above");
            if let Some(d) = m.device.as_mut() {
                d.fio = Some(figures);
            }
        }
    }
    if let Some(line) = buffers_line(&out.measurements) {
        eprintln!("kvperf: {line}");
    }
    Ok(())
}

/// One line on the corners' buffers when they are not what a reader would
/// assume: huge pages asked and not all given, or fio on other pages than
/// kvperf. None when every corner ran as asked with fio alike.
fn buffers_line(measurements: &[Measurement]) -> Option<String> {
    let devices = || {
        measurements
            .iter()
            .filter_map(|m| Some((m, m.device.as_ref()?)))
    };
    let short: Vec<String> = devices()
        .filter_map(|(m, d)| {
            let b = d.buffers.as_ref()?;
            (b.pages == BufferPages::Huge.name() && b.huge_page_bytes < b.bytes).then(|| {
                format!(
                    "{} {} of {} KiB",
                    m.name,
                    b.huge_page_bytes >> 10,
                    b.bytes >> 10
                )
            })
        })
        .collect();
    let fio_apart = devices().any(|(_, d)| {
        let kvperf_huge = d
            .buffers
            .as_ref()
            .is_some_and(|b| b.pages == BufferPages::Huge.name());
        d.fio
            .as_ref()
            .is_some_and(|f| kvperf_huge != (f.iomem == "shmhuge"))
    });
    let mut parts = Vec::new();
    if !short.is_empty() {
        parts.push(format!(
            "huge pages were asked for the I/O buffers and not all given ({}; transparent_hugepage off?): those corners may read lower on a device that pays per segment",
            short.join(", ")
        ));
    }
    if fio_apart {
        parts.push(
            "fio's buffers are on 4 KiB pages and kvperf's on huge pages: reserve huge pages for fio (sysctl vm.nr_hugepages=4) or give --io-buffers small to compare like with like".to_string(),
        );
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|r| format!("Linux {}", r.trim()))
        .unwrap_or_default()
}

/// The table a reader sets beside application results.
pub fn render(out: &StepOutput) -> String {
    if out.command == "precondition" {
        let mut text = out
            .measurements
            .iter()
            .map(|m| format!("{}: {}\n", m.name, corners::headline(m)))
            .collect::<String>();
        if let Some(s) = &out.steady {
            text.push_str(&format!("{}\n", s.describe()));
        }
        return text;
    }
    let mut text = format!(
        "4 corners of {} ({} bytes), direct I/O via io_uring, ramp {} s, runtime {} s\n\n",
        out.settings.get("target").map_or("?", String::as_str),
        out.settings.get("size").map_or("?", String::as_str),
        out.settings.get("ramp_s").map_or("?", String::as_str),
        out.settings.get("runtime_s").map_or("?", String::as_str),
    );
    let with_fio = out
        .measurements
        .iter()
        .any(|m| m.device.as_ref().is_some_and(|d| d.fio.is_some()));
    text.push_str(
        "| corner | block | queue depth | kvperf | MB/s | IOPS | mean latency us | p99 us |",
    );
    text.push_str(if with_fio {
        " fio | kvperf / fio |\n"
    } else {
        "\n"
    });
    text.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    text.push_str(if with_fio { " ---: | ---: |\n" } else { "\n" });
    for m in &out.measurements {
        let Some(d) = &m.device else { continue };
        let latency = m.ops.values().next().map(|s| &s.latency);
        text.push_str(&format!(
            "| {} | {} KiB | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |",
            m.name,
            d.block_bytes / 1024,
            d.queue_depth,
            corners::headline(m),
            d.mb_per_sec,
            m.ops_per_sec,
            latency.map_or(0.0, |l| l.avg_us),
            latency.map_or(0.0, |l| l.p99_us),
        ));
        if with_fio {
            match &d.fio {
                Some(f) if d.random => text.push_str(&format!(
                    " {:.0} IOPS | {:.2} |\n",
                    f.iops,
                    m.ops_per_sec / f.iops.max(1e-9)
                )),
                Some(f) => text.push_str(&format!(
                    " {:.0} MB/s | {:.2} |\n",
                    f.mb_per_sec,
                    d.mb_per_sec / f.mb_per_sec.max(1e-9)
                )),
                None => text.push_str(" - | - |\n"),
            }
        } else {
            text.push('\n');
        }
    }
    text.push_str(&buffers_footer(out));
    text
}

/// Under the table: which pages the I/O buffers were on, kvperf's and fio's.
fn buffers_footer(out: &StepOutput) -> String {
    let kvperf = match out.settings.get("io_buffers").map(String::as_str) {
        Some("huge") => "kvperf's on 2 MiB huge pages",
        Some("small") => "kvperf's on 4 KiB pages",
        _ => return String::new(),
    };
    let fio = out
        .measurements
        .iter()
        .find_map(|m| m.device.as_ref()?.fio.as_ref())
        .map_or(String::new(), |f| format!(", fio's --iomem={}", f.iomem));
    let mut text = format!("\nI/O buffers: {kvperf}{fio}.\n");
    if let Some(line) = buffers_line(&out.measurements) {
        text.push_str(&format!("Note: {line}.\n"));
    }
    text
}
