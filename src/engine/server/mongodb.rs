//! MongoDB (or any server speaking its wire protocol, such as FerretDB)
//! through the `mongodb` crate's async API.
//!
//! The document layout is YCSB 0.17.0's `mongodb` binding: one document
//! per record in collection `usertable` of database `ycsb`, `_id` the key
//! as a string, every field a BSON binary (subtype 0; YCSB stores the
//! `byte[]`). The engine opens ONE `Client` at open, as YCSB's binding
//! does, and every client of the run shares it: one connection pool (a
//! connection per client with an operation in flight, made as needed) and
//! one server monitor. Writes use write concern `w: 1` and reads the
//! primary by default, as YCSB's default URL.
//!
//! The operations are written once, as async code ([`MongoClient`]); the
//! workers differ only in how they wait ([`Capabilities::async_ops`]):
//! - **Clients as tasks** (`clients=tasks`): the runner lends the engine
//!   its runtime at open, the driver runs on it, and each client task
//!   awaits its operations (`TaskWorker`).
//! - **Clients on threads** (`clients=threads`): the engine owns a tokio
//!   runtime (`runtime_threads` workers) and each operation is one
//!   `block_on` on the runner's thread ([`MongoWorker`]); so does the raw
//!   key-value worker of `kvperf bench`.
//!
//! Operations as YCSB's binding: `read` is `find_one` by `_id` (with a
//! projection for given fields); `insert` is `insert_one`, so inserting an
//! existing key fails (duplicate key); `update` is `update_one` with
//! `$set`, NotFound when nothing matched; `delete` is `delete_one`,
//! NotFound when nothing was deleted; `scan` is `find({_id: {$gte: key}})`
//! sorted by `_id`, in key order. Differences: a scan that finds nothing is
//! Ok with no records (YCSB's binding reports ERROR), and the collection is
//! the engine's (`collection`) whatever YCSB's `table` says.
//!
//! Raw key-values (`kvperf bench`) live in collection `<collection>_kv` as
//! `{_id: binary key, v: binary value}`; the cursor reads them sorted by
//! `_id` in batches. MongoDB orders binaries by length first, then bytes:
//! key order for db_bench's keys, which all have one length.
//!
//! The footprint is `collStats`' `totalSize` (data plus indexes) of both
//! collections, as the server reports it. Compaction is the `compact`
//! command (MongoDB; FerretDB v1 answers it too, with SQLite's VACUUM).
//! Nothing runs in the background that a client could wait for.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{
    doc, Binary, Bson, Document, RawBinaryRef, RawBsonRef, RawDocument, RawDocumentBuf,
};
use mongodb::options::{
    Acknowledgment, ClientOptions, Credential, ReadPreference, SelectionCriteria, ServerAddress,
};
use mongodb::{Client, Collection, Database};

use super::driver_runtime::{self, DriverRuntime};
use super::endpoint::{self, is_this_machine, server_option, tcp_port};
use super::options::OptionValues;
use super::{
    ready, Access, Capabilities, ClientSlot, Engine, EngineInfo, EngineOption, EngineSpec,
    EventSupport, KvSupport, OpError, OpResult, OpenMode, OpenOptions, Operations, Record, Runs,
    ScanRequest, ScanResults, SetupFuture, StoreKind, SERVER,
};
use crate::error::InputError;
use crate::properties::{redacted, scrubbed, url_credentials, Properties};

pub static SPEC: EngineSpec = EngineSpec {
    name: "mongodb",
    about: "MongoDB wire-protocol server via the mongodb crate (async API, one shared client); `kvperf server start ferretdb` runs FerretDB",
    feature: "mongodb",
    store: StoreKind::Server {
        server: "ferretdb",
        namespace: "mongodb.database",
    },
    capabilities: Capabilities {
        // The `compact` command.
        compact: true,
        kv: KvSupport::Ordered,
        events: EventSupport::Unavailable("not read from MongoDB or FerretDB yet (FerretDB's serverStatus has no storage engine section)"),
        // The rest is SERVER's: what FerretDB's backend rewrites on an
        // update is its own business; the driver is async, clients as
        // tasks by default (bench/RESULTS.md, issue 22).
        ..SERVER
    },
    options: &[
        EngineOption { name: "url", default: "", help: "mongodb:// connection string; when given it wins over host and port (its password is never recorded)" },
        server_option!(host, "server host"),
        server_option!(port, "27017", "server port"),
        server_option!(adopt),
        EngineOption { name: "database", default: "ycsb", help: "database (default: the url's database if it names one, else ycsb)" },
        EngineOption { name: "collection", default: "usertable", help: "collection of the records; raw key-values go to <collection>_kv" },
        EngineOption { name: "write_concern", default: "1", help: "w: a number of nodes (1, YCSB's default) or majority; the url's w= wins" },
        EngineOption { name: "read_preference", default: "primary", help: "primary, primary_preferred, secondary, secondary_preferred or nearest; the url's readPreference= wins" },
        server_option!(username, "MONGODB", "user (SCRAM)"),
        server_option!(password, "MONGODB"),
        server_option!(connect_timeout_s, "seconds to wait for the server at open"),
        EngineOption { name: "max_pool_size", default: "auto", help: "connections of the one shared client at most; auto: as many as the run's clients have operations in flight (made as needed); the url's maxPoolSize= wins" },
        server_option!(runtime_threads, " and kvperf bench"),
    ],
    open,
    // Every db_bench engine flag configures an embedded store.
    db_bench: |flags, _| flags.given(),
};

const MONGODB_CRATE_VERSION: &str = match option_env!("KVPERF_MONGODB_VERSION") {
    Some(v) => v,
    None => "3",
};

/// Largest batch the db_bench cursor reads at once.
const LARGEST_FILL: usize = 1024;

struct Settings {
    options: ClientOptions,
    /// Where the server is, for messages (no credentials).
    address: String,
    database: String,
    collection: String,
    /// `mongodb.adopt`: write into collections kvperf did not mark.
    adopt: bool,
    /// Secrets to scrub from any message.
    secrets: Vec<String>,
    /// Workers of the engine's own runtime (clients on threads, bench).
    runtime_threads: usize,
    /// How long the probe waits for a reply (`stalltimeout`, as Redis's
    /// and PostgreSQL's first connections).
    handshake: Duration,
    effective: BTreeMap<String, String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // ClientOptions' own Debug redacts the credential; still, show only what is needed.
        f.debug_struct("Settings")
            .field("address", &self.address)
            .field("database", &self.database)
            .field("collection", &self.collection)
            .field("effective", &self.effective)
            .finish()
    }
}

/// A driver error in a few words: a server error's code name, code and
/// message (without the raw reply the driver's own text appends).
fn describe(e: &mongodb::error::Error) -> String {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Command(c) => format!("{} ({}): {}", c.code_name, c.code, c.message),
        ErrorKind::Write(WriteFailure::WriteError(w)) => format!(
            "{} ({}): {}",
            w.code_name.as_deref().unwrap_or("write error"),
            w.code,
            w.message
        ),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => {
            format!("write concern {} ({}): {}", w.code_name, w.code, w.message)
        }
        // Its message alone, on one line: the error's text went on with the
        // debug dump of its source (a refused login was one 700-byte line).
        ErrorKind::Authentication { message, .. } => {
            message.split_whitespace().collect::<Vec<_>>().join(" ")
        }
        _ => e.to_string(),
    }
}

/// `text` with every secret replaced.
fn scrub(text: &str, secrets: &[String]) -> String {
    scrubbed(text, secrets.iter().map(String::as_str))
}

/// The password inside `mongodb://user:PASSWORD@host`, if any.
fn url_password(url: &str) -> Option<String> {
    url_credentials(url).map(|c| c.password.to_string())
}

fn hosts_text(hosts: &[ServerAddress]) -> String {
    hosts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A connection string's options. Parsing is async in the driver (a
/// `mongodb+srv://` url is resolved), so it runs on a runtime of its own:
/// a `mongodb://` url never waits.
fn parse_url(url: &str) -> Result<ClientOptions, String> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("cannot start a runtime to parse it: {e}"))?
        .block_on(async { ClientOptions::parse(url).await })
        .map_err(|e| e.to_string())
}

/// The driver's options from `url`, or from `host` and `port` without one.
fn connection_options(
    v: &OptionValues,
    url: &str,
    secrets: &[String],
) -> Result<ClientOptions, InputError> {
    let url_given = !url.is_empty();
    Ok(if url_given {
        if !url.starts_with("mongodb://") {
            return Err(InputError::property(
                "mongodb.url",
                format!("'{}' does not start with mongodb://", redacted("url", url)),
            ));
        }
        parse_url(url).map_err(|e| {
            InputError::property(
                "mongodb.url",
                format!(
                    "'{}' is not a connection string: {}",
                    redacted("url", url),
                    scrub(&e, secrets)
                ),
            )
        })?
    } else {
        let port = tcp_port("mongodb.port", v.u64("port")?)?;
        let host = v.text("host");
        if host.is_empty() {
            return Err(InputError::property("mongodb.host", "is empty"));
        }
        let mut o = ClientOptions::default();
        o.hosts = vec![ServerAddress::Tcp {
            host,
            port: Some(port),
        }];
        o
    })
}

/// The connection pool's size, unless the url sets one.
fn set_pool_size(v: &OptionValues, options: &mut ClientOptions) -> Result<(), InputError> {
    // One client serves every runner client: the driver's default of
    // 10 connections would queue more clients than that.
    let pool = v.text("max_pool_size");
    if options.max_pool_size.is_none() {
        options.max_pool_size = Some(match pool.as_str() {
            // Connections are made as operations need them, so the
            // pool never holds more than the clients keep in flight.
            "auto" => u32::MAX,
            n => n.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                InputError::property(
                    "mongodb.max_pool_size",
                    format!("'{n}' is not auto or a number of connections from 1"),
                )
            })?,
        });
    }
    Ok(())
}

/// Write concern `w`, unless the url sets one.
fn set_write_concern(w: &str, options: &mut ClientOptions) -> Result<(), InputError> {
    if options.write_concern.as_ref().is_none_or(|c| c.w.is_none()) {
        let ack = match w {
            "majority" => Acknowledgment::Majority,
            n => match n.parse::<u32>() {
                Ok(0) => {
                    return Err(InputError::property(
                        "mongodb.write_concern",
                        "0 (unacknowledged writes) is not supported by the Rust driver; use 1 or majority",
                    ))
                }
                Ok(n) => Acknowledgment::Nodes(n),
                Err(_) => {
                    return Err(InputError::property(
                        "mongodb.write_concern",
                        format!("'{n}' is not a number of nodes or majority"),
                    ))
                }
            },
        };
        let mut concern = options.write_concern.take().unwrap_or_default();
        concern.w = Some(ack);
        options.write_concern = Some(concern);
    }
    Ok(())
}

/// The read preference, unless the url sets one.
fn set_read_preference(v: &OptionValues, options: &mut ClientOptions) -> Result<(), InputError> {
    let preference = v.choice(
        "read_preference",
        &[
            "primary",
            "primary_preferred",
            "secondary",
            "secondary_preferred",
            "nearest",
        ],
    )?;
    if options.selection_criteria.is_none() {
        let rp = match preference.as_str() {
            "primary_preferred" => ReadPreference::PrimaryPreferred { options: None },
            "secondary" => ReadPreference::Secondary { options: None },
            "secondary_preferred" => ReadPreference::SecondaryPreferred { options: None },
            "nearest" => ReadPreference::Nearest { options: None },
            _ => ReadPreference::Primary,
        };
        options.selection_criteria = Some(SelectionCriteria::ReadPreference(rp));
    }
    Ok(())
}

/// The options in effect as the result records them: the url's choices
/// where it made them, the password never.
fn effective(
    v: &OptionValues,
    options: &ClientOptions,
    tasks: bool,
    (database, username): (&str, &Option<String>),
    (password, w): (&Option<String>, String),
) -> BTreeMap<String, String> {
    let mut effective = v.effective();
    effective.insert("database".into(), database.to_string());
    match options.max_pool_size {
        Some(u32::MAX) => {}
        Some(n) => {
            effective.insert("max_pool_size".into(), n.to_string());
        }
        None => {}
    }
    if tasks {
        // Not used: the runner's runtime (its size is in the result).
        effective.remove("runtime_threads");
    }
    if let Some(user) = username {
        effective.insert("username".into(), user.clone());
    }
    if password.is_some() {
        effective.insert("password".into(), "(redacted)".into());
    }
    let wc = options.write_concern.as_ref().and_then(|c| c.w.clone());
    effective.insert(
        "write_concern".into(),
        match wc {
            Some(Acknowledgment::Majority) => "majority".into(),
            Some(Acknowledgment::Nodes(n)) => n.to_string(),
            Some(Acknowledgment::Custom(s)) => s,
            _ => w,
        },
    );
    if let Some(SelectionCriteria::ReadPreference(rp)) = &options.selection_criteria {
        let mode = match rp {
            ReadPreference::Primary => "primary",
            ReadPreference::PrimaryPreferred { .. } => "primary_preferred",
            ReadPreference::Secondary { .. } => "secondary",
            ReadPreference::SecondaryPreferred { .. } => "secondary_preferred",
            ReadPreference::Nearest { .. } => "nearest",
            _ => "other",
        };
        effective.insert("read_preference".into(), mode.into());
    }
    effective
}

impl Settings {
    /// The options; `tasks`: the clients are tasks on the runner's runtime.
    fn from_properties(props: &Properties, tasks: bool) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let url = v.text("url");
        let mut secrets: Vec<String> = url_password(&url).into_iter().collect();
        let connect_timeout = endpoint::connect_timeout(&v)?;
        let mut options = connection_options(&v, &url, &secrets)?;
        let address = hosts_text(&options.hosts);
        // Without a timeout of its own the driver tries for 30 s.
        if options.server_selection_timeout.is_none() {
            options.server_selection_timeout = Some(connect_timeout);
        }
        if options.connect_timeout.is_none() {
            options.connect_timeout = Some(connect_timeout);
        }
        options.app_name.get_or_insert_with(|| "kvperf".into());
        set_pool_size(&v, &mut options)?;
        let runtime_threads = driver_runtime::runtime_threads(&v, tasks)?;

        let w = v.text("write_concern");
        set_write_concern(&w, &mut options)?;
        set_read_preference(&v, &mut options)?;

        let (username, password) = endpoint::login(&v);
        if let Some(p) = &password {
            secrets.push(p.clone());
        }
        match (&username, options.credential.is_some()) {
            (Some(user), false) => {
                options.credential = Some(
                    Credential::builder()
                        .username(user.clone())
                        .password(password.clone())
                        .build(),
                );
            }
            (None, false) if password.is_some() => {
                return Err(endpoint::password_without_username(&v))
            }
            _ => {}
        }

        let database = match props.get("mongodb.database") {
            Some(d) => d.to_string(),
            None => options
                .default_database
                .clone()
                .filter(|d| !d.is_empty() && d != "admin")
                .unwrap_or_else(|| v.text("database")),
        };
        let collection = v.text("collection");
        for (key, name) in [
            ("mongodb.database", &database),
            ("mongodb.collection", &collection),
        ] {
            if name.is_empty()
                || name.contains(['\0', '$'])
                || (key == "mongodb.database" && name.contains(['/', '\\', '.', ' ', '"']))
            {
                return Err(InputError::property(
                    key,
                    format!("'{name}' is not a valid name"),
                ));
            }
        }

        let effective = effective(&v, &options, tasks, (&database, &username), (&password, w));
        Ok(Self {
            options,
            address,
            database,
            collection,
            adopt: endpoint::adopts(&v)?,
            secrets,
            runtime_threads,
            handshake: super::reconnect::handshake_limit(props),
            effective,
        })
    }

    /// Why the driver could not reach the server or log in, as bad input
    /// (exit 2): a login refused, or the server unreachable.
    fn unreachable(&self, e: &mongodb::error::Error) -> anyhow::Error {
        use mongodb::error::ErrorKind;
        let said = scrub(&describe(e), &self.secrets);
        let user = self
            .options
            .credential
            .as_ref()
            .and_then(|c| c.username.clone());
        let login = matches!(e.kind.as_ref(), ErrorKind::Authentication { .. })
            || matches!(e.kind.as_ref(), ErrorKind::Command(c) if c.code == 18);
        let message = if login {
            format!(
                "MongoDB at {} refused the login as user '{}': {said}; set -p mongodb.username and mongodb.password (or KVPERF_MONGODB_USERNAME and KVPERF_MONGODB_PASSWORD)",
                self.address,
                user.as_deref().unwrap_or("")
            )
        } else {
            format!(
                "cannot reach MongoDB at {} ({said}); `kvperf server start ferretdb --port PORT` starts one, or set -p mongodb.host and mongodb.port (or mongodb.url)",
                self.address
            )
        };
        InputError::Invalid(message).into()
    }

    /// Before the driver (whose server selection waits its whole timeout
    /// whatever went wrong): each plain TCP host is asked `hello` over
    /// OP_MSG. If none answers as MongoDB does, the first one's fault in
    /// one line, at once: nothing listening, silent, or another protocol.
    fn probe(&self) -> anyhow::Result<()> {
        if self
            .options
            .tls
            .as_ref()
            .is_some_and(|t| matches!(t, mongodb::options::Tls::Enabled(_)))
        {
            return Ok(());
        }
        let limit = self.handshake;
        let mut first = None;
        for host in &self.options.hosts {
            let ServerAddress::Tcp { host, port } = host else {
                return Ok(());
            };
            let port = port.unwrap_or(27017);
            let shown = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            // A server that accepts and never answers waits out
            // stalltimeout, said after 5 s, as Redis's and PostgreSQL's.
            let say = || super::reconnect::say_still_waiting("MongoDB", &shown, limit);
            let host = host.clone();
            let probed =
                super::reconnect::within_saying(limit, say, move || probe(&host, port, limit));
            match probed.unwrap_or(Probe::Silent) {
                Probe::Mongo => return Ok(()),
                fault => {
                    first.get_or_insert((shown, fault));
                }
            }
        }
        let Some((addr, fault)) = first else {
            return Ok(());
        };
        Err(InputError::Invalid(match fault {
            Probe::Mongo => unreachable!(),
            Probe::Unreachable(why) => format!(
                "cannot reach MongoDB at {addr} ({why}); `kvperf server start ferretdb --port PORT` starts one, or set -p mongodb.host and mongodb.port (or mongodb.url)"
            ),
            // A run failure: a stopped server and a silent port look alike.
            Probe::Silent => {
                return Err(super::reconnect::no_answer(
                    "MongoDB",
                    &addr,
                    "its reply to a connection's hello",
                    limit,
                ))
            }
            Probe::Other => format!(
                "the server at {addr} does not speak the MongoDB protocol (set -p mongodb.host and mongodb.port)"
            ),
        })
        .into())
    }

    fn kv_collection(&self) -> String {
        format!("{}_kv", self.collection)
    }
}

/// What a host said to `hello`.
enum Probe {
    /// An OP_MSG reply: a MongoDB server (or one speaking its protocol).
    Mongo,
    /// Nothing listens, or the name does not resolve: why.
    Unreachable(String),
    /// Connected, and no reply within the limit.
    Silent,
    /// Something else answered, or closed the connection.
    Other,
}

/// Sends `{hello: 1, $db: "admin"}` as OP_MSG to `host:port` and reads a
/// reply's header, all within `limit`.
fn probe(host: &str, port: u16, limit: Duration) -> Probe {
    use std::io::{Read, Write};
    use std::net::{TcpStream, ToSocketAddrs};
    const HELLO: &[u8] = b"\x34\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xdd\x07\x00\x00\x00\x00\x00\x00\x00\x1f\x00\x00\x00\x10hello\x00\x01\x00\x00\x00\x02$db\x00\x06\x00\x00\x00admin\x00\x00";
    let deadline = std::time::Instant::now() + limit;
    let addrs = match (host, port).to_socket_addrs() {
        Ok(a) => a.collect::<Vec<_>>(),
        Err(e) => return Probe::Unreachable(e.to_string()),
    };
    let mut why = String::from("no address");
    for addr in addrs {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Probe::Silent;
        }
        let mut stream = match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Probe::Silent,
            Err(e) => {
                why = e.to_string();
                continue;
            }
        };
        let left = deadline
            .saturating_duration_since(std::time::Instant::now())
            .max(Duration::from_millis(1));
        let _ = stream.set_read_timeout(Some(left));
        let _ = stream.set_write_timeout(Some(left));
        if stream.write_all(HELLO).is_err() {
            return Probe::Other;
        }
        let mut header = [0u8; 16];
        return match stream.read_exact(&mut header) {
            Ok(()) if header[12..16] == [0xdd, 0x07, 0, 0] => Probe::Mongo,
            Ok(()) => Probe::Other,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Probe::Silent
            }
            Err(_) => Probe::Other,
        };
    }
    Probe::Unreachable(why)
}

/// A number in a command's answer (servers mix int32, int64 and double).
fn number(doc: &Document, key: &str) -> Option<u64> {
    match doc.get(key)? {
        Bson::Int32(n) => Some((*n).max(0) as u64),
        Bson::Int64(n) => Some((*n).max(0) as u64),
        Bson::Double(n) if n.is_finite() => Some(n.max(0.0) as u64),
        _ => None,
    }
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    let settings = Settings::from_properties(opts.properties, opts.runtime.is_some())?;
    let rt = DriverRuntime::new(
        opts.runtime,
        settings.runtime_threads,
        "kvperf-mongodb",
        "MongoDB",
    )?;
    // Faults found at once, in one line, before the driver waits.
    settings.probe()?;
    let (client, version) = rt.block_on(connect(&settings, opts.mode))?;
    let db = client.database(&settings.database);
    let pids = local_pids(&settings.options.hosts);
    let data_dir = pids.iter().find_map(|&pid| data_dir_of(pid));
    Ok(Box::new(MongoEngine {
        settings,
        db,
        version,
        pids,
        data_dir,
        rt,
    }))
}

/// The run's one client, connected, with the store prepared as `mode`
/// asks; and the server's version. Runs on the driver's runtime (the
/// client's monitor and pool are tasks on it).
async fn connect(settings: &Settings, mode: OpenMode) -> anyhow::Result<(Client, String)> {
    let client =
        Client::with_options(settings.options.clone()).map_err(|e| settings.unreachable(&e))?;
    let admin = client.database("admin");
    admin
        .run_command(doc! {"ping": 1})
        .await
        .map_err(|e| settings.unreachable(&e))?;
    let command_error = |what: &str, e: mongodb::error::Error| {
        anyhow::anyhow!(
            "MongoDB at {}: {what} failed: {}",
            settings.address,
            scrub(&describe(&e), &settings.secrets)
        )
    };
    let build = admin
        .run_command(doc! {"buildInfo": 1})
        .await
        .map_err(|e| command_error("buildInfo", e))?;
    let server = build.get_str("version").unwrap_or("unknown");
    let version = match build.get_str("ferretdbVersion") {
        Ok(ferret) => {
            format!("{server} (FerretDB {ferret}; mongodb crate {MONGODB_CRATE_VERSION})")
        }
        Err(_) => format!("MongoDB {server} (mongodb crate {MONGODB_CRATE_VERSION})"),
    };

    let db = client.database(&settings.database);
    let names = db
        .list_collection_names()
        .await
        .map_err(|e| command_error("listing collections", e))?;
    let kv = settings.kv_collection();
    match mode {
        OpenMode::Existing | OpenMode::Any => {
            if mode == OpenMode::Existing
                && !names.iter().any(|n| *n == settings.collection || *n == kv)
            {
                return Err(InputError::Invalid(format!(
                    "MongoDB at {} has no collection {}.{} (nor {kv}): load it first (kvperf load --fresh), or name its database with -p mongodb.database",
                    settings.address, settings.database, settings.collection
                ))
                .into());
            }
            // Only into collections kvperf made, unless the user opts in.
            for name in [&settings.collection, &kv] {
                if names.contains(name)
                    && !settings.adopt
                    && !marked(&db, name)
                        .await
                        .map_err(|e| command_error("reading kvperf's marks", e))?
                {
                    let store = format!(
                        "collection {}.{name} on MongoDB at {} is there",
                        settings.database, settings.address
                    );
                    return Err(endpoint::not_kvperfs_store(
                        &store,
                        "mongodb",
                        "mongodb.collection",
                    )
                    .into());
                }
            }
            // Collections this store will make are marked as kvperf's.
            for name in [&settings.collection, &kv] {
                if mode == OpenMode::Any && !names.contains(name) {
                    mark(&db, name)
                        .await
                        .map_err(|e| command_error("marking the store", e))?;
                }
            }
        }
        OpenMode::Fresh => {
            // Only collections kvperf made (and marked) are dropped.
            for name in [&settings.collection, &kv] {
                if names.contains(name)
                    && !marked(&db, name)
                        .await
                        .map_err(|e| command_error("reading kvperf's marks", e))?
                {
                    return Err(InputError::Invalid(format!(
                        "collection {}.{name} on MongoDB at {} has no kvperf mark (kvperf did not make it, or made it before it marked its collections), so --fresh does not drop it: set another -p mongodb.collection, or drop it by hand if it may go (db.{name}.drop())",
                        settings.database, settings.address
                    ))
                    .into());
                }
            }
            for name in [&settings.collection, &kv] {
                if names.contains(name) {
                    db.collection::<Document>(name)
                        .drop()
                        .await
                        .map_err(|e| command_error(&format!("dropping {name}"), e))?;
                }
            }
            db.create_collection(&settings.collection)
                .await
                .map_err(|e| command_error(&format!("creating {}", settings.collection), e))?;
            for name in [&settings.collection, &kv] {
                mark(&db, name)
                    .await
                    .map_err(|e| command_error("marking the store", e))?;
            }
        }
    }
    Ok((client, version))
}

/// The collection of kvperf's marks in a database: one document per
/// collection kvperf made, `{_id: NAME, mark: MARK, uuid: UUID}`, the
/// UUID the server gave the collection kvperf made. `--fresh` drops only
/// a collection marked there. The mark lives apart from the collection, so
/// it names the collection by its UUID: a collection a user (or YCSB's own
/// binding, whose names are kvperf's defaults) made after dropping
/// kvperf's has the name but not the UUID, and is not kvperf's (it was
/// dropped by the next `--fresh`, and written into by a plain load).
const MARKS: &str = "kvperf_owned";
const MARK: &str = "kvperf-store 1: made by kvperf, which drops it at load --fresh";

/// The server's UUID of collection `name` (None: no such collection, or a
/// server that gives none).
async fn collection_uuid(db: &Database, name: &str) -> mongodb::error::Result<Option<Binary>> {
    let mut specs = db.list_collections().filter(doc! {"name": name}).await?;
    while specs.advance().await? {
        if let Some(uuid) = specs.deserialize_current()?.info.uuid {
            return Ok(Some(uuid));
        }
    }
    Ok(None)
}

async fn marked(db: &Database, name: &str) -> mongodb::error::Result<bool> {
    let Some(found) = db
        .collection::<Document>(MARKS)
        .find_one(doc! {"_id": name, "mark": MARK})
        .await?
    else {
        return Ok(false);
    };
    // A mark without a UUID is an older kvperf's (it named collections
    // only): honoured, as it was.
    let Some(Bson::Binary(uuid)) = found.get("uuid") else {
        return Ok(true);
    };
    Ok(collection_uuid(db, name).await?.as_ref() == Some(uuid))
}

/// Makes collection `name` if it is not there (its marks name it by its
/// UUID, which only a collection has) and marks it as kvperf's.
async fn mark(db: &Database, name: &str) -> mongodb::error::Result<()> {
    if let Err(e) = db.create_collection(name).await {
        // NamespaceExists: made since the listing (by this store's fresh
        // load just now, or another kvperf at the same moment).
        if !matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == 48) {
            return Err(e);
        }
    }
    let mut entry = doc! {"_id": name, "mark": MARK};
    if let Some(uuid) = collection_uuid(db, name).await? {
        entry.insert("uuid", uuid);
    }
    db.collection::<Document>(MARKS)
        .replace_one(doc! {"_id": name}, entry)
        .upsert(true)
        .await?;
    Ok(())
}

/// The processes listening on the servers' ports, when every server is local.
fn local_pids(hosts: &[ServerAddress]) -> Vec<u32> {
    let mut pids = Vec::new();
    for h in hosts {
        match h {
            ServerAddress::Tcp { host, port } if is_this_machine(host) => {
                pids.extend(crate::host::processes::listeners_on(port.unwrap_or(27017)));
            }
            _ => return Vec::new(),
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Where a local server keeps its files: FerretDB's `--sqlite-url=file:DIR/`
/// (else its `--state-dir`), mongod's `--dbpath`.
fn data_dir_of(pid: u32) -> Option<PathBuf> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let value = |flag: &str| {
        args.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix(&format!("{flag}="))
                .map(str::to_string)
                .or_else(|| (a == flag).then(|| args.get(i + 1).cloned()).flatten())
        })
    };
    let dir = if let Some(url) = value("--sqlite-url") {
        let path = url.strip_prefix("file:").unwrap_or(&url);
        let path = path.split('?').next().unwrap_or(path);
        PathBuf::from(path)
    } else if let Some(dbpath) = value("--dbpath") {
        PathBuf::from(dbpath)
    } else {
        // FerretDB with PostgreSQL keeps its data in PostgreSQL.
        return None;
    };
    let dir = if dir.is_relative() {
        crate::host::processes::cwd_of(pid)?.join(dir)
    } else {
        dir
    };
    dir.is_dir().then_some(dir)
}

pub struct MongoEngine {
    settings: Settings,
    /// The database on the run's one client, which every worker and the
    /// engine's own commands share; dropped before the runtime.
    db: Database,
    version: String,
    pids: Vec<u32>,
    data_dir: Option<PathBuf>,
    rt: DriverRuntime,
}

impl MongoEngine {
    fn failed(&self, what: &str, e: mongodb::error::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "MongoDB at {}: {what} failed: {}",
            self.settings.address,
            scrub(&describe(&e), &self.settings.secrets)
        )
    }

    /// A client's handle on the records, on the shared client.
    fn client(&self) -> MongoClient<'_> {
        MongoClient {
            coll: self.db.collection(&self.settings.collection),
            secrets: &self.settings.secrets,
        }
    }

    fn existing_collections(&self) -> anyhow::Result<Vec<String>> {
        let names = self
            .rt
            .block_on(async { self.db.list_collection_names().await })
            .map_err(|e| self.failed("listing collections", e))?;
        Ok([
            self.settings.collection.clone(),
            self.settings.kv_collection(),
        ]
        .into_iter()
        .filter(|c| names.contains(c))
        .collect())
    }
}

impl Engine for MongoEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo::new(&SPEC, self.version.clone(), &self.settings.effective)
    }

    /// One shared client serves every client: a task awaits its futures
    /// on the runner's runtime, a thread blocks on the engine's own.
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        let client: Box<dyn Operations + '_> = match (slot.access, slot.runs) {
            (Access::Records, Runs::Task) => Box::new(self.client()),
            (Access::Records, Runs::Thread) => Box::new(MongoWorker {
                rt: &self.rt,
                client: self.client(),
            }),
            (Access::Raw, _) => Box::new(MongoKvWorker {
                rt: &self.rt,
                client: MongoKvClient {
                    coll: self.db.collection(&self.settings.kv_collection()),
                    secrets: &self.settings.secrets,
                    cursor: Batch::default(),
                },
            }),
        };
        ready(Ok(client))
    }

    /// Nothing runs in the background that a client can wait for; writes
    /// are acknowledged by the write concern.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        Ok(())
    }

    /// The `compact` command on both collections.
    fn compact(&self) -> anyhow::Result<()> {
        for name in self.existing_collections()? {
            self.rt
                .block_on(async { self.db.run_command(doc! {"compact": &name}).await })
                .map_err(|e| self.failed(&format!("compact {name}"), e))?;
        }
        Ok(())
    }

    /// `collStats` totalSize (storage plus indexes) of both collections.
    fn footprint(&self) -> Result<u64, String> {
        let names = self.existing_collections().map_err(|e| e.to_string())?;
        let mut total = 0;
        for name in names {
            let stats = self
                .rt
                .block_on(async { self.db.run_command(doc! {"collStats": &name}).await })
                .map_err(|e| format!("{:#}", self.failed(&format!("collStats {name}"), e)))?;
            let size = number(&stats, "totalSize").or_else(|| {
                Some(number(&stats, "storageSize")? + number(&stats, "totalIndexSize").unwrap_or(0))
            });
            total += size.ok_or_else(|| {
                format!(
                    "collStats of {name} at {} reports no totalSize or storageSize",
                    self.settings.address
                )
            })?;
        }
        Ok(total)
    }

    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }

    fn data_location(&self) -> Option<PathBuf> {
        self.data_dir.clone()
    }

    fn server_pids(&self) -> Vec<u32> {
        self.pids.clone()
    }
}

fn op_failed(e: mongodb::error::Error, secrets: &[String]) -> OpError {
    OpError::failed(format!("MongoDB: {}", scrub(&describe(&e), secrets)))
}

fn key_text(key: &[u8]) -> Result<&str, OpError> {
    std::str::from_utf8(key).map_err(|_| {
        OpError::Failed("MongoDB: the key is not UTF-8 (YCSB's _id is a string)".into())
    })
}

/// A field name usable as a BSON key.
fn field_name(name: &[u8]) -> Result<&str, OpError> {
    match std::str::from_utf8(name) {
        Ok(n) if !n.is_empty() && !n.contains('\0') => Ok(n),
        _ => Err(OpError::Failed(
            "MongoDB: a field name is empty, not UTF-8 or holds a NUL byte".into(),
        )),
    }
}

fn binary(bytes: &[u8]) -> RawBinaryRef<'_> {
    RawBinaryRef {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// `{field: 1, ...}` for the given fields; None for all.
fn projection(fields: Option<&[&str]>) -> Result<Option<Document>, OpError> {
    let Some(fields) = fields else {
        return Ok(None);
    };
    let mut p = Document::new();
    for f in fields {
        p.insert(field_name(f.as_bytes())?, Bson::Int32(1));
    }
    Ok(Some(p))
}

/// Copies the binary fields of `doc` (all but `_id`, as YCSB's binding) into `out`.
fn copy_fields(doc: &RawDocument, out: &mut Record, secrets: &[String]) -> OpResult {
    for element in doc.iter() {
        let (name, value) = element
            .map_err(|e| OpError::failed(format!("MongoDB: {}", scrub(&e.to_string(), secrets))))?;
        if let RawBsonRef::Binary(b) = value {
            if name != "_id" {
                out.push(name.as_bytes(), b.bytes);
            }
        }
    }
    Ok(())
}

/// One client's operations on the records, written once as async code;
/// a handle on the engine's shared client (cheap: the collection is an
/// `Arc` inside the driver).
pub struct MongoClient<'e> {
    coll: Collection<RawDocumentBuf>,
    secrets: &'e [String],
}

impl MongoClient<'_> {
    pub async fn read(
        &mut self,
        key: &[u8],
        fields: Option<&[&str]>,
        out: &mut Record,
    ) -> OpResult {
        let key = key_text(key)?;
        let mut find = self.coll.find_one(doc! {"_id": key});
        if let Some(p) = projection(fields)? {
            find = find.projection(p);
        }
        match find.await.map_err(|e| op_failed(e, self.secrets))? {
            Some(doc) => copy_fields(&doc, out, self.secrets),
            None => Err(OpError::NotFound),
        }
    }

    pub async fn scan(&mut self, asked: ScanRequest<'_>, out: &mut ScanResults) -> OpResult {
        let key = key_text(asked.start_key)?;
        let limit = i64::try_from(asked.count).unwrap_or(i64::MAX);
        let mut find = self
            .coll
            .find(doc! {"_id": {"$gte": key}})
            .sort(doc! {"_id": 1})
            .limit(limit)
            .batch_size(u32::try_from(asked.count).unwrap_or(u32::MAX).max(1));
        if let Some(p) = projection(asked.fields)? {
            find = find.projection(p);
        }
        let mut cursor = find.await.map_err(|e| op_failed(e, self.secrets))?;
        while cursor
            .advance()
            .await
            .map_err(|e| op_failed(e, self.secrets))?
        {
            copy_fields(cursor.current(), out.next_slot(), self.secrets)?;
        }
        Ok(())
    }

    pub async fn update(&mut self, key: &[u8], values: &Record) -> OpResult {
        let key = key_text(key)?;
        let mut set = Document::new();
        for (name, value) in values.fields() {
            set.insert(field_name(name)?, bin(value));
        }
        let result = self
            .coll
            .update_one(doc! {"_id": key}, doc! {"$set": set})
            .await
            .map_err(|e| op_failed(e, self.secrets))?;
        if result.matched_count == 0 {
            return Err(OpError::NotFound);
        }
        Ok(())
    }

    /// `insert_one`: an existing key is an error (duplicate key), as YCSB.
    pub async fn insert(&mut self, key: &[u8], values: &Record) -> OpResult {
        let key = key_text(key)?;
        let mut doc = RawDocumentBuf::new();
        doc.append_ref("_id", key);
        for (name, value) in values.fields() {
            doc.append_ref(field_name(name)?, binary(value));
        }
        self.coll
            .insert_one(doc)
            .await
            .map_err(|e| op_failed(e, self.secrets))?;
        Ok(())
    }

    /// NotFound when nothing was deleted (YCSB's binding).
    pub async fn delete(&mut self, key: &[u8]) -> OpResult {
        let key = key_text(key)?;
        let result = self
            .coll
            .delete_one(doc! {"_id": key})
            .await
            .map_err(|e| op_failed(e, self.secrets))?;
        if result.deleted_count == 0 {
            return Err(OpError::NotFound);
        }
        Ok(())
    }
}

// The seam of client tasks: forwards to the inherent operations.
super::async_records!(impl[] MongoClient<'_>, true);

/// A client thread's worker: blocks on each operation (clients=threads).
pub struct MongoWorker<'e> {
    rt: &'e DriverRuntime,
    client: MongoClient<'e>,
}

super::driver_runtime::blocking_on_driver!(MongoWorker<'_>);

/// Entries copied out of one query: the db_bench cursor.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    /// Per entry: where its key starts, where its value starts, where it ends.
    spans: Vec<(usize, usize, usize)>,
    pos: usize,
    /// The last fill found fewer entries than it asked for.
    at_end: bool,
    /// Entries the next fill asks for.
    next_fill: usize,
}

impl Batch {
    fn current(&self) -> Option<(&[u8], &[u8])> {
        let &(start, value_start, end) = self.spans.get(self.pos)?;
        Some((&self.data[start..value_start], &self.data[value_start..end]))
    }

    fn last_key(&self) -> Option<Vec<u8>> {
        let &(start, value_start, _) = self.spans.last()?;
        Some(self.data[start..value_start].to_vec())
    }
}

/// Where a batch starts.
enum Start {
    First,
    AtOrAfter(Vec<u8>),
    After(Vec<u8>),
}

/// Raw keys and values for `kvperf bench`, as async code on the shared
/// client.
pub struct MongoKvClient<'e> {
    coll: Collection<RawDocumentBuf>,
    secrets: &'e [String],
    cursor: Batch,
}

impl MongoKvClient<'_> {
    async fn fill(&mut self, from: Start) -> Result<bool, OpError> {
        let asked = self.cursor.next_fill.max(1);
        self.cursor.next_fill = (asked * 2).clamp(16, LARGEST_FILL);
        let filter = match &from {
            Start::First => Document::new(),
            Start::AtOrAfter(k) => doc! {"_id": {"$gte": bin(k)}},
            Start::After(k) => doc! {"_id": {"$gt": bin(k)}},
        };
        let mut cursor = self
            .coll
            .find(filter)
            .sort(doc! {"_id": 1})
            .limit(asked as i64)
            .batch_size(asked as u32)
            .await
            .map_err(|e| op_failed(e, self.secrets))?;
        let c = &mut self.cursor;
        c.data.clear();
        c.spans.clear();
        c.pos = 0;
        while cursor
            .advance()
            .await
            .map_err(|e| op_failed(e, self.secrets))?
        {
            let doc = cursor.current();
            let (Ok(Some(RawBsonRef::Binary(k))), Ok(Some(RawBsonRef::Binary(v)))) =
                (doc.get("_id"), doc.get("v"))
            else {
                return Err(OpError::Failed(
                    "MongoDB: a raw key-value document is not {_id: binary, v: binary}".into(),
                ));
            };
            let start = c.data.len();
            c.data.extend_from_slice(k.bytes);
            let value_start = c.data.len();
            c.data.extend_from_slice(v.bytes);
            c.spans.push((start, value_start, c.data.len()));
        }
        c.at_end = c.spans.len() < asked;
        Ok(!c.spans.is_empty())
    }

    pub async fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        let found = self
            .coll
            .find_one(doc! {"_id": bin(key)})
            .await
            .map_err(|e| op_failed(e, self.secrets))?;
        match found {
            Some(doc) => match doc.get("v") {
                Ok(Some(RawBsonRef::Binary(v))) => Ok(v.bytes.len()),
                _ => Err(OpError::Failed(
                    "MongoDB: the document has no binary v".into(),
                )),
            },
            None => Err(OpError::NotFound),
        }
    }

    /// An upsert: db_bench's put overwrites.
    pub async fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        let mut doc = RawDocumentBuf::new();
        doc.append_ref("_id", binary(key));
        doc.append_ref("v", binary(value));
        self.coll
            .replace_one(doc! {"_id": bin(key)}, doc)
            .upsert(true)
            .await
            .map_err(|e| op_failed(e, self.secrets))?;
        Ok(())
    }

    /// Deleting a missing key is Ok (as the embedded engines).
    pub async fn delete(&mut self, key: &[u8]) -> OpResult {
        self.coll
            .delete_one(doc! {"_id": bin(key)})
            .await
            .map_err(|e| op_failed(e, self.secrets))?;
        Ok(())
    }

    /// Every seek queries afresh, so `fresh` changes nothing.
    pub async fn seek(&mut self, target: Option<&[u8]>, _fresh: bool) -> Result<bool, OpError> {
        self.cursor.next_fill = 1;
        self.fill(target.map_or(Start::First, |t| Start::AtOrAfter(t.to_vec())))
            .await
    }

    pub async fn next(&mut self) -> Result<bool, OpError> {
        let c = &mut self.cursor;
        if c.pos < c.spans.len() {
            c.pos += 1;
        }
        if c.pos < c.spans.len() {
            return Ok(true);
        }
        if c.at_end {
            return Ok(false);
        }
        match c.last_key() {
            Some(last) => self.fill(Start::After(last)).await,
            None => Ok(false),
        }
    }

    pub fn current(&self) -> Option<(&[u8], &[u8])> {
        self.cursor.current()
    }
}

fn bin(bytes: &[u8]) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    }
}

/// `kvperf bench`'s worker: blocks on the engine's runtime.
pub struct MongoKvWorker<'e> {
    rt: &'e DriverRuntime,
    client: MongoKvClient<'e>,
}

impl MongoKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        self.rt.block_on(self.client.get(key))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        self.rt.block_on(self.client.put(key, value))
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        self.rt.block_on(self.client.delete(key))
    }

    fn seek(&mut self, target: Option<&[u8]>, fresh: bool) -> Result<bool, OpError> {
        self.rt.block_on(self.client.seek(target, fresh))
    }

    fn next(&mut self) -> Result<bool, OpError> {
        self.rt.block_on(self.client.next())
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.client.current()
    }
}

super::blocking_raw!(MongoKvWorker<'_>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fake_listener;
    use crate::testing::refusal;
    use crate::testing::secret_checks::{
        assert_secret_hidden, login_on_port_1, open_error, props, SECRET,
    };
    use std::time::Instant;

    #[test]
    fn the_password_is_never_shown() {
        let p = login_on_port_1("mongodb");
        let s = Settings::from_properties(&p, false).unwrap();
        assert_eq!(s.secrets, [SECRET]);
        let err = open_error(&SPEC, &p);
        let kept = s.secrets.first().map(String::as_str);
        assert_secret_hidden("ferretdb", &s, kept, &s.effective, err);
    }

    #[test]
    fn the_shared_pool_is_not_capped_below_the_clients_unless_asked() {
        let pool = |pairs: &[(&str, &str)]| {
            let mut p = Properties::new();
            for (k, v) in pairs {
                p.set(k, v);
            }
            Settings::from_properties(&p, false).map(|s| (s.options.max_pool_size, s.effective))
        };
        // The driver's default (10) would queue an 11th client.
        let (size, effective) = pool(&[]).unwrap();
        assert_eq!(size, Some(u32::MAX));
        assert_eq!(effective["max_pool_size"], "auto");
        let (size, effective) = pool(&[("mongodb.max_pool_size", "64")]).unwrap();
        assert_eq!(size, Some(64));
        assert_eq!(effective["max_pool_size"], "64");
        let url = ("mongodb.url", "mongodb://127.0.0.1:1/?maxPoolSize=7");
        let (size, effective) = pool(&[url, ("mongodb.max_pool_size", "64")]).unwrap();
        assert_eq!(size, Some(7), "the url's maxPoolSize wins");
        assert_eq!(effective["max_pool_size"], "7");
        for bad in ["0", "many"] {
            let err = refusal(pool(&[("mongodb.max_pool_size", bad)]));
            assert!(err.contains("mongodb.max_pool_size"), "{err}");
        }
    }

    #[test]
    fn the_engines_own_runtime_is_not_sized_when_clients_are_tasks() {
        let p = props(&[("mongodb.runtime_threads", "4")]);
        assert_eq!(
            Settings::from_properties(&p, false)
                .unwrap()
                .runtime_threads,
            4
        );
        let err = refusal(Settings::from_properties(&p, true));
        assert!(err.contains("runtimethreads"), "{err}");
        let tasks = Settings::from_properties(&Properties::new(), true).unwrap();
        assert!(!tasks.effective.contains_key("runtime_threads"));
    }

    /// On either runtime, a port that does not answer as MongoDB is one
    /// line naming the address, within the connect limit.
    #[test]
    fn a_server_that_is_not_mongodb_fails_at_open_in_one_line_within_the_limit() {
        let _alone = fake_listener::sockets_alone();
        let (_listener, silent) = fake_listener::silent();
        let (http, _) = fake_listener::serving(fake_listener::http);
        let (closing, _) = fake_listener::serving(fake_listener::closing);
        let runner = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        for (port, said) in [
            (silent, "did not answer within 1 s while kvperf waited for its reply to a connection's hello: it stopped answering"),
            (http, "does not speak the MongoDB protocol"),
            (closing, "does not speak the MongoDB protocol"),
            (closed, "cannot reach MongoDB at"),
        ] {
            for runtime in [None, Some(runner.handle())] {
                let mut p = Properties::new();
                p.set("mongodb.port", &port.to_string());
                p.set("mongodb.connect_timeout_s", "1");
                p.set("stalltimeout", "1");
                let t0 = Instant::now();
                let opened = open(&OpenOptions {
                    dir: None,
                    properties: &p,
                    mode: OpenMode::Any,
                    runtime,
                    clients: None,
                });
                let err = match opened {
                    Ok(_) => panic!("port {port} opened"),
                    Err(e) => format!("{e:#}"),
                };
                let took = t0.elapsed();
                assert!(took < Duration::from_secs(5), "{took:?}: {err}");
                assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
                assert!(err.contains(said), "{err}");
                assert!(!err.contains('\n'), "{err}");
            }
        }
    }

    #[test]
    fn credentials_never_show() {
        let p = props(&[("mongodb.url", "mongodb://bob:hunter2@127.0.0.1:1/shop")]);
        let s = Settings::from_properties(&p, false).unwrap();
        assert_eq!(s.database, "shop", "the url's database");
        assert_eq!(
            s.effective["url"],
            "mongodb://bob:(redacted)@127.0.0.1:1/shop"
        );
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(
            scrub("auth failed for hunter2", &s.secrets),
            "auth failed for (redacted)"
        );

        let mut p = Properties::new();
        p.set("mongodb.username", "alice");
        p.set("mongodb.password", "s3cret");
        let s = Settings::from_properties(&p, false).unwrap();
        assert_eq!(s.database, "ycsb");
        assert_eq!(s.address, "127.0.0.1:27017");
    }

    #[test]
    fn a_url_password_holding_at_colon_or_slash_never_shows() {
        for url in [
            "mongodb://bob:hun@ter2@127.0.0.1:1/shop",
            "mongodb://bob:hun:ter2@127.0.0.1:1/shop",
            "mongodb://bob:hun/ter2@127.0.0.1:1/shop",
        ] {
            let mut p = Properties::new();
            p.set("mongodb.url", url);
            let shown = match Settings::from_properties(&p, false) {
                Ok(s) => format!("{s:?} {:?}", s.effective),
                Err(e) => e.to_string(),
            };
            assert!(!shown.contains("ter2"), "{url}: {shown}");
        }
    }

    #[test]
    fn write_concern_and_names_are_checked() {
        let p = props(&[("mongodb.write_concern", "0")]);
        let err = refusal(Settings::from_properties(&p, false));
        assert!(err.contains("not supported"), "{err}");
        let p = props(&[("mongodb.write_concern", "majority")]);
        assert_eq!(
            Settings::from_properties(&p, false).unwrap().effective["write_concern"],
            "majority"
        );
        let p = props(&[("mongodb.url", "http://x")]);
        assert!(Settings::from_properties(&p, false).is_err());
        let p = props(&[("mongodb.database", "a.b")]);
        assert!(Settings::from_properties(&p, false).is_err());
    }
}
