//! The [`Policy`] trait and its hooks: the only way what the kernel does not have enters
//! fair.c's paths.
//!
//! C source: none of its own; each hook stands for one kernel object or statement, named
//! below, and the kernel's implementation here is that statement.
//!
//! # Design
//!
//! The kernel paths in `fair/` read as fair.c: the seeds' own diffs (`Legacy` against
//! `Patched`) branch inline on [`Policy`]'s constants, and nothing else does. The policies
//! beyond the kernel (`src/beyond/`) change two kernel objects, and each is a hook that every
//! policy names (the sealed supertrait of `Policy`), resolved at compile time:
//!
//! - [`IdleCpus`]: the idle set, what `nohz.idle_cpus_mask` is. The kernel's is the flat
//!   [`CpuMask`] (this file).
//! - [`NohzLine`]: how idle entry writes the `nohz` flags (`WRITE_ONCE(nohz.x, 1)`), the
//!   not-due gate before the busy tick's `nohz_balancer_kick` that reads them, and the flags
//!   that kick asks for once it wants balancing. The kernel's, [`KernelLine`], is blind
//!   stores, no gate, and STATS with every BALANCE.
//!
//! **The hooks own their storage.** A hook's state is its own type: the `NohzLine` value
//! itself and the idle set's [`IdleCpus::Line`] sit on the `nohz` scalar line beside the
//! kernel's scalars (so the busy tick still reads one line), and the idle set's
//! [`IdleCpus::Cpu`] sits beside each CPU's runqueue. The kernel's are all zero-sized, so
//! `Patched` and `Legacy` hold exactly the kernel's fields, and this room names no type of the
//! policies beyond the kernel: they implement these traits from `src/beyond/`, which uses
//! `fair`, never the reverse.
//!
//! Each hook's kernel implementation is one statement of fair.c, or nothing, inlined, so
//! `Patched` and `Legacy` compile to the code they had before the hooks (the
//! instruction-count guards, `ci/guards.sh`, hold them there).

use super::rq::{NohzFlags, Rq};
use super::{CpuSlot, Fair, KickDecision, Scalars, TopologyError};
use crate::cpu::{CpuId, NrCpuIds, PerCpu};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::sync::{AtomicU32, Ordering::Relaxed};
use core::fmt;

pub(crate) mod sealed {
    /// Seals [`Policy`](super::Policy), and carries the hooks through which what the kernel
    /// does not have enters the kernel paths: each policy names its idle set and its `nohz`
    /// line discipline here.
    pub trait Sealed: 'static {
        /// The idle set: what `nohz.idle_cpus_mask` is. The kernel's policies keep the flat
        /// `CpuMask<W>`.
        type IdleCpus<const W: usize>: super::IdleCpus<W>;
        /// How idle entry writes the `nohz` flags, and the not-due gate of the kick that reads
        /// them; its value is its state, kept on the `nohz` scalar line. The kernel's: blind
        /// stores, no gate, no state.
        type NohzLine: super::NohzLine;
    }
}

/// A compile-time choice of kernel behaviour. Sealed; see [`Patched`](crate::Patched) and
/// [`Legacy`](crate::Legacy).
///
/// The four seed constants are the kernel's own history: the kernel paths branch on them
/// inline, each branch reading as the seed's diff. What the kernel does not have enters those
/// paths only through the policy's hooks, never through a constant.
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

    /// Test rigs only (feature `testing`), descriptive: `nohz_balance_enter_idle` stores 1
    /// into `nohz.has_blocked_load` and `nohz.needs_update` only if it reads 0 there (spec §6
    /// O7), so a registered CPU re-entering idle writes no shared line (`Scalable`,
    /// `Sharded`).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    const READ_BEFORE_WRITE: bool;

    /// Test rigs only, descriptive: the not-due test of `nohz_balancer_kick` reads one
    /// precomputed word instead of `has_blocked_load`, `next_blocked`, `next_balance` and
    /// `needs_update` (`Scalable`, `Sharded`).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    const KICK_DEADLINE: bool;

    /// Test rigs only, descriptive: the idle set is split into shards with a sticky summary
    /// instead of the one flat `nohz.idle_cpus_mask` (`Sharded`).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    const SHARDED: bool;
}

/// The idle set's words on the `nohz` scalar line (the kernel's set: none).
pub(crate) type IdleLine<P, const W: usize> =
    <<P as sealed::Sealed>::IdleCpus<W> as IdleCpus<W>>::Line;

/// What the idle set keeps beside each CPU's runqueue (the kernel's set: nothing).
pub(crate) type IdleCpu<P, const W: usize> =
    <<P as sealed::Sealed>::IdleCpus<W> as IdleCpus<W>>::Cpu;

/// The idle set: the CPUs idle with their tick stopped and registered for idle balancing,
/// `nohz.idle_cpus_mask`. A hint: every consumer re-checks `idle_cpu()`.
///
/// Each CPU sets and clears only its own membership, on itself. Besides the set itself (on
/// lines of its own), it keeps [`Line`](Self::Line) on the `nohz` scalar line (`line` below)
/// and [`Cpu`](Self::Cpu) beside each CPU's runqueue (`at`: the acting CPU's).
pub trait IdleCpus<const W: usize>: fmt::Debug + Send + Sync + Sized + 'static {
    /// Its words on the `nohz` scalar line, read with the kernel's scalars.
    type Line: fmt::Debug + Send + Sync;
    /// What it keeps for each CPU, beside the CPU's runqueue.
    type Cpu: fmt::Debug + Send + Sync;

    /// The empty set, as a fresh machine has it.
    #[cfg(not(nohz_loom))]
    const EMPTY: Self;
    /// Its fresh words on the `nohz` line.
    #[cfg(not(nohz_loom))]
    const EMPTY_LINE: Self::Line;
    /// A fresh CPU's.
    #[cfg(not(nohz_loom))]
    const EMPTY_CPU: Self::Cpu;
    /// The empty set (loom atomics cannot be built in `const` context).
    #[cfg(nohz_loom)]
    fn new_empty() -> Self;
    /// Its fresh words on the `nohz` line.
    #[cfg(nohz_loom)]
    fn new_line() -> Self::Line;
    /// A fresh CPU's.
    #[cfg(nohz_loom)]
    fn new_cpu() -> Self::Cpu;

    /// What [`set_cpu`](Self::set_cpu) hands on to [`after_fence`](Self::after_fence) (the
    /// kernel's: nothing).
    type Placed: Copy;

    /// `cpumask_set_cpu(cpu, nohz.idle_cpus_mask)`, by `cpu` on idle entry: a relaxed RMW,
    /// ordered by the O1/O2 fence that follows it.
    fn set_cpu<const N: usize>(
        &self,
        line: &Self::Line,
        at: &Self::Cpu,
        cpu: CpuId<N>,
    ) -> Self::Placed;

    /// Idle entry, right after its O1/O2 fence: what the set must do there, given what
    /// `set_cpu` placed (the kernel's: nothing).
    fn after_fence(&self, line: &Self::Line, at: &Self::Cpu, placed: Self::Placed);

    /// `cpumask_clear_cpu(cpu, nohz.idle_cpus_mask)`, by `cpu` on its first busy tick:
    /// relaxed, no barrier (O5).
    fn clear_cpu<const N: usize>(&self, at: &Self::Cpu, cpu: CpuId<N>);

    /// `cpumask_test_cpu(cpu, nohz.idle_cpus_mask)` (`at`: `cpu`'s).
    fn test_cpu<const N: usize>(&self, at: &Self::Cpu, cpu: CpuId<N>) -> bool;

    /// `cpumask_empty(nohz.idle_cpus_mask)`, as the busy tick of the CPU `at` belongs to asks
    /// it (`cpus`: for `nr_cpu_ids`, read only by a set that scans up to it).
    fn empty<const N: usize>(&self, line: &Self::Line, at: &Self::Cpu, cpus: &Cpus<N, W>) -> bool;

    /// Beyond the kernel: whether `nohz_balancer_kick` on the CPU `at` belongs to ends here
    /// with no kick, because no CPU that `find_new_ilb` could pick is registered (Hegde's
    /// housekeeping test, `beyond::posted`). Asked once the time checks have set `flags`:
    /// with `due` false on the not-due way to `out`, with `due` true before the due path's
    /// emptiness test (`cpus`: for `nr_cpu_ids`, read only by a set that scans). The
    /// kernel's set never ends it here (its test is [`empty`](Self::empty), on the due path
    /// only), and reads nothing.
    #[inline(always)]
    fn no_ilb<const N: usize>(
        &self,
        _line: &Self::Line,
        _at: &Self::Cpu,
        _hk: &CpuMask<W>,
        _cpus: &Cpus<N, W>,
        _flags: NohzFlags,
        _due: bool,
    ) -> bool {
        false
    }

    /// `cpumask_weight(nohz.idle_cpus_mask)`: how many CPUs are registered, each word read as
    /// the count reaches it (read only by a `nohz` line that scales by it, see
    /// [`NohzLine::next_balance`]).
    #[inline]
    fn weight<const N: usize>(&self, line: &Self::Line, nr: NrCpuIds<N>) -> usize {
        self.registered(line, nr).count()
    }

    /// `for_each_cpu_wrap(cpu, nohz.idle_cpus_mask, this_cpu + 1)`: the ILB pass's walk, from
    /// after `this_cpu` (`at`: its own) round to it, each word read as the walk reaches it.
    fn for_each_cpu_wrap<'a, const N: usize>(
        &'a self,
        line: &'a Self::Line,
        at: &Self::Cpu,
        this_cpu: CpuId<N>,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a;

    /// `find_new_ilb()`'s scan for the CPU `at` belongs to: the first registered CPU in `hk`
    /// that `accept`s, in this set's order (the kernel's: ascending ids). `now` is for an
    /// order that rotates with time; the kernel's never reads it.
    fn find_ilb<const N: usize>(
        &self,
        line: &Self::Line,
        at: &Self::Cpu,
        hk: &CpuMask<W>,
        nr: NrCpuIds<N>,
        now: impl FnOnce() -> Jiffies,
        accept: impl FnMut(CpuId<N>) -> bool,
    ) -> Option<CpuId<N>>;

    /// `for_each_cpu_and(i, sched_domain_span(sd), nohz.idle_cpus_mask)`'s idle half: the
    /// registered CPUs the kick's asym-packing scan visits.
    fn for_each_cpu<'a, const N: usize>(
        &'a self,
        line: &'a Self::Line,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a;

    /// Every registered CPU, each word read as the iteration reaches it (reports and tests;
    /// no kernel path reads it).
    fn registered<'a, const N: usize>(
        &'a self,
        line: &'a Self::Line,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a;

    /// Before boot: whether the set's own layout of the platform's topology fits (the
    /// kernel's set has none to check).
    #[inline(always)]
    fn check<const N: usize, Pl: Platform<N>>(
        &self,
        _line: &Self::Line,
        _nr: NrCpuIds<N>,
        _plat: &Pl,
    ) -> Result<(), TopologyError> {
        Ok(())
    }

    /// Boot, once [`check`](Self::check) accepted the topology and before any CPU registers:
    /// build the set's own layout (the kernel's set has none).
    #[inline(always)]
    fn boot<const N: usize, Pl: Platform<N>>(
        &self,
        _line: &Self::Line,
        _slots: &PerCpu<CpuSlot<Self::Cpu>, N>,
        _nr: NrCpuIds<N>,
        _plat: &Pl,
    ) {
    }

    #[cfg(feature = "sharded")]
    /// Reports (tests, the harness): the shards in use (none for the kernel's set).
    #[inline(always)]
    fn nr_shards(&self, _line: &Self::Line) -> usize {
        0
    }

    #[cfg(feature = "sharded")]
    /// Reports: shard `s`'s idle word (0 out of range, and for the kernel's set).
    #[inline(always)]
    fn shard_word(&self, _line: &Self::Line, _s: usize) -> u64 {
        0
    }

    #[cfg(feature = "sharded")]
    /// Reports: shard `s` is flagged in the summary.
    #[inline(always)]
    fn shard_flagged(&self, _line: &Self::Line, _s: usize) -> bool {
        false
    }

    #[cfg(feature = "sharded")]
    /// Reports: the shard and slot of the CPU `at` belongs to, once the shard map is built.
    #[inline(always)]
    fn shard_of(&self, _at: &Self::Cpu) -> Option<(usize, usize)> {
        None
    }

    #[cfg(feature = "sharded")]
    /// Tests: replaces the shard map with `shard_of`'s (see `Machine::set_shard_map`); the
    /// kernel's set has no shards to map.
    #[inline(always)]
    fn set_map<const N: usize>(
        &self,
        _line: &Self::Line,
        _slots: &PerCpu<CpuSlot<Self::Cpu>, N>,
        _nr: NrCpuIds<N>,
        _shard_of: impl Fn(CpuId<N>) -> usize,
    ) -> Result<(), ShardMapError> {
        Err(ShardMapError::NotSharded)
    }

    #[cfg(feature = "sharded")]
    /// Reports: shard `s`'s members, slots ascending.
    #[inline(always)]
    fn shard_members<'a, const N: usize>(
        &'a self,
        _line: &'a Self::Line,
        _nr: NrCpuIds<N>,
        _s: usize,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        core::iter::empty()
    }
}

/// The kernel's idle set: the flat mask. It keeps nothing on the `nohz` line and nothing per
/// CPU.
impl<const W: usize> IdleCpus<W> for CpuMask<W> {
    type Line = ();
    type Cpu = ();

    // Moved out by value into the machine's constructor, never borrowed as a constant.
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self = CpuMask::new();
    #[cfg(not(nohz_loom))]
    const EMPTY_LINE: () = ();
    #[cfg(not(nohz_loom))]
    const EMPTY_CPU: () = ();
    #[cfg(nohz_loom)]
    fn new_empty() -> Self {
        CpuMask::new()
    }
    #[cfg(nohz_loom)]
    fn new_line() {}
    #[cfg(nohz_loom)]
    fn new_cpu() {}

    type Placed = ();

    #[inline(always)]
    fn set_cpu<const N: usize>(&self, _line: &(), _at: &(), cpu: CpuId<N>) {
        self.set(cpu);
    }

    #[inline(always)]
    fn after_fence(&self, _line: &(), _at: &(), _placed: ()) {}

    #[inline(always)]
    fn clear_cpu<const N: usize>(&self, _at: &(), cpu: CpuId<N>) {
        self.clear(cpu);
    }

    #[inline(always)]
    fn test_cpu<const N: usize>(&self, _at: &(), cpu: CpuId<N>) -> bool {
        self.test(cpu)
    }

    #[inline(always)]
    fn empty<const N: usize>(&self, _line: &(), _at: &(), cpus: &Cpus<N, W>) -> bool {
        self.is_empty(cpus.nr_cpu_ids())
    }

    #[inline(always)]
    fn for_each_cpu_wrap<'a, const N: usize>(
        &'a self,
        _line: &'a (),
        _at: &(),
        this_cpu: CpuId<N>,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.iter_wrap_after(this_cpu, nr)
    }

    #[inline(always)]
    fn find_ilb<const N: usize>(
        &self,
        _line: &(),
        _at: &(),
        hk: &CpuMask<W>,
        nr: NrCpuIds<N>,
        _now: impl FnOnce() -> Jiffies,
        mut accept: impl FnMut(CpuId<N>) -> bool,
    ) -> Option<CpuId<N>> {
        self.iter_and(hk, nr).find(|&cpu| accept(cpu))
    }

    #[inline(always)]
    fn for_each_cpu<'a, const N: usize>(
        &'a self,
        _line: &'a (),
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.iter(nr)
    }

    #[inline(always)]
    fn registered<'a, const N: usize>(
        &'a self,
        _line: &'a (),
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.iter(nr)
    }
}

/// How `nohz_balance_enter_idle` writes the `nohz` flags, and the not-due gate of
/// `nohz_balancer_kick` that reads them. The value is the hook's state, on the `nohz` scalar
/// line beside `line`, the kernel's scalars. Each method's provided body is the kernel's
/// ([`KernelLine`] keeps them all); a line beyond the kernel overrides what it changes.
pub trait NohzLine: fmt::Debug + Send + Sync + Sized + 'static {
    /// A fresh machine's.
    #[cfg(not(nohz_loom))]
    const NEW: Self;
    /// A fresh machine's (loom atomics cannot be built in `const` context).
    #[cfg(nohz_loom)]
    fn new() -> Self;

    /// Idle entry of `rq`'s CPU while it is registered already (the kernel's idempotent path,
    /// `goto out`): returns true if the line handled the whole entry itself. The kernel's
    /// never does.
    #[inline(always)]
    fn reenter_idle(&self, _line: &Scalars, _rq: &Rq) -> bool {
        false
    }

    /// `WRITE_ONCE(flag, 1)` from idle entry (`nohz.needs_update`, `nohz.has_blocked_load`);
    /// returns whether it stored.
    #[inline(always)]
    fn raise(&self, flag: &AtomicU32) -> bool {
        flag.store(1, Relaxed);
        true
    }

    /// Idle entry is done raising the flags; `raised`: it stored at least one.
    #[inline(always)]
    fn raised(&self, _raised: bool) {}

    /// `cpu`'s busy-tick `nohz_balancer_kick`, behind the line's not-due gate. The kernel has
    /// no gate: it runs `fair.nohz_balancer_kick` and reads nothing else. A gate may decide
    /// itself a tick that the function would end with no kick and no side effect (the tick is
    /// not on an idle CPU and the CPU is not registered; the caller runs on `cpu` itself, so
    /// no warning to count; balancing not due), and runs the function for every other tick.
    #[inline(always)]
    fn gate<P: Policy, const N: usize, const W: usize, Pl: Platform<N>>(
        &self,
        fair: &Fair<P, N, W>,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> KickDecision<N> {
        fair.nohz_balancer_kick(cpus, cpu, plat)
    }

    /// The scalars the gate reads moved (`kick_ilb`'s `next_balance`, an ILB pass's end,
    /// boot).
    #[inline(always)]
    fn moved(&self, _line: &Scalars, _now: Jiffies) {}

    /// `nohz.next_balance = next_balance` at the end of a completed `_nohz_idle_balance`:
    /// the value to store, given `next`, the earliest `rq->next_balance` the pass saw, and
    /// `nr_idle`, `cpumask_weight(nohz.idle_cpus_mask)` (called only by a line that scales
    /// by it: Khan's patch 1, `beyond::posted`). The kernel's stores `next`.
    #[inline(always)]
    fn next_balance(&self, next: Jiffies, _nr_idle: impl FnOnce() -> usize) -> Jiffies {
        next
    }

    /// `sched_balance_newidle`'s `out:` on the CPU going idle: the `rq->next_balance` to keep,
    /// given `current`, the CPU's, `next`, the earliest deadline its newidle look found,
    /// `found_nothing`, whether the look established that there was nothing to pull (no
    /// overloaded CPU in the root domain, or a walk that pulled nothing; not a walk skipped
    /// for too short an expected idle), and `now()`, jiffies (for a line that reads them). An
    /// ILB pass, or the CPU's own tick, balances the CPU once `jiffies` reaches the value.
    /// The kernel's pulls it in: `next` if `current` is after it, else `current`.
    #[inline(always)]
    fn newidle_next_balance(
        &self,
        current: Jiffies,
        next: Jiffies,
        _found_nothing: bool,
        _now: impl FnOnce() -> Jiffies,
    ) -> Jiffies {
        if current.is_after(next) {
            next
        } else {
            current
        }
    }

    /// Reports (feature `testing`): the gate's precomputed not-due deadline, or `None` while
    /// it is stale, or for a line that keeps none (the kernel's).
    #[cfg(feature = "testing")]
    #[inline(always)]
    fn deadline(&self) -> Option<Jiffies> {
        None
    }

    /// `nohz_balancer_kick` wants balancing (`flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK`):
    /// the flags it asks for then, given `flags`, what its time checks left (STATS if the
    /// blocked-load refresh is due by `nohz.next_blocked`). The kernel's: STATS and BALANCE,
    /// whatever `flags` holds. A line may ask BALANCE alone; `_nohz_idle_balance` counts
    /// [`BalanceWithoutStats`](crate::Warning::BalanceWithoutStats) only under a line
    /// whose `balance_kick(empty)` carries STATS.
    #[inline(always)]
    fn balance_kick(&self, _flags: NohzFlags) -> NohzFlags {
        NohzFlags::STATS | NohzFlags::BALANCE
    }

    /// `nohz_balancer_kick`'s `out:` found `nohz.needs_update` set: whether NEXT joins the
    /// kick, whose other flags are `flags` (`line`: the scalars; `now()`: jiffies, for a line
    /// that reads them). The kernel's: always, reading nothing.
    #[inline(always)]
    fn next_kick(
        &self,
        _line: &Scalars,
        _flags: NohzFlags,
        _now: impl FnOnce() -> Jiffies,
    ) -> bool {
        true
    }
}

/// The kernel's `nohz` line: `WRITE_ONCE(..., 1)` on every idle entry, and no gate (the
/// trait's provided methods, each the kernel's statement).
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelLine;

impl NohzLine for KernelLine {
    #[cfg(not(nohz_loom))]
    const NEW: Self = KernelLine;
    #[cfg(nohz_loom)]
    fn new() -> Self {
        KernelLine
    }
}

/// Why an idle set refused a map of the possible CPUs (`Sharded`'s shards: its layout's map at
/// init, or a test rig's explicit one); nothing was changed. The kernel's flat mask has no map
/// and refuses none.
#[cfg(feature = "sharded")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardMapError {
    /// `cpu` would need shard `shard`, beyond the machine's `capacity` (the policy's `S`).
    TooManyShards {
        /// The CPU that did not fit.
        cpu: usize,
        /// The shard it needed.
        shard: usize,
        /// The shards the machine has.
        capacity: usize,
    },
    /// Shard `shard` would hold more than 64 CPUs; `cpu` is the 65th.
    ShardFull {
        /// The shard.
        shard: usize,
        /// The CPU that did not fit.
        cpu: usize,
    },
    /// `cpu` is registered as idle: shards never change while a CPU is registered.
    CpuRegistered {
        /// The registered CPU.
        cpu: usize,
    },
    /// The machine is not booted yet, or its policy is not sharded.
    NotSharded,
}

#[cfg(feature = "sharded")]
impl fmt::Display for ShardMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ShardMapError::TooManyShards {
                cpu,
                shard,
                capacity,
            } => write!(
                f,
                "CPU {cpu} would go to shard {shard}, but the machine has {capacity} shards"
            ),
            ShardMapError::ShardFull { shard, cpu } => {
                write!(f, "shard {shard} would hold more than 64 CPUs (CPU {cpu})")
            }
            ShardMapError::CpuRegistered { cpu } => write!(
                f,
                "CPU {cpu} is registered as idle: shards never change while a CPU is registered"
            ),
            ShardMapError::NotSharded => {
                write!(f, "not a booted machine of a sharded policy")
            }
        }
    }
}

#[cfg(feature = "sharded")]
impl core::error::Error for ShardMapError {}
