//! `Rq`: the per-CPU runqueue fields NOHZ reads and writes, and `idle_cpu()`.
//!
//! C source: `kernel/sched/sched.h` (`struct rq`, `NOHZ_*_KICK`), `kernel/sched/core.c` (`idle_cpu`).
//!
//! # Design
//!
//! The kernel's `struct rq` is large; this is the part the NOHZ code touches (spec §4). The
//! embedding kernel keeps the scheduler's own fields current (`nr_running`, `ttwu_pending`,
//! whether the idle task is current, capacities, `avg_idle`) through the setters here; the
//! crate owns the NOHZ fields.
//!
//! Three groups, each on cache lines of its own, by who touches them:
//!
//! | group | fields | written by | read by |
//! |---|---|---|---|
//! | hot | `nr_running`, `ttwu_pending`, current-is-idle, `h_nr_runnable`, capacity, misfit | the kernel, on this CPU | everybody (`idle_cpu()` in ILB scans) |
//! | kick | `nohz_flags`, the csd's busy state | remote kickers and this CPU's handler | the same |
//! | nohz | `nohz_tick_stopped`, `has_blocked_load`, `last_blocked_load_update_tick`, `next_balance`, `idle_balance`, `nohz_idle_balance`, `avg_idle`, domain facts (the LLC view, `imbalance_pct`, `arch_capacity`) | this CPU, the ILB on its behalf, the domain build | this CPU, the ILB, the busy tick's kick |
//!
//! So a kicker's `fetch_or` on `nohz_flags` never invalidates the line that ILB scans read for
//! `idle_cpu()`. Every field is an atomic: the racy kernel accesses are `Relaxed` loads and
//! stores; the only ordered accesses are the two `nohz_flags` RMWs of the kick hand-over
//! (spec §6 O3), taken from named sites in [`sync`](crate::sync).
//!
//! # `has_blocked_load`: a set count and a decayed-up-to count
//!
//! The kernel sets `rq->has_blocked_load` without a lock (`nohz_balance_enter_idle`, on the
//! owning CPU) and clears it under the rq lock once a decay found nothing left
//! (`update_blocked_load_status`); the lock is what makes the unlocked set safe (spec §5.5,
//! §5.6). The crate holds no lock: the platform's decay takes and drops the rq lock inside
//! [`Balance::update_blocked_averages`](crate::platform::Balance::update_blocked_averages), and
//! the crate clears afterwards. A plain clear there would erase a set the owner made after the
//! decay left the lock (it ran a task that blocked, then went idle again), and that CPU would
//! be skipped by every later pass with its new load never decayed.
//!
//! So the flag is two counts, each with one kind of writer:
//!
//! - `blocked_load_sets`: how many times the owner set the flag. Only the owning CPU writes
//!   it, storing its own last count plus one (a swap on `Scalable`'s idempotent path, where a
//!   fence must follow an RMW); it only grows and is never reset (at one set a nanosecond, 64
//!   bits last 584 years). A caller running `nohz_balance_enter_idle` for another CPU, which counts a
//!   `WrongCpu` warning, would be a second writer and could make two sets share a count.
//! - `blocked_load_decayed`: the set count an updater read *before* a decay that then found
//!   nothing left (`BlockedLoadSnapshot`). Only updaters write it, with a plain store.
//!
//! The flag is set while the two differ. A clear stores the count read before the decay, so it
//! covers exactly the sets made up to that reading: a set made since keeps the counts apart
//! until a decay that began after it finds nothing left. Two passes updating the same rq at
//! once each store their own reading; an older one landing last makes the counts differ again,
//! which costs one extra decay, never a lost one.
//!
//! Every access is `Relaxed`, and that is enough:
//!
//! - *A clear never covers a set made after its reading.* The set count has a single writer
//!   and only grows, so a set the reading did not return put a larger count there, which the
//!   stored reading stays below for good. That is coherence of one location, whatever the
//!   ordering.
//! - *A set that a clear covers stands for load the decay saw.* Such a set is one the reading
//!   returned (or an earlier one). The owner's new blocked load was left on the rq under the
//!   rq lock (its task blocked there), and the owner set the flag after releasing the lock;
//!   the updater read the count, then the platform decayed under the lock. Had the decay's critical section come first, the lock's own release/acquire would
//!   make the reading happen before the owner's set, and a read cannot return a write that
//!   happens after it. So the owner's critical section came first and the decay saw its load;
//!   if it still found nothing left, that load is decayed and the clear is right. The ordering
//!   this needs is the lock's, not the counts'.
//! - *Readers* (`update_nohz_stats`; the kick only sees `nohz.has_blocked_load`) load both
//!   counts racily, as the kernel reads the flag: a stale set count may miss a recent set, the
//!   staleness the kernel accepts (spec §6 O5, O6); a stale decayed count only makes the flag
//!   read as set.
//!
//! Compared with the kernel's locked clear the outcome is the same, except that a set landing
//! during the decay, whose load the decay then saw and found gone, keeps the flag for one more
//! pass where the kernel would clear it: an extra decay, never a lost one.
//! `loom-tests/tests/blocked_load_set_vs_clear.rs` checks it against a model of the rq lock.
//!
//! Why not one word whose clear is a compare-exchange against the reading? It would be as
//! correct in the memory model, but its clear would race the owner's plain store, and loom 0.7
//! explores that pair wrongly (tokio-rs/loom#254: the store may slip between the exchange's
//! read and its write, an outcome the memory model forbids), so it could be checked only with
//! every set an RMW: a locked instruction on each idle entry, which the kernel does not pay.
//! Here no RMW races a store. The owner's set is never a compare-exchange either:
//! `ci/guards.sh` (T9) checks that `nohz_balance_enter_idle` has none.

use crate::jiffies::Jiffies;
use crate::sync::{
    AtomicBool, AtomicU32, AtomicU64, AtomicUsize, NOHZ_CSD_FETCH_ANDNOT, NOHZ_KICK_FETCH_OR,
    Ordering::Relaxed,
};
use crossbeam_utils::CachePadded;

bitflags::bitflags! {
    /// The pending idle-balance work bits of a runqueue (`NOHZ_*_KICK`, spec §4.1).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct NohzFlags: u32 {
        /// `NOHZ_BALANCE_KICK`: run periodic balancing for the idle CPUs.
        #[doc(alias = "NOHZ_BALANCE_KICK")]
        const BALANCE = 0x1;
        /// `NOHZ_STATS_KICK`: refresh the idle CPUs' blocked-load averages.
        #[doc(alias = "NOHZ_STATS_KICK")]
        const STATS = 0x2;
        /// `NOHZ_NEWILB_KICK`: local request from newidle to refresh blocked load before
        /// entering idle; never sent by IPI.
        #[doc(alias = "NOHZ_NEWILB_KICK")]
        const NEWILB = 0x4;
        /// `NOHZ_NEXT_KICK`: recompute `nohz.next_balance` only.
        #[doc(alias = "NOHZ_NEXT_KICK")]
        const NEXT = 0x8;
    }
}

impl crate::base::accessors::Relaxed for NohzFlags {
    type Raw = u32;
    #[inline(always)]
    fn from_raw(raw: u32) -> Self {
        NohzFlags::from_bits_retain(raw)
    }
    #[inline(always)]
    fn into_raw(self) -> u32 {
        self.bits()
    }
}

impl NohzFlags {
    /// `NOHZ_KICK_MASK`: the bits whose transition from all-clear to any-set makes the kicker
    /// the owner of the target's csd (NEWILB is not among them).
    #[doc(alias = "NOHZ_KICK_MASK")]
    pub const KICK_MASK: NohzFlags = NohzFlags::BALANCE
        .union(NohzFlags::STATS)
        .union(NohzFlags::NEXT);
}

/// `rq->nohz_flags`: an atomic [`NohzFlags`] word, written by remote kickers and by its own CPU.
#[derive(Debug)]
pub struct AtomicNohzFlags(AtomicU32);

impl AtomicNohzFlags {
    crate::maybe_const_fn! {
        /// No bits set.
        #[inline]
        pub fn new() -> Self {
            AtomicNohzFlags(AtomicU32::new(0))
        }
    }

    /// `atomic_read(nohz_flags(cpu))`: a relaxed load.
    #[inline]
    pub fn load(&self) -> NohzFlags {
        NohzFlags::from_bits_retain(self.0.load(Relaxed))
    }

    /// The kicker's `atomic_fetch_or` (kick_ilb): returns the bits that were set before.
    #[inline]
    pub(crate) fn kick(&self, flags: NohzFlags) -> NohzFlags {
        NohzFlags::from_bits_retain(self.0.fetch_or(flags.bits(), NOHZ_KICK_FETCH_OR.ordering()))
    }

    /// The handler's `atomic_fetch_andnot(NOHZ_KICK_MASK | NOHZ_NEWILB_KICK)` (nohz_csd_func):
    /// consumes every pending bit and returns them.
    #[inline]
    pub(crate) fn take_for_csd(&self) -> NohzFlags {
        let clear = NohzFlags::KICK_MASK | NohzFlags::NEWILB;
        NohzFlags::from_bits_retain(
            self.0
                .fetch_and(!clear.bits(), NOHZ_CSD_FETCH_ANDNOT.ordering()),
        )
    }

    /// `atomic_or(NOHZ_NEWILB_KICK)` on the owning CPU (nohz_newidle_balance). Relaxed: nothing
    /// is published through NEWILB (spec §6 O8).
    #[inline]
    pub(crate) fn request_newilb(&self) {
        self.0.fetch_or(NohzFlags::NEWILB.bits(), Relaxed);
    }

    /// `atomic_fetch_andnot(NOHZ_NEWILB_KICK)` on the owning CPU (nohz_run_idle_balance).
    ///
    /// Relaxed, although the kernel's RMW is fully ordered: this consumer leaves the kick bits
    /// alone and consumes no kicker's data (only `nohz_csd_func`'s AcqRel RMW does), and the
    /// STATS pass it may start carries its own fence (O1). Spec §6 O8.
    #[inline]
    pub(crate) fn take_newilb(&self) -> NohzFlags {
        NohzFlags::from_bits_retain(self.0.fetch_and(!NohzFlags::NEWILB.bits(), Relaxed))
    }
}

impl Default for AtomicNohzFlags {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// The run-queue facts the scheduler keeps and the crate reads (the kick's busy tests,
/// `idle_cpu()`), set together by [`Machine::update_rq`](crate::Machine::update_rq).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RqFacts {
    /// `rq->nr_running`: tasks on this run queue, the running one included (0: only the idle
    /// task).
    pub nr_running: u32,
    /// `rq->cfs.h_nr_runnable`: runnable fair-class tasks (a kernel with one class of tasks
    /// answers `nr_running`).
    pub h_nr_runnable: u32,
    /// `rq->curr == rq->idle`: the idle task is current.
    pub curr_is_idle: bool,
}

impl RqFacts {
    /// A run queue with `n` tasks of one class, the idle task current exactly when `n` is 0:
    /// what a kernel with a single scheduling class reports.
    #[inline]
    pub const fn tasks(n: u32) -> Self {
        RqFacts {
            nr_running: n,
            h_nr_runnable: n,
            curr_is_idle: n == 0,
        }
    }

    /// A run queue with `nr_running` tasks of one class and the idle task current or not: a
    /// CPU with work queued can still be running its idle task (a wakeup before the switch).
    #[inline]
    pub const fn one_class(nr_running: u32, curr_is_idle: bool) -> Self {
        RqFacts {
            nr_running,
            h_nr_runnable: nr_running,
            curr_is_idle,
        }
    }
}

/// "No CPU" in the per-rq LLC leader field, which holds the leader's index plus one: 0, so a
/// fresh runqueue is all zeros (a `static` machine lands in `.bss`).
const NO_CPU: u32 = 0;

/// A reading of `rq.has_blocked_load`'s set count taken before a decay. The clear after the
/// decay, [`Rq::clear_has_blocked_load`], covers the sets up to this reading and no later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockedLoadSnapshot(u64);

/// Fields read remotely on hot paths; written by the kernel on this CPU.
#[derive(Debug)]
struct Hot {
    nr_running: AtomicU32,
    ttwu_pending: AtomicBool,
    /// The idle task is *not* current: stored inverted, so that a fresh runqueue (idle task
    /// current) is all zeros.
    curr_busy: AtomicBool,
    h_nr_runnable: AtomicU32,
    /// `cpu_capacity` XOR `SCHED_CAPACITY_SCALE`: zero for a full-capacity CPU, so a fresh
    /// runqueue is all zeros.
    cpu_capacity_xor_scale: AtomicU64,
    misfit_task_load: AtomicU64,
}

/// Fields remote CPUs write: the kick word and the csd it guards.
#[derive(Debug)]
struct Kick {
    nohz_flags: AtomicNohzFlags,
    csd_busy: AtomicBool,
}

/// NOHZ bookkeeping: this CPU's, and the ILB's on its behalf.
#[derive(Debug)]
struct RqNohz {
    nohz_tick_stopped: AtomicBool,
    // `has_blocked_load` is `blocked_load_sets != blocked_load_decayed` (module docs): how
    // many times the owner set it, and the set count the last clearing decay began from.
    blocked_load_sets: AtomicU64,
    blocked_load_decayed: AtomicU64,
    last_blocked_load_update_tick: AtomicUsize,
    next_balance: AtomicUsize,
    idle_balance: AtomicBool,
    nohz_idle_balance: AtomicU32,
    // This CPU's `SCHED_SOFTIRQ` pending bit: raised and consumed only on this CPU.
    sched_softirq: AtomicBool,
    avg_idle: AtomicU64,
    // Domain facts, rebuilt with the topology. `has_domain` is one word, read racily (a
    // reader sees the old or the new answer, as with the kernel's `rq->sd`). The LLC leader and
    // `nohz_idle` are the check-then-act pair of the LLC busy count: two copies, one per domain
    // generation (the machine's generation word says which is current), so a rebuild writes
    // the copy nobody uses and publishes it at once (see `Machine::rebuild_sched_domains`).
    // The capacity facts the kick reads ride in the same copies, so that a kick reads the
    // pair one build wrote.
    has_domain: AtomicBool,
    sd: [SdSlot; 2],
    sd_capacity: [SdCapacity; 2],
}

/// One domain generation's view of this CPU's LLC: the kernel's `sd_llc` and its
/// `nohz_idle`.
#[derive(Debug)]
pub(crate) struct SdSlot {
    /// The LLC leader's index plus one, or [`NO_CPU`].
    llc_leader: AtomicU32,
    /// `sd_llc->nohz_idle`: this CPU does not count as busy in that generation's LLC.
    nohz_idle: AtomicBool,
}

/// One domain generation's capacity facts of this CPU: what `check_cpu_capacity` reads of the
/// base domain (`sd->imbalance_pct`) and of the CPU (`arch_scale_cpu_capacity`), taken from
/// the platform when the generation is built, so that the busy tick asks the platform
/// nothing. Apart from [`SdSlot`], which idle entry and exit index on their hot path: keeping
/// that slot 8 bytes keeps their address arithmetic, and the not-due kick's prologue, as they
/// were (`ci/guards.sh`, T5a).
#[derive(Debug)]
pub(crate) struct SdCapacity {
    /// `rq->sd->imbalance_pct`.
    imbalance_pct: AtomicU32,
    /// `arch_scale_cpu_capacity(cpu)`.
    arch_capacity: AtomicU64,
}

impl SdCapacity {
    crate::maybe_const_fn! {
        fn new() -> Self {
            SdCapacity {
                imbalance_pct: AtomicU32::new(0),
                arch_capacity: AtomicU64::new(0),
            }
        }
    }

    /// `sd->imbalance_pct` of this CPU's base domain in this generation.
    #[inline]
    pub(crate) fn imbalance_pct(&self) -> u32 {
        self.imbalance_pct.load(Relaxed)
    }

    /// `arch_scale_cpu_capacity(cpu)` as this generation's build read it.
    #[inline]
    pub(crate) fn arch_capacity(&self) -> u64 {
        self.arch_capacity.load(Relaxed)
    }
}

impl SdSlot {
    crate::maybe_const_fn! {
        fn new() -> Self {
            SdSlot {
                llc_leader: AtomicU32::new(NO_CPU),
                nohz_idle: AtomicBool::new(false),
            }
        }
    }

    /// The LLC leader in this generation, if the CPU has an LLC domain there.
    #[inline]
    pub(crate) fn llc_leader(&self) -> Option<usize> {
        let leader = self.llc_leader.load(Relaxed);
        (leader != NO_CPU).then(|| leader as usize - 1)
    }

    /// `sd_llc->nohz_idle` in this generation.
    #[inline]
    pub(crate) fn nohz_idle(&self) -> bool {
        self.nohz_idle.load(Relaxed)
    }

    #[inline]
    pub(crate) fn set_nohz_idle(&self, idle: bool) {
        self.nohz_idle.store(idle, Relaxed);
    }
}

/// The NOHZ view of one CPU's runqueue (`struct rq`).
///
/// The crate reads the scheduler's fields and writes the NOHZ ones; the embedding kernel keeps
/// the scheduler's fields current with the `set_*` methods (each a relaxed store, as the
/// kernel's plain writes are).
#[doc(alias = "rq")]
#[derive(Debug)]
pub struct Rq {
    hot: CachePadded<Hot>,
    kick: CachePadded<Kick>,
    nohz: CachePadded<RqNohz>,
}

impl Rq {
    crate::maybe_const_fn! {
        /// A runqueue running its idle task with nothing queued, full capacity, no domain
        /// facts yet (the topology build fills them in).
        pub fn new() -> Self {
            Rq {
                hot: CachePadded::new(Hot {
                    nr_running: AtomicU32::new(0),
                    ttwu_pending: AtomicBool::new(false),
                    curr_busy: AtomicBool::new(false),
                    h_nr_runnable: AtomicU32::new(0),
                    cpu_capacity_xor_scale: AtomicU64::new(0),
                    misfit_task_load: AtomicU64::new(0),
                }),
                kick: CachePadded::new(Kick {
                    nohz_flags: AtomicNohzFlags::new(),
                    csd_busy: AtomicBool::new(false),
                }),
                nohz: CachePadded::new(RqNohz {
                    nohz_tick_stopped: AtomicBool::new(false),
                    blocked_load_sets: AtomicU64::new(0),
                    blocked_load_decayed: AtomicU64::new(0),
                    last_blocked_load_update_tick: AtomicUsize::new(0),
                    next_balance: AtomicUsize::new(0),
                    idle_balance: AtomicBool::new(false),
                    nohz_idle_balance: AtomicU32::new(0),
                    sched_softirq: AtomicBool::new(false),
                    avg_idle: AtomicU64::new(0),
                    has_domain: AtomicBool::new(false),
                    sd: [SdSlot::new(), SdSlot::new()],
                    sd_capacity: [SdCapacity::new(), SdCapacity::new()],
                }),
            }
        }
    }

    /// `idle_cpu(cpu)`: the idle task is current, nothing is runnable and no remote wakeup is
    /// queued (spec §2.5). Three racy reads, in the kernel's order, stopping at the first
    /// that says busy.
    #[inline]
    pub fn idle_cpu(&self) -> bool {
        !self.hot.curr_busy.load(Relaxed)
            && self.hot.nr_running.load(Relaxed) == 0
            && !self.hot.ttwu_pending.load(Relaxed)
    }

    // ---- the scheduler's fields, kept current by the kernel ----

    /// Whether the idle task is current (`rq->curr == rq->idle`).
    #[inline(always)]
    pub fn curr_is_idle(&self) -> bool {
        !self.hot.curr_busy.load(Relaxed)
    }
    crate::base::accessors::testing_pub! {
        /// Sets [`curr_is_idle`](Self::curr_is_idle) (the embedding sets it through
        /// [`Machine::update_rq`](crate::Machine::update_rq)).
        #[inline(always)]
        fn set_curr_is_idle(&self, idle: bool) {
            self.hot.curr_busy.store(!idle, Relaxed);
        }
    }
    /// `rq->cpu_capacity`: capacity left after RT/DL/IRQ pressure.
    #[inline(always)]
    pub fn cpu_capacity(&self) -> u64 {
        self.hot.cpu_capacity_xor_scale.load(Relaxed) ^ crate::platform::SCHED_CAPACITY_SCALE
    }
    /// Sets [`cpu_capacity`](Self::cpu_capacity).
    #[inline(always)]
    pub fn set_cpu_capacity(&self, capacity: u64) {
        self.hot
            .cpu_capacity_xor_scale
            .store(capacity ^ crate::platform::SCHED_CAPACITY_SCALE, Relaxed);
    }

    crate::base::accessors::relaxed_accessors! {
        /// `rq->nr_running` (the embedding sets it through
        /// [`Machine::update_rq`](crate::Machine::update_rq)).
        pub nr_running: u32 = hot.nr_running; => testing set_nr_running;
        /// `rq->ttwu_pending`: a remote wakeup is queued for this CPU (`ttwu_queue`). A kernel
        /// that queues wakeups on the target sets it there and clears it as the target runs
        /// the queue; a kernel that does not leaves it false.
        pub ttwu_pending: bool = hot.ttwu_pending; => pub set_ttwu_pending;
        /// `rq->cfs.h_nr_runnable` (set through [`Machine::update_rq`](crate::Machine::update_rq)).
        pub h_nr_runnable: u32 = hot.h_nr_runnable; => testing set_h_nr_runnable;
        /// `rq->misfit_task_load`: nonzero when the current task does not fit this CPU.
        pub misfit_task_load: u64 = hot.misfit_task_load; => pub set_misfit_task_load;
        /// `rq->avg_idle` in nanoseconds: how long this CPU is expected to stay idle. 0 in a
        /// fresh `Rq`; [`Machine::init`](crate::Machine::init) starts it at
        /// `2 * SCHED_MIGRATION_COST_NS`, as `sched_init` does, and the embedding updates it as
        /// the scheduler measures idle periods.
        pub avg_idle: u64 = nohz.avg_idle; => pub set_avg_idle;
        /// `rq->next_balance`: this runqueue's next periodic balance.
        pub next_balance: Jiffies = nohz.next_balance; => testing set_next_balance;
    }

    // ---- NOHZ fields, owned by the crate ----

    crate::base::accessors::testing_pub! {
        /// `rq->nohz_flags`.
        #[inline]
        fn nohz_flags(&self) -> &AtomicNohzFlags {
            &self.kick.nohz_flags
        }
    }
    crate::base::accessors::relaxed_accessors! {
        /// `rq->nohz_tick_stopped`: this CPU is registered in `nohz.idle_cpus_mask`.
        pub nohz_tick_stopped: bool = nohz.nohz_tick_stopped; => pub(crate) set_nohz_tick_stopped;
        /// `rq->last_blocked_load_update_tick`.
        testing last_blocked_load_update_tick: Jiffies = nohz.last_blocked_load_update_tick; => pub(crate) set_last_blocked_load_update_tick;
        /// `rq->idle_balance`: the `idle_cpu()` snapshot taken by the tick or the csd handler.
        testing idle_balance: bool = nohz.idle_balance; => pub(crate) set_idle_balance;
        /// `rq->nohz_idle_balance`: the flags handed from the csd handler to the softirq.
        testing nohz_idle_balance: NohzFlags = nohz.nohz_idle_balance; => pub(crate) set_nohz_idle_balance;
        /// This CPU's `SCHED_SOFTIRQ` is raised and has not run yet (its bit in
        /// `local_softirq_pending()`).
        testing sched_softirq_pending: bool = nohz.sched_softirq;
        /// Whether the csd is queued or its handler not yet started (`CSD_FLAG_LOCK`).
        testing csd_busy: bool = kick.csd_busy;
        /// Whether this CPU has a base scheduling domain (`rq->sd != NULL`).
        testing has_sched_domain: bool = nohz.has_domain;
    }
    /// `raise_softirq_irqoff(SCHED_SOFTIRQ)` on this CPU, the owner, with interrupts off:
    /// sets the crate's pending bit, then tells the platform.
    #[inline]
    pub(crate) fn raise_sched_softirq<Pl: crate::platform::Softirq<N>, const N: usize>(
        &self,
        cpu: crate::cpu::CpuId<N>,
        plat: &Pl,
    ) {
        self.nohz.sched_softirq.store(true, Relaxed);
        plat.raise_sched_softirq(cpu);
    }

    /// Takes `rq->nohz_tick_stopped` (leaves it false): whether it was set. One swap, where the
    /// C has a load and a store, for `nohz_balance_exit_idle` on the hotplug thread
    /// ([`sched_cpu_deactivate`](crate::Machine::sched_cpu_deactivate), interrupts on), which
    /// this CPU's tick may interrupt and exit too.
    #[inline]
    pub(crate) fn take_nohz_tick_stopped(&self) -> bool {
        self.nohz.nohz_tick_stopped.swap(false, Relaxed)
    }

    /// Consumes this CPU's `SCHED_SOFTIRQ` pending bit, on its own CPU (`__do_softirq` clears
    /// the pending bits before it runs the handlers): whether it was set.
    #[inline]
    pub(crate) fn take_sched_softirq(&self) -> bool {
        let pending = self.nohz.sched_softirq.load(Relaxed);
        if pending {
            self.nohz.sched_softirq.store(false, Relaxed);
        }
        pending
    }

    /// `rq->has_blocked_load`: this runqueue may have blocked load left to decay (some set
    /// is not yet covered by a decay that found nothing left).
    #[inline]
    pub fn has_blocked_load(&self) -> bool {
        self.nohz.blocked_load_sets.load(Relaxed) != self.nohz.blocked_load_decayed.load(Relaxed)
    }

    /// The set count an owner's set stores: one past its own last.
    ///
    /// Only the owning CPU writes the count, so this load returns its own last store (a CPU
    /// never reads a value older than its own last store, and nobody else stores one).
    #[inline]
    fn next_blocked_load_set(&self) -> u64 {
        self.nohz.blocked_load_sets.load(Relaxed).wrapping_add(1)
    }

    /// `rq->has_blocked_load = 1` on the owning CPU (`nohz_balance_enter_idle`): a plain store
    /// of the next set count, which no clear made from an earlier reading covers.
    #[inline]
    pub(crate) fn set_has_blocked_load(&self) {
        let next = self.next_blocked_load_set();
        self.nohz.blocked_load_sets.store(next, Relaxed);
    }

    /// [`Self::set_has_blocked_load`] as an atomic swap (the old value unused): an RMW, so a
    /// fence after an RMW (`Site::fence_after_rmw`) may follow it. For a `nohz` line hook whose
    /// repeat entry fences there (`Scalable`'s); a build without one has no caller.
    #[cfg(feature = "scalable")]
    #[inline]
    pub(crate) fn raise_has_blocked_load(&self) {
        let next = self.next_blocked_load_set();
        self.nohz.blocked_load_sets.swap(next, Relaxed);
    }

    /// Reads `rq->has_blocked_load`'s set count before a decay: what
    /// [`Self::clear_has_blocked_load`] then covers.
    #[inline]
    pub(crate) fn blocked_load_snapshot(&self) -> BlockedLoadSnapshot {
        BlockedLoadSnapshot(self.nohz.blocked_load_sets.load(Relaxed))
    }

    /// `update_blocked_load_status(rq, false)`'s clear of `rq->has_blocked_load`, limited to
    /// the sets made up to `since`, the reading taken before the decay: a set that landed
    /// after it survives (the kernel gets the same from clearing under the rq lock; see the
    /// module docs). Writes nothing if the flag was already clear as of `since`.
    #[doc(alias = "update_blocked_load_status")]
    #[inline]
    pub(crate) fn clear_has_blocked_load(&self, since: BlockedLoadSnapshot) {
        if self.nohz.blocked_load_decayed.load(Relaxed) != since.0 {
            self.nohz.blocked_load_decayed.store(since.0, Relaxed);
        }
    }

    /// The clear as the crate made it before it became conditional: every set made so far is
    /// covered, including those since the decay began (the set count is read now, not before
    /// the decay). For the `testing` feature only, behind
    /// `internals::clear_has_blocked_load_unconditionally`, so a loom model can show the set it
    /// erases; nothing in the crate calls it.
    #[cfg(feature = "testing")]
    #[inline]
    pub(crate) fn clear_has_blocked_load_unconditionally(&self) {
        let now = self.nohz.blocked_load_sets.load(Relaxed);
        self.nohz.blocked_load_decayed.store(now, Relaxed);
    }

    /// `csd_lock`: true if this call took the csd (it was free). Relaxed: the owner reached
    /// here through the AcqRel `fetch_or` that read the handler's release of the bits, which
    /// the handler issued after freeing the csd (spec §6 O3).
    #[inline]
    pub(crate) fn csd_lock(&self) -> bool {
        !self.kick.csd_busy.swap(true, Relaxed)
    }
    /// `csd_unlock`: frees the csd; its handler does this before running the callback.
    #[inline]
    pub(crate) fn csd_unlock(&self) -> bool {
        self.kick.csd_busy.swap(false, Relaxed)
    }
    /// This CPU's LLC view in domain generation slot `slot` (0 or 1).
    #[inline]
    pub(crate) fn sd(&self, slot: usize) -> &SdSlot {
        &self.nohz.sd[slot & 1]
    }
    /// This CPU's capacity facts in domain generation slot `slot` (0 or 1).
    #[inline]
    pub(crate) fn sd_capacity(&self, slot: usize) -> &SdCapacity {
        &self.nohz.sd_capacity[slot & 1]
    }
    /// Installs rebuilt domain facts in the unused generation slot `slot`: the base-domain
    /// answer (one word, seen at once), the LLC leader with `nohz_idle` at 0, as in a fresh
    /// domain, and the capacity facts (`imbalance_pct`, `arch_capacity`).
    #[inline]
    pub(crate) fn set_domains(
        &self,
        slot: usize,
        has_domain: bool,
        llc_leader: Option<usize>,
        (imbalance_pct, arch_capacity): (u32, u64),
    ) {
        self.nohz.has_domain.store(has_domain, Relaxed);
        let sd = self.sd(slot);
        sd.llc_leader
            .store(llc_leader.map_or(NO_CPU, |l| l as u32 + 1), Relaxed);
        sd.nohz_idle.store(false, Relaxed);
        let capacity = self.sd_capacity(slot);
        capacity.imbalance_pct.store(imbalance_pct, Relaxed);
        capacity.arch_capacity.store(arch_capacity, Relaxed);
    }
}

impl Default for Rq {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    use super::*;

    #[test]
    fn idle_cpu_needs_all_three() {
        let rq = Rq::new();
        assert!(rq.idle_cpu());
        rq.set_nr_running(1);
        assert!(!rq.idle_cpu());
        rq.set_nr_running(0);
        rq.set_ttwu_pending(true);
        assert!(!rq.idle_cpu());
        rq.set_ttwu_pending(false);
        rq.set_curr_is_idle(false);
        assert!(!rq.idle_cpu());
        rq.set_curr_is_idle(true);
        assert!(rq.idle_cpu());
    }

    #[test]
    fn flag_values_match_the_kernel() {
        assert_eq!(NohzFlags::BALANCE.bits(), 0x1);
        assert_eq!(NohzFlags::STATS.bits(), 0x2);
        assert_eq!(NohzFlags::NEWILB.bits(), 0x4);
        assert_eq!(NohzFlags::NEXT.bits(), 0x8);
        assert_eq!(NohzFlags::KICK_MASK.bits(), 0xB);
    }

    #[test]
    fn kick_word_operations() {
        let f = AtomicNohzFlags::new();
        f.request_newilb();
        assert_eq!(f.kick(NohzFlags::STATS), NohzFlags::NEWILB);
        assert_eq!(
            f.kick(NohzFlags::NEXT),
            NohzFlags::NEWILB | NohzFlags::STATS
        );
        assert_eq!(
            f.take_newilb(),
            NohzFlags::NEWILB | NohzFlags::STATS | NohzFlags::NEXT
        );
        assert_eq!(f.load(), NohzFlags::STATS | NohzFlags::NEXT);
        f.request_newilb();
        assert_eq!(
            f.take_for_csd(),
            NohzFlags::STATS | NohzFlags::NEXT | NohzFlags::NEWILB
        );
        assert_eq!(f.load(), NohzFlags::empty());
    }

    #[test]
    fn a_clear_covers_the_sets_up_to_its_reading_and_no_later_one() {
        let rq = Rq::new();
        assert!(!rq.has_blocked_load());
        let clear = rq.blocked_load_snapshot();
        rq.set_has_blocked_load();
        assert!(rq.has_blocked_load());
        rq.clear_has_blocked_load(clear);
        assert!(
            rq.has_blocked_load(),
            "clear at the reading: the set after it stays"
        );

        // A set between reading and clear survives, though the flag was already set at the
        // reading (the counts tell the two sets apart).
        let before = rq.blocked_load_snapshot();
        rq.raise_has_blocked_load();
        rq.clear_has_blocked_load(before);
        assert!(rq.has_blocked_load(), "a set since the reading stays");

        // No set since: the clear takes effect.
        let now = rq.blocked_load_snapshot();
        rq.clear_has_blocked_load(now);
        assert!(!rq.has_blocked_load());
        assert_eq!(now.0, 2, "two sets, counted");

        // Two passes read the same count; the first clears, the owner sets again, and the
        // second's clear from the same reading leaves the new set alone (no ABA: the count
        // only grows).
        rq.set_has_blocked_load();
        let (a, b) = (rq.blocked_load_snapshot(), rq.blocked_load_snapshot());
        rq.clear_has_blocked_load(a);
        assert!(!rq.has_blocked_load());
        rq.set_has_blocked_load();
        rq.clear_has_blocked_load(b);
        assert!(rq.has_blocked_load());
        // An older reading landing after a newer clear only makes the flag read as set.
        let newer = rq.blocked_load_snapshot();
        rq.clear_has_blocked_load(newer);
        rq.clear_has_blocked_load(a);
        assert!(rq.has_blocked_load(), "spurious, never lost");
        rq.clear_has_blocked_load(newer);
        assert!(!rq.has_blocked_load());
    }

    #[test]
    fn hot_kick_and_nohz_groups_sit_on_separate_lines() {
        let rq = Rq::new();
        let line = core::mem::align_of::<CachePadded<u8>>();
        let hot = &*rq.hot as *const Hot as usize;
        let kick = &*rq.kick as *const Kick as usize;
        let nohz = &*rq.nohz as *const RqNohz as usize;
        assert!(
            hot / line != kick / line && kick / line != nohz / line && hot / line != nohz / line
        );
        assert_eq!(core::mem::size_of::<Rq>() % line, 0);
    }
}
