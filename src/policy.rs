//! Policies: which kernel the crate mirrors, chosen at compile time. This file holds the
//! kernel's own: [`Patched`] and [`Legacy`] (and, for the test rigs, `Seed000`).
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
//!
//! Both keep the kernel's objects in the policy's hooks: the flat `CpuMask` as the idle set,
//! blind stores and no gate on the `nohz` line. The policies beyond the kernel live with their
//! code in `src/beyond/`, each behind a cargo feature, so a kernel that vendors `Patched`
//! compiles none of it:
//!
//! - `Scalable` (feature `scalable`): observably identical to `Patched`, cheaper on the shared
//!   `nohz` line: it reads `nohz.has_blocked_load` / `nohz.needs_update` before storing 1 into
//!   them (spec §6 O7), so a CPU that re-enters idle with its tick stopped (every idle pass,
//!   after seed 001) writes no shared line; and a busy CPU's tick tests "balancing not due"
//!   with one load of a precomputed deadline. The recommended choice where its proofs (loom,
//!   the property tests against the reference model, every kernel-path test) and its numbers
//!   (the benchmarks) matter; `Patched` stays the default.
//! - `Sharded` (feature `sharded`, which turns on `scalable`): `Scalable` with the idle mask
//!   split into shards of at most 64 CPUs (by LLC, or in runs of consecutive ids) and a sticky
//!   per-shard summary on the `nohz` line: idle entry and exit write only their own shard's
//!   line. One documented divergence from `Patched` in its shipped `Hint` mode (a stale
//!   summary bit can cost one extra kick attempt that finds no ILB); the `Validated` mode with
//!   `LowestId` and contiguous shards has none.
//! - `Paced` (feature `paced`): `Patched` whose balance kick carries STATS only when
//!   `nohz.next_blocked` is due (the ILB refreshes blocked load once per `LOAD_AVG_PERIOD`,
//!   not once a jiffy), which kicks NEXT alone only while `nohz.next_balance` is more than a
//!   jiffy ahead, and whose `find_new_ilb` scans from a start hashed from `jiffies`
//!   (the ILB duty spread, no shared write). No new state; its divergences from `Patched` are
//!   documented in `src/beyond/paced.rs` and pinned down by `tests/paced.rs`.
//!
//! The trait is sealed, and declared with its hooks in `src/fair/hooks.rs`, the lowest room
//! that branches on it (every kernel path above it names it through `fair`): a policy is a
//! statement about which kernel is mirrored, and every one of them must pass the crate's
//! models and property tests.

pub use crate::fair::hooks::Policy;
use crate::fair::hooks::{KernelLine, sealed};

/// The kernel with seeds 000, 001 and 003 applied: the reference behaviour, and the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Patched;

/// The kernel before the seeds (v6.19): the behaviour the seeds fixed, for comparison only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Legacy;

/// The kernel with seed 000 alone (`nohz.nr_cpus` gone, the kick's time checks first),
/// before seeds 001 and 003: `nohz_balance_enter_idle` only on the pass that stops the tick,
/// the irq-time flag still beside the `nohz` line. The kernel seed 000's own numbers were
/// measured on, for the virtual-time engine to reproduce them (feature `testing`).
#[cfg(feature = "testing")]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Seed000;

#[cfg(feature = "testing")]
impl sealed::Sealed for Seed000 {
    type IdleCpus<const W: usize> = crate::cpumask::CpuMask<W>;
    type NohzLine = KernelLine;
}

#[cfg(feature = "testing")]
impl Policy for Seed000 {
    const NAME: &'static str = "seed000";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = false;
    const IRQTIME_STATIC_KEY: bool = false;
    #[cfg(feature = "testing")]
    const READ_BEFORE_WRITE: bool = false;
    #[cfg(feature = "testing")]
    const KICK_DEADLINE: bool = false;
    #[cfg(feature = "testing")]
    const SHARDED: bool = false;
}

impl sealed::Sealed for Patched {
    type IdleCpus<const W: usize> = crate::cpumask::CpuMask<W>;
    type NohzLine = KernelLine;
}
impl sealed::Sealed for Legacy {
    type IdleCpus<const W: usize> = crate::cpumask::CpuMask<W>;
    type NohzLine = KernelLine;
}

impl Policy for Patched {
    const NAME: &'static str = "patched";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    #[cfg(feature = "testing")]
    const READ_BEFORE_WRITE: bool = false;
    #[cfg(feature = "testing")]
    const KICK_DEADLINE: bool = false;
    #[cfg(feature = "testing")]
    const SHARDED: bool = false;
}

impl Policy for Legacy {
    const NAME: &'static str = "legacy";
    const NR_CPUS_COUNTER: bool = true;
    const TIME_CHECKS_FIRST: bool = false;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = false;
    const IRQTIME_STATIC_KEY: bool = false;
    #[cfg(feature = "testing")]
    const READ_BEFORE_WRITE: bool = false;
    #[cfg(feature = "testing")]
    const KICK_DEADLINE: bool = false;
    #[cfg(feature = "testing")]
    const SHARDED: bool = false;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The four seed constants of `P`, each true where `P` has the seed's change.
    pub(crate) fn seeds<P: Policy>() -> [bool; 4] {
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

    #[cfg(feature = "testing")]
    #[test]
    fn seed000_is_legacy_with_seed_000_alone() {
        assert_eq!(seeds::<Seed000>(), [true, true, false, false]);
    }
}
