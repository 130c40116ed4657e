//! Where a latency is timed from: the kind every latency figure carries,
//! so that only like is compared with like (docs/semantics.md,
//! "Latency kinds").

use serde::{Deserialize, Serialize};

/// The start a latency is measured from.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum LatencyStart {
    /// From the operation's actual start: its service time. Every step
    /// records it, paced or not.
    Actual,
    /// From its intended start under a target rate (`-p target=...`):
    /// queueing behind a slow operation included (coordinated-omission
    /// corrected). Only a paced step has it.
    Intended,
}

impl LatencyStart {
    /// "actual" or "intended", for machines (CSV, JSON).
    pub fn name(self) -> &'static str {
        match self {
            LatencyStart::Actual => "actual",
            LatencyStart::Intended => "intended",
        }
    }

    /// "from the actual start", for readers.
    pub fn words(self) -> &'static str {
        match self {
            LatencyStart::Actual => "from the actual start",
            LatencyStart::Intended => "from the intended start",
        }
    }
}
