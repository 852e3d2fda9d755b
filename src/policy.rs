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
//! - `Sharded` (feature `sharded`): `Scalable` with the idle mask split into shards of at most
//!   64 CPUs (by LLC, or in runs of consecutive ids) and a sticky per-shard summary on the
//!   `nohz` line: idle entry and exit write only their own shard's line. One documented
//!   divergence from `Patched` in its shipped `Hint` mode (a stale summary bit can cost one
//!   extra kick attempt that finds no ILB); the `Validated` mode with `LowestId` and contiguous
//!   shards has none.
//!
//! The trait is sealed: a policy is a statement about which kernel is mirrored, and every one
//! of them must pass the crate's models and property tests.

use crate::fair::hooks::{IdleCpus, NohzLine};
use crate::fair::hooks::{KernelLine, ScalableLine};

pub(crate) mod sealed {
    /// Seals [`Policy`](super::Policy), and carries the hooks through which what the kernel
    /// does not have enters the kernel paths (`crate::fair::hooks`): each policy names its
    /// idle set and its `nohz` line discipline here.
    pub trait Sealed: 'static {
        /// The idle set: what `nohz.idle_cpus_mask` is. The kernel's policies keep the flat
        /// `CpuMask<W>`; `Sharded`, its shards.
        type IdleCpus<const W: usize>: super::IdleCpus<W>;
        /// How idle entry writes the `nohz` flags, and the not-due gate of the kick that reads
        /// them. The kernel's: blind stores, no gate; `Scalable` and `Sharded`: read before
        /// write and one precomputed deadline word.
        type NohzLine: super::NohzLine;
    }
}

/// A compile-time choice of kernel behaviour. Sealed; see [`Patched`] and [`Legacy`].
///
/// The four seed constants are the kernel's own history: the kernel paths branch on them
/// inline, each branch reading as the seed's diff. What the kernel does not have (`Scalable`,
/// `Sharded`) enters those paths only through the policy's hooks, never through a constant;
/// the three constants below them only describe the policy (for reports and tests).
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

    /// Beyond the kernel (`Scalable`, `Sharded`), descriptive: `nohz_balance_enter_idle`
    /// stores 1 into `nohz.has_blocked_load` and `nohz.needs_update` only if it reads 0 there
    /// (spec §6 O7), so a registered CPU re-entering idle writes no shared line.
    const READ_BEFORE_WRITE: bool;

    /// Beyond the kernel (`Scalable`, `Sharded`), descriptive: the not-due test of
    /// `nohz_balancer_kick` reads one precomputed word, `nohz.kick_deadline`, instead of
    /// `has_blocked_load`, `next_blocked`, `next_balance` and `needs_update` (see
    /// `src/beyond/kick_deadline.rs`).
    const KICK_DEADLINE: bool;

    /// Beyond the kernel (`Sharded`), descriptive: the idle set is split into shards with a
    /// sticky summary instead of the one flat `nohz.idle_cpus_mask`.
    const SHARDED: bool;
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
    const READ_BEFORE_WRITE: bool = false;
    const KICK_DEADLINE: bool = false;
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
impl sealed::Sealed for Scalable {
    type IdleCpus<const W: usize> = crate::cpumask::CpuMask<W>;
    type NohzLine = ScalableLine;
}

impl Policy for Patched {
    const NAME: &'static str = "patched";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    const READ_BEFORE_WRITE: bool = false;
    const KICK_DEADLINE: bool = false;
    const SHARDED: bool = false;
}

impl Policy for Legacy {
    const NAME: &'static str = "legacy";
    const NR_CPUS_COUNTER: bool = true;
    const TIME_CHECKS_FIRST: bool = false;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = false;
    const IRQTIME_STATIC_KEY: bool = false;
    const READ_BEFORE_WRITE: bool = false;
    const KICK_DEADLINE: bool = false;
    const SHARDED: bool = false;
}

impl Policy for Scalable {
    const NAME: &'static str = "scalable";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    const READ_BEFORE_WRITE: bool = true;
    const KICK_DEADLINE: bool = true;
    const SHARDED: bool = false;
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

    #[cfg(feature = "testing")]
    #[test]
    fn seed000_is_legacy_with_seed_000_alone() {
        assert_eq!(seeds::<Seed000>(), [true, true, false, false]);
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
