//! Policies: which kernel the crate mirrors, chosen at compile time.
//!
//! # Design
//!
//! The three seed changes are each a small difference in a hot path. Rather than runtime
//! flags, every type whose behaviour depends on them takes a [`Policy`] type parameter whose
//! associated constants say which side of each change to take; the compiler folds the choice
//! away, so each policy costs exactly its own code, and both live side by side in one binary
//! (tests show each old bug, benches each gain).
//!
//! - [`Patched`]: the kernel with the three seeds applied: the reference behaviour.
//! - [`Legacy`]: the kernel before them (v6.19), kept so tests and benches can show what each
//!   seed changed. Never a default.
//!
//! The trait is sealed: a policy is a statement about which kernel is mirrored, and every one
//! of them must pass the crate's models and property tests.

mod sealed {
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
}

/// The kernel with seeds 000, 001 and 003 applied: the reference behaviour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Patched;

/// The kernel before the seeds (v6.19): the behaviour the seeds fixed, for comparison only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Legacy;

impl sealed::Sealed for Patched {}
impl sealed::Sealed for Legacy {}

impl Policy for Patched {
    const NAME: &'static str = "patched";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
}

impl Policy for Legacy {
    const NAME: &'static str = "legacy";
    const NR_CPUS_COUNTER: bool = true;
    const TIME_CHECKS_FIRST: bool = false;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = false;
    const IRQTIME_STATIC_KEY: bool = false;
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
}
