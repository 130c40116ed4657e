//! HdrHistogram interval logs as YCSB writes them with
//! `-p hdrhistogram.fileoutput=true`: one file per measurement group
//! (`<PREFIX>READ.hdr`, `<PREFIX>READ-FAILED.hdr`, `<PREFIX>Intended-READ.hdr`),
//! in the format of HdrHistogram's `HistogramLogWriter` (format version
//! 1.3), so HistogramLogProcessor, HdrHistogram_py and HdrHistogram_c read
//! them unchanged.
//!
//! As in YCSB's files, values are microseconds and `Interval_Max` is in
//! seconds (the Java writer's default ratio of 10^6). kvperf writes one
//! interval per timeline interval (a second) where YCSB writes one per
//! status line. kvperf measures in nanoseconds; each nanosecond bucket
//! maps to one microsecond value, so the intervals of a log add up to the
//! step's histogram converted the same way, count for count.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::{hdr, new_histogram, OpHistograms};
use crate::files::Written;

/// How kvperf's own logs are recognised before one is replaced.
pub const WRITTEN: Written = Written {
    what: "kvperf HdrHistogram interval log",
    recognizes: is_kvperf_log,
    extension: "hdr",
};

/// kvperf's second line, after `#[Logging for: GROUP]`, with its version
/// between these two parts (HdrHistogram's readers skip `#` lines).
const SIGNATURE: (&str, &str) = (
    "#[kvperf ",
    " interval log: one interval per second of the measured window; values in microseconds, Interval_Max in seconds]",
);

/// Whether `head` starts exactly as kvperf's logs do: `#[Logging for: GROUP]`,
/// then kvperf's line with a version; a file that merely holds "#[kvperf "
/// somewhere is not one.
fn is_kvperf_log(head: &[u8]) -> bool {
    use crate::files::signature::{is_semver, line};
    let group = line(head, 0)
        .and_then(|l| l.strip_prefix("#[Logging for: "))
        .and_then(|l| l.strip_suffix(']'))
        .is_some_and(|g| {
            !g.is_empty() && g.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    let version = line(head, 1)
        .and_then(|l| l.strip_prefix(SIGNATURE.0))
        .and_then(|l| l.strip_suffix(SIGNATURE.1));
    group && version.is_some_and(is_semver)
}

/// The interval histograms of one measured window, per group, as log lines.
#[derive(Debug, Default)]
pub struct IntervalLogs {
    /// Group name (YCSB's: `READ`, `READ-FAILED`, `Intended-READ`) -> lines.
    groups: BTreeMap<String, Vec<String>>,
    /// Every interval so far, (start, length) in seconds from the window's
    /// open: a group that first appears later gets empty intervals before.
    spans: Vec<(f64, f64)>,
}

impl IntervalLogs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the interval `[start_s, start_s + length_s)` (seconds from
    /// the window's open) from the histograms handed over in it.
    pub fn add(&mut self, histograms: &OpHistograms, start_s: f64, length_s: f64) {
        self.spans.push((start_s, length_s));
        let mut present: Vec<(String, &Histogram<u64>)> = Vec::new();
        for (kind, group) in histograms.iter() {
            let name = kind.ycsb_name();
            for (prefix, suffix, h) in [
                ("", "", &group.ok),
                ("", "-FAILED", &*group.failed),
                ("Intended-", "", &*group.intended),
                ("Intended-", "-FAILED", &*group.intended_failed),
            ] {
                if !h.is_empty() {
                    present.push((format!("{prefix}{name}{suffix}"), h));
                }
            }
        }
        let empty = new_histogram();
        for (name, _) in &present {
            if !self.groups.contains_key(name) {
                let before: Vec<String> = self.spans[..self.spans.len() - 1]
                    .iter()
                    .map(|&(s, l)| line(&empty, s, l))
                    .collect();
                self.groups.insert(name.clone(), before);
            }
        }
        for (name, lines) in &mut self.groups {
            let h = present
                .iter()
                .find(|(n, _)| n == name)
                .map_or(&empty, |(_, h)| *h);
            lines.push(line(h, start_s, length_s));
        }
    }

    /// Each group's log file contents, for a window that opened at
    /// `opened_unix_ms`.
    pub fn files(&self, opened_unix_ms: u64) -> Vec<(String, String)> {
        let opened_s = opened_unix_ms as f64 / 1000.0;
        self.groups
            .iter()
            .map(|(name, lines)| {
                let mut text = format!(
                    "#[Logging for: {name}]\n\
                     {}{}{}\n\
                     #[Histogram log format version 1.3]\n\
                     #[StartTime: {opened_s:.3} (seconds since epoch)]\n\
                     #[BaseTime: {opened_s:.3} (seconds since epoch)]\n\
                     \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
                    SIGNATURE.0,
                    env!("CARGO_PKG_VERSION"),
                    SIGNATURE.1
                );
                for l in lines {
                    text.push_str(l);
                }
                (name.clone(), text)
            })
            .collect()
    }

    /// Group names with a log, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(String::as_str)
    }
}

/// One interval as the Java writer prints it:
/// `start,length,max,histogram` (`%.3f,%.3f,%.3f,%s`).
fn line(h: &Histogram<u64>, start_s: f64, length_s: f64) -> String {
    let us = to_micros(h);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{start_s:.3},{length_s:.3},{:.3},{}",
        us.max() as f64 / 1e6,
        hdr::encode(&us)
    );
    text
}

/// A nanosecond histogram in microseconds: every bucket's count moves to
/// its median value / 1000, rounded, so the conversion adds up (the
/// converted sum of intervals is the converted total).
pub fn to_micros(ns: &Histogram<u64>) -> Histogram<u64> {
    let mut us = new_histogram();
    for v in ns.iter_recorded() {
        let value = (ns.median_equivalent(v.value_iterated_to()) + 500) / 1000;
        // Auto-resizing: recording cannot fail.
        let _ = us.record_n(value, v.count_at_value());
    }
    us
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{OpError, OpKind};
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    fn reads(latencies_us: &[u64], failed: usize) -> OpHistograms {
        let mut h = OpHistograms::new();
        for &us in latencies_us {
            h.record(OpKind::Read, us * 1000 + 123, None, &Ok(()));
        }
        for _ in 0..failed {
            h.record(OpKind::Read, 7_000, None, &Err(OpError::NotFound));
        }
        h
    }

    /// The histograms of a log, read back with HdrHistogram's own reader.
    fn read_back(text: &str) -> Vec<(f64, f64, Histogram<u64>)> {
        IntervalLogIterator::new(text.as_bytes())
            .filter_map(|e| match e.expect("parses") {
                LogEntry::Interval(i) => Some((
                    i.start_timestamp().as_secs_f64(),
                    i.duration().as_secs_f64(),
                    hdr::decode(i.encoded_histogram()).expect("decodes"),
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn intervals_add_up_to_the_windows_histogram() {
        let intervals = [
            reads(&[10, 20, 30], 0),
            reads(&[], 2),
            reads(&[5_000, 40], 1),
        ];
        let mut logs = IntervalLogs::new();
        let mut total = OpHistograms::new();
        for (k, i) in intervals.iter().enumerate() {
            logs.add(i, k as f64, 1.0);
            total.add(i);
        }
        let files: BTreeMap<String, String> = logs.files(1_700_000_000_123).into_iter().collect();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            vec!["READ", "READ-FAILED"]
        );
        let read = read_back(&files["READ"]);
        assert_eq!(read.len(), 3);
        assert_eq!(
            read.iter().map(|(s, l, _)| (*s, *l)).collect::<Vec<_>>(),
            vec![(0.0, 1.0), (1.0, 1.0), (2.0, 1.0)]
        );
        let mut sum = new_histogram();
        for (_, _, h) in &read {
            sum.add(h).unwrap();
        }
        let expected = to_micros(&total.get(OpKind::Read).unwrap().ok);
        let recorded = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(recorded(&sum), recorded(&expected));
        assert_eq!(sum.len(), 5);
        assert!((4_990..=5_010).contains(&sum.max()), "{}", sum.max());
        // The failed group appeared in the second interval: an empty first.
        let failed = read_back(&files["READ-FAILED"]);
        let counts: Vec<u64> = failed.iter().map(|(_, _, h)| h.len()).collect();
        assert_eq!(counts, vec![0, 2, 1]);
    }

    #[test]
    fn header_is_the_java_writers_and_recognised_as_kvperfs() {
        let mut logs = IntervalLogs::new();
        logs.add(&reads(&[100], 0), 0.0, 1.0);
        let (_, text) = logs.files(1_700_000_000_123).remove(0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "#[Logging for: READ]");
        assert_eq!(lines[2], "#[Histogram log format version 1.3]");
        assert_eq!(
            lines[3],
            "#[StartTime: 1700000000.123 (seconds since epoch)]"
        );
        assert!(lines[5].starts_with("\"StartTimestamp\""));
        // Max 100 us is 0.000 s at 3 decimals, as Java prints it.
        assert!(
            lines[6].starts_with("0.000,1.000,0.000,HIST"),
            "{}",
            lines[6]
        );
        assert!((WRITTEN.recognizes)(text.as_bytes()));
        assert!(!(WRITTEN.recognizes)(
            b"#[Logging for: READ]\nsomebody's notes"
        ));
        // Notes that mention kvperf's words are still not its log (issue 44).
        assert!(!(WRITTEN.recognizes)(
            b"#[Logging for: READ]\n#[kvperf notes]\n#[kvperf 0.1.0 interval log]\n"
        ));
        let start = IntervalLogIterator::new(text.as_bytes()).find_map(|e| match e {
            Ok(LogEntry::StartTime(t)) => Some(t.as_secs_f64()),
            _ => None,
        });
        assert!((start.unwrap() - 1_700_000_000.123).abs() < 1e-6);
    }

    #[test]
    fn microseconds_round_from_the_bucket_middle() {
        let mut ns = new_histogram();
        ns.record_n(1_499, 3).unwrap();
        ns.record_n(1_500, 1).unwrap();
        ns.record(400).unwrap();
        let us = to_micros(&ns);
        assert_eq!(us.count_at(1), 3);
        assert_eq!(us.count_at(2), 1);
        assert_eq!(us.count_at(0), 1);
        assert_eq!(us.len(), 5);
    }
}
