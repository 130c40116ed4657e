//! What every server engine does alike with the address it is given: the
//! option rows that declare it (and the login and connect timeout), the
//! port an option names, the address a message names, whether a host is
//! this machine, and the processes of a local server (whose CPU and I/O a
//! window counts).

use std::time::Duration;

use super::options::OptionValues;
use crate::error::InputError;

/// An option row that server engines declare alike, its name, default and
/// common words written once:
/// - `server_option!(host, HELP)`: the server's address, 127.0.0.1 (where
///   `kvperf server start` listens);
/// - `server_option!(port, DEFAULT, HELP)`;
/// - `server_option!(password, WHAT, ENV)`: `WHAT (else env
///   KVPERF_ENV_PASSWORD); never recorded`;
/// - `server_option!(username, ENV, WHO)` and `server_option!(password,
///   ENV)`: a driver's login, each else its environment variable
///   `KVPERF_ENV_USERNAME` and `KVPERF_ENV_PASSWORD` ([`login`]);
/// - `server_option!(connect_timeout_s, HELP)`: 10 s ([`connect_timeout`]);
/// - `server_option!(runtime_threads, ALSO)`: an async driver's own runtime,
///   2 workers, used with clients=threads `ALSO`
///   (`super::driver_runtime::runtime_threads`).
#[allow(unused_macros)] // each row serves some of the server engines
macro_rules! server_option {
    (host, $help:literal) => {
        $crate::engine::EngineOption { name: "host", default: "127.0.0.1", help: $help }
    };
    (port, $default:literal, $help:literal) => {
        $crate::engine::EngineOption { name: "port", default: $default, help: $help }
    };
    (password, $what:literal, $env:literal) => {
        $crate::engine::EngineOption {
            name: "password",
            default: "",
            help: concat!($what, " (else env KVPERF_", $env, "_PASSWORD); never recorded"),
        }
    };
    (username, $env:literal, $who:literal) => {
        $crate::engine::EngineOption {
            name: "username",
            default: "",
            help: concat!($who, "; default: environment KVPERF_", $env, "_USERNAME"),
        }
    };
    (password, $env:literal) => {
        $crate::engine::EngineOption {
            name: "password",
            default: "",
            help: concat!("its password; default: environment KVPERF_", $env, "_PASSWORD (never recorded)"),
        }
    };
    (adopt) => {
        $crate::engine::EngineOption {
            name: "adopt",
            default: "false",
            help: "true: a load, run or replay writes into a store of this name kvperf did not make and mark (one YCSB or you loaded), leaving it unmarked; --fresh still refuses it. false: one line, exit 2",
        }
    };
    (connect_timeout_s, $help:literal) => {
        $crate::engine::EngineOption { name: "connect_timeout_s", default: "10", help: $help }
    };
    (runtime_threads, $also:literal) => {
        $crate::engine::EngineOption {
            name: "runtime_threads",
            default: "2",
            help: concat!(
                "worker threads of the engine's own tokio runtime (the driver's I/O) with clients=threads",
                $also,
                "; with clients=tasks the driver runs on the runner's runtime (runtimethreads)"
            ),
        }
    };
}
#[allow(unused_imports)]
pub(crate) use server_option;

/// The environment variable that stands in for an option not given:
/// `KVPERF_<ENGINE>_<OPTION>` (`KVPERF_REDIS_HOST`, `KVPERF_CASSANDRA_USERNAME`).
pub fn environment_variable(v: &OptionValues, option: &str) -> String {
    format!(
        "KVPERF_{}_{}",
        v.engine().to_ascii_uppercase(),
        option.to_ascii_uppercase()
    )
}

/// The text of the environment variable of `option`, when set and not empty.
fn from_environment(v: &OptionValues, option: &str) -> Option<String> {
    std::env::var(environment_variable(v, option))
        .ok()
        .filter(|s| !s.is_empty())
}

/// Option `name` if given (even as ""), else its environment variable
/// ([`environment_variable`]) if set, else the declared default.
pub fn given_or_env(v: &OptionValues, name: &str) -> String {
    if v.is_given(name) {
        return v.text(name);
    }
    from_environment(v, name).unwrap_or_else(|| v.text(name))
}

/// Option `name` unless empty, else its environment variable, else none.
fn option_or_env(v: &OptionValues, name: &str) -> Option<String> {
    Some(v.text(name))
        .filter(|given| !given.is_empty())
        .or_else(|| from_environment(v, name))
}

/// The user and password of a driver's login (`server_option!(username,
/// ..)` and `server_option!(password, ENV)`), each else its environment
/// variable, else none.
pub fn login(v: &OptionValues) -> (Option<String>, Option<String>) {
    (option_or_env(v, "username"), option_or_env(v, "password"))
}

/// The error of a password given without a user to log in as.
pub fn password_without_username(v: &OptionValues) -> InputError {
    InputError::property(
        &v.key("password"),
        format!(
            "is set but no username is ({} or {})",
            v.key("username"),
            environment_variable(v, "username")
        ),
    )
}

/// How long a driver waits to connect (`server_option!(connect_timeout_s,
/// ..)`): whole seconds, 1 to 3600.
pub fn connect_timeout(v: &OptionValues) -> Result<Duration, InputError> {
    Ok(Duration::from_secs(
        v.u64_at_most("connect_timeout_s", 3600)?.max(1),
    ))
}

/// The start of a server engine's options' `Debug`: where the server is,
/// and whether a password is set, never the password itself.
pub fn debug_server<'a, 'b>(
    f: &'a mut std::fmt::Formatter<'b>,
    name: &str,
    host: &str,
    port: u16,
    password: &Option<String>,
) -> std::fmt::DebugStruct<'a, 'b> {
    let mut d = f.debug_struct(name);
    d.field("host", &host)
        .field("port", &port)
        .field("password", &password.as_ref().map(|_| "(redacted)"));
    d
}

/// `host:port` as messages name a server (an IPv6 address in brackets).
pub fn socket_address(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A TCP port, 1 to 65535, from the number option `option` holds.
pub fn tcp_port(option: &str, port: u64) -> Result<u16, InputError> {
    u16::try_from(port)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| InputError::property(option, format!("{port} is not a TCP port")))
}

/// A TCP port from an option's text (or the environment variable that
/// stands in for it), named as given when it is none.
pub fn tcp_port_text(option: &str, text: &str) -> Result<u16, InputError> {
    text.trim()
        .parse::<u16>()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| InputError::property(option, format!("'{text}' is not a TCP port")))
}

/// Whether `host` is spelled as the loopback interface (`localhost`,
/// `::1`, `127.*`), without asking the network: Redis and PostgreSQL count
/// a server's processes only there.
pub fn is_loopback_name(host: &str) -> bool {
    matches!(host, "localhost" | "::1") || host.starts_with("127.")
}

/// Whether `host` is an address of this machine (a bind succeeds only on
/// local addresses; all of 127.0.0.0/8 is local): Cassandra's nodes and
/// MongoDB's hosts are counted as local so.
pub fn is_this_machine(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback() || std::net::UdpSocket::bind((ip, 0)).is_ok(),
        Err(_) => false,
    }
}

/// The processes listening on `port` when `host` is spelled as the
/// loopback interface ([`is_loopback_name`]); none for a remote server.
pub fn loopback_listeners(host: &str, port: u16) -> Vec<u32> {
    if is_loopback_name(host) {
        crate::host::processes::listeners_on(port)
    } else {
        Vec::new()
    }
}

/// Whether `ENGINE.adopt` opts into writing into a store kvperf did not
/// make (see [`server_option!`]'s `adopt` row).
pub fn adopts(v: &OptionValues) -> Result<bool, InputError> {
    v.bool("adopt")
}

/// The refusal of a plain load, run or replay whose store is there but not
/// kvperf's: `store` says what and where (it ends before ", so"), `other`
/// the option that names another store. The same words on every server
/// engine.
pub fn not_kvperfs_store(store: &str, engine: &str, other: &str) -> InputError {
    InputError::Invalid(format!(
        "{store} without kvperf's mark (kvperf did not make it), so kvperf writes nothing into it: set another -p {other}, or -p {engine}.adopt=true to use it as it is (a load overwrites its records of the same keys)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_local_addresses_are_local() {
        assert!(is_this_machine("127.0.0.1"));
        assert!(is_this_machine("127.0.0.3"));
        assert!(is_this_machine("localhost"));
        assert!(!is_this_machine("192.0.2.1"));
        assert!(!is_this_machine("db.example.com"));
        assert!(is_loopback_name("127.0.0.2") && is_loopback_name("::1"));
        assert!(!is_loopback_name("10.1.2.3"));
    }

    #[test]
    fn ports_are_1_to_65535() {
        assert_eq!(tcp_port("x.port", 6379).unwrap(), 6379);
        let err = tcp_port("x.port", 70000).unwrap_err().to_string();
        assert!(err.contains("70000 is not a TCP port"), "{err}");
        assert!(tcp_port("x.port", 0).is_err());
        assert_eq!(tcp_port_text("x.port", " 5432 ").unwrap(), 5432);
        let err = tcp_port_text("x.port", "abc").unwrap_err().to_string();
        assert!(err.contains("'abc' is not a TCP port"), "{err}");
    }

    #[test]
    fn addresses_bracket_ipv6_hosts() {
        assert_eq!(socket_address("127.0.0.1", 5432), "127.0.0.1:5432");
        assert_eq!(socket_address("::1", 6379), "[::1]:6379");
    }
}
