//! The policy hooks: the only way what the kernel does not have enters fair.c's paths.
//!
//! C source: none of its own; each hook stands for one kernel object or statement, named
//! below, and the kernel's implementation here is that statement.
//!
//! # Design
//!
//! The kernel paths in `fair/` read as fair.c: the seeds' own diffs (`Legacy` against
//! `Patched`) branch inline on [`Policy`](crate::Policy)'s constants, and nothing else does.
//! `Scalable` and `Sharded` change two kernel objects, and each is a hook that every policy
//! names (the sealed supertrait of `Policy`), resolved at compile time:
//!
//! - [`IdleCpus`]: the idle set, what `nohz.idle_cpus_mask` is. The kernel's is the flat
//!   [`CpuMask`] (this file); `Sharded`'s, its shards (`crate::beyond::sharded`).
//! - [`NohzLine`]: how idle entry writes the `nohz` flags (`WRITE_ONCE(nohz.x, 1)`), and the
//!   not-due gate of the busy tick's kick that reads them. The kernel's, [`KernelLine`], is
//!   blind stores and no gate; `Scalable`'s (`crate::beyond::kick_deadline`) reads before it
//!   writes and keeps one precomputed deadline word.
//!
//! Each hook's kernel implementation is one statement of fair.c, inlined, so `Patched` and
//! `Legacy` compile to the code they had before the hooks (the instruction-count guards,
//! `ci/guards.sh`, hold them there).

use super::rq::Rq;
use super::{Scalars, TopologyError};
#[cfg(feature = "sharded")]
use crate::beyond::sharded::ShardMapError;
use crate::cpu::{CpuId, NrCpuIds, PerCpu};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::sync::{AtomicU32, Ordering::Relaxed};
use core::fmt;

/// The idle set: the CPUs idle with their tick stopped and registered for idle balancing,
/// `nohz.idle_cpus_mask` (a machine's is [`Nohz::idle_cpus_mask`](crate::Nohz::idle_cpus_mask)).
/// A hint: every consumer re-checks `idle_cpu()`.
///
/// Each CPU sets and clears only its own membership, on itself; `line` is the `nohz` scalar
/// line (where `Sharded` keeps its summary) and `rq` the runqueue of the CPU acting.
pub trait IdleCpus<const W: usize>: fmt::Debug + Send + Sync + Sized + 'static {
    /// The empty set, as a fresh machine has it.
    #[cfg(not(nohz_loom))]
    const EMPTY: Self;
    /// The empty set (loom atomics cannot be built in `const` context).
    #[cfg(nohz_loom)]
    fn new_empty() -> Self;

    /// What [`set_cpu`](Self::set_cpu) hands on to [`after_fence`](Self::after_fence) (the
    /// kernel's: nothing).
    type Placed: Copy;

    /// `cpumask_set_cpu(cpu, nohz.idle_cpus_mask)`, by `cpu` on idle entry: a relaxed RMW,
    /// ordered by the O1/O2 fence that follows it.
    fn set_cpu<const N: usize>(&self, line: &Scalars, rq: &Rq, cpu: CpuId<N>) -> Self::Placed;

    /// Idle entry, right after its O1/O2 fence: what the set must do there, given what
    /// `set_cpu` placed (the kernel's: nothing).
    fn after_fence(&self, line: &Scalars, rq: &Rq, placed: Self::Placed);

    /// `cpumask_clear_cpu(cpu, nohz.idle_cpus_mask)`, by `cpu` on its first busy tick:
    /// relaxed, no barrier (O5).
    fn clear_cpu<const N: usize>(&self, rq: &Rq, cpu: CpuId<N>);

    /// `cpumask_test_cpu(cpu, nohz.idle_cpus_mask)` (`rq`: `cpu`'s).
    fn test_cpu<const N: usize>(&self, rq: &Rq, cpu: CpuId<N>) -> bool;

    /// `cpumask_empty(nohz.idle_cpus_mask)`, as the busy tick of the CPU whose runqueue is
    /// `rq` asks it (`cpus`: for `nr_cpu_ids`, read only by a set that scans up to it).
    fn empty<const N: usize>(&self, line: &Scalars, rq: &Rq, cpus: &Cpus<N, W>) -> bool;

    /// `for_each_cpu_wrap(cpu, nohz.idle_cpus_mask, this_cpu + 1)`: the ILB pass's walk, from
    /// after `this_cpu` (runqueue `rq`) round to it, each word read as the walk reaches it.
    fn for_each_cpu_wrap<'a, const N: usize>(
        &'a self,
        line: &'a Scalars,
        rq: &Rq,
        this_cpu: CpuId<N>,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a;

    /// `find_new_ilb()`'s scan for the CPU whose runqueue is `rq`: the first registered CPU in
    /// `hk` that `accept`s, in this set's order (the kernel's: ascending ids). `now` is for an
    /// order that rotates with time; the kernel's never reads it.
    fn find_ilb<const N: usize>(
        &self,
        line: &Scalars,
        rq: &Rq,
        hk: &CpuMask<W>,
        nr: NrCpuIds<N>,
        now: impl FnOnce() -> Jiffies,
        accept: impl FnMut(CpuId<N>) -> bool,
    ) -> Option<CpuId<N>>;

    /// `for_each_cpu_and(i, sched_domain_span(sd), nohz.idle_cpus_mask)`'s idle half: the
    /// registered CPUs the kick's asym-packing scan visits.
    fn for_each_cpu<'a, const N: usize>(
        &'a self,
        line: &'a Scalars,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a;

    /// Every registered CPU, each word read as the iteration reaches it (reports and tests;
    /// no kernel path reads it).
    fn registered<'a, const N: usize>(
        &'a self,
        line: &'a Scalars,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a;

    /// Before boot: whether the set's own layout of the platform's topology fits (the
    /// kernel's set has none to check).
    #[inline(always)]
    fn check<const N: usize, Pl: Platform<N>>(
        &self,
        _line: &Scalars,
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
        _line: &Scalars,
        _rqs: &PerCpu<Rq, N>,
        _nr: NrCpuIds<N>,
        _plat: &Pl,
    ) {
    }

    #[cfg(feature = "sharded")]
    /// Reports (tests, the harness): the shards in use (none for the kernel's set).
    #[inline(always)]
    fn nr_shards(&self, _line: &Scalars) -> usize {
        0
    }

    #[cfg(feature = "sharded")]
    /// Reports: shard `s`'s idle word (0 out of range, and for the kernel's set).
    #[inline(always)]
    fn shard_word(&self, _line: &Scalars, _s: usize) -> u64 {
        0
    }

    #[cfg(feature = "sharded")]
    /// Reports: shard `s` is flagged in the summary.
    #[inline(always)]
    fn shard_flagged(&self, _line: &Scalars, _s: usize) -> bool {
        false
    }

    #[cfg(feature = "sharded")]
    /// Reports: the shard and slot of the CPU whose runqueue is `rq`, once the shard map is
    /// built.
    #[inline(always)]
    fn shard_of(&self, _rq: &Rq) -> Option<(usize, usize)> {
        None
    }

    #[cfg(feature = "sharded")]
    /// Tests: replaces the shard map with `shard_of`'s (see `Machine::set_shard_map`); the
    /// kernel's set has no shards to map.
    #[inline(always)]
    fn set_map<const N: usize>(
        &self,
        _line: &Scalars,
        _rqs: &PerCpu<Rq, N>,
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
        _line: &'a Scalars,
        _nr: NrCpuIds<N>,
        _s: usize,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        core::iter::empty()
    }
}

/// The kernel's idle set: the flat mask.
impl<const W: usize> IdleCpus<W> for CpuMask<W> {
    // Moved out by value into the machine's constructor, never borrowed as a constant.
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self = CpuMask::new();
    #[cfg(nohz_loom)]
    fn new_empty() -> Self {
        CpuMask::new()
    }

    type Placed = ();

    #[inline(always)]
    fn set_cpu<const N: usize>(&self, _line: &Scalars, _rq: &Rq, cpu: CpuId<N>) {
        self.set(cpu);
    }

    #[inline(always)]
    fn after_fence(&self, _line: &Scalars, _rq: &Rq, _placed: ()) {}

    #[inline(always)]
    fn clear_cpu<const N: usize>(&self, _rq: &Rq, cpu: CpuId<N>) {
        self.clear(cpu);
    }

    #[inline(always)]
    fn test_cpu<const N: usize>(&self, _rq: &Rq, cpu: CpuId<N>) -> bool {
        self.test(cpu)
    }

    #[inline(always)]
    fn empty<const N: usize>(&self, _line: &Scalars, _rq: &Rq, cpus: &Cpus<N, W>) -> bool {
        self.is_empty(cpus.nr_cpu_ids())
    }

    #[inline(always)]
    fn for_each_cpu_wrap<'a, const N: usize>(
        &'a self,
        _line: &'a Scalars,
        _rq: &Rq,
        this_cpu: CpuId<N>,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.iter_wrap_after(this_cpu, nr)
    }

    #[inline(always)]
    fn find_ilb<const N: usize>(
        &self,
        _line: &Scalars,
        _rq: &Rq,
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
        _line: &'a Scalars,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.iter(nr)
    }

    #[inline(always)]
    fn registered<'a, const N: usize>(
        &'a self,
        _line: &'a Scalars,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.iter(nr)
    }
}

/// How `nohz_balance_enter_idle` writes the `nohz` flags, and the not-due gate of
/// `nohz_balancer_kick` that reads them. `line` is the `nohz` scalar line.
pub trait NohzLine: 'static {
    /// Idle entry of `rq`'s CPU while it is registered already (the kernel's idempotent path,
    /// `goto out`): returns true if the line handled the whole entry itself. The kernel's
    /// never does.
    fn reenter_idle(line: &Scalars, rq: &Rq) -> bool;

    /// `WRITE_ONCE(flag, 1)` from idle entry (`nohz.needs_update`, `nohz.has_blocked_load`);
    /// returns whether it stored.
    fn raise(flag: &AtomicU32) -> bool;

    /// Idle entry is done raising the flags; `raised`: it stored at least one.
    fn raised(line: &Scalars, raised: bool);

    /// The not-due gate around `nohz_balancer_kick`'s path (`kick`) on the CPU whose
    /// runqueue is `rq`: `not_due` if the tick is the common one that the path would end with
    /// no kick and no side effect (the tick is not on an idle CPU and the CPU is not
    /// registered; the caller runs on its own CPU, `on_own_cpu()`, so no warning to count;
    /// balancing not due at `now`), otherwise whatever `kick` returns. The kernel has no gate:
    /// it runs `kick`, and reads nothing else.
    fn gate<R>(
        line: &Scalars,
        rq: &Rq,
        on_own_cpu: impl FnOnce() -> bool,
        now: Jiffies,
        not_due: R,
        kick: impl FnOnce() -> R,
    ) -> R;

    /// The scalars the gate reads moved (`kick_ilb`'s `next_balance`, an ILB pass's end,
    /// boot).
    fn moved(line: &Scalars, now: Jiffies);
}

/// The kernel's `nohz` line: `WRITE_ONCE(..., 1)` on every idle entry, and no gate.
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelLine;

impl NohzLine for KernelLine {
    #[inline(always)]
    fn reenter_idle(_line: &Scalars, _rq: &Rq) -> bool {
        false
    }

    #[inline(always)]
    fn raise(flag: &AtomicU32) -> bool {
        flag.store(1, Relaxed);
        true
    }

    #[inline(always)]
    fn raised(_line: &Scalars, _raised: bool) {}

    #[inline(always)]
    fn gate<R>(
        _line: &Scalars,
        _rq: &Rq,
        _on_own_cpu: impl FnOnce() -> bool,
        _now: Jiffies,
        _not_due: R,
        kick: impl FnOnce() -> R,
    ) -> R {
        kick()
    }

    #[inline(always)]
    fn moved(_line: &Scalars, _now: Jiffies) {}
}

pub use crate::beyond::kick_deadline::ScalableLine;
