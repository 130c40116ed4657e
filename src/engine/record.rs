//! A record's fields as the runner hands them to engines and engines hand
//! them back: names and values packed in one reusable buffer, so an
//! operation allocates nothing once the buffers have grown.

use std::ops::Range;

#[derive(Debug, Clone, Default)]
pub struct Record {
    data: Vec<u8>,
    spans: Vec<(Range<usize>, Range<usize>)>,
}

impl Record {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        self.push_with(name, |buf| buf.extend_from_slice(value));
    }

    /// Adds a field whose value `fill` appends to the shared buffer.
    pub fn push_with(&mut self, name: &[u8], fill: impl FnOnce(&mut Vec<u8>)) {
        let name_start = self.data.len();
        self.data.extend_from_slice(name);
        let value_start = self.data.len();
        fill(&mut self.data);
        self.spans
            .push((name_start..value_start, value_start..self.data.len()));
    }

    pub fn fields(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
        self.spans
            .iter()
            .map(|(n, v)| (&self.data[n.clone()], &self.data[v.clone()]))
    }

    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Bytes of names plus values: the logical size YCSB would store.
    pub fn logical_bytes(&self) -> usize {
        self.data.len()
    }
}

/// Scan results: records kept between scans so their buffers are reused.
#[derive(Debug, Default)]
pub struct ScanResults {
    records: Vec<Record>,
    len: usize,
}

impl ScanResults {
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// A cleared record to fill with the next row.
    pub fn next_slot(&mut self) -> &mut Record {
        if self.len == self.records.len() {
            self.records.push(Record::new());
        }
        let slot = &mut self.records[self.len];
        slot.clear();
        self.len += 1;
        slot
    }

    pub fn rows(&self) -> &[Record] {
        &self.records[..self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The value layout YCSB's RocksDB binding uses, so stores are comparable:
/// per field `[u32 BE name len][name][u32 BE value len][value]`.
pub mod codec {
    use super::Record;

    pub fn encode(record: &Record, out: &mut Vec<u8>) {
        out.clear();
        for (name, value) in record.fields() {
            out.extend_from_slice(&(name.len() as u32).to_be_bytes());
            out.extend_from_slice(name);
            out.extend_from_slice(&(value.len() as u32).to_be_bytes());
            out.extend_from_slice(value);
        }
    }

    /// Decodes `bytes` into `out`, keeping only `wanted` fields if given.
    /// Returns false if the bytes are not a valid encoding.
    pub fn decode(bytes: &[u8], wanted: Option<&[&str]>, out: &mut Record) -> bool {
        let mut rest = bytes;
        while !rest.is_empty() {
            let Some((name, after)) = take_chunk(rest) else {
                return false;
            };
            let Some((value, after)) = take_chunk(after) else {
                return false;
            };
            rest = after;
            let keep = wanted.is_none_or(|w| w.iter().any(|f| f.as_bytes() == name));
            if keep {
                out.push(name, value);
            }
        }
        true
    }

    /// Replaces or adds the fields of `update` in the encoded record `stored`.
    pub fn merge(stored: &[u8], update: &Record, scratch: &mut Record, out: &mut Vec<u8>) -> bool {
        scratch.clear();
        if !decode(stored, None, scratch) {
            return false;
        }
        let mut merged = Record::new();
        for (name, value) in scratch.fields() {
            match update.get(name) {
                Some(new) => merged.push(name, new),
                None => merged.push(name, value),
            }
        }
        for (name, value) in update.fields() {
            if scratch.get(name).is_none() {
                merged.push(name, value);
            }
        }
        encode(&merged, out);
        true
    }

    fn take_chunk(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
        let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        let body = bytes.get(4..4 + len)?;
        Some((body, &bytes[4 + len..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_merge_round_trip() {
        let mut rec = Record::new();
        rec.push(b"field0", b"aaa");
        rec.push(b"field1", b"bbbb");
        let mut bytes = Vec::new();
        codec::encode(&rec, &mut bytes);
        assert_eq!(&bytes[..4], &6u32.to_be_bytes());

        let mut back = Record::new();
        assert!(codec::decode(&bytes, None, &mut back));
        assert_eq!(back.get(b"field1"), Some(&b"bbbb"[..]));

        let mut only = Record::new();
        assert!(codec::decode(&bytes, Some(&["field1"]), &mut only));
        assert_eq!(only.len(), 1);

        let mut update = Record::new();
        update.push(b"field0", b"zz");
        let (mut scratch, mut merged) = (Record::new(), Vec::new());
        assert!(codec::merge(&bytes, &update, &mut scratch, &mut merged));
        let mut after = Record::new();
        assert!(codec::decode(&merged, None, &mut after));
        assert_eq!(after.get(b"field0"), Some(&b"zz"[..]));
        assert_eq!(after.get(b"field1"), Some(&b"bbbb"[..]));

        assert!(!codec::decode(&bytes[..bytes.len() - 1], None, &mut after));
    }
}
