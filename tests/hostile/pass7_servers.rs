//! The seventh hostile pass, servers and their data (docs/reliability.md,
//! "Pass 7: servers"). Each case failed on main of 2026-11-29 (a8c2dc9).

use crate::common::{self, assert_input_error, server::Server, workload};

use super::servers::{answers, psql, server, UsersRedis};

/// `kvperf load`, `run` and `replay --existing` (no `--fresh`) on `engine`
/// with `props`, in `dir`: each one's output.
fn plain_steps(dir: &std::path::Path, engine: &str, props: &[String]) -> Vec<common::Output> {
    let a = workload("a");
    let trace = common::import_csv_trace(dir, "t", "0,read,user1,100\n0,update,user1,100\n");
    let steps: [&[&str]; 3] = [
        &["load", "-P", &a, "-p", "recordcount=20"],
        &[
            "run",
            "-P",
            &a,
            "-p",
            "recordcount=20",
            "-p",
            "operationcount=20",
        ],
        &["replay", &trace, "--existing"],
    ];
    steps
        .iter()
        .map(|step| {
            let mut args = step.to_vec();
            args.extend(["--engine", engine, "-p", "fieldcount=2"]);
            for p in props {
                args.extend(["-p", p.as_str()]);
            }
            common::kvperf(dir, &args)
        })
        .collect()
}

/// A plain load, run or replay writes only into a Redis store kvperf made
/// and marked, or a prefix it finds empty (and then marks): a user's
/// records under the prefix (no index), or a YCSB store (its own index),
/// are one line, exit 2, naming `redis.adopt=true`, every key kept. A
/// plain load overwrote the user's `user1` and marked the prefix as
/// kvperf's, so a later `--fresh` deleted the rest.
#[test]
fn a_plain_load_run_or_replay_writes_into_no_redis_store_kvperf_did_not_make() {
    let Some(mut users) = UsersRedis::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = format!("redis.port={}", users.port);
    assert!(users.cli(&["HSET", "user1", "field0", "mine"]).is_some());
    for (prefix, index) in [("", false), ("y:", true)] {
        if index {
            assert!(users.cli(&["ZADD", "y:_indices", "0", "user1"]).is_some());
            assert!(users.cli(&["HSET", "y:user1", "field0", "mine"]).is_some());
        }
        let props = [port.clone(), format!("redis.keyprefix={prefix}")];
        for (i, out) in plain_steps(dir.path(), "redis", &props).iter().enumerate() {
            if i == 2 && !index {
                assert_input_error(out, "holds no redis store under prefix ''");
                continue;
            }
            assert_input_error(out, "without kvperf's mark");
            assert!(out.stderr.contains("-p redis.adopt=true"), "{}", out.stderr);
        }
        let user1 = format!("{prefix}user1");
        let kept = users.cli(&["HGETALL", &user1]);
        assert_eq!(kept.as_deref(), Some("field0\nmine"));
        assert_eq!(
            users
                .cli(&["EXISTS", &format!("{prefix}_kvperf")])
                .as_deref(),
            Some("0")
        );
    }
    assert_eq!(users.cli(&["DBSIZE"]).as_deref(), Some("4"));
    users.assert_untouched();

    // Opted in: used as it is, never marked (so --fresh still refuses it).
    let adopt = [
        port.clone(),
        "redis.keyprefix=y:".into(),
        "redis.adopt=true".into(),
    ];
    for out in plain_steps(dir.path(), "redis", &adopt) {
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    assert_eq!(users.cli(&["EXISTS", "y:_kvperf"]).as_deref(), Some("0"));
    // An empty prefix is kvperf's from its first load on.
    let own = [port, "redis.keyprefix=k:".into()];
    for out in plain_steps(dir.path(), "redis", &own) {
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    users.assert_untouched();
}

/// The same on PostgreSQL: a user's `usertable` (YCSB's JDBC shape, with
/// rows) is neither loaded into nor run on without `postgres.adopt=true`;
/// a plain load replaced the user's row `user1`.
#[test]
fn a_plain_load_run_or_replay_writes_into_no_postgres_table_kvperf_did_not_make() {
    let Some(pg) = Server::start("postgres", "pass7_servers::plain_postgres") else {
        return;
    };
    psql(pg.port, "CREATE TABLE usertable (ycsb_key varchar PRIMARY KEY, field0 text, field1 text); INSERT INTO usertable VALUES ('user1', 'mine', 'mine')");
    let props = pg.properties();
    for out in plain_steps(pg.dir(), "postgres", &props) {
        assert_input_error(&out, "table usertable in database 'kvperf'");
        assert!(
            out.stderr.contains("-p postgres.adopt=true"),
            "{}",
            out.stderr
        );
    }
    assert_eq!(
        psql(pg.port, "SELECT field0 || count(*) OVER () FROM usertable"),
        "mine1"
    );
    assert_eq!(
        psql(pg.port, "SELECT to_regclass('usertable_kv') IS NULL"),
        "t"
    );

    let mut adopt = props.clone();
    adopt.push("postgres.adopt=true".into());
    for out in plain_steps(pg.dir(), "postgres", &adopt) {
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let comment = "SELECT obj_description('usertable'::regclass, 'pg_class') IS NULL";
    assert_eq!(psql(pg.port, comment), "t");
}

/// Two `kvperf server start redis` in one directory at once start one
/// server, which the record names and `stop` stops. Both started one
/// (each said "started" with the second's pid) and the record kept the
/// second: the first server ran on, unrecorded, past every `stop`.
#[test]
fn two_starts_in_one_directory_at_once_leave_no_server_unrecorded() {
    if std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip_unless_ci(
            "pass7_servers::two_starts",
            "no redis-server here (apt-get install redis-server)",
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("redis");
    let ports = [common::server::free_port(), common::server::free_port()];
    let starts: Vec<common::Output> = std::thread::scope(|s| {
        let started: Vec<_> = ports
            .iter()
            .map(|&port| {
                let dir = &dir;
                s.spawn(move || server(dir, "start", port))
            })
            .collect();
        started.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let ok = starts.iter().filter(|o| o.code == 0).count();
    let running = ports.iter().filter(|&&p| answers(p)).count();
    let stop = server(&dir, "stop", ports[0]);
    let stop = if stop.code == 0 {
        stop
    } else {
        server(&dir, "stop", ports[1])
    };
    let left: Vec<u16> = ports.iter().copied().filter(|&p| answers(p)).collect();
    for (port, out) in ports.iter().zip(&starts) {
        if out.code != 0 {
            assert_input_error(out, "redis");
        }
        assert!(out.code == 0 || !answers(*port), "{}", out.stderr);
    }
    let said: Vec<&str> = starts.iter().map(|o| o.stderr.as_str()).collect();
    assert_eq!((ok, running), (1, 1), "{said:?}");
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(left.is_empty(), "redis-server left running on {left:?}");
}

/// SIGTERM or SIGINT while every client is inside a Redis that stopped
/// answering mid-window (SIGSTOP) ends the step at once, keeping what was
/// measured, exit 3, on threads and on tasks. It was ignored until
/// stalltimeout ended the stall (18 s of 20 after the signal here; 300 s
/// by default).
#[cfg(feature = "redis")]
#[test]
fn an_interrupt_while_the_server_is_stopped_mid_window_ends_the_step() {
    use super::waits::{self, Continue};
    let Some(redis) = waits::loaded_redis("pass7_servers::interrupt_mid_window") else {
        return;
    };
    let pid = waits::redis_pid(&redis);
    for (threads, signal) in [("1", libc::SIGTERM), ("2", libc::SIGINT)] {
        let relay = waits::stop_at(redis.port, pid, b"HGETALL", 5000);
        let _resume = Continue(pid);
        let json = redis.dir().join(format!("run-{threads}.json"));
        let mut props = waits::records(relay.port);
        props.extend([
            format!("threadcount={threads}"),
            "readproportion=1".into(),
            "updateproportion=0".into(),
            "operationcount=100000000".into(),
            "maxexecutiontime=300".into(),
            "stalltimeout=300".into(),
        ]);
        let args = waits::step_args("run", "redis", "c", &props, &json);
        let (mut child, lines) = waits::spawn(redis.dir(), &args);
        relay
            .stopped
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the run reads");
        // SAFETY: a signal to the kvperf this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = waits::wait_within(&mut child, std::time::Duration::from_secs(30), "run");
        let stderr = waits::rest(&lines).join("\n");
        assert_eq!(status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("interrupted after"), "{stderr}");
        let out = waits::output(&json);
        assert!(out.error.is_some(), "{stderr}");
        let kept: u64 = out.measurements.iter().map(|m| m.operations).sum();
        // Operations a client had not handed over when it got stuck are
        // named, not lost without a word.
        let named = stderr.contains("had not handed over yet");
        assert!(kept > 0 || named, "what was measured is kept: {stderr}");
        drop(_resume);
    }
}

/// The same on MongoDB (FerretDB started by kvperf): a user's `usertable`
/// holding a record of YCSB's shape is neither loaded into, run on nor
/// replayed on without `mongodb.adopt=true`; a plain load wrote into it.
#[cfg(feature = "mongodb")]
#[test]
fn a_plain_load_run_or_replay_writes_into_no_mongodb_collection_kvperf_did_not_make() {
    use mongodb::bson::{doc, spec::BinarySubtype, Binary, Document};
    let Some(ferretdb) = Server::start("ferretdb", "pass7_servers::plain_mongodb") else {
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
    let bytes = b"mine".to_vec();
    let field = Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    };
    let mine = doc! {"_id": "user1", "field0": field};
    rt.block_on(async { users.insert_one(mine.clone()).await })
        .unwrap();
    let count = || {
        rt.block_on(async { users.count_documents(doc! {}).await })
            .unwrap()
    };
    let props = [ferretdb.port_property("mongodb")];
    for out in plain_steps(ferretdb.dir(), "mongodb", &props) {
        assert_input_error(&out, "collection ycsb.usertable");
        assert!(
            out.stderr.contains("-p mongodb.adopt=true"),
            "{}",
            out.stderr
        );
    }
    assert_eq!(count(), 1);
    let kept = rt.block_on(async { users.find_one(doc! {"_id": "user1"}).await });
    assert_eq!(kept.unwrap(), Some(mine));

    let adopt = [props[0].clone(), "mongodb.adopt=true".into()];
    for out in plain_steps(ferretdb.dir(), "mongodb", &adopt) {
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    assert!(count() > 1);
}
