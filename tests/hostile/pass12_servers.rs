//! The twelfth hostile pass, servers: pass 11's open list for them
//! (docs/reliability.md, "Pass 12: servers"). Each case failed on main of
//! 2026-11-29 (990db44).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::pass10_servers::{kvperf_with, status_and_stop_leave_alone, wait_for, Leftovers};
use crate::common;

/// Writes an executable stand-in for a tool at `path`.
pub(super) fn stand_in(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `PATH` with `bin` first.
pub(super) fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Maven and Go stand-ins: the jars the Cassandra install checks for, and
/// a FerretDB that knows only its version (no download, no build).
fn install_tools(bin: &Path) {
    stand_in(
        &bin.join("mvn"),
        "#!/bin/sh\nfor a in \"$@\"; do case $a in -DoutputDirectory=*) d=${a#*=};; esac; done\n\
         mkdir -p \"$d\" && : > \"$d/cassandra-all-5.0.9.jar\" && : > \"$d/jamm-0.4.0.jar\"\n",
    );
    stand_in(
        &bin.join("go"),
        "#!/bin/sh\nmkdir -p vendor/github.com/FerretDB/FerretDB/build/version\n\
         [ \"$1\" = build ] || exit 0\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n\
         printf '#!/bin/sh\\n[ \"$1\" = --version ] && echo \"version: v1.24.0\"\\n' > \"$out\"\n\
         chmod +x \"$out\"\n",
    );
}

/// What is at `path` now, to tell that kvperf left it as it was: its kind,
/// its link's target, and each file's text below it.
pub(super) fn snapshot(path: &Path) -> Vec<String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return vec!["absent".into()];
    };
    let kind = meta.file_type();
    let mut seen = vec![format!(
        "{kind:?} {}",
        meta.len() * u64::from(kind.is_file())
    )];
    if kind.is_symlink() {
        seen.push(format!("{:?}", std::fs::read_link(path).unwrap()));
    } else if kind.is_file() {
        seen.push(std::fs::read_to_string(path).unwrap_or_default());
    } else if kind.is_dir() {
        let mut names: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for name in names {
            seen.push(name.display().to_string());
            seen.extend(snapshot(&name));
        }
    }
    seen
}

/// The server cache's install directory was checked by the names it may
/// hold, not inside them: `rm -rf` took a user's `lib/my-notes.txt` with an
/// unfinished `cassandra-5.0.9/`, and a user's file or directory at
/// FerretDB's `bin/ferretdb.tmp` was replaced (a directory there got the
/// binary moved into it, then was renamed to `bin/ferretdb`). kvperf now
/// installs into a directory it makes and renames it into place whole:
/// whatever is at an install's path and is no finished install is refused
/// in one line, in every form (directory, file, link, hard link, FIFO),
/// and nothing there changes.
#[test]
fn a_users_files_at_an_install_path_are_never_removed_or_replaced() {
    let work = tempfile::tempdir().unwrap();
    let bin = work.path().join("bin");
    install_tools(&bin);
    let path = path_with(&bin);
    let cache = work.path().join("cache");
    let servers = cache.join("servers");
    let mine = work.path().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "my notes").unwrap();
    let start = |server: &str, case: &str| {
        let dir = work.path().join(format!("server-{server}-{case}"));
        let shown = dir.display().to_string();
        let port = common::server::free_port().to_string();
        let storage = format!("cassandra_storage_port={}", common::server::free_port());
        let mut args = vec!["server", "start", server, "--dir", &shown, "--port", &port];
        if server == "cassandra" {
            args.extend(["-p", &storage]);
        }
        let env = [
            ("KVPERF_CACHE", cache.to_str().unwrap()),
            ("PATH", path.as_str()),
        ];
        let out = kvperf_with(work.path(), &args, &env);
        // A start that went ahead (as before) leaves nothing running.
        kvperf_with(
            work.path(),
            &["server", "stop", server, "--dir", &shown],
            &[],
        );
        out
    };
    let cassandra = servers.join("cassandra-5.0.9");
    let ferretdb = servers.join("ferretdb-v1.24.0");
    // (server, the path a form is put at, the install's directory)
    let places = [
        ("cassandra", cassandra.join("lib/my-notes.txt"), &cassandra),
        ("cassandra", cassandra.clone(), &cassandra),
        ("ferretdb", ferretdb.join("bin/ferretdb.tmp"), &ferretdb),
        ("ferretdb", ferretdb.join("bin/ferretdb"), &ferretdb),
        ("ferretdb", ferretdb.clone(), &ferretdb),
    ];
    let forms = ["file", "dir", "symlink", "hard link", "fifo"];
    let mut cases = 0;
    for (server, at, inst) in &places {
        for form in forms {
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            match form {
                "file" => std::fs::write(at, "a user's file").unwrap(),
                "dir" => {
                    std::fs::create_dir_all(at).unwrap();
                    std::fs::write(at.join("notes.txt"), "notes").unwrap();
                }
                "symlink" => std::os::unix::fs::symlink(&mine, at).unwrap(),
                "hard link" => std::fs::hard_link(mine.join("notes.txt"), at).unwrap(),
                _ => assert!(Command::new("mkfifo").arg(at).status().unwrap().success()),
            }
            let before = (snapshot(inst), snapshot(&mine));
            let out = start(server, &cases.to_string());
            let case = format!("{form} at {}", at.display());
            assert_eq!(out.code, 2, "{case}: {}", out.stderr);
            common::assert_input_error(&out, "holds no finished");
            assert_eq!((snapshot(inst), snapshot(&mine)), before, "{case}");
            std::fs::remove_dir_all(inst)
                .or_else(|_| std::fs::remove_file(inst))
                .unwrap();
            cases += 1;
        }
    }
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "my notes"
    );
    // Where nothing is, the install is made and put in place whole.
    let out = start("ferretdb", "fresh");
    assert!(
        ferretdb.join("bin/ferretdb").is_file(),
        "no install: {}",
        out.stderr
    );
    let left: Vec<_> = std::fs::read_dir(&servers)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".kvperf-install-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A start whose fake redis-server waits for the pid of a user's process
/// (begun after kvperf, as a reused pid is), writes it in its pid file, and
/// then exits (`fails`) or hangs. Returns the start (running), the user's
/// process and the script's process group (its id).
fn start_naming_users_process(
    work: &Path,
    port: &str,
    fails: bool,
    user: &mut Command,
) -> (std::process::Child, std::process::Child, i32) {
    let bin = work.join("bin");
    let end = if fails { "exit 1" } else { "exec sleep 600" };
    stand_in(
        &bin.join("redis-server"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'Redis server v=7.0.15 sha=0'; exit 0; }}\n\
             while [ $# -gt 0 ]; do [ \"$1\" = --pidfile ] && pidf=$2; shift; done\n\
             cut -d' ' -f5 /proc/$$/stat > {w}/group.tmp && mv {w}/group.tmp {w}/group\n\
             i=0; while [ ! -s {w}/user.pid ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n\
             cat {w}/user.pid > \"$pidf\"\n{end}\n",
            w = work.display()
        ),
    );
    // A redis-cli that never hears PONG.
    stand_in(&bin.join("redis-cli"), "#!/bin/sh\nexit 1\n");
    let start = Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args(["server", "start", "redis", "--dir"])
        .arg(work.join("redis"))
        .args(["--port", port])
        .env("PATH", path_with(&bin))
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = work.join("group");
    assert!(
        wait_for(Duration::from_secs(60), || group.exists()),
        "the stand-in never ran"
    );
    let group: i32 = std::fs::read_to_string(group)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let user = user
        .current_dir(work)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::fs::write(work.join("user.pid.tmp"), user.id().to_string()).unwrap();
    std::fs::rename(work.join("user.pid.tmp"), work.join("user.pid")).unwrap();
    (start, user, group)
}

/// A failed start's clean-up signalled every process its pid files named
/// that began after kvperf: a pid reused by then (here a user's `sleep`
/// the pid file names) got the server's SIGTERM. It now signals only a
/// process that runs the server's program.
#[test]
fn a_failed_starts_clean_up_signals_no_other_program() {
    let work = tempfile::tempdir().unwrap();
    let port = common::server::free_port().to_string();
    let (start, mut user, group) =
        start_naming_users_process(work.path(), &port, true, Command::new("sleep").arg("600"));
    let _left = Leftovers(vec![-group, user.id() as i32]);
    let out = start.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("redis-server failed to start"), "{stderr}");
    assert_eq!(
        user.try_wait().unwrap(),
        None,
        "the user's sleep was signalled"
    );
}

/// A killed start's server was any process whose command line held the
/// server's word: a user's `tail -f my-redis-server-notes.txt`, begun
/// within the start's time at a pid its pid file names, was "running but
/// not answering" and `stop` signalled it. The program is compared now.
#[test]
fn a_killed_starts_server_is_its_program_not_a_word_of_a_command_line() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("my-redis-server-notes.txt"), "notes\n").unwrap();
    let port = common::server::free_port().to_string();
    let (mut start, mut user, group) = start_naming_users_process(
        work.path(),
        &port,
        false,
        Command::new("tail").args(["-f", "my-redis-server-notes.txt"]),
    );
    let _left = Leftovers(vec![-group, user.id() as i32]);
    let pid_file = work.path().join("redis/redis.pid");
    let named = wait_for(Duration::from_secs(60), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim() == user.id().to_string())
    });
    // kill -9 of the start and its script, as a CI job's end does.
    let _ = start.kill();
    let _ = start.wait();
    // SAFETY: the script's process group, which this test's kvperf made.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    assert!(named, "the pid file never named the user's tail");
    status_and_stop_leave_alone(
        work.path(),
        &work.path().join("redis"),
        &port,
        &mut user,
        "the user's tail",
    );
}

/// `server start postgres` as root, its --dir behind a directory the
/// server's OS user cannot pass (a 0700 home or scratch directory), ran
/// `chmod o+x` on that directory and said so in a note: kvperf changed a
/// directory it did not make. It is refused now in one line naming the
/// directory and what the user can do, before anything is made.
#[test]
fn a_postgres_start_changes_no_directory_it_did_not_make() {
    let test = "pass12_servers::postgres_parent";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        common::note_skip(&format!(
            "SKIPPED {test}: not root, so PostgreSQL runs as this user, who passes its own directories"
        ));
        return;
    }
    if !Path::new("/usr/lib/postgresql").is_dir() {
        common::skip_unless_ci(test, "no PostgreSQL here (apt-get install postgresql)");
        return;
    }
    // A directory of the test's own, 0700 as a home often is.
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let dir = work.path().join("pg");
    let shown = dir.display().to_string();
    let port = common::server::free_port().to_string();
    let mode = || std::fs::metadata(work.path()).unwrap().permissions().mode() & 0o7777;
    let before = mode();
    let out = kvperf_with(
        work.path(),
        &[
            "server", "start", "postgres", "--dir", &shown, "--port", &port,
        ],
        &[],
    );
    // A start that went ahead (as before) leaves nothing running.
    kvperf_with(
        work.path(),
        &["server", "stop", "postgres", "--dir", &shown],
        &[],
    );
    common::assert_input_error(
        &out,
        &format!("'{}' does not let postgres", work.path().display()),
    );
    assert!(out.stderr.contains("chmod o+x"), "{}", out.stderr);
    assert_eq!(mode(), before, "the mode of the user's directory changed");
    assert!(!dir.exists(), "made before the refusal");
}

/// kvperf's check for links in a server directory looked at its top level
/// only: a link (symbolic or hard) at `pgdata/kvperf.conf` in kvperf's
/// PostgreSQL directory had the next start write its configuration into
/// the user's file, and `chown` it to the server's user (Cassandra's
/// `node1/conf/cassandra.yaml` likewise). Each file a script writes below
/// the directory is checked now: refused in one line, the file untouched.
#[test]
fn a_link_below_a_server_directory_is_not_written_through() {
    let Some(pg) = common::server::Server::start("postgres", "pass12_servers::nested_link") else {
        return;
    };
    let stopped = pg.action("stop");
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    let conf = pg.server_dir().join("pgdata/kvperf.conf");
    let mine = pg.dir().join("mine.txt");
    for kind in ["symlink", "hard link"] {
        std::fs::write(&mine, "mine").unwrap();
        std::fs::remove_file(&conf).unwrap();
        match kind {
            "symlink" => std::os::unix::fs::symlink(&mine, &conf).unwrap(),
            _ => std::fs::hard_link(&mine, &conf).unwrap(),
        }
        let owner = std::fs::metadata(&mine).unwrap().uid();
        let out = pg.action("start");
        // A start that went ahead (as before) is stopped when `pg` drops.
        common::assert_input_error(&out, "kvperf.conf' is not kvperf's");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine", "{kind}");
        assert_eq!(std::fs::metadata(&mine).unwrap().uid(), owner, "{kind}");
    }
    // Its own file back, the server starts (and `pg` stops it when dropped).
    std::fs::remove_file(&conf).unwrap();
    let again = pg.action("start");
    assert_eq!(again.code, 0, "{}", again.stderr);
}
