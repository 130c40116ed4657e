#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kvperf::fuzzing::workload_properties(data));
