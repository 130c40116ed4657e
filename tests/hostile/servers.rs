//! Hostile cases: servers and their data (docs/reliability.md). kvperf
//! acts on a server only as it recorded it when it started it (pid, its
//! start time and executable, port, directory): start, stop, status and a
//! failed start's clean-up touch only that server; `--fresh` empties only
//! a table or key prefix kvperf made and marked. A user's own server is a
//! `redis-server` this test starts itself; a user's own table is made with
//! psql.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, server::free_port, server::Server};

/// A redis-server of the user's own: started by the test, not by kvperf,
/// holding a key of the user's; killed when dropped.
pub(super) struct UsersRedis {
    child: Child,
    pub(super) port: u16,
    _dir: tempfile::TempDir,
}

impl UsersRedis {
    pub(super) fn start() -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let Ok(child) = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            crate::common::skip_unless_ci(
                "redis_acl_users",
                "no redis-server here (apt-get install redis-server)",
            );
            return None;
        };
        let users = Self {
            child,
            port,
            _dir: dir,
        };
        let began = Instant::now();
        while users.cli(&["PING"]).as_deref() != Some("PONG") {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "the user's redis-server never answered"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            users.cli(&["SET", "kv:session", "the user's"]).as_deref(),
            Some("OK")
        );
        Some(users)
    }

    /// redis-cli's answer, or None when it could not reach the server.
    pub(super) fn cli(&self, args: &[&str]) -> Option<String> {
        redis_cli(self.port, args)
    }

    /// Still running, its key still there.
    pub(super) fn assert_untouched(&mut self) {
        assert_eq!(
            self.child.try_wait().unwrap(),
            None,
            "the user's redis-server exited"
        );
        assert_eq!(
            self.cli(&["GET", "kv:session"]).as_deref(),
            Some("the user's")
        );
    }
}

impl Drop for UsersRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.starts_with("Could not connect")).then_some(text)
}

/// `kvperf server ACTION redis --dir DIR --port PORT`.
pub(super) fn server(dir: &Path, action: &str, port: u16) -> common::Output {
    let shown = dir.display().to_string();
    common::kvperf(
        dir.parent().unwrap(),
        &[
            "server",
            action,
            "redis",
            "--dir",
            &shown,
            "--port",
            &port.to_string(),
        ],
    )
}

pub(super) fn answers(port: u16) -> bool {
    redis_cli(port, &["PING"]).as_deref() == Some("PONG")
}

#[test]
fn a_failed_start_on_another_port_leaves_the_running_server_alone() {
    let Some(redis) = Server::start("redis", "servers::failed_start") else {
        return;
    };
    let other = free_port();
    for port in [other, 0] {
        let out = server(&redis.server_dir(), "start", port);
        if port == 0 {
            common::assert_input_error(&out, "--port 0");
        } else {
            common::assert_input_error(&out, &format!("runs on port {}", redis.port));
        }
        assert!(
            answers(redis.port),
            "kvperf's own Redis was stopped by a failed start"
        );
    }
    assert!(!answers(other));
}

#[test]
fn a_stop_naming_another_port_stops_nothing() {
    let Some(redis) = Server::start("redis", "servers::stop_other_port") else {
        return;
    };
    let out = server(&redis.server_dir(), "stop", free_port());
    common::assert_input_error(&out, "nothing stopped");
    assert!(
        answers(redis.port),
        "stop --port OTHER stopped kvperf's Redis"
    );
    // Named by its own port, it stops.
    let out = server(&redis.server_dir(), "stop", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!answers(redis.port));
}

/// A stop or status in kvperf's directory naming the port of a user's own
/// redis-server sends that server nothing and says nothing about it.
#[test]
fn stop_and_status_naming_a_users_server_leave_it_alone() {
    let Some(redis) = Server::start("redis", "servers::users_server") else {
        return;
    };
    let Some(mut users) = UsersRedis::start() else {
        return;
    };
    let out = server(&redis.server_dir(), "status", users.port);
    common::assert_input_error(&out, &format!("runs on port {}", redis.port));
    assert!(
        !out.stdout.contains(&users.port.to_string()),
        "{}",
        out.stdout
    );
    let out = server(&redis.server_dir(), "stop", users.port);
    common::assert_input_error(&out, "nothing stopped");
    users.assert_untouched();
    assert!(answers(redis.port));
    // A directory kvperf never started a server in, the user's port named.
    let empty = tempfile::tempdir().unwrap();
    let out = server(&empty.path().join("none"), "stop", users.port);
    common::assert_input_error(&out, "kvperf has no record of a redis server on port");
    users.assert_untouched();
}

/// kvperf's server died without its pid file going (kill -9, a crash), and
/// its pid now belongs to another process: a user's own redis-server. Stop
/// and status see no kvperf server; a start starts a new one beside it.
#[test]
fn a_pid_file_naming_another_process_is_not_trusted() {
    let Some(redis) = Server::start("redis", "servers::stale_pid_file") else {
        return;
    };
    let Some(mut users) = UsersRedis::start() else {
        return;
    };
    let dir = redis.server_dir();
    let pid_file = dir.join("redis.pid");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let began = Instant::now();
    while answers(redis.port) {
        assert!(began.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&pid_file, format!("{}\n", users.child.id())).unwrap();

    let out = server(&dir, "status", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("not running"), "{}", out.stdout);
    let out = server(&dir, "stop", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    users.assert_untouched();
    // The start launches a server of its own and says so.
    let out = server(&dir, "start", redis.port);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("started"), "{}", out.stdout);
    assert!(answers(redis.port));
    users.assert_untouched();
    // `redis` stops it when dropped, and only it.
    drop(redis);
    users.assert_untouched();
}

/// `kvperf load --engine ENGINE -P workloada --fresh` with `props`, in `dir`.
fn load_fresh(dir: &Path, engine: &str, props: &[String]) -> common::Output {
    let workload = common::workload("a");
    let mut args = vec!["load", "--engine", engine, "-P", &workload, "--fresh"];
    args.extend(["-p", "recordcount=20", "-p", "fieldcount=2"]);
    for p in props {
        args.extend(["-p", p.as_str()]);
    }
    common::kvperf(dir, &args)
}

/// `--fresh` deletes no key kvperf did not mark as its store's: a user's
/// `kv:*` keys under the default prefix, a YCSB index of the user's, a
/// store an older kvperf marked (it marked stores it only adopted too).
/// A prefix kvperf made is emptied again and again.
#[test]
fn fresh_deletes_no_redis_keys_kvperf_did_not_mark() {
    let Some(mut users) = UsersRedis::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = format!("redis.port={}", users.port);
    let out = load_fresh(dir.path(), "redis", std::slice::from_ref(&port));
    common::assert_input_error(&out, "keys such as 'kv:session' under prefix ''");
    users.assert_untouched();

    for (prefix, keys, size) in [
        (
            "y:",
            [
                ["ZADD", "y:_indices", "0", "user1"],
                ["HSET", "y:user1", "field0", "x"],
            ],
            "3",
        ),
        (
            "o:",
            [
                ["SET", "o:_kvperf", "kvperf redis store", ""],
                ["SET", "o:kv:1", "x", ""],
            ],
            "5",
        ),
    ] {
        for key in keys {
            let args: Vec<&str> = key.iter().copied().filter(|a| !a.is_empty()).collect();
            assert!(users.cli(&args).is_some());
        }
        let out = load_fresh(
            dir.path(),
            "redis",
            &[port.clone(), format!("redis.keyprefix={prefix}")],
        );
        common::assert_input_error(&out, "without kvperf's mark");
        assert_eq!(users.cli(&["DBSIZE"]).as_deref(), Some(size));
    }

    for _ in 0..2 {
        let out = load_fresh(
            dir.path(),
            "redis",
            &[port.clone(), "redis.keyprefix=k:".into()],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    users.assert_untouched();
    assert_eq!(
        users.cli(&["HGET", "y:user1", "field0"]).as_deref(),
        Some("x")
    );
    assert_eq!(users.cli(&["GET", "o:kv:1"]).as_deref(), Some("x"));
}

/// A link (or a file with another name) in a server directory kvperf made
/// leads no write of the server's: `server start` refuses it in one line.
/// redis-server opened its log through a `redis.log` linked to a user's
/// file and appended to that file.
#[test]
fn a_link_in_a_server_directory_leads_no_write_of_the_server() {
    let Some(redis) = Server::start("redis", "servers::link_in_dir") else {
        return;
    };
    let dir = redis.server_dir();
    assert_eq!(redis.action("stop").code, 0);
    let users = redis.dir().join("notes.txt");
    std::fs::write(&users, "the user's\n").unwrap();
    let log = dir.join("redis.log");
    let link = |make: &dyn Fn()| {
        let _ = std::fs::remove_file(&log);
        make();
        let out = redis.action("start");
        common::assert_input_error(&out, "redis.log");
        assert!(out.stderr.contains("in server directory"), "{}", out.stderr);
        assert_eq!(std::fs::read_to_string(&users).unwrap(), "the user's\n");
        assert!(!answers(redis.port), "no server started");
    };
    link(&|| std::os::unix::fs::symlink(&users, &log).unwrap());
    link(&|| std::fs::hard_link(&users, &log).unwrap());
    std::fs::remove_file(&log).unwrap();
    assert_eq!(redis.action("start").code, 0);
}

/// A user's key that is not a sorted set where a Redis store keeps its
/// index (`_indices` under the default prefix) is one line naming it, exit
/// 2, for a load, a run and `replay --existing`; it was exit 3 in Redis's
/// words ("WRONGTYPE": Operation against a key holding the wrong kind of
/// value), a user's key called a failed run.
#[test]
fn a_users_key_where_the_index_goes_is_named_not_a_failed_run() {
    let Some(mut users) = UsersRedis::start() else {
        return;
    };
    assert!(users.cli(&["SET", "_indices", "my app's"]).is_some());
    let dir = tempfile::tempdir().unwrap();
    let port = format!("redis.port={}", users.port);
    let workload = common::workload("a");
    let trace = common::import_csv_trace(dir.path(), "t", "0,insert,k1,100\n0,read,k1,100\n");
    let common_args = ["--engine", "redis", "-p", port.as_str()];
    let load = [
        &["load", "-P", workload.as_str(), "-p", "recordcount=10"][..],
        &common_args,
    ]
    .concat();
    let run = [
        &["run", "-P", workload.as_str(), "-p", "operationcount=10"][..],
        &common_args,
    ]
    .concat();
    let replay = [&["replay", trace.as_str(), "--existing"][..], &common_args].concat();
    for args in [load, run, replay] {
        let out = common::kvperf(dir.path(), &args);
        common::assert_input_error(&out, "the key '_indices' on Redis at");
        assert!(out.stderr.contains("is not a sorted set"), "{}", out.stderr);
        assert_eq!(users.cli(&["GET", "_indices"]).as_deref(), Some("my app's"));
        users.assert_untouched();
    }
}

/// psql on kvperf's PostgreSQL, database kvperf: its output, trimmed.
pub(super) fn psql(port: u16, sql: &str) -> String {
    let out = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "postgres",
            "-d",
            "kvperf",
        ])
        .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs (it comes with PostgreSQL)");
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `--fresh` drops no PostgreSQL table kvperf did not make and mark: a
/// user's table named by `postgres.table`, its `{table}_kv`, a YCSB-shaped
/// table of the user's. Tables kvperf made (by a fresh load or a plain
/// one) are dropped and made again.
#[test]
fn fresh_drops_no_postgres_table_kvperf_did_not_mark() {
    let Some(pg) = Server::start("postgres", "servers::fresh_postgres") else {
        return;
    };
    let port = pg.properties();
    psql(pg.port, "CREATE TABLE usertable (id int PRIMARY KEY, note text); INSERT INTO usertable VALUES (1, 'mine')");
    psql(pg.port, "CREATE TABLE orders_kv (k bytea PRIMARY KEY, v bytea); INSERT INTO orders_kv VALUES ('a', 'b')");
    psql(pg.port, "CREATE TABLE ycsb (ycsb_key varchar PRIMARY KEY, field0 text, field1 text); INSERT INTO ycsb VALUES ('user1', 'x', 'y')");
    for (table, needle) in [
        ("usertable", "table usertable in database 'kvperf'"),
        ("orders", "table orders_kv in database 'kvperf'"),
        ("ycsb", "DROP TABLE ycsb"),
    ] {
        let mut props = port.clone();
        props.push(format!("postgres.table={table}"));
        let out = load_fresh(pg.dir(), "postgres", &props);
        common::assert_input_error(&out, needle);
    }
    assert_eq!(psql(pg.port, "SELECT note FROM usertable"), "mine");
    assert_eq!(psql(pg.port, "SELECT count(*) FROM orders_kv"), "1");
    assert_eq!(psql(pg.port, "SELECT field0 FROM ycsb"), "x");

    // Made by a plain load (marked), then emptied by fresh ones.
    let mut props = port.clone();
    props.push("postgres.table=k".into());
    let workload = common::workload("a");
    let mut args = vec!["load", "--engine", "postgres", "-P", &workload];
    for p in &props {
        args.extend(["-p", p.as_str()]);
    }
    let out = common::kvperf(pg.dir(), &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for _ in 0..2 {
        let out = load_fresh(pg.dir(), "postgres", &props);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(psql(pg.port, "SELECT count(*) FROM k"), "20");
    }
}

/// `kvperf load --engine ENGINE` with `props`, killed past `limit`.
fn load_within(engine: &str, props: &[String], limit: Duration) -> (common::Output, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let workload = common::workload("a");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvperf"));
    cmd.args([
        "load",
        "--engine",
        engine,
        "-P",
        &workload,
        "-p",
        "recordcount=10",
    ]);
    for p in props {
        cmd.args(["-p", p]);
    }
    let began = Instant::now();
    let mut child = cmd
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > limit {
            let _ = child.kill();
            panic!("kvperf load --engine {engine} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = began.elapsed();
    let out = child.wait_with_output().unwrap();
    (common::Output::from(out), took)
}

/// Answers every connection as an HTTP server would.
fn http() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let _ = stream.read(&mut [0; 1024]);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    port
}

/// The mongodb engine says what Redis and PostgreSQL say for the same
/// fault, at once and with exit 2: nothing listening, another protocol.
#[test]
fn mongodb_faults_are_one_line_exit_2_at_once() {
    let closed = free_port();
    let (out, took) = load_within(
        "mongodb",
        &[format!("mongodb.port={closed}")],
        Duration::from_secs(60),
    );
    common::assert_input_error(
        &out,
        &format!("cannot reach MongoDB at 127.0.0.1:{closed} ("),
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    let web = http();
    let (out, took) = load_within(
        "mongodb",
        &[format!("mongodb.port={web}")],
        Duration::from_secs(60),
    );
    common::assert_input_error(
        &out,
        &format!("the server at 127.0.0.1:{web} does not speak the MongoDB protocol"),
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// Pass 5: a port that accepts and never answers (a MongoDB server that
/// stopped) ends the mongodb engine's load as it ends Redis's and
/// PostgreSQL's (tests/wrong_port.rs): at stalltimeout, naming the wait,
/// "stopped answering", exit 3. It was exit 2 after 5 s whatever
/// stalltimeout said, "is a MongoDB server listening there?".
#[test]
fn a_silent_mongodb_port_is_a_server_that_stopped_answering_at_stalltimeout() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let (out, took) = load_within(
        "mongodb",
        &[format!("mongodb.port={port}"), "stalltimeout=2".into()],
        Duration::from_secs(60),
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!(
            "kvperf: MongoDB at 127.0.0.1:{port} did not answer within 2 s while kvperf waited for"
        )) && last.ends_with(
            "it stopped answering, or what listens there is not MongoDB (stalltimeout=2)"
        ),
        "{}",
        out.stderr
    );
    assert!(
        took >= Duration::from_secs(2),
        "{took:?}: before stalltimeout"
    );
    drop(silent);
}

/// Pass 5: a Redfish power resource saying `PowerConsumedWatts: 1e308`
/// was taken as a reading (peak 1e308 W, energy nothing, no word). A
/// reading past a megawatt is a failed one now: at the check before the
/// window, one line naming the bound, exit 2.
#[test]
fn a_redfish_reading_past_a_megawatt_is_refused() {
    if Command::new("curl").arg("--version").output().is_err() {
        common::skip_unless_ci(
            "a_redfish_reading_past_a_megawatt_is_refused",
            "no curl here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let body = r#"{"PowerControl": [{"PowerConsumedWatts": 1e308}]}"#.to_string();
    let (bmc, _) = crate::hostile::pass4::serve_json(body);
    let url = format!("power.redfish.url=http://127.0.0.1:{bmc}/redfish/v1/Chassis/1/Power");
    let out = common::kvperf(
        tmp.path(),
        &[
            "run",
            "--engine",
            "null",
            "-P",
            &common::workload("c"),
            "-p",
            "recordcount=10",
            "-p",
            "operationcount=10",
            "-p",
            "power.meter=redfish",
            "-p",
            &url,
        ],
    );
    common::assert_input_error(&out, "more than kvperf's bound of 1000000 W");
}

/// Redis at maxclients is full, not unreachable: no advice to start a
/// server on a port that is taken.
#[test]
fn a_full_redis_is_called_full() {
    use std::io::{Read, Write};
    let Some(users) = UsersRedis::start() else {
        return;
    };
    assert_eq!(
        users.cli(&["CONFIG", "SET", "maxclients", "1"]).as_deref(),
        Some("OK")
    );
    let mut held = std::net::TcpStream::connect(("127.0.0.1", users.port)).unwrap();
    held.write_all(b"PING\r\n").unwrap();
    let mut pong = [0u8; 7];
    held.read_exact(&mut pong).unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
    let (out, _) = load_within(
        "redis",
        &[format!("redis.port={}", users.port)],
        Duration::from_secs(60),
    );
    common::assert_input_error(&out, &format!("Redis at 127.0.0.1:{} is full", users.port));
    assert!(
        !out.stderr.contains("kvperf server start"),
        "{}",
        out.stderr
    );
}

/// `--fresh` drops no MongoDB collection kvperf did not make and mark (a
/// user's `usertable`, a user's `{collection}_kv`); collections kvperf made
/// are dropped and made again. Against FerretDB, started by kvperf.
#[cfg(feature = "mongodb")]
#[test]
fn fresh_drops_no_mongodb_collection_kvperf_did_not_mark() {
    use mongodb::bson::{doc, Document};
    let Some(ferretdb) = Server::start("ferretdb", "servers::fresh_mongodb") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let uri = format!("mongodb://127.0.0.1:{}", ferretdb.port);
    let client = rt
        .block_on(async { mongodb::Client::with_uri_str(&uri).await })
        .unwrap();
    let db = client.database("ycsb");
    let count = |name: &str| {
        let collection = db.collection::<Document>(name);
        rt.block_on(async { collection.count_documents(doc! {}).await })
            .unwrap()
    };
    for name in ["usertable", "orders_kv"] {
        let users = db.collection::<Document>(name);
        rt.block_on(async {
            users
                .insert_one(doc! {"_id": "mine", "note": "the user's"})
                .await
        })
        .unwrap();
    }
    let port = ferretdb.port_property("mongodb");
    for (collection, needle) in [
        ("usertable", "collection ycsb.usertable"),
        ("orders", "collection ycsb.orders_kv"),
    ] {
        let props = [port.clone(), format!("mongodb.collection={collection}")];
        let out = load_fresh(ferretdb.dir(), "mongodb", &props);
        common::assert_input_error(&out, needle);
    }
    assert_eq!((count("usertable"), count("orders_kv")), (1, 1));
    let props = [port, "mongodb.collection=k".into()];
    for _ in 0..2 {
        let out = load_fresh(ferretdb.dir(), "mongodb", &props);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(count("k"), 20);
    }
}

/// `--fresh` drops no Cassandra table kvperf did not make and mark, and
/// leaves that keyspace's replication alone; tables kvperf made (marked,
/// a flush keeps the mark) are dropped and made again.
#[cfg(feature = "cassandra")]
#[test]
fn fresh_drops_no_cassandra_table_kvperf_did_not_mark() {
    use scylla::client::session_builder::SessionBuilder;
    let Some(cassandra) = Server::start("cassandra", "servers::fresh_cassandra") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let node = format!("127.0.0.1:{}", cassandra.port);
    let session = rt
        .block_on(async { SessionBuilder::new().known_node(&node).build().await })
        .unwrap();
    let cql = |text: &str| {
        let rows = rt
            .block_on(async { session.query_unpaged(text, &[]).await })
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        rows.into_rows_result().map(|r| r.rows_num()).unwrap_or(0)
    };
    cql("CREATE KEYSPACE mine WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    cql("CREATE TABLE mine.usertable (y_id varchar PRIMARY KEY, field0 varchar, field1 varchar)");
    cql("INSERT INTO mine.usertable (y_id, field0) VALUES ('user1', 'the user''s')");
    let port = cassandra.port_property("cassandra");
    let props = [
        port.clone(),
        "cassandra.keyspace=mine".into(),
        "cassandra.replication_factor=2".into(),
    ];
    let out = load_fresh(cassandra.dir(), "cassandra", &props);
    common::assert_input_error(&out, "Cassandra table mine.usertable");
    assert_eq!(cql("SELECT y_id FROM mine.usertable"), 1);
    let props = [port, "cassandra.keyspace=k".into()];
    for _ in 0..2 {
        let out = load_fresh(cassandra.dir(), "cassandra", &props);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(cql("SELECT y_id FROM k.usertable"), 20);
    }
}

/// A process of the user's own listening on a free port (python3), killed
/// when dropped.
struct UsersListener {
    child: Child,
    port: u16,
}

impl UsersListener {
    fn start() -> Option<Self> {
        let port = free_port();
        let script = format!(
            "import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', {port}))\ns.listen()\nprint('listening', flush=True)\ntime.sleep(3600)\n"
        );
        let Ok(mut child) = Command::new("python3")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
        else {
            eprintln!("SKIPPED: no python3 here to play a user's listener");
            return None;
        };
        // Listening once it says so (its first line), not after a sleep.
        let mut line = String::new();
        let out = child.stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).unwrap();
        assert_eq!(line.trim(), "listening");
        Some(Self { child, port })
    }

    fn assert_alive(&mut self, what: &str) {
        assert_eq!(
            self.child.try_wait().unwrap(),
            None,
            "{what}: the user's process ended"
        );
        assert!(
            listening(self.port),
            "{what}: the user's process stopped listening"
        );
    }
}

impl Drop for UsersListener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listening(port: u16) -> bool {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
}

/// `kvperf server stop` of a Cassandra and a FerretDB (the MongoDB wire
/// server) that kvperf started, naming another port or the port of a
/// user's own listening process: nothing stopped, one line, exit 2, and
/// both kvperf's server and the user's process still run; named by its
/// own port, kvperf's server stops and the user's process still runs (as
/// the Redis cases above).
#[test]
fn stop_of_cassandra_and_ferretdb_touches_only_what_kvperf_started() {
    for name in ["cassandra", "ferretdb"] {
        let test = format!("servers::stop_only_own_{name}");
        let Some(server) = Server::start(name, &test) else {
            continue;
        };
        let Some(mut users) = UsersListener::start() else {
            return;
        };
        let dir = server.server_dir().display().to_string();
        for port in [free_port(), users.port] {
            let what = format!("{name}: stop --port {port}");
            let port = port.to_string();
            let out = common::kvperf(
                server.dir(),
                &["server", "stop", name, "--dir", &dir, "--port", &port],
            );
            common::assert_input_error(&out, &format!("runs on port {}", server.port));
            assert!(
                out.stderr.contains("nothing stopped"),
                "{what}: {}",
                out.stderr
            );
            assert!(
                listening(server.port),
                "{what}: kvperf's {name} was stopped"
            );
            users.assert_alive(&what);
        }
        let out = server.action("stop");
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        assert!(
            !listening(server.port),
            "{name}: still listening after its stop"
        );
        users.assert_alive(&format!("{name}: its own stop"));
    }
}
