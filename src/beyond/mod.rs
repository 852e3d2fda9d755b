//! What the kernel does not have: the parts of the [`Scalable`](crate::Scalable) and
//! [`Sharded`](crate::Sharded) policies that go beyond a mirror of the kernel, each a type of its own that the kernel paths enter
//! through one prelude.
//!
//! C source: none: what the kernel does not have.
//!
//! - [`kick_deadline`]: the busy tick's "balancing not due" test as one load of a precomputed
//!   deadline word, kept true by the writers that make a kick due sooner.
//! - [`sharded`]: the [`Sharded`](crate::Sharded) policy's idle set: one word per shard of at
//!   most 64 CPUs and a sticky per-shard summary on the `nohz` line, so that idle entry and
//!   exit write only their own shard's line.

pub mod kick_deadline;
pub mod sharded;
