//! Policies: which kernel the crate mirrors, chosen at compile time.
//!
//! C source: the three seed patch threads (`shared/seeds/`): which kernel version each policy mirrors.
//!
//! # Design
//!
//! The three seed changes are each a small difference in a hot path. Rather than runtime
//! flags, every type whose behaviour depends on them takes a [`Policy`] type parameter whose
//! associated constants say which side of each change to take; the compiler folds the choice
//! away, so each policy costs exactly its own code, and both live side by side in one binary
//! (tests show each old bug, benches each gain).
//!
//! - [`Patched`]: the kernel with the three seeds applied: the reference behaviour, and the
//!   default, because a vendoring kernel asks first for the kernel's behaviour.
//! - [`Legacy`]: the kernel before them (v6.19), kept so tests and benches can show what each
//!   seed changed. Never a default.
//! - [`Scalable`]: observably identical to `Patched`, cheaper on the shared `nohz` line: it
//!   reads `nohz.has_blocked_load` / `nohz.needs_update` before storing 1 into them (spec §6 O7),
//!   so a CPU that re-enters idle with its tick stopped (every idle pass, after seed 001) writes
//!   no shared line; and a busy CPU's tick tests "balancing not due" with one load of a
//!   precomputed deadline. The recommended choice where its proofs (loom, the property tests
//!   against the reference model, every kernel-path test) and its numbers (the benchmarks)
//!   matter; `Patched` stays the default.
//! - [`Sharded`]: `Scalable` with the idle mask split into shards of at most 64 CPUs (by LLC,
//!   or in runs of consecutive ids) and a sticky per-shard summary on the `nohz` line
//!   ([`crate::beyond::sharded`]): idle entry and exit write only their own shard's line. One
//!   documented divergence from `Patched` in its shipped [`Hint`]
//!   mode (a stale summary bit can cost one extra kick attempt that finds no ILB); the
//!   [`Validated`](crate::beyond::sharded::Validated) mode with
//!   [`LowestId`](crate::beyond::sharded::LowestId) and contiguous shards has none.
//!
//! The trait is sealed: a policy is a statement about which kernel is mirrored, and every one
//! of them must pass the crate's models and property tests.

use crate::beyond::sharded::{
    ByLlc, Emptiness, Hint, IlbOrder, LocalFirst, NoLayout, ShardLayout, ShardSet, ShardedIdle,
};
use core::marker::PhantomData;

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A compile-time choice of kernel behaviour. Sealed; see [`Patched`] and [`Legacy`].
pub trait Policy: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// Short name for reports (`"patched"`, `"legacy"`).
    const NAME: &'static str;

    /// Seed 000, patch 3: `Legacy` keeps the atomic `nohz.nr_cpus` counter beside the idle
    /// mask (incremented and decremented with each bit) and tests it for "nobody is tickless";
    /// `Patched` drops it and tests the mask for emptiness.
    const NR_CPUS_COUNTER: bool;

    /// Seed 000, patch 1: `Patched` checks the blocked-load and balance times in
    /// `nohz_balancer_kick` before looking at the mask; `Legacy` looks at the count first.
    const TIME_CHECKS_FIRST: bool;

    /// Seed 001: `Patched` calls `nohz_balance_enter_idle` on every idle pass that leaves the
    /// tick stopped; `Legacy` only on the pass that stops it (`!was_stopped && STOPPED`), so a
    /// NO_HZ_FULL CPU whose tick stopped while it ran stays invisible to the idle balancer.
    const ENTER_IDLE_WHENEVER_STOPPED: bool;

    /// Seed 003: `Patched` gates irq-time accounting on the `sched_clock_irqtime` static key
    /// (its own cache line); `Legacy` reads a plain flag that shares the `nohz` scalar line.
    const IRQTIME_STATIC_KEY: bool;

    /// Beyond the kernel (`Scalable`): `nohz_balance_enter_idle` stores 1 into
    /// `nohz.has_blocked_load` and `nohz.needs_update` only if it reads 0 there. On the
    /// registration path the O1/O2 fences already make that safe (O7); on the idempotent path,
    /// where the kernel's blind store needs no barrier, a fence is added (see
    /// [`NOHZ_ENTER_IDLE_REPEAT_FENCE`](crate::sync::NOHZ_ENTER_IDLE_REPEAT_FENCE)).
    const READ_BEFORE_WRITE: bool;

    /// Beyond the kernel (`Scalable`): the not-due test of `nohz_balancer_kick` reads one
    /// precomputed word, `nohz.kick_deadline`, instead of `has_blocked_load`, `next_blocked`,
    /// `next_balance` and `needs_update` (see [`Nohz::kick_deadline`](crate::Nohz::kick_deadline)
    /// for what it folds and who maintains it).
    const KICK_DEADLINE: bool;

    /// Beyond the kernel (`Sharded`): the idle set's per-shard storage. A flat policy's holds
    /// no shard (`ShardedIdle<0>`, zero bytes): its machine does not grow.
    type Shards: ShardSet;

    /// Beyond the kernel (`Sharded`): how the possible CPUs are split into shards at init.
    type Layout: ShardLayout;

    /// Beyond the kernel (`Sharded`): the idle set is split into shards with a sticky summary
    /// (see [`crate::beyond::sharded`]) instead of the one flat `nohz.idle_cpus_mask`.
    const SHARDED: bool;

    /// `Sharded` only: `find_new_ilb` looks in the kicker's shard first, from a rotating slot
    /// ([`LocalFirst`]), instead of ascending ids ([`LowestId`](crate::beyond::sharded::LowestId)).
    const ILB_LOCAL_FIRST: bool;

    /// `Sharded` only: the kick's "anyone tickless?" test reads the summary alone
    /// ([`Hint`]), instead of checking the flagged shards' words
    /// ([`Validated`](crate::beyond::sharded::Validated)).
    const SHARD_HINT: bool;
}

/// The kernel with seeds 000, 001 and 003 applied: the reference behaviour, and the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Patched;

/// The kernel before the seeds (v6.19): the behaviour the seeds fixed, for comparison only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Legacy;

/// `Patched`, with the `nohz` flags read before they are written: the same observable
/// behaviour, no shared-line store on a repeated idle entry. Recommended where its proofs and
/// numbers matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Scalable;

/// `Scalable` with sharded idle tracking (beyond the kernel; [`crate::beyond::sharded`]): at
/// most `S` shards (at most 128: the summary is two words on the `nohz` line), laid out by `L`
/// ([`ByLlc`] by default: each LLC split at 64 CPUs), `find_new_ilb` in order `O`
/// ([`LocalFirst`] by default), the kick's emptiness test in mode `E` ([`Hint`] by default).
///
/// ```
/// use nohz::beyond::sharded::{Contiguous, LowestId, Validated};
/// use nohz::{Machine, Sharded};
/// // 8 CPUs in 4 shards of 2, with the kernel's observables (the differential tests' choice).
/// type Strict = Sharded<4, Contiguous<2>, LowestId, Validated>;
/// static MACHINE: nohz::machine!(Strict, 8) = Machine::new();
/// // The shipped choice: LLC shards, local-first ILB choice, the summary as a hint.
/// static SHIPPED: nohz::machine!(Sharded<16>, 256) = Machine::new();
/// ```
pub struct Sharded<const S: usize, L = ByLlc, O = LocalFirst, E = Hint>(Markers<L, O, E>);

/// The type parameters of [`Sharded`], held by a function pointer type so that `Sharded` is
/// `Send + Sync + Copy` whatever they are.
type Markers<L, O, E> = PhantomData<fn() -> (L, O, E)>;

impl<const S: usize, L, O, E> core::fmt::Debug for Sharded<S, L, O, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Sharded<{S}>")
    }
}
impl<const S: usize, L, O, E> Clone for Sharded<S, L, O, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<const S: usize, L, O, E> Copy for Sharded<S, L, O, E> {}
impl<const S: usize, L, O, E> Default for Sharded<S, L, O, E> {
    fn default() -> Self {
        Sharded(PhantomData)
    }
}

impl sealed::Sealed for Patched {}
impl sealed::Sealed for Legacy {}
impl sealed::Sealed for Scalable {}
impl<const S: usize, L, O, E> sealed::Sealed for Sharded<S, L, O, E> {}

impl Policy for Patched {
    type Shards = ShardedIdle<0>;
    type Layout = NoLayout;
    const SHARDED: bool = false;
    const ILB_LOCAL_FIRST: bool = false;
    const SHARD_HINT: bool = false;
    const NAME: &'static str = "patched";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    const READ_BEFORE_WRITE: bool = false;
    const KICK_DEADLINE: bool = false;
}

impl Policy for Legacy {
    type Shards = ShardedIdle<0>;
    type Layout = NoLayout;
    const SHARDED: bool = false;
    const ILB_LOCAL_FIRST: bool = false;
    const SHARD_HINT: bool = false;
    const NAME: &'static str = "legacy";
    const NR_CPUS_COUNTER: bool = true;
    const TIME_CHECKS_FIRST: bool = false;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = false;
    const IRQTIME_STATIC_KEY: bool = false;
    const READ_BEFORE_WRITE: bool = false;
    const KICK_DEADLINE: bool = false;
}

impl Policy for Scalable {
    type Shards = ShardedIdle<0>;
    type Layout = NoLayout;
    const SHARDED: bool = false;
    const ILB_LOCAL_FIRST: bool = false;
    const SHARD_HINT: bool = false;
    const NAME: &'static str = "scalable";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    const READ_BEFORE_WRITE: bool = true;
    const KICK_DEADLINE: bool = true;
}

impl<const S: usize, L: ShardLayout, O: IlbOrder, E: Emptiness> Policy for Sharded<S, L, O, E> {
    type Shards = ShardedIdle<S>;
    type Layout = L;
    const SHARDED: bool = true;
    const ILB_LOCAL_FIRST: bool = O::LOCAL_FIRST;
    const SHARD_HINT: bool = E::HINT;
    const NAME: &'static str = match (O::LOCAL_FIRST, E::HINT) {
        (true, true) => "sharded",
        (true, false) => "sharded-validated",
        (false, true) => "sharded-lowest",
        (false, false) => "sharded-strict",
    };
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    const READ_BEFORE_WRITE: bool = true;
    const KICK_DEADLINE: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds<P: Policy>() -> [bool; 4] {
        [
            !P::NR_CPUS_COUNTER,
            P::TIME_CHECKS_FIRST,
            P::ENTER_IDLE_WHENEVER_STOPPED,
            P::IRQTIME_STATIC_KEY,
        ]
    }

    #[test]
    fn patched_has_every_seed_and_legacy_none() {
        assert_eq!(seeds::<Patched>(), [true; 4]);
        assert_eq!(seeds::<Legacy>(), [false; 4]);
        assert_ne!(Patched::NAME, Legacy::NAME);
    }

    #[test]
    fn scalable_is_patched_plus_read_before_write() {
        assert_eq!(seeds::<Scalable>(), seeds::<Patched>());
        let rbw = [
            Scalable::READ_BEFORE_WRITE,
            Patched::READ_BEFORE_WRITE,
            Legacy::READ_BEFORE_WRITE,
        ];
        assert_eq!(rbw, [true, false, false]);
        assert_ne!(Scalable::NAME, Patched::NAME);
    }
}
