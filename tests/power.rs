//! Power from a meter over the measured window, through the binary: a
//! real command that prints a known wattage (joules and operations per
//! joule exact over the window), one that fails, one that stalls mid-step
//! (bounded, and the figure marked, never a shorter window), an idle
//! baseline, the Redfish meter through curl against DMTF's published
//! mockup served over HTTP, and the meters and drive counters this
//! machine does not have ("unavailable" with the reason).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{assert_input_error, run_null};
use kvperf::measure::accounting::Accounting;
use kvperf::results::StepOutput;

/// A meter script in `dir`: it counts its calls in `calls` and runs
/// `body` with `$n` the call's number.
fn meter(dir: &Path, body: &str) -> String {
    let path = dir.join("meter.sh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nn=$(cat {calls} 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > {calls}\n{body}\n",
            calls = dir.join("calls").display()
        ),
    )
    .unwrap();
    format!("sh {}", path.display())
}

/// `kvperf run` on the null engine for `seconds`, JSON out, with `extra`.
fn run(dir: &Path, seconds: &str, extra: &[&str]) -> (common::Output, Option<StepOutput>) {
    let time = format!("maxexecutiontime={seconds}");
    let mut args = vec![
        "-p",
        "recordcount=1000",
        "-p",
        "operationcount=0",
        "-p",
        &time,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = run_null(dir, "c", &args);
    let step = serde_json::from_str(&out.stdout).ok();
    (out, step)
}

fn accounting(step: &StepOutput) -> (f64, u64, Accounting) {
    let m = &step.measurements[0];
    (m.runtime_s, m.operations, m.accounting.clone().unwrap())
}

#[test]
fn a_known_wattage_integrates_to_watts_times_the_window() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = meter(tmp.path(), "echo 50");
    let power = format!("power.command={cmd}");
    let (out, step) = run(tmp.path(), "2", &["-p", &power, "-p", "power.interval=0.2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (runtime_s, operations, a) = accounting(&step.unwrap());
    let p = a.power.clone().expect("the window's power");
    assert_eq!(p.meter, format!("command: {cmd}"));
    assert_eq!(p.interval_ms, 200);
    assert_eq!(p.failed_readings, 0, "{p:?}");
    // Readings from before the window to after it, one per 0.2 s.
    assert!(p.readings >= 10, "{p:?}");
    assert_eq!(p.coverage, 1.0);
    let joules = p.joules.expect("covered: a figure");
    assert!(
        (joules - 50.0 * runtime_s).abs() < 1e-6,
        "{joules} J over {runtime_s} s"
    );
    assert_eq!(a.energy_joules, Some(joules));
    let per_joule = a.derived.ops_per_joule.unwrap();
    assert!((per_joule - operations as f64 / joules).abs() < 1e-9 * per_joule);
    assert!((p.average_watts.unwrap() - 50.0).abs() < 1e-9);
    assert_eq!(p.peak_watts, Some(50.0));
    assert!(
        !a.unavailable.iter().any(|u| u.starts_with("energy")),
        "{:?}",
        a.unavailable
    );

    // The same in YCSB's text format.
    let text = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=1000",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=1",
            "-p",
            &power,
            "-p",
            "power.interval=0.2",
        ],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    let runtime_ms = common::metric(&text.stdout, "OVERALL", "RunTime(ms)").unwrap();
    let j = common::metric(&text.stdout, "POWER", "Joules").unwrap();
    assert!(
        (j - 0.05 * runtime_ms).abs() < 0.05 * 1.0,
        "{j} J in {runtime_ms} ms"
    );
    let watts = common::metric(&text.stdout, "POWER", "AverageWatts").unwrap();
    assert!((watts - 50.0).abs() < 1e-6, "{watts} W");
    let ops = common::metric(&text.stdout, "READ", "Operations").unwrap();
    let per_j = common::metric(&text.stdout, "POWER", "OpsPerJoule").unwrap();
    assert!((per_j - ops / j).abs() < 1e-6 * per_j);
    assert_eq!(
        common::metric(&text.stdout, "POWER", "OpsPerSecPerWatt"),
        Some(per_j)
    );
}

/// db_bench mode reads the same meter over each benchmark's window.
#[test]
fn kvperf_bench_reads_the_meter_over_every_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = meter(tmp.path(), "echo 40");
    let power = format!("power.command={cmd}");
    let db = tmp.path().join("db");
    let json = tmp.path().join("bench.json");
    let out = common::kvperf(
        tmp.path(),
        &[
            "bench",
            "--engine",
            "rocksdb",
            "--db",
            db.to_str().unwrap(),
            "--benchmarks",
            "fillseq,readrandom",
            "--num",
            "20000",
            "-p",
            &power,
            "-p",
            "power.interval=0.1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step: StepOutput = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(step.measurements.len(), 2);
    for m in &step.measurements {
        let a = m.accounting.as_ref().unwrap();
        let p = a
            .power
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no power", m.name));
        assert_eq!(p.meter, format!("command: {cmd}"));
        assert!((p.average_watts.unwrap() - 40.0).abs() < 1e-9, "{p:?}");
        if let Some(joules) = p.joules {
            let per_joule = a.derived.ops_per_joule.unwrap();
            assert!((per_joule - m.operations as f64 / joules).abs() < 1e-9 * per_joule);
        } else {
            assert!(p.incomplete.is_some(), "{p:?}");
        }
    }
    // Each benchmark's line is followed by its [POWER] lines.
    let meters = out.stdout.matches("[POWER], Meter, command: ").count();
    assert_eq!(meters, 2, "{}", out.stdout);
    assert!(
        out.stdout.contains("[POWER], OpsPerJoule, "),
        "{}",
        out.stdout
    );
}

#[test]
fn an_idle_baseline_is_measured_before_the_window_and_subtracted() {
    let tmp = tempfile::tempdir().unwrap();
    // The opening reading and the five of a 0.4 s baseline at 0.1 s print
    // 20 W; from the seventh on (the window's) 50 W.
    let cmd = meter(
        tmp.path(),
        "if [ $n -le 6 ]; then echo 20; else echo 50; fi",
    );
    let power = format!("power.command={cmd}");
    let (out, step) = run(
        tmp.path(),
        "1",
        &[
            "-p",
            &power,
            "-p",
            "power.interval=0.1",
            "-p",
            "power.idle=0.4",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (runtime_s, operations, a) = accounting(&step.unwrap());
    let p = a.power.clone().unwrap();
    let idle = p.idle.expect("an idle baseline");
    assert_eq!(idle.readings, 5);
    assert!((idle.watts - 20.0).abs() < 1e-9, "{idle:?}");
    let joules = p.joules.unwrap();
    assert!((joules - 50.0 * runtime_s).abs() < 1e-6);
    let above = p.joules_above_idle.unwrap();
    assert!((above - 30.0 * runtime_s).abs() < 1e-6, "{above}");
    let per = a.derived.ops_per_joule_above_idle.unwrap();
    assert!((per - operations as f64 / above).abs() < 1e-9 * per);
}

#[test]
fn a_meter_that_fails_is_unavailable_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = meter(tmp.path(), "echo 'no PDU here' >&2; exit 3");
    let power = format!("power.command={cmd}");
    let (out, step) = run(tmp.path(), "0.5", &["-p", &power]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, _, a) = accounting(&step.unwrap());
    assert_eq!(a.power, None);
    assert_eq!(a.energy_joules, None);
    assert_eq!(a.derived.ops_per_joule, None);
    let line = a
        .unavailable
        .iter()
        .find(|u| u.starts_with("power: unavailable"))
        .unwrap_or_else(|| panic!("{:?}", a.unavailable));
    assert!(
        line.contains("exit status: 3") && line.contains("no PDU here"),
        "{line}"
    );
    assert!(
        out.stderr.contains("warning: power: unavailable"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_meter_that_stalls_or_fails_mid_step_is_bounded_and_marked() {
    for (body, says) in [
        // Three good readings, then no answer at all.
        (
            "if [ $n -le 3 ]; then echo 80; else sleep 30; echo 80; fi",
            "no reading within 1000 ms",
        ),
        // Three good readings, then failures.
        (
            "if [ $n -le 3 ]; then echo 80; else exit 1; fi",
            "exit status: 1",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let cmd = meter(tmp.path(), body);
        let power = format!("power.command={cmd}");
        let started = Instant::now();
        let (out, step) = run(tmp.path(), "2", &["-p", &power, "-p", "power.interval=0.2"]);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "a stalled meter held the step for {:?}",
            started.elapsed()
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let (_, _, a) = accounting(&step.unwrap());
        let p = a.power.clone().unwrap();
        assert_eq!(p.joules, None, "never the energy of a shorter window");
        assert_eq!(a.energy_joules, None);
        assert_eq!(a.derived.ops_per_joule, None);
        assert!(p.coverage < 0.9, "{p:?}");
        assert!(p.failed_readings >= 1);
        let first = p.first_failure.clone().unwrap();
        assert!(first.contains(says), "{first}");
        let why = p.incomplete.clone().unwrap();
        assert!(why.contains("of the window"), "{why}");
        assert!(a
            .unavailable
            .iter()
            .any(|u| u.starts_with("energy: the meter covered")));
        assert!(out.stderr.contains("are not figures"), "{}", out.stderr);
    }
}

/// Serves `body` as JSON to every request on 127.0.0.1 and hands back
/// each request's Authorization header.
fn serve(body: &'static str) -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut auth = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.strip_prefix("Authorization: ") {
                    auth = v.trim().to_string();
                }
            }
            let _ = tx.send(auth);
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{addr}"), rx)
}

/// DMTF's public-rackmount1 mockup, Chassis/1U/EnvironmentMetrics
/// (github.com/DMTF/Redfish-Mockup-Server), as its service serves it.
const ENVIRONMENT_METRICS: &str = r##"{"@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics", "Name": "Chassis Environment Metrics", "TemperatureCelsius": {"Reading": 39, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/CPU1Temp"}, "PowerWatts": {"Reading": 374, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/TotalPower"}, "@odata.id": "/redfish/v1/Chassis/1U/EnvironmentMetrics"}"##;

#[test]
fn the_redfish_meter_reads_a_served_mockup_with_credentials_from_the_environment() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip_unless_ci(
            "the_redfish_meter_reads_a_served_mockup_with_credentials_from_the_environment",
            "no curl here (scripts/ensure-deps.sh --with-chromium installs it)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (base, auth) = serve(ENVIRONMENT_METRICS);
    let url = format!("power.redfish.url={base}/redfish/v1/Chassis/1U/EnvironmentMetrics");
    let file = common::workload("c");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["run", "--engine", "null", "-P", &file])
        .args(["-p", "recordcount=1000", "-p", "operationcount=0"])
        .args(["-p", "maxexecutiontime=1", "-p", "power.meter=redfish"])
        .args(["-p", &url, "-p", "power.interval=0.25", "--format", "json"])
        .env("KVPERF_REDFISH_USER", "root")
        .env("KVPERF_REDFISH_PASSWORD", "s3cret-pw")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let step: StepOutput = serde_json::from_str(&stdout).unwrap();
    let (runtime_s, _, a) = accounting(&step);
    let p = a.power.clone().unwrap();
    assert!(
        p.meter.starts_with("redfish http://127.0.0.1:"),
        "{}",
        p.meter
    );
    let joules = p.joules.unwrap();
    assert!((joules - 374.0 * runtime_s).abs() < 1e-6);
    // Basic auth as curl sends it: base64("root:s3cret-pw").
    assert_eq!(auth.recv().unwrap(), "Basic cm9vdDpzM2NyZXQtcHc=");
    assert!(!stdout.contains("s3cret") && !stderr.contains("s3cret"));
}

#[test]
fn meters_and_drives_this_machine_lacks_say_why() {
    let tmp = tempfile::tempdir().unwrap();
    // No local BMC here (tests/bmc.rs reads one over LAN): the meter says
    // why, with ipmitool installed or not.
    if Path::new("/dev/ipmi0").exists() {
        common::skip_unless_ci(
            "meters_and_drives_this_machine_lacks_say_why",
            "this machine has a BMC (/dev/ipmi0): the local IPMI case expects none",
        );
    } else {
        let (out, step) = run(tmp.path(), "0.3", &["-p", "power.meter=ipmi"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let (_, _, a) = accounting(&step.unwrap());
        let line = a
            .unavailable
            .iter()
            .find(|u| u.starts_with("power: unavailable: ipmi dcmi (local): "))
            .unwrap_or_else(|| panic!("{:?}", a.unavailable));
        // ipmitool's own reason, or, on a loaded machine (the whole suite
        // on 2 cores), that it gave none within the meter's deadline.
        assert!(
            line.contains("cannot run ipmitool")
                || line.contains("ipmitool failed")
                || line.contains("ipmitool gave no reading within"),
            "{line}"
        );
    }
    // RAPL where the machine has it, else the reason it has none.
    let (out, step) = run(tmp.path(), "0.3", &["-p", "power.meter=rapl"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, _, a) = accounting(&step.unwrap());
    if Path::new("/sys/class/powercap/intel-rapl:0").exists() {
        let p = a.power.clone().expect("RAPL is readable here");
        assert!(p.meter.starts_with("rapl"), "{p:?}");
    } else {
        assert!(
            a.unavailable
                .iter()
                .any(|u| u.starts_with("power: unavailable: RAPL")),
            "{:?}",
            a.unavailable
        );
    }
    // A data directory on a disk: the drive is asked, and says what it is.
    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let db = disk.path().join("db");
    let file = common::workload("a");
    let out = common::kvperf(
        tmp.path(),
        &[
            "load",
            "--engine",
            "sqlite",
            "--db",
            db.to_str().unwrap(),
            "-P",
            &file,
            "-p",
            "recordcount=200",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step: StepOutput = serde_json::from_str(&out.stdout).unwrap();
    let (_, _, a) = accounting(&step);
    let drive = a
        .unavailable
        .iter()
        .find(|u| u.starts_with("drive writes:"));
    match (&a.drive, drive) {
        (Some(d), _) => eprintln!("the data directory is on NVMe: {d:?}"),
        (None, Some(why)) => assert!(
            why.contains("is not an NVMe device") || why.contains("not on a block device"),
            "{why}"
        ),
        (None, None) => panic!("no drive figure and no reason: {:?}", a.unavailable),
    }
    // With a meter asked for, YCSB's text says why the drive has no figures.
    let text = common::kvperf(
        tmp.path(),
        &[
            "load",
            "--engine",
            "sqlite",
            "--db",
            disk.path().join("db2").to_str().unwrap(),
            "-P",
            &file,
            "-p",
            "recordcount=200",
            "-p",
            "power.command=echo 50",
        ],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    let line = text.stdout.lines().find(|l| l.starts_with("[DRIVE], "));
    match (&a.drive, line) {
        (Some(_), line) => assert!(
            line.is_some_and(|l| l.starts_with("[DRIVE], Device, ")),
            "{}",
            text.stdout
        ),
        (None, Some(line)) => assert!(
            line.starts_with("[DRIVE], Unavailable, ")
                && (line.ends_with("is not an NVMe device")
                    || line.ends_with("not on a block device")),
            "{line}"
        ),
        (None, None) => panic!("no [DRIVE] line:\n{}", text.stdout),
    }
}

#[test]
fn bad_power_properties_are_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    for (props, needle) in [
        (
            vec!["power.meter=pdu"],
            "'pdu' is not rapl, ipmi, redfish or command",
        ),
        (
            vec!["power.command=echo 5", "power.interval=abc"],
            "power.interval",
        ),
        (
            vec!["power.command=echo 5", "power.interval=0"],
            "is not between",
        ),
        (vec!["power.idle=5"], "names no meter"),
        (vec!["power.meter=redfish"], "power.redfish.url"),
        (vec!["power.meter=command"], "power.command"),
        (
            vec!["power.meter=ipmi", "power.command=echo 5"],
            "goes with power.meter=command",
        ),
        (
            vec!["power.meter=ipmi", "power.ipmi.ciphersuite=18"],
            "'18' is not an RMCP+ cipher suite (0 to 17)",
        ),
        (
            vec![
                "power.meter=redfish",
                "power.redfish.url=https://bmc",
                "power.redfish.cacert=/nonexistent/ca.pem",
            ],
            "'/nonexistent/ca.pem' is not a file",
        ),
    ] {
        let mut args = vec!["-p", "recordcount=10", "-p", "operationcount=10"];
        for p in &props {
            args.extend(["-p", p]);
        }
        let out = run_null(tmp.path(), "c", &args);
        assert_input_error(&out, needle);
    }
}

#[test]
fn a_plan_with_a_meter_reports_power_beside_the_costs() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("power.toml");
    std::fs::write(
        &plan,
        r#"
name = "power"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 1000
operationcount = 0
maxexecutiontime = 1
"power.command" = "echo 50"
"power.interval" = 0.2
[[configs]]
name = "driver"
[[steps]]
workloads = ["c"]
threads = [1]
"#,
    )
    .unwrap();
    let results = tmp.path().join("results.jsonl");
    let out = common::plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = tmp.path().join("report");
    common::report(tmp.path(), &results, &report);
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        md.contains("power and drive writes at each configuration's peak"),
        "{md}"
    );
    assert!(md.contains("command: echo 50 (200 ms)"), "{md}");
    // The drive's figures say why they are absent (the null engine has no
    // data directory), with the configuration it applies to.
    assert!(
        md.contains(
            "Unavailable: drive writes: the data directory is not on a block device (driver)."
        ),
        "{md}"
    );
    let csv = std::fs::read_to_string(report.join("report.csv")).unwrap();
    let mut lines = csv.lines();
    let header = csv_fields(lines.next().unwrap());
    let row = csv_fields(lines.next().unwrap());
    assert_eq!(header.len(), row.len(), "{csv}");
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(row[at("power_meter")], "command: echo 50");
    assert_eq!(row[at("average_watts")], "50.000");
    assert_eq!(row[at("power_coverage")], "1.000");
    let joules: f64 = row[at("joules")].parse().unwrap();
    let per_joule: f64 = row[at("ops_per_joule")].parse().unwrap();
    assert!(joules > 45.0 && per_joule > 0.0, "{csv}");
}

/// A CSV line's fields, quoted ones (the verdict holds commas) unquoted.
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}
