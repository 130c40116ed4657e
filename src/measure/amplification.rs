//! Read and write amplification as kvperf shows it, a ratio or the word
//! that stands for it (docs/semantics.md, "Costs"): one rule for the
//! report's tables, its CSV and the text output of a run.

/// A ratio kvperf measured but that cannot mean anything (docs/semantics.md).
pub const UNRELIABLE: &str = "unreliable";

/// Whose bytes an amplification divides by the logical bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bytes {
    /// The engine's processes' block-layer bytes (`/proc/PID/io`).
    Process,
    /// The data directory's device's sectors (`/proc/diskstats`).
    Device,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// One read or write amplification as a report shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amplification {
    Ratio(f64),
    /// The device's bytes were not the engine's alone.
    Shared,
    /// Too few logical bytes to divide by.
    Unreliable,
    /// Not measured: a memory file system (tmpfs) has no device and no
    /// block-layer bytes; or the counter could not be read.
    Unavailable,
    /// Measured, but the window moved no logical bytes that way.
    NothingToDivide,
}

impl Amplification {
    pub fn word(self) -> &'static str {
        match self {
            Self::Ratio(_) => "",
            Self::Shared => "shared",
            Self::Unreliable => UNRELIABLE,
            Self::Unavailable => "unavailable",
            Self::NothingToDivide => "-",
        }
    }

    /// The ratio to two decimals, or the word that stands for it.
    pub fn cell(self) -> String {
        match self {
            Self::Ratio(x) => format!("{x:.2}"),
            other => other.word().into(),
        }
    }
}

/// The amplification of `a`'s window by `bytes` in `direction`
/// (docs/semantics.md, "Costs").
pub fn amplification(
    a: &crate::measure::accounting::Accounting,
    bytes: Bytes,
    direction: Direction,
) -> Amplification {
    let d = &a.derived;
    let (ratio, unreliable, measured) = match (bytes, direction) {
        (Bytes::Process, Direction::Read) => (
            d.read_amplification_process,
            d.read_amplification_process_unreliable,
            a.process_io.is_some() || a.server.is_some(),
        ),
        (Bytes::Process, Direction::Write) => (
            d.write_amplification_process,
            d.write_amplification_process_unreliable,
            a.process_io.is_some() || a.server.is_some(),
        ),
        (Bytes::Device, Direction::Read) => (
            d.read_amplification_device,
            d.read_amplification_device_unreliable,
            a.device_io.is_some(),
        ),
        (Bytes::Device, Direction::Write) => (
            d.write_amplification_device,
            d.write_amplification_device_unreliable,
            a.device_io.is_some(),
        ),
    };
    match ratio {
        _ if a.memory_filesystem || !measured => Amplification::Unavailable,
        _ if unreliable => Amplification::Unreliable,
        Some(_) if bytes == Bytes::Device && d.device_amplification_shared => Amplification::Shared,
        Some(x) => Amplification::Ratio(x),
        None => Amplification::NothingToDivide,
    }
}

impl Bytes {
    pub const BOTH: [Bytes; 2] = [Bytes::Process, Bytes::Device];
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::Read, Direction::Write];
}

/// The figure's name in a result's JSON (`accounting.derived`).
pub fn json_name(bytes: Bytes, direction: Direction) -> &'static str {
    match (bytes, direction) {
        (Bytes::Process, Direction::Read) => "read_amplification_process",
        (Bytes::Process, Direction::Write) => "write_amplification_process",
        (Bytes::Device, Direction::Read) => "read_amplification_device",
        (Bytes::Device, Direction::Write) => "write_amplification_device",
    }
}
