//! RocksDB's query trace (`DB::StartTrace`, `-p rocksdb.trace=FILE`,
//! db_bench's `-trace_file`), decoded as RocksDB 10.4.2 writes it
//! (trace_replay/trace_replay.cc, utilities/trace/, db/write_batch.cc;
//! read for the facts, this decoder is kvperf's own):
//!
//! - records: timestamp (µs, fixed64 LE), type (1 byte), payload length
//!   (fixed32 LE), payload;
//! - the first is `kTraceBegin` (1), its payload starting
//!   `feedcafedeadbeef` and naming `Trace Version: 0.2`; the last
//!   `kTraceEnd` (2);
//! - a query's payload (version 0.2): a fixed64 bit map of the fields
//!   present, then each field, lowest bit first: Write (3) a batch; Get (4)
//!   column family (fixed32) and key; iterator Seek (5) and SeekForPrev (6)
//!   column family, key, lower and upper bound; MultiGet (13) count,
//!   column families, keys. Keys and batches are varint32-length-prefixed.
//!
//! Every length is checked against what the record or file still holds
//! before anything is allocated.

use std::io::Read;

use crate::error::InputError;

/// `kTraceMagic`, at the start of the header record's payload.
pub const MAGIC: &[u8] = b"feedcafedeadbeef";
/// Timestamp, type and payload length.
const META: u64 = 13;

/// One key of a query, with its column family (0: the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfKey {
    pub cf: u32,
    pub key: Vec<u8>,
}

/// One entry of a write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchEntry {
    Put {
        at: CfKey,
        value_len: u32,
    },
    Merge {
        at: CfKey,
        value_len: u32,
    },
    Delete(CfKey),
    /// A range deletion, a blob index, a wide-column entity, log data or a
    /// transaction marker: counted, not replayed.
    Other,
}

/// One traced query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    Get(CfKey),
    Write(Vec<BatchEntry>),
    Seek { at: CfKey, for_prev: bool },
    MultiGet(Vec<CfKey>),
}

/// Reads a RocksDB trace record by record.
pub struct RocksTrace<R> {
    input: R,
    /// Bytes of the file not read yet.
    left: u64,
    offset: u64,
    pub ended: bool,
}

type Bad = InputError;

fn bad(why: String) -> Bad {
    InputError::Invalid(why)
}

impl<R: Read> RocksTrace<R> {
    /// Reads the header record of `input` (`len` bytes long).
    pub fn open(input: R, len: u64) -> Result<Self, Bad> {
        let mut trace = Self {
            input,
            left: len,
            offset: 0,
            ended: false,
        };
        let not_rocksdb = "is not a RocksDB trace: no 'feedcafedeadbeef' header record";
        if len < META {
            return Err(bad(format!("{not_rocksdb} ({len} bytes)")));
        }
        let (_, kind, payload) = trace.record()?.expect("bytes left");
        if kind != 1 || !payload.starts_with(MAGIC) {
            return Err(bad(not_rocksdb.into()));
        }
        let header = String::from_utf8_lossy(&payload);
        let version = header
            .split('\t')
            .find_map(|f| f.strip_prefix("Trace Version: "))
            .unwrap_or("?");
        if version != "0.2" {
            return Err(bad(format!(
                "is a RocksDB trace of version {version}; kvperf reads version 0.2 (RocksDB 6.26 and later)"
            )));
        }
        Ok(trace)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), Bad> {
        self.input
            .read_exact(buf)
            .map_err(|e| bad(format!("cannot be read at byte {}: {e}", self.offset)))?;
        self.offset += buf.len() as u64;
        self.left -= buf.len() as u64;
        Ok(())
    }

    /// The next record: timestamp, type, payload; None at the end.
    fn record(&mut self) -> Result<Option<(u64, u8, Vec<u8>)>, Bad> {
        if self.left == 0 {
            return Ok(None);
        }
        if self.left < META {
            return Err(bad(format!(
                "is truncated: {} bytes at byte {} where a record needs {META}",
                self.left, self.offset
            )));
        }
        let mut meta = [0u8; META as usize];
        let at = self.offset;
        self.read_exact(&mut meta)?;
        let ts = u64::from_le_bytes(meta[..8].try_into().expect("8 bytes"));
        let len = u32::from_le_bytes(meta[9..].try_into().expect("4 bytes"));
        if u64::from(len) > self.left {
            return Err(bad(format!(
                "is truncated or not a RocksDB trace: the record at byte {at} says {len} payload bytes, {} remain",
                self.left
            )));
        }
        let mut payload = vec![0u8; len as usize];
        self.read_exact(&mut payload)?;
        Ok(Some((ts, meta[8], payload)))
    }

    /// The next query and its timestamp (µs); None after the end record
    /// or at the end of the file. Records of other kinds are skipped.
    pub fn next_query(&mut self) -> Result<Option<(u64, Query)>, Bad> {
        while !self.ended {
            let at = self.offset;
            let Some((ts, kind, payload)) = self.record()? else {
                return Ok(None);
            };
            let query = match kind {
                2 => {
                    self.ended = true;
                    continue;
                }
                3 | 4 | 5 | 6 | 13 => decode_query(kind, &payload),
                _ => continue,
            };
            return query
                .map(|q| Some((ts, q)))
                .map_err(|why| bad(format!("record at byte {at}: {why}")));
        }
        Ok(None)
    }
}

/// A payload being decoded.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn fixed32(&mut self) -> Result<u32, String> {
        let (head, rest) = self.0.split_at_checked(4).ok_or("a fixed32 cut short")?;
        self.0 = rest;
        Ok(u32::from_le_bytes(head.try_into().expect("4 bytes")))
    }

    fn fixed64(&mut self) -> Result<u64, String> {
        let (head, rest) = self.0.split_at_checked(8).ok_or("a fixed64 cut short")?;
        self.0 = rest;
        Ok(u64::from_le_bytes(head.try_into().expect("8 bytes")))
    }

    fn varint32(&mut self) -> Result<u32, String> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let (&byte, rest) = self.0.split_first().ok_or("a varint cut short")?;
            self.0 = rest;
            value |= u32::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err("a varint32 longer than 5 bytes".into())
    }

    fn slice(&mut self) -> Result<&'a [u8], String> {
        let len = self.varint32()? as usize;
        let (head, rest) = self
            .0
            .split_at_checked(len)
            .ok_or_else(|| format!("a {len}-byte field with {} bytes left", self.0.len()))?;
        self.0 = rest;
        Ok(head)
    }
}

/// Decodes a query's payload (version 0.2).
fn decode_query(kind: u8, payload: &[u8]) -> Result<Query, String> {
    let mut c = Cursor(payload);
    let map = c.fixed64()?;
    let (mut cf, mut key, mut batch) = (0u32, None, None);
    let (mut count, mut cfs, mut keys) = (None, None, None);
    for bit in 0..64 {
        if map & (1 << bit) == 0 {
            continue;
        }
        match (kind, bit) {
            (3, 1) => batch = Some(c.slice()?),
            (4, 2) | (5 | 6, 4) => cf = c.fixed32()?,
            (4, 3) | (5 | 6, 5) => key = Some(c.slice()?),
            (5 | 6, 6 | 7) => {
                c.slice()?;
            }
            (13, 8) => count = Some(c.fixed32()?),
            (13, 9) => cfs = Some(c.slice()?),
            (13, 10) => keys = Some(c.slice()?),
            _ => return Err(format!("field {bit} is not one of a type {kind} query")),
        }
    }
    let at = |cf, key: Option<&[u8]>| -> Result<CfKey, String> {
        let key = key.ok_or("a query without its key")?.to_vec();
        Ok(CfKey { cf, key })
    };
    Ok(match kind {
        3 => Query::Write(decode_batch(batch.ok_or("a write without its batch")?)?),
        4 => Query::Get(at(cf, key)?),
        5 | 6 => Query::Seek {
            at: at(cf, key)?,
            for_prev: kind == 6,
        },
        _ => {
            let count = count.ok_or("a MultiGet without its count")?;
            let (mut cfs, mut keys) = (Cursor(cfs.unwrap_or(&[])), Cursor(keys.unwrap_or(&[])));
            // Each key takes at least a byte: a count beyond that is absurd.
            if count == 0 || count as usize > keys.0.len() {
                return Err(format!(
                    "a MultiGet of {count} keys in {} bytes",
                    keys.0.len()
                ));
            }
            let mut all = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let cf = cfs.fixed32()?;
                all.push(CfKey {
                    cf,
                    key: keys.slice()?.to_vec(),
                });
            }
            Query::MultiGet(all)
        }
    })
}

/// A write batch's entries (db/write_batch.cc: sequence fixed64, count
/// fixed32, then tagged entries).
fn decode_batch(rep: &[u8]) -> Result<Vec<BatchEntry>, String> {
    let mut c = Cursor(rep);
    c.fixed64()
        .map_err(|_| "a write batch shorter than its 12-byte header")?;
    let count = c
        .fixed32()
        .map_err(|_| "a write batch shorter than its 12-byte header")?;
    let mut entries = Vec::new();
    while let Some((&tag, rest)) = c.0.split_first() {
        c.0 = rest;
        // Tags 0x4-0x6, 0x8, 0xE, 0x10, 0x17, 0x19 carry a column family.
        let cf = match tag {
            0x4 | 0x5 | 0x6 | 0x8 | 0xE | 0x10 | 0x17 | 0x19 => c.varint32()?,
            _ => 0,
        };
        let entry = match tag {
            0x1 | 0x5 | 0x2 | 0x6 => {
                let key = c.slice()?.to_vec();
                let value_len = c.slice()?.len() as u32;
                let at = CfKey { cf, key };
                if matches!(tag, 0x1 | 0x5) {
                    BatchEntry::Put { at, value_len }
                } else {
                    BatchEntry::Merge { at, value_len }
                }
            }
            0x0 | 0x4 | 0x7 | 0x8 => BatchEntry::Delete(CfKey {
                cf,
                key: c.slice()?.to_vec(),
            }),
            0xE | 0xF | 0x10 | 0x11 | 0x16 | 0x17 | 0x18 | 0x19 => {
                c.slice()?;
                c.slice()?;
                BatchEntry::Other
            }
            0x3 | 0xA | 0xB | 0xC | 0x15 => {
                c.slice()?;
                BatchEntry::Other
            }
            0x9 | 0xD | 0x12 | 0x13 => BatchEntry::Other,
            other => return Err(format!("a write batch entry of unknown type {other:#x}")),
        };
        entries.push(entry);
    }
    let counted = entries
        .iter()
        .filter(|e| !matches!(e, BatchEntry::Other))
        .count();
    if counted > count as usize {
        return Err(format!(
            "a write batch of {counted} entries whose header says {count}"
        ));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ts: u64, kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut r = ts.to_le_bytes().to_vec();
        r.push(kind);
        r.extend((payload.len() as u32).to_le_bytes());
        r.extend(payload);
        r
    }

    fn header() -> Vec<u8> {
        record(
            1,
            1,
            b"feedcafedeadbeef\tTrace Version: 0.2\tRocksDB Version: 10.4\tFormat: Timestamp OpType Payload\n",
        )
    }

    fn get(key: &[u8]) -> Vec<u8> {
        let mut p = ((1u64 << 2) | (1 << 3)).to_le_bytes().to_vec();
        p.extend(7u32.to_le_bytes());
        p.push(key.len() as u8);
        p.extend(key);
        record(5, 4, &p)
    }

    fn put_batch(key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut rep = 9u64.to_le_bytes().to_vec();
        rep.extend(1u32.to_le_bytes());
        rep.push(1);
        rep.push(key.len() as u8);
        rep.extend(key);
        rep.push(value.len() as u8);
        rep.extend(value);
        let mut p = (1u64 << 1).to_le_bytes().to_vec();
        p.push(rep.len() as u8);
        p.extend(rep);
        record(6, 3, &p)
    }

    fn decode(bytes: &[u8]) -> Result<Vec<Query>, InputError> {
        let mut t = RocksTrace::open(bytes, bytes.len() as u64)?;
        let mut out = Vec::new();
        while let Some((_, q)) = t.next_query()? {
            out.push(q);
        }
        Ok(out)
    }

    #[test]
    fn decodes_gets_and_batches_with_their_column_families() {
        let bytes = [
            header(),
            get(b"k1"),
            put_batch(b"k2", b"vvv"),
            record(9, 2, &[]),
        ]
        .concat();
        let queries = decode(&bytes).unwrap();
        assert_eq!(
            queries,
            [
                Query::Get(CfKey {
                    cf: 7,
                    key: b"k1".to_vec()
                }),
                Query::Write(vec![BatchEntry::Put {
                    at: CfKey {
                        cf: 0,
                        key: b"k2".to_vec()
                    },
                    value_len: 3
                }])
            ]
        );
    }

    #[test]
    fn bad_traces_are_refused_without_allocating_what_they_claim() {
        let good = [header(), get(b"k1")].concat();
        let mut absurd = header();
        absurd.extend(record(5, 4, &[]));
        let n = absurd.len();
        absurd[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut wrong_magic = good.clone();
        wrong_magic[13] = b'x';
        let mut huge_multiget = header();
        let mut p = ((1u64 << 8) | (1 << 10)).to_le_bytes().to_vec();
        p.extend(u32::MAX.to_le_bytes());
        p.extend([1, b'k']);
        huge_multiget.extend(record(5, 13, &p));
        for (bytes, needle) in [
            (&b""[..], "not a RocksDB trace"),
            (&good[..good.len() - 3], "truncated"),
            (&good[..20], "truncated"),
            (&wrong_magic[..], "not a RocksDB trace"),
            (&absurd[..], "4294967295 payload bytes"),
            (&huge_multiget[..], "MultiGet of 4294967295 keys"),
        ] {
            let err = decode(bytes).unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}
