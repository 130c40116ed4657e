//! One operation of a trace and its encoding inside a block (see
//! docs/traces.md): a kind-and-outcome byte, times as varints (the
//! intended start as a delta from the block's previous operation, the
//! start as the wait after it, the end as the latency), the key as the
//! bytes it shares with the previous key plus the rest, then what the kind
//! carries (fields read, scan length, value sizes written, bytes read).

use super::varint::{self, Bad};
use crate::measure::{OpKind, Outcome};

/// The kinds of operation a trace holds: a client's operations (a
/// read-modify-write is one, as YCSB's client counts it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpType {
    Read = 1,
    Update = 2,
    Insert = 3,
    Scan = 4,
    Delete = 5,
    ReadModifyWrite = 6,
}

impl OpType {
    pub const ALL: [OpType; 6] = [
        OpType::Read,
        OpType::Update,
        OpType::Insert,
        OpType::Scan,
        OpType::Delete,
        OpType::ReadModifyWrite,
    ];

    fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|t| *t as u8 == code)
    }

    /// The measurement group it is counted in.
    pub fn op_kind(self) -> OpKind {
        match self {
            OpType::Read => OpKind::Read,
            OpType::Update => OpKind::Update,
            OpType::Insert => OpKind::Insert,
            OpType::Scan => OpKind::Scan,
            OpType::Delete => OpKind::Delete,
            OpType::ReadModifyWrite => OpKind::ReadModifyWrite,
        }
    }

    /// `READ`, `READ-MODIFY-WRITE`...: YCSB's names.
    pub fn name(self) -> &'static str {
        self.op_kind().ycsb_name()
    }

    /// Parses a YCSB name or a lower-case one (`read-modify-write`, `rmw`).
    pub fn parse(name: &str) -> Option<Self> {
        let lower = name.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|t| t.op_kind().name() == lower)
            .or(match lower.as_str() {
                "rmw" | "readmodifywrite" => Some(OpType::ReadModifyWrite),
                _ => None,
            })
    }

    pub fn reads(self) -> bool {
        matches!(self, OpType::Read | OpType::Scan | OpType::ReadModifyWrite)
    }

    pub fn writes(self) -> bool {
        matches!(
            self,
            OpType::Update | OpType::Insert | OpType::ReadModifyWrite
        )
    }
}

/// One operation as a trace holds it. Times are nanoseconds from the
/// trace's epoch (its header's `epoch_unix_ns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOp {
    pub op: OpType,
    pub outcome: Outcome,
    /// The client (thread or task) that issued it.
    pub client: u32,
    /// When it was due: its start when the run was not paced.
    pub intended_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub key: Vec<u8>,
    /// Reads and scans: the fields asked for; 0 is every field.
    pub read_fields: u32,
    /// Scans: the records asked for.
    pub scan_length: u32,
    /// Writes: each field's value size in bytes (a field each).
    pub value_sizes: Vec<u32>,
    /// Reads and scans: the record bytes returned (names and values).
    pub bytes_read: u64,
}

/// The most bytes a key may have in a trace (kvperf's keys are under 64).
pub const MAX_KEY: usize = 64 * 1024;
/// The most fields a write may carry (`fieldcount`'s bound).
pub const MAX_FIELDS: u64 = 1 << 20;
/// The largest value a field may have (a record's bound).
pub const MAX_VALUE: u64 = 1 << 30;
/// The longest scan (`maxscanlength`'s bound).
pub const MAX_SCAN: u64 = 1 << 24;

/// What the encoder and decoder of one block remember between operations.
#[derive(Debug, Default)]
pub struct BlockState {
    prev_intended: u64,
    prev_key: Vec<u8>,
}

impl BlockState {
    pub fn new() -> Self {
        Self::default()
    }
}

/// An operation to encode, borrowed from the client that did it.
pub struct OpView<'a> {
    pub op: OpType,
    pub outcome: Outcome,
    pub intended_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub key: &'a [u8],
    pub read_fields: u32,
    pub scan_length: u32,
    pub value_sizes: &'a [u32],
    pub bytes_read: u64,
}

impl TraceOp {
    pub fn view(&self) -> OpView<'_> {
        OpView {
            op: self.op,
            outcome: self.outcome,
            intended_ns: self.intended_ns,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            key: &self.key,
            read_fields: self.read_fields,
            scan_length: self.scan_length,
            value_sizes: &self.value_sizes,
            bytes_read: self.bytes_read,
        }
    }
}

fn outcome_code(o: Outcome) -> u8 {
    o as u8
}

/// Appends `op` to a block's bytes.
#[inline]
pub fn encode(state: &mut BlockState, op: &OpView<'_>, out: &mut Vec<u8>) {
    out.push(op.op as u8 | outcome_code(op.outcome) << 4);
    varint::put_signed(out, op.intended_ns.wrapping_sub(state.prev_intended) as i64);
    state.prev_intended = op.intended_ns;
    varint::put(out, op.start_ns.saturating_sub(op.intended_ns));
    varint::put(out, op.end_ns.saturating_sub(op.start_ns));
    let shared = state
        .prev_key
        .iter()
        .zip(op.key)
        .take_while(|(a, b)| a == b)
        .count();
    varint::put(out, shared as u64);
    varint::put(out, (op.key.len() - shared) as u64);
    out.extend_from_slice(&op.key[shared..]);
    state.prev_key.truncate(shared);
    state.prev_key.extend_from_slice(&op.key[shared..]);
    if op.op.reads() {
        varint::put(out, u64::from(op.read_fields));
        varint::put(out, op.bytes_read);
    }
    if op.op == OpType::Scan {
        varint::put(out, u64::from(op.scan_length));
    }
    if op.op.writes() {
        varint::put(out, op.value_sizes.len() as u64);
        for &size in op.value_sizes {
            varint::put(out, u64::from(size));
        }
    }
}

/// Reads the next operation of a block of `client`; the error says what
/// is wrong in words.
pub fn decode(state: &mut BlockState, client: u32, bytes: &mut &[u8]) -> Result<TraceOp, String> {
    let words = |b: Bad| match b {
        Bad::Truncated => "it ends inside an operation".to_string(),
        Bad::TooLong => "a number is longer than 64 bits".to_string(),
    };
    let (&first, rest) = bytes
        .split_first()
        .ok_or_else(|| "it ends inside an operation".to_string())?;
    *bytes = rest;
    let op = OpType::from_code(first & 0x0f)
        .ok_or_else(|| format!("unknown operation code {}", first & 0x0f))?;
    if first & 0xc0 != 0 {
        return Err(format!("unknown flags in operation byte {first:#04x}"));
    }
    let outcome = Outcome::ALL[usize::from((first >> 4) & 0x03)];
    let delta = varint::take_signed(bytes).map_err(words)?;
    let mut num = || varint::take(bytes).map_err(words);
    let intended_ns = state.prev_intended.wrapping_add(delta as u64);
    state.prev_intended = intended_ns;
    let start_ns = intended_ns
        .checked_add(num()?)
        .ok_or("a start time past 2^64 ns")?;
    let end_ns = start_ns
        .checked_add(num()?)
        .ok_or("an end time past 2^64 ns")?;
    let shared = num()? as usize;
    let suffix = num()?;
    if shared > state.prev_key.len() {
        return Err(format!(
            "a key shares {shared} bytes with a previous key of {}",
            state.prev_key.len()
        ));
    }
    if suffix > (MAX_KEY - shared) as u64 {
        return Err(format!("a key longer than {MAX_KEY} bytes"));
    }
    let suffix = suffix as usize;
    if bytes.len() < suffix {
        return Err("it ends inside a key".into());
    }
    state.prev_key.truncate(shared);
    state.prev_key.extend_from_slice(&bytes[..suffix]);
    *bytes = &bytes[suffix..];
    let mut op_read = TraceOp {
        op,
        outcome,
        client,
        intended_ns,
        start_ns,
        end_ns,
        key: state.prev_key.clone(),
        read_fields: 0,
        scan_length: 0,
        value_sizes: Vec::new(),
        bytes_read: 0,
    };
    let mut num = || varint::take(bytes).map_err(words);
    if op.reads() {
        op_read.read_fields = bounded(num()?, MAX_FIELDS, "fields read")?;
        op_read.bytes_read = num()?;
    }
    if op == OpType::Scan {
        op_read.scan_length = bounded(num()?, MAX_SCAN, "scan length")?;
    }
    if op.writes() {
        let count = bounded(
            varint::take(bytes).map_err(words)?,
            MAX_FIELDS,
            "fields written",
        )?;
        // Each size takes a byte at least: no more sizes than bytes left.
        if count as usize > bytes.len() {
            return Err("it ends inside an operation's value sizes".into());
        }
        op_read.value_sizes.reserve_exact(count as usize);
        for _ in 0..count {
            let size = varint::take(bytes).map_err(words)?;
            op_read
                .value_sizes
                .push(bounded(size, MAX_VALUE, "value size")?);
        }
    }
    Ok(op_read)
}

fn bounded(v: u64, most: u64, what: &str) -> Result<u32, String> {
    if v > most {
        Err(format!("a {what} of {v} (at most {most})"))
    } else {
        Ok(v as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(op: OpType, key: &str, t: u64) -> TraceOp {
        TraceOp {
            op,
            outcome: Outcome::Ok,
            client: 3,
            intended_ns: t,
            start_ns: t + 5,
            end_ns: t + 905,
            key: key.as_bytes().to_vec(),
            read_fields: if op.reads() { 1 } else { 0 },
            scan_length: if op == OpType::Scan { 40 } else { 0 },
            value_sizes: if op.writes() { vec![100, 0, 7] } else { vec![] },
            bytes_read: if op.reads() { 106 } else { 0 },
        }
    }

    #[test]
    fn every_kind_round_trips_with_shared_key_prefixes() {
        let ops: Vec<TraceOp> = OpType::ALL
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let mut op = sample(t, &format!("user{}", 1000 + i * 7), 1_000 * i as u64);
                op.outcome = Outcome::ALL[i % 4];
                op
            })
            .collect();
        let mut state = BlockState::new();
        let mut bytes = Vec::new();
        for op in &ops {
            encode(&mut state, &op.view(), &mut bytes);
        }
        // "user10" is shared by every key after the first: short records.
        assert!(bytes.len() < 20 * ops.len(), "{} bytes", bytes.len());
        let mut state = BlockState::new();
        let mut rest = bytes.as_slice();
        for op in &ops {
            assert_eq!(&decode(&mut state, 3, &mut rest).unwrap(), op);
        }
        assert!(rest.is_empty());
    }

    #[test]
    fn refuses_bad_bytes_in_words() {
        let mut state = BlockState::new();
        let err = |bytes: &[u8]| decode(&mut BlockState::new(), 0, &mut &bytes[..]).unwrap_err();
        assert!(err(&[0x0e]).contains("unknown operation code 14"));
        assert!(err(&[0x01, 0]).contains("ends inside"));
        // A key that claims to share 5 bytes with no previous key.
        assert!(err(&[0x01, 0, 0, 0, 5, 0]).contains("shares 5 bytes"));
        // An insert that claims 2^20 + 1 fields.
        let mut bytes = vec![0x03, 0, 0, 0, 0, 1, b'k'];
        varint::put(&mut bytes, MAX_FIELDS + 1);
        assert!(decode(&mut state, 0, &mut bytes.as_slice())
            .unwrap_err()
            .contains("fields written"));
    }
}
