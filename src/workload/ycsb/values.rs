//! Field values: random printable bytes like YCSB's `RandomByteIterator`, or
//! the deterministic `key:field:hash...` strings of `dataintegrity=true`.

use std::sync::Arc;

use rand::RngCore;

use crate::workload::generator::{Rng, UniformLong};

/// One shared buffer of YCSB-style random bytes; a value is a slice of it at
/// a random offset. Generating bytes per operation would cost more than the
/// engine call on fast engines; the pool keeps values as incompressible as
/// YCSB's (5-7 random bits per byte) within a block while costing one draw
/// per value. db_bench builds its values the same way. 64 KiB stays in the
/// core's L2 cache: with 1 MiB, copying a value from a random offset cost
/// ~50 ns of cache misses per operation (measured with perf on workload A).
#[derive(Clone)]
pub struct RandomValuePool {
    bytes: Arc<[u8]>,
}

const POOL_LEN: usize = 64 << 10;

impl RandomValuePool {
    pub fn new(rng: &mut Rng) -> Self {
        let mut bytes = vec![0u8; POOL_LEN];
        for chunk in bytes.chunks_mut(6) {
            fill_like_random_byte_iterator(rng.next_u32(), chunk);
        }
        Self {
            bytes: bytes.into(),
        }
    }

    /// Appends `len` random bytes to `out`.
    pub fn append(&self, rng: &mut Rng, len: usize, out: &mut Vec<u8>) {
        let mut left = len;
        while left > 0 {
            let take = left.min(POOL_LEN / 2);
            let start = UniformLong::new(0, (POOL_LEN - take) as u64).next(rng) as usize;
            out.extend_from_slice(&self.bytes[start..start + take]);
            left -= take;
        }
    }
}

/// The bit slices YCSB 0.17.0 `RandomByteIterator.fillBytesImpl` takes from
/// one random int: six printable characters from ' ' upwards.
fn fill_like_random_byte_iterator(bits: u32, out: &mut [u8]) {
    let bits = bits as i32;
    let slices = [(0, 31), (5, 63), (10, 95), (15, 31), (20, 63), (25, 95)];
    for (byte, (shift, mask)) in out.iter_mut().zip(slices) {
        *byte = (((bits >> shift) & mask) as u8) + b' ';
    }
}

/// YCSB's `buildDeterministicValue`: `key:field`, then `:` + Java
/// `String.hashCode()` of everything so far, repeated, cut to `len`.
pub fn append_deterministic_value(key: &[u8], field: &[u8], len: usize, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(key);
    out.push(b':');
    out.extend_from_slice(field);
    let mut digits = itoa::Buffer::new();
    // YCSB appends ':' first and then hashes everything so far, ':' included.
    while out.len() - start < len {
        out.push(b':');
        let hash = java_string_hash(&out[start..]);
        out.extend_from_slice(digits.format(hash).as_bytes());
    }
    out.truncate(start + len);
}

/// Java `String.hashCode()` for ASCII text (one UTF-16 unit per byte).
fn java_string_hash(text: &[u8]) -> i32 {
    text.iter()
        .fold(0i32, |h, &b| h.wrapping_mul(31).wrapping_add(i32::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::generator::rng_from_seed;

    #[test]
    fn java_hash_matches_known_values() {
        // "hello".hashCode() == 99162322 and "user1:field0".hashCode() per Java's formula.
        assert_eq!(java_string_hash(b"hello"), 99_162_322);
        assert_eq!(java_string_hash(b""), 0);
    }

    #[test]
    fn deterministic_value_has_ycsb_shape() {
        let mut out = Vec::new();
        append_deterministic_value(b"user1", b"field0", 40, &mut out);
        assert_eq!(out.len(), 40);
        let text = String::from_utf8(out.clone()).unwrap();
        let first_hash = java_string_hash(b"user1:field0:");
        assert!(
            text.starts_with(&format!("user1:field0:{first_hash}")),
            "{text}"
        );
        // Same inputs, same bytes; different field, different bytes.
        let mut again = Vec::new();
        append_deterministic_value(b"user1", b"field0", 40, &mut again);
        assert_eq!(out, again);
        let mut other = Vec::new();
        append_deterministic_value(b"user1", b"field1", 40, &mut other);
        assert_ne!(out, other);
    }

    #[test]
    fn deterministic_value_equals_ycsb_java_output() {
        // Printed by YCSB 0.17.0's CoreWorkload.buildDeterministicValue
        // (fieldlength=100) for this key and field.
        let mut out = Vec::new();
        append_deterministic_value(b"user1000385178204227360", b"field1", 100, &mut out);
        let expected = "user1000385178204227360:field1:288636201:-660152201:1502894107:\
                        -1562359756:-2072236864:575262803:144";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn random_values_are_printable_and_sized() {
        let mut rng = rng_from_seed(7, 0);
        let pool = RandomValuePool::new(&mut rng);
        let mut out = Vec::new();
        pool.append(&mut rng, 100, &mut out);
        pool.append(&mut rng, 3 * POOL_LEN / 2 + 5, &mut out);
        assert_eq!(out.len(), 100 + 3 * POOL_LEN / 2 + 5);
        assert!(out.iter().all(|&b| (b' '..=b' ' + 95).contains(&b)));
        // Not constant: YCSB values carry ~5.7 random bits per byte.
        let distinct = out[..100]
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len();
        assert!(distinct > 30, "only {distinct} distinct bytes");
    }
}
