//! The device under the engine: `kvperf device corners` measures a file or
//! raw device the way fio's "4 corners" do, with io_uring and direct I/O.

pub mod buffers;
pub mod corners;
pub mod fio;
pub mod precondition;
pub mod target;
mod uring;

/// The block of a layout's and a fill's sequential writes: the smallest
/// target kvperf measures.
pub const FILL_BLOCK: u64 = 1 << 20;
