//! The IPMI and Redfish power meters against real BMC software on
//! 127.0.0.1: OpenIPMI's BMC simulator (`ipmi_sim`, Debian's openipmi)
//! over RMCP+ read by ipmitool, and sushy-tools' `sushy-static` (PyPI)
//! serving the Redfish mockup in tests/fixtures/redfish-mockup over HTTPS
//! with a self-signed certificate. Each test sets the watts, changes them
//! mid-run, and checks the window's joules against the set watts over the
//! window; a BMC that refuses the credentials, does not answer, or shows
//! a certificate kvperf was not told to trust is one line and exit 2
//! before anything is measured; the password is in no output and on no
//! child's command line.
//!
//! What is not real here: ipmi_sim implements no DCMI (it answers
//! "Invalid command"), so the meter reads a power sensor in watts, as
//! `power.ipmi.sensor` asks; sushy-static has no authentication, so the
//! test checks that the credentials arrive as Basic auth in its log, not
//! that a wrong password is refused by it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kvperf::results::StepOutput;

const IPMI_PASSWORD: &str = "s3cret-bmc-pw";
const REDFISH_PASSWORD: &str = "s3cret-redfish-pw";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn on_path(program: &str) -> bool {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .any(|d| Path::new(d).join(program).exists())
}

fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// A server process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `check` until it succeeds, for up to 20 s.
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what} did not come up within 20 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The command lines of this machine's processes running `program`.
fn command_lines(program: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.split(' ').next().is_some_and(|p| p.ends_with(program)))
        .collect()
}

/// `kvperf run` on the null engine for `seconds` with `props` and `env`,
/// JSON out. While it runs, `during` is called every 50 ms with the
/// milliseconds since the start; it returns the command lines it saw.
fn run_kvperf(
    dir: &Path,
    seconds: u32,
    props: &[String],
    env: &[(&str, &str)],
    mut during: impl FnMut(u128),
) -> common::Output {
    let file = common::workload("c");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.args(["run", "--engine", "null", "-P", &file])
        .args(["-p", "recordcount=1000", "-p", "operationcount=0"])
        .arg("-p")
        .arg(format!("maxexecutiontime={seconds}"))
        .args(["-p", "power.interval=0.2", "--format", "json"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for p in props {
        cmd.args(["-p", p]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() {
        during(started.elapsed().as_millis());
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = waiter.join().unwrap();
    common::Output::from(out)
}

/// The joules of `before` watts until `change_ms` (Unix ms) and `after`
/// watts from then on, over the window of `runtime_s` from `start_ms`.
fn expected_joules(start_ms: f64, runtime_s: f64, change_ms: f64, before: f64, after: f64) -> f64 {
    let end_ms = start_ms + runtime_s * 1000.0;
    let change = change_ms.clamp(start_ms, end_ms);
    (before * (change - start_ms) + after * (end_ms - change)) / 1000.0
}

/// Asserts a result's window drew `before` W until `change_ms`, then
/// `after` W, within 5%, read by the meter `meter`.
fn assert_watts(out: &common::Output, meter: &str, change_ms: f64, before: f64, after: f64) {
    assert_eq!(out.code, 0, "{}", out.stderr);
    let step: StepOutput = serde_json::from_str(&out.stdout).unwrap();
    let m = &step.measurements[0];
    let p = m.accounting.as_ref().unwrap().power.clone().unwrap();
    assert_eq!(p.meter, meter);
    assert_eq!(p.failed_readings, 0, "{p:?}");
    let joules = p.joules.expect("the whole window covered");
    let start_ms = step.measurements[0].start_unix_ms as f64;
    let want = expected_joules(start_ms, m.runtime_s, change_ms, before, after);
    assert!(
        (joules - want).abs() <= 0.05 * want,
        "{joules} J read, {want} J set ({before} W then {after} W from {change_ms}, window from {start_ms} for {} s)",
        m.runtime_s
    );
    assert_eq!(p.peak_watts, Some(after.max(before)), "{p:?}");
}

/// Asserts a refused meter: exit 2, one line naming `property`, no
/// password.
fn assert_refused(out: &common::Output, property: &str, needle: &str, password: &str) {
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains(property) && lines[0].contains(needle),
        "{}",
        lines[0]
    );
    assert!(!out.stderr.contains(password) && !out.stdout.contains(password));
}

/// ipmi_sim on 127.0.0.1:`port` with the fixtures' BMC, its sensor
/// reading the watts in `dir`/watts.
fn start_ipmi_sim(dir: &Path, port: u16) -> Killed {
    let fill = |name: &str| {
        std::fs::read_to_string(fixtures().join("ipmi-sim").join(name))
            .unwrap()
            .replace("@PORT@", &port.to_string())
            .replace("@PASSWORD@", IPMI_PASSWORD)
            .replace("@WATTS_FILE@", dir.join("watts").to_str().unwrap())
    };
    std::fs::write(dir.join("lan.conf"), fill("lan.conf")).unwrap();
    std::fs::write(dir.join("bmc.emu"), fill("bmc.emu")).unwrap();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let log = std::fs::File::create(dir.join("ipmi_sim.log")).unwrap();
    let child = Command::new("ipmi_sim")
        .arg("-c")
        .arg(dir.join("lan.conf"))
        .arg("-f")
        .arg(dir.join("bmc.emu"))
        .arg("-s")
        .arg(dir.join("state"))
        .arg("-n")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let sim = Killed(child);
    let host = format!("{port}");
    wait_until("ipmi_sim", || {
        Command::new("ipmitool")
            .args(["-I", "lanplus", "-H", "127.0.0.1", "-p", &host])
            .args(["-C", "3", "-U", "kvperf", "-E", "sensor", "reading"])
            .arg("Pwr Consumption")
            .env("IPMI_PASSWORD", IPMI_PASSWORD)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    sim
}

fn free_udp_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().port()
}

#[test]
fn the_ipmi_meter_reads_ipmi_sims_power_sensor_over_rmcp_plus() {
    if !on_path("ipmi_sim") || !on_path("ipmitool") {
        common::skip_unless_ci(
            "the_ipmi_meter_reads_ipmi_sims_power_sensor_over_rmcp_plus",
            "ipmi_sim or ipmitool is not installed (scripts/ensure-deps.sh --with-chromium installs openipmi and ipmitool)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("watts"), "120\n").unwrap();
    let port = free_udp_port();
    let sim = start_ipmi_sim(tmp.path(), port);
    let host = format!("127.0.0.1:{port}");
    let props = vec![
        "power.meter=ipmi".to_string(),
        format!("power.ipmi.host={host}"),
        "power.ipmi.sensor=Pwr Consumption".to_string(),
        // ipmi_sim does not offer suite 17, ipmitool's first try.
        "power.ipmi.ciphersuite=3".to_string(),
    ];
    let env = [
        ("KVPERF_IPMI_USER", "kvperf"),
        ("KVPERF_IPMI_PASSWORD", IPMI_PASSWORD),
    ];
    let mut change_ms = f64::NAN;
    let mut seen = Vec::new();
    let out = run_kvperf(tmp.path(), 4, &props, &env, |ms| {
        if ms >= 2500 && change_ms.is_nan() {
            std::fs::write(tmp.path().join("watts"), "200\n").unwrap();
            change_ms = unix_ms();
        }
        seen.extend(command_lines("ipmitool"));
    });
    assert!(!change_ms.is_nan(), "the run ended before the change");
    let meter = format!("ipmi sensor 'Pwr Consumption' (lanplus {host})");
    assert_watts(&out, &meter, change_ms, 120.0, 200.0);
    assert!(!out.stdout.contains(IPMI_PASSWORD) && !out.stderr.contains(IPMI_PASSWORD));
    assert!(!seen.is_empty(), "no ipmitool seen while kvperf ran");
    assert!(seen.iter().all(|c| !c.contains(IPMI_PASSWORD)), "{seen:?}");

    // DCMI, which ipmi_sim lacks: the meter says to name the sensor.
    let dcmi: Vec<String> = props
        .iter()
        .filter(|p| !p.starts_with("power.ipmi.sensor"))
        .cloned()
        .collect();
    let out = run_kvperf(tmp.path(), 1, &dcmi, &env, |_| {});
    assert_refused(&out, "power.ipmi.host", "power.ipmi.sensor", IPMI_PASSWORD);

    // A wrong password, then no BMC at all: one line each, exit 2.
    let wrong = [
        ("KVPERF_IPMI_USER", "kvperf"),
        ("KVPERF_IPMI_PASSWORD", "not-it"),
    ];
    let out = run_kvperf(tmp.path(), 1, &props, &wrong, |_| {});
    assert_refused(&out, "power.ipmi.host", "ipmitool failed", IPMI_PASSWORD);
    drop(sim);
    let out = run_kvperf(tmp.path(), 1, &props, &env, |_| {});
    assert_refused(&out, "power.ipmi.host", "no reading", IPMI_PASSWORD);
    assert!(!tmp.path().join("c").exists());
}

/// sushy-static, installed into the cache by scripts/sushy-tools.sh.
fn sushy_static() -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/sushy-tools.sh");
    let out = Command::new("bash")
        .arg(script)
        .output()
        .map_err(|e| format!("cannot run scripts/sushy-tools.sh ({e})"))?;
    if !out.status.success() {
        return Err(format!(
            "scripts/sushy-tools.sh failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A self-signed certificate for 127.0.0.1 and its key, in `dir`.
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let ok = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "openssl could not make a certificate");
    (cert, key)
}

/// Copies the mockup tree to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Sets the chassis's PowerConsumedWatts in the served tree (a rename,
/// so the service never reads half a file).
fn set_redfish_watts(mockup: &Path, watts: u32) {
    let power = mockup.join("Chassis/1U/Power/index.json");
    let text = std::fs::read_to_string(&power).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["PowerControl"][0]["PowerConsumedWatts"] = watts.into();
    let tmp = power.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    std::fs::rename(tmp, power).unwrap();
}

#[test]
fn the_redfish_meter_walks_sushy_static_from_the_service_root_over_https() {
    let test = "the_redfish_meter_walks_sushy_static_from_the_service_root_over_https";
    let sushy = match sushy_static() {
        Ok(path) => path,
        Err(why) => {
            common::skip_unless_ci(test, &why);
            return;
        }
    };
    if !on_path("openssl") || !on_path("curl") {
        common::skip_unless_ci(test, "openssl or curl is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mockup = tmp.path().join("mockup");
    copy_tree(&fixtures().join("redfish-mockup"), &mockup);
    set_redfish_watts(&mockup, 300);
    let (cert, key) = self_signed(tmp.path());
    let port = common::server::free_port();
    let log = std::fs::File::create(tmp.path().join("sushy.log")).unwrap();
    let _sushy = Killed(
        Command::new(&sushy)
            .args(["-i", "127.0.0.1", "-p", &port.to_string()])
            .arg("-m")
            .arg(&mockup)
            .arg("-c")
            .arg(&cert)
            .arg("-k")
            .arg(&key)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let root = format!("https://127.0.0.1:{port}");
    wait_until("sushy-static", || {
        Command::new("curl")
            .args(["--silent", "--fail", "--cacert"])
            .arg(&cert)
            .arg(format!("{root}/redfish/v1/"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    let trusted = vec![
        "power.meter=redfish".to_string(),
        format!("power.redfish.url={root}/redfish/v1"),
        format!("power.redfish.cacert={}", cert.display()),
    ];
    let env = [
        ("KVPERF_REDFISH_USER", "root"),
        ("KVPERF_REDFISH_PASSWORD", REDFISH_PASSWORD),
    ];
    let mut change_ms = f64::NAN;
    let mut seen = Vec::new();
    let out = run_kvperf(tmp.path(), 4, &trusted, &env, |ms| {
        if ms >= 2500 && change_ms.is_nan() {
            set_redfish_watts(&mockup, 420);
            change_ms = unix_ms();
        }
        seen.extend(command_lines("curl"));
    });
    assert!(!change_ms.is_nan(), "the run ended before the change");
    // The walk passed the chassis without a power resource.
    let meter = format!("redfish {root}/redfish/v1/Chassis/1U/Power");
    assert_watts(&out, &meter, change_ms, 300.0, 420.0);
    assert!(!out.stdout.contains(REDFISH_PASSWORD) && !out.stderr.contains(REDFISH_PASSWORD));
    assert!(!seen.is_empty(), "no curl seen while kvperf ran");
    assert!(
        seen.iter().all(|c| !c.contains(REDFISH_PASSWORD)),
        "{seen:?}"
    );
    // The credentials reached the service as Basic auth (sushy-static
    // logs each request's headers; it checks none): base64("root:s3cret-redfish-pw").
    let served = std::fs::read_to_string(tmp.path().join("sushy.log")).unwrap();
    assert!(
        served.contains("Authorization: Basic cm9vdDpzM2NyZXQtcmVkZmlzaC1wdw=="),
        "{served}"
    );

    // The same service without being told to trust its certificate.
    let untrusted = &trusted[..2];
    let out = run_kvperf(tmp.path(), 1, untrusted, &env, |_| {});
    assert_refused(&out, "power.redfish.url", "certificate", REDFISH_PASSWORD);
}
