//! Apache Cassandra through CQL, with the `scylla` crate (an async driver).
//!
//! The driver is async, so the engine has both seams
//! ([`Capabilities::async_ops`]); the operations are written once, as async
//! code ([`CqlClient`]), and the two workers only differ in how they wait:
//! - **Clients as tasks** (`clients=tasks`, the default): the runner lends
//!   the engine its runtime at open, the driver runs on it, and each client
//!   task awaits its operations ([`CqlClient`]'s calls wait). By default all
//!   clients share the engine's one session (`sessions=auto`), as YCSB's
//!   binding does: one connection per node carries every client's requests,
//!   which costs the server less CPU per request.
//! - **Clients on threads** (`clients=threads`): the engine owns a tokio
//!   runtime (multi-thread, `runtime_threads` workers) and each worker
//!   method is one `block_on` of the operation on the runner's thread
//!   ([`CassandraWorker`]); each thread has its own `Session` by default.
//!
//! Blocking costs 25-50% of ops/s against awaiting on a machine where
//! client and server share the cores (bench/async-seam.sh,
//! bench/RESULTS.md). `stats()` reports how long opening per-client
//! sessions took.
//!
//! Schema and statements are those of YCSB 0.17.0's `cassandra-cql`
//! binding: keyspace `ycsb` (SimpleStrategy, `replication_factor`), table
//! `usertable (y_id varchar PRIMARY KEY, field0 varchar, ...)` with
//! `fieldcount` fields named `fieldnameprefix<i>`, prepared statements per
//! field set, read and write consistency ONE by default. kvperf's values
//! are printable ASCII (`workload::ycsb::values`), so varchar columns hold
//! them unchanged; a value that is not UTF-8 is refused by the operation
//! (a `Failed` result), never altered. Field names are quoted in CQL, so
//! their case is kept; the keyspace name is lowercased, as CQL does with
//! an unquoted name.
//!
//! Differences from YCSB's binding, all deliberate:
//! - `update` is CQL's `UPDATE`, an upsert: updating a missing key creates
//!   the record and returns Ok (YCSB's behaviour; the capability
//!   `update_needs_existing` is false). `UPDATE ... IF EXISTS` would be
//!   exact but costs a Paxos round per update.
//! - `scan` reads `count` rows in token order from the start key's token,
//!   as YCSB does (`ordered_scans` is false), and when it reaches the end
//!   of the ring it goes on from the lowest token up to the start token,
//!   so a scan returns `count` records whenever the table has that many
//!   (YCSB's returns fewer near the ring's end).
//! - The table is the engine's (`usertable`) whatever YCSB's `table` says.
//!
//! Raw key-values (`kvperf bench`) live in a table `kv (k blob PRIMARY
//! KEY, v blob)`: point access only, since Cassandra cannot iterate keys in
//! order.
//!
//! Flushing: Cassandra 5.0 flushes a table's memtable when the table's
//! schema changes, and CQL has no FLUSH, so `settle(true)` and `close()`
//! change the tables' `comment` (kvperf's mark with `; flushed <time>`; a
//! table kvperf did not make, `cassandra.adopt`, gets its own comment back
//! at once) and then wait
//! until no node has flush or compaction work queued or running
//! (`system_views.thread_pools`, `system_views.sstable_tasks`). Without
//! that, a loaded table would sit in memtables and the footprint would be
//! near zero. Older Cassandra versions may not flush on a schema change;
//! settle then only waits.
//!
//! The footprint is measured on the server's files: for every local node
//! (the processes listening on `port`), the table directories
//! `<data_file_directory>/<keyspace>/<table>-<id>/` found from the node's
//! `cassandra.yaml` (`-Dcassandra.config`) or `-Dcassandra.storagedir`.
//! A server on another machine has no footprint (an error says so).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::deserialize::row::ColumnIterator;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::response::query_result::QueryResult;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency, Statement};

use super::driver_runtime::{self, DriverRuntime};
use super::endpoint::{self, is_this_machine, server_option, tcp_port};
use super::options::OptionValues;
use super::{
    ready, Access, Activity, Capabilities, ClientSlot, Engine, EngineInfo, EngineOption,
    EngineSpec, EventKind, EventSupport, OpError, OpResult, OpenMode, OpenOptions, Operations,
    Record, Runs, ScanRequest, ScanResults, SetupFuture, StoreKind, SERVER,
};
use crate::error::InputError;
use crate::properties::{scrubbed, Properties};

pub static SPEC: EngineSpec = EngineSpec {
    name: "cassandra",
    about: "Apache Cassandra server (CQL) via the scylla crate; `kvperf server start cassandra` runs one",
    feature: "cassandra",
    store: StoreKind::Server {
        server: "cassandra",
        namespace: "cassandra.keyspace",
    },
    capabilities: Capabilities {
        // Flushes and compactions run in the server; settle waits for them.
        background_work: true,
        // Token order, as YCSB's binding.
        ordered_scans: false,
        // CQL UPDATE is an upsert, as in YCSB's binding.
        update_needs_existing: false,
        // Every node's system_views (thread_pools, sstable_tasks), over a
        // session of the sampler's own.
        events: EventSupport::Reports(&[EventKind::Flush, EventKind::Compaction]),
        // The rest is SERVER's: CQL has no major compaction; point access
        // only; an UPDATE writes only the cells it sets; the scylla driver
        // is async, clients as tasks by default.
        ..SERVER
    },
    options: &[
        EngineOption { name: "hosts", default: "127.0.0.1", help: "nodes to contact, comma-separated (a local 3-node cluster: 127.0.0.1,127.0.0.2,127.0.0.3)" },
        EngineOption { name: "port", default: "9042", help: "CQL native transport port of every node" },
        EngineOption { name: "keyspace", default: "ycsb", help: "keyspace of the tables (lowercased, as CQL does)" },
        server_option!(adopt),
        EngineOption { name: "replication_factor", default: "1", help: "SimpleStrategy replication factor of a keyspace kvperf creates (3 for a 3-node cluster); a fresh load sets it" },
        EngineOption { name: "read_consistency", default: "one", help: "consistency of reads and scans: any, one, two, three, quorum, all, local_quorum, each_quorum, local_one (YCSB: one)" },
        EngineOption { name: "write_consistency", default: "one", help: "consistency of inserts, updates and deletes (YCSB: one)" },
        server_option!(username, "CASSANDRA", "user for PasswordAuthenticator"),
        server_option!(password, "CASSANDRA"),
        server_option!(connect_timeout_s, "seconds to wait for a connection to a node"),
        server_option!(runtime_threads, ""),
        EngineOption { name: "sessions", default: "auto", help: "per_thread (a session, and connections, for each client), shared (one session for all clients, as YCSB's binding), or auto: shared with clients=tasks, per_thread with clients=threads" },
    ],
    open,
    // Every db_bench engine flag configures an embedded store.
    db_bench: |flags, _| flags.given(),
};

/// The table of YCSB records and its key column (YCSB's names).
const TABLE: &str = "usertable";
const KEY_COLUMN: &str = "y_id";
/// The table of raw key-values.
const KV_TABLE: &str = "kv";
/// The comment of each table kvperf creates: `--fresh` drops only tables
/// that carry it (a table made without kvperf, or by a kvperf from before
/// this mark, is refused in one line). A flush keeps it ([`is_marked`]).
const MARK: &str = "kvperf-store 1: made by kvperf, which drops it at load --fresh";
/// How long settle waits for the server's flushes and compactions at most.
const SETTLE_LIMIT: Duration = Duration::from_secs(3600);

const SCYLLA_VERSION: &str = match option_env!("KVPERF_SCYLLA_VERSION") {
    Some(v) => v,
    None => "1",
};

/// User and password; Debug never shows the password.
#[derive(Clone)]
struct Credentials {
    username: String,
    password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"(redacted)")
            .finish()
    }
}

#[derive(Debug, Clone)]
struct Settings {
    hosts: Vec<String>,
    port: u16,
    keyspace: String,
    replication_factor: u64,
    /// `cassandra.adopt`: write into tables kvperf did not mark.
    adopt: bool,
    read_consistency: Consistency,
    write_consistency: Consistency,
    credentials: Option<Credentials>,
    connect_timeout: Duration,
    /// How long the session's start-up may wait for an answer at most
    /// (`stalltimeout`, [`super::reconnect::handshake_limit`]).
    handshake: Duration,
    runtime_threads: usize,
    /// One session for all clients (YCSB's binding) instead of one each.
    shared_session: bool,
    /// Field columns: `fieldnameprefix0..fieldcount-1`.
    fields: Vec<String>,
    effective: BTreeMap<String, String>,
}

const CONSISTENCIES: [&str; 9] = [
    "any",
    "one",
    "two",
    "three",
    "quorum",
    "all",
    "local_quorum",
    "each_quorum",
    "local_one",
];

fn consistency(name: &str) -> Consistency {
    match name {
        "any" => Consistency::Any,
        "two" => Consistency::Two,
        "three" => Consistency::Three,
        "quorum" => Consistency::Quorum,
        "all" => Consistency::All,
        "local_quorum" => Consistency::LocalQuorum,
        "each_quorum" => Consistency::EachQuorum,
        "local_one" => Consistency::LocalOne,
        _ => Consistency::One,
    }
}

/// A CQL identifier kvperf writes unquoted: letters, digits, `_`.
fn plain_identifier(key: &str, name: &str) -> Result<(), InputError> {
    let ok = !name.is_empty()
        && name.len() <= 48
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if ok {
        Ok(())
    } else {
        Err(InputError::property(
            key,
            format!("'{name}' is not a CQL name (a letter, then letters, digits or _; at most 48)"),
        ))
    }
}

impl Settings {
    /// The options; `tasks`: the clients are tasks on the runner's runtime.
    fn from_properties(props: &Properties, tasks: bool) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let hosts: Vec<String> = v
            .text("hosts")
            .split(',')
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .collect();
        if hosts.is_empty() {
            return Err(InputError::property("cassandra.hosts", "names no host"));
        }
        let port = tcp_port("cassandra.port", v.u64("port")?)?;
        let keyspace = v.text("keyspace").to_ascii_lowercase();
        plain_identifier("cassandra.keyspace", &keyspace)?;
        let replication_factor = v.u64_at_most("replication_factor", 100)?;
        if replication_factor == 0 {
            return Err(InputError::property(
                "cassandra.replication_factor",
                "must be at least 1",
            ));
        }
        let credentials = match endpoint::login(&v) {
            (Some(username), password) => Some(Credentials {
                username,
                password: password.unwrap_or_default(),
            }),
            (None, Some(_)) => return Err(endpoint::password_without_username(&v)),
            (None, None) => None,
        };
        let connect_timeout = endpoint::connect_timeout(&v)?;
        let runtime_threads = driver_runtime::runtime_threads(&v, tasks)?;
        let shared_session = match v
            .choice("sessions", &["auto", "per_thread", "shared"])?
            .as_str()
        {
            "shared" => true,
            "per_thread" => false,
            _ => tasks,
        };

        let field_count = props.u64("fieldcount", 10)?;
        let prefix = props.string("fieldnameprefix", "field");
        if prefix.contains('"') || prefix.is_empty() {
            return Err(InputError::property(
                "fieldnameprefix",
                "must be non-empty and without '\"' for Cassandra's column names",
            ));
        }
        if field_count > 1000 {
            return Err(InputError::property(
                "fieldcount",
                format!("{field_count} columns are more than the Cassandra engine creates (1000)"),
            ));
        }
        let fields = (0..field_count).map(|i| format!("{prefix}{i}")).collect();

        let mut effective = v.effective();
        effective.insert("keyspace".into(), keyspace.clone());
        let sessions = if shared_session {
            "shared"
        } else {
            "per_thread"
        };
        effective.insert("sessions".into(), sessions.into());
        if tasks {
            // Not used: the runner's runtime (its size is in the result).
            effective.remove("runtime_threads");
        }
        if let Some(c) = &credentials {
            effective.insert("username".into(), c.username.clone());
            if !c.password.is_empty() {
                effective.insert("password".into(), "(redacted)".into());
            }
        }
        Ok(Self {
            hosts,
            port,
            keyspace,
            replication_factor,
            adopt: endpoint::adopts(&v)?,
            read_consistency: consistency(&v.choice("read_consistency", &CONSISTENCIES)?),
            write_consistency: consistency(&v.choice("write_consistency", &CONSISTENCIES)?),
            credentials,
            connect_timeout,
            handshake: super::reconnect::handshake_limit(props),
            runtime_threads,
            shared_session,
            fields,
            effective,
        })
    }

    /// Why a session could not be made, in the driver's words, but never
    /// with the password in them: before the window, as on every server
    /// engine, a bad input (exit 2; it was exit 3 here alone).
    fn connect_error(&self, why: &dyn std::fmt::Display) -> anyhow::Error {
        let password = self.credentials.as_ref().map(|c| c.password.as_str());
        InputError::Invalid(format!(
            "cannot connect to Cassandra at {} ({}); `kvperf server start cassandra --port {}` starts one, or set -p cassandra.hosts and cassandra.port",
            self.addresses().join(", "),
            scrubbed(&why.to_string(), password),
            self.port
        ))
        .into()
    }

    /// `host:port` of every node to contact.
    fn addresses(&self) -> Vec<String> {
        self.hosts
            .iter()
            .map(|h| {
                if h.contains(':') && !h.starts_with('[') {
                    format!("[{h}]:{}", self.port)
                } else {
                    format!("{h}:{}", self.port)
                }
            })
            .collect()
    }

    fn builder(&self) -> SessionBuilder {
        let mut b = SessionBuilder::new()
            .known_nodes(self.addresses())
            .connection_timeout(self.connect_timeout)
            .keyspaces_to_fetch([self.keyspace.clone()]);
        if let Some(c) = &self.credentials {
            b = b.user(c.username.clone(), c.password.clone());
        }
        b
    }

    fn table(&self, table: &str) -> String {
        format!("{}.{table}", self.keyspace)
    }
}

/// A server-side error with the engine's name in front.
fn failed(err: impl std::fmt::Display) -> OpError {
    OpError::failed(format!("Cassandra: {err}"))
}

fn utf8<'a>(what: &str, bytes: &'a [u8]) -> Result<&'a str, OpError> {
    std::str::from_utf8(bytes).map_err(|_| {
        OpError::failed(format!(
            "Cassandra: {what} is not UTF-8 text (YCSB's schema stores varchar)"
        ))
    })
}

fn quoted(name: &str) -> String {
    format!("\"{name}\"")
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    let settings = Settings::from_properties(opts.properties, opts.runtime.is_some())?;
    let rt = DriverRuntime::new(
        opts.runtime,
        settings.runtime_threads,
        "kvperf-cql",
        "Cassandra",
    )?;
    let control = rt.block_on(connect(&settings))?;
    let mut settings = settings;
    let (version, tables) = rt.block_on(prepare_schema(&control, &mut settings, opts.mode))?;
    let nodes = local_nodes(&settings);
    Ok(Box::new(CassandraEngine {
        control: Arc::new(control),
        settings,
        version,
        tables,
        nodes,
        sessions: AtomicU64::new(0),
        session_setup_us: AtomicU64::new(0),
        session_setup_max_us: AtomicU64::new(0),
        unflushed: std::sync::Mutex::new(None),
        sampler: std::sync::Mutex::new(None),
        rt,
    }))
}

/// The first session. Something that accepts connections and never
/// answers (a Redis, which reads CQL's OPTIONS as an unfinished command)
/// is given up on at `stalltimeout`, in the words of every server engine:
/// it was "the server did not answer within 2 x stalltimeout", naming
/// neither the address nor what may listen there.
async fn connect(settings: &Settings) -> anyhow::Result<Session> {
    let limit = settings.handshake;
    match tokio::time::timeout(limit, settings.builder().build()).await {
        Ok(built) => built.map_err(|e| settings.connect_error(&e)),
        Err(_) => Err(super::reconnect::no_answer(
            "Cassandra",
            &settings.addresses().join(", "),
            "a connection's start-up",
            limit,
        )),
    }
}

/// Runs a statement of the engine's own (schema, system tables).
async fn query(session: &Session, text: &str, values: &[&str]) -> anyhow::Result<QueryResult> {
    session
        .query_unpaged(text, values)
        .await
        .map_err(|e| anyhow::anyhow!("Cassandra: `{text}` failed: {e}"))
}

/// Every row of `result` as text columns (NULL as "").
fn text_rows(result: QueryResult) -> anyhow::Result<Vec<Vec<String>>> {
    let rows = result.into_rows_result()?;
    let mut out = Vec::new();
    for row in rows.rows::<ColumnIterator>()? {
        let mut cols = Vec::new();
        for col in row? {
            let col = col?;
            cols.push(
                col.slice
                    .map(|s| String::from_utf8_lossy(s.as_slice()).into_owned())
                    .unwrap_or_default(),
            );
        }
        out.push(cols);
    }
    Ok(out)
}

/// One raw column (e.g. a uuid) of every row.
fn raw_first_column(result: QueryResult) -> anyhow::Result<Vec<Vec<u8>>> {
    let rows = result.into_rows_result()?;
    let mut out = Vec::new();
    for row in rows.rows::<ColumnIterator>()? {
        if let Some(col) = row?.next() {
            out.push(
                col?.slice
                    .map(|s| s.as_slice().to_vec())
                    .unwrap_or_default(),
            );
        }
    }
    Ok(out)
}

/// Ids of the engine's tables (their directories are `<name>-<id in hex>`).
async fn table_ids(session: &Session, keyspace: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let mut ids = BTreeMap::new();
    for table in [TABLE, KV_TABLE] {
        let found = raw_first_column(
            query(
                session,
                "SELECT id FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
                &[keyspace, table],
            )
            .await?,
        )?;
        if let Some(id) = found.first() {
            ids.insert(
                table.to_string(),
                id.iter().map(|b| format!("{b:02x}")).collect(),
            );
        }
    }
    Ok(ids)
}

/// Creates or checks keyspace and tables as `mode` asks; returns the
/// server's version and the tables' ids.
async fn prepare_schema(
    session: &Session,
    settings: &mut Settings,
    mode: OpenMode,
) -> anyhow::Result<(String, BTreeMap<String, String>)> {
    let version =
        text_rows(query(session, "SELECT release_version FROM system.local", &[]).await?)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .unwrap_or_else(|| "unknown".into());
    let ks = settings.keyspace.clone();
    let where_ = settings.addresses().join(", ");
    let existing = table_ids(session, &ks).await?;
    if mode == OpenMode::Existing && existing.is_empty() {
        return Err(InputError::Invalid(format!(
            "Cassandra at {where_} has no table {ks}.{TABLE} (nor {ks}.{KV_TABLE}): load it first (kvperf load --fresh), or name its keyspace with -p cassandra.keyspace"
        ))
        .into());
    }
    // A plain load, run or settle uses only tables kvperf made, unless the
    // user opts in (--fresh refuses them below, opt-in or not).
    if mode != OpenMode::Fresh && !settings.adopt {
        for table in existing.keys() {
            if !is_marked(&table_comment(session, &ks, table).await?) {
                let store = format!("Cassandra table {ks}.{table} at {where_} is there");
                return Err(
                    endpoint::not_kvperfs_store(&store, "cassandra", "cassandra.keyspace").into(),
                );
            }
        }
    }
    if mode != OpenMode::Existing {
        let rf = settings.replication_factor;
        let replication = format!("{{'class': 'SimpleStrategy', 'replication_factor': {rf}}}");
        query(
            session,
            &format!("CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {replication}"),
            &[],
        )
        .await?;
        if mode == OpenMode::Fresh {
            // Only tables kvperf made (and marked) are dropped.
            for table in existing.keys() {
                if !is_marked(&table_comment(session, &ks, table).await?) {
                    return Err(InputError::Invalid(format!(
                        "Cassandra table {ks}.{table} at {where_} has no kvperf mark (kvperf did not make it, or made it before it marked its tables), so --fresh does not drop it: name another keyspace with -p cassandra.keyspace, or drop it by hand if it may go (DROP TABLE {ks}.{table})"
                    ))
                    .into());
                }
            }
            // The keyspace's replication is changed only when it holds
            // nothing but kvperf's tables.
            let others = text_rows(
                query(
                    session,
                    "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?",
                    &[&ks],
                )
                .await?,
            )?
            .into_iter()
            .filter_map(|r| r.into_iter().next())
            .any(|t| t != TABLE && t != KV_TABLE);
            let current = keyspace_replication_factor(session, &ks).await?;
            if !others && current.as_deref() != Some(rf.to_string().as_str()) {
                query(
                    session,
                    &format!("ALTER KEYSPACE {ks} WITH replication = {replication}"),
                    &[],
                )
                .await?;
            }
            for table in [TABLE, KV_TABLE] {
                query(session, &format!("DROP TABLE IF EXISTS {ks}.{table}"), &[]).await?;
            }
        }
        let columns: Vec<String> = settings
            .fields
            .iter()
            .map(|f| format!(", {} varchar", quoted(f)))
            .collect();
        query(
            session,
            &format!(
                "CREATE TABLE IF NOT EXISTS {ks}.{TABLE} ({KEY_COLUMN} varchar PRIMARY KEY{}) WITH comment = '{MARK}'",
                columns.concat()
            ),
            &[],
        )
        .await?;
        query(
            session,
            &format!("CREATE TABLE IF NOT EXISTS {ks}.{KV_TABLE} (k blob PRIMARY KEY, v blob) WITH comment = '{MARK}'"),
            &[],
        )
        .await?;
        // A table made elsewhere (or with another fieldcount) must hold the
        // fields a YCSB load or run writes; Existing (settle, db_bench on an
        // existing store) reads and writes no records, so it takes any.
        let have: Vec<String> = text_rows(
            query(
                session,
                "SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
                &[&ks, TABLE],
            )
            .await?,
        )?
        .into_iter()
        .filter_map(|r| r.into_iter().next())
        .collect();
        let missing: Vec<&String> = settings
            .fields
            .iter()
            .filter(|f| !have.contains(f))
            .collect();
        if !missing.is_empty() {
            return Err(InputError::Invalid(format!(
                "Cassandra table {ks}.{TABLE} has no column {} (it has {}): it was made with another fieldcount or fieldnameprefix; load it again with --fresh",
                missing[0],
                have.join(", ")
            ))
            .into());
        }
    }
    if let Some(rf) = keyspace_replication_factor(session, &ks).await? {
        settings.effective.insert("replication_factor".into(), rf);
    }
    let tables = table_ids(session, &ks).await?;
    Ok((version, tables))
}

/// A table's comment ("" if none, or no such table).
async fn table_comment(session: &Session, ks: &str, table: &str) -> anyhow::Result<String> {
    Ok(text_rows(
        query(
            session,
            "SELECT comment FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
            &[ks, table],
        )
        .await?,
    )?
    .into_iter()
    .next()
    .and_then(|r| r.into_iter().next())
    .unwrap_or_default())
}

/// A comment kvperf wrote on a table it made: [`MARK`], or the mark with
/// the stamp of a flush (see [`CassandraEngine::flush`]).
fn is_marked(comment: &str) -> bool {
    comment == MARK
        || comment
            .strip_prefix(MARK)
            .and_then(|rest| rest.strip_prefix("; flushed "))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The keyspace's replication factor as stored (None: no keyspace, or
/// another strategy).
async fn keyspace_replication_factor(
    session: &Session,
    ks: &str,
) -> anyhow::Result<Option<String>> {
    let result = query(
        session,
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
        &[ks],
    )
    .await?;
    let rows = result.into_rows_result()?;
    let mut rf = None;
    for row in rows.rows::<(std::collections::HashMap<String, String>,)>()? {
        rf = row?.0.get("replication_factor").cloned();
    }
    Ok(rf)
}

/// A Cassandra node running on this machine.
#[derive(Debug, Clone)]
struct LocalNode {
    pid: u32,
    /// Its data_file_directories.
    data_dirs: Vec<PathBuf>,
}

/// The local nodes listening on the CQL port, when the hosts are local.
fn local_nodes(settings: &Settings) -> Vec<LocalNode> {
    if !settings.hosts.iter().all(|h| is_this_machine(h)) {
        return Vec::new();
    }
    let mut pids = crate::host::processes::listeners_on(settings.port);
    pids.sort_unstable();
    pids.into_iter()
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if !args.iter().any(|a| a.contains("CassandraDaemon")) {
                return None;
            }
            Some(LocalNode {
                pid,
                data_dirs: data_dirs(&args),
            })
        })
        .collect()
}

/// A node's data directories: `data_file_directories` of its
/// cassandra.yaml, else `<cassandra.storagedir>/data` (Cassandra's default).
fn data_dirs(args: &[String]) -> Vec<PathBuf> {
    let prop = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("-D{name}=")).map(str::to_string))
    };
    if let Some(config) = prop("cassandra.config") {
        let path = config.strip_prefix("file://").unwrap_or(&config);
        if let Ok(yaml) = std::fs::read_to_string(path) {
            let dirs = yaml_list(&yaml, "data_file_directories");
            if !dirs.is_empty() {
                return dirs.into_iter().map(PathBuf::from).collect();
            }
        }
    }
    prop("cassandra.storagedir")
        .map(|d| vec![PathBuf::from(d).join("data")])
        .unwrap_or_default()
}

/// The text items of the top-level YAML list `key`; empty when the
/// document does not parse or holds no such list.
fn yaml_list(yaml: &str, key: &str) -> Vec<String> {
    let Ok(doc) = serde_norway::from_str::<serde_norway::Value>(yaml) else {
        return Vec::new();
    };
    let items = doc.get(key).and_then(serde_norway::Value::as_sequence);
    items
        .into_iter()
        .flatten()
        .filter_map(|item| item.as_str().map(str::to_string))
        .collect()
}

pub struct CassandraEngine {
    /// The engine's own session (schema, settle, info; the workers' with
    /// `sessions=shared`); dropped before the runtime.
    control: Arc<Session>,
    settings: Settings,
    version: String,
    /// Table name -> id in hex (its directory's suffix).
    tables: BTreeMap<String, String>,
    nodes: Vec<LocalNode>,
    sessions: AtomicU64,
    session_setup_us: AtomicU64,
    session_setup_max_us: AtomicU64,
    /// Why the flush at close failed, if it did.
    unflushed: std::sync::Mutex<Option<String>>,
    /// The events sampler's session (`activity`), opened at its first poll
    /// and again after a failed one; dropped before the runtime.
    sampler: std::sync::Mutex<Option<Arc<Session>>>,
    rt: DriverRuntime,
}

impl CassandraEngine {
    /// A session of its own for a client, timed (the engine's own with
    /// `sessions=shared`).
    async fn session(&self) -> anyhow::Result<Arc<Session>> {
        if self.settings.shared_session {
            return Ok(self.control.clone());
        }
        let t0 = Instant::now();
        let session = Arc::new(connect(&self.settings).await?);
        let us = t0.elapsed().as_micros() as u64;
        self.sessions.fetch_add(1, Ordering::Relaxed);
        self.session_setup_us.fetch_add(us, Ordering::Relaxed);
        self.session_setup_max_us.fetch_max(us, Ordering::Relaxed);
        Ok(session)
    }

    fn prepare(
        &self,
        session: &Session,
        text: String,
        c: Consistency,
    ) -> anyhow::Result<PreparedStatement> {
        self.rt
            .block_on(prepare(session, text, c))
            .map_err(anyhow_error)
    }

    /// Flushes the tables' memtables on every node (a schema change does;
    /// see the module's documentation).
    async fn flush(&self) -> anyhow::Result<()> {
        let stamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        for table in self.tables.keys() {
            // A table kvperf made keeps its mark.
            let ks = &self.settings.keyspace;
            let was = table_comment(&self.control, ks, table).await?;
            let comment = if is_marked(&was) {
                format!("{MARK}; flushed {stamp}")
            } else {
                format!("kvperf flush {stamp}")
            };
            let alter = |comment: &str| {
                format!(
                    "ALTER TABLE {} WITH comment = '{}'",
                    self.settings.table(table),
                    comment.replace('\'', "''")
                )
            };
            query(&self.control, &alter(&comment), &[]).await?;
            // A table kvperf did not make (cassandra.adopt) gets its own
            // comment back: the flush replaced it with kvperf's stamp.
            if !is_marked(&was) {
                query(&self.control, &alter(&was), &[]).await?;
            }
        }
        Ok(())
    }

    /// Flush and compaction tasks queued or running on every node.
    async fn background_tasks(&self) -> anyhow::Result<u64> {
        let nodes = self.control.get_cluster_state().get_nodes_info().to_vec();
        let mut busy = 0;
        for node in nodes {
            let policy =
                SingleTargetLoadBalancingPolicy::new(NodeIdentifier::Node(node.clone()), None);
            let mut pools = Statement::new(
                "SELECT name, active_tasks, pending_tasks FROM system_views.thread_pools",
            );
            pools.set_load_balancing_policy(Some(policy.clone()));
            let rows = self
                .control
                .query_unpaged(pools, ())
                .await
                .map_err(|e| {
                    anyhow::anyhow!(
                        "Cassandra: reading system_views.thread_pools of {}: {e}",
                        node.address
                    )
                })?
                .into_rows_result()?;
            for row in rows.rows::<(String, i32, i32)>()? {
                let (name, active, pending) = row?;
                if name.contains("Flush") || name.starts_with("Compaction") {
                    busy += (active.max(0) + pending.max(0)) as u64;
                }
            }
            let mut tasks = Statement::new("SELECT task_id FROM system_views.sstable_tasks");
            tasks.set_load_balancing_policy(Some(policy));
            let rows = self
                .control
                .query_unpaged(tasks, ())
                .await
                .map_err(|e| {
                    anyhow::anyhow!(
                        "Cassandra: reading system_views.sstable_tasks of {}: {e}",
                        node.address
                    )
                })?
                .into_rows_result()?;
            busy += rows.rows_num() as u64;
        }
        Ok(busy)
    }

    /// What every node's flush writers and sstable tasks are doing.
    async fn node_activity(session: &Session) -> anyhow::Result<Activity> {
        let nodes = session.get_cluster_state().get_nodes_info().to_vec();
        let many = nodes.len() > 1;
        let mut seen = NodeWork::default();
        for node in nodes {
            let policy =
                SingleTargetLoadBalancingPolicy::new(NodeIdentifier::Node(node.clone()), None);
            let read = |sql: &'static str| {
                let mut statement = Statement::new(sql);
                statement.set_load_balancing_policy(Some(policy.clone()));
                statement
            };
            let at = |e: &dyn std::fmt::Display| {
                anyhow::anyhow!("Cassandra: system_views of {}: {e}", node.address)
            };
            let pools = session
                .query_unpaged(
                    read(
                        "SELECT name, active_tasks, completed_tasks FROM system_views.thread_pools",
                    ),
                    (),
                )
                .await
                .map_err(|e| at(&e))?
                .into_rows_result()?;
            for row in pools.rows::<(String, i32, i64)>()? {
                let (name, active, completed) = row?;
                if name == "MemtableFlushWriter" {
                    seen.flushing += active.max(0) as u64;
                    seen.flushed += completed.max(0) as u64;
                }
            }
            let tasks = session
                .query_unpaged(read("SELECT keyspace_name, table_name, kind, total, unit FROM system_views.sstable_tasks"), ())
                .await
                .map_err(|e| at(&e))?
                .into_rows_result()?;
            for row in tasks.rows::<(String, String, String, i64, String)>()? {
                let (keyspace, table, kind, total, unit) = row?;
                let node = if many {
                    format!("{}: ", node.address.ip())
                } else {
                    String::new()
                };
                seen.tasks.push((
                    kind,
                    format!("{node}{keyspace}.{table} ({})", task_size(total, &unit)),
                ));
            }
        }
        Ok(seen.activity())
    }

    async fn settle_async(&self, flush: bool) -> anyhow::Result<()> {
        if flush {
            self.flush().await?;
        }
        let t0 = Instant::now();
        // Twice idle in a row: a flush can queue a compaction behind it.
        let mut idle = 0;
        while idle < 2 {
            if self.background_tasks().await? == 0 {
                idle += 1;
            } else {
                idle = 0;
            }
            if t0.elapsed() > SETTLE_LIMIT {
                anyhow::bail!(
                    "Cassandra: flushes or compactions still running after {} s",
                    SETTLE_LIMIT.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }
}

/// What the nodes' `system_views` said in one poll.
#[derive(Debug, Default)]
struct NodeWork {
    /// Memtable flushes running (`MemtableFlushWriter` active tasks).
    flushing: u64,
    /// Flushes done since each node started (its completed tasks).
    flushed: u64,
    /// (`kind`, what and how far) of each sstable task: compactions,
    /// flushes, cleanups, validations...
    tasks: Vec<(String, String)>,
}

impl NodeWork {
    fn activity(self) -> Activity {
        let mut a = Activity::idle();
        let mut compactions = Vec::new();
        let mut flushes = Vec::new();
        for (kind, what) in self.tasks {
            match kind.as_str() {
                "flush" => flushes.push(what),
                // Anything else rewrites sstables: compaction, cleanup,
                // scrub, upgrade, garbage collection, anticompaction.
                "compaction" => compactions.push(what),
                other => compactions.push(format!("{other} of {what}")),
            }
        }
        if self.flushing > 0 || !flushes.is_empty() {
            let mut detail = flushes.join(", ");
            if flushes.is_empty() && self.flushing > 1 {
                detail = format!("{} running", self.flushing);
            }
            a.running(EventKind::Flush, "", detail);
        }
        if !compactions.is_empty() {
            compactions.sort();
            a.running(EventKind::Compaction, "", compactions.join(", "));
        }
        a.tally(EventKind::Flush, "", self.flushed, None);
        a
    }
}

/// "12.3 MB": how much an sstable task has to go through, in its unit.
/// Not how far it is: an event's detail keeps what changes, and progress
/// changes at every poll.
fn task_size(total: i64, unit: &str) -> String {
    match unit {
        "bytes" => format!("{:.1} MB", total as f64 / 1e6),
        other => format!("{total} {other}"),
    }
}

async fn prepare(
    session: &Session,
    text: String,
    c: Consistency,
) -> Result<PreparedStatement, OpError> {
    let mut stmt = Statement::new(text);
    stmt.set_consistency(c);
    stmt.set_is_idempotent(true);
    session.prepare(stmt).await.map_err(failed)
}

fn anyhow_error(e: OpError) -> anyhow::Error {
    match e {
        OpError::Failed(why) => anyhow::anyhow!(why),
        OpError::NotFound => anyhow::anyhow!("Cassandra: a statement could not be prepared"),
    }
}

impl CassandraEngine {
    /// A blocking client for db_bench's raw key-value operations.
    fn raw(&self) -> anyhow::Result<Box<dyn Operations + '_>> {
        let session = self.rt.block_on(self.session())?;
        let s = &self.settings;
        let table = s.table(KV_TABLE);
        let get = self.prepare(
            &session,
            format!("SELECT v FROM {table} WHERE k = ?"),
            s.read_consistency,
        )?;
        let put = self.prepare(
            &session,
            format!("INSERT INTO {table} (k, v) VALUES (?, ?)"),
            s.write_consistency,
        )?;
        let delete = self.prepare(
            &session,
            format!("DELETE FROM {table} WHERE k = ?"),
            s.write_consistency,
        )?;
        Ok(Box::new(CassandraKvWorker {
            rt: &self.rt,
            session,
            get,
            put,
            delete,
        }))
    }
}

impl Engine for CassandraEngine {
    fn info(&self) -> EngineInfo {
        let version = format!("Cassandra {} (scylla crate {SCYLLA_VERSION})", self.version);
        EngineInfo::new(&SPEC, version, &self.settings.effective)
    }

    /// A task's client awaits the driver; a thread's blocks on the
    /// engine's runtime for each call; raw access (db_bench, on threads)
    /// prepares the `kv` table's statements instead of the records'.
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        match (slot.access, slot.runs) {
            (Access::Raw, _) => ready(self.raw()),
            (Access::Records, Runs::Thread) => {
                ready(self.rt.block_on(CqlClient::open(self)).map(|client| {
                    Box::new(CassandraWorker {
                        rt: &self.rt,
                        client,
                    }) as Box<dyn Operations>
                }))
            }
            (Access::Records, Runs::Task) => Box::pin(async move {
                Ok(Box::new(CqlClient::open(self).await?) as Box<dyn Operations>)
            }),
        }
    }

    /// Sessions opened for runner threads and how long opening them took.
    fn stats(&self) -> BTreeMap<String, u64> {
        let sessions = self.sessions.load(Ordering::Relaxed);
        let mut stats = BTreeMap::new();
        if sessions > 0 {
            let total = self.session_setup_us.load(Ordering::Relaxed);
            stats.insert("sessions".into(), sessions);
            stats.insert("session-setup-avg-us".into(), total / sessions);
            stats.insert(
                "session-setup-max-us".into(),
                self.session_setup_max_us.load(Ordering::Relaxed),
            );
        }
        stats
    }

    /// With `flush`, flushes the tables' memtables (a schema change, see
    /// the module's documentation); then waits until no node has a flush
    /// or compaction queued or running.
    fn settle(&self, flush: bool) -> anyhow::Result<()> {
        self.rt.block_on(self.settle_async(flush))
    }

    fn footprint(&self) -> Result<u64, String> {
        if let Some(why) = self.unflushed.lock().ok().and_then(|u| u.clone()) {
            return Err(format!(
                "the memtables could not be flushed at close, so the files hold only part of the data: {why}"
            ));
        }
        if self.nodes.is_empty() {
            return Err(format!(
                "the Cassandra server at {} is not on this machine (or not found listening), so its files cannot be sized",
                self.settings.addresses().join(", ")
            ));
        }
        let mut total = 0;
        for node in &self.nodes {
            for dir in &node.data_dirs {
                for (table, id) in &self.tables {
                    let path = dir
                        .join(&self.settings.keyspace)
                        .join(format!("{table}-{id}"));
                    match crate::host::disk_usage::size_on_disk(&path) {
                        Ok(bytes) => total += bytes,
                        // A node that holds no data of the table has no directory for it.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(format!("cannot size '{}': {e}", path.display())),
                    }
                }
            }
        }
        Ok(total)
    }

    /// Flushes the memtables so that the footprint counts the data (see
    /// `settle`); the sessions close when the workers and the engine drop.
    /// A flush that fails (a node down, no ALTER permission) does not fail
    /// the run: the footprint says why it is unknown instead.
    fn close(&self) -> anyhow::Result<()> {
        let outcome = self.settle(true).err().map(|e| format!("{e:#}"));
        if let Ok(mut unflushed) = self.unflushed.lock() {
            *unflushed = outcome;
        }
        Ok(())
    }

    /// Flushes running (each node's `MemtableFlushWriter` pool in
    /// `system_views.thread_pools`) and done (its completed tasks);
    /// compactions and other sstable rewrites running, with their table
    /// and size (`system_views.sstable_tasks`). Cassandra 4.0 and
    /// later; asked over the sampler's own session.
    fn activity(&self) -> Result<Activity, String> {
        let mut sampler = self.sampler.lock().unwrap_or_else(|e| e.into_inner());
        let session = match sampler.as_ref() {
            Some(session) => session.clone(),
            None => {
                let session = Arc::new(
                    self.rt
                        .block_on(connect(&self.settings))
                        .map_err(|e| format!("{e:#}"))?,
                );
                sampler.insert(session).clone()
            }
        };
        self.rt
            .block_on(Self::node_activity(&session))
            .map_err(|e| {
                *sampler = None;
                format!("{e:#}")
            })
    }

    fn data_location(&self) -> Option<PathBuf> {
        self.nodes
            .first()
            .and_then(|n| n.data_dirs.first().cloned())
    }

    fn server_pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.pid).collect()
    }
}

/// Prepared statements cached per field set.
type ByFields<T> = Vec<(Vec<String>, T)>;

/// Where `names` are in `cache`, found without allocating.
fn index_of<T, N: AsRef<[u8]>, I: ExactSizeIterator<Item = N>>(
    cache: &ByFields<T>,
    names: impl Fn() -> I,
) -> Option<usize> {
    cache.iter().position(|(fields, _)| {
        fields.len() == names().len()
            && fields
                .iter()
                .zip(names())
                .all(|(f, n)| f.as_bytes() == n.as_ref())
    })
}

/// Field names as text, checked for use in CQL.
fn field_names<N: AsRef<[u8]>>(names: impl Iterator<Item = N>) -> Result<Vec<String>, OpError> {
    names
        .map(|n| {
            let name = utf8("a field name", n.as_ref())?;
            if name.contains('"') || name.is_empty() {
                return Err(OpError::failed(format!(
                    "Cassandra: field name '{name}' cannot be a column"
                )));
            }
            Ok(name.to_string())
        })
        .collect()
}

fn selection(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| quoted(f))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Copies the columns of `row` other than the key into `out`; NULL
/// columns (fields the record does not have) are left out.
fn copy_row(row: ColumnIterator, out: &mut Record) -> Result<(), OpError> {
    for col in row {
        let col = col.map_err(failed)?;
        let name = col.spec.name();
        if name == KEY_COLUMN {
            continue;
        }
        if let Some(value) = col.slice {
            out.push(name.as_bytes(), value.as_slice());
        }
    }
    Ok(())
}

/// One client's session, prepared statements and statement caches, with
/// the operations of both seams written once, as async code.
struct CqlClient {
    session: Arc<Session>,
    /// `keyspace.usertable`.
    table: String,
    read_consistency: Consistency,
    write_consistency: Consistency,
    read_all: PreparedStatement,
    /// From the start token on, and the wrap-around from the ring's start.
    scan_all: [PreparedStatement; 2],
    delete: PreparedStatement,
    read_some: ByFields<PreparedStatement>,
    scan_some: ByFields<[PreparedStatement; 2]>,
    inserts: ByFields<PreparedStatement>,
    updates: ByFields<PreparedStatement>,
}

impl CqlClient {
    /// A session for the client (see `sessions`) and its fixed statements.
    async fn open(engine: &CassandraEngine) -> anyhow::Result<Self> {
        let session = engine.session().await?;
        let s = &engine.settings;
        let table = s.table(TABLE);
        let (r, w) = (s.read_consistency, s.write_consistency);
        let prepared = |text: String, c| {
            let session = &session;
            async move { prepare(session, text, c).await.map_err(anyhow_error) }
        };
        let read_all = prepared(
            format!("SELECT * FROM {table} WHERE {KEY_COLUMN} = ? LIMIT 1"),
            r,
        )
        .await?;
        let scan_all = [
            prepared(
                format!("SELECT * FROM {table} WHERE token({KEY_COLUMN}) >= token(?) LIMIT ?"),
                r,
            )
            .await?,
            prepared(
                format!("SELECT * FROM {table} WHERE token({KEY_COLUMN}) < token(?) LIMIT ?"),
                r,
            )
            .await?,
        ];
        let delete = prepared(format!("DELETE FROM {table} WHERE {KEY_COLUMN} = ?"), w).await?;
        Ok(Self {
            session,
            table,
            read_consistency: r,
            write_consistency: w,
            read_all,
            scan_all,
            delete,
            read_some: Vec::new(),
            scan_some: Vec::new(),
            inserts: Vec::new(),
            updates: Vec::new(),
        })
    }

    async fn run(
        &self,
        stmt: &PreparedStatement,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> Result<QueryResult, OpError> {
        self.session
            .execute_unpaged(stmt, values)
            .await
            .map_err(failed)
    }

    async fn prepare(&self, text: String, write: bool) -> Result<PreparedStatement, OpError> {
        let c = if write {
            self.write_consistency
        } else {
            self.read_consistency
        };
        prepare(&self.session, text, c).await
    }

    /// The statement reading `fields` (None: all), prepared on first use.
    async fn read_statement(&mut self, fields: Option<&[&str]>) -> Result<Option<usize>, OpError> {
        let Some(fields) = fields else {
            return Ok(None);
        };
        let names = || fields.iter().map(|f| f.as_bytes());
        if let Some(i) = index_of(&self.read_some, names) {
            return Ok(Some(i));
        }
        let list = field_names(names())?;
        let text = format!(
            "SELECT {} FROM {} WHERE {KEY_COLUMN} = ? LIMIT 1",
            selection(&list),
            self.table
        );
        let stmt = self.prepare(text, false).await?;
        self.read_some.push((list, stmt));
        Ok(Some(self.read_some.len() - 1))
    }

    async fn scan_statements(&mut self, fields: Option<&[&str]>) -> Result<Option<usize>, OpError> {
        let Some(fields) = fields else {
            return Ok(None);
        };
        let names = || fields.iter().map(|f| f.as_bytes());
        if let Some(i) = index_of(&self.scan_some, names) {
            return Ok(Some(i));
        }
        let list = field_names(names())?;
        let (sel, t) = (selection(&list), &self.table);
        let from = format!("SELECT {sel} FROM {t} WHERE token({KEY_COLUMN}) >= token(?) LIMIT ?");
        let wrapped = format!("SELECT {sel} FROM {t} WHERE token({KEY_COLUMN}) < token(?) LIMIT ?");
        let stmts = [
            self.prepare(from, false).await?,
            self.prepare(wrapped, false).await?,
        ];
        self.scan_some.push((list, stmts));
        Ok(Some(self.scan_some.len() - 1))
    }

    /// The insert (or update) statement for the fields of `values`.
    async fn write_statement(&mut self, values: &Record, update: bool) -> Result<usize, OpError> {
        let names = || values.fields().map(|(n, _)| n);
        let cache = if update { &self.updates } else { &self.inserts };
        if let Some(i) = index_of(cache, names) {
            return Ok(i);
        }
        let list = field_names(names())?;
        let text = if update {
            let set: Vec<String> = list.iter().map(|f| format!("{} = ?", quoted(f))).collect();
            format!(
                "UPDATE {} SET {} WHERE {KEY_COLUMN} = ?",
                self.table,
                set.join(", ")
            )
        } else {
            format!(
                "INSERT INTO {} ({KEY_COLUMN}{}{}) VALUES ({})",
                self.table,
                if list.is_empty() { "" } else { ", " },
                selection(&list),
                vec!["?"; list.len() + 1].join(", ")
            )
        };
        let stmt = self.prepare(text, true).await?;
        let cache = if update {
            &mut self.updates
        } else {
            &mut self.inserts
        };
        cache.push((list, stmt));
        Ok(cache.len() - 1)
    }

    /// Binds key and values (the key first for an insert, last for an
    /// update) and runs `stmt`.
    async fn write(
        &self,
        stmt: &PreparedStatement,
        key: &str,
        values: &Record,
        key_first: bool,
    ) -> OpResult {
        let mut bound: Vec<&str> = Vec::with_capacity(values.len() + 1);
        if key_first {
            bound.push(key);
        }
        for (_, v) in values.fields() {
            bound.push(utf8("a value", v)?);
        }
        if !key_first {
            bound.push(key);
        }
        self.run(stmt, &bound[..]).await.map(|_| ())
    }
}

super::async_records!(impl[] CqlClient, true);

impl CqlClient {
    async fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> OpResult {
        let key = utf8("the key", key)?;
        let stmt = match self.read_statement(fields).await? {
            Some(i) => &self.read_some[i].1,
            None => &self.read_all,
        };
        let result = self.run(stmt, (key,)).await?;
        let rows = result.into_rows_result().map_err(failed)?;
        let mut rows = rows.rows::<ColumnIterator>().map_err(failed)?;
        match rows.next() {
            Some(row) => copy_row(row.map_err(failed)?, out),
            None => Err(OpError::NotFound),
        }
    }

    async fn scan(&mut self, asked: ScanRequest<'_>, out: &mut ScanResults) -> OpResult {
        let key = utf8("the start key", asked.start_key)?;
        let stmts = match self.scan_statements(asked.fields).await? {
            Some(i) => &self.scan_some[i].1,
            None => &self.scan_all,
        };
        let mut left = i32::try_from(asked.count).unwrap_or(i32::MAX);
        // From the start token to the ring's end, then from its start.
        for stmt in stmts {
            if left == 0 {
                break;
            }
            let result = self.run(stmt, (key, left)).await?;
            let rows = result.into_rows_result().map_err(failed)?;
            for row in rows.rows::<ColumnIterator>().map_err(failed)? {
                copy_row(row.map_err(failed)?, out.next_slot())?;
                left -= 1;
            }
        }
        Ok(())
    }

    /// CQL UPDATE: an upsert (see the module's documentation).
    async fn update<'a>(&'a mut self, key: &'a [u8], values: &'a Record) -> OpResult {
        let key = utf8("the key", key)?;
        let i = self.write_statement(values, true).await?;
        self.write(&self.updates[i].1, key, values, false).await
    }

    async fn insert<'a>(&'a mut self, key: &'a [u8], values: &'a Record) -> OpResult {
        let key = utf8("the key", key)?;
        let i = self.write_statement(values, false).await?;
        self.write(&self.inserts[i].1, key, values, true).await
    }

    /// Deleting a missing key is Ok (YCSB's binding).
    async fn delete<'a>(&'a mut self, key: &'a [u8]) -> OpResult {
        let key = utf8("the key", key)?;
        self.run(&self.delete, (key,)).await.map(|_| ())
    }
}

/// A client thread's worker: blocks on each operation (clients=threads).
pub struct CassandraWorker<'e> {
    rt: &'e DriverRuntime,
    client: CqlClient,
}

super::driver_runtime::blocking_on_driver!(CassandraWorker<'_>);

/// Raw keys and values in the `kv` table: point access only.
pub struct CassandraKvWorker<'e> {
    rt: &'e DriverRuntime,
    session: Arc<Session>,
    get: PreparedStatement,
    put: PreparedStatement,
    delete: PreparedStatement,
}

impl CassandraKvWorker<'_> {
    fn run(
        &self,
        stmt: &PreparedStatement,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> Result<QueryResult, OpError> {
        self.rt
            .block_on(self.session.execute_unpaged(stmt, values))
            .map_err(failed)
    }
}

const NO_ORDER: &str = "Cassandra: keys cannot be iterated in order (point access only)";

super::blocking_raw!(CassandraKvWorker<'_>, unordered: NO_ORDER);

impl CassandraKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        let result = self.run(&self.get, (key,))?;
        let rows = result.into_rows_result().map_err(failed)?;
        let mut rows = rows.rows::<(&[u8],)>().map_err(failed)?;
        match rows.next() {
            Some(row) => Ok(row.map_err(failed)?.0.len()),
            None => Err(OpError::NotFound),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        self.run(&self.put, (key, value)).map(|_| ())
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        self.run(&self.delete, (key,)).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::refusal;
    use crate::testing::secret_checks::{assert_secret_hidden, login_on_port_1, open_error, props};

    #[test]
    fn the_password_is_never_shown() {
        let p = login_on_port_1("cassandra");
        let s = Settings::from_properties(&p, false).unwrap();
        let given = s.credentials.as_ref().map(|c| c.password.as_str());
        let err = open_error(&SPEC, &p);
        assert_secret_hidden("cassandra", &s, given, &s.effective, err);
    }

    #[test]
    fn yaml_lists_and_storage_dirs_are_read() {
        let yaml = "cluster_name: 'kvperf'\ndata_file_directories:\n  - /a/data\n  - \"/b/data\"\ncommitlog_directory: /c\n";
        assert_eq!(
            yaml_list(yaml, "data_file_directories"),
            ["/a/data", "/b/data"]
        );
        assert!(yaml_list(yaml, "seeds").is_empty());
        // Flow style and comments, as an edited cassandra.yaml may hold.
        let flow = "data_file_directories: [/a/data, '/b/data'] # two disks\nseeds: x\n";
        assert_eq!(
            yaml_list(flow, "data_file_directories"),
            ["/a/data", "/b/data"]
        );
        assert!(yaml_list("data_file_directories: [unclosed", "data_file_directories").is_empty());
        let args = vec![
            "java".to_string(),
            "-Dcassandra.storagedir=/srv/node1".into(),
        ];
        assert_eq!(data_dirs(&args), [PathBuf::from("/srv/node1/data")]);
    }

    #[test]
    fn options_are_checked_and_the_password_is_never_shown() {
        let mut p = Properties::new();
        p.set("cassandra.username", "alice");
        p.set("cassandra.password", "s3cret");
        p.set("cassandra.keyspace", "MyKs");
        let s = Settings::from_properties(&p, false).unwrap();
        assert_eq!(s.keyspace, "myks");
        assert_eq!(s.fields.len(), 10);
        // A driver that repeats what it was given does not show it either.
        let err = s.connect_error(&"auth as alice/s3cret refused").to_string();
        assert!(err.contains("alice/(redacted) refused"), "{err}");
        assert!(
            err.starts_with("cannot connect to Cassandra at 127.0.0.1:9042"),
            "{err}"
        );

        let p = props(&[("cassandra.keyspace", "bad-name")]);
        assert!(Settings::from_properties(&p, false).is_err());
        let p = props(&[("cassandra.write_consistency", "quorm")]);
        let err = refusal(Settings::from_properties(&p, false));
        assert!(err.contains("did you mean 'quorum'"), "{err}");
    }

    #[test]
    fn node_work_becomes_flushes_and_compactions() {
        let work = NodeWork {
            flushing: 1,
            flushed: 12,
            tasks: vec![
                (
                    "compaction".into(),
                    format!("ycsb.usertable ({})", task_size(12_000_000, "bytes")),
                ),
                (
                    "cleanup".into(),
                    format!("ycsb.kv ({})", task_size(2, "keys")),
                ),
            ],
        };
        let a = work.activity();
        let running: Vec<(EventKind, &str)> = a
            .running
            .iter()
            .map(|w| (w.kind, w.detail.as_str()))
            .collect();
        assert_eq!(
            running,
            vec![
                (EventKind::Flush, ""),
                (
                    EventKind::Compaction,
                    "cleanup of ycsb.kv (2 keys), ycsb.usertable (12.0 MB)"
                ),
            ]
        );
        assert_eq!(a.tallies.len(), 1);
        assert_eq!(
            (a.tallies[0].kind, a.tallies[0].count),
            (EventKind::Flush, 12)
        );
        let idle = NodeWork {
            flushed: 12,
            ..NodeWork::default()
        }
        .activity();
        assert!(idle.running.is_empty());
    }
}
