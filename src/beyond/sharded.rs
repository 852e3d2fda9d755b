//! Sharded idle tracking: the [`Sharded`] policy's idle set, which replaces
//! the one flat `nohz.idle_cpus_mask` with one word per shard of at most 64 CPUs and a sticky
//! per-shard summary on the `nohz` scalar line (no kernel counterpart; the kernel is heading
//! this way with per-LLC nohz masks, not landed).
//!
//! C source: none (beyond the kernel); it replaces `nohz.idle_cpus_mask` in
//! `kernel/sched/fair.c`'s `nohz_balance_enter_idle`, `nohz_balance_exit_idle`,
//! `nohz_balancer_kick`, `find_new_ilb`, `_nohz_idle_balance` and `update_nohz_stats`.
//!
//! # Design
//!
//! **State, writers, readers.**
//! - A *shard* is a fixed set of at most 64 possible CPUs, chosen at init by the policy's
//!   [`ShardLayout`] ([`ByLlc`]: each LLC split into runs of at most `MAX` CPUs in ascending
//!   ids; [`Contiguous`]: runs of `K` consecutive ids) or later by
//!   `Machine::set_shard_map` (test rigs) while no CPU is registered. Each
//!   CPU has one slot in one shard. Shards never change while a CPU is registered; hotplug and
//!   domain rebuilds do not touch them.
//! - Each shard's *idle word* (one bit per slot, on a 128-byte block of its own) is written
//!   only by its own CPUs, each its own bit, with one RMW: `fetch_or` in
//!   `nohz_balance_enter_idle`, `fetch_and` in `nohz_balance_exit_idle`. Nothing else writes
//!   it. Readers: the ILB walk (every shard), `find_new_ilb` (the kicker's shard first),
//!   `update_nohz_stats`, the `Validated` emptiness test.
//! - The *summary* (one bit per shard, two words: at most 128 shards) sits on the `nohz` scalar
//!   line beside `has_blocked_load`, `needs_update`, `next_balance` and `next_blocked`. It is
//!   **sticky**: an entering CPU sets its shard's bit, after the O1/O2 fence, only if it reads
//!   it clear (an RMW, never a store, so a neighbour's bit is never clobbered); exit never
//!   touches it; only a scanner that finds a flagged shard empty (`find_new_ilb`) clears it:
//!   clear, fence, re-read the shard, re-set if it is not empty. Summary writes are therefore
//!   bounded by the kick rate, not by the idle-transition rate.
//! - The *tables* (each shard's members and population; each CPU's shard and slot, its
//!   [`ShardPlace`], on a line beside its runqueue: the idle set's per-CPU state, which the
//!   kernel's flat mask does not have) are written at init and by `set_shard_map` only.
//!
//! **Which barrier pairs with which** (spec `sharded-idle.md` §2.6).
//! - Enter: shard `fetch_or`, then `NOHZ_ENTER_IDLE_FENCE`, then the summary bit and the two
//!   flags read (and set if clear). That one fence pairs with the ILB's `NOHZ_ILB_FENCE` (O1,
//!   O2: the walk loads every shard word after its fence, word by word the flat mask's
//!   store-buffering argument) and with the GC's `NOHZ_SHARD_GC_FENCE` (S1: either the GC's
//!   re-read sees the new bit, or the enterer's summary read sees the clear and sets it again).
//! - The walk is never gated by the summary: the enterer sets its summary bit after its fence,
//!   so a walk that skipped clear shards could miss it while the enterer read the old flag
//!   (loom `sharded::gated_walk` kills that code mutant).
//! - Exit and every kick-side read are Relaxed: a stale bit costs a late or an extra kick,
//!   as the kernel's unordered mask reads (O5).
//!
//! **Not a snapshot.** A read of several shards is not atomic as a whole, and nothing relies on
//! it being one: each obligation is per CPU and per word.
//!
//! **Observable divergence** (`Hint` only). The kick's "anyone tickless?" test reads the
//! summary alone. A stale bit (its shard emptied since the last GC) while every shard is empty
//! sends the kick on where `Patched` returns: it may call `kick_ilb`, which with BALANCE moves
//! `nohz.next_balance` to the next jiffy, and `find_new_ilb` then finds nobody and clears the
//! stale bits. One extra kick attempt, at most one jiffy of delay to the next BALANCE kick, and
//! it heals itself. [`Validated`] checks the flagged shards' words instead (ring order from the
//! caller's shard, stopping at the first non-empty one) and has no divergence; with
//! [`LowestId`] and contiguous shards every observable equals `Patched`'s (the differential
//! tests in `tests/model` and the kernel-path tests).
//!
//! **ILB choice.** [`LowestId`]: shards ascending, slots ascending (with contiguous shards the
//! kernel's order). [`LocalFirst`]: the kicker's own shard first, from a slot that rotates
//! with jiffies (no written cursor), then the other flagged shards in ring order. Either way
//! the candidate must be a housekeeping CPU, not the kicker, and pass `idle_cpu()`.
//!
//! **The walk** visits, after the ILB's own slot: the rest of its shard, the shards after it,
//! the shards before it, then its own shard up to itself: with contiguous ascending shards
//! exactly `for_each_cpu_wrap(mask, ilb + 1)`, the ILB last.

use super::scalable::ScalableLine;
use crate::cpu::{CpuId, NrCpuIds, PerCpu};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
pub use crate::fair::hooks::ShardMapError;
use crate::fair::hooks::{IdleCpus, Policy, sealed as policy_sealed};
use crate::fair::{CpuSlot, TopologyError};
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::sync::{AtomicU16, AtomicU32, AtomicU64, Ordering, Ordering::Relaxed, Site};
use core::fmt;
use core::marker::PhantomData;
use crossbeam_utils::CachePadded;

/// `Sharded` only (S1): `find_new_ilb`'s GC of a shard it found flagged and empty, between
/// clearing the shard's summary bit and re-reading its idle word (to flag it again if a CPU
/// registered meanwhile).
pub static NOHZ_SHARD_GC_FENCE: Site = Site::fence_site(
    "nohz.find_new_ilb.gc_fence",
    Ordering::SeqCst,
    "S1 (Sharded)",
    "nohz.nohz_balance_enter_idle.mask_fence: the enterer sets its shard bit, fences, then reads \
     its summary bit and sets it if clear",
    "a CPU registered in a shard whose summary bit ends clear: the GC's re-read misses the new \
     bit while the enterer read the bit as still set from before the clear, so no kick ever \
     looks in that shard again (a persistent false negative)",
);

/// Shards a summary can name: two words on the `nohz` line.
pub const MAX_SHARDS: usize = 64 * SUMMARY_WORDS;

/// Words of the summary on the `nohz` line.
pub(crate) const SUMMARY_WORDS: usize = 2;

/// CPUs a shard can hold: one 64-bit idle word.
pub const MAX_SHARD_CPUS: usize = 64;

mod sealed {
    pub trait Sealed {}
}

/// How `find_new_ilb` orders its candidates under [`Sharded`]. Sealed.
pub trait IlbOrder: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// The kicker's shard first, from a rotating slot.
    const LOCAL_FIRST: bool;
}

/// `find_new_ilb` in ascending shards and slots: the kernel's ascending ids when shards are
/// contiguous. For the differential tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LowestId;

/// `find_new_ilb` in the kicker's shard first, from a slot that rotates with jiffies, then the
/// other flagged shards in ring order: the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LocalFirst;

impl sealed::Sealed for LowestId {}
impl sealed::Sealed for LocalFirst {}
impl IlbOrder for LowestId {
    const LOCAL_FIRST: bool = false;
}
impl IlbOrder for LocalFirst {
    const LOCAL_FIRST: bool = true;
}

/// How the kick tests "is any CPU tickless?" under [`Sharded`]. Sealed.
pub trait Emptiness: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// The summary alone decides.
    const HINT: bool;
}

/// The summary alone: one line, never written at idle-transition rate. A stale bit can cost
/// one extra kick attempt (module docs). The default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Hint;

/// The flagged shards' words, in ring order from the caller's shard, up to the first
/// non-empty one: the kernel's exact answer, at the cost of reading shard lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Validated;

impl sealed::Sealed for Hint {}
impl sealed::Sealed for Validated {}
impl Emptiness for Hint {
    const HINT: bool = true;
}
impl Emptiness for Validated {
    const HINT: bool = false;
}

/// Where one CPU goes when a shard map is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// CPUs with the same key fill shards of at most `cap` CPUs, in ascending ids; a key's
    /// next shard opens when its last one is full. Shard ids follow the order in which the
    /// ascending CPU walk opens them.
    Group {
        /// The group (for [`ByLlc`], the LLC leader's index).
        key: usize,
        /// At most this many CPUs per shard (1 to 64).
        cap: usize,
    },
    /// This shard id.
    Shard(usize),
}

/// How the possible CPUs are split into shards at init. Sealed.
pub trait ShardLayout: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// Where `cpu` goes, from the platform's topology.
    fn place<const N: usize, T: crate::platform::Topology<N>>(plat: &T, cpu: CpuId<N>)
    -> Placement;
}

/// Each LLC (the platform's `llc_leader`; a CPU without one is an LLC of its own) split into
/// shards of at most `MAX` CPUs (1 to 64) in ascending ids: the default, `MAX` 64.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ByLlc<const MAX: usize = 64>;

/// Runs of `K` consecutive CPU ids (1 to 64), whatever the topology: shard `cpu / K`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Contiguous<const K: usize>;

impl<const MAX: usize> sealed::Sealed for ByLlc<MAX> {}
impl<const K: usize> sealed::Sealed for Contiguous<K> {}

impl<const MAX: usize> ByLlc<MAX> {
    const CAP: usize = {
        assert!(
            MAX >= 1 && MAX <= MAX_SHARD_CPUS,
            "ByLlc<MAX> needs 1 <= MAX <= 64"
        );
        MAX
    };
}
impl<const K: usize> Contiguous<K> {
    const K: usize = {
        assert!(
            K >= 1 && K <= MAX_SHARD_CPUS,
            "Contiguous<K> needs 1 <= K <= 64"
        );
        K
    };
}

impl<const MAX: usize> ShardLayout for ByLlc<MAX> {
    fn place<const N: usize, T: crate::platform::Topology<N>>(
        plat: &T,
        cpu: CpuId<N>,
    ) -> Placement {
        Placement::Group {
            key: plat.llc_leader(cpu).unwrap_or(cpu).index(),
            cap: Self::CAP,
        }
    }
}
impl<const K: usize> ShardLayout for Contiguous<K> {
    fn place<const N: usize, T: crate::platform::Topology<N>>(
        _plat: &T,
        cpu: CpuId<N>,
    ) -> Placement {
        Placement::Shard(cpu.index() / Self::K)
    }
}

/// One shard's read-only tables: its members by slot and its population (set at init).
#[derive(Debug)]
pub struct ShardTable {
    members: [AtomicU16; MAX_SHARD_CPUS],
    population: AtomicU64,
}

impl ShardTable {
    crate::maybe_const_fn! {
        fn new() -> Self {
            ShardTable {
                members: crate::sync::atomic_array!(AtomicU16::new(0); MAX_SHARD_CPUS),
                population: AtomicU64::new(0),
            }
        }
    }
}

/// `Sharded`'s words on the `nohz` scalar line, beside the kernel's scalars (its
/// `IdleCpus::Line`): the busy tick's `Hint` test reads them with the scalars it reads anyway.
#[derive(Debug)]
pub struct ShardLine {
    /// The sticky per-shard summary (bit `s` of word `s / 64`: shard `s` may hold a registered
    /// CPU). Set by enterers after their fence, cleared only by `find_new_ilb`'s GC: never
    /// written at idle-transition rate.
    summary: [AtomicU64; SUMMARY_WORDS],
    /// The shards in use (written at init and by `set_shard_map` only).
    nr_shards: AtomicU32,
}

impl ShardLine {
    crate::maybe_const_fn! {
        fn new() -> Self {
            ShardLine {
                summary: crate::sync::atomic_array!(AtomicU64::new(0); SUMMARY_WORDS),
                nr_shards: AtomicU32::new(0),
            }
        }
    }
}

/// A CPU's place in the shards, beside its runqueue (`Sharded`'s `IdleCpus::Cpu`): written when
/// the shard map is built, read by this CPU's idle entry and exit (precomputed so that they do
/// no arithmetic), by its ILB walks and its kicks' ILB choice.
#[derive(Debug)]
pub struct ShardPlace {
    /// The shard's index complemented (0, a fresh machine's value, is no shard: its complement
    /// is past every shard, so one bounds check covers both) ...
    shard_not: AtomicU32,
    /// ... this CPU's bit in that shard's word (0: no shard) ...
    shard_bit: AtomicU64,
    /// ... and the shard's bit in its summary word.
    summary_bit: AtomicU64,
}

impl ShardPlace {
    crate::maybe_const_fn! {
        fn new() -> Self {
            ShardPlace {
                shard_not: AtomicU32::new(0),
                shard_bit: AtomicU64::new(0),
                summary_bit: AtomicU64::new(0),
            }
        }
    }

    /// This CPU's shard and slot, once the shard map is built.
    #[inline(always)]
    pub(crate) fn slot(&self) -> Option<ShardSlot> {
        let (shard, bit) = self.place();
        (bit != 0).then(|| ShardSlot {
            shard,
            slot: bit.trailing_zeros() as usize,
        })
    }

    /// This CPU's shard index (past every shard if it has none) and its bit in that shard's
    /// word, for idle entry and exit.
    #[inline(always)]
    fn place(&self) -> (usize, u64) {
        (
            !self.shard_not.load(Relaxed) as usize,
            self.shard_bit.load(Relaxed),
        )
    }

    /// This CPU's shard's bit in its summary word, for idle entry.
    #[inline(always)]
    fn summary_bit(&self) -> u64 {
        self.summary_bit.load(Relaxed)
    }

    #[inline]
    fn set(&self, at: Option<ShardSlot>) {
        self.shard_not
            .store(at.map_or(0, |at| !(at.shard as u32)), Relaxed);
        self.shard_bit
            .store(at.map_or(0, |at| 1 << at.slot), Relaxed);
        self.summary_bit
            .store(at.map_or(0, |at| 1 << (at.shard % 64)), Relaxed);
    }
}

/// `Sharded`'s idle set (`nohz.idle_cpus_mask` under it): `S` idle words, each on a block of
/// its own, and their tables; the summary and the shard count live on the `nohz` scalar line
/// ([`ShardLine`]), each CPU's place beside its runqueue ([`ShardPlace`]).
/// `L`, `O` and `E` are the policy's layout, ILB order and emptiness mode.
pub struct ShardedIdle<const S: usize, L = ByLlc, O = LocalFirst, E = Hint> {
    words: [CachePadded<AtomicU64>; S],
    tables: [CachePadded<ShardTable>; S],
    _modes: Modes<L, O, E>,
}

/// The layout, order and emptiness markers, held by a function pointer type so that the
/// types holding them are `Send + Sync + Copy` whatever the markers are.
type Modes<L, O, E> = PhantomData<fn() -> (L, O, E)>;

impl<const S: usize, L, O, E> fmt::Debug for ShardedIdle<S, L, O, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedIdle")
            .field("words", &self.words)
            .finish_non_exhaustive()
    }
}

impl<const S: usize, L, O, E> ShardedIdle<S, L, O, E> {
    const FITS: () = assert!(
        S <= MAX_SHARDS,
        "Sharded<S> holds at most 128 shards (a two-word summary)"
    );

    /// The view of the whole set: these words and tables with `line`'s summary and count.
    #[inline(always)]
    fn view<'a>(&'a self, line: &'a ShardLine) -> Shards<'a> {
        Shards {
            words: &self.words,
            tables: &self.tables,
            summary: &line.summary,
            nr_shards: &line.nr_shards,
        }
    }

    /// Test rigs: sets (or clears) `at`'s bit in its shard word, nothing else.
    #[cfg(feature = "testing")]
    pub(crate) fn set_bit_alone(&self, line: &ShardLine, at: ShardSlot, registered: bool) {
        let view = self.view(line);
        if registered {
            view.set_bit(at.shard, at.bit());
        } else {
            view.words[at.shard].fetch_and(!at.bit(), Relaxed);
        }
    }

    /// Test rigs: the ILB walk from after `from`, as CPU indices, each word read as it reaches
    /// it.
    #[cfg(feature = "testing")]
    pub(crate) fn walk_from<'a>(
        &'a self,
        line: &'a ShardLine,
        from: Option<ShardSlot>,
    ) -> impl Iterator<Item = usize> + 'a {
        self.view(line).walk(from)
    }

    /// Builds the shard map from `place` (the layout's placement, or an explicit map):
    /// refused, changing nothing, if it does not fit the `S` shards of at most 64 CPUs, or
    /// while any CPU is registered (shards never change while a CPU is registered). The caller
    /// guarantees that no CPU enters idle meanwhile (boot, or all CPUs quiesced).
    pub(crate) fn build<const N: usize>(
        &self,
        line: &ShardLine,
        slots: &PerCpu<CpuSlot<ShardPlace>, N>,
        nr: NrCpuIds<N>,
        place: impl Fn(CpuId<N>) -> Placement,
    ) -> Result<(), ShardMapError> {
        if nr.get() == 0 {
            return Err(ShardMapError::NotSharded);
        }
        let view = self.view(line);
        if let Some((cpu, _)) = slots.iter(nr).find(|(_, slot)| {
            slot.rq.nohz_tick_stopped() || slot.idle_set.slot().is_some_and(|at| view.test(at))
        }) {
            return Err(ShardMapError::CpuRegistered { cpu: cpu.index() });
        }
        plan(nr, S, &place, |_, _| {})?;
        view.reset_tables();
        for (_, slot) in slots.iter(nr) {
            slot.idle_set.set(None);
        }
        let n = plan(nr, S, &place, |cpu, at| {
            view.put(cpu.index(), at);
            slots.get(cpu).idle_set.set(Some(at));
        })?;
        for w in &line.summary {
            w.store(0, Relaxed);
        }
        line.nr_shards.store(n as u32, Relaxed);
        Ok(())
    }
}

impl<const S: usize, L, O, E, const W: usize> IdleCpus<W> for ShardedIdle<S, L, O, E>
where
    L: ShardLayout,
    O: IlbOrder,
    E: Emptiness,
{
    type Line = ShardLine;
    type Cpu = ShardPlace;

    // Moved out by value into the machine's constructor, never borrowed as a constant.
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY_LINE: ShardLine = ShardLine::new();
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY_CPU: ShardPlace = ShardPlace::new();
    #[cfg(nohz_loom)]
    fn new_line() -> ShardLine {
        ShardLine::new()
    }
    #[cfg(nohz_loom)]
    fn new_cpu() -> ShardPlace {
        ShardPlace::new()
    }
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self = {
        let () = Self::FITS;
        ShardedIdle {
            words: [const { CachePadded::new(AtomicU64::new(0)) }; S],
            tables: [const { CachePadded::new(ShardTable::new()) }; S],
            _modes: PhantomData,
        }
    };
    #[cfg(nohz_loom)]
    fn new_empty() -> Self {
        let () = Self::FITS;
        ShardedIdle {
            words: core::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
            tables: core::array::from_fn(|_| CachePadded::new(ShardTable::new())),
            _modes: PhantomData,
        }
    }

    /// The shard whose word `set_cpu` set, if the CPU has one.
    type Placed = Option<usize>;

    /// This CPU's bit in its own shard's word, nothing on a shared line (nothing at all for a
    /// CPU without a shard).
    #[inline(always)]
    fn set_cpu<const N: usize>(
        &self,
        line: &ShardLine,
        at: &ShardPlace,
        _cpu: CpuId<N>,
    ) -> Option<usize> {
        let (shard, bit) = at.place();
        let view = self.view(line);
        let placed = view.set_bit(shard, bit).then_some(shard);
        if let Some(shard) = placed
            && mutant(CodeMutant::SummaryBeforeFence)
        {
            view.raise_summary_bit(shard, at.summary_bit());
        }
        placed
    }

    /// S1: after the same fence, flag this CPU's shard in the summary if it reads clear,
    /// against `find_new_ilb`'s GC clearing it (NOHZ_SHARD_GC_FENCE).
    #[inline(always)]
    fn after_fence(&self, line: &ShardLine, at: &ShardPlace, placed: Option<usize>) {
        if let Some(shard) = placed
            && !mutant(CodeMutant::SummaryBeforeFence)
        {
            self.view(line).raise_summary_bit(shard, at.summary_bit());
        }
    }

    /// The own shard's word only, never the summary (the next GC clears a stale bit).
    #[inline(always)]
    fn clear_cpu<const N: usize>(&self, at: &ShardPlace, _cpu: CpuId<N>) {
        let (shard, bit) = at.place();
        if let Some(w) = self.words.get(shard) {
            if mutant(CodeMutant::ShardLoadStore) {
                rejected::and_not_by_load_store(w, bit);
                return;
            }
            w.fetch_and(!bit, Relaxed);
        }
    }

    #[inline]
    fn test_cpu<const N: usize>(&self, at: &ShardPlace, _cpu: CpuId<N>) -> bool {
        at.slot()
            .is_some_and(|at| self.words[at.shard].load(Relaxed) & at.bit() != 0)
    }

    /// `Hint`: the summary alone (a stale bit answers "someone": the documented divergence);
    /// `Validated`: the flagged shards' words from the asking CPU's shard on.
    #[inline]
    fn empty<const N: usize>(&self, line: &ShardLine, at: &ShardPlace, _cpus: &Cpus<N, W>) -> bool {
        let view = self.view(line);
        if E::HINT {
            !view.summary_any()
        } else {
            let home = at.slot().map_or(0, |at| at.shard);
            !view.any_idle_from(home)
        }
    }

    /// Every shard word, each read after the fence as the walk reaches it, never gated by the
    /// summary (an enterer flags its shard after its own fence).
    #[inline]
    fn for_each_cpu_wrap<'a, const N: usize>(
        &'a self,
        line: &'a ShardLine,
        at: &ShardPlace,
        _this_cpu: CpuId<N>,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.view(line)
            .walk(at.slot())
            .filter_map(move |i| nr.cpu(i).ok())
    }

    /// In the policy's order: `LocalFirst` rotates its start slot with jiffies, the only read
    /// of the clock the choice makes; GC'ing stale summary bits on the way.
    #[inline]
    fn find_ilb<const N: usize>(
        &self,
        line: &ShardLine,
        at: &ShardPlace,
        hk: &CpuMask<W>,
        nr: NrCpuIds<N>,
        now: impl FnOnce() -> Jiffies,
        mut accept: impl FnMut(CpuId<N>) -> bool,
    ) -> Option<CpuId<N>> {
        let home = at.slot().map(|at| at.shard);
        let rotate = if O::LOCAL_FIRST { now().get() % 64 } else { 0 };
        self.view(line)
            .find(home, O::LOCAL_FIRST, rotate, |i| {
                nr.cpu(i).is_ok_and(|c| hk.test(c) && accept(c))
            })
            .and_then(|i| nr.cpu(i).ok())
    }

    /// The flagged shards' CPUs (gating the asym scan by the summary may miss a CPU only
    /// transiently, O5).
    #[inline]
    fn for_each_cpu<'a, const N: usize>(
        &'a self,
        line: &'a ShardLine,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.view(line)
            .flagged_cpus()
            .filter_map(move |i| nr.cpu(i).ok())
    }

    fn registered<'a, const N: usize>(
        &'a self,
        line: &'a ShardLine,
        nr: NrCpuIds<N>,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        self.view(line)
            .all_cpus()
            .filter_map(move |i| nr.cpu(i).ok())
    }

    /// Before the shard map is first built (at init), the map the layout builds from this
    /// topology must fit the shards; rebuilds leave the shards alone.
    fn check<const N: usize, Pl: Platform<N>>(
        &self,
        line: &ShardLine,
        nr: NrCpuIds<N>,
        plat: &Pl,
    ) -> Result<(), TopologyError> {
        if self.view(line).nr() != 0 {
            return Ok(());
        }
        plan(nr, S, |c| L::place(plat, c), |_, _| {})
            .map(drop)
            .map_err(TopologyError::Shards)
    }

    fn boot<const N: usize, Pl: Platform<N>>(
        &self,
        line: &ShardLine,
        slots: &PerCpu<CpuSlot<ShardPlace>, N>,
        nr: NrCpuIds<N>,
        plat: &Pl,
    ) {
        // check accepted this map before boot, and no CPU is registered yet, so this cannot be
        // refused.
        let _ = self.build(line, slots, nr, |c| L::place(plat, c));
    }

    fn nr_shards(&self, line: &ShardLine) -> usize {
        self.view(line).nr()
    }

    fn shard_word(&self, line: &ShardLine, s: usize) -> u64 {
        if s < self.view(line).nr() {
            self.words[s].load(Relaxed)
        } else {
            0
        }
    }

    fn shard_flagged(&self, line: &ShardLine, s: usize) -> bool {
        let view = self.view(line);
        s < view.nr() && view.flagged(s)
    }

    fn shard_of(&self, at: &ShardPlace) -> Option<(usize, usize)> {
        at.slot().map(|at| (at.shard, at.slot))
    }

    fn shard_members<'a, const N: usize>(
        &'a self,
        line: &'a ShardLine,
        nr: NrCpuIds<N>,
        s: usize,
    ) -> impl Iterator<Item = CpuId<N>> + 'a {
        let view = self.view(line);
        let s = if s < view.nr() { s } else { usize::MAX };
        view.members(s).filter_map(move |i| nr.cpu(i).ok())
    }

    fn set_map<const N: usize>(
        &self,
        line: &ShardLine,
        slots: &PerCpu<CpuSlot<ShardPlace>, N>,
        nr: NrCpuIds<N>,
        shard_of: impl Fn(CpuId<N>) -> usize,
    ) -> Result<(), ShardMapError> {
        self.build(line, slots, nr, |c| Placement::Shard(shard_of(c)))
    }
}

/// `Scalable` with sharded idle tracking (beyond the kernel; this module): at most `S` shards
/// (at most 128: the summary is two words on the `nohz` line), laid out by `L` ([`ByLlc`] by
/// default: each LLC split at 64 CPUs), `find_new_ilb` in order `O` ([`LocalFirst`] by
/// default), the kick's emptiness test in mode `E` ([`Hint`] by default).
///
/// ```
/// use nohz::sharded::{Contiguous, LowestId, Validated};
/// use nohz::{Machine, Sharded};
/// // 8 CPUs in 4 shards of 2, with the kernel's observables (the differential tests' choice).
/// type Strict = Sharded<4, Contiguous<2>, LowestId, Validated>;
/// static MACHINE: nohz::machine!(Strict, 8) = Machine::new();
/// // The shipped choice: LLC shards, local-first ILB choice, the summary as a hint.
/// static SHIPPED: nohz::machine!(Sharded<16>, 256) = Machine::new();
/// ```
pub struct Sharded<const S: usize, L = ByLlc, O = LocalFirst, E = Hint>(Modes<L, O, E>);

impl<const S: usize, L, O, E> fmt::Debug for Sharded<S, L, O, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sharded<{S}>")
    }
}
// Clone by copy: the markers are a function pointer type, whatever L, O and E are.
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

impl<const S: usize, L: ShardLayout, O: IlbOrder, E: Emptiness> policy_sealed::Sealed
    for Sharded<S, L, O, E>
{
    type IdleCpus<const W: usize> = ShardedIdle<S, L, O, E>;
    type NohzLine = ScalableLine;
}

impl<const S: usize, L: ShardLayout, O: IlbOrder, E: Emptiness> Policy for Sharded<S, L, O, E> {
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
    #[cfg(feature = "testing")]
    const READ_BEFORE_WRITE: bool = true;
    #[cfg(feature = "testing")]
    const KICK_DEADLINE: bool = true;
    #[cfg(feature = "testing")]
    const SHARDED: bool = true;
}

/// A CPU's place: its shard and its slot there (`ShardPlace` keeps it as the shard's index
/// and the slot's bit, the form idle entry and exit use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSlot {
    /// The shard.
    pub shard: usize,
    /// The slot in it (0 to 63).
    pub slot: usize,
}

impl ShardSlot {
    #[inline(always)]
    fn bit(self) -> u64 {
        1 << self.slot
    }
}

/// The code mutants the loom mutation table tries on this file (loom builds only; each is a
/// rejected design of spec `sharded-idle.md` §2.6-§2.7, made reachable in the crate's own
/// code). In every other build none is ever active and each test folds away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeMutant {
    /// Enter reads (and sets) its summary bit before its fence instead of after.
    SummaryBeforeFence,
    /// The GC clears a stale bit and stops: no fence-and-re-read, no re-set.
    GcNoRecheck,
    /// The GC clears its bit with a load and a store of the whole summary word.
    GcLoadStore,
    /// The GC clears the next shard's bit instead of its own (the `has_idle_cores` 2021 bug).
    GcWrongShard,
    /// The ILB walk skips shards whose summary bit it reads clear.
    WalkGatedBySummary,
    /// Enter and exit update the shard word with a load and a store instead of an RMW.
    ShardLoadStore,
    /// Enter sets its summary bit with a blind `fetch_or` (no read first). Equivalent:
    /// correct, but writes the `nohz` line on every registration (a cost, caught by T8f).
    BlindSummarySet,
    /// `find_new_ilb` GCs every flagged shard it visits, without first reading it empty.
    /// Equivalent: the pre-read only decides which shards to clear.
    GcNoPreRead,
}

/// Every code mutant the mutation table runs.
#[cfg(feature = "testing")]
pub static CODE_MUTANTS: &[CodeMutant] = &[
    CodeMutant::SummaryBeforeFence,
    CodeMutant::GcNoRecheck,
    CodeMutant::GcLoadStore,
    CodeMutant::GcWrongShard,
    CodeMutant::WalkGatedBySummary,
    CodeMutant::ShardLoadStore,
    CodeMutant::BlindSummarySet,
    CodeMutant::GcNoPreRead,
];

/// The code the rejected designs of [`CodeMutant`] put in place of the real one, reached only
/// while `mutant(..)` holds, which only a loom build can make so. cargo-mutants skips this
/// module (`.cargo/mutants.toml`): no test of a normal build runs it, and mutating a rejected
/// design proves nothing.
mod rejected {
    use super::{AtomicU64, CodeMutant, Relaxed, mutant};

    /// `ShardLoadStore`: an OR by a load and a store (the RMW split in two).
    pub(super) fn or_by_load_store(w: &AtomicU64, bit: u64) {
        w.store(w.load(Relaxed) | bit, Relaxed);
    }

    /// `ShardLoadStore`, `GcLoadStore`: an AND-NOT by a load and a store.
    pub(super) fn and_not_by_load_store(w: &AtomicU64, bit: u64) {
        w.store(w.load(Relaxed) & !bit, Relaxed);
    }

    /// The shard whose summary bit the GC of shard `s` clears: `s`, or under `GcWrongShard`
    /// the next one.
    #[inline(always)]
    pub(super) fn gc_target(s: usize, nr: usize) -> usize {
        if mutant(CodeMutant::GcWrongShard) && nr > 1 {
            (s + 1) % nr
        } else {
            s
        }
    }
}

#[inline(always)]
fn mutant(_m: CodeMutant) -> bool {
    #[cfg(nohz_loom)]
    return crate::sync::mutation::code_mutant_active(_m as u32);
    #[cfg(not(nohz_loom))]
    false
}

/// Runs `f` with the code mutant `m` active (a rejected design of the sharded idle set,
/// reachable in this file's code in loom builds only), restoring the real code afterwards,
/// also when `f` panics.
#[cfg(nohz_loom)]
pub fn with_code_mutant<R>(
    m: CodeMutant,
    f: impl FnOnce() -> R,
) -> Result<R, crate::sync::mutation::MutationError> {
    crate::sync::mutation::with_code_mutant(m as u32, f)
}

/// A machine's sharded idle set as one view: the shard words and tables, the summary and
/// the shard count on the `nohz` line.
#[derive(Clone, Copy)]
pub(crate) struct Shards<'a> {
    pub(crate) words: &'a [CachePadded<AtomicU64>],
    pub(crate) tables: &'a [CachePadded<ShardTable>],
    pub(crate) summary: &'a [AtomicU64; SUMMARY_WORDS],
    pub(crate) nr_shards: &'a AtomicU32,
}

impl<'a> Shards<'a> {
    /// Shards in use (a read-only word after init).
    #[inline(always)]
    pub(crate) fn nr(&self) -> usize {
        (self.nr_shards.load(Relaxed) as usize).min(self.words.len())
    }

    #[inline(always)]
    fn word(&self, s: usize) -> u64 {
        self.words[s].load(Relaxed)
    }

    #[inline(always)]
    fn member(&self, s: usize, slot: usize) -> usize {
        self.tables[s].members[slot].load(Relaxed) as usize
    }

    /// `nohz_balance_enter_idle`'s registration: set `bit` in shard `shard`'s word (Relaxed
    /// RMW; its order against the flags comes from the fence that follows). False, nothing
    /// done, for a shard index past the shards (a CPU without a shard).
    #[inline(always)]
    pub(crate) fn set_bit(&self, shard: usize, bit: u64) -> bool {
        let Some(w) = self.words.get(shard) else {
            return false;
        };
        if mutant(CodeMutant::ShardLoadStore) {
            rejected::or_by_load_store(w, bit);
            return true;
        }
        w.fetch_or(bit, Relaxed);
        true
    }

    /// `at`'s bit is set in its shard word.
    #[inline(always)]
    pub(crate) fn test(&self, at: ShardSlot) -> bool {
        self.word(at.shard) & at.bit() != 0
    }

    #[inline(always)]
    fn summary_word(&self, s: usize) -> (&AtomicU64, u64) {
        // s < MAX_SHARDS (the map is checked when built), so the word index is s / 64; the
        // mask (SUMMARY_WORDS is a power of two) only spares the hot path a bounds check.
        const _: () = assert!(SUMMARY_WORDS.is_power_of_two());
        (&self.summary[(s / 64) & (SUMMARY_WORDS - 1)], 1 << (s % 64))
    }

    /// Shard `s` is flagged in the summary.
    #[inline(always)]
    pub(crate) fn flagged(&self, s: usize) -> bool {
        let (w, bit) = self.summary_word(s);
        w.load(Relaxed) & bit != 0
    }

    /// Enter, after its fence: flag shard `s` if the summary reads it clear (one load in the
    /// steady state; an RMW when it sets, never a store: neighbours share the word).
    #[inline(always)]
    pub(crate) fn raise_summary(&self, s: usize) {
        self.raise_summary_bit(s, 1 << (s % 64));
    }

    /// [`raise_summary`](Self::raise_summary) with the shard's summary bit precomputed (the
    /// idle entry's, from its place).
    #[inline(always)]
    pub(crate) fn raise_summary_bit(&self, s: usize, bit: u64) {
        let (w, _) = self.summary_word(s);
        if mutant(CodeMutant::BlindSummarySet) || w.load(Relaxed) & bit == 0 {
            w.fetch_or(bit, Relaxed);
        }
    }

    /// `Hint`: some shard is flagged (two loads of the `nohz` line).
    #[inline(always)]
    pub(crate) fn summary_any(&self) -> bool {
        self.summary.iter().fold(0, |a, w| a | w.load(Relaxed)) != 0
    }

    /// The flagged shards in ring order from `start` (`start` first), each once.
    fn flagged_ring(&self, start: usize) -> impl Iterator<Item = usize> + '_ {
        let nr = self.nr();
        let start = if start < nr { start } else { 0 };
        (start..nr)
            .chain(0..start)
            .filter(move |&s| self.flagged(s))
    }

    /// `Validated`: some flagged shard's word is non-empty, checked in ring order from
    /// `start` up to the first non-empty one. Flagged empty shards are skipped (only
    /// `find_new_ilb` clears them).
    pub(crate) fn any_idle_from(&self, start: usize) -> bool {
        if !self.summary_any() {
            return false;
        }
        self.flagged_ring(start).any(|s| self.word(s) != 0)
    }

    /// The GC of a shard `find_new_ilb` found flagged and empty: clear its bit, fence
    /// (NOHZ_SHARD_GC_FENCE), re-read the shard, and flag it again if a CPU registered there
    /// meanwhile. Returns the word it re-read.
    pub(crate) fn gc(&self, s: usize) -> u64 {
        let target = rejected::gc_target(s, self.nr());
        let (w, bit) = self.summary_word(target);
        if mutant(CodeMutant::GcLoadStore) {
            rejected::and_not_by_load_store(w, bit);
        } else {
            w.fetch_and(!bit, Relaxed);
        }
        if mutant(CodeMutant::GcNoRecheck) {
            return 0;
        }
        // S1: order the clear above before the re-read below, against enter's shard RMW
        // before its summary read (NOHZ_ENTER_IDLE_FENCE): the re-read sees the new bit, or
        // the enterer sees this clear and flags the shard again.
        NOHZ_SHARD_GC_FENCE.fence();
        let again = self.word(s);
        if again != 0 {
            self.raise_summary(s);
        }
        again
    }

    /// `find_new_ilb` over the shards: the first CPU of a flagged shard (`LowestId`: shards
    /// and slots ascending; `local_first`: the shard `home` first whether flagged or not,
    /// from slot `rotate`, then the other flagged shards in ring order) that `accept`s; every
    /// flagged shard found empty on the way is GC'd.
    pub(crate) fn find(
        &self,
        home: Option<usize>,
        local_first: bool,
        rotate: usize,
        mut accept: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let nr = self.nr();
        let mut visit = |s: usize, flagged: bool, rot: usize| -> Option<usize> {
            let mut w = self.word(s);
            if flagged && (w == 0 || mutant(CodeMutant::GcNoPreRead)) {
                w = self.gc(s);
            }
            // Rotate within the shard's slots in use, so every member gets its turn.
            let width = 64 - self.tables[s].population.load(Relaxed).leading_zeros() as usize;
            let rot = if width == 0 { 0 } else { rot % width };
            let high = w & (!0u64 << rot);
            for bits in [high, w & !(!0u64 << rot)] {
                let mut bits = bits;
                let mut turns = 0;
                while bits != 0 {
                    // At most one turn per bit: a clear that stopped clearing never ends, and
                    // debug builds (the tests) stop it at once rather than hang.
                    turns += 1;
                    debug_assert!(turns <= 64, "find_new_ilb: a shard scan that never ends");
                    let slot = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let cpu = self.member(s, slot);
                    if accept(cpu) {
                        return Some(cpu);
                    }
                }
            }
            None
        };
        if local_first {
            let home = home.filter(|&h| h < nr).unwrap_or(0);
            if nr == 0 {
                return None;
            }
            if let Some(c) = visit(home, self.flagged(home), rotate) {
                return Some(c);
            }
            for s in (home + 1..nr).chain(0..home) {
                if self.flagged(s)
                    && let Some(c) = visit(s, true, rotate)
                {
                    return Some(c);
                }
            }
            return None;
        }
        for s in 0..nr {
            if self.flagged(s)
                && let Some(c) = visit(s, true, 0)
            {
                return Some(c);
            }
        }
        None
    }

    /// The registered CPUs of the flagged shards, shards and slots ascending (the asym-packing
    /// scan: gating it by the summary is fine, O5).
    pub(crate) fn flagged_cpus(self) -> impl Iterator<Item = usize> + 'a {
        (0..self.nr())
            .filter(move |&s| self.flagged(s))
            .flat_map(move |s| self.bits_of(s, self.word(s)))
    }

    /// Every registered CPU, shards and slots ascending, every word read (not gated).
    pub(crate) fn all_cpus(self) -> impl Iterator<Item = usize> + 'a {
        (0..self.nr()).flat_map(move |s| self.bits_of(s, self.word(s)))
    }

    fn bits_of(self, s: usize, w: u64) -> impl Iterator<Item = usize> + 'a {
        let mut bits = w;
        let mut yielded = 0;
        core::iter::from_fn(move || {
            (bits != 0).then(|| {
                // One CPU per bit: more would be a clear that stopped clearing (a scan that
                // never ends), which debug builds stop at once.
                yielded += 1;
                debug_assert!(yielded <= 64, "a shard word's scan that never ends");
                let slot = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.member(s, slot)
            })
        })
    }

    /// The ILB walk from after `from` (its own CPU's place), in the two-level wrap order
    /// (module docs), reading every shard word lazily as it reaches it: never gated by the
    /// summary.
    pub(crate) fn walk(&self, from: Option<ShardSlot>) -> Walk<'a> {
        let nr = self.nr();
        let (s0, slot0) = match from {
            Some(at) if at.shard < nr => (at.shard, at.slot),
            // No place (never after init): every shard from 0, as a whole (the slot is then
            // never read).
            _ => (nr, 0),
        };
        Walk {
            shards: *self,
            nr,
            s0,
            slot0,
            phase: 0,
            next: 0,
            cur: 0,
            bits: 0,
            yielded: 0,
        }
    }
}

/// The ILB walk's iterator: CPU indices in the two-level wrap order.
pub(crate) struct Walk<'a> {
    shards: Shards<'a>,
    nr: usize,
    /// The ILB's shard and slot (`s0 == nr`: none).
    s0: usize,
    slot0: usize,
    /// 0: the ILB's shard above its slot; 1: the other shards in ring order; 2: the ILB's
    /// shard up to its slot; 3: done.
    phase: u8,
    /// Phase 1: ring steps taken.
    next: usize,
    cur: usize,
    bits: u64,
    /// CPUs yielded so far: at most one per slot of every shard.
    yielded: usize,
}

impl Iterator for Walk<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        // Each turn yields, or moves to the next shard or phase: more turns than shards and
        // phases would be a walk that stopped moving, which debug builds stop at once.
        let mut turns = 0;
        loop {
            turns += 1;
            debug_assert!(turns <= self.nr + 5, "the ILB walk never ends");
            if self.bits != 0 {
                // Each CPU once: more would be a clear that stopped clearing (a walk that
                // never ends), which debug builds stop at once.
                self.yielded += 1;
                debug_assert!(
                    self.yielded <= MAX_SHARD_CPUS * self.nr,
                    "the ILB walk never ends"
                );
                let slot = self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                return Some(self.shards.member(self.cur, slot));
            }
            match self.phase {
                0 => {
                    self.phase = 1;
                    if self.s0 < self.nr {
                        self.cur = self.s0;
                        let above = if self.slot0 + 1 >= 64 {
                            0
                        } else {
                            !0u64 << (self.slot0 + 1)
                        };
                        self.bits = self.shards.word(self.s0) & above;
                    }
                }
                1 => {
                    let others = if self.s0 < self.nr {
                        self.nr - 1
                    } else {
                        self.nr
                    };
                    if self.next >= others {
                        self.phase = 2;
                        continue;
                    }
                    let s = if self.s0 < self.nr {
                        (self.s0 + 1 + self.next) % self.nr
                    } else {
                        self.next
                    };
                    self.next += 1;
                    if mutant(CodeMutant::WalkGatedBySummary) && !self.shards.flagged(s) {
                        continue;
                    }
                    self.cur = s;
                    self.bits = self.shards.word(s);
                }
                2 => {
                    self.phase = 3;
                    if self.s0 < self.nr {
                        self.cur = self.s0;
                        let upto = if self.slot0 + 1 >= 64 {
                            !0
                        } else {
                            (1u64 << (self.slot0 + 1)) - 1
                        };
                        self.bits = self.shards.word(self.s0) & upto;
                    }
                }
                _ => return None,
            }
        }
    }
}

/// Plans a shard map over the `nr` CPUs from `place`, calling `put(cpu, at)` for each CPU in
/// ascending order, after checking the whole plan against the capacity `s` (at most 128) and
/// the 64-CPU cap: nothing is `put` if the plan is refused. Returns the shard count. No heap:
/// the bookkeeping is two arrays of [`MAX_SHARDS`] entries on the stack.
pub(crate) fn plan<const N: usize>(
    nr: NrCpuIds<N>,
    s: usize,
    place: impl Fn(CpuId<N>) -> Placement,
    mut put: impl FnMut(CpuId<N>, ShardSlot),
) -> Result<usize, ShardMapError> {
    let cap_total = s.min(MAX_SHARDS);
    let run = |put: &mut dyn FnMut(CpuId<N>, ShardSlot)| -> Result<usize, ShardMapError> {
        // Each shard's population so far, and the group key that opened it (plus one; 0: a
        // shard named directly).
        let mut pop = [0u8; MAX_SHARDS];
        let mut key_of = [0usize; MAX_SHARDS];
        let mut n = 0usize;
        for cpu in nr.iter() {
            let shard = match place(cpu) {
                Placement::Shard(sh) => sh,
                Placement::Group { key, cap } => {
                    let cap = cap.clamp(1, MAX_SHARD_CPUS);
                    // The group's latest shard, if it has room.
                    match (0..n).rev().find(|&t| key_of[t] == key + 1) {
                        Some(t) if (pop[t] as usize) < cap => t,
                        _ => n,
                    }
                }
            };
            if shard >= cap_total {
                return Err(ShardMapError::TooManyShards {
                    cpu: cpu.index(),
                    shard,
                    capacity: s,
                });
            }
            if pop[shard] as usize >= MAX_SHARD_CPUS {
                return Err(ShardMapError::ShardFull {
                    shard,
                    cpu: cpu.index(),
                });
            }
            if let Placement::Group { key, .. } = place(cpu)
                && shard == n
            {
                key_of[shard] = key + 1;
            }
            put(
                cpu,
                ShardSlot {
                    shard,
                    slot: pop[shard] as usize,
                },
            );
            pop[shard] += 1;
            n = n.max(shard + 1);
        }
        Ok(n)
    };
    run(&mut |_, _| {})?;
    run(&mut put)
}

impl<'a> Shards<'a> {
    /// Writes a planned map's tables (the caller guarantees no CPU is registered and no other
    /// map is being written): every population cleared, then each CPU's slot.
    pub(crate) fn reset_tables(&self) {
        for t in self.tables {
            t.population.store(0, Relaxed);
        }
    }

    /// Records `cpu` at `at` in the tables.
    pub(crate) fn put(&self, cpu: usize, at: ShardSlot) {
        let t = &self.tables[at.shard];
        t.members[at.slot].store(cpu as u16, Relaxed);
        t.population
            .store(t.population.load(Relaxed) | at.bit(), Relaxed);
    }

    /// Shard `s`'s members, slots ascending.
    pub(crate) fn members(self, s: usize) -> impl Iterator<Item = usize> + 'a {
        let pop = self.tables.get(s).map_or(0, |t| t.population.load(Relaxed));
        self.bits_of(s, pop)
    }
}
