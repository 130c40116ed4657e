//! FerretDB on PostgreSQL with `ferretdb_pg_id_index=gin`: the collection a
//! load creates gets the GIN index on `_id` that FerretDB 1.24's `@>`
//! lookups can use, so reads by key do not scan the collection.
#![cfg(feature = "mongodb")]

use crate::common;

use crate::common::server::Server;

#[test]
fn the_gin_id_index_is_added_to_the_collections_ferretdb_creates() {
    let test = "the_gin_id_index_is_added_to_the_collections_ferretdb_creates";
    let Some(pg) = Server::start("postgres", test) else {
        return;
    };
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/kvperf?pool_max_conns=20",
        pg.port
    );
    let settings = [
        "ferretdb_handler=postgresql".to_string(),
        format!("ferretdb_pg_url={url}"),
        "ferretdb_pg_id_index=gin".into(),
    ];
    let extra = settings
        .iter()
        .flat_map(|s| ["-p".into(), s.clone()])
        .collect();
    let Some(ferretdb) = Server::start_with("ferretdb", test, extra) else {
        return;
    };
    let wc = common::workload("c");
    let port = ferretdb.port_property("mongodb");
    let kvperf = |phase: &str, extra: &[&str]| {
        let mut args = vec![phase, "--engine", "mongodb", "-P", &wc, "-p", &port];
        args.extend_from_slice(&["-p", "recordcount=200"]);
        args.extend_from_slice(extra);
        common::kvperf(ferretdb.dir(), &args)
    };
    let load = kvperf("load", &[]);
    assert_eq!(load.code, 0, "{}", load.stderr);
    let psql = std::process::Command::new("psql")
        .arg(url.split('?').next().unwrap())
        .args(["-At", "-c"])
        .arg("SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'kvperf_id_gin_%'")
        .output()
        .expect("psql runs (it comes with the PostgreSQL server)");
    let indexes = String::from_utf8_lossy(&psql.stdout);
    assert!(
        indexes.contains("USING gin (((_jsonb -> '_id'::text)) jsonb_path_ops)"),
        "{indexes}{}",
        String::from_utf8_lossy(&psql.stderr)
    );
    let run = kvperf("run", &["-p", "operationcount=200"]);
    assert_eq!(
        common::metric(&run.stdout, "READ", "Return=OK"),
        Some(200.0)
    );
}
