//! The engine's own events on the window's clock: flushes, compactions,
//! write stalls, checkpoints, vacuums, background saves.
//!
//! An engine does not keep a history; it says what its background work is
//! doing *now* ([`Activity`], from `Engine::activity`). A sampler thread
//! ([`sample`]) asks it every `events.interval` milliseconds, from just
//! before the run until just after, and a [`Recorder`] turns what changed
//! between two polls into [`Event`]s with a start and an end in Unix
//! milliseconds, the clock of the window's bounds and of its timeline.
//! Finished events are then cut to the measured window, as every other
//! figure is ([`Recorder::finish`]).
//!
//! Polling has interval granularity: an event starts at the first poll
//! that saw it running and ends at the first poll that found it gone, so
//! both ends are up to one interval late, and an event shorter than the
//! interval may fall between two polls. Where the engine also counts
//! finished work ([`Tally`]: flushes done, bytes compacted, saves made),
//! such an event is still recorded, as running somewhere between the two
//! polls ([`Event::between_polls`]), and an event carries the count and
//! bytes of the work finished while it ran.
//!
//! This module knows no engine: the kinds are the result's vocabulary,
//! what they mean for each engine is in the engine's file and in
//! docs/semantics.md.

use std::collections::BTreeMap;
use std::thread::Scope;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::periodic::{self, Periodic};
use super::spikes::EventSpan;

/// The polling interval unless `events.interval` says otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(250);

/// What kind of background work an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Buffered writes written out as a file (a memtable flush).
    Flush,
    /// Files merged and rewritten.
    Compaction,
    /// Writes stopped by the engine until background work catches up.
    WriteStall,
    /// Writes slowed down (delayed) by the engine.
    WriteSlowdown,
    /// Dirty pages written and synced.
    Checkpoint,
    /// Cache pressure: pages evicted by the clients' own threads, or a
    /// cache past its eviction triggers.
    Eviction,
    /// (Auto)vacuum of a table.
    Vacuum,
    /// (Auto)analyze of a table.
    Analyze,
    /// A snapshot written by a forked child (`BGSAVE`).
    #[serde(rename = "bgsave")]
    BgSave,
    /// The append-only file rewritten by a forked child.
    AofRewrite,
}

impl EventKind {
    /// The kind's name in results and in `kvperf engines`.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Flush => "flush",
            EventKind::Compaction => "compaction",
            EventKind::WriteStall => "write_stall",
            EventKind::WriteSlowdown => "write_slowdown",
            EventKind::Checkpoint => "checkpoint",
            EventKind::Eviction => "eviction",
            EventKind::Vacuum => "vacuum",
            EventKind::Analyze => "analyze",
            EventKind::BgSave => "bgsave",
            EventKind::AofRewrite => "aof_rewrite",
        }
    }

    /// How an event of this kind reads in a sentence ("a compaction").
    fn noun(self) -> &'static str {
        match self {
            EventKind::Flush => "a flush",
            EventKind::Compaction => "a compaction",
            EventKind::WriteStall => "a write stall",
            EventKind::WriteSlowdown => "a write slowdown",
            EventKind::Checkpoint => "a checkpoint",
            EventKind::Eviction => "eviction pressure",
            EventKind::Vacuum => "a vacuum",
            EventKind::Analyze => "an analyze",
            EventKind::BgSave => "a background save",
            EventKind::AofRewrite => "an AOF rewrite",
        }
    }
}

/// What an engine's background work is doing at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Activity {
    /// Work in progress now.
    pub running: Vec<Work>,
    /// Work finished since the store (or server) started, where the engine
    /// counts it: cumulative, so the sampler sees what ran between polls.
    pub tallies: Vec<Tally>,
}

/// One piece of background work in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub kind: EventKind,
    /// Which one, when several of a kind can run at once and are told apart
    /// (a table, a task id); empty for work the engine reports as one (its
    /// flushes, its compactions: `detail` says how many run).
    pub subject: String,
    /// The engine's words for it now ("L0+L1, 2 running", "delayed to 16 MB/s").
    pub detail: String,
}

/// Cumulative finished work of one kind (or of one part of it, e.g. the
/// compactions into one level).
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub kind: EventKind,
    /// What part of the kind this counts ("into L1"); empty for the whole.
    pub part: String,
    /// Units finished (flushes, compactions, saves).
    pub count: u64,
    /// Bytes they wrote, when the engine counts them.
    pub bytes: Option<u64>,
}

impl Activity {
    pub fn idle() -> Self {
        Self::default()
    }

    pub fn running(
        &mut self,
        kind: EventKind,
        subject: impl Into<String>,
        detail: impl Into<String>,
    ) {
        self.running.push(Work {
            kind,
            subject: subject.into(),
            detail: detail.into(),
        });
    }

    pub fn tally(
        &mut self,
        kind: EventKind,
        part: impl Into<String>,
        count: u64,
        bytes: Option<u64>,
    ) {
        self.tallies.push(Tally {
            kind,
            part: part.into(),
            count,
            bytes,
        });
    }
}

/// One event of the engine, on the wall clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    /// Which one (a table, a task), when the engine tells several apart.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// The engine's words, in the order they changed while it ran.
    pub detail: String,
    /// The first poll that saw it running (it began up to one interval
    /// before), or the window's open.
    pub start_unix_ms: u64,
    /// The first poll that found it gone (it ended up to one interval
    /// before), or the window's close.
    pub end_unix_ms: u64,
    /// Already running when the window opened: it began before `start`.
    #[serde(default)]
    pub began_before: bool,
    /// Still running when the window closed: it ended after `end`.
    #[serde(default)]
    pub open_ended: bool,
    /// Never seen running: the engine's counters say it began and ended
    /// somewhere between these two polls.
    #[serde(default)]
    pub between_polls: bool,
    /// Units of this kind the engine counted as finished while it ran
    /// (flushes, compactions), when it counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<u64>,
    /// The same, by part ("into L1": 2), when the engine tells parts apart.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub finished_by: BTreeMap<String, u64>,
    /// Bytes the finished units wrote, when the engine counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl Event {
    /// Seconds from `open_unix_ms` (a window's open) to the start and end.
    pub fn span_s(&self, open_unix_ms: u64) -> (f64, f64) {
        let s = |ms: u64| (ms as f64 - open_unix_ms as f64) / 1000.0;
        (s(self.start_unix_ms), s(self.end_unix_ms))
    }

    /// One phrase for reports and verdicts: "a compaction (L0+L1; into L1: 2)
    /// of 212.0 MB".
    pub fn describe(&self) -> String {
        let mut words = Vec::new();
        if !self.subject.is_empty() {
            words.push(self.subject.clone());
        }
        if !self.detail.is_empty() {
            words.push(self.detail.clone());
        }
        if !self.finished_by.is_empty() {
            let parts: Vec<String> = self
                .finished_by
                .iter()
                .map(|(part, n)| format!("{part}: {n}"))
                .collect();
            words.push(parts.join(", "));
        } else if let Some(n) = self.finished.filter(|n| *n > 1) {
            words.push(format!("{n} finished"));
        }
        let mut text = self.kind.noun().to_string();
        if !words.is_empty() {
            text.push_str(&format!(" ({})", words.join("; ")));
        }
        if let Some(bytes) = self.bytes.filter(|b| *b > 0) {
            text.push_str(&format!(" of {}", human_bytes(bytes)));
        }
        text
    }
}

fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

/// A measurement's engine events ([`crate::results::step::Measurement::events`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineEvents {
    /// How often the engine was asked (`events.interval`); 0 when it was not.
    pub interval_ms: u64,
    /// Polls made, from just before the run to just after it.
    #[serde(default)]
    pub polls: u64,
    /// Polls the engine could not answer (a server gone for a moment);
    /// an event may then be missed, or look longer than it was.
    #[serde(default)]
    pub failed_polls: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Mean time one poll took, in microseconds (the sampler's cost).
    #[serde(default)]
    pub mean_poll_us: f64,
    /// In order of their start, inside the measured window.
    pub events: Vec<Event>,
    /// Why there are no events: the engine cannot report them, or sampling
    /// was off. None when the engine was sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl EngineEvents {
    /// Each event on the clock of a window opened at `open_unix_ms`, as
    /// spikes and charts take them.
    pub fn spans(&self, open_unix_ms: u64) -> Vec<EventSpan> {
        self.events
            .iter()
            .map(|e| {
                let (start_s, end_s) = e.span_s(open_unix_ms);
                EventSpan {
                    start_s,
                    end_s,
                    kind: e.kind.name(),
                    what: e.describe(),
                }
            })
            .collect()
    }

    /// No events, and why.
    pub fn unavailable(why: impl Into<String>) -> Self {
        Self {
            unavailable: Some(why.into()),
            ..Self::default()
        }
    }
}

/// An event being built: seen running at the last poll.
#[derive(Debug)]
struct Running {
    event: Event,
    details: Vec<String>,
    /// The last poll at which it was seen running.
    last_seen_ms: u64,
}

/// Per (kind, part): count and bytes at the last poll.
type Tallies = BTreeMap<(EventKind, String), (u64, Option<u64>)>;

/// At most this many distinct details are kept per event.
const MOST_DETAILS: usize = 4;

/// Turns a sequence of polls into events (the transition logic).
#[derive(Debug, Default)]
pub struct Recorder {
    interval_ms: u64,
    polls: u64,
    failed_polls: u64,
    first_failure: Option<String>,
    poll_time: Duration,
    /// Time of the first and the last poll the engine answered.
    first_ms: Option<u64>,
    last_ms: Option<u64>,
    running: BTreeMap<(EventKind, String), Running>,
    done: Vec<Event>,
    tallies: Option<Tallies>,
}

impl Recorder {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval_ms: interval.as_millis() as u64,
            ..Self::default()
        }
    }

    /// One poll at `at_ms`: what the engine said, and how long asking took.
    pub fn observe(&mut self, at_ms: u64, answer: Result<Activity, String>, took: Duration) {
        self.polls += 1;
        self.poll_time += took;
        let activity = match answer {
            Ok(activity) => activity,
            Err(why) => {
                // The state stays as it was: an event is neither ended nor
                // begun by a poll that could not see.
                self.failed_polls += 1;
                self.first_failure.get_or_insert(why);
                return;
            }
        };
        let first = self.first_ms.is_none();
        let previous_ms = self.last_ms;
        self.first_ms.get_or_insert(at_ms);
        self.last_ms = Some(at_ms);

        // What ran before this poll, for the counters below.
        let was_running: Vec<(EventKind, String)> = self.running.keys().cloned().collect();

        // Ended: running at the last poll, not now.
        let mut now: BTreeMap<(EventKind, String), Vec<String>> = BTreeMap::new();
        for work in activity.running {
            now.entry((work.kind, work.subject))
                .or_default()
                .push(work.detail);
        }
        let ended: Vec<(EventKind, String)> = self
            .running
            .keys()
            .filter(|key| !now.contains_key(*key))
            .cloned()
            .collect();
        let mut ended_now = Vec::new();
        for key in ended {
            if let Some(mut r) = self.running.remove(&key) {
                r.event.end_unix_ms = at_ms;
                r.event.detail = r.details.join("; ");
                ended_now.push(r.event);
            }
        }
        self.keep_running(now, at_ms, first);

        // Finished work the counters saw since the last poll.
        let tallies = tallies_of(&activity.tallies);
        if let (Some(before), Some(since)) = (self.tallies.as_ref(), previous_ms) {
            for (kind, delta) in deltas(before, &tallies) {
                let key = (kind, String::new());
                // Work of this kind that ran at the last poll takes it (it
                // ended now, or still runs); else work of this kind that
                // began now: its bytes so far, and a unit the engine counts
                // when it starts rather than when it ends. Only when
                // nothing of the kind ran at either poll did the work begin
                // and end between them. Work of a kind whose units are told
                // apart by subject is not credited to one of them.
                let idle_before = || !was_running.iter().any(|(k, _)| *k == kind);
                let owner = ended_now
                    .iter_mut()
                    .find(|e| e.kind == kind && e.subject.is_empty())
                    .or_else(|| self.running.get_mut(&key).map(|r| &mut r.event));
                match owner {
                    Some(event) => delta.add_to(event),
                    None if delta.count > 0 && idle_before() => {
                        let mut event = Event {
                            kind,
                            subject: String::new(),
                            detail: String::new(),
                            start_unix_ms: since,
                            end_unix_ms: at_ms,
                            began_before: false,
                            open_ended: false,
                            between_polls: true,
                            finished: None,
                            finished_by: BTreeMap::new(),
                            bytes: None,
                        };
                        delta.add_to(&mut event);
                        ended_now.push(event);
                    }
                    None => {}
                }
            }
        }
        if !activity.tallies.is_empty() || self.tallies.is_some() {
            self.tallies = Some(tallies);
        }
        self.done.extend(ended_now);
    }

    /// The work running at the poll at `at_ms` (`first`: the first poll),
    /// begun now or still running: each new detail kept.
    fn keep_running(
        &mut self,
        now: BTreeMap<(EventKind, String), Vec<String>>,
        at_ms: u64,
        first: bool,
    ) {
        for (key, details) in now {
            let detail = details
                .into_iter()
                .filter(|d| !d.is_empty())
                .collect::<Vec<_>>()
                .join(", ");
            let r = self.running.entry(key.clone()).or_insert_with(|| Running {
                event: Event {
                    kind: key.0,
                    subject: key.1.clone(),
                    detail: String::new(),
                    start_unix_ms: at_ms,
                    end_unix_ms: at_ms,
                    began_before: first,
                    open_ended: false,
                    between_polls: false,
                    finished: None,
                    finished_by: BTreeMap::new(),
                    bytes: None,
                },
                details: Vec::new(),
                last_seen_ms: at_ms,
            });
            r.last_seen_ms = at_ms;
            if !detail.is_empty() && r.details.last() != Some(&detail) {
                if r.details.len() < MOST_DETAILS {
                    r.details.push(detail);
                } else if r.details.len() == MOST_DETAILS {
                    r.details.push("...".into());
                }
            }
        }
    }

    /// The events inside the window `open_ms..=close_ms`: what ended before
    /// it or began after it is dropped; what began before it starts at its
    /// open (`began_before`), what ran past it ends at its close
    /// (`open_ended`), as does what was still running at the last poll.
    pub fn finish(mut self, open_ms: u64, close_ms: u64) -> EngineEvents {
        let last = self.last_ms.unwrap_or(close_ms);
        for (_, mut r) in std::mem::take(&mut self.running) {
            r.event.end_unix_ms = last.max(r.event.start_unix_ms);
            r.event.open_ended = true;
            r.event.detail = r.details.join("; ");
            self.done.push(r.event);
        }
        let mut events: Vec<Event> = self
            .done
            .into_iter()
            .filter(|e| {
                if e.start_unix_ms < e.end_unix_ms {
                    e.end_unix_ms > open_ms && e.start_unix_ms < close_ms
                } else {
                    // Seen at one poll only, the last: inside or not.
                    (open_ms..=close_ms).contains(&e.start_unix_ms)
                }
            })
            .map(|mut e| {
                if e.start_unix_ms < open_ms {
                    e.start_unix_ms = open_ms;
                    // Between polls, it may have begun inside the window.
                    e.began_before |= !e.between_polls;
                }
                if e.end_unix_ms > close_ms {
                    e.end_unix_ms = close_ms;
                    e.open_ended |= !e.between_polls;
                }
                e
            })
            .collect();
        events.sort_by(|a, b| {
            (a.start_unix_ms, a.end_unix_ms, a.kind).cmp(&(b.start_unix_ms, b.end_unix_ms, b.kind))
        });
        let answered = self.polls - self.failed_polls;
        EngineEvents {
            interval_ms: self.interval_ms,
            polls: self.polls,
            failed_polls: self.failed_polls,
            mean_poll_us: if self.polls > 0 {
                self.poll_time.as_secs_f64() * 1e6 / self.polls as f64
            } else {
                0.0
            },
            unavailable: (answered == 0).then(|| match &self.first_failure {
                Some(why) => format!("the engine answered no poll: {why}"),
                None => "the engine was never polled".into(),
            }),
            first_failure: self.first_failure,
            events,
        }
    }
}

/// Finished work of one kind between two polls.
#[derive(Debug, Default)]
struct Delta {
    count: u64,
    bytes: Option<u64>,
    by_part: BTreeMap<String, u64>,
}

impl Delta {
    fn add_to(&self, event: &mut Event) {
        event.finished = Some(event.finished.unwrap_or(0) + self.count);
        if let Some(b) = self.bytes {
            event.bytes = Some(event.bytes.unwrap_or(0) + b);
        }
        for (part, n) in &self.by_part {
            *event.finished_by.entry(part.clone()).or_default() += n;
        }
    }
}

fn tallies_of(list: &[Tally]) -> Tallies {
    let mut out = Tallies::new();
    for t in list {
        let entry = out.entry((t.kind, t.part.clone())).or_insert((0, Some(0)));
        entry.0 += t.count;
        entry.1 = match (entry.1, t.bytes) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }
    out
}

/// What each kind's counters gained from `before` to `after`; a counter
/// that went back (a server restarted) counts from its new value.
fn deltas(before: &Tallies, after: &Tallies) -> Vec<(EventKind, Delta)> {
    let mut per_kind: BTreeMap<EventKind, Delta> = BTreeMap::new();
    for ((kind, part), (count, bytes)) in after {
        // A part first counted now counts from zero (RocksDB lists a level
        // once something was written into it).
        let (count0, bytes0) = before
            .get(&(*kind, part.clone()))
            .copied()
            .unwrap_or((0, bytes.map(|_| 0)));
        let (count0, bytes0) = (&count0, &bytes0);
        let gained = if count >= count0 {
            count - count0
        } else {
            *count
        };
        let gained_bytes = match (bytes, bytes0) {
            (Some(b), Some(b0)) if b >= b0 => Some(b - b0),
            (Some(b), Some(_)) => Some(*b),
            _ => None,
        };
        if gained == 0 && gained_bytes.unwrap_or(0) == 0 {
            continue;
        }
        let d = per_kind.entry(*kind).or_default();
        d.count += gained;
        if let Some(b) = gained_bytes {
            d.bytes = Some(d.bytes.unwrap_or(0) + b);
        }
        if !part.is_empty() && gained > 0 {
            *d.by_part.entry(part.clone()).or_default() += gained;
        }
    }
    per_kind.into_iter().collect()
}

/// A sampler thread polling an engine's activity; [`Sampler::stop`] ends
/// it with one last poll and hands back what it recorded.
pub struct Sampler<'scope>(Periodic<'scope, Recorder>);

/// Starts polling `poll` every `interval` on a thread of `scope`; returns
/// once the first poll is made.
pub fn sample<'scope, 'env, F>(
    scope: &'scope Scope<'scope, 'env>,
    interval: Duration,
    mut poll: F,
) -> Sampler<'scope>
where
    F: FnMut() -> Result<Activity, String> + Send + 'scope,
{
    let interval = interval.max(Duration::from_millis(1));
    Sampler(periodic::every(
        scope,
        "kvperf-events",
        interval,
        Recorder::new(interval),
        move |recorder| {
            let at = crate::clock::unix_ms();
            let t = Instant::now();
            let answer = poll();
            recorder.observe(at, answer, t.elapsed());
        },
    ))
}

impl Sampler<'_> {
    pub fn stop(self) -> Recorder {
        self.0.stop().unwrap_or_else(|| Recorder {
            first_failure: Some("the events sampler panicked".into()),
            ..Recorder::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventKind::*;

    fn act(
        running: &[(EventKind, &str, &str)],
        tallies: &[(EventKind, &str, u64, Option<u64>)],
    ) -> Result<Activity, String> {
        let mut a = Activity::idle();
        for (k, s, d) in running {
            a.running(*k, *s, *d);
        }
        for (k, p, n, b) in tallies {
            a.tally(*k, *p, *n, *b);
        }
        Ok(a)
    }

    /// Polls at 1000, 1250, 1500, ... each with its scripted answer.
    fn script(steps: Vec<Result<Activity, String>>) -> Recorder {
        let mut r = Recorder::new(Duration::from_millis(250));
        for (i, answer) in steps.into_iter().enumerate() {
            r.observe(1000 + 250 * i as u64, answer, Duration::from_micros(20));
        }
        r
    }

    #[test]
    fn an_event_runs_from_the_first_poll_that_saw_it_to_the_first_that_did_not() {
        let events = script(vec![
            act(&[], &[]),
            act(&[(Flush, "", "1 running")], &[]),
            act(&[(Flush, "", "2 running")], &[]),
            act(&[], &[]),
            act(&[], &[]),
        ])
        .finish(900, 3000);
        assert_eq!(events.polls, 5);
        assert_eq!(events.events.len(), 1, "{events:?}");
        let e = &events.events[0];
        assert_eq!(
            (e.kind, e.start_unix_ms, e.end_unix_ms),
            (Flush, 1250, 1750)
        );
        assert_eq!(e.detail, "1 running; 2 running");
        assert!(!e.began_before && !e.open_ended && !e.between_polls);
        assert_eq!(e.finished, None, "no counters, no count");
    }

    #[test]
    fn running_at_the_first_poll_starts_at_the_open_and_at_the_last_ends_there_open_ended() {
        let events = script(vec![
            act(&[(Compaction, "", "L0+L1")], &[]),
            act(&[(Compaction, "", "L0+L1")], &[]),
            act(&[(Compaction, "", "L1+L2")], &[]),
        ])
        .finish(1100, 5000);
        let e = &events.events[0];
        assert_eq!((e.start_unix_ms, e.end_unix_ms), (1100, 1500));
        assert!(e.began_before && e.open_ended, "{e:?}");
        assert_eq!(e.detail, "L0+L1; L1+L2");
    }

    #[test]
    fn events_are_cut_to_the_window() {
        // Polls 1000..2250; the window is 1300..1900.
        let events = script(vec![
            act(&[(Flush, "", "")], &[]),      // 1000: ends at 1250, before the open
            act(&[], &[]),                     // 1250
            act(&[(Compaction, "", "")], &[]), // 1500
            act(&[(Compaction, "", ""), (WriteStall, "", "stopped")], &[]), // 1750
            act(&[(WriteStall, "", "stopped")], &[]), // 2000: the compaction ended by now
            act(&[], &[]),                     // 2250
        ])
        .finish(1300, 1900);
        let kinds: Vec<_> = events
            .events
            .iter()
            .map(|e| (e.kind, e.start_unix_ms, e.end_unix_ms, e.open_ended))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (Compaction, 1500, 1900, true),
                (WriteStall, 1750, 1900, true)
            ],
            "the flush ended before the window opened"
        );
    }

    #[test]
    fn counters_credit_the_running_event_and_reveal_work_between_polls() {
        let events = script(vec![
            act(
                &[],
                &[
                    (Flush, "", 10, Some(1000)),
                    (Compaction, "into L1", 3, None),
                    (Compaction, "", 0, Some(50_000)),
                ],
            ),
            // Two flushes finished between polls, none seen running.
            act(
                &[],
                &[
                    (Flush, "", 12, Some(3000)),
                    (Compaction, "into L1", 3, None),
                    (Compaction, "", 0, Some(50_000)),
                ],
            ),
            // A compaction runs, writing as it goes.
            act(
                &[(Compaction, "", "L0+L1")],
                &[
                    (Flush, "", 12, Some(3000)),
                    (Compaction, "into L1", 3, None),
                    (Compaction, "", 0, Some(60_000)),
                ],
            ),
            act(
                &[(Compaction, "", "L0+L1")],
                &[
                    (Flush, "", 12, Some(3000)),
                    (Compaction, "into L1", 3, None),
                    (Compaction, "", 0, Some(90_000)),
                ],
            ),
            // It finished: one more into L1.
            act(
                &[],
                &[
                    (Flush, "", 12, Some(3000)),
                    (Compaction, "into L1", 4, None),
                    (Compaction, "", 0, Some(95_000)),
                ],
            ),
        ])
        .finish(1000, 3000);
        let flush = events
            .events
            .iter()
            .find(|e| e.kind == Flush)
            .expect("a flush");
        assert!(flush.between_polls);
        assert_eq!((flush.start_unix_ms, flush.end_unix_ms), (1000, 1250));
        assert_eq!((flush.finished, flush.bytes), (Some(2), Some(2000)));
        let c = events
            .events
            .iter()
            .find(|e| e.kind == Compaction)
            .expect("a compaction");
        assert!(!c.between_polls);
        assert_eq!((c.start_unix_ms, c.end_unix_ms), (1500, 2000));
        assert_eq!(c.finished, Some(1));
        assert_eq!(c.finished_by.get("into L1"), Some(&1));
        // From the poll before it was first seen to the poll that found it gone.
        assert_eq!(c.bytes, Some(45_000));
        assert_eq!(c.describe(), "a compaction (L0+L1; into L1: 1) of 45.0 kB");
        assert_eq!(events.events.len(), 2, "{events:?}");
    }

    #[test]
    fn a_part_first_counted_counts_from_zero() {
        let events = script(vec![
            act(
                &[(Compaction, "", "L1")],
                &[(Compaction, "into L1", 3, None)],
            ),
            act(
                &[],
                &[
                    (Compaction, "into L1", 3, None),
                    (Compaction, "into L2", 1, None),
                ],
            ),
        ])
        .finish(1000, 2000);
        let c = &events.events[0];
        assert_eq!(c.finished, Some(1));
        assert_eq!(c.finished_by.get("into L2"), Some(&1));
        assert_eq!(c.describe(), "a compaction (L1; into L2: 1)");
    }

    #[test]
    fn a_unit_counted_when_it_starts_belongs_to_the_event_it_starts() {
        // Redis counts a save when it forks, not when it is written.
        let events = script(vec![
            act(&[], &[(BgSave, "", 4, None)]),
            act(&[(BgSave, "", "0 of 100 keys")], &[(BgSave, "", 5, None)]),
            act(&[], &[(BgSave, "", 5, None)]),
        ])
        .finish(1000, 2000);
        assert_eq!(events.events.len(), 1, "{events:?}");
        let e = &events.events[0];
        assert!(!e.between_polls);
        assert_eq!(
            (e.start_unix_ms, e.end_unix_ms, e.finished),
            (1250, 1500, Some(1))
        );
    }

    #[test]
    fn a_failed_poll_neither_ends_nor_begins_anything() {
        let events = script(vec![
            act(&[(BgSave, "", "")], &[(BgSave, "", 1, None)]),
            Err("connection reset".into()),
            act(&[(BgSave, "", "")], &[(BgSave, "", 1, None)]),
            act(&[], &[(BgSave, "", 2, None)]),
        ])
        .finish(1000, 2000);
        assert_eq!(events.failed_polls, 1);
        assert_eq!(events.first_failure.as_deref(), Some("connection reset"));
        assert_eq!(events.events.len(), 1, "{events:?}");
        let e = &events.events[0];
        assert_eq!(
            (e.start_unix_ms, e.end_unix_ms, e.finished),
            (1000, 1750, Some(1))
        );
        assert!(events.unavailable.is_none());
    }

    #[test]
    fn subjects_run_side_by_side_and_a_restarted_counter_counts_from_its_new_value() {
        let events = script(vec![
            act(
                &[(Vacuum, "usertable", "scanning heap")],
                &[(Vacuum, "", 7, None)],
            ),
            act(
                &[
                    (Vacuum, "usertable", "vacuuming indexes"),
                    (Vacuum, "other", "scanning heap"),
                ],
                &[(Vacuum, "", 7, None)],
            ),
            act(
                &[(Vacuum, "other", "scanning heap")],
                &[(Vacuum, "", 8, None)],
            ),
            act(&[], &[(Vacuum, "", 1, None)]),
        ])
        .finish(1000, 2000);
        let subjects: Vec<(&str, u64, u64)> = events
            .events
            .iter()
            .map(|e| (e.subject.as_str(), e.start_unix_ms, e.end_unix_ms))
            .collect();
        assert_eq!(
            subjects,
            vec![("usertable", 1000, 1500), ("other", 1250, 1750)]
        );
        assert_eq!(events.events[0].detail, "scanning heap; vacuuming indexes");
        // Counts of a kind told apart by subject are not credited to one.
        assert!(events.events.iter().all(|e| e.finished.is_none()));
    }

    #[test]
    fn an_engine_that_never_answers_is_unavailable_with_its_reason() {
        let events =
            script(vec![Err("INFO refused".into()), Err("INFO refused".into())]).finish(1000, 2000);
        assert_eq!(
            events.unavailable.as_deref(),
            Some("the engine answered no poll: INFO refused")
        );
        assert!(events.events.is_empty());
    }

    #[test]
    fn older_results_and_defaults_read_back() {
        let e: Event = serde_json::from_str(
            r#"{"kind":"bgsave","detail":"","start_unix_ms":1,"end_unix_ms":2}"#,
        )
        .unwrap();
        assert_eq!(e.kind, BgSave);
        assert!(!e.open_ended && e.finished.is_none());
        let all: EngineEvents = serde_json::from_str(r#"{"interval_ms":250,"events":[]}"#).unwrap();
        assert_eq!(all.polls, 0);
        let text = serde_json::to_string(&EngineEvents::unavailable("no background work")).unwrap();
        assert!(
            text.contains("\"unavailable\":\"no background work\""),
            "{text}"
        );
        for kind in [
            Flush,
            Compaction,
            WriteStall,
            WriteSlowdown,
            Checkpoint,
            Eviction,
            Vacuum,
            Analyze,
            BgSave,
            AofRewrite,
        ] {
            assert_eq!(
                serde_json::to_string(&kind).unwrap(),
                format!("\"{}\"", kind.name())
            );
        }
    }

    #[test]
    fn the_sampler_polls_until_stopped_and_once_after() {
        let polls = std::sync::atomic::AtomicU64::new(0);
        let recorder = std::thread::scope(|s| {
            let sampler = sample(s, Duration::from_millis(20), || {
                let n = polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut a = Activity::idle();
                if (2..4).contains(&n) {
                    a.running(Checkpoint, "", "");
                }
                Ok(a)
            });
            std::thread::sleep(Duration::from_millis(150));
            sampler.stop()
        });
        let n = polls.load(std::sync::atomic::Ordering::Relaxed);
        assert!((5..=10).contains(&n), "{n} polls in 150 ms at 20 ms");
        let events = recorder.finish(0, u64::MAX);
        assert_eq!(events.polls, n);
        assert_eq!(events.events.len(), 1, "{events:?}");
        assert_eq!(events.events[0].kind, Checkpoint);
        assert!(events.mean_poll_us < 10_000.0);
    }
}
