//! A PostgreSQL server, with the schema and statements of YCSB 0.17.0's
//! JDBC binding.
//!
//! **Clients.** Each client has its own session, kvperf's own ([`wire`]:
//! the extended query protocol over `postgres-protocol`'s messages, on a
//! socket the client reads and writes itself): a client thread blocks on
//! its socket (`clients=threads`, the default below 16 clients), a client
//! task awaits it on the runner's runtime (`clients=tasks`, the default
//! from 16), pinned to one worker, which polls the socket (pgbench's
//! threads each poll their own connections; bench/RESULTS.md 6k). The record
//! operations are written once over either ([`Transport`]). The engine's
//! own calls (schema, settle, footprint, the events sampler) use the
//! `postgres` crate's blocking client; `kvperf bench` uses the thread's
//! wire session. The `postgres` crate's client is tokio-postgres under a
//! runtime of its own and cost about 6 us more client CPU and one more
//! wake-up per read than pgbench's libpq (bench/RESULTS.md 6h), which is
//! why the record clients do not use it.
//!
//! **Schema.** One table per store, named by `postgres.table` (the store's
//! namespace; `usertable` by default):
//! `CREATE TABLE usertable (YCSB_KEY VARCHAR(255) COLLATE "C" PRIMARY KEY,
//! "field0" TEXT, ... "field9" TEXT)`, one column per field, named
//! `{fieldnameprefix}{i}` for `i` below `fieldcount` (YCSB's own properties,
//! which the workload uses too). Columns are TEXT as in YCSB's schema:
//! kvperf's values are printable ASCII (YCSB's `RandomByteIterator`
//! characters, or the `key:field:hash` strings of `dataintegrity`), so they
//! are valid text; a value that is not UTF-8 (or holds a NUL) fails its
//! operation with that reason rather than being stored altered. Two choices
//! differ from YCSB's DDL: the key column sorts by bytes (`COLLATE "C"`), so
//! scans are in the same key order as every other kvperf engine whatever
//! the database's collation; and field columns are quoted, so a record's
//! field names come back exactly as written (with the default prefix the
//! columns are `field0`..., as YCSB's unquoted `FIELD0` fold to). All YCSB
//! tables of a run share the store's table: the `table` argument is ignored.
//!
//! **Statements** (prepared once per worker, per field set where the SQL
//! names fields): read `SELECT * FROM t WHERE YCSB_KEY = $1`, or `SELECT
//! "f", ...` for given fields; scan `SELECT * FROM t WHERE YCSB_KEY >= $1
//! ORDER BY YCSB_KEY LIMIT $2`; update `UPDATE t SET "f" = $2, ... WHERE
//! YCSB_KEY = $1`; delete `DELETE FROM t WHERE YCSB_KEY = $1`. Each is its
//! own autocommit transaction, as YCSB's `jdbc.autocommit=true`. Results
//! follow kvperf's rules, not the JDBC binding's: an update of a missing
//! key is `NotFound` (YCSB: `UNEXPECTED_STATE`), a delete of a missing key
//! is Ok (YCSB: `UNEXPECTED_STATE`), and an insert of an existing key
//! replaces the given fields (`INSERT ... ON CONFLICT (YCSB_KEY) DO UPDATE`,
//! like every kvperf engine's insert; YCSB: a duplicate-key `ERROR`). NULL
//! columns (fields a record never had) are left out of what a read returns.
//!
//! **Raw key-values** (`kvperf bench`): a second table `{table}_kv (k BYTEA
//! PRIMARY KEY, v BYTEA)` (BYTEA compares as bytes, so the cursor runs in
//! db_bench's key order). The cursor copies entries out in growing batches
//! (1, then 16 up to 1024 rows per query), so no statement stays open
//! between calls.
//!
//! **Stores.** A fresh store drops and re-creates both tables and nothing
//! else, and only tables kvperf made: each table kvperf creates carries its
//! mark (a `COMMENT ON TABLE`, [`MARK`]), and `--fresh` refuses, in one
//! line, a table of that name without it (a user's, YCSB's, or one an
//! older kvperf made before it marked them: `DROP TABLE` it by hand).
//! `Any` creates them if missing (marked); `Existing` needs one of them;
//! both refuse a table there without the mark (a user's, one YCSB's JDBC
//! binding made) unless `postgres.adopt=true`, which uses it as it is
//! (its columns must be `ycsb_key`, `field0`...) and leaves it unmarked. Durability is the server's
//! `synchronous_commit` unless `postgres.synchronous_commit` sets it per
//! session (db_bench's `--sync` does). `settle` waits for autovacuum on the
//! store's tables and then runs `CHECKPOINT`, which writes every dirty page
//! to the data files and fsyncs them; `compact` is `VACUUM FULL`. The
//! footprint is `pg_total_relation_size` of both tables: their heap, TOAST,
//! indexes, free-space and visibility maps.

use std::collections::{BTreeMap, HashMap};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls};

use wire::{
    ConnectError, Said, TaskStream, Transport, WireConfig, WireRow, WireSession, WireStatement,
};

use super::endpoint::{self, server_option};
use super::kv::{KvBatch, Start};
use super::options::OptionValues;
use super::reconnect::{
    handshake_limit, no_answer, say_still_waiting, wait_limit, within_saying, Backoff,
};
use super::{
    run_now, Access, Activity, AsyncOps, Capabilities, ClientSlot, DbBenchFlags, Engine,
    EngineInfo, EngineOption, EngineSpec, EventKind, EventSupport, KvSupport, OpError, OpResult,
    OpenMode, OpenOptions, Operations, Record, Runs, ScanRequest, ScanResults, SetupFuture,
    StoreKind, SERVER,
};
use crate::error::InputError;
use crate::properties::{redacted, scrubbed, Properties};

mod wire;

pub static SPEC: EngineSpec = EngineSpec {
    name: "postgres",
    about: "PostgreSQL server (YCSB's JDBC schema: a column per field) via its wire protocol",
    feature: "postgres",
    store: StoreKind::Server {
        server: "postgres",
        namespace: "postgres.table",
    },
    capabilities: Capabilities {
        // Autovacuum and the checkpointer.
        background_work: true,
        // VACUUM FULL.
        compact: true,
        kv: KvSupport::Ordered,
        // Clients as tasks from 16 clients, each awaiting its own session's
        // socket on the worker it is pinned to; fewer on threads
        // (bench/RESULTS.md 6k).
        async_ops: AsyncOps::ByDefaultFrom(16),
        tasks_own_sockets: true,
        // Its statistics views, over a session of the sampler's own.
        events: EventSupport::Reports(&[EventKind::Checkpoint, EventKind::Vacuum, EventKind::Analyze]),
        // An update writes a new row version, but long values TOASTed out
        // of line stay where they are: not whole records.
        ..SERVER
    },
    options: &[
        server_option!(host, "server address"),
        server_option!(port, "5432", "server port"),
        server_option!(adopt),
        EngineOption { name: "user", default: "postgres", help: "user to connect as" },
        server_option!(password, "password", "POSTGRES"),
        EngineOption { name: "database", default: "kvperf", help: "database (`kvperf server start postgres` creates kvperf)" },
        EngineOption { name: "table", default: "usertable", help: "the store's table (and {table}_kv for kvperf bench): keeps two stores apart in one database" },
        EngineOption { name: "synchronous_commit", default: "", help: "on, off, local, remote_write or remote_apply for kvperf's sessions; empty = the server's setting" },
    ],
    open,
    db_bench: map_db_bench_flags,
};

/// How long the probe of a failed connection (does PostgreSQL answer an
/// SSLRequest?) may take: a port where something other than PostgreSQL
/// answers is named in seconds.
const PROBE_LIMIT: Duration = Duration::from_secs(5);
/// How long `settle` waits for autovacuum of the store's tables.
const SETTLE_LIMIT: Duration = Duration::from_secs(600);
const KEY_COLUMN: &str = "ycsb_key";
/// The comment kvperf gives each table it creates: `--fresh` drops only
/// tables that carry it (a user does not write this by accident).
const MARK: &str = "kvperf-store 1: made by kvperf, which drops it at load --fresh";

/// `COMMENT ON TABLE name IS MARK`.
fn mark_sql(name: &str) -> String {
    format!("COMMENT ON TABLE {name} IS '{MARK}'")
}
/// How long one of kvperf's own statements (the schema's, a client's
/// statements being prepared, the size query) waits for a table's lock
/// before kvperf looks who holds it, says so once, and waits again, up to
/// `stalltimeout` in all (`lock_timeout` on those sessions).
const LOCK_POLL: &str = "1s";
/// Who holds a lock on the store's tables ($1, $2), other than this
/// session, in one line: `process PID (MODE; APPLICATION, STATE for N s: QUERY)`.
const LOCK_HOLDERS: &str = "SELECT COALESCE(string_agg(DISTINCT format('process %s (%s; %s, %s for %s s: %s)', \
     l.pid, l.mode, COALESCE(NULLIF(a.application_name, ''), a.usename::text, '?'), COALESCE(a.state, '?'), \
     COALESCE(floor(extract(epoch FROM now() - COALESCE(a.xact_start, a.query_start)))::bigint, 0), \
     left(regexp_replace(COALESCE(a.query, ''), '\\s+', ' ', 'g'), 80)), '; '), '')::text \
     FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
     WHERE l.granted AND l.pid <> pg_backend_pid() AND l.relation IN (to_regclass($1::text), to_regclass($2::text))";
/// Set once the lock wait was said (clients wait on the same lock).
static LOCK_WAIT_SAID: AtomicBool = AtomicBool::new(false);
const SYNC_CHOICES: [&str; 5] = ["on", "off", "local", "remote_write", "remote_apply"];

/// `--sync` sets `synchronous_commit` (on, or off) for kvperf's sessions;
/// the other flags configure nothing PostgreSQL has per session.
fn map_db_bench_flags(flags: &DbBenchFlags, props: &mut Properties) -> Vec<&'static str> {
    let mut honoured = Vec::new();
    if let Some(sync) = flags.sync {
        if !props.contains("postgres.synchronous_commit") {
            props.set(
                "postgres.synchronous_commit",
                if sync { "on" } else { "off" },
            );
        }
        honoured.push("sync");
    }
    flags.not_honoured(&honoured)
}

/// Where the server is and which store on it; `Debug` hides the password.
#[derive(Clone)]
struct PgOptions {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    database: String,
    table: String,
    kv_table: String,
    synchronous_commit: Option<String>,
    /// `postgres.adopt`: write into tables kvperf did not mark.
    adopt: bool,
    /// Columns of a fresh table: `{fieldnameprefix}{i}`.
    fields: Vec<String>,
    effective: BTreeMap<String, String>,
    /// `stalltimeout`: how long kvperf's own calls wait for a table's lock.
    wait: Option<Duration>,
    /// How long a connection's start-up may take (`stalltimeout`).
    handshake: Duration,
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        endpoint::debug_server(f, "PgOptions", &self.host, self.port, &self.password)
            .field("user", &self.user)
            .field("database", &self.database)
            .field("table", &self.table)
            .field("synchronous_commit", &self.synchronous_commit)
            .field("fields", &self.fields.len())
            .finish()
    }
}

/// A plain SQL identifier (used unquoted, so it folds to lower case as
/// YCSB's `usertable` does), leaving room for the `_kv` suffix.
fn check_table(name: &str) -> Result<(), InputError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && name.len() <= 60 {
        return Ok(());
    }
    Err(InputError::property(
        "postgres.table",
        format!("'{name}' is not a plain SQL name (letters, digits and _, not starting with a digit, at most 60 characters)"),
    ))
}

/// A quoted identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl PgOptions {
    fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let port_text = v.text("port");
        let port = endpoint::tcp_port_text("postgres.port", &port_text)?;
        let password = Some(endpoint::given_or_env(&v, "password")).filter(|p| !p.is_empty());
        let table = v.text("table");
        check_table(&table)?;
        let synchronous_commit = match v.text("synchronous_commit").as_str() {
            "" => None,
            _ => Some(v.choice("synchronous_commit", &SYNC_CHOICES)?),
        };
        let count = props.u64("fieldcount", 10)?;
        if count == 0 || count > 1599 {
            return Err(InputError::property(
                "fieldcount",
                format!("{count}: a PostgreSQL table holds 1 to 1599 fields besides its key"),
            ));
        }
        let prefix = props.string("fieldnameprefix", "field");
        let fields = (0..count).map(|i| format!("{prefix}{i}")).collect();
        let mut effective = v.effective();
        effective.insert(
            "password".into(),
            redacted("password", password.as_deref().unwrap_or("")),
        );
        Ok(Self {
            host: v.text("host"),
            port,
            user: v.text("user"),
            password,
            database: v.text("database"),
            kv_table: format!("{table}_kv"),
            table,
            synchronous_commit,
            adopt: endpoint::adopts(&v)?,
            fields,
            effective,
            wait: wait_limit(props),
            handshake: handshake_limit(props),
        })
    }

    fn addr(&self) -> String {
        endpoint::socket_address(&self.host, self.port)
    }

    fn config(&self) -> postgres::Config {
        let mut config = postgres::Config::new();
        config
            .host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.database)
            .application_name("kvperf")
            .connect_timeout(self.handshake);
        if let Some(password) = &self.password {
            config.password(password);
        }
        config
    }

    /// `SET synchronous_commit`, if asked.
    fn session_setup(&self) -> Option<String> {
        let mode = self.synchronous_commit.as_ref()?;
        Some(format!("SET synchronous_commit = {mode}"))
    }

    /// Words about this server, never with the password in them.
    fn scrub(&self, said: &str) -> String {
        scrubbed(said, self.password.as_deref())
    }

    /// A call that failed (setting up a session, or on the engine's own),
    /// in its words: `PostgreSQL at ADDR: ...`.
    fn failed(&self, e: &postgres::Error) -> anyhow::Error {
        self.failed_said(&words(e))
    }

    fn failed_said(&self, said: &str) -> anyhow::Error {
        anyhow::anyhow!("PostgreSQL at {}: {}", self.addr(), self.scrub(said))
    }

    /// A new session of the engine's own (schema, settle, footprint,
    /// events), on the `postgres` crate.
    fn connect(&self) -> anyhow::Result<Client> {
        // The crate's connect_timeout bounds the TCP connect only; a silent
        // peer keeps the connecting thread until it closes.
        let config = self.config();
        let (addr, limit) = (self.addr(), self.handshake);
        let say = || say_still_waiting("PostgreSQL", &addr, limit);
        let mut client = within_saying(limit, say, move || config.connect(NoTls))
            .ok_or_else(|| self.silent())?
            .map_err(|e| self.refused(self.why(&e)))?;
        if let Some(sql) = self.session_setup() {
            client.batch_execute(&sql).map_err(|e| self.failed(&e))?;
        }
        Ok(client)
    }

    /// A new session of a record client's: kvperf's own, on a thread's
    /// socket or a task's ([`wire`]).
    async fn connect_wire<T: Transport>(&self) -> anyhow::Result<WireSession<T>> {
        let config = WireConfig {
            host: &self.host,
            port: self.port,
            user: &self.user,
            password: self.password.as_deref(),
            database: &self.database,
            limit: self.handshake,
        };
        let mut session = WireSession::<T>::connect(&config)
            .await
            .map_err(|why| self.refused(why))?;
        if let Some(sql) = self.session_setup() {
            let set = session.simple(&sql).await;
            set.map_err(|said| self.failed_said(&said))?;
        }
        Ok(session)
    }

    /// A connection whose start-up had no answer within `stalltimeout`:
    /// a run failure (the server stopped, or something silent listens).
    fn silent(&self) -> anyhow::Error {
        no_answer(
            "PostgreSQL",
            &self.addr(),
            "a connection's start-up",
            self.handshake,
        )
    }

    /// Why the `postgres` crate could not connect, in the terms of
    /// [`ConnectError`].
    fn why(&self, err: &postgres::Error) -> ConnectError {
        match err.as_db_error() {
            Some(db) => ConnectError::Refused {
                code: db.code().clone(),
                said: words(err),
            },
            // The server asked for a password and none is set.
            None if words(err).contains("password missing") => ConnectError::PasswordMissing,
            None if !speaks_postgres(&self.addr(), err) => ConnectError::NotPostgres,
            None => ConnectError::Unreachable(words(err)),
        }
    }

    /// The error of a connection that failed: unreachable (with how to
    /// start a server), silent, not PostgreSQL, a login refused, or
    /// refused by the server otherwise (its words).
    fn refused(&self, why: ConnectError) -> anyhow::Error {
        let addr = self.addr();
        let login = format!(
            "PostgreSQL at {addr} refused the login as user '{}'",
            self.user
        );
        let password_hint =
            "set -p postgres.password (or KVPERF_POSTGRES_PASSWORD) and postgres.user";
        let message = match why {
            ConnectError::Silent => return self.silent(),
            ConnectError::Failed(s) => return self.failed_said(&s),
            ConnectError::PasswordMissing => format!(
                "PostgreSQL at {addr} wants a password for user '{}': {password_hint}",
                self.user
            ),
            ConnectError::NotPostgres => format!(
                "the server at {addr} does not speak the PostgreSQL protocol (set -p postgres.host and postgres.port)"
            ),
            ConnectError::Unreachable(s) => format!(
                "cannot reach PostgreSQL at {addr} ({}); `kvperf server start postgres --port {}` starts one, or set -p postgres.host and postgres.port",
                self.scrub(&s),
                self.port
            ),
            ConnectError::Refused { code, said: s } if code == SqlState::TOO_MANY_CONNECTIONS => format!(
                "PostgreSQL at {addr} is full: it refuses new connections ({}); run fewer clients, or raise its max_connections",
                self.scrub(&s)
            ),
            ConnectError::Refused { code, said: s } if is_login_refusal(&code) => {
                format!("{login}: {}; {password_hint}", self.scrub(&s))
            }
            ConnectError::Refused { code, said: s } => {
                let hint = if code == SqlState::INVALID_CATALOG_NAME {
                    " (`kvperf server start postgres` creates database kvperf; or set -p postgres.database)"
                } else {
                    ""
                };
                format!(
                    "PostgreSQL at {addr} refused the connection as user '{}' to database '{}': {}{hint}",
                    self.user,
                    self.database,
                    self.scrub(&s)
                )
            }
        };
        InputError::Invalid(message).into()
    }

    fn create_sql(&self, if_not_exists: bool) -> [String; 2] {
        let ine = if if_not_exists { "IF NOT EXISTS " } else { "" };
        let columns: Vec<String> = self
            .fields
            .iter()
            .map(|f| format!("{} TEXT", quoted(f)))
            .collect();
        [
            format!(
                "CREATE TABLE {ine}{} ({KEY_COLUMN} VARCHAR(255) COLLATE \"C\" PRIMARY KEY, {})",
                self.table,
                columns.join(", ")
            ),
            format!(
                "CREATE TABLE {ine}{} (k BYTEA PRIMARY KEY, v BYTEA NOT NULL)",
                self.kv_table
            ),
        ]
    }
}

/// Whether the server's words are a lock timeout (`lock_timeout`: SQLSTATE
/// 55P03, "canceling statement due to lock timeout").
fn is_lock_timeout(said: &str) -> bool {
    said.contains("lock timeout")
}

impl PgOptions {
    /// A statement of kvperf's own waited `LOCK_POLL` for a lock that
    /// `held` names: said once on stderr; an error once `started` is
    /// `limit` ago (kvperf stops waiting: a run failure, exit 3).
    fn lock_waited(
        &self,
        started: Instant,
        limit: Option<Duration>,
        held: &str,
        doing: &str,
    ) -> anyhow::Result<()> {
        let (t, kv) = (&self.table, &self.kv_table);
        let held = if held.is_empty() {
            "another session (it has let go by now, or kvperf cannot see it)".to_string()
        } else {
            held.to_string()
        };
        if let Some(limit) = limit.filter(|l| started.elapsed() >= *l) {
            anyhow::bail!(
                "PostgreSQL at {}: kvperf waited {} s (stalltimeout) for a lock on table {t} or {kv} to {doing}, held by {held}; end that session or its transaction, then run again",
                self.addr(),
                limit.as_secs_f64()
            );
        }
        if !LOCK_WAIT_SAID.swap(true, Ordering::Relaxed) {
            eprintln!(
                "kvperf: PostgreSQL at {}: waiting for a lock on table {t} or {kv} to {doing}, held by {held}; {}",
                self.addr(),
                limit.map_or("kvperf waits until it is released (stalltimeout=0)".to_string(), |l| format!(
                    "kvperf waits at most {} s (stalltimeout)",
                    l.as_secs_f64()
                ))
            );
        }
        Ok(())
    }
}

/// Runs `f` on a session of kvperf's own whose `lock_timeout` is
/// [`LOCK_POLL`]: a lock held by another session is waited out (said once,
/// with who holds it) for at most `limit` in all.
fn waiting_out_locks<T>(
    client: &mut Client,
    options: &PgOptions,
    limit: Option<Duration>,
    doing: &str,
    mut f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
) -> anyhow::Result<T> {
    let started = Instant::now();
    loop {
        match f(client) {
            Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                let (t, kv) = (&options.table, &options.kv_table);
                let held = client
                    .query_one(LOCK_HOLDERS, &[t, kv])
                    .map(|row| row.get::<_, String>(0))
                    .unwrap_or_default();
                options.lock_waited(started, limit, &held, doing)?;
            }
            other => return other.map_err(|e| options.failed(&e)),
        }
    }
}

/// The first of `names` that exists without kvperf's mark.
fn unmarked_table<'n>(
    client: &mut Client,
    names: [&'n String; 2],
) -> Result<Option<&'n String>, postgres::Error> {
    for name in names {
        let row = client.query_one(
            "SELECT to_regclass($1::text) IS NOT NULL, obj_description(to_regclass($1::text)::oid, 'pg_class')",
            &[name],
        )?;
        let (exists, comment): (bool, Option<String>) = (row.get(0), row.get(1));
        if exists && comment.as_deref() != Some(MARK) {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    let options = PgOptions::from_properties(opts.properties)?;
    let mut client = options.connect()?;
    let addr = options.addr();
    let sql_error = |e: postgres::Error| options.failed(&e);
    let (t, kv) = (&options.table, &options.kv_table);
    // A lock another session holds on the tables is waited out, said, and
    // bounded by stalltimeout (this session's statements only).
    client
        .batch_execute(&format!("SET lock_timeout = '{LOCK_POLL}'"))
        .map_err(sql_error)?;
    let wait = options.wait;
    match opts.mode {
        OpenMode::Fresh => {
            // Only tables kvperf made (and marked) are dropped.
            if let Some(name) = unmarked_table(&mut client, [t, kv]).map_err(sql_error)? {
                return Err(InputError::Invalid(format!(
                    "table {name} in database '{}' on PostgreSQL at {addr} has no kvperf mark (kvperf did not make it, or made it before it marked its tables), so --fresh does not drop it: set another -p postgres.table, or drop it by hand if it may go (DROP TABLE {name})",
                    options.database
                ))
                .into());
            }
            let [create_t, create_kv] = options.create_sql(false);
            let remake = format!(
                "BEGIN; DROP TABLE IF EXISTS {t}, {kv}; {create_t}; {}; {create_kv}; {}; COMMIT",
                mark_sql(t),
                mark_sql(kv)
            );
            waiting_out_locks(
                &mut client,
                &options,
                wait,
                "empty the store (--fresh)",
                |c| {
                    let done = c.batch_execute(&remake);
                    if done.is_err() {
                        // A lock timeout aborts the transaction: end it before trying again.
                        let _ = c.batch_execute("ROLLBACK");
                    }
                    done
                },
            )?;
        }
        OpenMode::Existing | OpenMode::Any => {
            if opts.mode == OpenMode::Existing {
                let row = client
                    .query_one(
                        "SELECT to_regclass($1::text) IS NOT NULL OR to_regclass($2::text) IS NOT NULL",
                        &[t, kv],
                    )
                    .map_err(sql_error)?;
                if !row.get::<_, bool>(0) {
                    return Err(InputError::Invalid(format!(
                        "PostgreSQL at {addr}, database '{}', holds no postgres store named '{t}' (no table {t} or {kv}); load one first, or set -p postgres.table",
                        options.database
                    ))
                    .into());
                }
            }
            // Only into tables kvperf made, unless the user opts in.
            if let Some(name) = unmarked_table(&mut client, [t, kv]).map_err(sql_error)? {
                if !options.adopt {
                    let store = format!(
                        "table {name} in database '{}' on PostgreSQL at {addr} is there",
                        options.database
                    );
                    return Err(
                        endpoint::not_kvperfs_store(&store, "postgres", "postgres.table").into(),
                    );
                }
            }
            // A table made here is marked as kvperf's; one that was there
            // (another kvperf's at the same moment, or not kvperf's) is not.
            for (name, sql) in [t, kv].into_iter().zip(options.create_sql(false)) {
                let make = format!(
                    "DO $kvperf$ BEGIN {sql}; {}; EXCEPTION WHEN duplicate_table OR unique_violation THEN NULL; END $kvperf$",
                    mark_sql(name)
                );
                waiting_out_locks(
                    &mut client,
                    &options,
                    wait,
                    "check the store's tables",
                    |c| c.batch_execute(&make),
                )?;
            }
        }
    }
    // An adopted table must have YCSB's key column.
    let has_key = client
        .query_opt(
            "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1::text) AND attname = $2 AND NOT attisdropped",
            &[t, &KEY_COLUMN],
        )
        .map_err(sql_error)?
        .is_some();
    if !has_key {
        return Err(InputError::Invalid(format!(
            "table {t} in database '{}' on PostgreSQL at {addr} has no {KEY_COLUMN} column, so it is not a YCSB table; use another -p postgres.table",
            options.database
        ))
        .into());
    }
    let server_version: String = client
        .query_one("SHOW server_version", &[])
        .map_err(sql_error)?
        .get(0);
    let mut version = format!("PostgreSQL {server_version}");
    if let Some(krate) = option_env!("KVPERF_POSTGRES_PROTOCOL_VERSION") {
        version.push_str(&format!(" (kvperf's session on postgres-protocol {krate})"));
    }
    Ok(Box::new(PgEngine {
        options,
        control: Mutex::new(client),
        sampler: Mutex::new(None),
        version,
    }))
}

pub struct PgEngine {
    options: PgOptions,
    /// The engine's own session (settle, compact, footprint).
    control: Mutex<Client>,
    /// The events sampler's session (`activity`), opened at its first
    /// poll and again after a failed one.
    sampler: Mutex<Option<PgSampler>>,
    version: String,
}

/// The sampler's session and what it remembers between polls.
struct PgSampler {
    client: Client,
    /// The server's checkpoint counters: `pg_stat_checkpointer` from
    /// PostgreSQL 17, `pg_stat_bgwriter` before.
    counters_sql: &'static str,
    /// Checkpoints requested or timed at the last poll, and the buffers
    /// written when the last of them was counted.
    last: Option<(i64, i64)>,
    /// Checkpoints that wrote something, counted since the first poll: a
    /// timed checkpoint of an idle server is skipped yet counted by the
    /// server, and is no event.
    performed: u64,
}

/// Checkpoints (timed + requested), buffers they wrote, the block size,
/// and vacuums and analyzes of the database's tables (manual + auto).
const COUNTERS_BEFORE_17: &str =
    "SELECT (checkpoints_timed + checkpoints_req)::bigint, buffers_checkpoint::bigint, \
     current_setting('block_size')::bigint, \
     (SELECT COALESCE(sum(vacuum_count + autovacuum_count), 0)::bigint FROM pg_stat_user_tables), \
     (SELECT COALESCE(sum(analyze_count + autoanalyze_count), 0)::bigint FROM pg_stat_user_tables) \
     FROM pg_stat_bgwriter";
const COUNTERS_FROM_17: &str =
    "SELECT (num_timed + num_requested)::bigint, buffers_written::bigint, \
     current_setting('block_size')::bigint, \
     (SELECT COALESCE(sum(vacuum_count + autovacuum_count), 0)::bigint FROM pg_stat_user_tables), \
     (SELECT COALESCE(sum(analyze_count + autoanalyze_count), 0)::bigint FROM pg_stat_user_tables) \
     FROM pg_stat_checkpointer";

/// What runs now: the checkpointer's wait event while it is not idle
/// (`CheckpointerMain`; NULL when it is on the CPU or hidden from a role
/// without `pg_read_all_stats`), and the vacuums and analyzes in progress
/// in this database (auto or not: autovacuum workers' queries begin
/// `autovacuum:`).
const RUNNING: &str = "SELECT 'checkpoint', '', wait_event, false FROM pg_stat_activity \
     WHERE backend_type = 'checkpointer' AND wait_event IS NOT NULL AND wait_event <> 'CheckpointerMain' \
     UNION ALL SELECT 'vacuum', p.relid::regclass::text, p.phase, COALESCE(a.query LIKE 'autovacuum:%', false) \
     FROM pg_stat_progress_vacuum p LEFT JOIN pg_stat_activity a ON a.pid = p.pid WHERE p.datname = current_database() \
     UNION ALL SELECT 'analyze', p.relid::regclass::text, p.phase, COALESCE(a.query LIKE 'autovacuum:%', false) \
     FROM pg_stat_progress_analyze p LEFT JOIN pg_stat_activity a ON a.pid = p.pid WHERE p.datname = current_database()";

impl PgSampler {
    fn open(options: &PgOptions) -> anyhow::Result<Self> {
        let mut client = options.connect()?;
        let failed = |e: postgres::Error| options.failed(&e);
        // A poll must not hang the end of a window on a busy server.
        client
            .batch_execute("SET statement_timeout = '5s'")
            .map_err(failed)?;
        let version: i64 = client
            .query_one("SELECT current_setting('server_version_num')::bigint", &[])
            .map_err(failed)?
            .get(0);
        Ok(Self {
            client,
            counters_sql: if version >= 170_000 {
                COUNTERS_FROM_17
            } else {
                COUNTERS_BEFORE_17
            },
            last: None,
            performed: 0,
        })
    }

    fn poll(&mut self) -> Result<Activity, postgres::Error> {
        let mut a = Activity::idle();
        for row in self.client.query(RUNNING, &[])? {
            let (kind, subject, detail, auto): (&str, &str, Option<&str>, bool) =
                (row.get(0), row.get(1), row.get(2), row.get(3));
            let kind = match kind {
                "checkpoint" => EventKind::Checkpoint,
                "vacuum" => EventKind::Vacuum,
                _ => EventKind::Analyze,
            };
            let mut detail = detail.unwrap_or_default().to_string();
            if auto {
                detail = format!("autovacuum: {detail}");
            }
            a.running(kind, subject, detail);
        }
        let row = self.client.query_one(self.counters_sql, &[])?;
        let (checkpoints, buffers, block, vacuums, analyzes): (i64, i64, i64, i64, i64) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        // A checkpoint counted since the last poll wrote something if the
        // buffers grew since the last one that did (a running checkpoint
        // reports its buffers as it writes, PostgreSQL 15 and later).
        self.last = match self.last {
            Some((checkpoints0, buffers0)) if checkpoints > checkpoints0 => {
                if buffers > buffers0 {
                    self.performed += (checkpoints - checkpoints0) as u64;
                }
                Some((checkpoints, buffers))
            }
            Some(last) => Some(last),
            None => Some((checkpoints, buffers)),
        };
        let written = (buffers.max(0) as u64).saturating_mul(block.max(0) as u64);
        a.tally(EventKind::Checkpoint, "", self.performed, Some(written));
        a.tally(EventKind::Vacuum, "", vacuums.max(0) as u64, None);
        a.tally(EventKind::Analyze, "", analyzes.max(0) as u64, None);
        Ok(a)
    }
}

impl PgEngine {
    fn with_control<T>(
        &self,
        f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
    ) -> anyhow::Result<T> {
        self.with_control_for(self.options.wait, "use the store", f)
    }

    /// [`PgEngine::with_control`] whose lock waits end after `limit`.
    fn with_control_for<T>(
        &self,
        limit: Option<Duration>,
        doing: &str,
        f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
    ) -> anyhow::Result<T> {
        let mut client = self
            .control
            .lock()
            .map_err(|_| anyhow::anyhow!("PostgreSQL: a thread panicked holding the session"))?;
        waiting_out_locks(&mut client, &self.options, limit, doing, f)
    }

    /// A blocking session for db_bench's raw key-value operations, its
    /// statements prepared.
    fn raw(&self) -> anyhow::Result<Box<dyn Operations + '_>> {
        let mut session = run_now(self.options.connect_wire::<TcpStream>())?;
        let kv = &self.options.kv_table;
        let sql = [
            format!("SELECT v FROM {kv} WHERE k = $1"),
            format!(
                "INSERT INTO {kv} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
            ),
            format!("DELETE FROM {kv} WHERE k = $1"),
            format!("SELECT k, v FROM {kv} ORDER BY k LIMIT $1"),
            format!("SELECT k, v FROM {kv} WHERE k >= $1 ORDER BY k LIMIT $2"),
            format!("SELECT k, v FROM {kv} WHERE k > $1 ORDER BY k LIMIT $2"),
        ];
        let mut prepared = Vec::with_capacity(sql.len());
        for s in &sql {
            let stmt = run_now(session.prepare(s));
            prepared.push(stmt.map_err(|said| self.options.failed_said(&said))?);
        }
        let [get, put, delete, first, from, after]: [WireStatement; 6] = prepared
            .try_into()
            .map_err(|_| anyhow::anyhow!("internal: six statements expected"))?;
        Ok(Box::new(PgKvWorker {
            session,
            get,
            put,
            delete,
            first,
            from,
            after,
            cursor: KvBatch::default(),
        }))
    }
}

impl Engine for PgEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo::new(&SPEC, self.version.clone(), &self.options.effective)
    }

    /// A thread's client blocks on its connection; a task's awaits an
    /// async one; raw access (db_bench, on threads) is blocking.
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        match (slot.access, slot.runs) {
            (Access::Raw, _) => super::ready(self.raw()),
            (Access::Records, Runs::Thread) => super::ready(
                run_now(Records::<TcpStream>::open(&self.options))
                    .map(|records| Box::new(records) as Box<dyn Operations>),
            ),
            (Access::Records, Runs::Task) => Box::pin(async move {
                let records = Records::<TaskStream>::open(&self.options).await?;
                Ok(Box::new(records) as Box<dyn Operations>)
            }),
        }
    }

    fn stats(&self) -> BTreeMap<String, u64> {
        let mut stats = BTreeMap::new();
        let (t, kv) = (&self.options.table, &self.options.kv_table);
        let _ = self.with_control(|c| {
            let row = c.query_one(
                "SELECT COALESCE(sum(n_live_tup), 0)::bigint, COALESCE(sum(n_dead_tup), 0)::bigint, \
                        COALESCE(sum(autovacuum_count), 0)::bigint \
                 FROM pg_stat_user_tables WHERE relid IN (to_regclass($1::text), to_regclass($2::text))",
                &[t, kv],
            )?;
            for (i, name) in ["live_rows", "dead_rows", "autovacuums"].iter().enumerate() {
                stats.insert(name.to_string(), row.get::<_, i64>(i).max(0) as u64);
            }
            Ok(())
        });
        stats
    }

    /// Waits (up to 10 minutes) while autovacuum works on the store's
    /// tables, then `CHECKPOINT`: every dirty buffer is written to the data
    /// files and fsynced, the work the checkpointer would otherwise do
    /// later. Commits are durable in the WAL already (unless
    /// `synchronous_commit=off`, whose last commits the checkpoint also
    /// makes durable), so `flush` changes nothing.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        let (t, kv) = (&self.options.table, &self.options.kv_table);
        let start = Instant::now();
        loop {
            let busy: i64 = self.with_control(|c| {
                Ok(c.query_one(
                    "SELECT count(*) FROM pg_stat_progress_vacuum WHERE relid IN (to_regclass($1::text), to_regclass($2::text))",
                    &[t, kv],
                )?
                .get(0))
            })?;
            if busy == 0 {
                break;
            }
            if start.elapsed() > SETTLE_LIMIT {
                anyhow::bail!(
                    "PostgreSQL: autovacuum of {t} still running after {} s",
                    SETTLE_LIMIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        self.with_control(|c| c.batch_execute("CHECKPOINT"))
    }

    /// `VACUUM FULL` of both tables: rewrites them without dead rows and
    /// returns the space to the file system.
    fn compact(&self) -> anyhow::Result<()> {
        let (t, kv) = (&self.options.table, &self.options.kv_table);
        self.with_control(|c| {
            c.batch_execute(&format!("VACUUM FULL {t}"))?;
            c.batch_execute(&format!("VACUUM FULL {kv}"))
        })
    }

    /// `pg_total_relation_size` of the store's two tables: heap, TOAST,
    /// indexes and the free-space and visibility maps.
    fn footprint(&self) -> Result<u64, String> {
        let (t, kv) = (&self.options.table, &self.options.kv_table);
        // Half of stalltimeout: the size goes unmeasured, with why, before
        // the wait after the window ends the step.
        let limit = self.options.wait.map(|w| w / 2);
        self.with_control_for(limit, "measure the store's size", |c| {
            Ok(c.query_one(
                "SELECT (COALESCE(pg_total_relation_size(to_regclass($1::text)), 0) + \
                         COALESCE(pg_total_relation_size(to_regclass($2::text)), 0))::bigint",
                &[t, kv],
            )?
            .get::<_, i64>(0))
        })
        .map(|b| b.max(0) as u64)
        .map_err(|e| format!("{e:#}"))
    }

    /// A checkpoint in progress (the checkpointer's wait event while it is
    /// not idle) and the checkpoints that wrote buffers (`pg_stat_bgwriter`,
    /// `pg_stat_checkpointer` from 17: their count and buffers x block
    /// size); vacuums and analyzes in progress in this database
    /// (`pg_stat_progress_vacuum`, `pg_stat_progress_analyze`, by table)
    /// and done (`pg_stat_user_tables`' counts), over the sampler's session.
    fn activity(&self) -> Result<Activity, String> {
        let mut sampler = self.sampler.lock().unwrap_or_else(|e| e.into_inner());
        let s = match sampler.as_mut() {
            Some(s) => s,
            None => sampler.insert(PgSampler::open(&self.options).map_err(|e| format!("{e:#}"))?),
        };
        s.poll().map_err(|e| {
            let why = self.options.failed(&e).to_string();
            *sampler = None;
            why
        })
    }

    /// Commits are the server's to keep; the sessions close when the
    /// workers and the engine are dropped.
    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }

    /// The postmaster (its backends are its children, which the accounting
    /// finds as descendants).
    fn server_pids(&self) -> Vec<u32> {
        endpoint::loopback_listeners(&self.options.host, self.options.port)
    }
}

/// Whether a refused login: a wrong password or a user not allowed in.
fn is_login_refusal(code: &SqlState) -> bool {
    [
        SqlState::INVALID_PASSWORD,
        SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
    ]
    .contains(code)
}

/// After a handshake failed without the server's words: whether the peer
/// answers PostgreSQL's SSL request with 'S' or 'N' as every server does.
/// A refused or silent peer counts as PostgreSQL (unreachable, not wrong).
fn speaks_postgres(addr: &str, err: &postgres::Error) -> bool {
    use std::io::{Read, Write};
    let refused = std::error::Error::source(err)
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused);
    if refused {
        return true;
    }
    let probe = || -> std::io::Result<Option<u8>> {
        let sock = std::net::ToSocketAddrs::to_socket_addrs(addr)?.next();
        let Some(sock) = sock else { return Ok(None) };
        let mut stream = std::net::TcpStream::connect_timeout(&sock, PROBE_LIMIT)?;
        stream.set_read_timeout(Some(PROBE_LIMIT))?;
        // SSLRequest: length 8, code 80877103.
        stream.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])?;
        let mut first = [0u8];
        Ok((stream.read(&mut first)? == 1).then_some(first[0]))
    };
    !matches!(probe(), Ok(Some(b)) if b != b'S' && b != b'N')
}

/// What went wrong: the server's message, or the client's with its cause
/// (`error connecting to server: Connection refused`).
fn words(err: &postgres::Error) -> String {
    if let Some(db) = err.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let text = err.to_string();
    match std::error::Error::source(err) {
        Some(cause) if !text.contains(&cause.to_string()) => format!("{text}: {cause}"),
        _ => text,
    }
}

fn text<'b>(what: &str, bytes: &'b [u8]) -> Result<&'b str, OpError> {
    std::str::from_utf8(bytes).map_err(|_| {
        OpError::failed(format!(
            "PostgreSQL: the {what} is not UTF-8 text, which the YCSB schema's text columns hold"
        ))
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Insert,
    Update,
}

/// The types whose binary form is their text (what `&str` reads in the
/// `postgres` crate).
const TEXT_TYPES: [Type; 5] = [
    Type::TEXT,
    Type::VARCHAR,
    Type::BPCHAR,
    Type::NAME,
    Type::UNKNOWN,
];

/// Adds a row's non-NULL columns (but the key) to `out`, only `wanted` if given.
fn push_row(row: &WireRow, wanted: Option<&[&str]>, out: &mut Record) -> OpResult {
    row.for_each(|column, value| {
        let name = column.name.as_str();
        let Some(value) =
            value.filter(|_| name != KEY_COLUMN && wanted.is_none_or(|w| w.contains(&name)))
        else {
            return Ok(());
        };
        if !TEXT_TYPES.iter().any(|t| t.oid() == column.type_oid) {
            let ty = Type::from_oid(column.type_oid).map_or_else(
                || format!("OID {}", column.type_oid),
                |t| t.name().to_owned(),
            );
            return Err(OpError::failed(format!(
                "PostgreSQL: column {name} is of type {ty}, not text as the YCSB schema's"
            )));
        }
        out.push(name.as_bytes(), text("value", value)?.as_bytes());
        Ok(())
    })
    .map_err(said)?
}

/// A connection and the statements prepared on it.
struct Session<T: Transport> {
    client: WireSession<T>,
    read_all: WireStatement,
    scan: WireStatement,
    delete: WireStatement,
    /// Statements that name fields, by kind and field names.
    by_fields: HashMap<String, WireStatement>,
}

impl<T: Transport> Session<T> {
    async fn open(options: &PgOptions) -> anyhow::Result<Self> {
        let mut client = options.connect_wire::<T>().await?;
        let t = &options.table;
        // Preparing locks the table: a lock another session holds is waited
        // out, said and bounded (`lock_timeout` while preparing only: in the
        // window, clients wait for each other's row locks as they would).
        let failed = |said: Said| options.failed_said(&said);
        client
            .simple(&format!("SET lock_timeout = '{LOCK_POLL}'"))
            .await
            .map_err(failed)?;
        let mut prepared = Vec::with_capacity(3);
        for sql in [
            format!("SELECT * FROM {t} WHERE {KEY_COLUMN} = $1"),
            format!("SELECT * FROM {t} WHERE {KEY_COLUMN} >= $1 ORDER BY {KEY_COLUMN} LIMIT $2"),
            format!("DELETE FROM {t} WHERE {KEY_COLUMN} = $1"),
        ] {
            prepared.push(prepare_waiting(&mut client, options, &sql).await?);
        }
        client.simple("RESET lock_timeout").await.map_err(failed)?;
        let [read_all, scan, delete] = <[WireStatement; 3]>::try_from(prepared)
            .unwrap_or_else(|_| unreachable!("three statements"));
        Ok(Self {
            client,
            read_all,
            scan,
            delete,
            by_fields: HashMap::new(),
        })
    }
}

/// `sql` prepared on a client's session whose `lock_timeout` is
/// [`LOCK_POLL`], waiting out a lock another session holds on the tables
/// (said once, with who holds it) for at most `stalltimeout`.
async fn prepare_waiting<T: Transport>(
    client: &mut WireSession<T>,
    options: &PgOptions,
    sql: &str,
) -> anyhow::Result<WireStatement> {
    let started = Instant::now();
    loop {
        match client.prepare(sql).await {
            Err(said) if is_lock_timeout(&said) => {
                let (t, kv) = (&options.table, &options.kv_table);
                let mut held = String::new();
                if let Ok(holders) = client.prepare(LOCK_HOLDERS).await {
                    if let Ok(Some(row)) = client.query_opt(&holders, &[t, kv]).await {
                        let _ = row.for_each(|_, value| {
                            held = String::from_utf8_lossy(value.unwrap_or_default()).into_owned();
                            Err(())
                        });
                    }
                }
                options.lock_waited(
                    started,
                    options.wait,
                    &held,
                    "prepare a client's statements",
                )?;
            }
            other => return other.map_err(|said| options.failed_said(&said)),
        }
    }
}

/// One client's session, opened again after the server went away: while
/// PostgreSQL is down or restarting every operation fails (and is
/// counted), and the first one after it is back reconnects; attempts are
/// spaced by [`Backoff`].
struct Records<'e, T: Transport> {
    session: Option<Session<T>>,
    options: &'e PgOptions,
    cache_key: String,
    backoff: Backoff,
}

impl<'e, T: Transport> Records<'e, T> {
    async fn open(options: &'e PgOptions) -> anyhow::Result<Self> {
        Ok(Self {
            session: Some(Session::open(options).await?),
            options,
            cache_key: String::new(),
            backoff: Backoff::default(),
        })
    }

    /// The open session, opened first if it was dropped.
    async fn session(&mut self) -> Result<&mut Session<T>, OpError> {
        if self.session.is_none() {
            T::pause(self.backoff.next_pause()).await;
            let session = Session::open(self.options)
                .await
                .map_err(|e| OpError::failed(format!("PostgreSQL: reconnecting: {e:#}")))?;
            self.session = Some(session);
        }
        Ok(self.session.as_mut().expect("opened above"))
    }

    /// `result` of a call on the session, which is dropped if the
    /// connection closed under it.
    fn checked<R>(&mut self, result: Result<R, Said>) -> Result<R, OpError> {
        if result.is_ok() {
            self.backoff.reset();
        } else if self.session.as_ref().is_some_and(|s| s.client.is_closed()) {
            self.session = None;
        }
        result.map_err(said)
    }

    /// The SQL of `kind` for these (quoted) columns.
    fn sql(&self, kind: Kind, columns: &[String]) -> String {
        let t = &self.options.table;
        match kind {
            Kind::Read => format!(
                "SELECT {} FROM {t} WHERE {KEY_COLUMN} = $1",
                columns.join(", ")
            ),
            Kind::Insert => {
                let params: Vec<String> = (2..columns.len() + 2).map(|i| format!("${i}")).collect();
                let set: Vec<String> = columns
                    .iter()
                    .map(|c| format!("{c} = excluded.{c}"))
                    .collect();
                format!(
                    "INSERT INTO {t} ({KEY_COLUMN}, {}) VALUES ($1, {}) ON CONFLICT ({KEY_COLUMN}) DO UPDATE SET {}",
                    columns.join(", "),
                    params.join(", "),
                    set.join(", ")
                )
            }
            Kind::Update => {
                let set: Vec<String> = columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("{c} = ${}", i + 2))
                    .collect();
                format!("UPDATE {t} SET {} WHERE {KEY_COLUMN} = $1", set.join(", "))
            }
        }
    }

    /// The prepared statement of `kind` for these field names.
    async fn statement(&mut self, kind: Kind, names: &[&str]) -> Result<WireStatement, OpError> {
        self.cache_key.clear();
        self.cache_key.push(match kind {
            Kind::Read => 'r',
            Kind::Insert => 'i',
            Kind::Update => 'u',
        });
        for n in names {
            self.cache_key.push('\0');
            self.cache_key.push_str(n);
        }
        self.session().await?;
        let cached = self
            .session
            .as_ref()
            .and_then(|s| s.by_fields.get(&self.cache_key));
        if let Some(stmt) = cached {
            return Ok(stmt.clone());
        }
        let columns: Vec<String> = names.iter().map(|n| quoted(n)).collect();
        let sql = self.sql(kind, &columns);
        let prepared = self.session().await?.client.prepare(&sql).await;
        let stmt = self.checked(prepared)?;
        if let Some(session) = &mut self.session {
            session
                .by_fields
                .insert(self.cache_key.clone(), stmt.clone());
        }
        Ok(stmt)
    }

    /// Runs an insert or update of `values` for `key`; the rows it changed.
    async fn write(&mut self, kind: Kind, key: &[u8], values: &Record) -> Result<u64, OpError> {
        let key = text("key", key)?;
        let mut names = Vec::with_capacity(values.len());
        let mut texts: Vec<&str> = Vec::with_capacity(values.len());
        for (name, value) in values.fields() {
            names.push(text("field name", name)?);
            texts.push(text("value", value)?);
        }
        if names.is_empty() {
            return Err(OpError::Failed("PostgreSQL: a write without fields".into()));
        }
        let stmt = self.statement(kind, &names).await?;
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(values.len() + 1);
        params.push(&key);
        for t in &texts {
            params.push(t);
        }
        let done = self.session().await?.client.execute(&stmt, &params).await;
        self.checked(done)
    }
}

super::async_records!(impl[T: Transport] Records<'_, T>, T::WAITS);

impl<T: Transport> Records<'_, T> {
    async fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> OpResult {
        let key = text("key", key)?;
        let stmt = match fields {
            None | Some([]) => self.session().await?.read_all.clone(),
            Some(f) => self.statement(Kind::Read, f).await?,
        };
        let found = self.session().await?.client.query_opt(&stmt, &[&key]).await;
        match self.checked(found)? {
            None => Err(OpError::NotFound),
            Some(row) => push_row(&row, fields.filter(|f| !f.is_empty()), out),
        }
    }

    async fn scan(&mut self, asked: ScanRequest<'_>, out: &mut ScanResults) -> OpResult {
        let start = text("key", asked.start_key)?;
        let limit = i64::try_from(asked.count).unwrap_or(i64::MAX);
        let session = self.session().await?;
        let found = session.client.query(&session.scan, &[&start, &limit]).await;
        for row in &self.checked(found)? {
            push_row(row, asked.fields, out.next_slot())?;
        }
        Ok(())
    }

    async fn update<'a>(&'a mut self, key: &'a [u8], values: &'a Record) -> OpResult {
        match self.write(Kind::Update, key, values).await? {
            0 => Err(OpError::NotFound),
            _ => Ok(()),
        }
    }

    async fn insert<'a>(&'a mut self, key: &'a [u8], values: &'a Record) -> OpResult {
        self.write(Kind::Insert, key, values).await.map(|_| ())
    }

    /// Deleting a missing key is Ok (RocksDB's behaviour).
    async fn delete<'a>(&'a mut self, key: &'a [u8]) -> OpResult {
        let key = text("key", key)?;
        let session = self.session().await?;
        let done = session.client.execute(&session.delete, &[&key]).await;
        self.checked(done).map(|_| ())
    }
}

/// Raw keys and values for `kvperf bench`, in the `{table}_kv` table.
pub struct PgKvWorker {
    session: WireSession<TcpStream>,
    get: WireStatement,
    put: WireStatement,
    delete: WireStatement,
    first: WireStatement,
    from: WireStatement,
    after: WireStatement,
    cursor: KvBatch,
}

fn said(said: Said) -> OpError {
    OpError::failed(format!("PostgreSQL: {said}"))
}

/// A `{table}_kv` row's columns as bytes (BYTEA's binary form): the key
/// and value of `k, v`, or the value of `v`.
fn columns<'r>(row: &'r WireRow, out: &mut [&'r [u8]]) -> Result<(), OpError> {
    let mut i = 0;
    row.for_each(|_, value| {
        if let Some(slot) = out.get_mut(i) {
            *slot = value.unwrap_or_default();
        }
        i += 1;
        Ok::<(), OpError>(())
    })
    .map_err(said)?
}

impl PgKvWorker {
    fn fill(&mut self, from: Start) -> Result<bool, OpError> {
        let asked = self.cursor.start_fill();
        let limit = asked as i64;
        let mut rows = Vec::with_capacity(asked);
        let each = |row| rows.push(row);
        let done = match from {
            Start::First => run_now(self.session.run(&self.first, &[&limit], each)),
            Start::AtOrAfter(k) => run_now(self.session.run(&self.from, &[&k, &limit], each)),
            Start::After(k) => run_now(self.session.run(&self.after, &[&k, &limit], each)),
        };
        done.map_err(said)?;
        for row in &rows {
            let mut kv: [&[u8]; 2] = [&[], &[]];
            columns(row, &mut kv)?;
            self.cursor.push(kv[0], kv[1]);
        }
        Ok(self.cursor.end_fill(asked))
    }
}

super::blocking_raw!(PgKvWorker, refilled);

impl PgKvWorker {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        let found = run_now(self.session.query_opt(&self.get, &[&key]));
        let row = found.map_err(said)?.ok_or(OpError::NotFound)?;
        let mut value: [&[u8]; 1] = [&[]];
        columns(&row, &mut value)?;
        Ok(value[0].len())
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        let done = run_now(self.session.execute(&self.put, &[&key, &value]));
        done.map_err(said).map(|_| ())
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        let done = run_now(self.session.execute(&self.delete, &[&key]));
        done.map_err(said).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fake_listener;
    use crate::testing::refusal;
    use crate::testing::secret_checks::{assert_secret_hidden, props, secret_on_port_1, SECRET};
    use std::io::{Read, Write};

    #[test]
    fn the_password_is_never_shown() {
        let o = PgOptions::from_properties(&secret_on_port_1("postgres")).unwrap();
        let err = o.connect().err().expect("no server on port 1");
        assert_secret_hidden("postgres", &o, o.password.as_deref(), &o.effective, err);
    }

    fn at(port: u16, password: &str) -> PgOptions {
        let port = port.to_string();
        PgOptions::from_properties(&props(&[
            ("postgres.port", &port),
            ("postgres.password", password),
        ]))
        .unwrap()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// One length-prefixed message without a type byte (startup, SSL request).
    fn untyped(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
        let mut len = [0; 4];
        s.read_exact(&mut len)?;
        let mut body = vec![0; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
        s.read_exact(&mut body)?;
        Ok(body)
    }

    /// Just enough of a PostgreSQL server to ask for a cleartext password
    /// and refuse it (SQLSTATE 28P01).
    fn refusing_login(mut s: TcpStream) {
        let mut talk = || -> std::io::Result<()> {
            if untyped(&mut s)? == [0x04, 0xd2, 0x16, 0x2f] {
                s.write_all(b"N")?;
                untyped(&mut s)?;
            }
            s.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3])?;
            let mut tag = [0];
            s.read_exact(&mut tag)?;
            untyped(&mut s)?;
            let fields = b"SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed for user \"postgres\"\0\0";
            s.write_all(b"E")?;
            s.write_all(&(4 + fields.len() as u32).to_be_bytes())?;
            s.write_all(fields)
        };
        let _ = talk();
    }

    /// Each way of connecting, with what it failed with: the engine's own
    /// session (the `postgres` crate), a client thread's and a client
    /// task's (kvperf's wire session), each timed.
    fn every_connect(o: &PgOptions) -> Vec<(&'static str, String, Duration)> {
        let ways: [(&str, &dyn Fn() -> Option<anyhow::Error>); 3] = [
            ("engine", &|| o.connect().err()),
            ("thread", &|| run_now(o.connect_wire::<TcpStream>()).err()),
            ("task", &|| {
                runtime().block_on(o.connect_wire::<TaskStream>()).err()
            }),
        ];
        ways.into_iter()
            .map(|(way, f)| {
                let started = Instant::now();
                let err = f().map_or("connected".into(), |e| format!("{e:#}"));
                (way, err, started.elapsed())
            })
            .collect()
    }

    #[test]
    fn a_server_that_wants_a_password_or_refuses_it_is_not_called_unreachable() {
        let _alone = fake_listener::sockets_alone();
        let (port, _) = fake_listener::serving(refusing_login);
        let wants = format!("PostgreSQL at 127.0.0.1:{port} wants a password for user 'postgres'");
        for (way, err, _) in every_connect(&at(port, "")) {
            assert!(err.starts_with(&wants), "{way}: {err}");
        }
        let refused = format!("PostgreSQL at 127.0.0.1:{port} refused the login as user 'postgres': FATAL: password authentication failed");
        for (way, err, _) in every_connect(&at(port, SECRET)) {
            assert!(
                err.starts_with(&refused) && !err.contains(SECRET),
                "{way}: {err}"
            );
        }
    }

    /// Just enough of a PostgreSQL server at max_connections: it answers
    /// the startup message with SQLSTATE 53300.
    fn full(mut s: TcpStream) {
        let mut talk = || -> std::io::Result<()> {
            if untyped(&mut s)? == [0x04, 0xd2, 0x16, 0x2f] {
                s.write_all(b"N")?;
                untyped(&mut s)?;
            }
            let fields = b"SFATAL\0VFATAL\0C53300\0Msorry, too many clients already\0\0";
            s.write_all(b"E")?;
            s.write_all(&(4 + fields.len() as u32).to_be_bytes())?;
            s.write_all(fields)
        };
        let _ = talk();
    }

    #[test]
    fn a_full_server_is_called_full() {
        let _alone = fake_listener::sockets_alone();
        let (port, _) = fake_listener::serving(full);
        let said = format!("PostgreSQL at 127.0.0.1:{port} is full: it refuses new connections (FATAL: sorry, too many clients already)");
        for (way, err, _) in every_connect(&at(port, "")) {
            assert!(
                err.starts_with(&said) && !err.contains('\n'),
                "{way}: {err}"
            );
        }
    }

    #[test]
    fn a_listener_that_never_answers_fails_connecting_at_stalltimeout() {
        let _alone = fake_listener::sockets_alone();
        let (_listener, port) = fake_listener::silent();
        let said = format!("PostgreSQL at 127.0.0.1:{port} did not answer within 1 s while kvperf waited for a connection's start-up: it stopped answering, or what listens there is not PostgreSQL (stalltimeout=1)");
        let port = port.to_string();
        let o =
            PgOptions::from_properties(&props(&[("postgres.port", &port), ("stalltimeout", "1")]))
                .unwrap();
        for (way, err, took) in every_connect(&o) {
            assert!(
                took < Duration::from_secs(4) && err == said,
                "{way}: {err} after {took:?}"
            );
        }
    }

    #[test]
    fn an_http_server_is_named_as_not_speaking_postgresql() {
        let _alone = fake_listener::sockets_alone();
        let (port, _) = fake_listener::serving(fake_listener::http);
        let said = format!("the server at 127.0.0.1:{port} does not speak the PostgreSQL protocol");
        for (way, err, _) in every_connect(&at(port, "")) {
            assert!(
                err.starts_with(&said) && !err.contains('\n'),
                "{way}: {err}"
            );
        }
    }

    /// Operations against a server that closes every connection, for a
    /// second and a half: each fails, and reconnect attempts are spaced.
    #[test]
    fn reconnects_to_a_dead_server_back_off() {
        let _alone = fake_listener::sockets_alone();
        let (port, accepted) = fake_listener::serving(fake_listener::closing);
        let o = at(port, "");
        let mut records = Records::<TcpStream> {
            session: None,
            options: &o,
            cache_key: String::new(),
            backoff: Backoff::default(),
        };
        let (mut failed_ops, started) = (0, Instant::now());
        while started.elapsed() < Duration::from_millis(1500) {
            assert!(run_now(records.delete(b"user1")).is_err());
            failed_ops += 1;
        }
        // One reconnect per operation: at once, then 10, 20, ... 640 ms,
        // so 8 in 1.5 s; each failed one is probed once more (not PostgreSQL?).
        let accepted = accepted.load(std::sync::atomic::Ordering::Relaxed);
        assert!((5..=10).contains(&failed_ops), "{failed_ops} operations");
        assert!(
            accepted <= 2 * failed_ops,
            "{accepted} connections in {failed_ops} operations"
        );
    }

    #[test]
    fn tables_are_plain_names_and_fields_follow_ycsb() {
        let injected = props(&[("postgres.table", "t; DROP TABLE x")]);
        let err = refusal(PgOptions::from_properties(&injected));
        assert!(err.contains("postgres.table"), "{err}");
        let o =
            PgOptions::from_properties(&props(&[("fieldcount", "3"), ("fieldnameprefix", "Col")]))
                .unwrap();
        let [table, kv] = o.create_sql(false);
        assert_eq!(
            table,
            "CREATE TABLE usertable (ycsb_key VARCHAR(255) COLLATE \"C\" PRIMARY KEY, \"Col0\" TEXT, \"Col1\" TEXT, \"Col2\" TEXT)"
        );
        assert!(
            kv.starts_with("CREATE TABLE usertable_kv (k BYTEA PRIMARY KEY"),
            "{kv}"
        );
        let offf = props(&[("postgres.synchronous_commit", "offf")]);
        let err = refusal(PgOptions::from_properties(&offf));
        assert!(err.contains("did you mean 'off'"), "{err}");
    }

    #[test]
    fn sync_maps_to_synchronous_commit() {
        let flags = DbBenchFlags {
            sync: Some(false),
            cache_size: Some(1),
            ..Default::default()
        };
        let mut p = Properties::new();
        assert_eq!(map_db_bench_flags(&flags, &mut p), ["cache_size"]);
        assert_eq!(p.get("postgres.synchronous_commit"), Some("off"));
    }
}
