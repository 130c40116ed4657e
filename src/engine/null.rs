//! The `null` engine: does nothing and succeeds, like YCSB's `BasicDB` with
//! `basicdb.verbose=false`. It exists only to measure the driver's own cost.

use super::{Engine, EngineInfo, EngineSpec, EngineWorker, OpResult, OpenOptions, Record, ScanResults};

pub static SPEC: EngineSpec = EngineSpec {
    name: "null",
    about: "does nothing and returns OK; measures kvperf's own overhead",
    uses_data_dir: false,
    option_names: &[],
    open: open,
};

fn open(_: &OpenOptions) -> anyhow::Result<Box<dyn Engine>> {
    Ok(Box::new(NullEngine))
}

pub struct NullEngine;

impl Engine for NullEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "null".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            options: Default::default(),
        }
    }

    fn worker(&self) -> anyhow::Result<Box<dyn EngineWorker>> {
        Ok(Box::new(NullWorker))
    }
}

pub struct NullWorker;

impl EngineWorker for NullWorker {
    fn read(&mut self, _: &str, _: &[u8], _: Option<&[&str]>, _: &mut Record) -> OpResult {
        Ok(())
    }
    fn scan(&mut self, _: &str, _: &[u8], _: usize, _: Option<&[&str]>, _: &mut ScanResults) -> OpResult {
        Ok(())
    }
    fn update(&mut self, _: &str, _: &[u8], _: &Record) -> OpResult {
        Ok(())
    }
    fn insert(&mut self, _: &str, _: &[u8], _: &Record) -> OpResult {
        Ok(())
    }
    fn delete(&mut self, _: &str, _: &[u8]) -> OpResult {
        Ok(())
    }
}
