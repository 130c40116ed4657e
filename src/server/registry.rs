//! The servers kvperf starts, one entry each: the only list of them.
//! `kvperf server`'s help, its checks of `--nodes` and `-p`, and the engine
//! files' `StoreKind::Server { server, .. }` all refer to [`SERVERS`].

use crate::error::{did_you_mean, InputError};

/// A server kvperf can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    pub name: &'static str,
    /// The engine that talks to it.
    pub engine: &'static str,
    /// What is installed and from where, for the help.
    pub about: &'static str,
    pub default_port: u16,
    /// Settings that are ports too: a second instance on one machine needs
    /// its own (tests give each a free port).
    pub port_settings: &'static [&'static str],
    /// The most nodes it runs as (on 127.0.0.1, 127.0.0.2, ...).
    pub max_nodes: u32,
    /// Seconds an action may take at most (an install builds or downloads).
    pub install_timeout_s: u64,
    /// Seconds a start may take, per node.
    pub start_timeout_s: u64,
    /// The signal that stops it cleanly (sent to each recorded process).
    pub stop_signal: i32,
    /// Whether a process still there after [`Server::stop_timeout_s`] gets
    /// SIGKILL (not PostgreSQL's postmaster: its backends and shared memory
    /// would stay behind).
    pub kill_stuck: bool,
    /// Seconds a clean stop may take.
    pub stop_timeout_s: u64,
    /// Its program (its script's `PROCESS`): argv[0]'s file name or the
    /// executable's, exactly, or a `java`'s main class. A pid a pid file
    /// names is its server only if it runs it.
    pub process: &'static str,
    /// What `-p KEY=VALUE` may set; the script reads `KVPERF_<KEY>`.
    pub settings: &'static [Setting],
    /// Its part of the start script (`scripts/NAME.sh`), run after
    /// `scripts/common.sh`.
    pub(super) script: &'static str,
}

/// A server setting: `kvperf server start NAME -p name=VALUE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    /// Its values and meaning, in one line.
    pub about: &'static str,
}

const fn setting(name: &'static str, about: &'static str) -> Setting {
    Setting { name, about }
}

pub const SERVERS: [Server; 4] = [
    Server {
        name: "redis",
        engine: "redis",
        about: "Redis, the Debian package redis-server",
        default_port: 6379,
        port_settings: &[],
        max_nodes: 1,
        install_timeout_s: 600,
        start_timeout_s: 60,
        stop_signal: libc::SIGTERM,
        kill_stuck: true,
        stop_timeout_s: 30,
        process: "redis-server",
        settings: &[setting(
            "persist",
            "1: append-only file, fsync every second; 0: no persistence (default)",
        )],
        script: include_str!("scripts/redis.sh"),
    },
    Server {
        name: "postgres",
        engine: "postgres",
        about: "PostgreSQL, the Debian package postgresql",
        default_port: 5432,
        port_settings: &[],
        max_nodes: 1,
        install_timeout_s: 900,
        start_timeout_s: 120,
        stop_signal: libc::SIGINT,
        kill_stuck: false,
        stop_timeout_s: 60,
        process: "postgres",
        settings: &[
            setting("pg_shared_buffers", "shared_buffers, e.g. 1GB (default 128MB)"),
            setting(
                "pg_sync_commit",
                "synchronous_commit: on (default), off, local, remote_write, remote_apply",
            ),
            setting("pg_fsync", "fsync: on (default) or off"),
            setting("pg_max_connections", "max_connections (default 100)"),
            setting(
                "pg_extra_conf",
                "more postgresql.conf lines, newline separated, applied at each start",
            ),
        ],
        script: include_str!("scripts/postgres.sh"),
    },
    Server {
        name: "cassandra",
        engine: "cassandra",
        about: "Apache Cassandra 5.0, its jars from Maven Central, on Java 11 or 17",
        default_port: 9042,
        port_settings: &["cassandra_storage_port"],
        // Seed 004's four-node ring fits; each node is a JVM (about 1.5 GiB).
        max_nodes: 9,
        install_timeout_s: 900,
        start_timeout_s: 900,
        stop_signal: libc::SIGTERM,
        kill_stuck: true,
        stop_timeout_s: 60,
        process: "org.apache.cassandra.service.CassandraDaemon",
        settings: &[
            setting("cassandra_heap", "JVM heap per node, e.g. 2G (default 1G)"),
            setting(
                "cassandra_storage_port",
                "inter-node port of every node (default 7000)",
            ),
            setting(
                "cassandra_version",
                "the cassandra-all version fetched (default 5.0.9)",
            ),
        ],
        script: include_str!("scripts/cassandra.sh"),
    },
    Server {
        name: "ferretdb",
        engine: "mongodb",
        about: "FerretDB v1.24.0 (MongoDB wire protocol), built from the Go module proxy",
        default_port: 27017,
        port_settings: &[],
        max_nodes: 1,
        install_timeout_s: 1200,
        start_timeout_s: 120,
        stop_signal: libc::SIGTERM,
        kill_stuck: true,
        stop_timeout_s: 30,
        process: "ferretdb",
        settings: &[
            setting("ferretdb_handler", "sqlite (default) or postgresql"),
            setting(
                "ferretdb_pg_url",
                "the PostgreSQL URL of the postgresql handler (passed in the environment)",
            ),
            setting(
                "ferretdb_pg_id_index",
                "none (default) or gin: a GIN index on each collection's _id, so lookups by key use it",
            ),
            setting(
                "ferretdb_debug_port",
                "port of the debug/metrics HTTP listener (default: none)",
            ),
        ],
        script: include_str!("scripts/ferretdb.sh"),
    },
];

pub fn find(name: &str) -> Result<&'static Server, InputError> {
    SERVERS.iter().find(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = SERVERS.iter().map(|s| s.name).collect();
        let hint = did_you_mean(name, names.iter().copied())
            .map(|n| format!(" (did you mean '{n}'?)"))
            .unwrap_or_default();
        InputError::Invalid(format!(
            "unknown server '{name}'{hint}; kvperf starts: {}",
            names.join(", ")
        ))
    })
}

impl Server {
    /// `nodes` is within what this server runs as.
    pub fn check_nodes(&self, nodes: u32) -> Result<(), InputError> {
        if nodes <= self.max_nodes {
            return Ok(());
        }
        let clusters: Vec<String> = SERVERS
            .iter()
            .filter(|s| s.max_nodes > 1)
            .map(|s| format!("{} (up to {} nodes)", s.name, s.max_nodes))
            .collect();
        Err(InputError::Invalid(if self.max_nodes > 1 {
            format!(
                "--nodes {nodes}: {} runs up to {} nodes here",
                self.name, self.max_nodes
            )
        } else {
            format!(
                "--nodes {nodes}: {} runs as one node here; as a cluster: {}",
                self.name,
                clusters.join(", ")
            )
        }))
    }

    /// The script's variable for setting `key` (`KVPERF_PG_FSYNC`), if the
    /// server has that setting.
    pub fn setting_var(&self, key: &str) -> Result<String, InputError> {
        if self.settings.iter().any(|s| s.name == key) {
            return Ok(format!("KVPERF_{}", key.to_uppercase()));
        }
        let known = self.settings.iter().map(|s| s.name);
        let hint = did_you_mean(key, known.clone())
            .map(|n| format!(" (did you mean '{n}'?)"))
            .unwrap_or_default();
        Err(InputError::Invalid(format!(
            "unknown {} setting '{key}'{hint}; known: {}",
            self.name,
            known.collect::<Vec<_>>().join(", ")
        )))
    }

    /// The whole script: the shared part, this server's part, the dispatch.
    pub(super) fn script_text(&self) -> String {
        format!(
            "{}{}\ndispatch \"$@\"\n",
            include_str!("scripts/common.sh"),
            self.script
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_servers_get_a_hint() {
        let err = find("postgress").unwrap_err().to_string();
        assert!(err.contains("did you mean 'postgres'"), "{err}");
        assert_eq!(find("ferretdb").unwrap().engine, "mongodb");
    }

    #[test]
    fn unknown_settings_name_the_known_ones() {
        let pg = find("postgres").unwrap();
        assert_eq!(pg.setting_var("pg_fsync").unwrap(), "KVPERF_PG_FSYNC");
        let err = pg.setting_var("pg_fsyn").unwrap_err().to_string();
        assert!(err.contains("did you mean 'pg_fsync'"), "{err}");
        assert!(
            err.contains("known: pg_shared_buffers, pg_sync_commit"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn node_counts_follow_the_registry() {
        let cassandra = find("cassandra").unwrap();
        assert!(cassandra.check_nodes(4).is_ok());
        let err = cassandra.check_nodes(10).unwrap_err().to_string();
        assert_eq!(err, "--nodes 10: cassandra runs up to 9 nodes here");
        let err = find("redis")
            .unwrap()
            .check_nodes(2)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--nodes 2: redis runs as one node here; as a cluster: cassandra (up to 9 nodes)"
        );
    }

    /// The registry is the one list of servers: each named once, each
    /// setting read by its script (that engines and servers name each
    /// other: src/engine/server_names.rs, as engine/ stands above server/).
    #[test]
    fn each_server_is_named_once_and_its_script_reads_its_settings() {
        for (i, s) in SERVERS.iter().enumerate() {
            assert!(
                SERVERS[..i].iter().all(|o| o.name != s.name),
                "{} twice",
                s.name
            );
            assert!(s.max_nodes >= 1, "{}", s.name);
            // The program its script checks a pid for.
            assert!(
                s.script.contains(&format!("PROCESS={}\n", s.process))
                    || s.script
                        .contains(&format!("is_program \"$p\" {} ", s.process)),
                "{}: {}",
                s.name,
                s.process
            );
            for port in s.port_settings {
                assert!(s.setting_var(port).is_ok(), "{}: {port}", s.name);
            }
            for (j, setting) in s.settings.iter().enumerate() {
                assert!(s.settings[..j].iter().all(|o| o.name != setting.name));
                let var = s.setting_var(setting.name).unwrap();
                assert!(s.script.contains(&var), "{} never reads {var}", s.name);
            }
        }
    }
}
