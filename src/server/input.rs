//! What a server start is given, checked before any script runs: the
//! server directory's path and the settings' values. The scripts pass
//! both into URLs, configuration files and command strings, where a
//! character of them can be syntax: `--dir 'u/#x'` made FerretDB's SQLite
//! URL `file:u/#x/sqlite/` name the user's `u/`, and a setting's line of
//! its own in PostgreSQL's kvperf.conf put its pid file on a user's file.

use std::path::{Path, PathBuf};

use super::Server;
use crate::error::InputError;

/// Characters of a server directory's absolute path that a server reads
/// as syntax where kvperf passes the path: FerretDB's SQLite URL and
/// Cassandra's `file://` URL (`#`, `?`, `%`), PostgreSQL's
/// unix_socket_directories (a list: `,`; a quoted string: `'`, `\`) and
/// the shell command pg_ctl and initdb run it in (`"`, `$`, `` ` ``, `\`),
/// Cassandra's YAML (`:`, `#`), logback's XML (`<`, `&`) and Java's class
/// path (`:`). Whitespace and control characters too (any of them ends a
/// word or a line in one of these).
const SYNTAX: &str = "#?%,:'\"\\$`&<";

/// The server directory's path holds no character that a server, or a
/// file kvperf writes for it, reads as syntax ([`SYNTAX`]): checked as
/// given and made absolute both ways the scripts' `cd DIR && pwd` may (the
/// process's directory, and `$PWD` when it names that directory).
pub fn check_dir(dir: &Path) -> Result<(), InputError> {
    let mut forms: Vec<PathBuf> = vec![dir.to_path_buf()];
    if dir.is_relative() {
        forms.extend(std::env::current_dir().ok().map(|cwd| cwd.join(dir)));
        // bash takes $PWD as its directory's name when it names the same
        // directory (a link's name, say), else the one getcwd gives.
        let same = |pwd: &Path| {
            let (Ok(a), Ok(b)) = (std::fs::metadata(pwd), std::fs::metadata(".")) else {
                return false;
            };
            use std::os::unix::fs::MetadataExt;
            (a.dev(), a.ino()) == (b.dev(), b.ino())
        };
        forms.extend(
            std::env::var_os("PWD")
                .map(PathBuf::from)
                .filter(|pwd| pwd.is_absolute() && same(pwd))
                .map(|pwd| pwd.join(dir)),
        );
    }
    // The path as the kernel reads it (links and `..` resolved through the
    // longest part that exists), which the scripts `cd -P` to: `lnk/../x`
    // read as text named another directory than the kernel's, and a link's
    // target may hold the syntax its name does not (pass 15).
    if let Ok(absolute) = std::path::absolute(dir) {
        let physical = absolute.ancestors().find_map(|a| {
            let real = std::fs::canonicalize(a).ok()?;
            Some(real.join(absolute.strip_prefix(a).ok()?))
        });
        forms.extend(physical);
    }
    for form in &forms {
        let refuse = |what: String| {
            InputError::Invalid(format!(
                "--dir '{}': its path '{}' holds {what}, which a server reads as syntax where kvperf passes the path (a URL, a configuration file, a command), and then writes outside --dir; give a --dir without it",
                dir.display(),
                form.display()
            ))
        };
        let Some(text) = form.to_str() else {
            return Err(refuse("bytes that are not UTF-8".into()));
        };
        if let Some(c) = text
            .chars()
            .find(|&c| SYNTAX.contains(c) || c.is_whitespace() || c.is_control())
        {
            return Err(refuse(format!("{c:?}")));
        }
    }
    Ok(())
}

/// Keys of postgresql.conf that put PostgreSQL's files outside --dir, or
/// have it run or load a program kvperf did not install, or take what
/// kvperf sets (its address and port): each refused in pg_extra_conf, as
/// are `include`, `include_if_exists` and `include_dir` (a file's
/// settings, unchecked).
const PG_OUTSIDE: [&str; 9] = [
    "data_directory",
    "config_file",
    "hba_file",
    "ident_file",
    "external_pid_file",
    "unix_socket_directories",
    "log_directory",
    "log_filename",
    "stats_temp_directory",
];
const PG_PROGRAMS: [&str; 11] = [
    // A library PostgreSQL loads for JIT, and a command for a key's
    // passphrase (pass 15: `jit_provider='../../u/evil'` loaded a user's
    // library into the server kvperf started).
    "jit_provider",
    "ssl_passphrase_command",
    "archive_command",
    "archive_library",
    "restore_command",
    "archive_cleanup_command",
    "recovery_end_command",
    "shared_preload_libraries",
    "local_preload_libraries",
    "session_preload_libraries",
    "dynamic_library_path",
];
const PG_KVPERFS: [&str; 2] = ["listen_addresses", "port"];

/// Settings whose script takes one of a few words (it refused the others
/// only once the start had begun: exit 3, not 2).
const CHOICES: [(&str, &[&str]); 3] = [
    ("persist", &["0", "1"]),
    ("ferretdb_handler", &["sqlite", "postgresql"]),
    ("ferretdb_pg_id_index", &["none", "gin"]),
];

/// A setting's value is one the server's script can pass as it is: one
/// line (each but pg_extra_conf lands on a line of a file, or is a word
/// of a command); a PostgreSQL setting kvperf quotes has no quote or
/// backslash; pg_extra_conf names no key of [`PG_OUTSIDE`],
/// [`PG_PROGRAMS`] or [`PG_KVPERFS`], nor includes a file; Cassandra's version is a plain
/// version (it names a directory in the cache).
pub fn check_setting(server: &Server, key: &str, value: &str) -> Result<(), InputError> {
    let refuse = |why: String| InputError::Invalid(format!("-p {key}: {why}"));
    match (server.name, key) {
        ("postgres", "pg_extra_conf") => return pg_extra_conf(value).map_err(refuse),
        ("ferretdb", "ferretdb_pg_url") => return pg_url(value).map_err(refuse),
        _ => {}
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(refuse(format!(
            "the value holds {c:?}; it is one line of a file or one word of a command: give it on one line"
        )));
    }
    if server.name == "postgres" {
        if let Some(c) = value.chars().find(|c| matches!(c, '\'' | '\\')) {
            return Err(refuse(format!(
                "the value holds {c:?}, which ends or escapes its quoted string in PostgreSQL's configuration; give other settings in pg_extra_conf"
            )));
        }
    }
    if let Some((_, choices)) = CHOICES.iter().find(|(name, _)| *name == key) {
        if !choices.contains(&value) {
            return Err(refuse(format!(
                "'{value}' is not one of {}",
                choices.join(", ")
            )));
        }
    }
    if key.ends_with("_port") && !value.parse::<u16>().is_ok_and(|p| p > 0) {
        return Err(refuse(format!("'{value}' is not a port (1 to 65535)")));
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    if key == "cassandra_version" && (!value.chars().all(plain) || value.contains("..")) {
        return Err(refuse(format!(
            "'{value}' is not a version (letters, digits, '.', '-', '_'); it names kvperf's install directory"
        )));
    }
    Ok(())
}

/// `ferretdb_pg_url` is a URL FerretDB reads as kvperf's script does: a
/// `postgres://` or `postgresql://` URL that Go's `url.Parse` takes, its
/// host after the userinfo's last `@`. Anything else was shown whole with
/// its password: libpq's `host=h password=PW` on stderr (and to `ps`, in
/// the script's probe of its host), a raw `%` or a space in FerretDB's log
/// (Go's parse error quotes the URL). The reason never quotes the value.
fn pg_url(url: &str) -> Result<(), String> {
    let rest = ["postgres://", "postgresql://"]
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
        .ok_or("not a postgres:// or postgresql:// URL: FerretDB takes a URL (postgres://USER@HOST:PORT/DATABASE, a password after USER and ':'), not libpq's key=value form")?;
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(
            "the URL holds white space or a control character: percent-escape it (a space is %20)"
                .into(),
        );
    }
    let hex = |b: Option<&u8>| b.is_some_and(u8::is_ascii_hexdigit);
    let bytes = url.as_bytes();
    if (0..bytes.len())
        .any(|i| bytes[i] == b'%' && !(hex(bytes.get(i + 1)) && hex(bytes.get(i + 2))))
    {
        return Err(
            "the URL holds a '%' not followed by two hex digits: write a '%' as %25".into(),
        );
    }
    // Go's authority ends at the first `/`, `?` or `#`; the script's host
    // follows the last `@` of all.
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if rest[authority.len()..].contains('@') {
        return Err("the user or password holds a '/', '?' or '#' (or the path an '@'): write them %2F, %3F, %23, %40".into());
    }
    let (userinfo, host) = authority.rsplit_once('@').unwrap_or(("", authority));
    // Go's validUserinfo.
    let in_userinfo = |c: char| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c);
    if !userinfo.chars().all(in_userinfo) {
        return Err("the user or password holds a character a URL's userinfo cannot hold as it is: percent-escape it".into());
    }
    let in_host = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:[]%".contains(c);
    let port = match host.rsplit_once(']') {
        Some((_, after)) => after.strip_prefix(':').unwrap_or(after),
        None => host.rsplit_once(':').map_or("", |(_, p)| p),
    };
    if !host.chars().all(in_host) || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(
            "the host is not HOST or HOST:PORT (a name, an address, [IPv6]; PORT in digits)".into(),
        );
    }
    Ok(())
}

/// The first line of postgresql.conf text whose key kvperf refuses.
fn pg_extra_conf(text: &str) -> Result<(), String> {
    // PostgreSQL's lexer ends a line at '\n' only; '\r' too here, to be sure.
    for line in text.split(['\n', '\r']) {
        let key: String = line
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
            .collect::<String>()
            .to_ascii_lowercase();
        let why = if PG_OUTSIDE.contains(&key.as_str()) {
            "puts PostgreSQL's files outside --dir, into a place kvperf did not make; kvperf keeps the whole server in --dir, the directory it marks"
        } else if key.starts_with("include") {
            "reads settings from a file kvperf does not check (one may put PostgreSQL's files outside --dir)"
        } else if PG_PROGRAMS.contains(&key.as_str()) {
            "has PostgreSQL run or load a program kvperf did not install, which may write anywhere"
        } else if PG_KVPERFS.contains(&key.as_str()) {
            "is kvperf's own (the server listens on 127.0.0.1 and --port only)"
        } else {
            continue;
        };
        return Err(format!("'{key}' {why}: leave {key} out"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_with_syntax_in_its_path_is_refused() {
        for dir in [
            "/srv/u/#x",
            "/srv/w/?x",
            "/srv/a%2Fb",
            "/srv/u,x",
            "/srv/a:b",
            "/srv/a b",
            "/srv/it's",
            "/srv/a\"b",
            "/srv/a\\b",
            "/srv/$(id)",
            "/srv/a`b",
            "/srv/a&b",
            "/srv/a<b",
            "/srv/a\nb",
            "/srv/a\tb",
        ] {
            let err = check_dir(Path::new(dir)).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--dir '{dir}'")), "{err}");
            assert!(!err.contains("\n'"), "{err}");
        }
        for dir in ["/srv/kvperf/postgres-1", "/srv/a_b.c+d=e@f", "/srv/é"] {
            assert!(check_dir(Path::new(dir)).is_ok(), "{dir}");
        }
    }

    #[test]
    fn a_relative_directory_is_judged_where_it_lands() {
        let err = check_dir(Path::new("u,x")).unwrap_err().to_string();
        assert!(err.contains("','"), "{err}");
    }

    #[test]
    fn pg_extra_conf_keys_that_write_outside_are_refused_in_every_spelling() {
        let pg = super::super::find("postgres").unwrap();
        for text in [
            "external_pid_file='/u/x'",
            "  EXTERNAL_PID_FILE = '/u/x'",
            "work_mem=4MB\nexternal_pid_file '/u/x'",
            "work_mem=4MB\rlog_directory='/u'",
            "log_filename='/u/notes.txt'",
            "data_directory='/u'",
            "hba_file='/u/h'",
            "ident_file='/u/i'",
            "config_file='/u/c'",
            "unix_socket_directories='/u'",
            "stats_temp_directory='/u'",
            "include '/u/more.conf'",
            "include_if_exists='/u/more.conf'",
            "include_dir='/u'",
            "archive_command='cp %p /u/%f'",
            "shared_preload_libraries='/u/x.so'",
            "jit_provider='../../u/evil'",
            "ssl_passphrase_command='echo x'",
            "listen_addresses='*'",
            "port=5433",
        ] {
            let err = check_setting(pg, "pg_extra_conf", text)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("-p pg_extra_conf: '"), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
        for text in [
            "work_mem=4MB\n# external_pid_file='/u/x'\nlogging_collector=on",
            "wal_level=minimal\nmax_wal_senders=0",
            "",
        ] {
            assert!(check_setting(pg, "pg_extra_conf", text).is_ok(), "{text}");
        }
    }

    #[test]
    fn a_setting_on_a_line_of_its_own_cannot_add_a_line() {
        let pg = super::super::find("postgres").unwrap();
        let cassandra = super::super::find("cassandra").unwrap();
        for (server, key, value) in [
            (pg, "pg_shared_buffers", "1GB'\nexternal_pid_file='/u/x"),
            (pg, "pg_max_connections", "100\nexternal_pid_file='/u/x'"),
            (pg, "pg_sync_commit", "off' external_pid_file='/u/x"),
            (pg, "pg_fsync", "o\\'ff"),
            (
                cassandra,
                "cassandra_storage_port",
                "7000\ncommitlog_directory: /u",
            ),
            (cassandra, "cassandra_version", "5.0.9/../../../u"),
        ] {
            let err = check_setting(server, key, value).unwrap_err().to_string();
            assert!(err.starts_with(&format!("-p {key}: ")), "{err}");
        }
        let redis = super::super::find("redis").unwrap();
        let ferretdb = super::super::find("ferretdb").unwrap();
        for (server, key, value) in [
            (redis, "persist", "2"),
            (ferretdb, "ferretdb_handler", "mysql"),
            (ferretdb, "ferretdb_pg_id_index", "btree"),
            (ferretdb, "ferretdb_debug_port", "x"),
            (cassandra, "cassandra_storage_port", "0"),
        ] {
            assert!(check_setting(server, key, value).is_err(), "{key}={value}");
        }
        assert!(check_setting(redis, "persist", "1").is_ok());
        assert!(check_setting(ferretdb, "ferretdb_debug_port", "8088").is_ok());
        assert!(check_setting(pg, "pg_shared_buffers", "1GB").is_ok());
        assert!(check_setting(cassandra, "cassandra_version", "5.0.9").is_ok());
    }

    /// Pass 15: libpq's key=value form died in the script with the whole
    /// string on stderr (`password = PW` unscrubbed) and in a probe's
    /// arguments; a raw `%` had FerretDB log the URL, password and all.
    /// Each is refused with a reason that never quotes the value.
    #[test]
    fn a_pg_url_ferretdb_would_not_read_as_kvperf_does_is_refused_unquoted() {
        let ferretdb = super::super::find("ferretdb").unwrap();
        for url in [
            "host=127.0.0.1 port=5432 user=u password=PW dbname=d",
            "host=127.0.0.1 user=u password = PW",
            "password=PW",
            "PW",
            "mysql://u:PW@h/d",
            "POSTGRES://u:PW@h/d",
            "postgres://u:PW%zz@h/d",
            "postgres://u:PW%@h/d",
            "postgres://u:PW%4@h/d",
            "postgres://u:PW@h/d%g0",
            "postgres://u:PW x@h/d",
            "postgres://u:PW\t@h/d",
            "postgres://u:PW/x@h/d",
            "postgres://u:PW?x@h/d",
            "postgres://u:PW#x@h/d",
            "postgres://u:PW\"x@h/d",
            "postgres://u:PW<x@h/d",
            "postgres://u:PW@h:5x/d",
            "postgres://u:PW@h:/d x",
            "postgres://u:PW@[::1]x/d",
            "postgres://u:PW@h^/d",
        ] {
            let err = check_setting(ferretdb, "ferretdb_pg_url", url)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("-p ferretdb_pg_url: "), "{err}");
            assert!(!err.contains("PW") && !err.contains('\n'), "{url}: {err}");
        }
        for url in [
            "postgres://postgres@127.0.0.1:5432/kvperf",
            "postgresql://kv:p%40ss%2Fw%3Ard%25@127.0.0.1:5432/kvperf?pool_max_conns=4",
            "postgres://kv:p@ss:w!$&'()*+,;=~@localhost/kvperf",
            "postgres://kv@[::1]:5432/kvperf",
            "postgres://kv@h1:5432,h2:5433/kvperf",
            "postgres:///kvperf",
        ] {
            assert!(
                check_setting(ferretdb, "ferretdb_pg_url", url).is_ok(),
                "{url}"
            );
        }
    }
}
