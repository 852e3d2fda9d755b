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
//!   passes, read by every busy tick. One line of their own, as the kernel's struct.
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
//! domain build's per-LLC state).

mod balance;
mod idle;
mod kick;
pub mod rq;
mod topology;

pub use balance::{IlbPass, SCHED_MIGRATION_COST_NS};
pub use kick::{KickDecision, KickOutcome};

use crate::beyond::kick_deadline::KickDeadline;
use crate::beyond::sharded::{SUMMARY_WORDS, ShardMapError, ShardSet, ShardSlot, Shards};
use crate::cpu::{CpuId, NrCpuIds, PerCpu};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::policy::Policy;
use crate::static_key::StaticKey;
use crate::sync::{
    AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed, SCHED_DOMAINS_LOAD,
};
use core::fmt;
use core::marker::PhantomData;
use crossbeam_utils::CachePadded;
use rq::Rq;

/// The `nohz` scalars: one line, as the kernel's struct has them.
#[derive(Debug)]
pub(crate) struct Scalars {
    /// `Legacy` only: `atomic_t nr_cpus`, removed by seed 000.
    nr_cpus: AtomicU32,
    has_blocked_load: AtomicU32,
    needs_update: AtomicU32,
    next_balance: AtomicUsize,
    next_blocked: AtomicUsize,
    /// `Scalable` only: the kick's precomputed not-due deadline and the bumps since it was
    /// computed (see [`KickDeadline`]).
    kick_deadline: KickDeadline,
    /// `Legacy` only: the plain `int sched_clock_irqtime` that shared this line before seed
    /// 003 made it a static key (read on every interrupt, beside words written on every idle
    /// entry and exit).
    pub(crate) legacy_irqtime: AtomicU32,
    /// `Sharded` only: the sticky per-shard summary (bit `s` of word `s / 64`: shard `s` may
    /// hold a registered CPU; see [`crate::beyond::sharded`]). Set by enterers after their
    /// fence, cleared only by `find_new_ilb`'s GC: never written at idle-transition rate.
    summary: [AtomicU64; SUMMARY_WORDS],
    /// `Sharded` only: the shards in use (written at init and by `set_shard_map` only).
    nr_shards: AtomicU32,
}

/// The `nohz` global of fair.c: the idle mask on lines of its own, the scalars on a line of
/// their own.
#[doc(alias = "nohz")]
#[derive(Debug)]
pub struct Nohz<const W: usize> {
    idle_cpus_mask: CpuMask<W>,
    pub(crate) scalars: CachePadded<Scalars>,
}

impl<const W: usize> Nohz<W> {
    crate::maybe_const_fn! {
        /// Empty mask, flags clear, deadlines zero (`init` sets them to `jiffies`).
        pub fn new() -> Self {
            Nohz {
                idle_cpus_mask: CpuMask::new(),
                scalars: CachePadded::new(Scalars {
                    nr_cpus: AtomicU32::new(0),
                    has_blocked_load: AtomicU32::new(0),
                    needs_update: AtomicU32::new(0),
                    next_balance: AtomicUsize::new(0),
                    next_blocked: AtomicUsize::new(0),
                    kick_deadline: KickDeadline::new(),
                    legacy_irqtime: AtomicU32::new(0),
                    summary: crate::sync::atomic_array!(AtomicU64::new(0); SUMMARY_WORDS),
                    nr_shards: AtomicU32::new(0),
                }),
            }
        }
    }

    /// `nohz.idle_cpus_mask`: CPUs idle with the tick stopped and registered for balancing. A
    /// hint: consumers re-check `idle_cpu()`.
    #[inline]
    pub fn idle_cpus_mask(&self) -> &CpuMask<W> {
        &self.idle_cpus_mask
    }

    /// `nohz.has_blocked_load`: some idle CPU may still have undecayed blocked load.
    #[inline]
    pub fn has_blocked_load(&self) -> bool {
        self.scalars.has_blocked_load.load(Relaxed) != 0
    }

    /// `nohz.needs_update`: a CPU joined the mask; `nohz.next_balance` must be recomputed.
    #[inline]
    pub fn needs_update(&self) -> bool {
        self.scalars.needs_update.load(Relaxed) != 0
    }

    /// `nohz.next_balance`: the earliest time an idle CPU needs periodic balancing.
    #[inline]
    pub fn next_balance(&self) -> Jiffies {
        Jiffies::new(self.scalars.next_balance.load(Relaxed))
    }

    /// `nohz.next_blocked`: when the next blocked-load refresh is due.
    #[inline]
    pub fn next_blocked(&self) -> Jiffies {
        Jiffies::new(self.scalars.next_blocked.load(Relaxed))
    }

    /// `nohz.nr_cpus` (`Legacy` only; always 0 under `Patched`, which has no counter).
    #[inline]
    pub fn nr_cpus(&self) -> u32 {
        self.scalars.nr_cpus.load(Relaxed)
    }

    /// `Scalable`'s precomputed not-due deadline of `nohz_balancer_kick`, or `None` while it
    /// is stale (see [`KickDeadline`]). Only meaningful under `Scalable`.
    pub fn kick_deadline(&self) -> Option<Jiffies> {
        self.scalars.kick_deadline.get()
    }

    /// The deadline `now`'s kick would fold from the scalars: now while `needs_update` is
    /// set, else `next_blocked + 1` while `has_blocked_load` is set and that is earlier, else
    /// `next_balance`.
    fn deadline_from_scalars(&self, now: Jiffies) -> Jiffies {
        if self.needs_update() {
            return now;
        }
        let balance = self.next_balance();
        let blocked = self.next_blocked().add(1);
        if self.has_blocked_load() && blocked.is_before(balance) {
            blocked
        } else {
            balance
        }
    }

    /// Refreshes a stale kick deadline at `now`, unless someone else did first.
    pub(crate) fn refresh_kick_deadline_if_stale(&self, now: Jiffies) {
        self.scalars
            .kick_deadline
            .refresh(true, || self.deadline_from_scalars(now));
    }

    /// Recomputes the kick deadline at `now`, giving way to any bump that lands meanwhile.
    pub(crate) fn refresh_kick_deadline(&self, now: Jiffies) {
        self.scalars
            .kick_deadline
            .refresh(false, || self.deadline_from_scalars(now));
    }

    /// Test rigs only (feature `testing`): stores `nohz.next_balance` and, for the
    /// kick-deadline policies, recomputes the deadline at `now`. The `Hint` comparator of
    /// `tests/model` resynchronises a `Sharded` machine with this after each counted
    /// divergence (an extra kick attempt that moved `next_balance`).
    #[cfg(feature = "testing")]
    pub fn set_next_balance_for_tests(&self, at: Jiffies, now: Jiffies) {
        self.store_next_balance(at);
        self.refresh_kick_deadline(now);
    }

    /// The kick deadline word.
    #[inline(always)]
    pub(crate) fn kick_deadline_word(&self) -> &KickDeadline {
        &self.scalars.kick_deadline
    }

    /// `nohz.has_blocked_load = 1` from `nohz_balance_enter_idle`: a blind store, or under
    /// `P::READ_BEFORE_WRITE` a load and a store only if it was 0 (spec §6 O7). Returns whether
    /// it stored; under `P::KICK_DEADLINE` the caller then bumps the kick deadline (a STATS
    /// kick may now be due from `next_blocked + 1` on), once for both flags.
    #[inline]
    fn raise_has_blocked_load<P: Policy>(&self) -> bool {
        raise_flag::<P>(&self.scalars.has_blocked_load)
    }

    /// `nohz.needs_update = 1` from `nohz_balance_enter_idle`, as [`Self::raise_has_blocked_load`] (a NEXT
    /// kick is due at once). A CPU that reads 1 stores nothing: whoever stored that 1 bumps
    /// the deadline before its `nohz_balance_enter_idle` returns, and if an ILB pass cleared it meanwhile,
    /// that pass's scan sees this CPU (O7).
    #[inline]
    fn raise_needs_update<P: Policy>(&self) -> bool {
        raise_flag::<P>(&self.scalars.needs_update)
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

/// Sets a `nohz` flag to 1 from `nohz_balance_enter_idle`: a blind store, or under `P::READ_BEFORE_WRITE`
/// a store only if it reads 0. Returns whether it stored.
#[inline(always)]
fn raise_flag<P: Policy>(flag: &AtomicU32) -> bool {
    let store = !P::READ_BEFORE_WRITE || flag.load(Relaxed) == 0;
    if store {
        flag.store(1, Relaxed);
    }
    store
}

impl<const W: usize> Default for Nohz<W> {
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
    nohz: Nohz<W>,
    rqs: PerCpu<Rq, N>,
    llcs: PerCpu<LlcShared, N>,
    /// The domain generation: bumped by every rebuild; its low bit names the current copy of
    /// the per-LLC busy counts and each CPU's LLC view.
    domains_gen: CachePadded<AtomicU32>,
    /// `sched_asym_cpucapacity`: on while some CPU has an asymmetric-capacity domain.
    sched_asym_cpucapacity: StaticKey,
    /// `Sharded` only: the shard words and tables (zero bytes for a flat policy).
    shards: P::Shards,
    _policy: PhantomData<P>,
}

impl<P: Policy, const N: usize, const W: usize> Fair<P, N, W> {
    crate::maybe_const_fn! {
        /// No CPU registered, no domain built.
        pub(crate) fn new() -> Self {
            Fair {
                housekeeping: CpuMask::new(),
                nohz: Nohz::new(),
                rqs: crate::sync::per_cpu_array!(Rq::new(); N),
                llcs: crate::sync::per_cpu_array!(
                    LlcShared {
                        nr_busy_cpus: [AtomicI32::new(0), AtomicI32::new(0)],
                        span_weight: AtomicU32::new(0),
                        first: AtomicU32::new(0),
                    }; N
                ),
                domains_gen: CachePadded::new(AtomicU32::new(0)),
                sched_asym_cpucapacity: StaticKey::new_false(),
                shards: {
                    #[cfg(not(nohz_loom))]
                    let shards = <P::Shards as ShardSet>::EMPTY;
                    #[cfg(nohz_loom)]
                    let shards = <P::Shards as ShardSet>::empty();
                    shards
                },
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
        if P::KICK_DEADLINE {
            self.nohz.refresh_kick_deadline(now);
        }
        // Nothing runs yet: the first generation needs no grace period.
        self.publish_topology(cpus, nr, plat);
        if P::SHARDED {
            // check_topology accepted this map before boot, and no CPU is registered yet, so
            // this cannot be refused.
            let _ = self.build_shards(nr, |c| {
                <P::Layout as crate::beyond::sharded::ShardLayout>::place(plat, c)
            });
        }
    }

    /// `cpu_rq(cpu)`.
    #[inline(always)]
    pub fn rq(&self, cpu: CpuId<N>) -> &Rq {
        self.rqs.get(cpu)
    }

    /// The `nohz` global.
    #[inline]
    pub fn nohz(&self) -> &Nohz<W> {
        &self.nohz
    }

    /// `housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)`.
    #[inline]
    pub fn housekeeping(&self) -> &CpuMask<W> {
        &self.housekeeping
    }

    /// `sd_llc_shared->nr_busy_cpus` of `cpu`'s LLC, or `None` if it has no LLC domain.
    #[inline]
    pub fn llc_nr_busy_cpus(&self, nr: NrCpuIds<N>, cpu: CpuId<N>) -> Option<i32> {
        self.llc_of(nr, cpu).map(|(busy, _)| busy.load(Relaxed))
    }

    /// `sd_llc_id` of `cpu`, if it has an LLC domain.
    #[inline]
    pub fn llc_leader(&self, cpu: CpuId<N>) -> Option<usize> {
        self.rq(cpu).sd(self.domains_slot()).llc_leader()
    }

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

    /// The sharded idle set (`Sharded`; empty for a flat policy).
    #[inline(always)]
    pub(crate) fn shards(&self) -> Shards<'_> {
        Shards {
            words: self.shards.words(),
            tables: self.shards.tables(),
            summary: &self.nohz.scalars.summary,
            nr_shards: &self.nohz.scalars.nr_shards,
        }
    }

    /// `cpu`'s shard and slot (`Sharded`, once the map is built).
    #[inline(always)]
    pub fn shard_slot(&self, cpu: CpuId<N>) -> Option<ShardSlot> {
        self.rq(cpu).shard_slot()
    }

    /// `cpu` is registered as idle: its bit in `nohz.idle_cpus_mask`, or under `Sharded` in
    /// its shard word.
    #[inline]
    pub fn nohz_idle_test(&self, cpu: CpuId<N>) -> bool {
        if P::SHARDED {
            self.shard_slot(cpu)
                .is_some_and(|at| self.shards().test(at))
        } else {
            self.nohz.idle_cpus_mask.test(cpu)
        }
    }

    /// The registered CPUs, ascending ids for a flat policy, shards and slots ascending under
    /// `Sharded` (the same order with contiguous shards). Not a snapshot: each word is read
    /// as the walk reaches it.
    pub fn nohz_idle_cpus(&self, nr: NrCpuIds<N>) -> impl Iterator<Item = CpuId<N>> + '_ {
        let flat = (!P::SHARDED).then(|| self.nohz.idle_cpus_mask.iter(nr));
        let sharded =
            P::SHARDED.then(|| self.shards().all_cpus().filter_map(move |i| nr.cpu(i).ok()));
        flat.into_iter()
            .flatten()
            .chain(sharded.into_iter().flatten())
    }

    /// The shards in use and the summary's flagged shards, for tests and reports
    /// (`Sharded`; 0 shards for a flat policy).
    pub fn nr_shards(&self) -> usize {
        if P::SHARDED { self.shards().nr() } else { 0 }
    }

    /// Shard `s` is flagged in the summary (`Sharded`).
    pub fn shard_flagged(&self, s: usize) -> bool {
        P::SHARDED && s < self.nr_shards() && self.shards().flagged(s)
    }

    /// Shard `s`'s idle word (`Sharded`; 0 out of range).
    pub fn shard_word(&self, s: usize) -> u64 {
        if s < self.nr_shards() {
            self.shards.words()[s].load(Relaxed)
        } else {
            0
        }
    }

    /// Shard `s`'s members, slots ascending (`Sharded`).
    pub fn shard_members(&self, nr: NrCpuIds<N>, s: usize) -> impl Iterator<Item = CpuId<N>> + '_ {
        let s = if s < self.nr_shards() { s } else { usize::MAX };
        self.shards().members(s).filter_map(move |i| nr.cpu(i).ok())
    }

    /// The shards the policy's `S` provides (0 for a flat policy).
    #[inline]
    pub(crate) fn shard_capacity(&self) -> usize {
        self.shards.words().len()
    }

    /// Builds the shard map from `place` (the layout's placement, or an explicit map):
    /// refused, changing nothing, if it does not fit the policy's `S` shards of at most 64
    /// CPUs, or while any CPU is registered (shards never change while a CPU is registered).
    /// The caller guarantees that no CPU enters idle meanwhile (boot, or all CPUs quiesced).
    pub(crate) fn build_shards(
        &self,
        nr: NrCpuIds<N>,
        place: impl Fn(CpuId<N>) -> crate::beyond::sharded::Placement,
    ) -> Result<(), ShardMapError> {
        if !P::SHARDED || nr.get() == 0 {
            return Err(ShardMapError::NotSharded);
        }
        if let Some(cpu) = nr
            .iter()
            .find(|&c| self.rq(c).nohz_tick_stopped() || self.nohz_idle_test(c))
        {
            return Err(ShardMapError::CpuRegistered { cpu: cpu.index() });
        }
        let view = self.shards();
        let cap = self.shards.words().len();
        crate::beyond::sharded::plan(nr, cap, &place, |_, _| {})?;
        view.reset_tables();
        for rq in self.rqs.iter(nr).map(|(_, rq)| rq) {
            rq.set_shard_slot(None);
        }
        let n = crate::beyond::sharded::plan(nr, cap, &place, |cpu, at| {
            view.put(cpu.index(), at);
            self.rq(cpu).set_shard_slot(Some(at));
        })?;
        for w in &self.nohz.scalars.summary {
            w.store(0, Relaxed);
        }
        self.nohz.scalars.nr_shards.store(n as u32, Relaxed);
        Ok(())
    }
}
