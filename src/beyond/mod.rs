//! What the kernel does not have: the parts of the [`Scalable`](crate::Scalable) and `Sharded`
//! policies that go beyond a mirror of the kernel, each a type of its own that the kernel
//! paths enter through the policy's hooks (`src/fair/hooks.rs`).
//!
//! C source: none: what the kernel does not have.
//!
//! - `kick_deadline` (internal): `Scalable`'s `nohz` line: the flags read before they are
//!   written, and the busy tick's "balancing not due" test as one load of a precomputed
//!   deadline word, kept true by the writers that make a kick due sooner.
//! - `sharded` (feature `sharded`): the `Sharded` policy's idle set: one word per shard of at
//!   most 64 CPUs and a sticky per-shard summary on the `nohz` line, so that idle entry and
//!   exit write only their own shard's line.

pub(crate) mod kick_deadline;
#[cfg(feature = "sharded")]
pub mod sharded;
