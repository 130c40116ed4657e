//! The sixteenth hostile pass, secrets a child could see
//! (docs/reliability.md, "Pass 16: secrets a child could see"): what
//! passes 14 and 15 left open. Each case failed on 4a1cd29.

use super::secrets::{assert_hidden, have_curl, serve_redfish, texts, ENVIRONMENT_METRICS, PW};
use crate::common::{self, kvperf, run_null};

/// A credential in `power.redfish.url`'s query (`?token=PW`) was on
/// curl's command line, which `ps` shows every user: now the whole URL
/// reaches curl in the config on its standard input, and curl still
/// sends it whole (the query reaches the BMC, a `[` in it too).
#[test]
fn a_redfish_urls_query_reaches_curl_only_through_its_input() {
    if !have_curl() {
        common::skip_unless_ci(
            "a_redfish_urls_query_reaches_curl_only_through_its_input",
            "no curl here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (base, requests) = serve_redfish(ENVIRONMENT_METRICS);
    // The server's URL without its user: the query alone holds PW.
    let base = base.replace(&format!("root:{PW}@"), "");
    let path = format!("/redfish/v1/Chassis/1U/EnvironmentMetrics?token={PW}&api_key={PW}");
    // A `[` was a range of URLs to curl (exit 3, "bad range").
    for path in [path.clone(), format!("{path}&f[0]=1")] {
        let json = tmp.path().join("r.json");
        let shown_json = json.display().to_string();
        let property = format!("power.redfish.url={base}{path}");
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
                "-p",
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
        assert_hidden(&texts("run", &out, &json));
        let mut served = 0;
        for (request, _, holding) in requests.try_iter() {
            served += 1;
            assert_eq!(request, format!("GET {path} HTTP/1.1"));
            assert!(
                holding.is_empty(),
                "a command line holds the query's token: {holding:?}"
            );
        }
        assert!(served >= 2, "the meter was read ({served} requests)");
    }
}

/// `ferretdb_pg_url` in libpq's key=value form (its password unscrubbed
/// as `password = PW`, and in the arguments of the script's probe of its
/// host), or a URL FerretDB would log whole (a raw `%`, a space): refused
/// before any script runs, exit 2, one line that quotes none of it, from
/// `server start` and from a plan alike.
#[test]
fn a_pg_url_ferretdb_cannot_read_is_refused_before_the_script_unquoted() {
    let tmp = tempfile::tempdir().unwrap();
    let port = common::server::free_port().to_string();
    for url in [
        format!("host=127.0.0.1 port={port} user=u password = {PW} dbname=d"),
        format!("host=127.0.0.1 port={port} user=u password='{PW} x' dbname=d"),
        format!("postgres://u:{PW}%zz@127.0.0.1:{port}/d"),
        format!("postgres://u:{PW} x@127.0.0.1:{port}/d"),
        format!("postgres://u:{PW}/x@127.0.0.1:{port}/d"),
    ] {
        let dir = tmp.path().join("fd");
        let setting = format!("ferretdb_pg_url={url}");
        let out = kvperf(
            tmp.path(),
            &[
                "server",
                "start",
                "ferretdb",
                "--dir",
                &dir.display().to_string(),
                "--port",
                &port,
                "-p",
                "ferretdb_handler=postgresql",
                "-p",
                &setting,
            ],
        );
        assert_eq!(out.code, 2, "{url}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.contains("-p ferretdb_pg_url: "),
            "{}",
            out.stderr
        );
        assert_hidden(&[(url.clone(), out.stdout + &out.stderr)]);
        assert!(!dir.exists(), "{url}: a script ran");

        let plan = tmp.path().join("wire.toml");
        std::fs::write(
            &plan,
            format!(
                r#"
name = "wire"
driver = "ycsb"
engine = "mongodb"
[properties]
recordcount = 10
[[configs]]
name = "pg"
servers = [{{ name = "ferretdb", port = {port}, settings = {{ ferretdb_handler = "postgresql", ferretdb_pg_url = "{}" }} }}]
[[steps]]
workloads = ["c"]
threads = [1]
"#,
                url.replace('\\', "\\\\").replace('"', "\\\"")
            ),
        )
        .unwrap();
        let results = tmp.path().join("r.jsonl");
        let out = common::plan_run(tmp.path(), &plan, &results);
        assert_eq!(out.code, 2, "{url}: {}", out.stderr);
        assert!(
            out.stderr.contains("-p ferretdb_pg_url: "),
            "{}",
            out.stderr
        );
        assert_hidden(&texts(&url, &out, &results));
    }
}

/// A host given with a user and password but no scheme (`u:PW@h`): the
/// client takes it for a host's name and its error quoted it, as did the
/// `Command line:` header and the JSON's settings; `power.ipmi.host`
/// also put it on ipmitool's arguments. Each is now shown redacted, and
/// an IPMI host holding a user is refused before anything runs.
#[test]
fn a_user_and_password_in_a_host_without_a_scheme_are_in_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let port = common::server::free_port().to_string();
    let json = tmp.path().join("h.json");
    let shown_json = json.display().to_string();
    for (engine, host) in [
        ("redis", format!("redis.host=u:{PW}@127.0.0.1")),
        ("postgres", format!("postgres.host=u:{PW}@127.0.0.1")),
        (
            "null",
            format!("power.ipmi.host=admin:{PW}@127.0.0.1:{port}"),
        ),
    ] {
        let eq_form = format!("-p={host}");
        let out = kvperf(
            tmp.path(),
            &[
                "run",
                "--engine",
                engine,
                "-P",
                &common::workload("c"),
                "-p",
                "recordcount=10",
                "-p",
                "operationcount=10",
                "-p",
                "power.meter=ipmi",
                "-p",
                &host,
                &eq_form,
                "--format",
                "json",
                "--output",
                &shown_json,
            ],
        );
        assert_eq!(out.code, 2, "{host}: {}", out.stderr);
        assert_hidden(&texts(&host, &out, &json));
    }
}
