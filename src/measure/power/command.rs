//! A meter that is a command: run once per reading, with a deadline, its
//! standard output parsed. What `power.command`, the IPMI meter
//! (`ipmitool`) and the Redfish meter (`curl`) share.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::{PowerMeter, Reading};

/// `power.command`: a shell command that prints watts.
pub struct CommandMeter {
    command: String,
    deadline: Duration,
}

impl CommandMeter {
    pub fn new(command: String, deadline: Duration) -> Self {
        Self { command, deadline }
    }
}

impl PowerMeter for CommandMeter {
    fn name(&self) -> String {
        format!("command: {}", self.command)
    }

    fn read(&mut self) -> Result<Reading, String> {
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(&self.command);
        let out = output_within(sh, None, self.deadline)?;
        parse_watts(&out).map(Reading::Watts)
    }
}

/// The watts a command printed: the last non-empty line, a number,
/// optionally followed by `W`.
pub fn parse_watts(output: &str) -> Result<f64, String> {
    let line = output
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .ok_or("printed nothing (expected watts, e.g. 231.5)")?;
    let lower = line.to_ascii_lowercase();
    let number = lower
        .strip_suffix("watts")
        .or_else(|| lower.strip_suffix('w'))
        .unwrap_or(&lower)
        .trim();
    number
        .parse::<f64>()
        .ok()
        .filter(|w| w.is_finite() && *w >= 0.0)
        .ok_or_else(|| format!("printed '{}', not watts (e.g. 231.5)", clip(line)))
}

/// At most 80 characters of what a command said, for an error line.
fn clip(text: &str) -> String {
    let t: String = text.chars().take(80).collect();
    if t.len() < text.len() {
        format!("{t}…")
    } else {
        t
    }
}

/// Runs `cmd` (its standard input `stdin`, when given) and returns its
/// standard output once it exits with success, or why not. A command
/// still running after `deadline` is killed with its whole process group
/// (a shell's children too), so a stalled meter costs one deadline.
pub fn output_within(
    mut cmd: Command,
    stdin: Option<String>,
    deadline: Duration,
) -> Result<String, String> {
    let program = cmd.get_program().to_string_lossy().to_string();
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {program} ({e})"))?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        // A command that does not read its input is not an error here.
        let _ = input.write_all(text.as_bytes());
    }
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let (tx, rx) = mpsc::channel();
    let group = child.id() as libc::pid_t;
    std::thread::spawn(move || {
        let (stdout, over) = out.as_mut().map_or_else(Default::default, read_bounded);
        if over {
            // It would go on writing into a pipe nobody reads until the
            // deadline: its answer is refused now.
            // SAFETY: kill(2) on the process group the child leads.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        let (stderr, _) = err.as_mut().map_or_else(Default::default, read_bounded);
        let _ = tx.send((stdout, stderr, over));
    });
    match rx.recv_timeout(deadline) {
        Ok((stdout, stderr, over)) => {
            let status = child
                .wait()
                .map_err(|e| format!("{program}: cannot wait for it ({e})"))?;
            if over {
                Err(format!(
                    "{program} printed more than {} bytes; a power reading is a number (or a Redfish Power resource)",
                    OUTPUT_LIMIT
                ))
            } else if status.success() {
                Ok(stdout)
            } else {
                let said = stderr.lines().map(str::trim).find(|l| !l.is_empty());
                Err(match said {
                    Some(line) => format!("{program} failed ({status}): {}", clip(line)),
                    None => format!("{program} failed ({status})"),
                })
            }
        }
        Err(_) => {
            // SAFETY: kill(2) on the process group the child leads.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            Err(format!(
                "{program} gave no reading within {} ms (killed)",
                deadline.as_millis()
            ))
        }
    }
}

/// The most a power command (or curl, for Redfish) may print: a reading
/// is a number, a Redfish Power resource a few kilobytes; an endpoint that
/// sends without end is refused, not held in memory.
const OUTPUT_LIMIT: u64 = 1 << 20;

/// What `from` gives up to [`OUTPUT_LIMIT`], and whether it had more.
fn read_bounded(from: &mut impl Read) -> (String, bool) {
    let mut bytes = Vec::new();
    let _ = from.take(OUTPUT_LIMIT + 1).read_to_end(&mut bytes);
    let over = bytes.len() as u64 > OUTPUT_LIMIT;
    bytes.truncate(OUTPUT_LIMIT as usize);
    (String::from_utf8_lossy(&bytes).into_owned(), over)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_without_end_is_refused_at_its_bound_not_its_deadline() {
        let started = std::time::Instant::now();
        let read = output_within(Command::new("yes"), None, Duration::from_secs(120));
        let why = read.expect_err("refused");
        assert!(why.contains("printed more than 1048576 bytes"), "{why}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not the deadline"
        );
    }

    #[test]
    fn watts_are_the_last_line_with_or_without_a_unit() {
        assert_eq!(parse_watts("231.5\n"), Ok(231.5));
        assert_eq!(parse_watts("warming up\n 90 W \n\n"), Ok(90.0));
        assert!(parse_watts("").unwrap_err().contains("printed nothing"));
        assert!(parse_watts("n/a").unwrap_err().contains("'n/a', not watts"));
        assert!(parse_watts("-5").is_err());
    }

    #[test]
    fn a_command_that_stalls_is_killed_at_its_deadline() {
        let started = std::time::Instant::now();
        let mut sh = Command::new("sh");
        // The shell's child holds the pipe: only the group kill ends it.
        sh.arg("-c").arg("sleep 30; echo 5");
        let err = output_within(sh, None, Duration::from_millis(300)).unwrap_err();
        assert!(err.contains("no reading within 300 ms"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let mut sh = Command::new("sh");
        sh.arg("-c").arg("echo broken >&2; exit 3");
        let err = output_within(sh, None, Duration::from_secs(10)).unwrap_err();
        assert!(
            err.contains("exit status: 3") && err.contains("broken"),
            "{err}"
        );
        let mut cat = Command::new("cat");
        cat.arg("-");
        let out = output_within(cat, Some("42\n".into()), Duration::from_secs(10));
        assert_eq!(out.as_deref(), Ok("42\n"));
    }
}
