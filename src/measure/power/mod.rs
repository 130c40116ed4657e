//! Power drawn over a measured window, from the meter a lab has: RAPL
//! counters, the BMC's IPMI DCMI reading, a Redfish chassis resource, or
//! any command that prints watts (a PDU, a Quarch module, a lab script).
//!
//! A meter is read once per `power.interval` on a sampler thread
//! ([`super::periodic`]), from just before the run until just after it.
//! Readings are instantaneous watts or a cumulative energy counter; either
//! way the window's energy is the integral over the window's bounds
//! ([`integrate`]): trapezoids between readings of watts, counter
//! differences for a counter, each cut at the window's open and close.
//! Only the stretch between two successive readings that both succeeded
//! counts as covered; a meter that fails or stalls mid-window leaves a gap,
//! the share of the window it covered says so, and the window's energy is
//! then not a figure (it is never the energy of a shorter window).

mod command;
mod ipmi;
mod rapl;
mod redfish;

use std::thread::Scope;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::periodic::{self, Periodic};
use crate::error::InputError;
use crate::properties::Properties;

pub use ipmi::IpmiTarget;
pub use rapl::wrapped_delta_uj;

/// `power.interval` unless set: one reading a second.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Readings closer together than this are noise in the timestamps.
const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The least time one reading may take before it counts as failed: a
/// loaded machine can take longer than a short interval to start a shell.
const MIN_DEADLINE: Duration = Duration::from_secs(1);
/// An hour: longer intervals are typos.
const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// The longest idle baseline: an hour.
const MAX_IDLE: Duration = Duration::from_secs(3600);

/// The most power one reading may say: a megawatt, far above any host,
/// chassis or rack a benchmark runs on. A meter saying more (a BMC's
/// `PowerConsumedWatts` of 1e308, a command printing garbage) gives a
/// failed reading, not a figure that turns every energy into nonsense.
pub const MAX_WATTS: f64 = 1e6;

/// `reading`, unless it says watts past [`MAX_WATTS`].
fn sane(reading: Result<Reading, String>) -> Result<Reading, String> {
    match reading {
        Ok(Reading::Watts(w)) if w > MAX_WATTS => Err(format!(
            "said {w:e} W, more than kvperf's bound of {MAX_WATTS} W for one reading"
        )),
        other => other,
    }
}

/// What one reading of a meter says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// Power now, in watts.
    Watts(f64),
    /// Energy counted since some origin, in joules, wraps already undone.
    Joules(f64),
}

/// A power meter: read once per interval. A reading that fails says why.
pub trait PowerMeter: Send {
    /// What results call the meter ("command: …", "ipmi dcmi (local)");
    /// never a credential.
    fn name(&self) -> String;
    fn read(&mut self) -> Result<Reading, String>;
}

/// Which meter the properties ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum MeterChoice {
    /// RAPL package and DRAM domains (`/sys/class/powercap`).
    Rapl,
    /// `ipmitool dcmi power reading` or a sensor in watts, locally or
    /// over LAN.
    Ipmi(IpmiTarget),
    /// A Redfish resource with a power reading (or the service root to
    /// find one from), over HTTPS; `cacert` is a CA to trust.
    Redfish {
        url: String,
        insecure: bool,
        cacert: Option<String>,
    },
    /// A command that prints watts (`sh -c`).
    Command(String),
}

/// How the window's power is measured (`power.*` properties).
#[derive(Debug, Clone, PartialEq)]
pub struct PowerSetup {
    pub meter: MeterChoice,
    /// Time between readings (`power.interval`).
    pub interval: Duration,
    /// An idle baseline measured before the window (`power.idle`), or none.
    pub idle: Option<Duration>,
}

/// Every `power.*` property kvperf reads.
pub const PROPERTIES: [&str; 10] = [
    "power.meter",
    "power.command",
    "power.interval",
    "power.idle",
    "power.ipmi.host",
    "power.ipmi.sensor",
    "power.ipmi.ciphersuite",
    "power.redfish.url",
    "power.redfish.insecure",
    "power.redfish.cacert",
];

impl PowerSetup {
    /// The meter the properties name, or None when they name none (then
    /// energy is RAPL's package counter, read at the window's bounds,
    /// where readable).
    pub fn from_properties(p: &Properties) -> Result<Option<Self>, InputError> {
        let command = p.get("power.command").map(str::to_string);
        let meter = match (p.get("power.meter"), command) {
            (None, None) => {
                if let Some(name) = PROPERTIES.iter().find(|k| p.get(k).is_some()) {
                    return Err(InputError::property(
                        name,
                        "names no meter: add power.meter (rapl, ipmi, redfish) or power.command",
                    ));
                }
                return Ok(None);
            }
            (Some("command") | None, Some(cmd)) if !cmd.trim().is_empty() => {
                MeterChoice::Command(cmd)
            }
            (Some("command") | None, _) => {
                return Err(InputError::property(
                    "power.command",
                    "is missing or empty: give a command that prints watts",
                ))
            }
            (Some("rapl"), None) => MeterChoice::Rapl,
            (Some("ipmi"), None) => MeterChoice::Ipmi(IpmiTarget {
                host: ipmi_host(p)?,
                sensor: p.get("power.ipmi.sensor").map(str::to_string),
                cipher_suite: match p.get("power.ipmi.ciphersuite") {
                    None => None,
                    Some(text) => Some(text.trim().parse::<u8>().ok().filter(|c| *c <= 17).ok_or_else(|| {
                        InputError::property(
                            "power.ipmi.ciphersuite",
                            format!("'{text}' is not an RMCP+ cipher suite (0 to 17)"),
                        )
                    })?),
                },
            }),
            (Some("redfish"), None) => MeterChoice::Redfish {
                url: p
                    .get("power.redfish.url")
                    .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
                    .ok_or_else(|| {
                        InputError::property(
                            "power.redfish.url",
                            "is needed with power.meter=redfish: the http(s) URL of a resource with a power reading, e.g. https://BMC/redfish/v1/Chassis/1/Power",
                        )
                    })?
                    .to_string(),
                insecure: match p.get("power.redfish.insecure") {
                    None | Some("false") => false,
                    Some("true") => true,
                    Some(other) => {
                        return Err(InputError::property(
                            "power.redfish.insecure",
                            format!("'{other}' is not true or false"),
                        ))
                    }
                },
                cacert: match p.get("power.redfish.cacert") {
                    Some(path) if !std::path::Path::new(path).is_file() => {
                        return Err(InputError::property(
                            "power.redfish.cacert",
                            format!("'{path}' is not a file (a CA certificate in PEM)"),
                        ))
                    }
                    path => path.map(str::to_string),
                },
            },
            (Some(m @ ("rapl" | "ipmi" | "redfish")), Some(_)) => {
                return Err(InputError::property(
                    "power.command",
                    format!("goes with power.meter=command, not power.meter={m}"),
                ))
            }
            (Some(other), _) => {
                return Err(InputError::property(
                    "power.meter",
                    format!("'{other}' is not rapl, ipmi, redfish or command"),
                ))
            }
        };
        let interval = seconds(p, "power.interval", DEFAULT_INTERVAL)?;
        if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&interval) {
            return Err(InputError::property(
                "power.interval",
                format!(
                    "{} s is not between {} and {} s",
                    interval.as_secs_f64(),
                    MIN_INTERVAL.as_secs_f64(),
                    MAX_INTERVAL.as_secs()
                ),
            ));
        }
        let idle = seconds(p, "power.idle", Duration::ZERO)?;
        if idle > MAX_IDLE {
            return Err(InputError::property(
                "power.idle",
                format!("{} s is longer than an hour", idle.as_secs_f64()),
            ));
        }
        Ok(Some(Self {
            meter,
            interval,
            idle: (!idle.is_zero()).then_some(idle),
        }))
    }

    /// The meter, after one reading that worked; or why it cannot be read
    /// here ("unavailable: …").
    pub fn open(&self) -> Result<Box<dyn PowerMeter>, String> {
        let deadline = self.deadline();
        let mut meter: Box<dyn PowerMeter> = match &self.meter {
            MeterChoice::Rapl => Box::new(rapl::RaplMeter::open()?),
            MeterChoice::Ipmi(target) => Box::new(ipmi::IpmiMeter::new(target.clone(), deadline)),
            MeterChoice::Redfish {
                url,
                insecure,
                cacert,
            } => Box::new(redfish::RedfishMeter::new(
                url.clone(),
                *insecure,
                cacert.clone(),
                self.interval,
            )?),
            MeterChoice::Command(cmd) => {
                Box::new(command::CommandMeter::new(cmd.clone(), deadline))
            }
        };
        sane(meter.read()).map_err(|why| format!("{}: {why}", meter.name()))?;
        Ok(meter)
    }
}

impl PowerSetup {
    /// A BMC named by address (IPMI over LAN, Redfish) answers one
    /// reading before anything is measured; one that does not (no answer,
    /// refused credentials, an untrusted certificate) is an input error
    /// naming the property, as the step would measure nothing it asked for.
    pub fn check_remote(&self) -> Result<(), InputError> {
        let property = match &self.meter {
            MeterChoice::Ipmi(IpmiTarget { host: Some(_), .. }) => "power.ipmi.host",
            MeterChoice::Redfish { .. } => "power.redfish.url",
            _ => return Ok(()),
        };
        self.open()
            .map(drop)
            .map_err(|why| InputError::property(property, format!("no reading: {why}")))
    }

    /// The longest one reading may take before it counts as failed (and
    /// a command is killed): the interval, at least a second.
    pub fn deadline(&self) -> Duration {
        self.interval.max(MIN_DEADLINE)
    }
}

/// `power.ipmi.host`: a host, with a port or not, and no user. One
/// given as `user:password@host` put the password on ipmitool's command
/// line (`-p password@host`), the `Command line:` header and the JSON's
/// meter name (pass 16); the reason quotes none of it.
fn ipmi_host(p: &Properties) -> Result<Option<String>, InputError> {
    let Some(host) = p.get("power.ipmi.host") else {
        return Ok(None);
    };
    if host.contains(['@', '/']) || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(InputError::property(
            "power.ipmi.host",
            "is not a host or host:port (it holds '@', '/' or white space): give the BMC's address alone, its user and password in KVPERF_IPMI_USER and KVPERF_IPMI_PASSWORD",
        ));
    }
    Ok(Some(host.to_string()))
}

/// `key` in seconds (a decimal), or `default`.
fn seconds(p: &Properties, key: &str, default: Duration) -> Result<Duration, InputError> {
    match p.get(key) {
        None => Ok(default),
        Some(text) => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                InputError::property(key, format!("'{text}' is not a number of seconds"))
            }),
    }
}

/// One reading, stamped in nanoseconds on the Unix clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub at_ns: u64,
    pub reading: Result<Reading, String>,
}

/// Reads `meter` once, stamped with the time the reading was asked for
/// (a meter answers with the power at that moment, however long the
/// answer takes to arrive).
fn take(meter: &mut dyn PowerMeter) -> Sample {
    let at_ns = crate::clock::unix_nanos();
    Sample {
        at_ns,
        reading: sane(meter.read()),
    }
}

/// A running power sampler; [`PowerSampler::stop`] ends it.
pub struct PowerSampler<'scope> {
    name: String,
    interval: Duration,
    thread: Periodic<'scope, (Box<dyn PowerMeter>, Vec<Sample>)>,
}

/// Starts reading `meter` every `interval` on a thread of `scope`; returns
/// once the first reading is taken.
pub fn sample<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    meter: Box<dyn PowerMeter>,
    interval: Duration,
) -> PowerSampler<'scope> {
    let name = meter.name();
    let thread = periodic::every(
        scope,
        "kvperf-power",
        interval,
        (meter, Vec::new()),
        |(meter, samples)| samples.push(take(meter.as_mut())),
    );
    PowerSampler {
        name,
        interval,
        thread,
    }
}

impl PowerSampler<'_> {
    /// The readings, with the meter's name.
    pub fn stop(self) -> Readings {
        let samples = match self.thread.stop() {
            Some((_, samples)) => samples,
            None => vec![Sample {
                at_ns: crate::clock::unix_nanos(),
                reading: Err("the power sampler panicked".into()),
            }],
        };
        Readings {
            meter: self.name,
            interval: self.interval,
            samples,
        }
    }
}

/// What a sampler read.
#[derive(Debug, Clone)]
pub struct Readings {
    pub meter: String,
    pub interval: Duration,
    pub samples: Vec<Sample>,
}

/// Reads `meter` every `interval` for `length` on this thread: the idle
/// baseline before a window. Its mean power is the integral over the
/// span between the first and the last reading, divided by that span.
pub fn idle_baseline(
    meter: &mut dyn PowerMeter,
    interval: Duration,
    length: Duration,
) -> Result<IdleBaseline, String> {
    let began = Instant::now();
    let mut samples = vec![take(meter)];
    for n in 1u32.. {
        let due = interval.saturating_mul(n);
        if due > length {
            break;
        }
        std::thread::sleep(due.saturating_sub(began.elapsed()));
        samples.push(take(meter));
    }
    let first = samples.first().map_or(0, |s| s.at_ns);
    let last = samples.last().map_or(0, |s| s.at_ns);
    let part = integrate(&samples, first, last.saturating_sub(first) as f64 / 1e6);
    let failed = samples.iter().filter(|s| s.reading.is_err()).count();
    if failed > 0 || part.covered_ms <= 0.0 {
        let why = samples
            .iter()
            .find_map(|s| s.reading.as_ref().err().cloned())
            .unwrap_or_else(|| "too few readings".into());
        return Err(format!(
            "idle baseline: {failed} of {} readings failed (first: {why})",
            samples.len()
        ));
    }
    Ok(IdleBaseline {
        seconds: last.saturating_sub(first) as f64 / 1e9,
        readings: samples.len() as u64,
        watts: part.joules / (part.covered_ms / 1000.0),
    })
}

/// Power measured before the window, with the engine open and no
/// operations running; subtracted to give the window's energy above idle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IdleBaseline {
    /// Span from its first reading to its last.
    pub seconds: f64,
    pub readings: u64,
    pub watts: f64,
}

/// The power a measured window drew, by one meter
/// (docs/semantics.md, "Power and energy").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerUse {
    /// The meter, as `power.meter` chose it ("command: …", "ipmi dcmi
    /// (local)", "redfish https://…", "rapl (…)").
    pub meter: String,
    /// Time between readings.
    pub interval_ms: u64,
    /// Readings taken from just before the window to just after it.
    pub readings: u64,
    pub failed_readings: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Share of the window (0..=1) between two successive readings that
    /// both succeeded.
    pub coverage: f64,
    /// Mean power over the covered part of the window.
    pub average_watts: Option<f64>,
    /// Highest power in the window: a reading, or an interpolation at the
    /// window's bounds (for a counter: the highest mean between readings).
    pub peak_watts: Option<f64>,
    /// Energy over the whole window; None unless the meter covered all of it.
    pub joules: Option<f64>,
    /// The idle baseline subtracted, when `power.idle` asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleBaseline>,
    /// `joules` less the idle baseline's watts over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_above_idle: Option<f64>,
    /// Why `joules` is not a figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// Energy over a stretch of time, and how much of it was covered.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Integral {
    pub joules: f64,
    /// Milliseconds between two successive good readings.
    pub covered_ms: f64,
    pub peak_watts: Option<f64>,
}

/// The energy over the `length_ms` milliseconds from `open_ns` (Unix
/// nanoseconds) from timestamped readings: watts by trapezoids (linear
/// between readings), a counter by its difference (linear between
/// readings), each cut at the bounds. Only stretches between two
/// successive readings that both succeeded count.
pub fn integrate(samples: &[Sample], open_ns: u64, length_ms: f64) -> Integral {
    let mut out = Integral::default();
    // Milliseconds from the open: exact to the nanosecond in an f64.
    let ms = |at_ns: u64| (i128::from(at_ns) - i128::from(open_ns)) as f64 / 1e6;
    for pair in samples.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (t0, t1) = (ms(a.at_ns), ms(b.at_ns));
        let (from, to) = (t0.max(0.0), t1.min(length_ms));
        if t1 <= t0 || to <= from {
            continue;
        }
        let at = |v0: f64, v1: f64, t: f64| v0 + (v1 - v0) * (t - t0) / (t1 - t0);
        let (joules, peak) = match (&a.reading, &b.reading) {
            (Ok(Reading::Watts(w0)), Ok(Reading::Watts(w1))) => {
                let (wa, wb) = (at(*w0, *w1, from), at(*w0, *w1, to));
                ((wa + wb) / 2.0 * (to - from) / 1000.0, wa.max(wb))
            }
            (Ok(Reading::Joules(e0)), Ok(Reading::Joules(e1))) => (
                at(*e0, *e1, to) - at(*e0, *e1, from),
                (e1 - e0) / ((t1 - t0) / 1000.0),
            ),
            _ => continue,
        };
        out.joules += joules;
        out.covered_ms += to - from;
        out.peak_watts = Some(out.peak_watts.map_or(peak, |p: f64| p.max(peak)));
    }
    out
}

impl PowerUse {
    /// The window from `open_unix_ms`, `length` long, as `readings` saw it.
    pub fn of_window(
        readings: &Readings,
        open_unix_ms: u64,
        length: Duration,
        idle: Option<IdleBaseline>,
    ) -> Self {
        let window_ms = length.as_secs_f64() * 1000.0;
        let part = integrate(&readings.samples, open_unix_ms * 1_000_000, window_ms);
        let failed: Vec<&String> = readings
            .samples
            .iter()
            .filter_map(|s| s.reading.as_ref().err())
            .collect();
        let coverage = if window_ms > 0.0 {
            (part.covered_ms / window_ms).min(1.0)
        } else {
            0.0
        };
        // Float sums of the pieces: "all of it" to a microsecond.
        let complete = window_ms > 0.0 && window_ms - part.covered_ms < 1e-3;
        let joules = complete.then_some(part.joules);
        let incomplete = (!complete).then(|| {
            format!(
                "the meter covered {:.1}% of the window ({} of {} readings failed{})",
                coverage * 100.0,
                failed.len(),
                readings.samples.len(),
                failed
                    .first()
                    .map_or(String::new(), |w| format!("; first: {w}"))
            )
        });
        PowerUse {
            meter: readings.meter.clone(),
            interval_ms: readings.interval.as_millis() as u64,
            readings: readings.samples.len() as u64,
            failed_readings: failed.len() as u64,
            first_failure: failed.first().map(|w| w.to_string()),
            coverage,
            average_watts: (part.covered_ms > 0.0)
                .then(|| part.joules / (part.covered_ms / 1000.0)),
            peak_watts: part.peak_watts,
            joules,
            idle,
            joules_above_idle: match (joules, idle) {
                (Some(j), Some(i)) => Some(j - i.watts * window_ms / 1000.0),
                _ => None,
            },
            incomplete,
        }
    }

    /// Several windows (repeats) as one: energy adds, coverage weighs by
    /// each window's length, the peak is the highest.
    pub fn combine(parts: &[(f64, &PowerUse)]) -> Option<PowerUse> {
        let (_, last) = parts.last()?;
        let wall: f64 = parts.iter().map(|(w, _)| w).sum();
        let sum = |f: &dyn Fn(&PowerUse) -> Option<f64>| -> Option<f64> {
            parts.iter().map(|(_, p)| f(p)).sum()
        };
        let covered_s: f64 = parts.iter().map(|(w, p)| w * p.coverage).sum();
        let covered_j: Option<f64> = parts
            .iter()
            .map(|(w, p)| p.average_watts.map(|a| a * w * p.coverage))
            .sum();
        Some(PowerUse {
            meter: last.meter.clone(),
            interval_ms: last.interval_ms,
            readings: parts.iter().map(|(_, p)| p.readings).sum(),
            failed_readings: parts.iter().map(|(_, p)| p.failed_readings).sum(),
            first_failure: parts.iter().find_map(|(_, p)| p.first_failure.clone()),
            coverage: if wall > 0.0 { covered_s / wall } else { 0.0 },
            average_watts: covered_j.filter(|_| covered_s > 0.0).map(|j| j / covered_s),
            peak_watts: parts
                .iter()
                .filter_map(|(_, p)| p.peak_watts)
                .reduce(f64::max),
            joules: sum(&|p| p.joules),
            idle: last.idle,
            joules_above_idle: sum(&|p| p.joules_above_idle),
            incomplete: parts.iter().find_map(|(_, p)| p.incomplete.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watts(at_ms: u64, w: f64) -> Sample {
        Sample {
            at_ns: at_ms * 1_000_000,
            reading: Ok(Reading::Watts(w)),
        }
    }

    fn failed(at_ms: u64) -> Sample {
        Sample {
            at_ns: at_ms * 1_000_000,
            reading: Err("no answer".into()),
        }
    }

    #[test]
    fn trapezoids_are_cut_at_the_window_bounds() {
        // 100 W at 0 s rising linearly to 200 W at 1 s, then 200 W.
        let s = [watts(0, 100.0), watts(1000, 200.0), watts(2000, 200.0)];
        let whole = integrate(&s, 0, 2000.0);
        assert!((whole.joules - 350.0).abs() < 1e-9, "{whole:?}");
        assert_eq!(whole.covered_ms, 2000.0);
        assert_eq!(whole.peak_watts, Some(200.0));
        // From 0.5 s (150 W) to 1.5 s: 0.5 s at a mean 175 W + 0.5 s at 200 W.
        let cut = integrate(&s, 500_000_000, 1000.0);
        assert!((cut.joules - 187.5).abs() < 1e-9, "{cut:?}");
        assert_eq!(cut.covered_ms, 1000.0);
    }

    #[test]
    fn a_counter_integrates_by_its_difference() {
        let s = [
            Sample {
                at_ns: 0,
                reading: Ok(Reading::Joules(1000.0)),
            },
            Sample {
                at_ns: 2_000_000_000,
                reading: Ok(Reading::Joules(1100.0)),
            },
        ];
        let part = integrate(&s, 500_000_000, 1000.0);
        assert!((part.joules - 50.0).abs() < 1e-9);
        assert_eq!(part.peak_watts, Some(50.0));
    }

    #[test]
    fn a_failed_reading_leaves_a_gap_and_the_window_is_marked() {
        let readings = Readings {
            meter: "test".into(),
            interval: Duration::from_secs(1),
            samples: vec![
                watts(0, 50.0),
                watts(1000, 50.0),
                failed(2000),
                watts(3000, 50.0),
                watts(4000, 50.0),
            ],
        };
        let p = PowerUse::of_window(&readings, 0, Duration::from_secs(4), None);
        assert_eq!(p.joules, None, "a gap is never a shorter window");
        assert!((p.coverage - 0.5).abs() < 1e-9, "{p:?}");
        assert_eq!(p.average_watts, Some(50.0));
        assert_eq!(p.failed_readings, 1);
        let why = p.incomplete.unwrap();
        assert!(
            why.contains("50.0% of the window") && why.contains("no answer"),
            "{why}"
        );
        // All readings good: the whole window, and the idle baseline off it.
        let mut good = readings.clone();
        good.samples[2] = watts(2000, 50.0);
        let idle = IdleBaseline {
            seconds: 2.0,
            readings: 3,
            watts: 20.0,
        };
        let p = PowerUse::of_window(&good, 0, Duration::from_secs(4), Some(idle));
        assert_eq!(p.joules, Some(200.0));
        assert_eq!(p.coverage, 1.0);
        assert_eq!(p.joules_above_idle, Some(120.0));
        assert_eq!(p.incomplete, None);
    }

    #[test]
    fn repeats_add_energy_and_weigh_coverage_by_length() {
        let one = |j: Option<f64>, coverage: f64| PowerUse {
            meter: "m".into(),
            interval_ms: 1000,
            readings: 5,
            failed_readings: 0,
            first_failure: None,
            coverage,
            average_watts: Some(100.0),
            peak_watts: Some(120.0),
            joules: j,
            idle: None,
            joules_above_idle: None,
            incomplete: None,
        };
        let (a, b) = (one(Some(1000.0), 1.0), one(Some(3000.0), 1.0));
        let all = PowerUse::combine(&[(10.0, &a), (30.0, &b)]).unwrap();
        assert_eq!(all.joules, Some(4000.0));
        assert_eq!(all.average_watts, Some(100.0));
        assert_eq!(all.readings, 10);
        let c = one(None, 0.5);
        let all = PowerUse::combine(&[(10.0, &a), (10.0, &c)]).unwrap();
        assert_eq!(all.joules, None);
        assert_eq!(all.coverage, 0.75);
    }

    /// Pass 16: `power.ipmi.host=admin:PW@bmc` reached ipmitool's
    /// arguments as `-H admin -p PW@bmc`; a host holding a user is refused
    /// with a reason that quotes none of it.
    #[test]
    fn an_ipmi_host_holding_a_user_is_refused_unquoted() {
        let setup = |host: &str| {
            let mut p = Properties::new();
            p.set("power.meter", "ipmi");
            p.set("power.ipmi.host", host);
            PowerSetup::from_properties(&p)
        };
        for host in [
            "admin:PW@bmc",
            "admin@PW",
            "PW@[::1]:623",
            "bmc/PW",
            "bmc PW",
        ] {
            let err = setup(host).unwrap_err().to_string();
            assert!(err.contains("power.ipmi.host"), "{err}");
            assert!(!err.contains("PW"), "{host}: {err}");
        }
        for host in ["bmc", "bmc:623", "10.0.0.7", "[fe80::1]:623", "fe80::1"] {
            let got = setup(host).unwrap().unwrap().meter;
            assert_eq!(
                got,
                MeterChoice::Ipmi(IpmiTarget {
                    host: Some(host.into()),
                    ..Default::default()
                })
            );
        }
    }
}
