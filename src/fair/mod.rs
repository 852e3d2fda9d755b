//! fair.c's NOHZ idle load balancing: [`Fair`], the `nohz` global ([`Nohz`]), every CPU's
//! [`Rq`], the per-LLC busy counts.
//!
//! C source: `kernel/sched/fair.c` (the `nohz` struct, `nohz_balance_enter_idle`,
//! `nohz_balance_exit_idle`, `nohz_balancer_kick`, `kick_ilb`, `find_new_ilb`,
//! `_nohz_idle_balance`, `nohz_newidle_balance`, `nohz_run_idle_balance`).
//!
//! # Design
//!
//! [`Fair`] holds fair.c's NOHZ state; the [`Machine`](crate::Machine) owns it and calls its
//! paths, each of which takes the CPU it acts for, the machine's [`Cpus`] (`nr_cpu_ids`, the
//! active mask, the warning counters) and the platform that answers questions and performs
//! actions.
//!
//! **Who writes what.**
//! - `nohz.idle_cpus_mask`: each CPU sets its own bit in `nohz_balance_enter_idle` and clears it in
//!   `nohz_balance_exit_idle`, on its own CPU. Everybody reads it (the kick's emptiness test, ILB selection,
//!   the ILB scan). It fills lines of its own.
//! - the `nohz` scalars (`has_blocked_load`, `needs_update`, `next_balance`, `next_blocked`,
//!   and for [`Legacy`](crate::Legacy) the `nr_cpus` counter): stored by idle entry and by ILB
//!   passes, read by every busy tick. One line of their own, as the kernel's struct; the
//!   policy's hooks keep their state beside them there (`hooks`: none for the kernel's).
//! - a CPU's `nohz_flags`: set by remote kickers, consumed by that CPU.
//! - per-LLC `nr_busy_cpus`: decremented and incremented by the LLC's CPUs as they register and
//!   leave; reset by a topology rebuild.
//!
//! **Which barrier pairs with which** (spec §6): `nohz_balance_enter_idle`'s fence after setting the mask bit
//! pairs with `_nohz_idle_balance`'s fence after clearing the flags (O1, O2); `kick_ilb`'s
//! `fetch_or` pairs with `nohz_csd_func`'s `fetch_andnot` (O3). Every other access is a racy
//! `Relaxed` one whose staleness the kernel tolerates (O5, O6): consumers re-check
//! `idle_cpu()`, and the worst case is a late or an extra kick.
//!
//! The paths live in `idle.rs` (enter/exit), `kick.rs` (the balance trigger, the kick, ILB
//! selection), `balance.rs` (the softirq, the ILB pass, newidle) and `topology.rs` (the
//! domain build's per-LLC state); `hooks.rs` declares the [`Policy`] trait and the two hooks
//! through which the policies beyond the kernel (`src/beyond/`, which uses this room) enter
//! these paths.

mod balance;
pub(crate) mod hooks;
mod idle;
mod kick;
pub mod rq;
mod topology;

#[cfg(feature = "testing")]
pub use balance::IlbPass;
pub use balance::SCHED_MIGRATION_COST_NS;
pub(crate) use idle::ExitFrom;
pub use kick::{KickDecision, KickOutcome};

use crate::cpu::{CpuId, NrCpuIds, PerCpu};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::static_key::StaticKey;
use crate::sync::{AtomicI32, AtomicU32, AtomicUsize, Ordering::Relaxed, SCHED_DOMAINS_LOAD};
use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use crossbeam_utils::CachePadded;
#[cfg(feature = "sharded")]
use hooks::ShardMapError;
use hooks::{IdleCpu, IdleCpus, IdleLine, NohzLine, Policy};
use rq::Rq;

/// The kernel's `nohz` scalars, as its struct has them.
#[derive(Debug)]
pub struct Scalars {
    /// `Legacy` only: `atomic_t nr_cpus`, removed by seed 000.
    pub(crate) nr_cpus: AtomicU32,
    pub(crate) has_blocked_load: AtomicU32,
    pub(crate) needs_update: AtomicU32,
    pub(crate) next_balance: AtomicUsize,
    pub(crate) next_blocked: AtomicUsize,
    /// `Legacy` only: the plain `int sched_clock_irqtime` that shared this line before seed
    /// 003 made it a static key (read on every interrupt, beside words written on every idle
    /// entry and exit).
    pub(crate) legacy_irqtime: AtomicU32,
}

/// The `nohz` scalar line: the kernel's [`Scalars`], and beside them what the policy's hooks
/// keep there (its `nohz` line's state, the idle set's words), so the busy tick still reads
/// one line. The kernel's hooks keep nothing. It reads as the scalars (`Deref`).
#[derive(Debug)]
pub(crate) struct ScalarLine<P: Policy, const W: usize> {
    scalars: Scalars,
    /// The `nohz` line hook's state (`NohzLine`).
    pub(crate) hook: P::NohzLine,
    /// The idle set's words on this line (`IdleCpus::Line`).
    pub(crate) idle_set: IdleLine<P, W>,
}

impl<P: Policy, const W: usize> Deref for ScalarLine<P, W> {
    type Target = Scalars;
    #[inline(always)]
    fn deref(&self) -> &Scalars {
        &self.scalars
    }
}

/// One CPU's per-CPU slot in [`Fair`]: its runqueue and, beside it, what the policy's idle set
/// keeps for it (`IdleCpus::Cpu`; nothing for the kernel's mask, so the slot is the runqueue).
/// It reads as its runqueue (`Deref`).
#[derive(Debug)]
pub struct CpuSlot<X> {
    pub(crate) rq: Rq,
    pub(crate) idle_set: X,
}

impl<X> Deref for CpuSlot<X> {
    type Target = Rq;
    #[inline(always)]
    fn deref(&self) -> &Rq {
        &self.rq
    }
}

impl Scalars {
    /// `nohz.has_blocked_load`.
    #[inline(always)]
    pub(crate) fn has_blocked_load(&self) -> bool {
        self.has_blocked_load.load(Relaxed) != 0
    }

    /// `nohz.needs_update`.
    #[inline(always)]
    pub(crate) fn needs_update(&self) -> bool {
        self.needs_update.load(Relaxed) != 0
    }

    /// `nohz.next_balance`.
    #[inline(always)]
    pub(crate) fn next_balance(&self) -> Jiffies {
        Jiffies::new(self.next_balance.load(Relaxed))
    }

    /// `nohz.next_blocked`.
    #[inline(always)]
    pub(crate) fn next_blocked(&self) -> Jiffies {
        Jiffies::new(self.next_blocked.load(Relaxed))
    }
}

/// The `nohz` global of fair.c: the idle set (`nohz.idle_cpus_mask`: the policy's, see
/// `IdleCpus`) on lines of its own, the scalars on a line of their own.
#[doc(alias = "nohz")]
#[derive(Debug)]
pub struct Nohz<P: Policy, const W: usize> {
    idle_cpus_mask: P::IdleCpus<W>,
    pub(crate) scalars: CachePadded<ScalarLine<P, W>>,
}

impl<P: Policy, const W: usize> Nohz<P, W> {
    crate::maybe_const_fn! {
        /// Empty mask, flags clear, deadlines zero (`init` sets them to `jiffies`).
        pub fn new() -> Self {
            Nohz {
                idle_cpus_mask: {
                    #[cfg(not(nohz_loom))]
                    let set = <P::IdleCpus<W> as IdleCpus<W>>::EMPTY;
                    #[cfg(nohz_loom)]
                    let set = <P::IdleCpus<W> as IdleCpus<W>>::new_empty();
                    set
                },
                scalars: CachePadded::new(ScalarLine {
                    scalars: Scalars {
                        nr_cpus: AtomicU32::new(0),
                        has_blocked_load: AtomicU32::new(0),
                        needs_update: AtomicU32::new(0),
                        next_balance: AtomicUsize::new(0),
                        next_blocked: AtomicUsize::new(0),
                        legacy_irqtime: AtomicU32::new(0),
                    },
                    hook: {
                        #[cfg(not(nohz_loom))]
                        let hook = <P::NohzLine as NohzLine>::NEW;
                        #[cfg(nohz_loom)]
                        let hook = <P::NohzLine as NohzLine>::new();
                        hook
                    },
                    idle_set: {
                        #[cfg(not(nohz_loom))]
                        let line = <P::IdleCpus<W> as IdleCpus<W>>::EMPTY_LINE;
                        #[cfg(nohz_loom)]
                        let line = <P::IdleCpus<W> as IdleCpus<W>>::new_line();
                        line
                    },
                }),
            }
        }
    }

    /// The idle set with its words on the `nohz` line.
    #[inline(always)]
    pub(crate) fn idle_set(&self) -> (&P::IdleCpus<W>, &IdleLine<P, W>) {
        (&self.idle_cpus_mask, &self.scalars.idle_set)
    }

    #[cfg(feature = "testing")]
    /// `nohz.idle_cpus_mask`: CPUs idle with the tick stopped and registered for balancing
    /// (the policy's idle set: `Sharded` keeps its shards here). A hint: consumers re-check
    /// `idle_cpu()`.
    #[inline]
    pub fn idle_cpus_mask(&self) -> &P::IdleCpus<W> {
        &self.idle_cpus_mask
    }

    /// `nohz.has_blocked_load`: some idle CPU may still have undecayed blocked load.
    #[inline]
    pub fn has_blocked_load(&self) -> bool {
        self.scalars.has_blocked_load()
    }

    #[cfg(feature = "testing")]
    /// `nohz.needs_update`: a CPU joined the mask; `nohz.next_balance` must be recomputed.
    #[inline]
    pub fn needs_update(&self) -> bool {
        self.scalars.needs_update()
    }

    #[cfg(feature = "testing")]
    /// `nohz.next_balance`: the earliest time an idle CPU needs periodic balancing.
    #[inline]
    pub fn next_balance(&self) -> Jiffies {
        self.scalars.next_balance()
    }

    /// `nohz.next_blocked`: when the next blocked-load refresh is due.
    #[inline]
    pub fn next_blocked(&self) -> Jiffies {
        self.scalars.next_blocked()
    }

    #[cfg(feature = "testing")]
    /// `nohz.nr_cpus` (`Legacy` only; always 0 under `Patched`, which has no counter).
    #[inline]
    pub fn nr_cpus(&self) -> u32 {
        self.scalars.nr_cpus.load(Relaxed)
    }

    #[cfg(feature = "testing")]
    /// The not-due gate's precomputed deadline of `nohz_balancer_kick` (`Scalable`'s), or
    /// `None` while it is stale, or under a policy whose gate keeps none.
    pub fn kick_deadline(&self) -> Option<Jiffies> {
        self.scalars.hook.deadline()
    }

    /// Test rigs only (feature `testing`): stores `nohz.next_balance` and tells the policy's
    /// not-due gate. The `Hint` comparator of `tests/model` resynchronises a `Sharded` machine
    /// with this after each counted divergence (an extra kick attempt that moved
    /// `next_balance`).
    #[cfg(feature = "testing")]
    pub fn set_next_balance_for_tests(&self, at: Jiffies, now: Jiffies) {
        self.store_next_balance(at);
        self.scalars.hook.moved(&self.scalars, now);
    }

    #[inline]
    fn store_has_blocked_load(&self, v: bool) {
        self.scalars.has_blocked_load.store(v as u32, Relaxed);
    }
    #[inline]
    fn store_needs_update(&self, v: bool) {
        self.scalars.needs_update.store(v as u32, Relaxed);
    }
    #[inline]
    fn store_next_balance(&self, at: Jiffies) {
        self.scalars.next_balance.store(at.get(), Relaxed);
    }
    #[inline]
    fn store_next_blocked(&self, at: Jiffies) {
        self.scalars.next_blocked.store(at.get(), Relaxed);
    }
}

impl<P: Policy, const W: usize> Default for Nohz<P, W> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// `struct sched_domain_shared` of one LLC: the busy count its CPUs keep, once per domain
/// generation slot (see [`Machine::rebuild_sched_domains`](crate::Machine::rebuild_sched_domains)).
#[derive(Debug)]
struct LlcShared {
    nr_busy_cpus: [AtomicI32; 2],
    /// `sd_llc_size` as the last rebuild counted it: the CPUs with a base domain that name
    /// this slot's CPU as their LLC leader. Written only by a rebuild.
    span_weight: AtomicU32,
    /// The lowest CPU with a base domain that names this slot's CPU as its hardware LLC
    /// leader, as its index plus one (0: none yet): the LLC domain's first CPU (`sd_llc_id`)
    /// once inactive and isolated CPUs are left out. Written only by a rebuild.
    first: AtomicU32,
}

/// Why a topology (re)build was refused; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopologyError {
    /// `cpu` names `leader` as its LLC's lowest CPU, but `leader` is above `cpu` or does not
    /// name itself.
    BadLlcLeader {
        /// The CPU whose answer was inconsistent.
        cpu: usize,
        /// The leader it named.
        leader: usize,
    },
    /// `Sharded`: the shard map the policy's layout builds from this topology was refused.
    #[cfg(feature = "sharded")]
    Shards(ShardMapError),
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TopologyError::BadLlcLeader { cpu, leader } => write!(
                f,
                "CPU {cpu} names CPU {leader} as the lowest CPU of its LLC, but CPU {leader} \
                 is above it or names another CPU"
            ),
            #[cfg(feature = "sharded")]
            TopologyError::Shards(e) => write!(f, "bad shard map: {e}"),
        }
    }
}

impl core::error::Error for TopologyError {}

/// fair.c's NOHZ state of a machine of capacity `N` CPUs (masks of `W` words) under policy
/// `P`: the `nohz` global, every CPU's [`Rq`], the per-LLC busy counts of both domain
/// generations, the housekeeping mask and the `sched_asym_cpucapacity` key. The
/// [`Machine`](crate::Machine) owns it; its paths take the machine's [`Cpus`] and the
/// platform as parameters.
#[derive(Debug)]
pub struct Fair<P: Policy, const N: usize, const W: usize> {
    housekeeping: CpuMask<W>,
    nohz: Nohz<P, W>,
    /// Each CPU's runqueue, and beside it what the idle set keeps for it.
    rqs: PerCpu<CpuSlot<IdleCpu<P, W>>, N>,
    llcs: PerCpu<LlcShared, N>,
    /// The domain generation: bumped by every rebuild; its low bit names the current copy of
    /// the per-LLC busy counts and each CPU's LLC view.
    domains_gen: CachePadded<AtomicU32>,
    /// `sched_asym_cpucapacity`: on while some CPU has an asymmetric-capacity domain.
    sched_asym_cpucapacity: StaticKey,
    _policy: PhantomData<P>,
}

impl<P: Policy, const N: usize, const W: usize> Fair<P, N, W> {
    /// A fresh CPU's slot: its runqueue and the idle set's fresh state for it.
    #[cfg(not(nohz_loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY_SLOT: CachePadded<CpuSlot<IdleCpu<P, W>>> = CachePadded::new(CpuSlot {
        rq: Rq::new(),
        idle_set: <P::IdleCpus<W> as IdleCpus<W>>::EMPTY_CPU,
    });

    crate::maybe_const_fn! {
        /// No CPU registered, no domain built.
        pub(crate) fn new() -> Self {
            Fair {
                housekeeping: CpuMask::new(),
                nohz: Nohz::new(),
                // The call straight into the field: a debug build (the harness's 768-CPU
                // machines on a test thread's stack) then keeps one temporary copy, not two.
                #[cfg(not(nohz_loom))]
                rqs: PerCpu::from_padded([Self::EMPTY_SLOT; N]),
                #[cfg(nohz_loom)]
                rqs: PerCpu::from_fn(|_| CpuSlot {
                    rq: Rq::new(),
                    idle_set: <P::IdleCpus<W> as IdleCpus<W>>::new_cpu(),
                }),
                llcs: crate::sync::per_cpu_array!(
                    LlcShared {
                        nr_busy_cpus: [AtomicI32::new(0), AtomicI32::new(0)],
                        span_weight: AtomicU32::new(0),
                        first: AtomicU32::new(0),
                    }; N
                ),
                domains_gen: CachePadded::new(AtomicU32::new(0)),
                sched_asym_cpucapacity: StaticKey::new_false(),
                _policy: PhantomData,
            }
        }
    }

    /// fair.c's and core.c's boot steps for the `nr` CPUs (`sched_init`,
    /// `init_sched_fair_class`): every CPU a housekeeping CPU, each rq's `next_balance` and
    /// `last_blocked_load_update_tick` now and its `avg_idle` at twice the migration cost,
    /// `nohz.next_balance` and `nohz.next_blocked` now, then the first domain generation.
    pub(crate) fn boot<Pl: Platform<N>>(&self, cpus: &Cpus<N, W>, nr: NrCpuIds<N>, plat: &Pl) {
        let now = plat.jiffies();
        for (cpu, rq) in self.rqs.iter(nr) {
            self.housekeeping.set(cpu);
            // sched_init: both start at boot time.
            rq.set_next_balance(now);
            rq.set_last_blocked_load_update_tick(now);
            // sched_init: until the scheduler has measured it, a CPU is taken to idle for
            // twice the migration cost (long enough for newidle's blocked-load refresh).
            rq.set_avg_idle(2 * SCHED_MIGRATION_COST_NS);
        }
        self.nohz.store_next_balance(now);
        self.nohz.store_next_blocked(now);
        self.nohz.scalars.hook.moved(&self.nohz.scalars, now);
        // Nothing runs yet: the first generation needs no grace period.
        self.publish_topology(cpus, nr, plat);
        // The idle set's own layout (Sharded's shards): check_topology accepted it before
        // boot, and no CPU is registered yet.
        let (set, line) = self.nohz.idle_set();
        set.boot(line, &self.rqs, nr, plat);
    }

    /// `cpu_rq(cpu)`.
    #[inline(always)]
    pub fn rq(&self, cpu: CpuId<N>) -> &Rq {
        &self.rqs.get(cpu).rq
    }

    /// What the idle set keeps for `cpu`, beside its runqueue.
    #[inline(always)]
    pub(crate) fn idle_at(&self, cpu: CpuId<N>) -> &IdleCpu<P, W> {
        &self.rqs.get(cpu).idle_set
    }

    /// Every CPU's slot: its runqueue and what the idle set keeps for it.
    #[cfg(all(feature = "testing", feature = "sharded"))]
    #[inline(always)]
    pub(crate) fn slots(&self) -> &PerCpu<CpuSlot<IdleCpu<P, W>>, N> {
        &self.rqs
    }

    /// The `nohz` global.
    #[inline]
    pub fn nohz(&self) -> &Nohz<P, W> {
        &self.nohz
    }

    /// `housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)` for the boot-time setup.
    #[inline]
    pub(crate) fn housekeeping_mask(&self) -> &CpuMask<W> {
        &self.housekeeping
    }

    #[cfg(feature = "testing")]
    /// `housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)`.
    #[inline]
    pub fn housekeeping(&self) -> &CpuMask<W> {
        &self.housekeeping
    }

    #[cfg(feature = "testing")]
    /// `sd_llc_shared->nr_busy_cpus` of `cpu`'s LLC, or `None` if it has no LLC domain.
    #[inline]
    pub fn llc_nr_busy_cpus(&self, nr: NrCpuIds<N>, cpu: CpuId<N>) -> Option<i32> {
        self.llc_of(nr, cpu).map(|(busy, _)| busy.load(Relaxed))
    }

    #[cfg(feature = "testing")]
    /// `sd_llc_id` of `cpu`, if it has an LLC domain.
    #[inline]
    pub fn llc_leader(&self, cpu: CpuId<N>) -> Option<usize> {
        self.rq(cpu).sd(self.domains_slot()).llc_leader()
    }

    #[cfg(feature = "testing")]
    /// `sd_llc->nohz_idle` of `cpu`.
    #[inline]
    pub fn nohz_idle(&self, cpu: CpuId<N>) -> bool {
        self.rq(cpu).sd(self.domains_slot()).nohz_idle()
    }

    /// The current domain generation's slot (`rcu_dereference(rq->sd)`): an Acquire load
    /// (SCHED_DOMAINS_LOAD), so the copy it names is read as the rebuild that published it
    /// wrote it.
    #[inline]
    fn domains_slot(&self) -> usize {
        (self.domains_gen.load(SCHED_DOMAINS_LOAD.ordering()) & 1) as usize
    }

    /// `cpu`'s LLC busy count and its own LLC view, in the current domain generation, if it
    /// has an LLC domain there.
    #[inline]
    fn llc_of(&self, nr: NrCpuIds<N>, cpu: CpuId<N>) -> Option<(&AtomicI32, &rq::SdSlot)> {
        let slot = self.domains_slot();
        let sd = self.rq(cpu).sd(slot);
        // The leader index was checked against nr_cpu_ids when the topology was built.
        let leader = nr.cpu(sd.llc_leader()?).ok()?;
        Some((&self.llcs.get(leader).nr_busy_cpus[slot], sd))
    }

    /// `sched_asym_cpucap_active()`: the `sched_asym_cpucapacity` key.
    #[inline(always)]
    pub fn sched_asym_cpucap_active(&self) -> bool {
        self.sched_asym_cpucapacity.unlikely()
    }

    /// `cpu` is registered as idle: `cpumask_test_cpu(cpu, nohz.idle_cpus_mask)` (under
    /// `Sharded`, its bit in its shard's word).
    #[inline]
    pub(crate) fn nohz_idle_test(&self, cpu: CpuId<N>) -> bool {
        self.nohz.idle_cpus_mask.test_cpu(self.idle_at(cpu), cpu)
    }

    #[cfg(feature = "testing")]
    /// The registered CPUs, ascending ids for a flat policy, shards and slots ascending under
    /// `Sharded` (the same order with contiguous shards). Not a snapshot: each word is read
    /// as the walk reaches it.
    pub fn nohz_idle_cpus(&self, nr: NrCpuIds<N>) -> impl Iterator<Item = CpuId<N>> + '_ {
        let (set, line) = self.nohz.idle_set();
        set.registered(line, nr)
    }
}
