//! A Redis server through the `redis` crate, storing records as YCSB
//! 0.17.0's Redis binding does, with one deliberate difference in the scan
//! index.
//!
//! **Clients.** Each client has its own connection: a client thread a
//! blocking one (`clients=threads`), a client task an async multiplexed
//! one on the runner's runtime (`clients=tasks`, the default from two
//! clients up), carrying that client's one request at a time. The
//! operations are written once over either ([`Transport`]). Tasks are the
//! default because a thread per connection wakes once per reply, where an
//! event loop takes several replies per wake-up as `redis-benchmark` does
//! (bench/RESULTS.md 6). A lone client runs on a thread: it has no other
//! replies to share a wake-up with, and each request through the
//! multiplexed connection hops to the connection's own task and back
//! (a channel, a oneshot, a timer), which measured 1.21x slower than the
//! blocking connection at one client (bench/RESULTS.md 6g).
//!
//! **Layout.** A record is one hash at `{keyprefix}{key}` (`HSET key field
//! value ...`), its fields the hash's fields. The scan index is one sorted
//! set, `{keyprefix}_indices`, holding every record key. All YCSB tables
//! share it: the `table` argument is ignored, as in YCSB's binding
//! (`// XXX jedis.select(int index) to switch to table`). `keyprefix`
//! (the store's namespace) keeps two stores apart on one server; the
//! `database` option picks Redis' numbered database (`SELECT`).
//!
//! **Scan order, differing from YCSB on purpose.** YCSB scores each member
//! by Java's `String.hashCode` of the key and scans with `ZRANGEBYSCORE`
//! from the start key's hash, so its scans return keys in hash order (not
//! key order) and keys whose hashes collide are skipped or repeated. kvperf
//! adds every member with score 0 and scans with `ZRANGEBYLEX [start + LIMIT
//! 0 count`: Redis orders members of equal score by their bytes, so scans
//! return records in key order like every other kvperf engine
//! (`ordered_scans`), at the same cost (one `O(log n + count)` range query
//! and then one `HGETALL`/`HMGET` per key, pipelined).
//!
//! **Results, differing from YCSB.** A read of a missing key is `NotFound`
//! (YCSB: `ERROR` with `HGETALL`, `OK` with `HMGET`); an update of a missing
//! key is `NotFound` and creates nothing (YCSB's `HMSET` creates the record
//! without indexing it); a delete removes the key and its index entry
//! together (YCSB leaves the index entry). Insert is `HSET` + `ZADD`, and
//! delete `DEL` + `ZREM`, each in one `MULTI`/`EXEC`; update is a small Lua
//! script (`EXISTS`, then `HSET`), so it is atomic too.
//!
//! **Raw key-values** (`kvperf bench`): `{keyprefix}kv:{key}` holds the value
//! as a plain string (`GET`/`SET`/`DEL`). Redis cannot iterate keys in order,
//! so only point access is offered.
//!
//! **Stores.** A fresh store removes this store's data only: the keys its
//! index lists, the index, kvperf's marker key `{keyprefix}_kvperf`, and the
//! raw key-values (found with `SCAN MATCH {keyprefix}kv:*`; a store whose
//! prefix is this prefix followed by `kv:` would lose keys to it, so do not
//! nest prefixes that way), and only a store kvperf made: its marker holds
//! [`MARK`], written when kvperf emptied the prefix or found nothing under
//! it. Keys under the prefix without that mark (a user's `kv:*` keys under
//! the default empty prefix, YCSB's own index, a store an older kvperf
//! made) are refused by `--fresh` in one line, and so is any key under
//! the prefix by a plain load, run or replay, unless `redis.adopt=true`
//! (used as it is, never marked). An existing store is one with the index
//! or the marker. A store indexed by YCSB's own binding (scores not all 0) is
//! refused, because lexicographic scans over it would be wrong.
//!
//! **Durability and size.** Redis keeps its data in memory; persistence
//! (RDB snapshots, the AOF and its fsync policy) is the server's setting
//! (`kvperf server start redis` runs it without persistence unless
//! `KVPERF_PERSIST=1`), so `settle` has nothing to wait for. The footprint is
//! the memory Redis reports for this store's keys (`MEMORY USAGE ... SAMPLES
//! 0`): every record up to 100,000 records, else an even sample of 10,000
//! ranks of the index scaled up; raw key-values likewise (the first 100,000
//! found, then every 100th).

use std::collections::BTreeMap;
use std::future::{ready, Future};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::io::tcp::TcpSettings;
use redis::{
    cmd, from_redis_value, pipe, AsyncConnectionConfig, Cmd, Connection, ConnectionInfo,
    FromRedisValue, IntoConnectionInfo, Pipeline, RedisConnectionInfo, RedisError, RedisResult,
    Script, ScriptInvocation, Value,
};

use super::endpoint::{self, given_or_env, server_option};
use super::options::OptionValues;
use super::reconnect::{
    handshake_limit, no_answer, say_still_waiting, wait_limit, within_saying, Backoff,
};
use super::{
    Access, Activity, AsyncOps, Capabilities, ClientSlot, DbBenchFlags, Engine, EngineInfo,
    EngineOption, EngineSpec, EventKind, EventSupport, OpError, OpResult, OpenMode, OpenOptions,
    Operations, Record, Runs, ScanRequest, ScanResults, SetupFuture, StoreKind, SERVER,
};
use crate::error::InputError;
use crate::properties::{redacted, scrubbed, Properties};

pub static SPEC: EngineSpec = EngineSpec {
    name: "redis",
    about: "Redis server (a hash per record, a sorted-set index) via the redis crate",
    feature: "redis",
    store: StoreKind::Server {
        server: "redis",
        namespace: "redis.keyprefix",
    },
    capabilities: Capabilities {
        // Clients as tasks, each on its own multiplexed async connection;
        // a lone client on a thread (bench/RESULTS.md 6g).
        async_ops: AsyncOps::ByDefaultFrom(2),
        // INFO persistence, over a connection of the sampler's own.
        events: EventSupport::Reports(&[EventKind::BgSave, EventKind::AofRewrite]),
        // The rest is SERVER's: persistence runs in the server as it is
        // configured, nothing for kvperf to wait for; point access only
        // (GET/SET/DEL: Redis has no ordered iteration over keys); scans in
        // key order by ZRANGEBYLEX over an index of equal scores (YCSB's
        // binding: hash order); a hash's HSET writes only the fields given;
        // each connection's driver task does its socket I/O (pinned beside
        // its client it measured 0.80x at 4 clients, bench/RESULTS.md 6k).
        ..SERVER
    },
    options: &[
        server_option!(host, "server address (else env KVPERF_REDIS_HOST)"),
        server_option!(port, "6379", "server port (else env KVPERF_REDIS_PORT)"),
        server_option!(adopt),
        server_option!(password, "AUTH password", "REDIS"),
        EngineOption { name: "database", default: "0", help: "Redis database number (SELECT)" },
        EngineOption { name: "keyprefix", default: "", help: "prefix of every key of the store, its index included: keeps two stores apart on one server" },
    ],
    open,
    // Redis' durability is the server's configuration, and it has no cache,
    // compression, filters or background jobs for kvperf to set.
    db_bench: |flags: &DbBenchFlags, _: &mut Properties| flags.given(),
};

/// How long any one command may take.
const TIMEOUT: Duration = Duration::from_secs(60);
/// How long the probe of a failed connection (what does the server say
/// first?) may take.
const PROBE_LIMIT: Duration = Duration::from_secs(5);
/// Keys per command or pipeline when kvperf walks a whole store.
const BATCH: usize = 1000;

const UPDATE_IF_EXISTS: &str = "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end \
     redis.call('HSET', KEYS[1], unpack(ARGV)) return 1";

/// Where the server is and which store on it; `Debug` hides the password.
#[derive(Clone)]
struct RedisOptions {
    host: String,
    port: u16,
    password: Option<String>,
    database: i64,
    prefix: Vec<u8>,
    /// `redis.adopt`: write into a prefix kvperf did not mark.
    adopt: bool,
    effective: BTreeMap<String, String>,
    /// How long connecting and the first reply (`PING`) may take:
    /// `stalltimeout`, as every call before the window.
    handshake: Duration,
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        endpoint::debug_server(f, "RedisOptions", &self.host, self.port, &self.password)
            .field("database", &self.database)
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .finish()
    }
}

impl RedisOptions {
    fn from_properties(props: &Properties) -> Result<Self, InputError> {
        let v = OptionValues::new(&SPEC, props);
        let host = given_or_env(&v, "host");
        let port = endpoint::tcp_port_text("redis.port", &given_or_env(&v, "port"))?;
        let password = Some(given_or_env(&v, "password")).filter(|p| !p.is_empty());
        let database = v.u64_at_most("database", i32::MAX as u64)? as i64;
        let mut effective = v.effective();
        effective.insert("host".into(), host.clone());
        effective.insert("port".into(), port.to_string());
        effective.insert(
            "password".into(),
            redacted("password", password.as_deref().unwrap_or("")),
        );
        Ok(Self {
            host,
            port,
            password,
            database,
            prefix: v.text("keyprefix").into_bytes(),
            adopt: endpoint::adopts(&v)?,
            effective,
            handshake: handshake_limit(props),
        })
    }

    fn addr(&self) -> String {
        endpoint::socket_address(&self.host, self.port)
    }

    /// Where to connect: the database selected, the password, no Nagle.
    fn connection_info(&self) -> anyhow::Result<ConnectionInfo> {
        let mut settings = RedisConnectionInfo::default().set_db(self.database);
        if let Some(password) = &self.password {
            settings = settings.set_password(password);
        }
        Ok((self.host.clone(), self.port)
            .into_connection_info()
            .map_err(|e| self.unreachable(&e))?
            .set_redis_settings(settings)
            .set_tcp_settings(TcpSettings::default().set_nodelay(true)))
    }

    /// A new blocking connection (a client thread's), timeouts set; the
    /// handshake and the first reply within `stalltimeout` in all.
    fn connect(&self) -> anyhow::Result<Connection> {
        self.connect_as(false)
    }

    /// A client's first connection (the engine's at open, a client's at its
    /// setup, not a reconnect): a server that is full is named so.
    fn connect_first(&self) -> anyhow::Result<Connection> {
        self.connect_as(true)
    }

    fn connect_as(&self, first: bool) -> anyhow::Result<Connection> {
        let info = self.connection_info()?;
        let limit = self.handshake;
        let connect = move || {
            let mut con = redis::Client::open(info)?.get_connection_with_timeout(limit)?;
            con.set_read_timeout(Some(limit))?;
            con.set_write_timeout(Some(limit))?;
            cmd("PING").query::<()>(&mut con)?;
            con.set_read_timeout(Some(TIMEOUT))?;
            con.set_write_timeout(Some(TIMEOUT))?;
            Ok(con)
        };
        let addr = self.addr();
        let say = || say_still_waiting("Redis", &addr, limit);
        within_saying(limit, say, connect)
            .unwrap_or_else(|| Err(timed_out()))
            .map_err(|e| self.connect_error(&e, first))
    }

    /// A new async connection (a client task's), on the runtime it is
    /// made on, timeouts set.
    async fn connect_async(&self) -> anyhow::Result<MultiplexedConnection> {
        self.connect_async_as(false).await
    }

    async fn connect_async_as(&self, first: bool) -> anyhow::Result<MultiplexedConnection> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.handshake))
            .set_response_timeout(Some(TIMEOUT));
        let client =
            redis::Client::open(self.connection_info()?).map_err(|e| self.unreachable(&e))?;
        let first_reply = async {
            let mut con = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            cmd("PING").query_async::<()>(&mut con).await?;
            Ok(con)
        };
        tokio::time::timeout(self.handshake, first_reply)
            .await
            .unwrap_or_else(|_| Err(timed_out()))
            .map_err(|e| self.connect_error(&e, first))
    }

    /// The error of a connection that failed: unreachable (with how to start
    /// a server), silent, not Redis, or refused by the server (its words:
    /// never the password).
    fn unreachable(&self, err: &RedisError) -> anyhow::Error {
        self.connect_error(err, false)
    }

    /// As [`Self::unreachable`]; `first`: a client's first connection,
    /// which after a closed connection asks the server what it says on a
    /// new one (a reconnect does not: it would double its attempts).
    fn connect_error(&self, err: &RedisError, first: bool) -> anyhow::Error {
        let addr = self.addr();
        // A server at maxclients accepts, says so and closes: the client
        // sees its words, or only the closed connection.
        let full = |said: &str| said.contains("max number of clients");
        let said = if full(&err.to_string()) {
            Some(err.to_string())
        } else if first && err.is_io_error() && !err.is_connection_refusal() && !err.is_timeout() {
            self.first_words().filter(|w| full(w))
        } else {
            None
        };
        if let Some(said) = said {
            return InputError::Invalid(format!(
                "Redis at {addr} is full: it refuses new connections ({}); run fewer clients, or raise its maxclients",
                scrubbed(said.trim(), self.password.as_deref())
            ))
            .into();
        }
        if err.is_timeout() {
            // A run failure: a stopped server and a silent port look alike.
            no_answer("Redis", &addr, "a connection's first reply", self.handshake)
        } else if err.kind() == redis::ErrorKind::Parse {
            InputError::Invalid(format!(
                "the server at {addr} does not speak the Redis protocol (set -p redis.host and redis.port)"
            ))
            .into()
        } else if err.is_io_error() || err.is_connection_refusal() {
            InputError::Invalid(format!(
                "cannot reach Redis at {addr} ({err}); `kvperf server start redis --port {}` starts one, or set -p redis.host and redis.port",
                self.port
            ))
            .into()
        } else if err.code() == Some("NOAUTH") {
            InputError::Invalid(format!(
                "Redis at {addr} wants a password: set -p redis.password or the environment variable KVPERF_REDIS_PASSWORD"
            ))
            .into()
        } else if err.kind() == redis::ErrorKind::AuthenticationFailed {
            // As PostgreSQL and MongoDB say a refused login; it was "refused
            // the connection: ... - AuthenticationFailed".
            let said = err.to_string();
            let said = said.trim_end_matches("- AuthenticationFailed").trim();
            InputError::Invalid(format!(
                "Redis at {addr} refused the login: {}; set -p redis.password (or KVPERF_REDIS_PASSWORD)",
                scrubbed(said, self.password.as_deref())
            ))
            .into()
        } else {
            InputError::Invalid(format!(
                "Redis at {addr} refused the connection: {}",
                scrubbed(&err.to_string(), self.password.as_deref())
            ))
            .into()
        }
    }

    /// What the server says first on a new connection, if it is an error
    /// line (Redis sends one on accepting when it is full); bounded.
    fn first_words(&self) -> Option<String> {
        use std::io::{Read, Write};
        use std::net::{TcpStream, ToSocketAddrs};
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .ok()?
            .next()?;
        let mut stream = TcpStream::connect_timeout(&addr, PROBE_LIMIT).ok()?;
        stream.set_read_timeout(Some(PROBE_LIMIT)).ok()?;
        stream.set_write_timeout(Some(PROBE_LIMIT)).ok()?;
        let _ = stream.write_all(b"PING\r\n");
        let mut reply = [0u8; 256];
        let n = stream.read(&mut reply).ok()?;
        let text = String::from_utf8_lossy(&reply[..n]);
        text.strip_prefix('-')
            .map(|t| t.lines().next().unwrap_or("").to_string())
    }

    fn key(&self, suffix: &[u8]) -> Vec<u8> {
        [&self.prefix[..], suffix].concat()
    }

    fn index_key(&self) -> Vec<u8> {
        self.key(b"_indices")
    }

    fn marker_key(&self) -> Vec<u8> {
        self.key(b"_kvperf")
    }

    /// `SCAN MATCH` pattern of the raw key-values (the prefix glob-escaped).
    fn kv_pattern(&self) -> Vec<u8> {
        self.pattern(b"kv:*")
    }

    /// `SCAN MATCH` pattern of every key under the prefix.
    fn prefix_pattern(&self) -> Vec<u8> {
        self.pattern(b"*")
    }

    fn pattern(&self, glob: &[u8]) -> Vec<u8> {
        let mut pattern = Vec::with_capacity(self.prefix.len() + glob.len());
        for &b in &self.prefix {
            if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
                pattern.push(b'\\');
            }
            pattern.push(b);
        }
        pattern.extend_from_slice(glob);
        pattern
    }

    fn shown_prefix(&self) -> String {
        String::from_utf8_lossy(&self.prefix).into_owned()
    }
}

fn open(opts: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    let options = RedisOptions::from_properties(opts.properties)?;
    let wait = wait_limit(opts.properties);
    let mut con = options.connect_first()?;
    let addr = options.addr();
    // Opening (its checks, emptying a fresh store) is bounded as a whole by
    // stalltimeout: a server that stops answering ends it, in one line.
    let budget = Budget::new(wait);
    let context = |e: RedisError| {
        if e.is_timeout() {
            let limit = wait.map_or(TIMEOUT, |w| w).as_secs_f64();
            anyhow::anyhow!(
                "Redis at {addr} did not answer within {limit} s while kvperf waited for its store's checks (opening it), before the measured window: it stopped answering (stalltimeout={limit})"
            )
        } else {
            anyhow::anyhow!("Redis at {addr}: {e}")
        }
    };
    budget.arm(&mut con).map_err(context)?;
    let info: String = cmd("INFO").arg("server").query(&mut con).map_err(context)?;
    let server_version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());

    let index = options.index_key();
    let marker = options.marker_key();
    // What is under the prefix, and whether kvperf made it.
    let owner = owner(&mut con, &options).map_err(context)?;
    match opts.mode {
        OpenMode::Fresh => {
            if let Owner::Other(what) = &owner {
                return Err(InputError::Invalid(format!(
                    "Redis at {addr} (database {}) holds {what} under prefix '{}' without kvperf's mark (kvperf did not make it, or made it before it marked its stores), so --fresh does not delete it: set another -p redis.keyprefix, or delete those keys by hand if they may go",
                    options.database,
                    options.shown_prefix()
                ))
                .into());
            }
            remove_store(&mut con, &options, &budget).map_err(context)?
        }
        OpenMode::Existing => {
            budget.arm(&mut con).map_err(context)?;
            let found: i64 = cmd("EXISTS")
                .arg(&index)
                .arg(&marker)
                .query(&mut con)
                .map_err(context)?;
            if found == 0 {
                return Err(InputError::Invalid(format!(
                    "Redis at {addr} (database {}) holds no redis store under prefix '{}' (no key '{}'); load one first, or set -p redis.keyprefix",
                    options.database,
                    options.shown_prefix(),
                    String::from_utf8_lossy(&index)
                ))
                .into());
            }
        }
        OpenMode::Any => {}
    }
    check_index_scores(&mut con, &options, &budget).map_err(|e| match e {
        IndexError::Redis(e) => context(e),
        IndexError::Scored => InputError::Invalid(format!(
            "the index '{}' on Redis at {addr} scores its members (as YCSB's own Redis binding does), so kvperf's key-order scans over it would be wrong; load the store with kvperf (`kvperf load --fresh`) or use another -p redis.keyprefix",
            String::from_utf8_lossy(&index)
        ))
        .into(),
        IndexError::NotAnIndex => InputError::Invalid(format!(
            "the key '{}' on Redis at {addr} (database {}) is not a sorted set, so it is not a store's index: another program's key stands where kvperf keeps its index; set another -p redis.keyprefix",
            String::from_utf8_lossy(&index),
            options.database
        ))
        .into(),
    })?;
    // A plain load, run or replay writes only into a store kvperf made
    // (or one it finds empty and marks), unless the user opts in.
    if let Owner::Other(what) = &owner {
        if opts.mode != OpenMode::Fresh && !options.adopt {
            let store = format!(
                "Redis at {addr} (database {}) holds {what} under prefix '{}'",
                options.database,
                options.shown_prefix()
            );
            return Err(endpoint::not_kvperfs_store(&store, "redis", "redis.keyprefix").into());
        }
    }
    // Marked as kvperf's only when kvperf made it: emptied just now, or
    // nothing was under the prefix.
    if opts.mode == OpenMode::Fresh || owner == Owner::Nobody {
        budget.arm(&mut con).map_err(context)?;
        let _: () = cmd("SET")
            .arg(&marker)
            .arg(MARK)
            .query(&mut con)
            .map_err(context)?;
    }
    Budget::new(None).arm(&mut con).map_err(context)?;

    let mut version = format!("Redis {server_version}");
    if let Some(krate) = option_env!("KVPERF_REDIS_CRATE_VERSION") {
        version.push_str(&format!(" (redis crate {krate})"));
    }
    Ok(Box::new(RedisEngine {
        options,
        wait,
        control: Mutex::new(con),
        sampler: Mutex::new(None),
        version,
    }))
}

/// The value of kvperf's marker key `{keyprefix}_kvperf` in a store it
/// made: `--fresh` deletes only a store that carries it. (Before this mark,
/// kvperf wrote "kvperf redis store" there on every open, even into a
/// store it only adopted, so that value proves nothing.)
const MARK: &str = "kvperf-store 1: made by kvperf, which empties it at load --fresh";

/// Who made what is under a store's prefix.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// kvperf: its marker holds [`MARK`].
    Kvperf,
    /// Nothing is there: no marker, no index, no raw key-values.
    Nobody,
    /// Keys kvperf did not mark: what they are, for the refusal.
    Other(String),
}

fn owner(con: &mut Connection, options: &RedisOptions) -> Result<Owner, RedisError> {
    let marker: Option<Vec<u8>> = match cmd("GET").arg(options.marker_key()).query(con) {
        Ok(value) => value,
        // Not a string: a key of someone else's at the marker's name.
        Err(e) if e.code() == Some("WRONGTYPE") => {
            return Ok(Owner::Other(format!(
                "a key '{}' that is not kvperf's marker",
                String::from_utf8_lossy(&options.marker_key())
            )))
        }
        Err(e) => return Err(e),
    };
    match marker {
        Some(value) if value == MARK.as_bytes() => return Ok(Owner::Kvperf),
        Some(_) => {
            return Ok(Owner::Other(format!(
                "a marker '{}' of an older kvperf (which marked stores it did not make too)",
                String::from_utf8_lossy(&options.marker_key())
            )))
        }
        None => {}
    }
    let index = options.index_key();
    let found: i64 = cmd("EXISTS").arg(&index).query(con)?;
    if found > 0 {
        return Ok(Owner::Other(format!(
            "the index '{}'",
            String::from_utf8_lossy(&index)
        )));
    }
    // The first key under the prefix, if any (a user's records, raw
    // key-values, anything): SCAN stops at it. Another kvperf may have
    // marked the prefix since (it writes its mark before any record).
    let pattern = options.prefix_pattern();
    let mut cursor = 0u64;
    loop {
        let (next, keys) = scan_page(con, &pattern, cursor)?;
        if let Some(key) = keys.first() {
            let marker: Option<Vec<u8>> = cmd("GET").arg(options.marker_key()).query(con)?;
            if marker.as_deref() == Some(MARK.as_bytes()) {
                return Ok(Owner::Kvperf);
            }
            return Ok(Owner::Other(format!(
                "keys such as '{}'",
                String::from_utf8_lossy(key)
            )));
        }
        if next == 0 {
            return Ok(Owner::Nobody);
        }
        cursor = next;
    }
}

enum IndexError {
    Redis(RedisError),
    Scored,
    /// Not a sorted set: a key of someone else's at the index's name.
    NotAnIndex,
}

/// The index's lowest and highest scores are both 0 (or there is no index).
fn check_index_scores(
    con: &mut Connection,
    options: &RedisOptions,
    budget: &Budget,
) -> Result<(), IndexError> {
    let index = options.index_key();
    for rank in [0i64, -1] {
        budget.arm(con).map_err(IndexError::Redis)?;
        let reply: Vec<(Vec<u8>, f64)> = cmd("ZRANGE")
            .arg(&index)
            .arg(rank)
            .arg(rank)
            .arg("WITHSCORES")
            .query(con)
            .map_err(|e| match e.code() {
                Some("WRONGTYPE") => IndexError::NotAnIndex,
                _ => IndexError::Redis(e),
            })?;
        if reply.iter().any(|(_, score)| *score != 0.0) {
            return Err(IndexError::Scored);
        }
    }
    Ok(())
}

/// Removes this store's data, and nothing else on the server.
fn remove_store(
    con: &mut Connection,
    options: &RedisOptions,
    budget: &Budget,
) -> Result<(), RedisError> {
    let index = options.index_key();
    // Ranks stay put while the records go: the index is removed last.
    let mut start = 0usize;
    loop {
        budget.arm(con)?;
        let members: Vec<Vec<u8>> = cmd("ZRANGE")
            .arg(&index)
            .arg(start)
            .arg(start + BATCH - 1)
            .query(con)?;
        if members.is_empty() {
            break;
        }
        let keys: Vec<Vec<u8>> = members.iter().map(|m| options.key(m)).collect();
        budget.arm(con)?;
        let _: () = cmd("DEL").arg(&keys).query(con)?;
        start += members.len();
    }
    budget.arm(con)?;
    let _: () = cmd("DEL")
        .arg(&index)
        .arg(options.marker_key())
        .query(con)?;
    let mut found = Vec::new();
    scan_kv_keys(con, options, budget, |batch| found.extend_from_slice(batch))?;
    for keys in found.chunks(BATCH) {
        budget.arm(con)?;
        let _: () = cmd("DEL").arg(keys).query(con)?;
    }
    Ok(())
}

/// One `SCAN cursor MATCH pattern COUNT BATCH` step: the next cursor (0
/// at the end) and the keys found; the ownership check and the emptying
/// both page through raw keys this way.
fn scan_page(
    con: &mut Connection,
    pattern: &[u8],
    cursor: u64,
) -> Result<(u64, Vec<Vec<u8>>), RedisError> {
    cmd("SCAN")
        .arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(BATCH)
        .query(con)
}

/// Calls `each` with every batch of raw key-value keys of the store.
fn scan_kv_keys(
    con: &mut Connection,
    options: &RedisOptions,
    budget: &Budget,
    mut each: impl FnMut(&[Vec<u8>]),
) -> Result<(), RedisError> {
    let pattern = options.kv_pattern();
    let mut cursor = 0u64;
    loop {
        budget.arm(con)?;
        let (next, keys) = scan_page(con, &pattern, cursor)?;
        if !keys.is_empty() {
            each(&keys);
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// `MEMORY USAGE key SAMPLES 0` of each key (0 for a key that is gone).
fn memory_usage(
    con: &mut Connection,
    keys: &[Vec<u8>],
    budget: &Budget,
) -> Result<u64, RedisError> {
    if keys.is_empty() {
        return Ok(0);
    }
    let mut p = pipe();
    for k in keys {
        p.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
    }
    let sizes: Vec<Option<u64>> = pipeline_within(con, &p, budget)?;
    Ok(sizes.into_iter().flatten().sum())
}

pub struct RedisEngine {
    options: RedisOptions,
    /// `stalltimeout`: what the calls after the window may take in all.
    wait: Option<Duration>,
    /// The engine's own connection (footprint).
    control: Mutex<Connection>,
    /// The events sampler's connection (`activity`), opened at its first
    /// poll and again after a failed one.
    sampler: Mutex<Option<Connection>>,
    version: String,
}

impl RedisEngine {
    /// Bytes of the YCSB records (exact up to [`EXACT_RECORDS`], else a
    /// scaled sample of evenly spaced ranks) and of the raw key-values.
    fn measure(&self, con: &mut Connection, budget: &Budget) -> Result<u64, RedisError> {
        const EXACT_RECORDS: u64 = 100_000;
        const SAMPLE: u64 = 10_000;
        let o = &self.options;
        let index = o.index_key();
        let mut total = memory_usage(con, &[index.clone(), o.marker_key()], budget)?;
        budget.arm(con)?;
        let records: u64 = cmd("ZCARD").arg(&index).query(con)?;
        if records <= EXACT_RECORDS {
            let mut start = 0u64;
            while start < records {
                budget.arm(con)?;
                let members: Vec<Vec<u8>> = cmd("ZRANGE")
                    .arg(&index)
                    .arg(start)
                    .arg(start + BATCH as u64 - 1)
                    .query(con)?;
                if members.is_empty() {
                    break;
                }
                let keys: Vec<Vec<u8>> = members.iter().map(|m| o.key(m)).collect();
                total += memory_usage(con, &keys, budget)?;
                start += members.len() as u64;
            }
        } else {
            let ranks: Vec<u64> = (0..SAMPLE).map(|i| i * records / SAMPLE).collect();
            let (mut bytes, mut seen) = (0u64, 0u64);
            for chunk in ranks.chunks(BATCH) {
                let mut p = pipe();
                for r in chunk {
                    p.cmd("ZRANGE").arg(&index).arg(r).arg(r);
                }
                let found: Vec<Vec<Vec<u8>>> = pipeline_within(con, &p, budget)?;
                let keys: Vec<Vec<u8>> = found.iter().flatten().map(|m| o.key(m)).collect();
                seen += keys.len() as u64;
                bytes += memory_usage(con, &keys, budget)?;
            }
            if seen > 0 {
                total += (bytes as f64 * records as f64 / seen as f64) as u64;
            }
        }

        // Raw key-values: the first 100,000 found, then every 100th.
        let mut found = Vec::new();
        scan_kv_keys(con, o, budget, |batch| found.extend_from_slice(batch))?;
        let measured: Vec<Vec<u8>> = found
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < EXACT_RECORDS as usize || i % 100 == 0)
            .map(|(_, k)| k.clone())
            .collect();
        let mut bytes = 0u64;
        for chunk in measured.chunks(BATCH) {
            bytes += memory_usage(con, chunk, budget)?;
        }
        if !measured.is_empty() {
            total += (bytes as f64 * found.len() as f64 / measured.len() as f64) as u64;
        }
        Ok(total)
    }
}

impl Engine for RedisEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo::new(&SPEC, self.version.clone(), &self.options.effective)
    }

    /// A thread's client blocks on its connection; a task's awaits an
    /// async one; raw access (db_bench, on threads) is blocking.
    fn client(&self, slot: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        let options = &self.options;
        match (slot.access, slot.runs) {
            (Access::Raw, _) => super::ready(Link::open(options).map(|link| {
                Box::new(RedisKvWorker {
                    link,
                    options,
                    key: Vec::new(),
                }) as Box<dyn Operations>
            })),
            (Access::Records, Runs::Thread) => super::ready(
                Link::open(options)
                    .map(|link| Box::new(Records::new(link, options)) as Box<dyn Operations>),
            ),
            (Access::Records, Runs::Task) => Box::pin(async move {
                let link = AsyncLink::open(options).await?;
                Ok(Box::new(Records::new(link, options)) as Box<dyn Operations>)
            }),
        }
    }

    /// Redis keeps its data in memory and runs nothing kvperf must wait
    /// for; whether and when it writes snapshots or its append-only file is
    /// the server's persistence setting, which kvperf leaves alone.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        Ok(())
    }

    /// The memory Redis reports for this store's keys (see the module
    /// comment), not the whole server's; within half of `stalltimeout` in
    /// all (a walk of many commands), so that a server that stopped
    /// answering after the window leaves the size unmeasured, with why,
    /// before the wait for it ends the step.
    fn footprint(&self) -> Result<u64, String> {
        let mut con = self
            .control
            .lock()
            .map_err(|_| "a thread panicked holding the Redis connection".to_string())?;
        let limit = self.wait.map_or(TIMEOUT, |w| (w / 2).min(TIMEOUT));
        let measured = self.measure(&mut con, &Budget::new(Some(limit)));
        measured.map_err(|e| {
            if e.is_timeout() {
                format!(
                    "the footprint query failed: Redis at {} did not answer within {} s (half of stalltimeout): {e}",
                    self.options.addr(),
                    limit.as_secs_f64()
                )
            } else {
                format!("the footprint query failed: Redis at {}: {e}", self.options.addr())
            }
        })
    }

    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Background saves and AOF rewrites in progress (`INFO persistence`:
    /// `rdb_bgsave_in_progress`, `aof_rewrite_in_progress`) and made since
    /// the server started (`rdb_saves`, `aof_rewrites`, Redis 7.0 and
    /// later), asked over the sampler's own connection.
    fn activity(&self) -> Result<Activity, String> {
        let mut sampler = self.sampler.lock().unwrap_or_else(|e| e.into_inner());
        let con = match sampler.as_mut() {
            Some(con) => con,
            None => sampler.insert(self.options.connect().map_err(|e| format!("{e:#}"))?),
        };
        let info: String = match cmd("INFO").arg("persistence").query(con) {
            Ok(info) => info,
            Err(e) => {
                *sampler = None;
                return Err(format!("Redis at {}: {e}", self.options.addr()));
            }
        };
        Ok(persistence_activity(&info))
    }

    fn server_pids(&self) -> Vec<u32> {
        endpoint::loopback_listeners(&self.options.host, self.options.port)
    }
}

/// What `INFO persistence` says is running and has run.
fn persistence_activity(info: &str) -> Activity {
    let field = |name: &str| -> Option<&str> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let number = |name: &str| field(name).and_then(|v| v.parse::<u64>().ok());
    let mut a = Activity::idle();
    if number("rdb_bgsave_in_progress") == Some(1) {
        let detail = match (
            number("current_save_keys_processed"),
            number("current_save_keys_total"),
        ) {
            (Some(done), Some(total)) if total > 0 => format!("{done} of {total} keys"),
            _ => String::new(),
        };
        a.running(EventKind::BgSave, "", detail);
    }
    if number("aof_rewrite_in_progress") == Some(1) {
        a.running(EventKind::AofRewrite, "", "");
    }
    if let Some(n) = number("rdb_saves") {
        a.tally(EventKind::BgSave, "", n, None);
    }
    if let Some(n) = number("aof_rewrites") {
        a.tally(EventKind::AofRewrite, "", n, None);
    }
    a
}

/// How an operation's commands reach the server: a client thread's
/// blocking connection ([`Link`]) or a client task's async one
/// ([`AsyncLink`]). The record operations are written once, as async code
/// over it ([`Records`]); on the blocking link each call is done when its
/// future is made, so an operation is done in one poll ([`Transport::WAITS`]).
///
/// Replies come back as [`Value`]s, converted by the caller ([`converted`]): a
/// type parameter here would stop the compiler from proving the async
/// operations `Send` (rust-lang/rust#100013).
trait Transport: Send {
    /// Whether its calls wait (async) or are done when made (blocking).
    const WAITS: bool;
    fn query<'a>(
        &'a mut self,
        command: &'a Cmd,
    ) -> impl Future<Output = Result<Value, OpError>> + Send + 'a;
    fn query_pipeline<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
    ) -> impl Future<Output = Result<Value, OpError>> + Send + 'a;
    fn invoke<'a>(
        &'a mut self,
        script: &'a ScriptInvocation<'a>,
    ) -> impl Future<Output = Result<Value, OpError>> + Send + 'a;
}

/// A reply as the type the operation expects.
fn converted<T: FromRedisValue>(value: Value) -> Result<T, OpError> {
    from_redis_value(value).map_err(|e| OpError::failed(format!("Redis: unexpected reply: {e}")))
}

/// Whether the connection is to be made again before the next operation:
/// while Redis is down or restarting every operation fails (and is
/// counted), and the first one after it is back reconnects, so a run goes on.
fn connection_lost(err: &RedisError) -> bool {
    err.is_io_error() || err.is_connection_dropped() || err.is_timeout()
}

/// A client thread's blocking connection, made again after the server
/// went away ([`connection_lost`]), attempts spaced by [`Backoff`].
struct Link<'e> {
    con: Option<Connection>,
    options: &'e RedisOptions,
    backoff: Backoff,
}

impl<'e> Link<'e> {
    fn open(options: &'e RedisOptions) -> anyhow::Result<Self> {
        Ok(Self {
            con: Some(options.connect_first()?),
            options,
            backoff: Backoff::default(),
        })
    }

    fn run<T>(&mut self, op: impl FnOnce(&mut Connection) -> RedisResult<T>) -> Result<T, OpError> {
        let con = match &mut self.con {
            Some(con) => con,
            None => {
                std::thread::sleep(self.backoff.next_pause());
                self.con
                    .insert(self.options.connect().map_err(reconnect_failed)?)
            }
        };
        let result = op(con);
        settle(&mut self.con, &mut self.backoff, result)
    }
}

fn timed_out() -> RedisError {
    std::io::Error::from(std::io::ErrorKind::TimedOut).into()
}

/// `p`'s replies, read within `budget` as a whole: the crate's pipeline
/// query waits for each reply with the whole read timeout, so a pipeline
/// of N commands to a server that stopped answering waited N times it
/// (and each read after a timeout skips one more reply).
fn pipeline_within<T: FromRedisValue>(
    con: &mut Connection,
    p: &Pipeline,
    budget: &Budget,
) -> RedisResult<T> {
    budget.arm(con)?;
    con.send_packed_command(&p.get_packed_pipeline())?;
    let mut replies = Vec::with_capacity(p.len());
    for _ in 0..p.len() {
        budget.arm(con)?;
        replies.push(con.recv_response()?);
    }
    Ok(from_redis_value(Value::Array(replies))?)
}

/// A bound on a whole sequence of the engine's own commands (opening a
/// store, walking it for its footprint), not on each read: each command
/// may take only what is left of it. Without one, each command has
/// [`TIMEOUT`], as before.
struct Budget {
    until: Option<Instant>,
}

impl Budget {
    fn new(limit: Option<Duration>) -> Self {
        Self {
            until: limit.map(|l| Instant::now() + l),
        }
    }

    /// Bounds the connection's next command by what is left (a timeout
    /// error when nothing is).
    fn arm(&self, con: &mut Connection) -> RedisResult<()> {
        let left = match self.until {
            None => TIMEOUT,
            Some(until) => until.saturating_duration_since(Instant::now()).min(TIMEOUT),
        };
        if left.is_zero() {
            return Err(timed_out());
        }
        con.set_read_timeout(Some(left))?;
        con.set_write_timeout(Some(left))
    }
}

fn reconnect_failed(e: anyhow::Error) -> OpError {
    OpError::failed(format!("Redis: reconnecting: {e}"))
}

/// An operation's result; a lost connection is dropped to be made again,
/// and a success starts the reconnect back-off over.
fn settle<C, T>(
    con: &mut Option<C>,
    backoff: &mut Backoff,
    result: RedisResult<T>,
) -> Result<T, OpError> {
    match result {
        Ok(value) => {
            backoff.reset();
            Ok(value)
        }
        Err(err) => {
            if connection_lost(&err) {
                *con = None;
            }
            Err(failed(err))
        }
    }
}

impl Transport for Link<'_> {
    const WAITS: bool = false;
    fn query<'a>(
        &'a mut self,
        command: &'a Cmd,
    ) -> impl Future<Output = Result<Value, OpError>> + Send + 'a {
        ready(self.run(|con| command.query(con)))
    }
    fn query_pipeline<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
    ) -> impl Future<Output = Result<Value, OpError>> + Send + 'a {
        ready(self.run(|con| pipeline.query(con)))
    }
    fn invoke<'a>(
        &'a mut self,
        script: &'a ScriptInvocation<'a>,
    ) -> impl Future<Output = Result<Value, OpError>> + Send + 'a {
        ready(self.run(|con| script.invoke(con)))
    }
}

/// A client task's async connection (multiplexed, but one per client, so
/// each client has one request in flight as a thread's does), made again
/// after the server went away ([`connection_lost`]), attempts spaced by
/// [`Backoff`].
struct AsyncLink<'e> {
    con: Option<MultiplexedConnection>,
    options: &'e RedisOptions,
    backoff: Backoff,
}

impl<'e> AsyncLink<'e> {
    async fn open(options: &'e RedisOptions) -> anyhow::Result<Self> {
        Ok(Self {
            con: Some(options.connect_async_as(true).await?),
            options,
            backoff: Backoff::default(),
        })
    }

    async fn connection(&mut self) -> Result<&mut MultiplexedConnection, OpError> {
        if self.con.is_none() {
            tokio::time::sleep(self.backoff.next_pause()).await;
            let con = self.options.connect_async().await;
            self.con = Some(con.map_err(reconnect_failed)?);
        }
        Ok(self.con.as_mut().expect("connected above"))
    }

    fn settle<T>(&mut self, result: RedisResult<T>) -> Result<T, OpError> {
        settle(&mut self.con, &mut self.backoff, result)
    }
}

impl Transport for AsyncLink<'_> {
    const WAITS: bool = true;
    async fn query<'a>(&'a mut self, command: &'a Cmd) -> Result<Value, OpError> {
        let result = command.query_async(self.connection().await?).await;
        self.settle(result)
    }
    async fn query_pipeline<'a>(&'a mut self, pipeline: &'a Pipeline) -> Result<Value, OpError> {
        let result = pipeline.query_async(self.connection().await?).await;
        self.settle(result)
    }
    async fn invoke<'a>(&'a mut self, script: &'a ScriptInvocation<'a>) -> Result<Value, OpError> {
        let result = script.invoke_async(self.connection().await?).await;
        self.settle(result)
    }
}

fn failed(err: RedisError) -> OpError {
    OpError::failed(format!("Redis: {err}"))
}

fn unexpected(what: &str, reply: &Value) -> OpError {
    OpError::failed(format!("Redis: unexpected reply to {what}: {reply:?}"))
}

fn bytes_of(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        Value::VerbatimString { text, .. } => Some(text.as_bytes()),
        _ => None,
    }
}

/// Whether an `HGETALL` reply holds any field.
fn hash_is_empty(reply: &Value) -> bool {
    match reply {
        Value::Array(items) | Value::Set(items) => items.is_empty(),
        Value::Map(pairs) => pairs.is_empty(),
        _ => true,
    }
}

/// Adds the fields of an `HGETALL` reply (RESP2 flat array or RESP3 map).
fn push_hash(reply: &Value, out: &mut Record) -> OpResult {
    let mut push = |name: &Value, value: &Value| match (bytes_of(name), bytes_of(value)) {
        (Some(n), Some(v)) => {
            out.push(n, v);
            Ok(())
        }
        _ => Err(unexpected("HGETALL", reply)),
    };
    match reply {
        Value::Array(items) => items.chunks(2).try_for_each(|pair| match pair {
            [n, v] => push(n, v),
            _ => Err(unexpected("HGETALL", reply)),
        }),
        Value::Map(pairs) => pairs.iter().try_for_each(|(n, v)| push(n, v)),
        Value::Nil => Ok(()),
        other => Err(unexpected("HGETALL", other)),
    }
}

/// Whether an `HMGET` reply holds any value.
fn values_are_empty(reply: &Value) -> bool {
    match reply {
        Value::Array(items) => items.iter().all(|v| matches!(v, Value::Nil)),
        _ => true,
    }
}

/// Adds the present fields of an `HMGET` reply for `fields`.
fn push_fields(reply: &Value, fields: &[&str], out: &mut Record) -> OpResult {
    let Value::Array(items) = reply else {
        return Err(unexpected("HMGET", reply));
    };
    for (name, value) in fields.iter().zip(items) {
        match value {
            Value::Nil => {}
            v => out.push(
                name.as_bytes(),
                bytes_of(v).ok_or_else(|| unexpected("HMGET", reply))?,
            ),
        }
    }
    Ok(())
}

/// The record operations over one client's connection, written once for
/// both seams ([`Transport`]).
struct Records<'e, T> {
    link: T,
    options: &'e RedisOptions,
    index: Vec<u8>,
    /// The prefixed key of the current operation.
    key: Vec<u8>,
    update: Script,
}

impl<'e, T: Transport> Records<'e, T> {
    fn new(link: T, options: &'e RedisOptions) -> Self {
        Self {
            link,
            options,
            index: options.index_key(),
            key: Vec::new(),
            update: Script::new(UPDATE_IF_EXISTS),
        }
    }

    fn set_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(&self.options.prefix);
        self.key.extend_from_slice(key);
    }
}

super::async_records!(impl[T: Transport] Records<'_, T>, T::WAITS);

impl<T: Transport> Records<'_, T> {
    async fn read(&mut self, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> OpResult {
        self.set_key(key);
        match fields {
            None => {
                let mut c = cmd("HGETALL");
                c.arg(&self.key);
                let reply = self.link.query(&c).await?;
                if hash_is_empty(&reply) {
                    return Err(OpError::NotFound);
                }
                push_hash(&reply, out)
            }
            Some(fields) => {
                let mut c = cmd("HMGET");
                c.arg(&self.key).arg(fields);
                let reply = self.link.query(&c).await?;
                // A record without the asked fields is found; a missing one is not.
                if values_are_empty(&reply) {
                    let mut c = cmd("EXISTS");
                    c.arg(&self.key);
                    if converted::<i64>(self.link.query(&c).await?)? == 0 {
                        return Err(OpError::NotFound);
                    }
                }
                push_fields(&reply, fields, out)
            }
        }
    }

    async fn scan(&mut self, asked: ScanRequest<'_>, out: &mut ScanResults) -> OpResult {
        if asked.count == 0 {
            return Ok(());
        }
        let mut c = cmd("ZRANGEBYLEX");
        c.arg(&self.index)
            .arg([&b"["[..], asked.start_key].concat())
            .arg("+")
            .arg("LIMIT")
            .arg(0)
            .arg(asked.count);
        let members: Vec<Vec<u8>> = converted(self.link.query(&c).await?)?;
        if members.is_empty() {
            return Ok(());
        }
        let mut p = pipe();
        for m in &members {
            self.set_key(m);
            match asked.fields {
                None => p.cmd("HGETALL").arg(&self.key),
                Some(f) => p.cmd("HMGET").arg(&self.key).arg(f),
            };
        }
        let replies: Vec<Value> = converted(self.link.query_pipeline(&p).await?)?;
        for reply in &replies {
            // A record deleted between the two round trips is left out.
            match asked.fields {
                None if !hash_is_empty(reply) => push_hash(reply, out.next_slot())?,
                Some(f) if !values_are_empty(reply) => push_fields(reply, f, out.next_slot())?,
                _ => {}
            }
        }
        Ok(())
    }

    async fn update<'a>(&'a mut self, key: &'a [u8], values: &'a Record) -> OpResult {
        self.set_key(key);
        let mut call = self.update.key(&self.key);
        for (name, value) in values.fields() {
            call.arg(name).arg(value);
        }
        match converted::<i64>(self.link.invoke(&call).await?)? {
            0 => Err(OpError::NotFound),
            _ => Ok(()),
        }
    }

    async fn insert<'a>(&'a mut self, key: &'a [u8], values: &'a Record) -> OpResult {
        self.set_key(key);
        let mut p = pipe();
        p.atomic().cmd("HSET").arg(&self.key);
        for (name, value) in values.fields() {
            p.arg(name).arg(value);
        }
        p.ignore()
            .cmd("ZADD")
            .arg(&self.index)
            .arg(0)
            .arg(key)
            .ignore();
        self.link.query_pipeline(&p).await.map(|_| ())
    }

    /// Deleting a missing key is Ok (RocksDB's behaviour).
    async fn delete<'a>(&'a mut self, key: &'a [u8]) -> OpResult {
        self.set_key(key);
        let mut p = pipe();
        p.atomic()
            .cmd("DEL")
            .arg(&self.key)
            .ignore()
            .cmd("ZREM")
            .arg(&self.index)
            .arg(key)
            .ignore();
        self.link.query_pipeline(&p).await.map(|_| ())
    }
}

/// Raw keys and values for `kvperf bench`, as plain Redis strings.
pub struct RedisKvWorker<'e> {
    link: Link<'e>,
    options: &'e RedisOptions,
    key: Vec<u8>,
}

impl RedisKvWorker<'_> {
    fn set_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(&self.options.prefix);
        self.key.extend_from_slice(b"kv:");
        self.key.extend_from_slice(key);
    }
}

const NO_ORDER: &str = "Redis: the redis engine cannot iterate keys in order";

super::blocking_raw!(RedisKvWorker<'_>, unordered: NO_ORDER);

impl RedisKvWorker<'_> {
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError> {
        self.set_key(key);
        let key = &self.key;
        let value: Value = self.link.run(|con| cmd("GET").arg(key).query(con))?;
        match value {
            Value::Nil => Err(OpError::NotFound),
            v => bytes_of(&v)
                .map(<[u8]>::len)
                .ok_or_else(|| unexpected("GET", &v)),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult {
        self.set_key(key);
        let key = &self.key;
        self.link
            .run(|con| cmd("SET").arg(key).arg(value).query::<()>(con))
    }

    fn delete(&mut self, key: &[u8]) -> OpResult {
        self.set_key(key);
        let key = &self.key;
        self.link.run(|con| cmd("DEL").arg(key).query::<()>(con))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fake_listener;
    use crate::testing::refusal;
    use crate::testing::secret_checks::{assert_secret_hidden, props, secret_on_port_1, SECRET};

    #[test]
    fn info_persistence_gives_saves_in_progress_and_made() {
        let info = "# Persistence\r\nloading:0\r\ncurrent_save_keys_processed:1200\r\n\
                    current_save_keys_total:5000\r\nrdb_bgsave_in_progress:1\r\nrdb_saves:3\r\n\
                    aof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrites:0\r\n";
        let a = persistence_activity(info);
        assert_eq!(a.running.len(), 1);
        assert_eq!(a.running[0].kind, EventKind::BgSave);
        assert_eq!(a.running[0].detail, "1200 of 5000 keys");
        let counts: Vec<(EventKind, u64)> = a.tallies.iter().map(|t| (t.kind, t.count)).collect();
        assert_eq!(
            counts,
            vec![(EventKind::BgSave, 3), (EventKind::AofRewrite, 0)]
        );
        // Redis before 7.0 counts no saves: what runs is still seen.
        let old = persistence_activity("rdb_bgsave_in_progress:0\r\naof_rewrite_in_progress:1\r\n");
        assert_eq!(old.running[0].kind, EventKind::AofRewrite);
        assert!(old.tallies.is_empty());
    }

    #[test]
    fn the_password_is_never_shown() {
        let o = RedisOptions::from_properties(&secret_on_port_1("redis")).unwrap();
        let err = o.connect().err().expect("no server on port 1");
        assert_secret_hidden("redis", &o, o.password.as_deref(), &o.effective, err);
        assert_eq!(
            scrubbed(&format!("bad {SECRET}!"), Some(SECRET)),
            "bad (redacted)!"
        );
    }

    fn at(port: u16) -> RedisOptions {
        RedisOptions::from_properties(&props(&[("redis.port", &port.to_string())])).unwrap()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_listener_that_never_answers_fails_connecting_at_stalltimeout() {
        let _alone = fake_listener::sockets_alone();
        let (_listener, port) = fake_listener::silent();
        let o = RedisOptions::from_properties(&props(&[
            ("redis.port", &port.to_string()),
            ("stalltimeout", "1"),
        ]))
        .unwrap();
        let limit = Duration::from_secs(4);
        let started = std::time::Instant::now();
        let err = format!("{:#}", o.connect().err().expect("nothing answers"));
        assert!(started.elapsed() < limit, "took {:?}", started.elapsed());
        let said = format!("Redis at 127.0.0.1:{port} did not answer within 1 s while kvperf waited for a connection's first reply: it stopped answering, or what listens there is not Redis (stalltimeout=1)");
        assert_eq!(err, said);
        let started = std::time::Instant::now();
        let err = format!(
            "{:#}",
            runtime()
                .block_on(o.connect_async())
                .expect_err("nothing answers")
        );
        assert!(started.elapsed() < limit, "took {:?}", started.elapsed());
        assert_eq!(err, said);
    }

    #[test]
    fn an_http_server_is_named_as_not_speaking_redis_in_one_line() {
        let _alone = fake_listener::sockets_alone();
        let (port, _) = fake_listener::serving(fake_listener::http);
        let o = at(port);
        let said = format!("the server at 127.0.0.1:{port} does not speak the Redis protocol");
        let err = format!("{:#}", o.connect().err().expect("not Redis"));
        assert!(err.starts_with(&said) && !err.contains('\n'), "{err}");
        let err = format!(
            "{:#}",
            runtime()
                .block_on(o.connect_async())
                .expect_err("not Redis")
        );
        assert!(err.starts_with(&said) && !err.contains('\n'), "{err}");
    }

    /// Operations against a server that closes every connection, for a
    /// second: each fails, and reconnect attempts are spaced, not one per
    /// operation.
    #[test]
    fn reconnects_to_a_dead_server_back_off() {
        let _alone = fake_listener::sockets_alone();
        let (port, accepted) = fake_listener::serving(fake_listener::closing);
        let o = at(port);
        let ping = || cmd("PING");
        let mut link = Link {
            con: None,
            options: &o,
            backoff: Backoff::default(),
        };
        let (mut failed_ops, started) = (0, std::time::Instant::now());
        while started.elapsed() < Duration::from_millis(1500) {
            let c = ping();
            assert!(link.run(|con| c.query::<()>(con)).is_err());
            failed_ops += 1;
        }
        // At once, then 10, 20, ... 640 ms: 8 attempts in 1.5 s.
        let attempts = accepted.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            (5..=10).contains(&attempts),
            "{attempts} attempts in {failed_ops} operations"
        );
        let mut link = AsyncLink {
            con: None,
            options: &o,
            backoff: Backoff::default(),
        };
        let before = accepted.load(std::sync::atomic::Ordering::Relaxed);
        let rt = runtime();
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(1500) {
            assert!(rt.block_on(link.query(&ping())).is_err());
        }
        let attempts = accepted.load(std::sync::atomic::Ordering::Relaxed) - before;
        assert!((5..=10).contains(&attempts), "{attempts} async attempts");
    }

    #[test]
    fn options_win_over_the_environment_and_ports_are_checked() {
        let o = RedisOptions::from_properties(&props(&[("redis.host", "10.1.2.3")])).unwrap();
        assert_eq!(o.host, "10.1.2.3");
        assert!(!endpoint::is_loopback_name(&o.host));
        let too_high = props(&[("redis.port", "70000")]);
        let err = refusal(RedisOptions::from_properties(&too_high));
        assert!(err.contains("redis.port"), "{err}");
    }

    #[test]
    fn keys_carry_the_prefix_and_the_kv_pattern_is_escaped() {
        let o = RedisOptions::from_properties(&props(&[("redis.keyprefix", "a*b:")])).unwrap();
        assert_eq!(o.index_key(), b"a*b:_indices");
        assert_eq!(o.kv_pattern(), b"a\\*b:kv:*");
    }

    #[test]
    fn replies_become_records() {
        let reply = Value::Array(vec![
            Value::BulkString(b"field0".to_vec()),
            Value::BulkString(b"v0".to_vec()),
        ]);
        let mut r = Record::new();
        push_hash(&reply, &mut r).unwrap();
        assert_eq!(r.get(b"field0"), Some(&b"v0"[..]));
        let reply = Value::Array(vec![Value::Nil, Value::BulkString(b"v1".to_vec())]);
        let mut r = Record::new();
        push_fields(&reply, &["field0", "field1"], &mut r).unwrap();
        assert_eq!(r.len(), 1);
        assert!(values_are_empty(&Value::Array(vec![Value::Nil])));
        assert!(hash_is_empty(&Value::Array(vec![])));
    }
}
