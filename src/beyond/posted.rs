//! The fixes posted to LKML in 2026 for the NOHZ idle-balance storm of 768-CPU machines, each
//! mirrored as a policy built on `Patched` (feature `posted`): [`KhanNextBalance`],
//! [`KhanRoundRobin`], [`Khan`] (both of Khan's patches) and [`HegdeHk`]. None is in the
//! kernel's mainline; they exist so the engine can measure them beside `Patched`, `Scalable`
//! and `Sharded` (issue 39).
//!
//! C source: `kernel/sched/fair.c` as each post changes it: `_nohz_idle_balance`'s store of
//! `nohz.next_balance` (Khan 1/2), `find_new_ilb` and the `nohz` struct (Khan 2/2),
//! `nohz_balancer_kick` and `find_new_ilb` (Hegde 1/2).
//!
//! # Design
//!
//! Each patch enters the kernel paths through the policy hooks (`crate::fair::hooks`), as
//! `Scalable` and `Sharded` do; every other kernel object is `Patched`'s (the flat mask, blind
//! stores, no not-due gate):
//!
//! - Khan's patch 1 is a `nohz` line, [`KhanLine`], whose
//!   [`next_balance`](NohzLine::next_balance) moves the value a completed ILB pass publishes
//!   by the number of registered idle CPUs. Its formula could not be read (below): it is
//!   reconstructed, and [`KHAN_IDLE_CPUS_PER_JIFFY`] names its one constant.
//! - Khan's patch 2 is an idle set, [`RoundRobinMask`]: the flat mask, with the new
//!   `nohz.ilb_cpu_last` as its word on the `nohz` scalar line, beside `next_balance` as the
//!   patch puts it in the struct. `find_new_ilb` stores the CPU it picks there: **one more
//!   store to the shared `nohz` line on every kick that finds an ILB**, a plain `crate::sync`
//!   atomic, so the counting build (`--cfg nohz_linecount`) records it like the kernel's own
//!   scalars.
//! - Hegde's patch is an idle set, [`HkFirstMask`]: the flat mask whose
//!   [`no_ilb`](IdleCpus::no_ilb) ends the kick early when no registered CPU is a
//!   housekeeping CPU.
//!
//! # Divergence from `Patched`
//!
//! Each policy changes what its patch changes and nothing else; the reference model says each
//! change too (`tests/model/reference.rs`, `Beyond`), every kernel-path test runs all four
//! unchanged (`for_each_policy!`), and `tests/posted.rs` pins each change down:
//!
//! - [`KhanNextBalance`]: a completed pass publishes `nohz.next_balance` later by one jiffy
//!   per [`KHAN_IDLE_CPUS_PER_JIFFY`] registered CPUs; with fewer registered CPUs than that,
//!   nothing changes (so on the model's machines, 16 CPUs at most, it is `Patched`).
//! - [`KhanRoundRobin`]: `find_new_ilb` may pick another idle housekeeping CPU than the
//!   lowest (never the kicker, always idle now), and the kicks of one jiffy no longer
//!   coalesce on one pending CPU.
//! - [`Khan`] makes both changes.
//! - [`HegdeHk`]: with no registered CPU a housekeeping one, a due tick, or a not-due tick
//!   wanting STATS, returns `EmptyMask` with no kick: no `kick_ilb`, so a due tick leaves
//!   `nohz.next_balance` where it was, which `Patched`'s moves to the next jiffy. On a machine
//!   without NO_HZ_FULL CPUs (every CPU a housekeeping one) that happens only with nobody
//!   registered, where the machine is left as `Patched` leaves it and only the decision
//!   reported differs: `EmptyMask` where `Patched` reports a STATS kick that found no ILB.
//!
//! **Orderings.** The only new shared state is `nohz.ilb_cpu_last`, read and written
//! `Relaxed`, as the kernel's plain accesses to it are (a racy hint: two kickers may both
//! start from the same place and pick the same CPU, which the csd ownership of `kick_ilb`
//! already handles). There is no new fence and no non-Relaxed ordering, so no new `sync` site
//! and no loom model.
//!
//! # Sources
//!
//! - Imran Khan, "[PATCH 0/2] sched/fair: Reduce nohz_idle_balance CPU overhead on large
//!   systems", LKML, 2026-04-21 (lkml.iu.edu 2604.2/06472), with
//!   - "[PATCH 1/2] sched/fair: scale nohz.next_balance according to number of idle CPUs."
//!     and its replies (Shrikanth Hegde 2026-04-21; Vincent Guittot 2026-04-22, 04-24 and
//!     04-28; Khan 04-22 and 04-28);
//!   - "[PATCH 2/2] sched/fair: distribute nohz ILB work across idle CPUs." (2604.2/06474,
//!     read in full).
//! - Shrikanth Hegde, "[PATCH 1/2] sched/fair: consider hk_mask early in triggering ilb",
//!   LKML, 2026-03-19 (lkml.rescloud.iu.edu 2603.2/07803; patchew
//!   20260319065314.343932-2-sshegde@linux.ibm.com), with the replies of Mukesh Kumar
//!   Chaurasiya and Shubhang Kaushik the same day.
//!
//! # What is reconstructed
//!
//! The stored copies of these threads show each page's first few kilobytes only.
//!
//! - **Khan 2/2** is mirrored as posted: its whole diff is readable.
//! - **Hegde 1/2**: the changelog and the diff's opening are readable (the per-CPU
//!   `kick_ilb_tmpmask`; `find_new_ilb` documented to take the idle housekeeping CPUs), the
//!   hunks of `nohz_balancer_kick` are not. Mirrored from the changelog: the scratch mask is
//!   `nohz.idle_cpus_mask & housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)`; once balancing is
//!   due, its emptiness replaces the test of the idle mask's (so the kick returns before the
//!   `nr_running`, capacity, asym and LLC tests, and before `kick_ilb` moves
//!   `nohz.next_balance`); when balancing is not due but STATS was set ("after
//!   nohz.next_blocked but before nohz.next_balance"), the same test runs before `out`, and
//!   an empty mask returns with no STATS kick. `find_new_ilb` scanning the scratch mask picks
//!   what the kernel's `for_each_cpu_and(idle, hk)` picks (the first idle housekeeping CPU
//!   but the kicker), so its scan is the kernel's. Not known: whether the patch builds the
//!   scratch mask before the time checks (Chaurasiya's review says it is built earlier than
//!   it is used); here it is built only where it is tested, so a not-due tick without STATS
//!   costs what `Patched`'s does. Observable behaviour does not depend on it.
//! - **Khan 1/2**: its diff is not readable (it follows a long trace); the cover letter says
//!   it "advanc[es] nohz.next_balance based on the number of idle CPUs", the diffstat gives it
//!   11 lines added and 2 removed, and no reply's readable part quotes the code. The
//!   reconstruction: the store that publishes the pass's earliest `rq->next_balance` at the
//!   end of `_nohz_idle_balance` (`nohz.next_balance = next_balance`, the value Khan's trace
//!   shows stuck at `jiffies`) becomes `next_balance + nr_idle / 64` jiffies, `nr_idle` being
//!   `cpumask_weight(nohz.idle_cpus_mask)`. Why this form: the patch's title scales by the
//!   idle count, and a factor on the interval (`next_balance - jiffies`) would not move a
//!   value that is already `jiffies`, so the count must add; a pass visits every idle CPU,
//!   so spacing the passes by `nr_idle / 64` jiffies bounds the CPUs visited per jiffy near
//!   64, one mask word, whatever the machine's size; and a machine with fewer than 64 idle
//!   CPUs is left exactly as it was. `kick_ilb`'s `jiffies + 1` is left alone (a pass that
//!   completes overwrites it). The constant is not from the post: it is
//!   [`KHAN_IDLE_CPUS_PER_JIFFY`], and a result that depends on it says so.

use crate::cpu::{CpuId, NrCpuIds};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::fair::hooks::{IdleCpus, KernelLine, NohzLine, Policy, sealed};
use crate::fair::rq::NohzFlags;
use crate::jiffies::Jiffies;
use crate::sync::{AtomicU32, Ordering::Relaxed};

/// Khan's patch 1 as reconstructed (see the module docs): a completed ILB pass publishes
/// `nohz.next_balance` this many jiffies later per registered idle CPU, rounded down:
/// `next_balance + nr_idle / KHAN_IDLE_CPUS_PER_JIFFY`. One 64-bit word of the idle mask per
/// jiffy; not a number from the post.
pub const KHAN_IDLE_CPUS_PER_JIFFY: usize = 64;

/// Khan's patch 1/2 alone, "sched/fair: scale nohz.next_balance according to number of idle
/// CPUs." (Imran Khan, LKML, 2026-04-21), on `Patched`: a completed `_nohz_idle_balance`
/// publishes `nohz.next_balance` later by [`KHAN_IDLE_CPUS_PER_JIFFY`]-ths of a jiffy per
/// registered idle CPU, so the busy tick's time check stops kicking a balance pass on every
/// jiffy of a large machine. The formula is reconstructed (module docs).
#[doc(alias = "nohz.next_balance")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct KhanNextBalance;

/// Khan's patch 2/2 alone, "sched/fair: distribute nohz ILB work across idle CPUs." (Imran
/// Khan, LKML, 2026-04-21), on `Patched`: `find_new_ilb` scans the idle mask round robin,
/// from the CPU after `nohz.ilb_cpu_last` (a new field of the `nohz` struct), skipping CPUs
/// outside the housekeeping mask and the kicker, and stores the CPU it picks there: one more
/// store to the shared `nohz` line per pick.
///
/// A consequence the post does not discuss, pinned down by `tests/posted.rs`: `kick_ilb`'s
/// "already pending" pre-check is per target, so the STATS and NEXT kicks of one jiffy, which
/// `Patched` coalesces on its one ILB CPU, each go to a new CPU with an IPI of their own (one
/// pass per busy tick while `nohz.needs_update` stays set).
#[doc(alias = "ilb_cpu_last")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct KhanRoundRobin;

/// Both of Khan's patches (LKML, 2026-04-21), as the series posts them: [`KhanNextBalance`]'s
/// scaled `nohz.next_balance` and [`KhanRoundRobin`]'s round-robin `find_new_ilb`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Khan;

/// Shrikanth Hegde's "[PATCH 1/2] sched/fair: consider hk_mask early in triggering ilb" (LKML,
/// 2026-03-19), on `Patched`: `nohz_balancer_kick` intersects the idle mask with the
/// housekeeping mask (`HK_TYPE_KERNEL_NOISE`) into a per-CPU scratch mask
/// (`kick_ilb_tmpmask`) and returns, with no kick, when that is empty: once balancing is due,
/// before the kick's other tests; and when it is not due but STATS was set, before `out`.
/// `find_new_ilb` picks from that mask. Reconstructed where the diff could not be read
/// (module docs).
#[doc(alias = "kick_ilb_tmpmask")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct HegdeHk;

impl sealed::Sealed for KhanNextBalance {
    type IdleCpus<const W: usize> = CpuMask<W>;
    type NohzLine = KhanLine;
}
impl sealed::Sealed for KhanRoundRobin {
    type IdleCpus<const W: usize> = RoundRobinMask<W>;
    type NohzLine = KernelLine;
}
impl sealed::Sealed for Khan {
    type IdleCpus<const W: usize> = RoundRobinMask<W>;
    type NohzLine = KhanLine;
}
impl sealed::Sealed for HegdeHk {
    type IdleCpus<const W: usize> = HkFirstMask<W>;
    type NohzLine = KernelLine;
}

/// The seeds as `Patched` has them; none of the test rigs' descriptive flags.
macro_rules! patched_seeds {
    ($($policy:ty => $name:literal),* $(,)?) => {$(
        impl Policy for $policy {
            const NAME: &'static str = $name;
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
    )*};
}

patched_seeds! {
    KhanNextBalance => "khan-next-balance",
    KhanRoundRobin => "khan-round-robin",
    Khan => "khan",
    HegdeHk => "hegde-hk",
}

/// Khan's patch 1's `nohz` line: the kernel's (the trait's provided methods, as
/// [`KernelLine`] has them: blind stores, no gate), except that a completed ILB pass publishes
/// `nohz.next_balance` later by the idle count (the store in `_nohz_idle_balance`). No state
/// of its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct KhanLine;

impl NohzLine for KhanLine {
    #[cfg(not(nohz_loom))]
    const NEW: Self = KhanLine;
    #[cfg(nohz_loom)]
    fn new() -> Self {
        KhanLine
    }

    /// `nohz.next_balance = next_balance + nr_idle / KHAN_IDLE_CPUS_PER_JIFFY` (reconstructed:
    /// module docs): the idle count is read once per completed pass that moves the deadline,
    /// every word of the idle mask (no write).
    #[inline]
    fn next_balance(&self, next: Jiffies, nr_idle: impl FnOnce() -> usize) -> Jiffies {
        next.add(nr_idle() / KHAN_IDLE_CPUS_PER_JIFFY)
    }
}

/// `nohz.ilb_cpu_last` (Khan's patch 2): the CPU `find_new_ilb` last picked, on the `nohz`
/// scalar line (the patch adds it to the `nohz` struct between `needs_update` and
/// `next_balance`). 0 on a fresh machine, as the kernel's zeroed static, so the first scan
/// starts at CPU 1. Written by every kicker that finds an ILB: a store to the shared line the
/// busy tick reads. `Relaxed`, as the kernel's plain accesses.
#[doc(alias = "ilb_cpu_last")]
#[derive(Debug)]
pub struct IlbCpuLast(AtomicU32);

/// Khan's patch 2's idle set: the kernel's flat mask, with `nohz.ilb_cpu_last` ([`IlbCpuLast`])
/// as its word on the `nohz` scalar line, and `find_new_ilb` round robin from it.
#[derive(Debug)]
pub struct RoundRobinMask<const W: usize>(CpuMask<W>);

impl<const W: usize> IdleCpus<W> for RoundRobinMask<W> {
    type Line = IlbCpuLast;

    // Moved out by value into the machine's constructor, never borrowed as constants.
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self = RoundRobinMask(CpuMask::new());
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY_LINE: IlbCpuLast = IlbCpuLast(AtomicU32::new(0));
    #[cfg(not(nohz_loom))]
    const EMPTY_CPU: () = ();
    #[cfg(nohz_loom)]
    fn new_empty() -> Self {
        RoundRobinMask(CpuMask::new())
    }
    #[cfg(nohz_loom)]
    fn new_line() -> IlbCpuLast {
        IlbCpuLast(AtomicU32::new(0))
    }
    #[cfg(nohz_loom)]
    fn new_cpu() {}

    flat_mask_methods!(IlbCpuLast);

    /// `find_new_ilb()` after Khan's patch 2: `for_each_cpu_wrap(ilb_cpu,
    /// nohz.idle_cpus_mask, nohz.ilb_cpu_last + 1)`, skipping a CPU outside `hk` (tested in
    /// the loop, where the kernel's `for_each_cpu_and` intersected), then the kicker and a CPU
    /// no longer idle (`accept`); the CPU picked is stored into `nohz.ilb_cpu_last` before it
    /// is returned. No pick, no store.
    #[doc(alias = "find_new_ilb")]
    #[inline]
    fn find_ilb<const N: usize>(
        &self,
        line: &IlbCpuLast,
        _at: &(),
        hk: &CpuMask<W>,
        nr: NrCpuIds<N>,
        _now: impl FnOnce() -> Jiffies,
        mut accept: impl FnMut(CpuId<N>) -> bool,
    ) -> Option<CpuId<N>> {
        // READ_ONCE-like: a racy hint. Only this set stores it, and only CPU ids below
        // nr_cpu_ids, so the start is at most nr_cpu_ids (a wrap from 0).
        let start = (line.0.load(Relaxed) as usize + 1).min(nr.get());
        // The idle CPUs from `start`, wrapping, that are housekeeping ones.
        let walk = self.0.iter_and_wrap(hk, start, nr).into_iter().flatten();
        for ilb in walk {
            if accept(ilb) {
                // The new store to the shared nohz line, on every pick.
                line.0.store(ilb.index() as u32, Relaxed);
                return Some(ilb);
            }
        }
        None
    }
}

/// Hegde's idle set: the kernel's flat mask, whose [`no_ilb`](IdleCpus::no_ilb) is
/// `cpumask_empty(kick_ilb_tmpmask)`, the scratch mask being the registered housekeeping CPUs.
/// No state of its own.
#[derive(Debug)]
pub struct HkFirstMask<const W: usize>(CpuMask<W>);

impl<const W: usize> IdleCpus<W> for HkFirstMask<W> {
    type Line = ();

    // Moved out by value into the machine's constructor, never borrowed as a constant.
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self = HkFirstMask(CpuMask::new());
    #[cfg(not(nohz_loom))]
    const EMPTY_LINE: () = ();
    #[cfg(not(nohz_loom))]
    const EMPTY_CPU: () = ();
    #[cfg(nohz_loom)]
    fn new_empty() -> Self {
        HkFirstMask(CpuMask::new())
    }
    #[cfg(nohz_loom)]
    fn new_line() {}
    #[cfg(nohz_loom)]
    fn new_cpu() {}

    flat_mask_methods!(());

    /// Hegde's early test in `nohz_balancer_kick`: `cpumask_and(kick_ilb_tmpmask,
    /// nohz.idle_cpus_mask, housekeeping_cpumask(HK_TYPE_KERNEL_NOISE))`, and the kick returns
    /// if that is empty: always once balancing is `due`; when it is not, only if the time
    /// checks set STATS (otherwise the kick goes on to `out` as the kernel's). The words are
    /// read lazily, up to the first registered housekeeping CPU: the same answer as the
    /// patch's whole-mask AND, without the scratch copy.
    #[doc(alias = "kick_ilb_tmpmask")]
    #[inline]
    fn no_ilb<const N: usize>(
        &self,
        _line: &(),
        _at: &(),
        hk: &CpuMask<W>,
        cpus: &Cpus<N, W>,
        flags: NohzFlags,
        due: bool,
    ) -> bool {
        if !due && !flags.contains(NohzFlags::STATS) {
            return false;
        }
        self.0.iter_and(hk, cpus.nr_cpu_ids()).next().is_none()
    }

    /// `find_new_ilb(cpus)` over the scratch mask: its first CPU that is not the kicker and is
    /// idle (`accept`), which is the kernel's `for_each_cpu_and(nohz.idle_cpus_mask, hk)`
    /// scan (the scratch mask is that intersection, taken a few instructions earlier).
    #[doc(alias = "find_new_ilb")]
    #[inline(always)]
    fn find_ilb<const N: usize>(
        &self,
        _line: &(),
        at: &(),
        hk: &CpuMask<W>,
        nr: NrCpuIds<N>,
        now: impl FnOnce() -> Jiffies,
        accept: impl FnMut(CpuId<N>) -> bool,
    ) -> Option<CpuId<N>> {
        self.0.find_ilb(&(), at, hk, nr, now, accept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Patched;
    use crate::policy::tests::seeds;

    #[test]
    fn each_posted_policy_is_patched_with_its_patch() {
        let all = [
            seeds::<KhanNextBalance>(),
            seeds::<KhanRoundRobin>(),
            seeds::<Khan>(),
            seeds::<HegdeHk>(),
        ];
        assert!(all.iter().all(|s| *s == seeds::<Patched>()));
        let names = [
            KhanNextBalance::NAME,
            KhanRoundRobin::NAME,
            Khan::NAME,
            HegdeHk::NAME,
            Patched::NAME,
        ];
        for (i, a) in names.iter().enumerate() {
            assert!(names[i + 1..].iter().all(|b| a != b), "{a} named twice");
        }
    }

    #[test]
    fn khan_line_adds_a_jiffy_per_word_of_idle_cpus() {
        let at = Jiffies::new(usize::MAX - 2);
        assert_eq!(KhanLine.next_balance(at, || 63), at);
        assert_eq!(KhanLine.next_balance(at, || 64), at.add(1));
        assert_eq!(KhanLine.next_balance(at, || 384), at.add(6));
        assert_eq!(KernelLine.next_balance(at, || unreachable!()), at);
    }
}
