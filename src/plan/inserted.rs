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
    /// its store; unchanged when there are none, when it is not a run, when
    /// it inserts nothing (A, B, C, F), or when the plan sets
    /// `runinsertstart` itself.
    pub fn place<'s>(&self, step: &'s Step) -> Cow<'s, Step> {
        let inserted = self.per_config.get(&step.config).copied().unwrap_or(0);
        let property = |name: &str| step.properties.iter().find(|(k, _)| k == name);
        let record_count = property("recordcount").and_then(|(_, v)| v.parse::<u64>().ok());
        match record_count {
            Some(records)
                if inserted > 0
                    && step.kind == StepKind::Run
                    && inserts(step)
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

/// Whether a run step inserts: its `insertproportion` (YCSB's default 0)
/// is above 0. A workload F step reads and read-modify-writes only.
fn inserts(step: &Step) -> bool {
    step.properties
        .iter()
        .rev()
        .find(|(k, _)| k == "insertproportion")
        .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        .is_some_and(|p| p > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(workload: &str, insertproportion: &str) -> Step {
        let loaded = super::super::LoadedPlan {
            plan: super::super::parse(
                "name = \"t\"\ndriver = \"ycsb\"\n[properties]\nrecordcount = 100\n\
                 [[configs]]\nname = \"c\"\ndb = \"/x\"\n[[steps]]\nworkloads = [\"a\"]\nthreads = [1]\n",
            )
            .unwrap(),
            path: "p.toml".into(),
            unscaled: Vec::new(),
        };
        let mut s = super::super::expand_steps(&loaded, 1.0, &[])
            .unwrap()
            .remove(0);
        s.workload = workload.into();
        s.properties.retain(|(k, _)| k != "insertproportion");
        s.properties
            .push(("insertproportion".into(), insertproportion.into()));
        s
    }

    #[test]
    fn only_steps_that_insert_are_moved_past_earlier_inserts() {
        let mut keys = InsertedKeys::default();
        keys.per_config.insert("c".into(), 35);
        let d = step("d", "0.05");
        let placed = keys.place(&d);
        assert!(matches!(placed, Cow::Owned(_)));
        assert_eq!(
            placed.properties.last().unwrap(),
            &("runinsertstart".to_string(), "135".to_string())
        );
        let f = step("f", "0");
        assert!(
            matches!(keys.place(&f), Cow::Borrowed(_)),
            "F inserts nothing"
        );
        let mut none = step("a", "0");
        none.properties.retain(|(k, _)| k != "insertproportion");
        assert!(
            matches!(keys.place(&none), Cow::Borrowed(_)),
            "YCSB's default is 0"
        );
    }
}
