//! CoreWorkload's properties with YCSB 0.17.0's defaults
//! (`site/ycsb/workloads/CoreWorkload.java`, `Client.java`), parsed once and
//! validated, so a run never starts on input that cannot make sense.

use crate::error::{did_you_mean, InputError};
use crate::properties::Properties;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestDistribution {
    Uniform,
    Zipfian,
    /// kvperf's own `plainzipfian`: record i (from insertstart) is rank i,
    /// not hashed over 10^10 ranks as YCSB's `zipfian` is.
    PlainZipfian,
    Latest,
    Hotspot,
    Sequential,
    Exponential,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldLength {
    Constant(u64),
    Uniform {
        min: u64,
        max: u64,
    },
    Zipfian {
        min: u64,
        max: u64,
    },
    /// Path of a YCSB histogram file (`fieldlengthhistogram`).
    Histogram(String),
}

impl FieldLength {
    /// The longest value this distribution can give; 0 for a histogram,
    /// whose longest is known once its file is read and is then checked
    /// as this one is ([`CoreConfig::check_longest_field`]).
    pub fn max(&self) -> u64 {
        match self {
            FieldLength::Constant(n) => *n,
            FieldLength::Uniform { max, .. } | FieldLength::Zipfian { max, .. } => *max,
            FieldLength::Histogram(_) => 0,
        }
    }

    /// Each field's length in words: `100 B`, `1..100 B uniform`.
    pub fn describe(&self) -> String {
        match self {
            FieldLength::Constant(n) => format!("{n} B"),
            FieldLength::Uniform { min, max } => format!("{min}..{max} B uniform"),
            FieldLength::Zipfian { min, max } => format!("{min}..{max} B zipfian"),
            FieldLength::Histogram(path) => format!("a length from histogram {path}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanLengthDistribution {
    Uniform,
    Zipfian,
}

/// Weights of the operation chooser; YCSB normalises them by their sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proportions {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
}

impl Proportions {
    pub fn sum(&self) -> f64 {
        self.read + self.update + self.insert + self.scan + self.read_modify_write
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CoreConfig {
    pub table: String,
    pub record_count: u64,
    pub operation_count: u64,
    pub field_count: u64,
    pub field_name_prefix: String,
    pub field_length: FieldLength,
    pub read_all_fields: bool,
    pub write_all_fields: bool,
    pub proportions: Proportions,
    pub request_distribution: RequestDistribution,
    /// kvperf extension; YCSB hard-wires 0.99.
    pub zipfian_constant: f64,
    pub hashed_inserts: bool,
    pub insert_start: u64,
    pub insert_count: u64,
    /// kvperf extension: the key number of a run's first insert. YCSB
    /// always starts at `recordcount`; a plan's later inserting step on the
    /// same store starts past the keys earlier steps inserted.
    pub run_insert_start: u64,
    pub zero_padding: usize,
    pub hotspot_data_fraction: f64,
    pub hotspot_opn_fraction: f64,
    pub min_scan_length: u64,
    pub max_scan_length: u64,
    pub scan_length_distribution: ScanLengthDistribution,
    pub exponential_percentile: f64,
    pub exponential_frac: f64,
    pub insertion_retry_limit: u64,
    pub insertion_retry_interval_s: u64,
    pub data_integrity: bool,
}

/// Every property kvperf understands (YCSB's core and client ones plus
/// kvperf's own); used for "did you mean" on unknown names.
pub const KNOWN_PROPERTIES: &[&str] = &[
    "workload",
    "db",
    "exporter",
    "exportfile",
    "measurementtype",
    "threadcount",
    "target",
    "dotransactions",
    "status.interval",
    "hdrhistogram.percentiles",
    "hdrhistogram.fileoutput",
    "hdrhistogram.output.path",
    "measurement.interval",
    "maxexecutiontime",
    "table",
    "recordcount",
    "operationcount",
    "fieldcount",
    "fieldnameprefix",
    "fieldlength",
    "minfieldlength",
    "fieldlengthdistribution",
    "fieldlengthhistogram",
    "readallfields",
    "writeallfields",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "insertorder",
    "insertstart",
    "insertcount",
    "zeropadding",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "minscanlength",
    "maxscanlength",
    "scanlengthdistribution",
    "exponential.percentile",
    "exponential.frac",
    "core_workload_insertion_retry_limit",
    "core_workload_insertion_retry_interval",
    "dataintegrity",
    "basicdb.verbose",
    "basicdb.simulatedelay",
    "basicdb.randomizedelay",
    "measurement.trackjvm",
    // kvperf's own:
    "zipfianconstant",
    "runinsertstart",
    "warmuptime",
    "seed",
    "onerror",
    "clients",
    "runtimethreads",
    "stalltimeout",
    "events.interval",
    "trace.output",
];

const CORE_WORKLOAD: &str = "site.ycsb.workloads.CoreWorkload";

/// Bounds on the properties that size an allocation (a key, a record, a
/// scan's results per thread), so a typo is an error instead of a run that
/// allocates until it is killed.
const MAX_ZERO_PADDING: u64 = 1 << 16;
/// Key numbers stay below this (2^48, 281 trillion records), so sums of
/// counts never overflow: a study a million times a billion-record one.
pub const MAX_KEY_NUMBER: u64 = 1 << 48;
const MAX_FIELD_COUNT: u64 = 1 << 20;
const MAX_RECORD_BYTES: u64 = 1 << 30;
const MAX_SCAN_LENGTH: u64 = 1 << 24;
const MAX_SCAN_BYTES: u64 = 4 << 30;
/// Ten years: longer waits are typos (and would overflow a clock).
const MAX_RETRY_INTERVAL_S: u64 = 10 * 365 * 86_400;

/// The operations' shares, each finite and summing to a finite number,
/// above 0 outside a load.
fn proportions(p: &Properties, load: bool) -> Result<Proportions, InputError> {
    let proportions = Proportions {
        read: proportion(p, "readproportion", 0.95)?,
        update: proportion(p, "updateproportion", 0.05)?,
        insert: proportion(p, "insertproportion", 0.0)?,
        scan: proportion(p, "scanproportion", 0.0)?,
        read_modify_write: proportion(p, "readmodifywriteproportion", 0.0)?,
    };
    // Each proportion is finite (Properties::f64); their sum may still
    // overflow (1e308 + 1e308), and the op chooser would then pick
    // the last op every time.
    if !proportions.sum().is_finite() {
        return Err(InputError::Invalid(format!(
            "operation proportions sum to more than kvperf can count ({:e} + {:e} + {:e} + {:e} + {:e}): give them as shares, such as readproportion=0.5 updateproportion=0.5",
            proportions.read,
            proportions.update,
            proportions.insert,
            proportions.scan,
            proportions.read_modify_write
        )));
    }
    if !load && proportions.sum() <= 0.0 {
        return Err(InputError::Invalid(
            "operation proportions sum to 0: set readproportion, updateproportion, insertproportion, scanproportion or readmodifywriteproportion above 0".into(),
        ));
    }
    Ok(proportions)
}

/// The load's keys (`insertstart`, `insertcount`) within `recordcount`,
/// and where a run's inserts start (`runinsertstart`, past the loaded
/// records).
fn insert_range(p: &Properties, record_count: u64) -> Result<(u64, u64, u64), InputError> {
    let insert_start = p.u64("insertstart", 0)?;
    if insert_start >= record_count {
        return Err(InputError::property(
            "insertstart",
            format!("{insert_start} must be below recordcount ({record_count})"),
        ));
    }
    let insert_count = match p.get("insertcount") {
        None => record_count - insert_start,
        Some(_) => positive(p, "insertcount", 0)?,
    };
    if insert_start + insert_count > record_count {
        return Err(InputError::Invalid(format!(
            "insertstart ({insert_start}) + insertcount ({insert_count}) exceeds recordcount ({record_count})"
        )));
    }
    let run_insert_start = at_most(
        p,
        "runinsertstart",
        p.u64("runinsertstart", record_count)?,
        MAX_KEY_NUMBER,
    )?;
    if run_insert_start < record_count {
        return Err(InputError::property(
            "runinsertstart",
            format!(
                "{run_insert_start} is below recordcount ({record_count}): a run's inserts would overwrite loaded records"
            ),
        ));
    }
    Ok((insert_start, insert_count, run_insert_start))
}

/// `minscanlength` and `maxscanlength`, a scan's records bounded by the
/// bytes one scan may hold.
fn scan_lengths(p: &Properties, record_bytes: u64) -> Result<(u64, u64), InputError> {
    let min_scan_length = positive(p, "minscanlength", 1)?;
    let max_scan_length = at_most(
        p,
        "maxscanlength",
        positive(p, "maxscanlength", 1000)?,
        MAX_SCAN_LENGTH,
    )?;
    check_scan_bytes(max_scan_length, record_bytes)?;
    if min_scan_length > max_scan_length {
        return Err(InputError::Invalid(format!(
            "minscanlength ({min_scan_length}) exceeds maxscanlength ({max_scan_length})"
        )));
    }
    Ok((min_scan_length, max_scan_length))
}

/// Bytes of a record of `field_count` fields of at most `longest` bytes
/// (`what` names that length), refused past [`MAX_RECORD_BYTES`].
fn record_bytes(field_count: u64, longest: u64, what: &str) -> Result<u64, InputError> {
    let record_bytes = field_count.saturating_mul(longest);
    if record_bytes > MAX_RECORD_BYTES {
        return Err(InputError::Invalid(format!(
            "fieldcount ({field_count}) x {what} is {record_bytes} bytes per record, more than kvperf allows ({MAX_RECORD_BYTES})"
        )));
    }
    Ok(record_bytes)
}

fn check_scan_bytes(max_scan_length: u64, record_bytes: u64) -> Result<(), InputError> {
    if max_scan_length.saturating_mul(record_bytes) > MAX_SCAN_BYTES {
        return Err(InputError::Invalid(format!(
            "maxscanlength ({max_scan_length}) records of {record_bytes} bytes is more than one scan may hold ({MAX_SCAN_BYTES} bytes)"
        )));
    }
    Ok(())
}

impl CoreConfig {
    /// Holds a field length known only once its file is read (a
    /// histogram's longest, named by `what`) to the caps `fieldlength` is
    /// held to: the bytes of a record and of a scan.
    pub fn check_longest_field(&self, longest: u64, what: &str) -> Result<(), InputError> {
        let record_bytes = record_bytes(self.field_count, longest, what)?;
        check_scan_bytes(self.max_scan_length, record_bytes)
    }

    /// `load` says whether this is the load phase, where `operationcount`
    /// is not needed.
    pub fn from_properties(p: &Properties, load: bool) -> Result<Self, InputError> {
        if let Some(w) = p.get("workload") {
            if w != CORE_WORKLOAD && w != "com.yahoo.ycsb.workloads.CoreWorkload" {
                return Err(InputError::property(
                    "workload",
                    format!("'{w}' is not supported; kvperf runs {CORE_WORKLOAD}"),
                ));
            }
        }
        let record_count = at_most(
            p,
            "recordcount",
            positive(p, "recordcount", 0)?,
            MAX_KEY_NUMBER,
        )?;
        let operation_count = p.u64("operationcount", 0)?;
        let field_count = at_most(
            p,
            "fieldcount",
            positive(p, "fieldcount", 10)?,
            MAX_FIELD_COUNT,
        )?;
        let field_length = field_length(p)?;
        let longest = field_length.max();
        let record_bytes = record_bytes(field_count, longest, &format!("fieldlength ({longest})"))?;
        let proportions = proportions(p, load)?;
        let (insert_start, insert_count, run_insert_start) = insert_range(p, record_count)?;
        let zipfian_constant = p.f64("zipfianconstant", 0.99)?;
        if zipfian_constant.is_nan() || zipfian_constant <= 0.0 || zipfian_constant == 1.0 {
            return Err(InputError::property(
                "zipfianconstant",
                format!("{zipfian_constant} must be > 0 and not 1"),
            ));
        }
        let (min_scan_length, max_scan_length) = scan_lengths(p, record_bytes)?;
        let data_integrity = p.bool("dataintegrity", false)?;
        if data_integrity && !matches!(field_length, FieldLength::Constant(_)) {
            return Err(InputError::property(
                "dataintegrity",
                "needs fieldlengthdistribution=constant (as in YCSB)",
            ));
        }
        let hotspot_data_fraction = fraction(p, "hotspotdatafraction", 0.2)?;
        let hotspot_opn_fraction = fraction(p, "hotspotopnfraction", 0.8)?;
        let exponential_percentile = p.f64("exponential.percentile", 95.0)?;
        if !(exponential_percentile > 0.0 && exponential_percentile < 100.0) {
            return Err(InputError::property(
                "exponential.percentile",
                format!("{exponential_percentile} must be between 0 and 100"),
            ));
        }
        let exponential_frac = p.f64("exponential.frac", 0.8571428571)?;
        if exponential_frac.is_nan() || exponential_frac <= 0.0 {
            return Err(InputError::property("exponential.frac", "must be > 0"));
        }
        Ok(Self {
            table: p.string("table", "usertable"),
            record_count,
            operation_count,
            field_count,
            field_name_prefix: p.string("fieldnameprefix", "field"),
            field_length,
            read_all_fields: p.bool("readallfields", true)?,
            write_all_fields: p.bool("writeallfields", false)?,
            proportions,
            request_distribution: request_distribution(p)?,
            zipfian_constant,
            // YCSB: exactly "hashed" is hashed, anything else is ordered.
            hashed_inserts: p.string("insertorder", "hashed") == "hashed",
            insert_start,
            insert_count,
            run_insert_start,
            zero_padding: at_most(p, "zeropadding", p.u64("zeropadding", 1)?, MAX_ZERO_PADDING)?
                as usize,
            hotspot_data_fraction,
            hotspot_opn_fraction,
            min_scan_length,
            max_scan_length,
            scan_length_distribution: match p.string("scanlengthdistribution", "uniform").as_str() {
                "uniform" => ScanLengthDistribution::Uniform,
                "zipfian" => ScanLengthDistribution::Zipfian,
                other => {
                    return Err(InputError::property(
                        "scanlengthdistribution",
                        format!("'{other}' is not uniform or zipfian"),
                    ))
                }
            },
            exponential_percentile,
            exponential_frac,
            insertion_retry_limit: p.u64("core_workload_insertion_retry_limit", 0)?,
            insertion_retry_interval_s: at_most(
                p,
                "core_workload_insertion_retry_interval",
                p.u64("core_workload_insertion_retry_interval", 3)?,
                MAX_RETRY_INTERVAL_S,
            )?,
            data_integrity,
        })
    }

    pub fn field_names(&self) -> Vec<String> {
        (0..self.field_count)
            .map(|i| format!("{}{i}", self.field_name_prefix))
            .collect()
    }

    /// YCSB's zipfian key space includes the inserts it expects during the
    /// run: `(int)(operationcount * insertproportion * 2.0)` ("2 is fudge factor").
    pub fn expected_new_keys(&self) -> u64 {
        // The raw property, not the normalised share, as YCSB does; a float
        // cast saturates, and the key space stops at MAX_KEY_NUMBER.
        ((self.operation_count as f64 * self.proportions.insert * 2.0) as u64).min(MAX_KEY_NUMBER)
    }
}

/// Warnings for properties nobody reads (YCSB passes them to the binding).
pub fn unknown_property_warnings(p: &Properties, engine_prefixes: &[&str]) -> Vec<String> {
    // The power meter's properties are the client's (measure::power).
    let known = || {
        KNOWN_PROPERTIES
            .iter()
            .chain(crate::measure::power::PROPERTIES.iter())
            .copied()
    };
    p.iter()
        .map(|(k, _)| k)
        .filter(|k| !known().any(|known| known == *k))
        .filter(|k| !engine_prefixes.iter().any(|pre| k.starts_with(pre)))
        .map(|k| match did_you_mean(k, known()) {
            Some(near) => {
                format!("unknown property '{k}' (did you mean '{near}'?); passed to the engine")
            }
            None => format!("unknown property '{k}'; passed to the engine"),
        })
        .collect()
}

fn positive(p: &Properties, key: &str, default: u64) -> Result<u64, InputError> {
    let v = p.u64(key, default)?;
    if v == 0 {
        let why = if p.contains(key) {
            "must be greater than 0"
        } else {
            "is required"
        };
        return Err(InputError::property(key, why));
    }
    Ok(v)
}

/// `value` of `key`, if it is at most `max`.
fn at_most(p: &Properties, key: &str, value: u64, max: u64) -> Result<u64, InputError> {
    if value > max {
        let given = p.get(key).unwrap_or("");
        return Err(InputError::property(
            key,
            format!("{given} is more than kvperf allows ({max})"),
        ));
    }
    Ok(value)
}

fn proportion(p: &Properties, key: &str, default: f64) -> Result<f64, InputError> {
    let v = p.f64(key, default)?;
    if v < 0.0 {
        return Err(InputError::property(key, format!("{v} is negative")));
    }
    Ok(v)
}

fn fraction(p: &Properties, key: &str, default: f64) -> Result<f64, InputError> {
    let v = p.f64(key, default)?;
    if !(0.0..=1.0).contains(&v) {
        return Err(InputError::property(
            key,
            format!("{v} is not between 0 and 1"),
        ));
    }
    Ok(v)
}

fn field_length(p: &Properties) -> Result<FieldLength, InputError> {
    // YCSB accepts fieldlength=0: every value is empty.
    // Bytes: `1k` and `4KiB` as fio and plans write them.
    let max = p.size("fieldlength", 100)?;
    let min = p.size("minfieldlength", 1.min(max))?;
    let dist = p.string("fieldlengthdistribution", "constant");
    let check_range = || {
        if min > max {
            Err(InputError::Invalid(format!(
                "minfieldlength ({min}) exceeds fieldlength ({max})"
            )))
        } else {
            Ok(())
        }
    };
    Ok(match dist.as_str() {
        "constant" => FieldLength::Constant(max),
        "uniform" => {
            check_range()?;
            FieldLength::Uniform { min, max }
        }
        "zipfian" => {
            check_range()?;
            FieldLength::Zipfian { min, max }
        }
        "histogram" => FieldLength::Histogram(p.string("fieldlengthhistogram", "hist.txt")),
        other => {
            return Err(InputError::property(
                "fieldlengthdistribution",
                format!("'{other}' is not constant, uniform, zipfian or histogram"),
            ))
        }
    })
}

fn request_distribution(p: &Properties) -> Result<RequestDistribution, InputError> {
    use RequestDistribution::*;
    Ok(match p.string("requestdistribution", "uniform").as_str() {
        "uniform" => Uniform,
        "zipfian" => Zipfian,
        "plainzipfian" => PlainZipfian,
        "latest" => Latest,
        "hotspot" => Hotspot,
        "sequential" => Sequential,
        "exponential" => Exponential,
        other => {
            return Err(InputError::property(
                "requestdistribution",
                format!("'{other}' is not one of uniform, zipfian, plainzipfian, latest, hotspot, sequential, exponential"),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> Properties {
        let mut p = Properties::new();
        p.load_str(text);
        p
    }

    #[test]
    fn defaults_are_ycsbs() {
        let c = CoreConfig::from_properties(&props("recordcount=1000\noperationcount=10"), false)
            .unwrap();
        assert_eq!(c.field_count, 10);
        assert_eq!(c.field_length, FieldLength::Constant(100));
        assert_eq!(c.proportions.read, 0.95);
        assert_eq!(c.proportions.update, 0.05);
        assert_eq!(c.request_distribution, RequestDistribution::Uniform);
        assert!(c.hashed_inserts && c.read_all_fields && !c.write_all_fields);
        assert_eq!((c.min_scan_length, c.max_scan_length), (1, 1000));
        assert_eq!(c.insert_count, 1000);
        assert_eq!(c.table, "usertable");
        assert_eq!(c.zero_padding, 1);
    }

    #[test]
    fn rejects_bad_input_with_the_property_named() {
        let cases = [
            ("recordcount=0", "recordcount"),
            ("recordcount=-3", "negative"),
            ("recordcount=abc", "recordcount"),
            (
                "recordcount=10\nreadproportion=0\nupdateproportion=0",
                "sum to 0",
            ),
            ("recordcount=10\nreadproportion=-1", "readproportion"),
            (
                "recordcount=10\nreadproportion=1e308\nupdateproportion=1e308",
                "sum to more than kvperf can count",
            ),
            (
                "recordcount=10\ninsertstart=5\ninsertcount=6",
                "exceeds recordcount",
            ),
            (
                "recordcount=10\nrequestdistribution=zipf",
                "requestdistribution",
            ),
            (
                "recordcount=10\nfieldlengthdistribution=uniform\ndataintegrity=true",
                "dataintegrity",
            ),
            (
                "recordcount=10\nworkload=site.ycsb.workloads.TimeSeriesWorkload",
                "not supported",
            ),
            ("recordcount=10\nfieldcount=0", "fieldcount"),
            (
                "recordcount=10\nzeropadding=100000000000",
                "zeropadding: 100000000000 is more than",
            ),
            (
                "recordcount=10\nfieldlength=10000000000",
                "bytes per record",
            ),
            (
                "recordcount=10\nmaxscanlength=100000000000",
                "maxscanlength",
            ),
            (
                "recordcount=10\nfieldlength=1000000\nmaxscanlength=100000",
                "one scan may hold",
            ),
            (
                "recordcount=10\ncore_workload_insertion_retry_interval=99999999999",
                "core_workload_insertion_retry_interval",
            ),
        ];
        for (text, expected) in cases {
            let err = CoreConfig::from_properties(&props(text), false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{text:?} gave {err:?}");
        }
    }

    #[test]
    fn a_histograms_longest_length_is_held_to_the_record_and_scan_caps() {
        // Pass 14: a histogram's lengths skipped both caps (its max() is 0
        // until its file is read), so 512 MiB fields x 10 made 5 GiB records.
        let c = CoreConfig::from_properties(
            &props("recordcount=1\nfieldlengthdistribution=histogram"),
            true,
        )
        .unwrap();
        let err = c
            .check_longest_field(512 << 20, "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("5368709120 bytes per record"), "{err}");
        let one = CoreConfig::from_properties(
            &props("recordcount=1\nfieldcount=1\nfieldlengthdistribution=histogram"),
            true,
        )
        .unwrap();
        let err = one
            .check_longest_field(1 << 30, "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("one scan may hold"), "{err}");
        assert!(c.check_longest_field(100, "x").is_ok());
    }

    #[test]
    fn unknown_properties_warn_with_a_suggestion() {
        let p =
            props("recordcount=10\nreadproportoin=0.5\nrocksdb.compression=lz4\nmy.binding.opt=1");
        let warnings = unknown_property_warnings(&p, &["rocksdb."]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings
            .iter()
            .any(|w| w.contains("did you mean 'readproportion'")));
    }

    #[test]
    fn expected_new_keys_follows_ycsb() {
        let c = CoreConfig::from_properties(
            &props("recordcount=1000\noperationcount=1000\nreadproportion=0.95\nupdateproportion=0\ninsertproportion=0.05"),
            false,
        )
        .unwrap();
        assert_eq!(c.expected_new_keys(), 100);
    }
}
