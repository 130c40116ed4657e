//! A step's child kvperf: its command line, with credentials kept off it
//! (a child gets them in its environment; `ps` shows every user a command
//! line) and redacted where results show it, and an interrupt of the plan
//! passed on to it. Below both the plan runner and the launchers (srun,
//! Kubernetes), which start children the same way.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::expand::Step;
use super::step_command::StepCommand;
use super::{Driver, Settle};
use crate::properties::redacted_arg;
use crate::runner;

/// The child command line of a load, run or device step (without the
/// program): [`StepCommand::of_step`] rendered.
pub fn child_args(
    driver: Driver,
    settle: Settle,
    drop_caches: bool,
    step: &Step,
    json: &Path,
) -> Vec<String> {
    StepCommand::of_step(driver, settle, drop_caches, step, json).args()
}

/// `args` as (public, private): the arguments that hold a credential (a
/// `-p` option with its value) go to the private ones, which a child gets
/// in [`crate::private_args::PRIVATE_ARGS`], never on its command line.
pub(crate) fn split_private(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut public = Vec::new();
    let mut private = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let option = args[i] == "-p" && i + 1 < args.len();
        let value = &args[i + usize::from(option)];
        let to = if redacted_arg(value) == *value {
            &mut public
        } else {
            &mut private
        };
        to.extend_from_slice(&args[i..=i + usize::from(option)]);
        i += 1 + usize::from(option);
    }
    (public, private)
}

/// `exe ARGS`, with the arguments that hold a credential (`-p
/// redis.password=...`, a URL with a password) passed in its environment
/// ([`crate::private_args::PRIVATE_ARGS`]): `ps` shows every user a command line.
pub(super) fn child_command(exe: &Path, args: &[String]) -> Command {
    let (public, private) = split_private(args);
    let mut cmd = Command::new(exe);
    cmd.args(public);
    if !private.is_empty() {
        cmd.env(
            crate::private_args::PRIVATE_ARGS,
            serde_json::to_string(&private).unwrap_or_default(),
        );
    }
    cmd
}

/// How long a step's child has, after the interrupt passed on to it, to
/// keep its figures and end: it answers within a second or two (fio within
/// five); one that does not (stopped again, wedged) is killed, and the step
/// is lost as one the plan is interrupted in.
const CHILD_GRACE: Duration = Duration::from_secs(15);

/// Runs `wait` (which returns when the child `pid` has ended) while passing
/// an interrupt of this process on to the child once: a SIGTERM sent to the
/// plan alone (not to its process group, as Ctrl-C is) still ends the step.
pub(super) fn forward_interrupt<T>(pid: u32, wait: impl FnOnce() -> T) -> T {
    watch_interrupt(pid, pid as libc::pid_t, CHILD_GRACE, wait)
}

/// [`forward_interrupt`] for a child that leads a process group of its
/// own and may not end at SIGTERM (a program the user named): its group is
/// continued with it, and killed `grace` after the SIGTERM.
pub(super) fn forward_interrupt_then_kill<T>(
    pid: u32,
    grace: Duration,
    wait: impl FnOnce() -> T,
) -> T {
    watch_interrupt(pid, -(pid as libc::pid_t), grace, wait)
}

/// `target` is what SIGCONT and SIGKILL reach: the child, or its group.
fn watch_interrupt<T>(
    pid: u32,
    target: libc::pid_t,
    grace: Duration,
    wait: impl FnOnce() -> T,
) -> T {
    let finished = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                if runner::interrupted() {
                    // SAFETY: the child has not been reaped while `wait`
                    // runs. A child stopped (a debugger, job control) never
                    // takes the SIGTERM until continued (pass 16).
                    unsafe {
                        libc::kill(pid as libc::pid_t, libc::SIGTERM);
                        libc::kill(target, libc::SIGCONT);
                    }
                    let until = std::time::Instant::now() + grace;
                    while !finished.load(Ordering::Relaxed) {
                        if std::time::Instant::now() >= until {
                            // SAFETY: as above.
                            unsafe { libc::kill(target, libc::SIGKILL) };
                            return;
                        }
                        std::thread::park_timeout(Duration::from_millis(100));
                    }
                    return;
                }
                std::thread::park_timeout(Duration::from_millis(100));
            }
        });
        let result = wait();
        finished.store(true, Ordering::Relaxed);
        watcher.thread().unpark();
        result
    })
}

/// A command line as results may show it: `KEY=VALUE` arguments (`-p
/// postgres.password=...`, `--flag=...`) with credentials redacted.
pub fn redacted_args(args: &[String]) -> Vec<String> {
    args.iter().map(|a| redacted_arg(a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each server engine's password property, a URL with userinfo and a
    /// server setting: none on the child's command line, all in its
    /// environment, in an order its `-p` parsing reads back.
    #[test]
    fn credentials_reach_a_child_through_its_environment_only() {
        let secret = [
            "redis.password=S3cr3t-r",
            "postgres.password=S3cr3t-p",
            "cassandra.password=S3cr3t-c",
            "mongodb.url=mongodb://kv:S3cr3t-m@127.0.0.1:27017/db",
            "ferretdb_pg_url=postgres://kv:S3cr3t-f@127.0.0.1/kvperf",
        ];
        let mut args: Vec<String> = ["run", "--engine", "redis", "-p", "redis.port=1"]
            .map(String::from)
            .into();
        for s in secret {
            args.extend(["-p".into(), s.into()]);
        }
        args.push("--db=/tmp/x".into());
        let cmd = child_command(Path::new("kvperf"), &args);
        let argv: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            argv,
            [
                "run",
                "--engine",
                "redis",
                "-p",
                "redis.port=1",
                "--db=/tmp/x"
            ]
        );
        let envs: Vec<_> = cmd.get_envs().collect();
        assert_eq!(envs.len(), 1);
        assert_eq!(envs[0].0, crate::private_args::PRIVATE_ARGS);
        let private = envs[0].1.map(std::ffi::OsStr::to_os_string);
        let all = crate::private_args::with_private_args(
            argv.iter().map(std::ffi::OsString::from),
            private,
        )
        .unwrap();
        let mut expected: Vec<String> = argv;
        for s in secret {
            expected.extend(["-p".into(), s.into()]);
        }
        assert_eq!(
            all,
            expected
                .iter()
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
        );
        let plain = child_command(Path::new("kvperf"), &args[..5]);
        assert_eq!(plain.get_envs().count(), 0, "nothing to hide: no variable");
    }
}
