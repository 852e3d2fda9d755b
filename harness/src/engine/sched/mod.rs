//! The kernel's scheduler parts the crate does not mirror: the engine's own, simplified, one
//! room per mechanism, each file named after its C function and opening with its C source.
//!
//! The crate mirrors the NOHZ bookkeeping around them (the idle mask, the kick, the ILB pass,
//! `nohz.next_balance`, blocked-load flags) and calls into them through the platform's
//! [`Balance`](nohz::platform::Balance) trait, whose impl is in `engine/mod.rs`:
//!
//! - [`topology`]: the scheduling domains and their balancing state (`build_sched_domains`).
//! - [`select_idle_sibling`]: where a waking task runs.
//! - [`sched_balance_rq`]: pulling tasks from the busiest CPU of a span (`load_balance`).
//! - [`sched_balance_domains`]: the periodic balance over a CPU's domains, at their
//!   intervals.
//! - [`sched_balance_newidle`]: a CPU about to idle pulls one task.
//! - [`sched_balance_update_blocked_averages`]: blocked load and its decay.
//! - [`costs`]: what each piece of balancing work costs in time, with its source.
//!
//! Fork and exec placement (`find_idlest_group`) is not modelled: tasks start on the CPU
//! their source names.

mod costs;
mod sched_balance_domains;
mod sched_balance_newidle;
mod sched_balance_rq;
mod sched_balance_update_blocked_averages;
mod select_idle_sibling;
mod topology;

pub use costs::BalanceCosts;
pub(super) use sched_balance_newidle::NewidleSt;
pub(super) use sched_balance_update_blocked_averages::blocked_util;
pub(super) use topology::Domain;
