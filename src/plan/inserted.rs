//! Keys that a plan's run steps inserted into each configuration's store.
//! YCSB's run-phase inserts start at `recordcount` (workloads D and E), so
//! a second step or repeat that inserts into the same store would insert
//! keys that exist already: duplicate-key failures on servers that refuse
//! them, silent overwrites elsewhere. The plan runner moves each run step's
//! first insert (`runinsertstart`) past every key that the store's earlier
//! steps inserted, counted from the results file, so a resumed plan knows
//! them too; a load starts the count over (it makes a fresh store).

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::{Step, StepKind};
use crate::measure::OpKind;
use crate::results::Record;

/// Inserts per configuration since its last load.
#[derive(Debug, Default)]
pub struct InsertedKeys {
    per_config: BTreeMap<String, u64>,
}

impl InsertedKeys {
    /// The count after `records`, in the order they were written.
    pub fn from_records(records: &[Record]) -> Self {
        let mut keys = Self::default();
        for r in records {
            keys.add(r);
        }
        keys
    }

    /// Counts `record`'s inserts: every insert took a key number, whether
    /// it succeeded or not, so each counts.
    pub fn add(&mut self, record: &Record) {
        let count = self
            .per_config
            .entry(record.step.config.clone())
            .or_default();
        match record.step.kind.as_str() {
            "load" => *count = 0,
            "run" => {
                *count += record
                    .measured()
                    .and_then(|m| m.ops.get(&OpKind::Insert))
                    .map_or(0, |s| s.returns.values().sum::<u64>());
            }
            _ => {}
        }
    }

    /// `config`'s store was made again: no key inserted yet.
    pub fn restart(&mut self, config: &str) {
        self.per_config.remove(config);
    }

    /// `step` with its first insert past the keys inserted before it into
    /// its store; unchanged when there are none, when it is not a run, or
    /// when the plan sets `runinsertstart` itself.
    pub fn place<'s>(&self, step: &'s Step) -> Cow<'s, Step> {
        let inserted = self.per_config.get(&step.config).copied().unwrap_or(0);
        let property = |name: &str| step.properties.iter().find(|(k, _)| k == name);
        let record_count = property("recordcount").and_then(|(_, v)| v.parse::<u64>().ok());
        match record_count {
            Some(records)
                if inserted > 0
                    && step.kind == StepKind::Run
                    && property("runinsertstart").is_none() =>
            {
                let mut placed = step.clone();
                placed
                    .properties
                    .push(("runinsertstart".into(), (records + inserted).to_string()));
                Cow::Owned(placed)
            }
            _ => Cow::Borrowed(step),
        }
    }
}
