//! What every server engine does alike with the address it is given: the
//! port an option names, whether a host is this machine, and the processes
//! of a local server (whose CPU and I/O a window counts).

use crate::error::InputError;

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
}
