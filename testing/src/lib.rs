//! The host test rig of `nohz`: implementations of the platform traits for tests, loom models,
//! the harness and benches (std), and the shared test rig built on them: [`World`] (a machine
//! and its platform) and [`for_each_policy!`] (one test per policy). A kernel never links it.
//!
//! # Design
//!
//! [`HostPlatform`] answers every platform question from atomics that a test sets
//! (`need_resched`, topology, what a balancing action reports) and records every
//! action the crate asks for, in order, as an [`Event`], so a test can assert exactly which
//! IPIs were sent, which softirqs raised and which runqueues were balanced by whom.
//!
//! The state is built from this crate's `sync` atomics (loom's under `--cfg nohz_loom`, as
//! `nohz`'s own are), so inside a loom model the platform's racy fields are explored like the
//! crate's. The event log is a `std` mutex held only for a `Vec` push (no loom operation
//! inside), so it never blocks a loom thread.
//!
//! [`World`] (`world.rs`) is the one rig the kernel-path tests, the property tests and the
//! loom models build their machines with; its design notes are on the type.
//!
//! The rig reaches the crate's internals through `nohz`'s `testing` feature (hidden from its
//! docs); the planted bugs the harness's soak uses stay in `nohz` (they replay internal steps
//! in orders the crate forbids) and are re-exported here.

#![deny(missing_docs)]

mod world;

/// The one source of this rig's atomics: loom's under `--cfg nohz_loom`, `core`'s otherwise,
/// as `nohz`'s own `sync` switches.
mod sync {
    #[cfg(not(nohz_loom))]
    pub(crate) use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    #[cfg(nohz_loom)]
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
}

pub use nohz::internals::{
    clear_has_blocked_load_unconditionally, nohz_csd_ipi_without_release,
    sched_cpu_deactivate_old_order,
};

pub use world::{CPUS, START_JIFFIES, ShardedHint, ShardedStrict, World, set_busy, set_idle};

use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, IdleHooks, Ipi, KTIME_MAX, MaySleep, NewidleDomain,
    NewidleOutcome, SleepLength, SleepLengthQuery, Softirq, TickHardware, Topology, tick_nsec,
};
use nohz::{CpuId, Jiffies, JiffiesCell, NrCpuIds};
use std::sync::{Arc, Mutex, PoisonError};
use sync::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// One action the crate asked the platform to perform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event<const N: usize> {
    /// [`Ipi::send_nohz_ipi`].
    Ipi {
        /// The kicking CPU.
        from: CpuId<N>,
        /// The CPU kicked.
        to: CpuId<N>,
    },
    /// [`Softirq::raise_sched_softirq`].
    Softirq {
        /// The CPU that raised it (on itself).
        cpu: CpuId<N>,
    },
    /// [`Balance::update_blocked_averages`].
    BlockedAverages {
        /// The CPU doing the work.
        by: CpuId<N>,
        /// The runqueue decayed.
        cpu: CpuId<N>,
    },
    /// [`Balance::update_rq_clock`].
    RqClock {
        /// The CPU doing the work.
        by: CpuId<N>,
        /// The runqueue whose clock was updated.
        cpu: CpuId<N>,
    },
    /// [`Balance::balance_domains`].
    BalanceDomains {
        /// The CPU doing the work.
        by: CpuId<N>,
        /// The runqueue balanced.
        cpu: CpuId<N>,
        /// The idle type passed.
        idle: CpuIdleType,
    },
    /// [`Balance::newidle_balance`].
    NewidleBalance {
        /// The CPU going idle.
        cpu: CpuId<N>,
        /// The start of the walk's cost window: [`Balance::sched_clock_cpu`] (the host clock)
        /// as the crate read it.
        t0: u64,
    },
    /// [`CpuState::synchronize_rcu`].
    SynchronizeRcu,
    /// [`TickHardware::program_tick`].
    ProgramTick {
        /// The CPU whose sched timer was set.
        cpu: CpuId<N>,
        /// When it fires (ns).
        expires: u64,
    },
    /// [`TickHardware::cancel_tick`].
    CancelTick {
        /// The CPU whose sched timer was cancelled.
        cpu: CpuId<N>,
    },
    /// [`TickHardware::account_idle_ticks`].
    IdleTicks {
        /// The CPU.
        cpu: CpuId<N>,
        /// Ticks accounted.
        ticks: usize,
    },
    /// [`IdleHooks::cpuidle_enter`].
    IdleState {
        /// The CPU that idled.
        cpu: CpuId<N>,
    },
    /// [`IdleHooks::poll_idle`].
    PollIdle {
        /// The CPU that polled.
        cpu: CpuId<N>,
    },
    /// [`IdleHooks::report_idle_dead`].
    IdleDead {
        /// The CPU reported dead.
        cpu: CpuId<N>,
    },
    /// The governor ([`Governor::SleepLength`]) asked `tick_nohz_get_sleep_length` in
    /// [`IdleHooks::cpuidle_select`].
    SleepLength {
        /// The idling CPU.
        cpu: CpuId<N>,
        /// The answer.
        sleep: SleepLength,
    },
}

/// A context that may sleep, for tests (`MaySleep`): the tests play the kernel's late
/// initcalls and work items.
#[derive(Debug, Clone, Copy, Default)]
pub struct TestSleepable;
impl MaySleep for TestSleepable {}

/// The cpuidle governor's behaviour in [`HostPlatform`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Governor {
    /// No cpuidle driver: default idle, the tick always goes through the stop path.
    None,
    /// A governor that asks to stop the tick.
    StopTick,
    /// A governor that keeps the tick (a short expected idle).
    RetainTick,
    /// A governor that asks the sleep length (`tick_nohz_get_sleep_length`, recorded as
    /// [`Event::SleepLength`]) and stops the tick if the CPU may sleep at least this long (ns),
    /// as the menu governor's `predicted_ns < TICK_NSEC` rule keeps it otherwise.
    SleepLength {
        /// The shortest sleep worth stopping the tick for.
        stop_from_ns: u64,
    },
}

/// "None" in the per-CPU CPU-id tables.
const NONE: u32 = u32::MAX;

/// Where the host's monotonic clock starts: 1 ms, so no time is 0.
pub const START_NS: u64 = 1_000_000;

/// A recording platform for `N`-CPU machines at `HZ` ticks per second.
///
/// Starts with no CPU needing a reschedule, each with a scheduling domain, all
/// in one LLC led by CPU 0; blocked load fully decays on the first update, a balance pass sets
/// the next one 4 ticks later, and every newidle pass walks its domains, pulling nothing and
/// reporting no deadline (all adjustable). `this_cpu()` is `None` until [`HostPlatform::set_this_cpu`].
#[derive(Debug)]
pub struct HostPlatform<const N: usize, const HZ: u32 = 1000> {
    nr: NrCpuIds<N>,
    jiffies: JiffiesCell,
    need_resched: Vec<AtomicBool>,
    // need_resched asked since the CPU last entered an idle state: the livelock guard.
    resched_polls: Vec<AtomicU32>,
    domain: Vec<AtomicBool>,
    llc: Vec<AtomicU32>,
    blocked_remains: Vec<AtomicBool>,
    balance_interval: AtomicUsize,
    this_cpu: AtomicU32,
    arch_capacity: AtomicUsize,
    imbalance_pct: AtomicU32,
    capacity_reads: AtomicU64,
    asym_priority: Vec<AtomicU32>,
    asym_cpucapacity: AtomicBool,
    newidle_pulls: AtomicBool,
    newidle_deadline: AtomicUsize,
    newidle_has_deadline: AtomicBool,
    rd_overloaded: AtomicBool,
    max_newidle_lb_cost: AtomicU64,
    sd_deadline: AtomicUsize,
    sd_has_deadline: AtomicBool,
    log: Mutex<Vec<Event<N>>>,
    ipi_hook: Mutex<IpiHook<N>>,
    rcu_hook: Mutex<RcuHook<N, HZ>>,
    tick: TickState,
    idle_hook: Mutex<IdleHook<N, HZ>>,
    decay_hook: Mutex<DecayHook<N>>,
}

/// How many `need_resched` answers a CPU may give between two idle states before the host
/// platform calls it a livelock (an idle loop that never idles) and panics.
const LIVELOCK_POLLS: u32 = 100_000;

/// The host's timer hardware and timekeeping.
#[derive(Debug)]
struct TickState {
    now: AtomicU64,
    last_jiffies_update: AtomicU64,
    max_deferment: AtomicU64,
    needs_tick: Vec<AtomicBool>,
    next_timer: Vec<AtomicU64>,
    base_refuses_idle: Vec<AtomicBool>,
    base_idle: Vec<AtomicBool>,
    tick_expiry: Vec<AtomicU64>,
    softirq_pending: Vec<AtomicU32>,
    bh_blocked: Vec<AtomicBool>,
    task_deps: Vec<AtomicU32>,
    vtime: Vec<AtomicBool>,
    iowait: Vec<AtomicBool>,
    idle_poll: AtomicBool,
    governor: AtomicU32,
    governor_stop_from: AtomicU64,
}

/// A callback the platform runs at one of its events, or none (the event's fixed behaviour).
/// It sits behind a `std` mutex and is cloned out before it runs: it may block, yield (a loom
/// unpark) or call back into the crate, never under the lock.
struct Hook<F: ?Sized>(Option<Arc<F>>);

impl<F: ?Sized> Hook<F> {
    /// Installs `f` in `slot`, replacing what was there.
    fn set(slot: &Mutex<Self>, f: Arc<F>) {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Hook(Some(f));
    }

    /// The hook in `slot`, cloned out of the lock.
    fn get(slot: &Mutex<Self>) -> Option<Arc<F>> {
        slot.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }
}

impl<F: ?Sized> core::fmt::Debug for Hook<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(<hook>)"
        } else {
            "None"
        })
    }
}

/// Run inside each idle state (interrupts arriving, in tests and the harness).
type IdleHook<const N: usize, const HZ: u32> =
    Hook<dyn Fn(&HostPlatform<N, HZ>, CpuId<N>) + Send + Sync>;

/// Run inside [`Balance::update_blocked_averages`] (the decay under the target's rq lock, as a
/// test or a loom model plays it); its answer replaces the fixed one.
type DecayHook<const N: usize> = Hook<dyn Fn(CpuId<N>, CpuId<N>) -> bool + Send + Sync>;

/// Run after an IPI is recorded (e.g. to wake the target's thread).
type IpiHook<const N: usize> = Hook<dyn Fn(CpuId<N>, CpuId<N>) + Send + Sync>;

/// Run inside [`CpuState::synchronize_rcu`] (what other CPUs do during the grace period, in
/// tests and loom models), given the platform.
type RcuHook<const N: usize, const HZ: u32> = Hook<dyn Fn(&HostPlatform<N, HZ>) + Send + Sync>;

impl<const N: usize, const HZ: u32> HostPlatform<N, HZ> {
    /// A machine of `nr` CPUs whose clock starts at `start`.
    pub fn new(nr: NrCpuIds<N>, start: Jiffies) -> Self {
        let per_cpu = |v: bool| (0..N).map(|_| AtomicBool::new(v)).collect::<Vec<_>>();
        HostPlatform {
            nr,
            jiffies: JiffiesCell::new(start),
            need_resched: per_cpu(false),
            resched_polls: (0..N).map(|_| AtomicU32::new(0)).collect(),
            domain: per_cpu(true),
            llc: (0..N).map(|_| AtomicU32::new(0)).collect(),
            blocked_remains: per_cpu(false),
            balance_interval: AtomicUsize::new(4),
            this_cpu: AtomicU32::new(NONE),
            arch_capacity: AtomicUsize::new(nohz::platform::SCHED_CAPACITY_SCALE as usize),
            imbalance_pct: AtomicU32::new(117),
            capacity_reads: AtomicU64::new(0),
            asym_priority: (0..N).map(|_| AtomicU32::new(NONE)).collect(),
            asym_cpucapacity: AtomicBool::new(false),
            newidle_pulls: AtomicBool::new(false),
            newidle_deadline: AtomicUsize::new(0),
            newidle_has_deadline: AtomicBool::new(false),
            rd_overloaded: AtomicBool::new(true),
            max_newidle_lb_cost: AtomicU64::new(0),
            sd_deadline: AtomicUsize::new(0),
            sd_has_deadline: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
            ipi_hook: Mutex::new(Hook(None)),
            rcu_hook: Mutex::new(Hook(None)),
            tick: TickState {
                now: AtomicU64::new(START_NS),
                last_jiffies_update: AtomicU64::new(START_NS),
                max_deferment: AtomicU64::new(10 * nohz::platform::NSEC_PER_SEC),
                needs_tick: per_cpu(false),
                next_timer: (0..N).map(|_| AtomicU64::new(KTIME_MAX)).collect(),
                base_refuses_idle: per_cpu(false),
                base_idle: per_cpu(false),
                tick_expiry: (0..N)
                    .map(|_| AtomicU64::new(START_NS + tick_nsec(HZ)))
                    .collect(),
                softirq_pending: (0..N).map(|_| AtomicU32::new(0)).collect(),
                bh_blocked: per_cpu(false),
                task_deps: (0..N).map(|_| AtomicU32::new(0)).collect(),
                vtime: per_cpu(false),
                iowait: per_cpu(false),
                idle_poll: AtomicBool::new(false),
                governor: AtomicU32::new(0),
                governor_stop_from: AtomicU64::new(0),
            },
            idle_hook: Mutex::new(Hook(None)),
            decay_hook: Mutex::new(Hook(None)),
        }
    }

    /// The machine's `nr_cpu_ids`.
    pub fn nr_cpu_ids(&self) -> NrCpuIds<N> {
        self.nr
    }

    /// The clock, to advance or set.
    pub fn clock(&self) -> &JiffiesCell {
        &self.jiffies
    }

    /// Sets or clears `cpu`'s need-resched.
    pub fn set_need_resched(&self, cpu: CpuId<N>, need: bool) {
        self.need_resched[cpu.index()].store(need, Relaxed);
    }

    /// Gives `cpu` a scheduling domain or takes it away (isolation).
    pub fn set_sched_domain(&self, cpu: CpuId<N>, has: bool) {
        self.domain[cpu.index()].store(has, Relaxed);
    }

    /// Puts `cpu` in the LLC whose lowest CPU is `leader`, or in none.
    pub fn set_llc(&self, cpu: CpuId<N>, leader: Option<CpuId<N>>) {
        self.llc[cpu.index()].store(leader.map_or(NONE, |l| l.index() as u32), Relaxed);
    }

    /// Splits the machine into LLCs of `size` consecutive CPUs each.
    pub fn set_llc_size(&self, size: usize) {
        for cpu in self.nr.iter() {
            let leader = cpu.index() / size.max(1) * size.max(1);
            self.set_llc(cpu, self.nr.cpu(leader).ok());
        }
    }

    /// Every CPU's `arch_scale_cpu_capacity` and base domain's `imbalance_pct`.
    pub fn set_capacity(&self, arch_capacity: u64, imbalance_pct: u32) {
        self.arch_capacity.store(arch_capacity as usize, Relaxed);
        self.imbalance_pct.store(imbalance_pct, Relaxed);
    }

    /// How many times the crate asked [`Topology::arch_capacity`] or
    /// [`Topology::imbalance_pct`] so far.
    pub fn capacity_reads(&self) -> u64 {
        self.capacity_reads.load(Relaxed)
    }

    /// Puts `cpu` in the machine-wide asym-packing domain with `priority` (higher is preferred),
    /// or takes it out.
    pub fn set_asym_packing(&self, cpu: CpuId<N>, priority: Option<u32>) {
        self.asym_priority[cpu.index()].store(priority.unwrap_or(NONE), Relaxed);
    }

    /// Gives every CPU an asymmetric-capacity domain, or none.
    pub fn set_asym_cpucapacity(&self, asym: bool) {
        self.asym_cpucapacity.store(asym, Relaxed);
    }

    /// What [`CpuState::this_cpu`] answers.
    pub fn set_this_cpu(&self, cpu: Option<CpuId<N>>) {
        self.this_cpu
            .store(cpu.map_or(NONE, |c| c.index() as u32), Relaxed);
    }

    /// What the next newidle walks report.
    pub fn set_newidle_outcome(&self, outcome: NewidleOutcome) {
        self.newidle_pulls.store(outcome.pulled_task, Relaxed);
        self.newidle_has_deadline
            .store(outcome.next_balance.is_some(), Relaxed);
        self.newidle_deadline
            .store(outcome.next_balance.map_or(0, Jiffies::get), Relaxed);
    }

    /// What newidle reads of every CPU's base domain from now on (the default,
    /// [`NewidleDomain::ALWAYS_WALK`], lets every pass walk).
    pub fn set_newidle_domain(&self, sd: NewidleDomain) {
        self.rd_overloaded.store(sd.rd_overloaded, Relaxed);
        self.max_newidle_lb_cost
            .store(sd.max_newidle_lb_cost, Relaxed);
        self.sd_has_deadline
            .store(sd.next_balance.is_some(), Relaxed);
        self.sd_deadline
            .store(sd.next_balance.map_or(0, Jiffies::get), Relaxed);
    }

    /// Whether `cpu`'s blocked load survives the next decay.
    pub fn set_blocked_load_remains(&self, cpu: CpuId<N>, remains: bool) {
        self.blocked_remains[cpu.index()].store(remains, Relaxed);
    }

    /// How many ticks after a balance pass the balanced runqueue's next one is due.
    pub fn set_balance_interval(&self, ticks: usize) {
        self.balance_interval.store(ticks, Relaxed);
    }

    // ---- tick side ----

    /// The monotonic clock (ns), without touching jiffies.
    pub fn set_time_ns(&self, now: u64) {
        self.tick.now.store(now, Relaxed);
    }

    /// The monotonic clock (ns).
    pub fn time_ns(&self) -> u64 {
        self.tick.now.load(Relaxed)
    }

    /// Moves the clock `ns` on and lets the timekeeper catch jiffies up, as its tick would.
    pub fn advance_time_ns(&self, ns: u64) {
        let now = self.time_ns().saturating_add(ns);
        self.set_time_ns(now);
        self.update_jiffies(now);
    }

    /// Whether RCU, the architecture or irq_work need `cpu`'s tick.
    pub fn set_needs_tick(&self, cpu: CpuId<N>, needs: bool) {
        self.tick.needs_tick[cpu.index()].store(needs, Relaxed);
    }

    /// `cpu`'s next timer expiry (ns; `KTIME_MAX` for none). Reported as set, even when it
    /// lies before the base time (which a real timer wheel never reports), so tests can show
    /// the crate's warning.
    pub fn set_next_timer(&self, cpu: CpuId<N>, at: u64) {
        self.tick.next_timer[cpu.index()].store(at, Relaxed);
    }

    /// Whether `cpu`'s timer base refuses to go idle (keeping the tick).
    pub fn set_timer_base_refuses_idle(&self, cpu: CpuId<N>, refuses: bool) {
        self.tick.base_refuses_idle[cpu.index()].store(refuses, Relaxed);
    }

    /// Whether `cpu`'s timer base is marked idle.
    pub fn timer_base_idle(&self, cpu: CpuId<N>) -> bool {
        self.tick.base_idle[cpu.index()].load(Relaxed)
    }

    /// Pending softirqs on `cpu` ([`softirq`](nohz::platform::softirq) bits).
    pub fn set_softirq_pending(&self, cpu: CpuId<N>, bits: u32) {
        self.tick.softirq_pending[cpu.index()].store(bits, Relaxed);
    }

    /// Whether `cpu`'s bottom halves are blocked (PREEMPT_RT's `local_bh_blocked()`).
    pub fn set_local_bh_blocked(&self, cpu: CpuId<N>, blocked: bool) {
        self.tick.bh_blocked[cpu.index()].store(blocked, Relaxed);
    }

    /// The running task's tick dependencies on `cpu`.
    pub fn set_task_tick_dependencies(&self, cpu: CpuId<N>, bits: u32) {
        self.tick.task_deps[cpu.index()].store(bits, Relaxed);
    }

    /// Whether vtime accounts `cpu` (NO_HZ_FULL CPUs usually).
    pub fn set_vtime_accounting(&self, cpu: CpuId<N>, vtime: bool) {
        self.tick.vtime[cpu.index()].store(vtime, Relaxed);
    }

    /// Whether `cpu`'s idle time counts as iowait.
    pub fn set_iowait(&self, cpu: CpuId<N>, iowait: bool) {
        self.tick.iowait[cpu.index()].store(iowait, Relaxed);
    }

    /// `timekeeping_max_deferment()`.
    pub fn set_max_deferment(&self, ns: u64) {
        self.tick.max_deferment.store(ns, Relaxed);
    }

    /// Whether idle must poll.
    pub fn set_idle_poll(&self, poll: bool) {
        self.tick.idle_poll.store(poll, Relaxed);
    }

    /// The cpuidle governor's behaviour.
    pub fn set_governor(&self, governor: Governor) {
        let code = match governor {
            Governor::None => 0,
            Governor::StopTick => 1,
            Governor::RetainTick => 2,
            Governor::SleepLength { stop_from_ns } => {
                self.tick.governor_stop_from.store(stop_from_ns, Relaxed);
                3
            }
        };
        self.tick.governor.store(code, Relaxed);
    }

    /// Runs `during(cpu)` inside each idle state and poll (an interrupt arriving). Without a
    /// hook the idle state returns at once with `need_resched` set, ending the idle loop.
    pub fn on_idle(&self, during: impl Fn(CpuId<N>) + Send + Sync + 'static) {
        Hook::set(&self.idle_hook, Arc::new(move |_: &Self, cpu| during(cpu)));
    }

    /// [`on_idle`](Self::on_idle) for a hook that needs the platform itself (to set
    /// `need_resched`, or to hand it to the machine's interrupt entry points): it gets it as
    /// an argument, so it need not hold an `Arc` of the platform it is stored in (a cycle that
    /// loom reports as a leak).
    pub fn on_idle_with(&self, during: impl Fn(&Self, CpuId<N>) + Send + Sync + 'static) {
        Hook::set(&self.idle_hook, Arc::new(during));
    }

    fn idle_event(&self, cpu: CpuId<N>) {
        self.resched_polls[cpu.index()].store(0, Relaxed);
        match Hook::get(&self.idle_hook) {
            Some(during) => during(self, cpu),
            None => self.set_need_resched(cpu, true),
        }
    }

    /// Runs `deliver(from, to)` after each IPI is recorded: the harness and loom models use it
    /// to wake the target CPU's thread, which then calls the crate's csd entry point.
    pub fn on_ipi(&self, deliver: impl Fn(CpuId<N>, CpuId<N>) + Send + Sync + 'static) {
        Hook::set(&self.ipi_hook, Arc::new(deliver));
    }

    /// Runs `wait` inside every [`CpuState::synchronize_rcu`], after recording it: what the
    /// grace period lets happen meanwhile (the dying CPU running its idle loop while the
    /// hotplug thread sleeps), or, in a loom model, the wait for the readers itself.
    pub fn on_synchronize_rcu(&self, wait: impl Fn(&Self) + Send + Sync + 'static) {
        Hook::set(&self.rcu_hook, Arc::new(wait));
    }

    /// Runs `decay(by, cpu)` inside each [`Balance::update_blocked_averages`], after the event
    /// is recorded, and answers with its result (whether blocked load remains) instead of the
    /// [`set_blocked_load_remains`](Self::set_blocked_load_remains) setting. Tests use it to make
    /// the target CPU run a task and go idle again while the ILB decays it; loom models, to play
    /// the decay as a critical section under the target's rq lock.
    pub fn on_update_blocked_averages(
        &self,
        decay: impl Fn(CpuId<N>, CpuId<N>) -> bool + Send + Sync + 'static,
    ) {
        Hook::set(&self.decay_hook, Arc::new(decay));
    }

    fn record(&self, event: Event<N>) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Event<N>> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every event so far, in order, clearing the log.
    pub fn take_events(&self) -> Vec<Event<N>> {
        core::mem::take(&mut *self.log.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The IPIs sent so far, as `(from, to)` pairs.
    pub fn ipis(&self) -> Vec<(CpuId<N>, CpuId<N>)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Ipi { from, to } => Some((from, to)),
                _ => None,
            })
            .collect()
    }
}

impl<const N: usize, const HZ: u32> Clock for HostPlatform<N, HZ> {
    const HZ: u32 = HZ;
    fn jiffies(&self) -> Jiffies {
        self.jiffies.get()
    }
}

impl<const N: usize, const HZ: u32> CpuState<N> for HostPlatform<N, HZ> {
    fn need_resched(&self, cpu: CpuId<N>) -> bool {
        // An idle loop that asks again and again without ever entering an idle state (or
        // polling) never ends: fail at once rather than hang the test run.
        let polls = self.resched_polls[cpu.index()].fetch_add(1, Relaxed);
        assert!(
            polls < LIVELOCK_POLLS,
            "CPU {} asked need_resched {LIVELOCK_POLLS} times without entering an idle state: \
             the idle loop spins",
            cpu.index()
        );
        self.need_resched[cpu.index()].load(Relaxed)
    }
    fn this_cpu(&self) -> Option<CpuId<N>> {
        self.nr.cpu(self.this_cpu.load(Relaxed) as usize).ok()
    }
    fn synchronize_rcu(&self) {
        self.record(Event::SynchronizeRcu);
        if let Some(wait) = Hook::get(&self.rcu_hook) {
            wait(self);
        }
    }
}

impl<const N: usize, const HZ: u32> Ipi<N> for HostPlatform<N, HZ> {
    fn send_nohz_ipi(&self, from: CpuId<N>, to: CpuId<N>) {
        self.record(Event::Ipi { from, to });
        if let Some(deliver) = Hook::get(&self.ipi_hook) {
            deliver(from, to);
        }
    }
}

impl<const N: usize, const HZ: u32> Softirq<N> for HostPlatform<N, HZ> {
    fn raise_sched_softirq(&self, cpu: CpuId<N>) {
        self.record(Event::Softirq { cpu });
    }
}

impl<const N: usize, const HZ: u32> Topology<N> for HostPlatform<N, HZ> {
    fn has_sched_domain(&self, cpu: CpuId<N>) -> bool {
        self.domain[cpu.index()].load(Relaxed)
    }
    fn llc_leader(&self, cpu: CpuId<N>) -> Option<CpuId<N>> {
        self.nr
            .cpu(self.llc[cpu.index()].load(Relaxed) as usize)
            .ok()
    }
    fn arch_capacity(&self, _cpu: CpuId<N>) -> u64 {
        self.capacity_reads.fetch_add(1, Relaxed);
        self.arch_capacity.load(Relaxed) as u64
    }
    fn imbalance_pct(&self, _cpu: CpuId<N>) -> u32 {
        self.capacity_reads.fetch_add(1, Relaxed);
        self.imbalance_pct.load(Relaxed)
    }
    fn has_asym_packing(&self, cpu: CpuId<N>) -> bool {
        self.asym_priority[cpu.index()].load(Relaxed) != NONE
    }
    fn asym_prefers(&self, dst: CpuId<N>, src: CpuId<N>) -> bool {
        let prio = |c: CpuId<N>| self.asym_priority[c.index()].load(Relaxed);
        let (d, s) = (prio(dst), prio(src));
        d != NONE && s != NONE && d > s
    }
    fn has_asym_cpucapacity(&self, _cpu: CpuId<N>) -> bool {
        self.asym_cpucapacity.load(Relaxed)
    }
}

impl<const N: usize, const HZ: u32> Balance<N> for HostPlatform<N, HZ> {
    fn update_blocked_averages(&self, by: CpuId<N>, cpu: CpuId<N>) -> bool {
        self.record(Event::BlockedAverages { by, cpu });
        match Hook::get(&self.decay_hook) {
            Some(decay) => decay(by, cpu),
            None => self.blocked_remains[cpu.index()].load(Relaxed),
        }
    }
    fn update_rq_clock(&self, by: CpuId<N>, cpu: CpuId<N>) {
        self.record(Event::RqClock { by, cpu });
    }
    fn balance_domains(&self, by: CpuId<N>, cpu: CpuId<N>, idle: CpuIdleType) -> Jiffies {
        self.record(Event::BalanceDomains { by, cpu, idle });
        self.jiffies.get().add(self.balance_interval.load(Relaxed))
    }
    fn newidle_domain(&self, _cpu: CpuId<N>) -> NewidleDomain {
        NewidleDomain {
            rd_overloaded: self.rd_overloaded.load(Relaxed),
            max_newidle_lb_cost: self.max_newidle_lb_cost.load(Relaxed),
            next_balance: self
                .sd_has_deadline
                .load(Relaxed)
                .then(|| Jiffies::new(self.sd_deadline.load(Relaxed))),
        }
    }
    fn sched_clock_cpu(&self, _cpu: CpuId<N>) -> u64 {
        self.time_ns()
    }
    fn newidle_balance(&self, cpu: CpuId<N>, t0: u64) -> NewidleOutcome {
        self.record(Event::NewidleBalance { cpu, t0 });
        NewidleOutcome {
            pulled_task: self.newidle_pulls.load(Relaxed),
            next_balance: self
                .newidle_has_deadline
                .load(Relaxed)
                .then(|| Jiffies::new(self.newidle_deadline.load(Relaxed))),
        }
    }
}

impl<const N: usize, const HZ: u32> TickHardware<N> for HostPlatform<N, HZ> {
    fn ktime_get(&self) -> u64 {
        self.time_ns()
    }
    fn jiffies_update(&self) -> (Jiffies, u64) {
        (
            self.jiffies.get(),
            self.tick.last_jiffies_update.load(Relaxed),
        )
    }
    fn update_jiffies(&self, now: u64) {
        let period = tick_nsec(HZ);
        let last = self.tick.last_jiffies_update.load(Relaxed);
        if now < last.saturating_add(period) {
            return;
        }
        let ticks = (now - last) / period;
        self.jiffies.advance(ticks as usize);
        self.tick
            .last_jiffies_update
            .store(last + ticks * period, Relaxed);
    }
    fn cpu_needs_tick(&self, cpu: CpuId<N>) -> bool {
        self.tick.needs_tick[cpu.index()].load(Relaxed)
    }
    fn next_timer_interrupt(&self, cpu: CpuId<N>, _basej: Jiffies, _basem: u64) -> u64 {
        self.tick.next_timer[cpu.index()].load(Relaxed)
    }
    fn timer_base_try_to_set_idle(
        &self,
        cpu: CpuId<N>,
        _basej: Jiffies,
        _basem: u64,
    ) -> Option<u64> {
        if self.tick.base_refuses_idle[cpu.index()].load(Relaxed) {
            return None;
        }
        self.tick.base_idle[cpu.index()].store(true, Relaxed);
        Some(self.tick.next_timer[cpu.index()].load(Relaxed))
    }
    fn timer_clear_idle(&self, cpu: CpuId<N>) {
        self.tick.base_idle[cpu.index()].store(false, Relaxed);
    }
    fn timekeeping_max_deferment(&self) -> u64 {
        self.tick.max_deferment.load(Relaxed)
    }
    fn program_tick(&self, cpu: CpuId<N>, expires: u64) {
        self.tick.tick_expiry[cpu.index()].store(expires, Relaxed);
        self.record(Event::ProgramTick { cpu, expires });
    }
    fn cancel_tick(&self, cpu: CpuId<N>) {
        self.tick.tick_expiry[cpu.index()].store(KTIME_MAX, Relaxed);
        self.record(Event::CancelTick { cpu });
    }
    fn tick_expiry(&self, cpu: CpuId<N>) -> u64 {
        self.tick.tick_expiry[cpu.index()].load(Relaxed)
    }
    fn local_softirq_pending(&self, cpu: CpuId<N>) -> u32 {
        self.tick.softirq_pending[cpu.index()].load(Relaxed)
    }
    fn local_bh_blocked(&self, cpu: CpuId<N>) -> bool {
        self.tick.bh_blocked[cpu.index()].load(Relaxed)
    }
    fn task_tick_dependencies(&self, cpu: CpuId<N>) -> u32 {
        self.tick.task_deps[cpu.index()].load(Relaxed)
    }
    fn vtime_accounting(&self, cpu: CpuId<N>) -> bool {
        self.tick.vtime[cpu.index()].load(Relaxed)
    }
    fn account_idle_ticks(&self, cpu: CpuId<N>, ticks: usize) {
        self.record(Event::IdleTicks { cpu, ticks });
    }
    fn in_iowait(&self, cpu: CpuId<N>) -> bool {
        self.tick.iowait[cpu.index()].load(Relaxed)
    }
}

impl<const N: usize, const HZ: u32> IdleHooks<N> for HostPlatform<N, HZ> {
    fn idle_poll(&self, _cpu: CpuId<N>) -> bool {
        self.tick.idle_poll.load(Relaxed)
    }
    fn poll_idle(&self, cpu: CpuId<N>) {
        self.record(Event::PollIdle { cpu });
        self.idle_event(cpu);
    }
    fn cpuidle_select(&self, cpu: CpuId<N>, sleep: &SleepLengthQuery<'_>) -> Option<bool> {
        match self.tick.governor.load(Relaxed) {
            1 => Some(true),
            2 => Some(false),
            3 => {
                let answer = sleep.tick_nohz_get_sleep_length();
                self.record(Event::SleepLength { cpu, sleep: answer });
                Some(answer.sleep_length >= self.tick.governor_stop_from.load(Relaxed))
            }
            _ => None,
        }
    }
    fn cpuidle_enter(&self, cpu: CpuId<N>) {
        self.record(Event::IdleState { cpu });
        self.idle_event(cpu);
    }
    fn report_idle_dead(&self, cpu: CpuId<N>) {
        self.record(Event::IdleDead { cpu });
    }
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    use super::*;
    use nohz::platform::Platform;

    fn assert_platform<P: Platform<8>>(_: &P) {}

    #[test]
    fn answers_and_records() {
        let nr = NrCpuIds::<8>::new(4).unwrap();
        let p = HostPlatform::<8, 250>::new(nr, Jiffies::new(usize::MAX));
        assert_platform(&p);
        let (c0, c3) = (nr.cpu(0).unwrap(), nr.cpu(3).unwrap());
        assert_eq!(
            p.msecs_to_jiffies(32),
            8,
            "HZ comes from the const parameter"
        );
        assert!(!p.need_resched(c3));
        p.set_need_resched(c3, true);
        assert!(p.need_resched(c3));
        assert_eq!(p.llc_leader(c3), Some(c0));
        p.set_llc(c3, None);
        assert_eq!(p.llc_leader(c3), None);
        p.set_llc_size(2);
        assert_eq!(p.llc_leader(c3), nr.cpu(2).ok());
        assert_eq!(p.this_cpu(), None);
        p.set_this_cpu(Some(c3));
        assert_eq!(p.this_cpu(), Some(c3));
        p.set_sched_domain(c0, false);
        assert!(!p.has_sched_domain(c0) && p.has_sched_domain(c3));

        p.send_nohz_ipi(c0, c3);
        p.raise_sched_softirq(c3);
        assert!(!p.update_blocked_averages(c3, c0));
        p.set_blocked_load_remains(c0, true);
        assert!(p.update_blocked_averages(c3, c0));
        p.update_rq_clock(c3, c0);
        assert_eq!(p.balance_domains(c3, c0, CpuIdleType::Idle).get(), 3);
        assert_eq!(p.ipis(), [(c0, c3)]);
        assert_eq!(p.take_events().len(), 6);
        assert!(p.events().is_empty());

        // A decay hook answers instead of the setting, and the call is still recorded.
        p.on_update_blocked_averages(move |by, cpu| by == c3 && cpu != c0);
        assert!(
            !p.update_blocked_averages(c3, c0),
            "the hook, not the setting"
        );
        assert!(p.update_blocked_averages(c3, c3));
        assert_eq!(p.take_events().len(), 2);
    }
}
