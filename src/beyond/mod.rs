//! What the kernel does not have: the parts of the [`Scalable`](crate::Scalable) policy that
//! go beyond a mirror of the kernel, each a type of its own that the kernel paths enter
//! through one prelude.
//!
//! C source: none: what the kernel does not have.
//!
//! - [`kick_deadline`]: the busy tick's "balancing not due" test as one load of a precomputed
//!   deadline word, kept true by the writers that make a kick due sooner.

pub mod kick_deadline;
