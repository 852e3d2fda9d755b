//! fair.c's NOHZ idle load balancing: the `nohz` global, the machine that owns it, topology.
//!
//! # Design
//!
//! [`Machine`] is the one owning context a kernel declares as a `static`: the `nohz` global
//! ([`Nohz`]), every CPU's [`Rq`], the per-LLC busy counts, the housekeeping mask,
//! `nr_cpu_ids` and the warning counters. Every NOHZ path is a method on it that takes the CPU
//! it acts for and the [`Platform`] that answers questions and performs actions.
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
//! The paths live in `idle.rs` (enter/exit), `kick.rs` (the tick, the kick, ILB selection, the
//! csd) and `balance.rs` (the softirq, the ILB pass, newidle).

mod balance;
mod idle;
mod kick;
pub mod rq;

pub use balance::{IlbPass, SCHED_MIGRATION_COST_NS};
pub use kick::{KickDecision, KickOutcome};

use crate::cpu::{CpuError, CpuId, NrCpuIds, NrCpuIdsCell, PerCpu};
use crate::cpumask::CpuMask;
use crate::irqtime::IrqTime;
use crate::jiffies::Jiffies;
use crate::platform::Platform;
use crate::policy::Policy;
use crate::static_key::StaticKey;
use crate::sync::{
    AtomicI32, AtomicU32, AtomicU64, AtomicUsize, NOHZ_DEADLINE_BUMP, NOHZ_DEADLINE_REFRESH,
    Ordering::Relaxed, SCHED_DOMAINS_LOAD, SCHED_DOMAINS_PUBLISH,
};
use crate::tick_sched::TickSched;
use crate::warn::{WarnAt, WarnSink, Warning, Warnings};
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
    /// `Scalable` only: the kick's precomputed not-due deadline (low 32 bits) and the bumps
    /// since it was computed (high 32 bits); see [`Nohz::kick_deadline`].
    kick_deadline: AtomicU64,
    /// `Legacy` only: the plain `int sched_clock_irqtime` that shared this line before seed
    /// 003 made it a static key (read on every interrupt, beside words written on every idle
    /// entry and exit).
    pub(crate) legacy_irqtime: AtomicU32,
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
                    kick_deadline: AtomicU64::new(0),
                    legacy_irqtime: AtomicU32::new(0),
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
    /// is stale (a writer made the kick due sooner since it was last computed). The deadline is
    /// the low 32 bits of a jiffies value. The not-due test is one subtraction and one
    /// unsigned compare: `now` (its low 32 bits) is below the deadline by less than 2^31. A
    /// deadline that lies ahead across a 32-bit wrap of `now` fails it and takes the full path,
    /// which decides exactly; that happens once every 2^32 jiffies, for at most the deadline's
    /// distance from now (every deadline it folds lies within a minute of now).
    ///
    /// It folds the four scalars the kick's not-due path reads: the kick can have anything to do
    /// only from `next_balance` on, from `next_blocked + 1` on while `has_blocked_load` is set,
    /// and at once while `needs_update` is set. Before that, `Patched` would return without a
    /// kick, so `Scalable` does after one load.
    ///
    /// The word holds the deadline in its low 32 bits and, from bit 33 up, the number of bumps
    /// since it was computed (bit 32 stays clear); it is fresh while that count is 0 (the word
    /// is below 2^32). A stale word is at least 2^33, so the one compare fails on it whatever its
    /// deadline. Who keeps it true:
    /// - writers that make the kick due sooner bump it with one Release `fetch_add` (a single
    ///   locked add on x86, no compare-exchange loop on the idle path): `nohz_balance_enter_idle` when it
    ///   sets `needs_update` or `has_blocked_load`. The word is stale from then on, so the kick
    ///   takes the full path;
    /// - refreshers recompute the deadline from the scalars after an Acquire load of the word
    ///   and replace it only if no bump landed meanwhile (compare-exchange), so a bump that
    ///   raced with them is never undone: the end of an idle balance pass (complete or aborted),
    ///   `kick_ilb`'s `next_balance` bump, init, and the first kick that finds the word stale.
    ///
    /// The ILB's clears at the start of a pass leave it early, which is safe: an early deadline
    /// only sends the kick down the full path. Only meaningful under `Scalable`.
    pub fn kick_deadline(&self) -> Option<Jiffies> {
        let w = self.scalars.kick_deadline.load(Relaxed);
        deadline_fresh(w).then(|| Jiffies::new(w as u32 as usize))
    }

    /// `now` is before a fresh kick deadline: balancing is not due, nothing to kick for.
    /// False on a stale word (see [`Self::refresh_kick_deadline_if_stale`]).
    #[inline(always)]
    fn kick_not_due(&self, now: Jiffies) -> bool {
        deadline_not_due(self.scalars.kick_deadline.load(Relaxed), now)
    }

    /// Refreshes a stale kick deadline word at `now`, unless someone else did first (a fresh
    /// word is left alone). Busy CPUs racing here write the word once between them.
    fn refresh_kick_deadline_if_stale(&self, now: Jiffies) {
        self.refresh_kick_deadline_with(now, true);
    }

    /// Marks the kick deadline stale: a writer just made the kick due sooner.
    #[inline]
    fn bump_kick_deadline(&self) {
        crate::sync::shared_store();
        // Release (NOHZ_DEADLINE_BUMP): the flags this writer set before are visible to a
        // refresher that loads this word (NOHZ_DEADLINE_REFRESH). Result unused: one
        // `lock add` on x86. The count only grows until a refresh zeroes it, so a refresher's
        // compare-exchange fails if any bump landed after its load. (It would take 2^31 bumps
        // without a refresh to wrap it; each bump needs a flag cleared by an ILB pass, and
        // every pass ends with a refresh.)
        self.scalars
            .kick_deadline
            .fetch_add(DEADLINE_BUMP, NOHZ_DEADLINE_BUMP.ordering());
    }

    /// Recomputes the kick deadline from the scalars at `now`; gives way to any bump that
    /// lands meanwhile, then tries again.
    fn refresh_kick_deadline(&self, now: Jiffies) {
        self.refresh_kick_deadline_with(now, false);
    }

    /// [`Self::refresh_kick_deadline`]; with `only_if_stale`, stops as soon as the word is
    /// fresh (someone else refreshed it), so busy CPUs racing to refresh write it once.
    fn refresh_kick_deadline_with(&self, now: Jiffies, only_if_stale: bool) {
        loop {
            // Acquire (NOHZ_DEADLINE_REFRESH): the flags read below are at least as new as
            // the last bump this load observes (NOHZ_DEADLINE_BUMP).
            let seen = self
                .scalars
                .kick_deadline
                .load(NOHZ_DEADLINE_REFRESH.ordering());
            if only_if_stale && deadline_fresh(seen) {
                return;
            }
            let deadline = if self.needs_update() {
                now
            } else {
                let balance = self.next_balance();
                let blocked = self.next_blocked().add(1);
                if self.has_blocked_load() && blocked.is_before(balance) {
                    blocked
                } else {
                    balance
                }
            };
            let next = u64::from(deadline.get() as u32);
            crate::sync::shared_store();
            if self
                .scalars
                .kick_deadline
                .compare_exchange(seen, next, Relaxed, Relaxed)
                .is_ok()
            {
                return;
            }
        }
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
        crate::sync::shared_store();
        self.scalars.has_blocked_load.store(v as u32, Relaxed);
    }
    #[inline]
    fn store_needs_update(&self, v: bool) {
        crate::sync::shared_store();
        self.scalars.needs_update.store(v as u32, Relaxed);
    }
    #[inline]
    fn store_next_balance(&self, at: Jiffies) {
        crate::sync::shared_store();
        self.scalars.next_balance.store(at.get(), Relaxed);
    }
    #[inline]
    fn store_next_blocked(&self, at: Jiffies) {
        crate::sync::shared_store();
        self.scalars.next_blocked.store(at.get(), Relaxed);
    }
}

/// Sets a `nohz` flag to 1 from `nohz_balance_enter_idle`: a blind store, or under `P::READ_BEFORE_WRITE`
/// a store only if it reads 0. Returns whether it stored.
#[inline(always)]
fn raise_flag<P: Policy>(flag: &AtomicU32) -> bool {
    let store = !P::READ_BEFORE_WRITE || flag.load(Relaxed) == 0;
    if store {
        crate::sync::shared_store();
        flag.store(1, Relaxed);
    }
    store
}

/// One bump of the kick deadline word (its bits 33..64 count them; bit 32 stays clear, so a
/// bumped word is at least 2^33 whatever deadline it holds).
const DEADLINE_BUMP: u64 = 1 << 33;

/// [`deadline_not_due`] holds while `d - n - 1` is below this: the deadline is 1 to 2^31 - 1
/// jiffies ahead, the span in which the 32-bit wrap-safe "before" says so.
const NOT_DUE_SPAN: u64 = (1 << 31) - 1;

/// No bump landed on the deadline word since it was computed.
#[inline(always)]
fn deadline_fresh(w: u64) -> bool {
    w >> 32 == 0
}

/// Whether the caller runs on `cpu`, as far as the platform knows ([`Machine::check_on_cpu`]
/// warns when not).
#[inline(always)]
fn on_own_cpu<Pl: Platform<N>, const N: usize>(cpu: CpuId<N>, plat: &Pl) -> bool {
    plat.this_cpu().is_none_or(|me| me == cpu)
}

/// The whole not-due test on the deadline word `w` in one compare: `w` is fresh and its
/// deadline `d` is ahead of `now`'s low 32 bits `n`, `1 <= d - n < 2^31`.
///
/// `w - n - 1` lands below [`NOT_DUE_SPAN`] exactly then: for a fresh word (below 2^32) with
/// `d > n` it is `d - n - 1`; with `d <= n` it wraps to at least 2^64 - 2^32 (due, or a
/// deadline ahead across a wrap of `n`: the full path decides); for a stale word (at least
/// 2^33) it is at least 2^32.
#[inline(always)]
fn deadline_not_due(w: u64, now: Jiffies) -> bool {
    w.wrapping_sub(u64::from(now.get() as u32) + 1) < NOT_DUE_SPAN
}

impl<const W: usize> Default for Nohz<W> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// `struct sched_domain_shared` of one LLC: the busy count its CPUs keep, once per domain
/// generation slot (see [`Machine::rebuild_sched_domains`]).
#[derive(Debug)]
struct LlcShared {
    nr_busy_cpus: [AtomicI32; 2],
    /// `sd_llc_size` as the last rebuild counted it: the CPUs with a base domain that name
    /// this slot's CPU as their LLC leader. Written only by a rebuild.
    span_weight: AtomicU32,
    /// The lowest CPU with a base domain that names this slot's CPU as its hardware LLC
    /// leader: the LLC domain's first CPU (`sd_llc_id`) once inactive and isolated CPUs are
    /// left out. Written only by a rebuild.
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
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TopologyError::BadLlcLeader { cpu, leader } => write!(
                f,
                "CPU {cpu} names CPU {leader} as the lowest CPU of its LLC, but CPU {leader} \
                 is above it or names another CPU"
            ),
        }
    }
}

impl core::error::Error for TopologyError {}

/// Why [`Machine::init`] failed; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitError {
    /// The CPU count was refused.
    Cpus(CpuError),
    /// The topology was refused.
    Topology(TopologyError),
}

impl fmt::Display for InitError {
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Cpus(e) => write!(f, "bad CPU count: {e}"),
            InitError::Topology(e) => write!(f, "bad topology: {e}"),
        }
    }
}

impl core::error::Error for InitError {}

/// The NOHZ state of a whole machine of capacity `N` CPUs (masks of `W` words), under policy
/// `P`: what a kernel declares as one `static`.
///
/// ```
/// use nohz::{Machine, Patched};
/// static MACHINE: nohz::machine!(Patched, 64) = Machine::new();
/// assert_eq!(MACHINE.nr_cpu_ids().get(), 0); // until init()
/// ```
#[derive(Debug)]
pub struct Machine<P: Policy, const N: usize, const W: usize> {
    nr_cpu_ids: CachePadded<NrCpuIdsCell<N>>,
    housekeeping: CpuMask<W>,
    /// `cpu_active_mask`: owned by the crate, so hotplug's order is the crate's (see
    /// [`Machine::sched_cpu_deactivate`]).
    pub(crate) active: CpuMask<W>,
    nohz: Nohz<W>,
    rqs: PerCpu<Rq, N>,
    llcs: PerCpu<LlcShared, N>,
    /// The domain generation: bumped by every rebuild; its low bit names the current copy of
    /// the per-LLC busy counts and each CPU's LLC view.
    domains_gen: CachePadded<AtomicU32>,
    pub(crate) ticks: PerCpu<TickSched, N>,
    pub(crate) nohz_full: CpuMask<W>,
    pub(crate) tick_globals: CachePadded<TickGlobals>,
    pub(crate) irqtime: PerCpu<IrqTime, N>,
    pub(crate) sched_clock_irqtime: StaticKey,
    /// `sched_asym_cpucapacity`: on while some CPU has an asymmetric-capacity domain.
    sched_asym_cpucapacity: StaticKey,
    warnings: Warnings<N>,
    _policy: PhantomData<P>,
}

/// tick-sched's machine-wide words: read on every idle stop attempt, written rarely.
#[derive(Debug)]
pub(crate) struct TickGlobals {
    /// `tick_do_timer_cpu` (`u32::MAX`: nobody).
    pub(crate) do_timer_cpu: AtomicU32,
    /// The global `tick_dep_mask`.
    pub(crate) tick_dep_mask: AtomicU32,
}

struct Fits<const N: usize, const W: usize>;
impl<const N: usize, const W: usize> Fits<N, W> {
    const OK: () = assert!(N <= W * 64, "Machine<P, N, W> needs W >= N / 64 mask words");
}

impl<P: Policy, const N: usize, const W: usize> Machine<P, N, W> {
    crate::maybe_const_fn! {
        /// A machine with no CPU yet; call [`init`](Self::init) at boot.
        pub fn new() -> Self {
            let () = Fits::<N, W>::OK;
            Machine {
                nr_cpu_ids: CachePadded::new(NrCpuIdsCell::new()),
                housekeeping: CpuMask::new(),
                active: CpuMask::new(),
                nohz: Nohz::new(),
                rqs: crate::sync::per_cpu_array!(Rq::new(); N),
                llcs: crate::sync::per_cpu_array!(
                    LlcShared {
                        nr_busy_cpus: [AtomicI32::new(0), AtomicI32::new(0)],
                        span_weight: AtomicU32::new(0),
                        first: AtomicU32::new(u32::MAX),
                    }; N
                ),
                domains_gen: CachePadded::new(AtomicU32::new(0)),
                ticks: crate::sync::per_cpu_array!(TickSched::new(); N),
                nohz_full: CpuMask::new(),
                tick_globals: CachePadded::new(TickGlobals {
                    do_timer_cpu: AtomicU32::new(u32::MAX),
                    tick_dep_mask: AtomicU32::new(0),
                }),
                irqtime: crate::sync::per_cpu_array!(IrqTime::new(); N),
                sched_clock_irqtime: StaticKey::new_false(),
                sched_asym_cpucapacity: StaticKey::new_false(),
                warnings: Warnings::new(),
                _policy: PhantomData,
            }
        }
    }

    /// Boot: fixes `nr_cpu_ids`, makes every CPU active (`cpu_active_mask`; from then on only
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) and [`sched_cpu_activate`](Self::sched_cpu_activate) change
    /// it) and a housekeeping CPU (clear the NO_HZ_FULL ones afterwards through
    /// [`housekeeping`](Self::housekeeping)), sets `nohz.next_balance`,
    /// `nohz.next_blocked` (`init_sched_fair_class`) and each rq's `next_balance` and
    /// `last_blocked_load_update_tick` (`sched_init`) to now, each rq's `avg_idle` to the
    /// kernel's starting value `2 * SCHED_MIGRATION_COST_NS` (`sched_init`; the embedding then
    /// keeps it current with [`Rq::set_avg_idle`]), and
    /// builds the per-LLC state from the platform's topology. `boot_cpu` (the CPU running this
    /// call, `smp_processor_id()` at boot) keeps time first (`tick_do_timer_cpu`, set by
    /// `tick_setup_device` on the first CPU whose tick device comes up) until its tick stops
    /// and hands the duty off. Refused, changing nothing, for a count of 0 or above `N`, a
    /// boot CPU at or above the count, an inconsistent topology, or a second call.
    ///
    /// The topology is checked with the count in place: a platform may build the CPU ids it
    /// answers with from this machine ([`cpu`](Self::cpu)), which succeeds only once
    /// `nr_cpu_ids` is set, so `init` publishes the count first, asks the platform, and on a
    /// refused topology withdraws the count again (the machine reads as never booted; nothing
    /// else was touched). It runs at boot, before anything else uses the machine; a second
    /// `init` racing it is refused as a second call.
    #[doc(alias = "init_sched_fair_class")]
    #[doc(alias = "sched_init")]
    pub fn init<Pl: Platform<N>>(
        &self,
        nr: usize,
        boot_cpu: usize,
        plat: &Pl,
    ) -> Result<NrCpuIds<N>, InitError> {
        let have = self.nr_cpu_ids().get();
        if have != 0 {
            return Err(InitError::Cpus(CpuError::AlreadyInitialised {
                nr_cpu_ids: have,
            }));
        }
        let nr_ids = NrCpuIds::<N>::new(nr).map_err(InitError::Cpus)?;
        let boot = nr_ids.cpu(boot_cpu).map_err(InitError::Cpus)?;
        // Visible to the platform's `Machine::cpu` calls from here on; withdrawn on refusal.
        self.nr_cpu_ids.claim(nr_ids).map_err(InitError::Cpus)?;
        if let Err(e) = self.check_topology(nr_ids, plat) {
            self.nr_cpu_ids.withdraw(nr_ids);
            return Err(InitError::Topology(e));
        }
        let now = plat.jiffies();
        for (cpu, rq) in self.rqs.iter(nr_ids) {
            self.housekeeping.set(cpu);
            self.active.set(cpu);
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
        self.publish_topology(nr_ids, plat);
        // The boot CPU keeps time until it hands the duty off.
        self.set_tick_do_timer_cpu(Some(boot));
        Ok(nr_ids)
    }

    /// `nr_cpu_ids` (zero before [`init`](Self::init)).
    #[inline(always)]
    pub fn nr_cpu_ids(&self) -> NrCpuIds<N> {
        self.nr_cpu_ids.get()
    }

    /// CPU `index`, if this machine has it.
    #[inline]
    pub fn cpu(&self, index: usize) -> Result<CpuId<N>, CpuError> {
        self.nr_cpu_ids().cpu(index)
    }

    /// `cpu_rq(cpu)`.
    #[doc(alias = "cpu_rq")]
    #[inline(always)]
    pub fn rq(&self, cpu: CpuId<N>) -> &Rq {
        self.rqs.get(cpu)
    }

    /// The `nohz` global.
    #[inline]
    pub fn nohz(&self) -> &Nohz<W> {
        &self.nohz
    }

    /// `housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)`: the CPUs that may be picked as idle load
    /// balancer. All CPUs after `init`; clear the NO_HZ_FULL (isolated) ones.
    #[doc(alias = "housekeeping_cpumask")]
    #[inline]
    pub fn housekeeping(&self) -> &CpuMask<W> {
        &self.housekeeping
    }

    /// `cpu_active(cpu)`: `cpu` is up and not being taken down. Every CPU is active from
    /// [`init`](Self::init) on; [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) clears it at the point
    /// of the kernel's `set_cpu_active(cpu, false)` and [`sched_cpu_activate`](Self::sched_cpu_activate)
    /// sets it again. An inactive CPU never registers as idle, does not run the balance
    /// trigger, and returns from newidle at once.
    #[inline]
    pub fn cpu_active(&self, cpu: CpuId<N>) -> bool {
        self.active.test(cpu)
    }

    /// `cpu_active_mask`.
    #[doc(alias = "cpu_active_mask")]
    #[inline]
    pub fn active_mask(&self) -> &CpuMask<W> {
        &self.active
    }

    /// The warning counters.
    #[inline]
    pub fn warnings(&self) -> &Warnings<N> {
        &self.warnings
    }

    /// `sd_llc_shared->nr_busy_cpus` of `cpu`'s LLC, or `None` if it has no LLC domain.
    #[inline]
    pub fn llc_nr_busy_cpus(&self, cpu: CpuId<N>) -> Option<i32> {
        self.llc_of(cpu).map(|(busy, _)| busy.load(Relaxed))
    }

    /// The lowest CPU of `cpu`'s LLC domain (`sd_llc_id`), as an index, if it has one. `None`
    /// where the kernel's `sd_llc` is NULL: no base domain, or an LLC of this CPU alone (there
    /// the kernel's `sd_llc_id` names the CPU itself, but no busy count exists).
    #[doc(alias = "sd_llc_id")]
    #[inline]
    pub fn llc_leader(&self, cpu: CpuId<N>) -> Option<usize> {
        self.rq(cpu).sd(self.domains_slot()).llc_leader()
    }

    /// `sd_llc->nohz_idle` of `cpu`: it is counted as not busy in its LLC.
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
    fn llc_of(&self, cpu: CpuId<N>) -> Option<(&AtomicI32, &crate::fair::rq::SdSlot)> {
        let slot = self.domains_slot();
        let sd = self.rq(cpu).sd(slot);
        // The leader index was checked against nr_cpu_ids when the topology was built.
        let leader = self.nr_cpu_ids().cpu(sd.llc_leader()?).ok()?;
        Some((&self.llcs.get(leader).nr_busy_cpus[slot], sd))
    }

    #[inline]
    pub(crate) fn warn_at(&self, cpu: CpuId<N>) -> WarnAt<'_, N> {
        self.warnings.at(cpu)
    }

    /// The kernel's "this runs on its own CPU" check: counts a warning against `cpu` when the
    /// platform says the caller is on another CPU; the path then carries on, as the kernel does.
    #[inline]
    pub(crate) fn check_on_cpu<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.warn_at(cpu)
            .warn_on(!on_own_cpu(cpu, plat), Warning::WrongCpu);
    }

    /// Rebuilds the scheduling domains' NOHZ state from the platform's topology (the
    /// `build_sched_domains` part that NOHZ sees, run on hotplug and cpuset changes), in
    /// process context (it waits for a grace period: the platform's `synchronize_rcu`).
    ///
    /// Only active CPUs get domains, as the kernel builds them from `cpu_active_mask`: an
    /// inactive CPU is attached to no domain (`rq->sd` NULL) and counts in no LLC.
    ///
    /// Like the kernel's rebuild, every LLC's `nr_busy_cpus` restarts at the LLC's weight and
    /// every CPU's `nohz_idle` at 0, so CPUs still in the idle mask are counted busy until they
    /// leave and re-register (their later exit does not count them twice). Refused, changing
    /// nothing, if the platform's LLC leaders are inconsistent.
    ///
    /// # Racing idle entry and exit
    ///
    /// The kernel publishes new domains through RCU, so a CPU in `set_cpu_sd_state_idle/busy`
    /// sees either the old domain or the new one as a whole. The crate does the same without
    /// a heap: the busy counts and each CPU's LLC view (leader and `nohz_idle`) exist twice,
    /// and a generation word names the current copy. A rebuild waits for a grace period (no
    /// CPU still works on the other copy, current two generations ago), fills that copy, then
    /// publishes it with one Release store (SCHED_DOMAINS_PUBLISH); readers load the word with
    /// Acquire (SCHED_DOMAINS_LOAD). A CPU that was already updating the old copy finishes
    /// there, and its update is gone with it, as on an RCU-freed domain.
    ///
    /// Rebuilds must not run concurrently with each other, nor with
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) / [`sched_cpu_activate`](Self::sched_cpu_activate) (which
    /// rebuild too): the kernel serializes them with the hotplug lock and
    /// `sched_domains_mutex`, and an embedding holds its own equivalent.
    #[doc(alias = "build_sched_domains")]
    #[doc(alias = "partition_sched_domains")]
    #[inline]
    pub fn rebuild_sched_domains<Pl: Platform<N>>(&self, plat: &Pl) -> Result<(), TopologyError> {
        let nr = self.nr_cpu_ids();
        self.check_topology(nr, plat)?;
        plat.synchronize_rcu();
        self.publish_topology(nr, plat);
        Ok(())
    }

    fn check_topology<Pl: Platform<N>>(
        &self,
        nr: NrCpuIds<N>,
        plat: &Pl,
    ) -> Result<(), TopologyError> {
        for cpu in nr.iter() {
            if let Some(leader) = plat.llc_leader(cpu)
                && (leader > cpu || plat.llc_leader(leader) != Some(leader))
            {
                return Err(TopologyError::BadLlcLeader {
                    cpu: cpu.index(),
                    leader: leader.index(),
                });
            }
        }
        Ok(())
    }

    /// Builds the next domain generation in the unused copy and publishes it. The caller
    /// guarantees a grace period since the previous publish (no CPU still reads or writes the
    /// copy written here) and that no other rebuild runs.
    pub(crate) fn publish_topology<Pl: Platform<N>>(&self, nr: NrCpuIds<N>, plat: &Pl) {
        // Only rebuilds write the word, one at a time.
        let next = self.domains_gen.load(Relaxed).wrapping_add(1);
        let slot = (next & 1) as usize;
        // The LLC domain a CPU really gets: only CPUs with a base domain are in one (an
        // isolated CPU has no domains at all), and a span of one CPU is degenerate: the kernel
        // drops it (`sd_degenerate`), so that CPU's `sd_llc` is NULL and it never touches a
        // busy count. Count each span first, in the slots (no heap, O(nr_cpu_ids)).
        let has_domain = |cpu| self.cpu_active(cpu) && plat.has_sched_domain(cpu);
        let leader_of = |cpu| plat.llc_leader(cpu).filter(|_| has_domain(cpu));
        for (_, llc) in self.llcs.iter(nr) {
            llc.span_weight.store(0, Relaxed);
            llc.first.store(u32::MAX, Relaxed);
            llc.nr_busy_cpus[slot].store(0, Relaxed);
        }
        // Ascending, so the first CPU counted under a hardware leader is the domain's first
        // CPU: the leader itself unless it is inactive or isolated.
        for cpu in nr.iter() {
            if let Some(key) = leader_of(cpu) {
                let llc = self.llcs.get(key);
                llc.span_weight
                    .store(llc.span_weight.load(Relaxed) + 1, Relaxed);
                if llc.first.load(Relaxed) == u32::MAX {
                    llc.first.store(cpu.index() as u32, Relaxed);
                }
            }
        }
        // The domain's first CPU (`sd_llc_id`) names it; its slot holds the busy count. A
        // first CPU other than the hardware leader names that leader, so it is no key itself.
        let first_of = |key: CpuId<N>| {
            let llc = self.llcs.get(key);
            (llc.span_weight.load(Relaxed) >= 2)
                .then(|| nr.cpu(llc.first.load(Relaxed) as usize).ok())
                .flatten()
        };
        for (cpu, rq) in self.rqs.iter(nr) {
            let leader = leader_of(cpu).and_then(first_of);
            rq.set_domains(slot, has_domain(cpu), leader.map(CpuId::index));
        }
        // Every CPU of an LLC counts as busy in a fresh domain. Nobody else touches this copy.
        for key in nr.iter() {
            if let Some(first) = first_of(key) {
                let weight = self.llcs.get(key).span_weight.load(Relaxed);
                self.llcs.get(first).nr_busy_cpus[slot].store(weight as i32, Relaxed);
            }
        }
        crate::sync::shared_store();
        // rcu_assign_pointer: the copy above, then the word that makes it current.
        self.domains_gen
            .store(next, SCHED_DOMAINS_PUBLISH.ordering());
        self.update_asym_cpucapacity_key(nr, plat);
    }

    /// The domain build's `sched_asym_cpucapacity` update: the key is on while any CPU has an
    /// `SD_ASYM_CPUCAPACITY` domain (a CPU without a base domain has none, whatever the
    /// platform says). The kernel counts one reference per domain partition that has such a
    /// domain (`build_sched_domains` increments, `detach_destroy_domains` decrements); the crate
    /// rebuilds the whole machine as one partition, so the count is 0 or 1 and the boolean API
    /// keeps it there (silently: the key is the crate's own, never shared with `inc`/`dec`).
    fn update_asym_cpucapacity_key<Pl: Platform<N>>(&self, nr: NrCpuIds<N>, plat: &Pl) {
        let asym = nr
            .iter()
            .any(|cpu| self.rq(cpu).has_sched_domain() && plat.has_asym_cpucapacity(cpu));
        let sink = self.warnings.cpu_less();
        if asym {
            self.sched_asym_cpucapacity.enable(&sink);
        } else {
            self.sched_asym_cpucapacity.disable(&sink);
        }
    }

    /// `sched_asym_cpucap_active()`: some CPU of the machine has asymmetric CPU capacity (the
    /// `sched_asym_cpucapacity` static key, derived from the topology at [`init`](Self::init)
    /// and on every [`rebuild_sched_domains`](Self::rebuild_sched_domains)). A system-wide
    /// answer: on an asymmetric machine it is true on every CPU, including those of a
    /// symmetric partition, as in the kernel.
    ///
    /// A [`StaticKey`] on a line of its own rather than a platform call: newidle reads it each
    /// time a CPU goes idle, and the domain build writes it, so every reader's copy stays
    /// valid and the read is one load that hits; and the crate already applies the kernel's
    /// domain-building rules to the platform's per-CPU answers, so the answer cannot disagree
    /// with them. Like the kernel's key it orders nothing: a CPU racing a rebuild may see either
    /// value, as the kernel's may run either branch while the sites are patched.
    #[doc(alias = "sched_asym_cpucapacity")]
    #[inline(always)]
    pub fn sched_asym_cpucap_active(&self) -> bool {
        self.sched_asym_cpucapacity.unlikely()
    }
}

impl<P: Policy, const N: usize, const W: usize> Default for Machine<P, N, W> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod deadline_word_tests {
    use super::*;

    #[test]
    fn fresh_exactly_while_no_bump_landed() {
        assert!(deadline_fresh(0));
        assert!(deadline_fresh(0xffff_ffff));
        assert!(!deadline_fresh(DEADLINE_BUMP));
        assert!(!deadline_fresh(u64::MAX));
    }

    #[test]
    fn bumps_never_carry_into_the_deadline_and_a_refresh_zeroes_them() {
        let nohz = Nohz::<1>::new();
        nohz.store_next_balance(Jiffies::new(0x1_ffff_fffe));
        nohz.refresh_kick_deadline(Jiffies::new(0x1_0000_0000));
        assert_eq!(
            nohz.kick_deadline(),
            Some(Jiffies::new(0xffff_fffe)),
            "the low 32 bits"
        );
        for i in 1..=3u64 {
            nohz.bump_kick_deadline();
            let w = nohz.scalars.kick_deadline.load(Relaxed);
            assert_eq!(w as u32, 0xffff_fffe, "no carry into the deadline");
            assert_eq!(w >> 33, i);
            assert!(!deadline_not_due(w, Jiffies::new(0x1_0000_0000)), "stale");
        }
        assert_eq!(nohz.kick_deadline(), None);
        nohz.refresh_kick_deadline(Jiffies::new(0x1_0000_0000));
        assert_eq!(nohz.kick_deadline(), Some(Jiffies::new(0xffff_fffe)));
        assert_eq!(nohz.scalars.kick_deadline.load(Relaxed) >> 32, 0);
    }

    #[test]
    fn the_one_compare_not_due_test() {
        let at = |d: u32, n: usize| deadline_not_due(u64::from(d), Jiffies::new(n));
        // Ahead by 1 .. 2^31 - 1: not due, whatever the high bits of now.
        assert!(at(4, 3));
        assert!(at(0x8000_0002, 3));
        assert!(at(0xffff_fffe, 0x1_ffff_fff0));
        // At or past the deadline, or 2^31 or more ahead (wrap-safe "before" says no): due.
        assert!(!at(3, 3));
        assert!(!at(3, 4));
        assert!(!at(0x8000_0003, 3));
        assert!(!at(3, 0x8000_0004));
        // Ahead across a 32-bit wrap of now: the full path decides (it is exact there).
        assert!(!at(3, 0xffff_fff0));
        // A stale word, whatever its deadline.
        for bumps in [1u64, 2, (1 << 31) - 1] {
            for d in [0u32, 4, 0xffff_ffff] {
                let w = u64::from(d) + bumps * DEADLINE_BUMP;
                for n in [0usize, 3, 0xffff_fff0, 0x7fff_ffff] {
                    assert!(
                        !deadline_not_due(w, Jiffies::new(n)),
                        "{bumps} {d:#x} {n:#x}"
                    );
                }
            }
        }
    }
}
