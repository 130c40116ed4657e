//! db_bench's keys: the key number as 8 big-endian bytes, padded with '0'
//! to `--key_size` (RocksDB 11.8 `tools/db_bench_tool.cc`,
//! `GenerateKeyFromInt`, with the default `keys_per_prefix=0`). A key
//! shorter than 8 bytes keeps the number's low-order bytes.

/// Writes key `number` into `out`, which must be `key_size` bytes long.
#[inline]
pub fn fill_key(number: u64, out: &mut [u8]) {
    let bytes = out.len().min(8);
    out[..bytes].copy_from_slice(&number.to_be_bytes()[8 - bytes..]);
    out[bytes..].fill(b'0');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_byte_keys_are_big_endian_then_zero_padded() {
        let mut key = [0u8; 16];
        fill_key(0x0102_0304_0506_0708, &mut key);
        assert_eq!(&key, b"\x01\x02\x03\x04\x05\x06\x07\x0800000000");
    }

    #[test]
    fn keys_sort_in_number_order() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        fill_key(255, &mut a);
        fill_key(256, &mut b);
        assert!(a < b);
    }

    #[test]
    fn short_keys_keep_the_low_bytes() {
        let mut key = [0u8; 4];
        fill_key(0x0102_0304_0506_0708, &mut key);
        assert_eq!(key, [5, 6, 7, 8]);
    }
}
