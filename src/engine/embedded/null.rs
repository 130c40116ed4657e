//! The `null` engine: does nothing and succeeds, like YCSB's `BasicDB` with
//! `basicdb.verbose=false`. It exists only to measure the driver's own cost.

use super::{
    ready, Call, Capabilities, ClientSlot, Engine, EngineInfo, EngineSpec, EventSupport, KvSupport,
    OpenOptions, Operations, Record, ScanResults, SetupFuture, StoreKind, EMBEDDED,
};

pub static SPEC: EngineSpec = EngineSpec {
    name: "null",
    about: "does nothing and returns OK; measures kvperf's own overhead",
    feature: "",
    store: StoreKind::Nothing,
    capabilities: Capabilities {
        kv: KvSupport::Point,
        // stores nothing.
        whole_record_updates: false,
        events: EventSupport::Unavailable(
            "the null engine stores nothing and runs no background work",
        ),
        ..EMBEDDED
    },
    options: &[],
    open,
    // Nothing to configure: every engine flag is one it cannot honour.
    db_bench: |flags, _| flags.given(),
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

    /// One client for both halves: every call is done at once.
    fn client(&self, _: ClientSlot) -> SetupFuture<'_, Box<dyn Operations + '_>> {
        ready(Ok(Box::new(NullWorker)))
    }

    /// Nothing runs in the background and nothing is stored.
    fn settle(&self, _flush: bool) -> anyhow::Result<()> {
        Ok(())
    }

    fn footprint(&self) -> Result<u64, String> {
        Err("the null engine stores nothing".into())
    }

    fn close(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

pub struct NullWorker;

/// Every record operation succeeds. Every key "exists" with an empty
/// value, so `kvperf bench --engine null` measures only the benchmark loop.
/// It has no order to iterate in ([`KvSupport::Point`]), so seek finds nothing.
impl Operations for NullWorker {
    fn read<'a>(
        &'a mut self,
        _: &'a str,
        _: &'a [u8],
        _: Option<&'a [&'a str]>,
        _: &'a mut Record,
    ) -> Call<'a> {
        Ok(()).into()
    }
    fn scan<'a>(
        &'a mut self,
        _: &'a str,
        _: &'a [u8],
        _: usize,
        _: Option<&'a [&'a str]>,
        _: &'a mut ScanResults,
    ) -> Call<'a> {
        Ok(()).into()
    }
    fn update<'a>(&'a mut self, _: &'a str, _: &'a [u8], _: &'a Record) -> Call<'a> {
        Ok(()).into()
    }
    fn insert<'a>(&'a mut self, _: &'a str, _: &'a [u8], _: &'a Record) -> Call<'a> {
        Ok(()).into()
    }
    fn delete<'a>(&'a mut self, _: &'a str, _: &'a [u8]) -> Call<'a> {
        Ok(()).into()
    }
    fn get<'a>(&'a mut self, _: &'a [u8]) -> Call<'a, usize> {
        Ok(0).into()
    }
    fn put<'a>(&'a mut self, _: &'a [u8], _: &'a [u8]) -> Call<'a> {
        Ok(()).into()
    }
    fn remove<'a>(&'a mut self, _: &'a [u8]) -> Call<'a> {
        Ok(()).into()
    }
    fn seek<'a>(&'a mut self, _: Option<&'a [u8]>, _: bool) -> Call<'a, bool> {
        Ok(false).into()
    }
    fn next(&mut self) -> Call<'_, bool> {
        Ok(false).into()
    }
}
