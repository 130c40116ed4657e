//! The eighth hostile pass, servers and their data (docs/reliability.md,
//! "Pass 8: servers"). Each case failed on main of 2026-11-29 (b17f7e9).

use crate::common::{self, assert_input_error, server::Server};

use super::servers::answers;

/// `kvperf server ACTION NAME --dir DIR` (and `--port PORT` if given).
fn server(dir: &std::path::Path, action: &str, name: &str, port: Option<u16>) -> common::Output {
    let shown = dir.display().to_string();
    let port = port.map(|p| p.to_string());
    let mut args = vec!["server", action, name, "--dir", &shown];
    if let Some(port) = port.as_deref() {
        args.extend(["--port", port]);
    }
    common::kvperf(dir.parent().unwrap(), &args)
}

/// A copy of a running server's directory (`cp -a`, a backup) holds that
/// server's record, but no server of its own: `stop` and `status` there
/// leave the original alone. `server stop --dir COPY` stopped the original
/// (a Redis without persistence: all its data gone) and said "stopped".
#[test]
fn a_copy_of_a_server_directory_holds_no_server_of_its_own() {
    let Some(redis) = Server::start("redis", "pass8_servers::copied_dir") else {
        return;
    };
    let copy = redis.dir().join("copy");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(redis.server_dir())
        .arg(&copy)
        .status()
        .unwrap();
    assert!(copied.success());
    for action in ["status", "stop"] {
        let out = server(&copy, action, "redis", None);
        assert_eq!(out.code, 0, "{action}: {}", out.stderr);
        assert!(
            out.stdout.contains("redis: not running"),
            "{action}: {}",
            out.stdout
        );
        assert!(
            answers(redis.port),
            "`server {action} --dir COPY` stopped the original"
        );
    }
    // Named by its port, the copy has no record of it either.
    let out = server(&copy, "stop", "redis", Some(redis.port));
    assert_input_error(&out, "has no record of a redis server");
    assert!(answers(redis.port));
    // A start there finds the original's port taken and starts nothing.
    let out = server(&copy, "start", "redis", Some(redis.port));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("already in use"), "{}", out.stderr);
    let status = server(&redis.server_dir(), "status", "redis", None);
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("redis: running"),
        "{}",
        status.stdout
    );
}

/// A server directory is acted on only as the server that made it:
/// `server stop postgres --dir D` where kvperf's Redis runs stopped that
/// Redis, and `server start postgres` in a stopped Redis's directory made a
/// PostgreSQL cluster there (and replaced its record). Both are one line,
/// exit 2, naming the directory's server; nothing is stopped or made.
#[test]
fn a_server_directory_is_acted_on_only_as_the_server_that_made_it() {
    let Some(redis) = Server::start("redis", "pass8_servers::other_name") else {
        return;
    };
    let dir = redis.server_dir();
    for action in ["stop", "status"] {
        for port in [None, Some(redis.port)] {
            let out = server(&dir, action, "postgres", port);
            assert_input_error(&out, "is kvperf's redis server directory, not postgres's");
            assert!(
                answers(redis.port),
                "`server {action} postgres` stopped redis"
            );
        }
    }
    // The marker moved away: the record still names the running server
    // ("not running (no kvperf server in D)" it was, while it ran).
    let marker = dir.join(".kvperf-server");
    let moved = redis.dir().join("marker");
    std::fs::rename(&marker, &moved).unwrap();
    let status = server(&dir, "status", "redis", None);
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("redis: running"),
        "{}",
        status.stdout
    );
    assert_input_error(
        &server(&dir, "stop", "postgres", None),
        "holds kvperf's record of a redis server, not postgres's",
    );
    assert!(answers(redis.port));
    std::fs::rename(&moved, &marker).unwrap();
    let stopped = redis.action("stop");
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    let before: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let port = common::server::free_port();
    let out = server(&dir, "start", "postgres", Some(port));
    assert_input_error(&out, "is kvperf's redis server directory, not postgres's");
    let after: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before.len(), after.len(), "{after:?}");
    assert!(!dir.join("pgdata").exists());
}

/// kvperf's mark on a MongoDB collection lives in another collection
/// (`kvperf_owned`), so it outlived the collection: after a user dropped
/// kvperf's `ycsb.usertable` and made their own of that name (YCSB's own
/// binding uses exactly these names), a plain load wrote into it and
/// `load --fresh` dropped it. The mark now names the collection's UUID.
#[cfg(feature = "mongodb")]
#[test]
fn a_mongodb_collection_made_again_by_a_user_is_not_kvperfs() {
    use mongodb::bson::{doc, Document};
    let Some(ferretdb) = Server::start("ferretdb", "pass8_servers::mongodb_made_again") else {
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
    let users = client.database("ycsb").collection::<Document>("usertable");
    let a = common::workload("a");
    let port = ferretdb.port_property("mongodb");
    let load = |fresh: bool| {
        let mut args = vec!["load", "--engine", "mongodb", "-P", &a];
        args.extend(["-p", "recordcount=20", "-p", &port]);
        if fresh {
            args.push("--fresh");
        }
        common::kvperf(ferretdb.dir(), &args)
    };
    // kvperf's own store: made by a plain load, made afresh, made afresh
    // again (its mark follows the collection it makes each time).
    for fresh in [false, true, true] {
        let out = load(fresh);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    rt.block_on(async {
        users.drop().await.unwrap();
        users
            .insert_one(doc! {"_id": "user1", "mine": "yes"})
            .await
            .unwrap();
    });
    for fresh in [false, true] {
        let out = load(fresh);
        assert_input_error(&out, "collection ycsb.usertable");
    }
    let left: Vec<Document> = rt.block_on(async {
        let mut cursor = users.find(doc! {}).await.unwrap();
        let mut docs = Vec::new();
        while cursor.advance().await.unwrap() {
            docs.push(cursor.deserialize_current().unwrap());
        }
        docs
    });
    assert_eq!(left, vec![doc! {"_id": "user1", "mine": "yes"}]);
}

/// `server start --dir F`, F a file, a FIFO or a device, is a bad input
/// (one line, exit 2); it was "cannot list 'F': Not a directory", exit 3.
#[test]
fn a_server_dir_that_is_not_a_directory_is_a_bad_input() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("notes.txt");
    std::fs::write(&file, "mine").unwrap();
    let fifo = work.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for dir in [
        file.as_path(),
        fifo.as_path(),
        std::path::Path::new("/dev/null"),
    ] {
        let out = server(dir, "start", "redis", Some(common::server::free_port()));
        assert_input_error(&out, "is not a directory");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

/// `cassandra.adopt=true` writes records into a user's table, and nothing
/// else of it changes: the closing flush (a change of the tables' comment,
/// the one way CQL has to flush) replaced the user's own comment with
/// `kvperf flush <time>`. Without the opt-in a plain load, run or
/// `--fresh` (with the opt-in too) is refused, and so is a table whose
/// comment only begins like kvperf's mark.
#[cfg(feature = "cassandra")]
#[test]
fn an_adopted_cassandra_table_keeps_its_own_comment() {
    use scylla::client::session_builder::SessionBuilder;
    let Some(cassandra) = Server::start_with(
        "cassandra",
        "pass8_servers::adopted_cassandra",
        vec!["-p".into(), "cassandra_heap=768M".into()],
    ) else {
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
        rt.block_on(async { session.query_unpaged(text, &[]).await })
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .into_rows_result()
            .ok()
    };
    let texts = |text: &str| -> Vec<String> {
        cql(text)
            .map(|r| {
                r.rows::<(String,)>()
                    .unwrap()
                    .map(|row| row.unwrap().0)
                    .collect()
            })
            .unwrap_or_default()
    };
    let ks = "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}";
    for (keyspace, comment) in [
        ("mine", "customer data: don't drop"),
        ("forged", "kvperf-store 1: made by kvperf"),
    ] {
        cql(&format!("CREATE KEYSPACE {keyspace} {ks}"));
        cql(&format!(
            "CREATE TABLE {keyspace}.usertable (y_id varchar PRIMARY KEY, field0 varchar, field1 varchar) WITH comment = '{}'",
            comment.replace('\'', "''")
        ));
        cql(&format!(
            "INSERT INTO {keyspace}.usertable (y_id, field0, field1) VALUES ('user1', 'mine', 'mine')"
        ));
    }
    let a = common::workload("a");
    let port = cassandra.port_property("cassandra");
    let step = |keyspace: &str, extra: &[&str]| {
        let ks = format!("cassandra.keyspace={keyspace}");
        // extra: the step (load or run), then its own arguments.
        let mut args = vec![
            extra[0],
            "--engine",
            "cassandra",
            "-P",
            &a,
            "-p",
            &port,
            "-p",
            &ks,
        ];
        args.extend([
            "-p",
            "recordcount=20",
            "-p",
            "operationcount=20",
            "-p",
            "fieldcount=2",
        ]);
        args.extend(&extra[1..]);
        common::kvperf(cassandra.dir(), &args)
    };
    for keyspace in ["mine", "forged"] {
        for extra in [&["load"][..], &["run"], &["load", "--fresh"]] {
            let out = step(keyspace, extra);
            assert_input_error(&out, &format!("Cassandra table {keyspace}.usertable"));
        }
        let out = step(keyspace, &["load", "--fresh", "-p", "cassandra.adopt=true"]);
        assert_input_error(&out, "so --fresh does not drop it");
    }
    for extra in [&["load"][..], &["run"]] {
        let mut args = extra.to_vec();
        args.extend(["-p", "cassandra.adopt=true"]);
        let out = step("mine", &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let comment = "SELECT comment FROM system_schema.tables WHERE keyspace_name = 'mine' AND table_name = 'usertable'";
    assert_eq!(
        texts(comment),
        vec!["customer data: don't drop".to_string()]
    );
    assert_eq!(
        texts("SELECT field0 FROM mine.usertable WHERE y_id = 'user1'"),
        vec!["mine".to_string()]
    );
    assert_eq!(
        texts("SELECT field0 FROM forged.usertable WHERE y_id = 'user1'"),
        vec!["mine".to_string()]
    );
}

/// A login FerretDB refuses is one short line naming the user, the
/// server's reason and the options, never the password: it went on with
/// the driver's debug dump of the error's source (`labels: {}, source:
/// Some(Error { kind: Command(CommandError { ...`, 700 bytes).
#[cfg(feature = "mongodb")]
#[test]
fn a_refused_mongodb_login_is_said_in_the_servers_words_only() {
    let Some(ferretdb) = Server::start("ferretdb", "pass8_servers::mongodb_login") else {
        return;
    };
    let a = common::workload("a");
    let port = ferretdb.port_property("mongodb");
    let out = common::kvperf(
        ferretdb.dir(),
        &[
            "load",
            "--engine",
            "mongodb",
            "-P",
            &a,
            "-p",
            &port,
            "-p",
            "recordcount=20",
            "-p",
            "mongodb.username=u",
            "-p",
            "mongodb.password=Zq9notshown",
        ],
    );
    assert_input_error(&out, "refused the login as user 'u'");
    for noise in ["source: Some(", "labels:", "Zq9notshown"] {
        assert!(!out.stderr.contains(noise), "{noise}: {}", out.stderr);
    }
}

/// Cassandra unreachable (nothing on the port) or a listener that closes
/// every connection is what it is on the other server engines: one line,
/// exit 2, at once. It was exit 3 on cassandra alone ("cannot connect to
/// Cassandra ... is the server running?"), exit 2 on redis, postgres and
/// mongodb.
#[cfg(feature = "cassandra")]
#[test]
fn an_unreachable_cassandra_is_a_bad_input_as_on_every_server_engine() {
    let work = tempfile::tempdir().unwrap();
    let closing = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closing_port = closing.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in closing.incoming() {
            drop(conn);
        }
    });
    let a = common::workload("a");
    for port in [common::server::free_port(), closing_port] {
        let started = std::time::Instant::now();
        let prop = format!("cassandra.port={port}");
        let out = common::kvperf(
            work.path(),
            &[
                "load",
                "--engine",
                "cassandra",
                "-P",
                &a,
                "-p",
                &prop,
                "-p",
                "recordcount=20",
            ],
        );
        assert_input_error(
            &out,
            &format!("cannot connect to Cassandra at 127.0.0.1:{port}"),
        );
        assert!(
            out.stderr
                .contains(&format!("kvperf server start cassandra --port {port}")),
            "{}",
            out.stderr
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
}

/// The processes whose environment names `dir` as a server script's
/// `KVPERF_DIR` (the script, and what it launched), or whose command line
/// names `dir` (a server that wrote its title over its environment, as
/// PostgreSQL's does: `postgres -D DIR/pgdata`).
pub(super) fn launched_for(dir: &std::path::Path) -> Vec<u32> {
    let needle = format!("KVPERF_DIR={}", dir.display());
    let named = dir.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        });
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let in_cmdline = String::from_utf8_lossy(&cmdline).contains(&named);
        if !zombie && (in_cmdline || env.split(|b| *b == 0).any(|v| v == needle.as_bytes())) {
            found.push(pid);
        }
    }
    found
}

/// SIGTERM (as a plan's, `timeout`'s or systemd's) to `kvperf server
/// start postgres` while its script makes the cluster: kvperf stops the
/// script and what it launched, then exits 3 saying so. Killed alone, it
/// left its script to start PostgreSQL, which no record named: `status`
/// and `stop` then said "not running" while it ran.
#[test]
fn an_interrupted_server_start_leaves_no_server_unrecorded() {
    if std::process::Command::new("sh")
        .args([
            "-c",
            "command -v pg_ctlcluster || ls /usr/lib/postgresql/*/bin/initdb",
        ])
        .output()
        .map_or(true, |o| !o.status.success())
    {
        common::skip_unless_ci(
            "pass8_servers::interrupted_start",
            "no PostgreSQL here (apt-get install postgresql)",
        );
        return;
    }
    let work = common::server::passable_tempdir();
    let dir = work.path().join("pg");
    let port = common::server::free_port().to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["server", "start", "postgres", "--dir"])
        .arg(&dir)
        .args(["--port", &port])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The script is at work once it has begun the cluster.
    let began = std::time::Instant::now();
    let begun = || {
        std::fs::read_dir(&dir).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name == "pgdata" || name.starts_with("pgdata.kvperf-initdb.")
            })
        })
    };
    while !begun() {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(120),
            "the start script never began"
        );
        assert!(child.try_wait().unwrap().is_none(), "the start ended first");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: a signal to the kvperf this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // What the script launched goes with it (a server's helpers may take
    // a moment to see their parent gone).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut left = launched_for(&dir);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = launched_for(&dir);
    }
    for pid in &left {
        // SAFETY: processes of this test's own start, killed so they do
        // not outlive it.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "left running, unrecorded: {left:?}; {stderr}"
    );
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    // The next start makes the cluster the interrupted one began (an
    // initdb stopped half way left a cluster on port 5432 without kvperf's
    // settings, and that start waited 120 s for its own port).
    let port: u16 = port.parse().unwrap();
    let again = server(&dir, "start", "postgres", Some(port));
    assert_eq!(again.code, 0, "{}", again.stderr);
    let stop = server(&dir, "stop", "postgres", None);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
}
