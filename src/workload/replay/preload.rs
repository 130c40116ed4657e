//! What a replay loads before it starts: every key whose first operation
//! in the trace is not an insert (it was in the store before the trace
//! began), with the value sizes of its first write in the trace, else
//! one field as large as its first read returned, else (the trace never
//! says, as a RocksDB trace's delete of a key it never wrote) one field of
//! YCSB's default 100 bytes: a record every engine can store (Redis
//! refuses a hash with no field).

use std::collections::HashMap;

use crate::trace::{OpType, TraceOp};

/// A record to insert before the replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preload {
    pub key: Vec<u8>,
    pub value_sizes: Vec<u32>,
}

/// The value size of a record whose size the trace never shows: YCSB's
/// default `fieldlength`.
const UNKNOWN_VALUE_SIZE: u32 = 100;

/// The records to load for `ops` (in time order), in first-use order.
pub fn records_to_load(ops: &[TraceOp]) -> Vec<Preload> {
    // Per key: its index in `loads` if it needs loading, and whether its
    // sizes are settled (a write seen).
    let mut seen: HashMap<&[u8], (Option<usize>, bool)> = HashMap::new();
    let mut loads: Vec<Preload> = Vec::new();
    for op in ops {
        let entry = seen.entry(op.key.as_slice()).or_insert_with(|| {
            if op.op == OpType::Insert {
                (None, true)
            } else {
                loads.push(Preload {
                    key: op.key.clone(),
                    value_sizes: Vec::new(),
                });
                (Some(loads.len() - 1), false)
            }
        });
        let (Some(index), false) = *entry else {
            continue;
        };
        let load = &mut loads[index];
        if op.op.writes() && !op.value_sizes.is_empty() {
            load.value_sizes.clone_from(&op.value_sizes);
            entry.1 = true;
        } else if load.value_sizes.is_empty() && op.bytes_read > 0 && op.op != OpType::Scan {
            load.value_sizes = vec![op.bytes_read.min(u64::from(u32::MAX)) as u32];
        }
    }
    for load in &mut loads {
        if load.value_sizes.is_empty() {
            load.value_sizes = vec![UNKNOWN_VALUE_SIZE];
        }
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Outcome;

    fn op(op: OpType, key: &str, sizes: &[u32], read: u64) -> TraceOp {
        TraceOp {
            op,
            outcome: Outcome::Ok,
            client: 0,
            intended_ns: 0,
            start_ns: 0,
            end_ns: 0,
            key: key.as_bytes().to_vec(),
            read_fields: 0,
            scan_length: 0,
            value_sizes: sizes.to_vec(),
            bytes_read: read,
        }
    }

    #[test]
    fn loads_keys_used_before_they_are_inserted_with_sizes_from_the_trace() {
        let ops = [
            op(OpType::Read, "a", &[], 300),
            op(OpType::Insert, "b", &[5], 0),
            op(OpType::Read, "b", &[], 5),
            op(OpType::Update, "a", &[7, 8], 0),
            op(OpType::Delete, "c", &[], 0),
            op(OpType::Update, "a", &[1], 0),
        ];
        let loads = records_to_load(&ops);
        assert_eq!(
            loads,
            [
                Preload {
                    key: b"a".to_vec(),
                    value_sizes: vec![7, 8]
                },
                Preload {
                    key: b"c".to_vec(),
                    value_sizes: vec![UNKNOWN_VALUE_SIZE]
                }
            ]
        );
    }
}
