//! db_bench's flags that configure the engine rather than the benchmark.
//! Each engine maps them onto its own options ([`super::EngineSpec::db_bench`]);
//! a flag the user set that an engine cannot honour is named in a warning,
//! never dropped silently. `None` means the flag was not given.

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbBenchFlags {
    /// Block cache bytes (`--cache_size`).
    pub cache_size: Option<u64>,
    /// Bloom filter bits per key; negative = none (`--bloom_bits`).
    pub bloom_bits: Option<f64>,
    pub compression_type: Option<String>,
    pub write_buffer_size: Option<u64>,
    pub max_background_jobs: Option<u32>,
    /// Sync every write (`--sync`).
    pub sync: Option<bool>,
    /// Write without the write-ahead log (`--disable_wal`).
    pub disable_wal: Option<bool>,
    /// Collect and print the engine's statistics (`--statistics`).
    pub statistics: Option<bool>,
    /// O_DIRECT for reads (`--use_direct_reads`).
    pub use_direct_reads: Option<bool>,
    /// O_DIRECT for flushes and compactions (`--use_direct_io_for_flush_and_compaction`).
    pub use_direct_io_for_flush_and_compaction: Option<bool>,
    /// Data block bytes (`--block_size`).
    pub block_size: Option<u64>,
    /// LSM levels (`--num_levels`).
    pub num_levels: Option<u32>,
    /// Table files kept open; -1 = all (`--open_files`).
    pub open_files: Option<i64>,
    pub level_compaction_dynamic_level_bytes: Option<bool>,
    /// Sync files every N bytes written (`--bytes_per_sync`).
    pub bytes_per_sync: Option<u64>,
    pub target_file_size_base: Option<u64>,
    /// Memtables before writes stall (`--max_write_buffer_number`).
    pub max_write_buffer_number: Option<u32>,
    /// Seconds between the engine's own stats dumps (`--stats_interval_seconds`).
    pub stats_interval_seconds: Option<u64>,
    /// The memtable kind (`--memtablerep`; only `skip_list` passes the
    /// command's checks).
    pub memtablerep: Option<String>,
}

impl DbBenchFlags {
    /// The flags that were given, by db_bench name.
    pub fn given(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        let mut note = |set: bool, name| {
            if set {
                names.push(name);
            }
        };
        note(self.cache_size.is_some(), "cache_size");
        note(self.bloom_bits.is_some(), "bloom_bits");
        note(self.compression_type.is_some(), "compression_type");
        note(self.write_buffer_size.is_some(), "write_buffer_size");
        note(self.max_background_jobs.is_some(), "max_background_jobs");
        note(self.sync.is_some(), "sync");
        note(self.disable_wal.is_some(), "disable_wal");
        note(self.statistics.is_some(), "statistics");
        note(self.use_direct_reads.is_some(), "use_direct_reads");
        note(
            self.use_direct_io_for_flush_and_compaction.is_some(),
            "use_direct_io_for_flush_and_compaction",
        );
        note(self.block_size.is_some(), "block_size");
        note(self.num_levels.is_some(), "num_levels");
        note(self.open_files.is_some(), "open_files");
        note(
            self.level_compaction_dynamic_level_bytes.is_some(),
            "level_compaction_dynamic_level_bytes",
        );
        note(self.bytes_per_sync.is_some(), "bytes_per_sync");
        note(
            self.target_file_size_base.is_some(),
            "target_file_size_base",
        );
        note(
            self.max_write_buffer_number.is_some(),
            "max_write_buffer_number",
        );
        note(
            self.stats_interval_seconds.is_some(),
            "stats_interval_seconds",
        );
        note(self.memtablerep.is_some(), "memtablerep");
        names
    }

    /// The flags given with the value that asks an engine without
    /// compression, filters, a log, statistics or direct I/O for nothing
    /// (`--compression_type=none`, `--bloom_bits=0`, `--disable_wal=0`...):
    /// honoured by such an engine.
    pub fn asking_for_nothing(&self) -> Vec<&'static str> {
        let mut trivial = Vec::new();
        if self.compression_type.as_deref() == Some("none") {
            trivial.push("compression_type");
        }
        if self.bloom_bits.is_some_and(|b| b <= 0.0) {
            trivial.push("bloom_bits");
        }
        for (given, name) in [
            (self.disable_wal, "disable_wal"),
            (self.statistics, "statistics"),
            (self.use_direct_reads, "use_direct_reads"),
            (
                self.use_direct_io_for_flush_and_compaction,
                "use_direct_io_for_flush_and_compaction",
            ),
        ] {
            if given == Some(false) {
                trivial.push(name);
            }
        }
        trivial
    }

    /// The given flags except `honoured`: what a mapping must warn about.
    pub fn not_honoured(&self, honoured: &[&str]) -> Vec<&'static str> {
        self.given()
            .into_iter()
            .filter(|f| !honoured.contains(f))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_given_flags_can_be_left_unhonoured() {
        let flags = DbBenchFlags {
            cache_size: Some(1 << 20),
            bloom_bits: Some(10.0),
            ..Default::default()
        };
        assert_eq!(flags.given(), ["cache_size", "bloom_bits"]);
        assert_eq!(flags.not_honoured(&["cache_size", "sync"]), ["bloom_bits"]);
    }

    #[test]
    fn only_flags_that_ask_for_nothing_are_trivial() {
        let flags = DbBenchFlags {
            compression_type: Some("none".into()),
            bloom_bits: Some(0.0),
            disable_wal: Some(false),
            statistics: Some(true),
            use_direct_reads: Some(false),
            ..Default::default()
        };
        assert_eq!(
            flags.asking_for_nothing(),
            [
                "compression_type",
                "bloom_bits",
                "disable_wal",
                "use_direct_reads"
            ]
        );
        let asking = DbBenchFlags {
            compression_type: Some("lz4".into()),
            bloom_bits: Some(10.0),
            disable_wal: Some(true),
            ..Default::default()
        };
        assert!(asking.asking_for_nothing().is_empty());
    }
}
