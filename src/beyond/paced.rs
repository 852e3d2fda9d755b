//! [`Paced`]: `Scalable` (so `Patched`'s behaviour) with the ILB's blocked-load refresh paced
//! by the kernel's own `nohz.next_blocked` deadline, and the ILB duty spread by jiffies (no
//! kernel counterpart; feature `paced`, which turns on `scalable`).
//!
//! C source: none (beyond the kernel); it changes the flags `kernel/sched/fair.c`'s
//! `nohz_balancer_kick` asks for once balancing is due, and where `find_new_ilb` starts its
//! scan of `nohz.idle_cpus_mask`.
//!
//! # Design
//!
//! On a machine with many idle CPUs, some idle CPU's `rq->next_balance` is nearly always due,
//! so a busy tick kicks an ILB pass about once a jiffy. The kernel's kick then asks for
//! `NOHZ_STATS_KICK | NOHZ_BALANCE_KICK` together, so every such pass also refreshes the
//! blocked load of every idle CPU that has some (`update_nohz_stats`, at most once a jiffy a
//! CPU): on the engine's 768-CPU frontier machine that refresh is most of the ILB's time. And
//! `find_new_ilb` scans from bit 0, so the lowest-numbered idle CPU runs most passes.
//!
//! `Paced` keeps every kernel object of `Patched` but the `nohz` line hook, which is
//! `Scalable`'s ([`ScalableLine`]: idle entry reads `nohz.has_blocked_load` and
//! `nohz.needs_update` before it stores 1, the busy tick's not-due test is one load of a
//! precomputed deadline), so its idle entry, exit and not-due tick are `Scalable`'s code, with
//! `Scalable`'s orderings and loom models (`o7`, run under `Paced` too). On top of that it
//! changes four hook methods:
//!
//! - **The refresh paced** ([`PacedLine`], `NohzLine::balance_kick`): a BALANCE kick carries
//!   STATS only when the kernel's own STATS deadline is due (`nohz.has_blocked_load` set and
//!   `jiffies` after `nohz.next_blocked`: the time checks' `flags`). So each idle CPU's blocked
//!   load is refreshed by a STATS pass about once per `LOAD_AVG_PERIOD` (32 ms), the cadence
//!   the kernel already keeps when no balancing is due, instead of once a jiffy. The pass
//!   that does it may be a kicked one or the one a CPU entering idle runs itself
//!   (`nohz_run_idle_balance`). Nothing new is read or written: the kick reuses what its time
//!   checks read.
//! - **No NEXT-only kick a jiffy before a BALANCE kick** (`NohzLine::next_kick`): NEXT still
//!   rides on every other flag, but goes alone only while `nohz.next_balance` is more than a
//!   jiffy ahead. When it is not, the next BALANCE kick carries NEXT within a jiffy. A
//!   NEXT-only pass could at best move that kick one jiffy earlier, and it costs an IPI and a
//!   walk of the mask. (The kernel's not-due kick reads the same line.)
//! - **An idle CPU balanced once it has stayed idle through a jiffy**
//!   (`NohzLine::newidle_next_balance`): a CPU about to idle runs its newidle look
//!   (`sched_balance_newidle`). When that pulls nothing, the kernel pulls `rq->next_balance`
//!   in to the base domain's deadline, which the CPU's busy period (intervals `busy_factor`,
//!   16, times the idle ones) has nearly always left in the past; so the next ILB pass, about
//!   a jiffy later, balances every due domain of a CPU that went idle a moment ago. Where the
//!   look established that there was nothing to pull (no overloaded CPU in the root domain,
//!   or a walk of the domains that pulled nothing), that balance repeats it. `Paced` then
//!   keeps the kernel's deadline but no earlier than [`IDLE_HOLD_JIFFIES`] (2) after the look:
//!   the pass of the next jiffy passes the CPU by, the one after balances it if it is still
//!   idle. A look skipped because the CPU's expected idle (`avg_idle`) was shorter than a
//!   walk's cost looked at nothing, and is not held: there the next balance is the first to
//!   look (on a busy machine, hackbench, that is where the ILB's and the tick's idle balances
//!   pull their tasks). On the engine's 768-CPU machine at 70 % utilization nearly every ILB
//!   domain balance was for a CPU idle for under a millisecond, and ILB passes pulled a task
//!   about ten times a second (`harness/docs/frontier.md`). Nothing new is read or written:
//!   the hold changes the value of the kernel's store of the CPU's own `rq->next_balance`,
//!   never whether it is made (where the kernel keeps a deadline that is already earlier,
//!   so does `Paced`).
//! - **The duty spread** ([`SpreadIdle`], `IdleCpus::find_ilb`): `find_new_ilb` scans
//!   `nohz.idle_cpus_mask ∩ housekeeping` from a start bit hashed from `jiffies`, wrapping, not
//!   from bit 0. No shared state is written for it (Khan's round-robin stores the last pick on
//!   the `nohz` line on every pick). The start depends on `jiffies` alone, not on the kicker,
//!   so every kick of one jiffy picks the same CPU from the same mask, as the kernel's do,
//!   and their bits ride along on one kick instead of starting several passes.
//!
//! # Divergence from `Patched`
//!
//! - A kick may carry BALANCE without STATS; its pass balances the due CPUs and leaves
//!   `nohz.has_blocked_load` and `nohz.next_blocked` alone. The kernel's
//!   `WARN_ON((flags & NOHZ_KICK_MASK) == NOHZ_BALANCE_KICK)` is not counted for it.
//! - Between STATS passes an idle CPU's blocked load is up to `LOAD_AVG_PERIOD` stale (one
//!   half-life) when a BALANCE pass reads it; the kernel's not-due kicks already allow that.
//!   The engine's balancer reads each CPU's signals brought to the present, so its quality
//!   numbers do not show this staleness (`harness/docs/frontier-design-notes.md`).
//! - `find_new_ilb` may return a different idle housekeeping CPU than the lowest-numbered
//!   one; it is never the kicker and always idle right now, as the kernel's.
//! - While `nohz.next_balance` is at most a jiffy ahead, a CPU that registers waits for the
//!   next BALANCE kick (at most a jiffy) to have `nohz.next_balance` account for it.
//! - After a newidle look that found nothing to pull, the CPU's `rq->next_balance` is at
//!   least `jiffies + 2`, where the kernel's may be due at once: its next periodic balance, by
//!   an ILB pass or by its own tick, comes up to two jiffies later, and a CPU that goes idle
//!   again within two jiffies each time, and finds nothing each time, is not balanced on
//!   behalf of idle in between. What such a balance could still do with nothing queued
//!   anywhere is an active balance (a running task moved to it, which the engine does not
//!   model); the kernel reaches one only after repeated failed balances at the domain's
//!   interval, and a CPU idle for under two jiffies at a time is a poor place to move a
//!   running task to.
//!
//! `tests/paced.rs` pins each of these down and checks everything else against `Patched`.
//! The reference model says each of them too (`tests/model/reference.rs`, `Beyond`: the paced
//! kick, the newidle hold and the hashed ILB start), so `paced_machine_follows_the_model`
//! checks every observable of `Paced` against it on random sequences. The kernel-path tests
//! that expect STATS with every balance kick, or the pass's warning for BALANCE alone, leave
//! `Paced` out (`for_each_policy!(except Paced: ..)`, each list saying which test of
//! `tests/paced.rs` pins the difference); every other kernel-path test runs it.

use super::scalable::ScalableLine;
use crate::cpu::{CpuId, NrCpuIds};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::fair::hooks::{IdleCpus, NohzLine, Policy, sealed};
use crate::fair::rq::{NohzFlags, Rq};
use crate::fair::{Fair, KickDecision, Scalars};
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::sync::AtomicU32;

/// `Scalable` with the ILB's blocked-load refresh paced by `nohz.next_blocked`, no NEXT-only
/// kick a jiffy before a BALANCE kick, an idle CPU's first balance held two jiffies after its
/// newidle look, and the ILB chosen from a start hashed from `jiffies` (feature `paced`). No
/// shared state and no ordering beyond `Scalable`'s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Paced;

impl sealed::Sealed for Paced {
    type IdleCpus<const W: usize> = SpreadIdle<W>;
    type NohzLine = PacedLine;
}

impl Policy for Paced {
    const NAME: &'static str = "paced";
    const NR_CPUS_COUNTER: bool = false;
    const TIME_CHECKS_FIRST: bool = true;
    const ENTER_IDLE_WHENEVER_STOPPED: bool = true;
    const IRQTIME_STATIC_KEY: bool = true;
    #[cfg(feature = "testing")]
    const READ_BEFORE_WRITE: bool = true;
    #[cfg(feature = "testing")]
    const KICK_DEADLINE: bool = true;
    #[cfg(feature = "testing")]
    const SHARDED: bool = false;
}

/// `Paced`'s `nohz` line: `Scalable`'s ([`ScalableLine`]: idle entry reads the flags before
/// it stores them, the busy tick's not-due test is one load of the precomputed deadline), except
/// that a kick that wants balancing asks for STATS only when the kernel's STATS deadline is
/// due, NEXT goes alone only while `nohz.next_balance` is more than a jiffy ahead, and a
/// newidle look that found nothing to pull leaves `rq->next_balance` at least
/// [`IDLE_HOLD_JIFFIES`] ahead.
///
/// The gate stays sound: it decides by itself only ticks before the deadline it folds from the
/// scalars, where `Patched`'s kick asks for nothing, and `Paced`'s kick never asks for more than
/// `Patched`'s on the same scalars.
#[derive(Debug)]
pub struct PacedLine(ScalableLine);

impl NohzLine for PacedLine {
    #[cfg(not(nohz_loom))]
    const NEW: Self = PacedLine(<ScalableLine as NohzLine>::NEW);
    #[cfg(nohz_loom)]
    fn new() -> Self {
        PacedLine(ScalableLine::new())
    }

    #[inline(always)]
    fn reenter_idle(&self, line: &Scalars, rq: &Rq) -> bool {
        self.0.reenter_idle(line, rq)
    }

    #[inline(always)]
    fn raise(&self, flag: &AtomicU32) -> bool {
        self.0.raise(flag)
    }

    #[inline(always)]
    fn raised(&self, raised: bool) {
        self.0.raised(raised)
    }

    #[inline(always)]
    fn gate<P: Policy, const N: usize, const W: usize, Pl: Platform<N>>(
        &self,
        fair: &Fair<P, N, W>,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> KickDecision<N> {
        self.0.gate(fair, cpus, cpu, plat)
    }

    #[inline]
    fn moved(&self, line: &Scalars, now: Jiffies) {
        self.0.moved(line, now)
    }

    #[cfg(feature = "testing")]
    fn deadline(&self) -> Option<Jiffies> {
        self.0.deadline()
    }

    /// BALANCE, with STATS only if the time checks found the blocked-load refresh due
    /// (`flags`): the ILB refreshes blocked load at `nohz.next_blocked`'s pace.
    #[inline(always)]
    fn balance_kick(&self, flags: NohzFlags) -> NohzFlags {
        (flags & NohzFlags::STATS) | NohzFlags::BALANCE
    }

    /// The kernel's pull-in, held back to [`IDLE_HOLD_JIFFIES`] after `now` when the look
    /// found nothing to pull and the kernel stores: the next jiffy's ILB pass leaves the CPU
    /// alone, the one after balances it if it is still idle.
    #[inline]
    fn newidle_next_balance(
        &self,
        current: Jiffies,
        next: Jiffies,
        found_nothing: bool,
        now: impl FnOnce() -> Jiffies,
    ) -> Jiffies {
        if !found_nothing {
            return self
                .0
                .newidle_next_balance(current, next, found_nothing, now);
        }
        let now = now();
        let kernel = self
            .0
            .newidle_next_balance(current, next, found_nothing, || now);
        // Where the kernel stores nothing, neither does the hold.
        if kernel == current {
            return kernel;
        }
        let hold = now.add(IDLE_HOLD_JIFFIES);
        if hold.is_after(kernel) { hold } else { kernel }
    }

    /// NEXT rides on any other flag, as the kernel's; alone only while `nohz.next_balance` is
    /// more than a jiffy ahead. Otherwise the next BALANCE kick, at most a jiffy away, carries
    /// it, and a NEXT pass could only move `nohz.next_balance` earlier by that one jiffy.
    #[inline]
    fn next_kick(&self, line: &Scalars, flags: NohzFlags, now: impl FnOnce() -> Jiffies) -> bool {
        !flags.is_empty() || line.next_balance().is_after(now().add(1))
    }
}

/// How many jiffies after a newidle look that found nothing to pull `Paced` keeps the CPU's
/// `rq->next_balance`, at least: 2, so that the first jiffy boundary after the look (where the
/// ILB pass of that jiffy runs) passes the CPU by, and the CPU is balanced on behalf of idle
/// only once it has stayed idle through a whole jiffy.
pub const IDLE_HOLD_JIFFIES: usize = 2;

/// `Paced`'s idle set: the kernel's flat `nohz.idle_cpus_mask` (same words, same lines, same
/// writers), whose `find_new_ilb` scan starts at [`ilb_start`] of `jiffies` instead of bit 0.
#[derive(Debug)]
pub struct SpreadIdle<const W: usize>(CpuMask<W>);

/// Where `Paced`'s `find_new_ilb` starts its scan at jiffies `now` on a machine of `nr` CPU
/// ids: `now` through a multiplicative (Fibonacci) hash, scaled into `0..nr`. Consecutive
/// jiffies land far apart, so that an ILB pass every jiffy does not walk the mask in order;
/// every caller in one jiffy gets the same start.
pub fn ilb_start(now: Jiffies, nr: usize) -> usize {
    let h = (now.get() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h as u128 * nr as u128) >> 64) as usize
}

impl<const W: usize> IdleCpus<W> for SpreadIdle<W> {
    type Line = ();

    // Moved out by value into the machine's constructor, never borrowed as a constant.
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self = SpreadIdle(CpuMask::new());
    #[cfg(not(nohz_loom))]
    const EMPTY_LINE: () = ();
    #[cfg(not(nohz_loom))]
    const EMPTY_CPU: () = ();
    #[cfg(nohz_loom)]
    fn new_empty() -> Self {
        SpreadIdle(CpuMask::new())
    }
    #[cfg(nohz_loom)]
    fn new_line() {}
    #[cfg(nohz_loom)]
    fn new_cpu() {}

    flat_mask_methods!(());

    /// The first registered housekeeping CPU that `accept`s, scanning from
    /// [`ilb_start`]`(now(), nr)` and wrapping round; each idle word read as the scan reaches
    /// it, nothing written.
    #[inline]
    fn find_ilb<const N: usize>(
        &self,
        _line: &(),
        _at: &(),
        hk: &CpuMask<W>,
        nr: NrCpuIds<N>,
        now: impl FnOnce() -> Jiffies,
        mut accept: impl FnMut(CpuId<N>) -> bool,
    ) -> Option<CpuId<N>> {
        let start = ilb_start(now(), nr.get());
        // `start < nr` (or 0 on a machine of none), so the walk is never refused.
        let mut walk = self.0.iter_and_wrap(hk, start, nr).ok()?;
        walk.find(|&cpu| accept(cpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Patched;
    use crate::fair::hooks::KernelLine;
    use crate::policy::tests::seeds;

    #[test]
    fn paced_has_every_seed() {
        assert_eq!(seeds::<Paced>(), seeds::<Patched>());
        assert_ne!(Paced::NAME, Patched::NAME);
    }

    #[test]
    fn balance_kick_carries_stats_only_when_due() {
        let b = NohzFlags::BALANCE;
        let paced = <PacedLine as NohzLine>::NEW;
        assert_eq!(paced.balance_kick(NohzFlags::empty()), b);
        assert_eq!(paced.balance_kick(NohzFlags::STATS), b | NohzFlags::STATS);
        assert_eq!(
            KernelLine.balance_kick(NohzFlags::empty()),
            b | NohzFlags::STATS
        );
    }

    #[test]
    fn ilb_start_is_in_range_and_moves_with_jiffies() {
        for nr in [1usize, 2, 7, 64, 384, 768, 8192] {
            for j in 0..2000usize {
                assert!(ilb_start(Jiffies::new(j), nr) < nr);
            }
        }
        assert_eq!(ilb_start(Jiffies::new(5), 0), 0);
        let starts: std::collections::BTreeSet<usize> = (0..64usize)
            .map(|j| ilb_start(Jiffies::new(j), 768))
            .collect();
        // 64 consecutive jiffies start at (nearly) 64 different places.
        assert!(starts.len() >= 60, "{}", starts.len());
    }
}
