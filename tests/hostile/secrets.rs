//! Hostile cases: secrets (docs/reliability.md). A credential, in any
//! spelling a user may type it (`-p k=v`, `-p=k=v`, `-pk=v`, a property
//! file, a plan, a misspelt name, a URL's userinfo), reaches no output:
//! not stderr's `Command line:` header, not a warning or an error line,
//! not the JSON written on success or on refusal, not a results file or a
//! report, and not a child process's arguments (`ps` shows them to every
//! user).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use crate::common::{self, assert_input_error, kvperf, run_null};

/// A password no real text holds by chance.
pub(super) const PW: &str = "S3cr3t-h44-pw";

/// Asserts that no text of `shown` (what, text) holds [`PW`].
pub(super) fn assert_hidden(shown: &[(String, String)]) {
    for (what, text) in shown {
        assert!(!text.contains(PW), "{what} shows the password:\n{text}");
    }
}

/// stdout, stderr and the file `json` (if written) of a finished command.
pub(super) fn texts(what: &str, out: &common::Output, json: &Path) -> Vec<(String, String)> {
    vec![
        (format!("{what}: stdout"), out.stdout.clone()),
        (format!("{what}: stderr"), out.stderr.clone()),
        (
            format!("{what}: {}", json.display()),
            std::fs::read_to_string(json).unwrap_or_default(),
        ),
    ]
}

#[test]
fn a_password_in_any_spelling_of_p_is_in_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("r.json");
    let shown_json = json.display().to_string();
    let given = |s: &str| s.replace("PW", PW);
    // Each spelling clap and kvperf read as the property: the value is
    // the engine's (authenticating), so the run goes on with it.
    let spellings: [&[&str]; 9] = [
        &["-p", "redis.password=PW"],
        &["-p=redis.password=PW"],
        &["-p=postgres.password=PW"],
        &["-predis.password=PW"],
        &["-p", "mongodb.url=mongodb://kv:PW@127.0.0.1:1/db"],
        &["-p=db.url=postgres://kv:PW@127.0.0.1/db?sslmode=disable"],
        // Misspelt, and credential words beyond "password".
        &["-p", "redis.pasword=PW"],
        &["-p=postgres.passwrod=PW"],
        &["-p", "s3.secret_access_key=PW", "-p", "api_token=PW"],
    ];
    for spelling in spellings {
        let args: Vec<String> = spelling.iter().map(|s| given(s)).collect();
        let mut all = vec!["-p", "recordcount=100", "-p", "operationcount=100"];
        all.extend(args.iter().map(String::as_str));
        all.extend(["--format", "json", "--output", &shown_json]);
        let out = run_null(tmp.path(), "c", &all);
        assert_eq!(out.code, 0, "{spelling:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("Command line: "),
            "the header is shown: {}",
            out.stderr
        );
        assert_hidden(&texts(&format!("{spelling:?}"), &out, &json));
        std::fs::remove_file(&json).unwrap();
    }
    // `-p KEY:VALUE` (a typo for `=`) is refused without echoing it.
    let typo = format!("redis.password:{PW}");
    let out = run_null(tmp.path(), "c", &["-p", &typo]);
    assert_input_error(&out, "-p expects key=value");
    assert_hidden(&texts("-p KEY:VALUE", &out, &json));
}

/// A misspelt engine option is refused (exit 2) with a did-you-mean, and
/// the JSON kvperf writes on refusal keeps the property redacted.
#[test]
fn a_refused_misspelt_password_is_in_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("refused.json");
    let shown_json = json.display().to_string();
    let file = common::workload("c");
    for (engine, option) in [
        ("redis", "redis.pasword"),
        ("redis", "redis.passwd"),
        ("postgres", "postgres.pasword"),
    ] {
        let assignment = format!("{option}={PW}");
        for spelling in [
            vec!["-p".to_string(), assignment.clone()],
            vec![format!("-p={assignment}")],
        ] {
            let mut args = vec!["run", "--engine", engine, "-P", &file];
            args.extend(["-p", "operationcount=10", "-p", "recordcount=10"]);
            args.extend(spelling.iter().map(String::as_str));
            args.extend(["--format", "json", "--output", &shown_json]);
            let out = kvperf(tmp.path(), &args);
            assert_input_error(&out, &format!("unknown {engine} option '{option}'"));
            assert_hidden(&texts(&format!("{engine} {spelling:?}"), &out, &json));
            let written = std::fs::read_to_string(&json).unwrap();
            assert!(
                written.contains(&format!("\"{option}\": \"(redacted)\"")),
                "{written}"
            );
            std::fs::remove_file(&json).unwrap();
        }
    }
}

/// A property file (`-P`) holding a password, misspelt or not: its value
/// is in no output, on success or on refusal.
#[test]
fn a_password_in_a_property_file_is_in_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("r.json");
    let shown_json = json.display().to_string();
    let props = tmp.path().join("secret.properties");
    std::fs::write(
        &props,
        format!(
            "recordcount=100\noperationcount=100\npostgres.password={PW}\n\
             postgres.pasword : {PW}\nredis.PassWord {PW}\n"
        ),
    )
    .unwrap();
    let shown_props = props.display().to_string();
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-P",
            &shown_props,
            "--format",
            "json",
            "--output",
            &shown_json,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_hidden(&texts("-P file, null engine", &out, &json));
    // Refused by the engine (its misspelt option), with the JSON written.
    let file = common::workload("c");
    let args = [
        "run",
        "--engine",
        "postgres",
        "-P",
        &file,
        "-P",
        &shown_props,
        "--format",
        "json",
        "--output",
        &shown_json,
    ];
    let out = kvperf(tmp.path(), &args);
    assert_input_error(&out, "postgres.pasword");
    assert_hidden(&texts("-P file, postgres", &out, &json));
    assert!(json.exists(), "the refusal's JSON is written");
}

/// A plan's misspelt password property reaches neither the results, the
/// report, `plan show`, what `plan run` prints, nor a step's command
/// line (it goes to the child in its environment).
#[test]
fn a_misspelt_password_in_a_plan_is_in_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "misspelt"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 100
operationcount = 100
"redis.pasword" = "{PW}"
"power.redfish.urll" = "https://root:{PW}@bmc/redfish/v1"
[[configs]]
name = "driver"
[[steps]]
workloads = ["c"]
threads = [1]
"#
        ),
    )
    .unwrap();
    let shown_plan = plan.display().to_string();
    let results = tmp.path().join("r.jsonl");
    let out = common::plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let show = kvperf(tmp.path(), &["plan", "show", &shown_plan]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    let report = tmp.path().join("report");
    common::report(tmp.path(), &results, &report);
    let mut shown = texts("plan run", &out, &results);
    shown.push(("plan show".into(), show.stdout + &show.stderr));
    for file in ["report.md", "report.csv", "report.html"] {
        let text = std::fs::read_to_string(report.join(file)).unwrap();
        shown.push((file.into(), text));
    }
    assert_hidden(&shown);
}

/// What [`serve_redfish`] saw of one request: its request line, its
/// Authorization header, and the command lines that held [`PW`] while it
/// waited for its answer.
pub(super) type Served = (String, String, Vec<String>);

/// Serves `body` as JSON to every request on 127.0.0.1; hands back, for
/// each request, its request line, its Authorization header and whether
/// any process's command line held [`PW`] while the request waited for
/// its answer (curl is then running, its arguments in /proc/PID/cmdline).
pub(super) fn serve_redfish(body: &'static str) -> (String, std::sync::mpsc::Receiver<Served>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut request = String::new();
            let _ = reader.read_line(&mut request);
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
            let _ = tx.send((request.trim().to_string(), auth, command_lines_holding(PW)));
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://root:{PW}@{addr}"), rx)
}

/// The command lines that hold `needle` of this machine's processes but
/// those this test process started itself (the commands a user typed,
/// which hold what the user typed): kvperf's children (curl, a plan's
/// steps) and theirs are all checked.
pub(super) fn command_lines_holding(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        // /proc/PID/stat: "PID (COMM) STATE PPID ...", COMM may hold spaces.
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(str::to_string));
        if ppid.as_deref() == Some(me.as_str()) {
            continue;
        }
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains(needle) {
            found.push(line);
        }
    }
    found
}

/// DMTF's public-rackmount1 mockup, Chassis/1U/EnvironmentMetrics.
pub(super) const ENVIRONMENT_METRICS: &str = r##"{"@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics", "PowerWatts": {"Reading": 374, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/TotalPower"}}"##;

pub(super) fn have_curl() -> bool {
    Command::new("curl").arg("--version").output().is_ok()
}

/// A password in `power.redfish.url`: curl authenticates with it (Basic
/// root:PW) but its arguments never hold it, and neither does the
/// result, stderr, nor (in a plan) the results file and the report.
#[test]
fn a_redfish_urls_password_reaches_curl_only_through_its_input() {
    if !have_curl() {
        common::skip_unless_ci(
            "a_redfish_urls_password_reaches_curl_only_through_its_input",
            "no curl here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (base, requests) = serve_redfish(ENVIRONMENT_METRICS);
    let url = format!("{base}/redfish/v1/Chassis/1U/EnvironmentMetrics");
    let json = tmp.path().join("r.json");
    let shown_json = json.display().to_string();
    let property = format!("-p=power.redfish.url={url}");
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=0",
            "-p",
            "maxexecutiontime=1",
            "-p",
            "power.meter=redfish",
            &property,
            "-p",
            "power.interval=0.25",
            "--format",
            "json",
            "--output",
            &shown_json,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let written = std::fs::read_to_string(&json).unwrap();
    assert!(written.contains("\"joules\""), "{written}");
    assert!(
        written.contains("redfish http://root:(redacted)@127.0.0.1:"),
        "{written}"
    );
    assert_hidden(&texts("run", &out, &json));
    let mut served = 0;
    for (_, auth, holding) in requests.try_iter() {
        served += 1;
        // base64("root:S3cr3t-h44-pw"), as curl sends it.
        assert_eq!(auth, "Basic cm9vdDpTM2NyM3QtaDQ0LXB3");
        assert!(
            holding.is_empty(),
            "a command line holds the password: {holding:?}"
        );
    }
    assert!(served >= 2, "the meter was read ({served} requests)");

    // The same meter in a plan: results, report, what plan run prints.
    let plan = tmp.path().join("power.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "power"
driver = "ycsb"
engine = "null"
[properties]
recordcount = 100
operationcount = 0
maxexecutiontime = 1
"power.meter" = "redfish"
"power.redfish.url" = "{url}"
"power.interval" = 0.25
[[configs]]
name = "driver"
[[steps]]
workloads = ["c"]
threads = [1]
"#
        ),
    )
    .unwrap();
    let results = tmp.path().join("r.jsonl");
    let out = common::plan_run(tmp.path(), &plan, &results);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = tmp.path().join("report");
    common::report(tmp.path(), &results, &report);
    let mut shown = texts("plan run", &out, &results);
    for file in ["report.md", "report.csv", "report.html"] {
        let text = std::fs::read_to_string(report.join(file)).unwrap();
        shown.push((file.into(), text));
    }
    assert_hidden(&shown);
    for (_, _, holding) in requests.try_iter() {
        assert!(
            holding.is_empty(),
            "a command line holds the password: {holding:?}"
        );
    }
}

/// A meter whose URL holds a password and cannot be read: its one line
/// on stderr names the URL redacted.
#[test]
fn an_unreadable_redfish_url_is_named_redacted() {
    if !have_curl() {
        common::skip_unless_ci(
            "an_unreadable_redfish_url_is_named_redacted",
            "no curl here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let closed = common::server::free_port();
    let json = tmp.path().join("r.json");
    let shown_json = json.display().to_string();
    let property =
        format!("power.redfish.url=http://root:{PW}@127.0.0.1:{closed}/redfish/v1/Chassis/1/Power");
    let out = run_null(
        tmp.path(),
        "c",
        &[
            "-p",
            "recordcount=100",
            "-p",
            "operationcount=100",
            "-p",
            "power.meter=redfish",
            "-p",
            &property,
            "--format",
            "json",
            "--output",
            &shown_json,
        ],
    );
    // A BMC named by address that gives no reading is bad input, before
    // anything is measured: one line, the URL redacted.
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "property power.redfish.url: no reading: redfish http://root:(redacted)@127.0.0.1:"
        ),
        "{}",
        out.stderr
    );
    assert_hidden(&texts("unreadable meter", &out, &json));
}

/// A real Redis that wants a password: `-p=redis.password=PW` (the `=`
/// form) authenticates, and the password is in no output.
#[test]
fn the_eq_form_authenticates_a_real_redis_and_is_never_shown() {
    let Some(server) = common::server::Server::start("redis", "secrets::redis_eq_form") else {
        return;
    };
    let port = server.port.to_string();
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(cli(&["CONFIG", "SET", "requirepass", PW]), "OK");
    let json = server.dir().join("r.json");
    let shown_json = json.display().to_string();
    let file = common::workload("c");
    let port_property = server.port_property("redis");
    let eq_form = format!("-p=redis.password={PW}");
    let load = kvperf(
        server.dir(),
        &[
            "load",
            "--engine",
            "redis",
            "-P",
            &file,
            "-p",
            &port_property,
            "-p",
            "recordcount=50",
            &eq_form,
            "--format",
            "json",
            "--output",
            &shown_json,
        ],
    );
    let reset = Command::new("redis-cli")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--no-auth-warning",
            "-a",
            PW,
        ])
        .args(["CONFIG", "SET", "requirepass", ""])
        .output()
        .expect("redis-cli runs");
    assert!(reset.status.success());
    assert_eq!(load.code, 0, "{}", load.stderr);
    assert!(load.stderr.contains("Command line: "), "{}", load.stderr);
    assert_hidden(&texts("redis load", &load, &json));
}
