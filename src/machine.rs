//! `Machine`: the one value a kernel declares as a `static`. It owns every room (fair.c's
//! NOHZ state, tick-sched, irq time, the CPU set) and is the list of entry points: boot
//! ([`Machine::init`]), the paths the kernel calls from its tick, idle loop, IPI and softirq
//! handlers, and CPU online/offline. No room imports it: each room's paths take the pieces
//! they need (the machine's [`Cpus`], its [`Fair`]) as parameters, and the machine passes
//! them in.
//!
//! C source: none of its own: the owner of every room, and the list of entry points (each names its C function).
//!
//! Each entry point's doc opens with the C function it mirrors and links the room's
//! implementation, whose docs carry the detail.

use crate::cpu::{CpuError, CpuId, NrCpuIds};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::fair::rq::Rq;
use crate::fair::{Fair, TopologyError};
use crate::idle::IdleExit;
use crate::irqtime::{IrqTime, IrqTimes};
use crate::platform::{IdlePlatform, MaySleep, Platform, TickPlatform};
use crate::policy::Policy;
use crate::sched_core::HotplugError;
use crate::tick_sched::{NohzFullError, TickSched, Ticks};
use crate::warn::Warnings;
use core::fmt;

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
#[repr(C)]
pub struct Machine<P: Policy, const N: usize, const W: usize> {
    // The rooms the hot paths touch first lead, so the busy tick's loads are at small
    // offsets from the machine's address (ci/guards.sh, T5a).
    pub(crate) fair: Fair<P, N, W>,
    pub(crate) cpus: Cpus<N, W>,
    pub(crate) ticks: Ticks<N, W>,
    pub(crate) irqtime: IrqTimes<N>,
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
                fair: Fair::new(),
                cpus: Cpus::new(),
                ticks: Ticks::new(),
                irqtime: IrqTimes::new(),
            }
        }
    }

    /// Boot: fixes `nr_cpu_ids`, makes every CPU active (`cpu_active_mask`; from then on only
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) and [`sched_cpu_activate`](Self::sched_cpu_activate) change
    /// it) and a housekeeping CPU (clear the NO_HZ_FULL ones afterwards through
    /// housekeeping set, see [`tick_nohz_full_setup`](Self::tick_nohz_full_setup)), sets `nohz.next_balance`,
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
        let nr_ids = NrCpuIds::<N>::checked(nr).map_err(InitError::Cpus)?;
        let boot = nr_ids.cpu(boot_cpu).map_err(InitError::Cpus)?;
        // Visible to the platform's `Machine::cpu` calls from here on; withdrawn on refusal.
        self.cpus.claim(nr_ids).map_err(InitError::Cpus)?;
        if let Err(e) = self.fair.check_topology(nr_ids, plat) {
            self.cpus.withdraw(nr_ids);
            return Err(InitError::Topology(e));
        }
        for cpu in nr_ids.iter() {
            self.cpus.set_online(cpu, true);
            self.cpus.set_active(cpu, true);
        }
        self.fair.boot(&self.cpus, nr_ids, plat);
        // The boot CPU keeps time until it hands the duty off.
        self.ticks.set_tick_do_timer_cpu(Some(boot));
        Ok(nr_ids)
    }

    /// `nr_cpu_ids` (zero before [`init`](Self::init)).
    #[inline(always)]
    pub fn nr_cpu_ids(&self) -> NrCpuIds<N> {
        self.cpus.nr_cpu_ids()
    }

    /// CPU `index`, if this machine has it.
    #[inline]
    pub fn cpu(&self, index: usize) -> Result<CpuId<N>, CpuError> {
        self.cpus.cpu(index)
    }

    /// `cpu_active(cpu)`: `cpu` is up and not being taken down. Every CPU is active from
    /// [`init`](Self::init) on; [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) clears it
    /// at the point of the kernel's `set_cpu_active(cpu, false)` and
    /// [`sched_cpu_activate`](Self::sched_cpu_activate) sets it again. An inactive CPU never
    /// registers as idle, does not run the balance trigger, and returns from newidle at once.
    #[inline]
    pub fn cpu_active(&self, cpu: CpuId<N>) -> bool {
        self.cpus.cpu_active(cpu)
    }

    /// `cpu_online(cpu)`: up and taking interrupts. Every CPU is online from
    /// [`init`](Self::init); [`cpu_dying`](Self::cpu_dying) takes it offline and
    /// [`cpu_starting`](Self::cpu_starting) brings it back.
    #[inline]
    pub fn cpu_online(&self, cpu: CpuId<N>) -> bool {
        self.cpus.cpu_online(cpu)
    }

    /// `flush_smp_call_function_queue()`'s nohz part on `cpu`, on `cpu` with interrupts off:
    /// runs the nohz csd if a kick queued it, and says whether one ran.
    #[inline]
    pub fn flush_smp_call_function_queue<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        crate::sched_core::flush_smp_call_function_queue(&self.cpus, &self.fair, cpu, plat)
    }

    /// The warning counters.
    #[inline]
    pub fn warnings(&self) -> &Warnings<N> {
        self.cpus.warnings()
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
        self.fair.rebuild_sched_domains(&self.cpus, plat)
    }

    /// `do_idle()` on `cpu`: `nohz_run_idle_balance`, `tick_nohz_idle_enter`, then until a
    /// reschedule is needed: report a CPU that went offline, poll (restarting a stopped tick)
    /// or go through `cpuidle_idle_call`; finally `tick_nohz_idle_exit` and
    /// `flush_smp_call_function_queue` (a kick whose IPI was elided while the CPU polled),
    /// then the `SCHED_SOFTIRQ` that csd raised (`do_softirq_post_smp_call_flush`); with no
    /// csd queued it runs no softirq (the kernel's flush returns at once on an empty queue).
    ///
    /// Call it from the idle task's loop on `cpu` with interrupts off, after
    /// [`sched_balance_newidle`](Self::sched_balance_newidle) found nothing to pull; on
    /// [`IdleExit::Resched`] schedule, then call it again when the CPU next has nothing to
    /// run; on [`IdleExit::CpuDead`] the CPU went offline
    /// ([`cpu_dying`](Self::cpu_dying) ran): park it.
    #[inline]
    pub fn do_idle<Pl: IdlePlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> IdleExit {
        crate::idle::do_idle(&self.cpus, &self.fair, &self.ticks, cpu, plat)
    }

    /// `tick_nohz_get_sleep_length(&delta_next)` on `cpu`: for its cpuidle governor, how long
    /// the CPU may sleep if its tick stops, and until its next tick if it is kept
    /// ([`SleepLength`](crate::platform::SleepLength), from the idle entry).
    ///
    /// Call it on `cpu` from its governor's [`cpuidle_select`](crate::platform::IdleHooks::cpuidle_select),
    /// inside [`do_idle`](Self::do_idle) with interrupts off; the `sleep` handle that
    /// `cpuidle_select` gets runs this same call, for a governor that does not reach the
    /// machine. It computes the next event and caches it: the tick stop that follows (the
    /// governor answering `Some(true)`) uses exactly that event, and `Some(false)` drops it,
    /// as the kernel's `tick_nohz_idle_retain_tick` does. Called elsewhere, the cache outlives
    /// the call: outside the idle section it is a
    /// [`Warning::SleepLengthOutsideIdle`](crate::Warning) (and the next idle entry counts a
    /// `CachedNextEvent`), and for another CPU a `WrongCpu`.
    #[inline]
    pub fn tick_nohz_get_sleep_length<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> crate::platform::SleepLength {
        self.ticks
            .tick_nohz_get_sleep_length(&self.cpus, &self.fair, cpu, plat)
    }

    /// `sched_cpu_deactivate`'s NOHZ part, on `cpu` (the CPU going down, from its hotplug
    /// thread: process context, may sleep): checks that the CPU may go
    /// (`tick_nohz_cpu_hotpluggable`: not the NO_HZ_FULL timekeeper; not the last active
    /// CPU), then in the kernel's order leaves the idle mask (`nohz_balance_exit_idle`), clears
    /// the CPU's active bit (`set_cpu_active(cpu, false)`), waits for a grace period
    /// (`synchronize_rcu`) and rebuilds the domains without the CPU (`cpuset_cpu_inactive`).
    ///
    /// Interrupts stay on: the CPU's own tick may run in the middle of it, and its
    /// `nohz_balance_exit_idle` and this call's take the CPU out once between them.
    ///
    /// After it returns the CPU is never in the idle mask again until
    /// [`sched_cpu_activate`](Self::sched_cpu_activate), and no kicker sends it a nohz kick: the CPU's own
    /// idle loop, which may run during the wait, finds it inactive and does not register.
    /// A kick already sent before is flushed by [`cpu_dying`](Self::cpu_dying).
    ///
    /// The kernel's own refusals come before or after it: run `dl_bw_deactivate` before this
    /// call; if a later step refuses (`cpuset_cpu_inactive` in the kernel, or any step of the
    /// embedder's own), roll back with [`sched_cpu_activate`](Self::sched_cpu_activate), as the kernel's
    /// `sched_cpu_deactivate` does. Refused, changing nothing, for an inactive CPU, the last
    /// active CPU, or the NO_HZ_FULL timekeeper.
    #[doc(alias = "set_cpu_active")]
    pub fn sched_cpu_deactivate<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Result<(), HotplugError> {
        let index = cpu.index();
        if !self.cpu_active(cpu) {
            return Err(HotplugError::NotActive { cpu: index });
        }
        if !self.ticks.tick_nohz_cpu_hotpluggable(&self.cpus, cpu) {
            return Err(HotplugError::NohzFullTimekeeper { cpu: index });
        }
        if self
            .cpus
            .active_mask()
            .iter(self.nr_cpu_ids())
            .all(|other| other == cpu)
        {
            return Err(HotplugError::LastActiveCpu { cpu: index });
        }
        // Out of the mask, inactive, the grace period, the rebuild: in that order.
        crate::sched_core::hotplug::deactivate(&self.cpus, &self.fair, cpu, plat);
        Ok(())
    }

    /// `sched_cpu_activate`'s NOHZ part, on `cpu`: the CPU is active again
    /// (`set_cpu_active(cpu, true)`) and the domains are rebuilt with it
    /// (`cpuset_cpu_active`). Call it for a CPU coming (back) up, once its tick is set up
    /// ([`cpu_starting`](Self::cpu_starting): a CPU that died lost its NO_HZ
    /// mode with the rest of its tick state), and as the rollback of a
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) that a later step refused. Refused, changing
    /// nothing, for a CPU that is already active.
    #[doc(alias = "set_cpu_active")]
    pub fn sched_cpu_activate<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Result<(), HotplugError> {
        if self.cpu_active(cpu) {
            return Err(HotplugError::AlreadyActive { cpu: cpu.index() });
        }
        crate::sched_core::hotplug::activate(&self.cpus, &self.fair, cpu, plat);
        Ok(())
    }

    /// The dying CPU's last NOHZ and tick steps, on `cpu` itself with interrupts off (the
    /// kernel's `CPUHP_AP_*_DYING` callbacks, in stop-machine, in their teardown order), after
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate):
    ///
    /// - `set_cpu_online(cpu, false)` (`__cpu_disable`): the CPU's idle loop returns
    ///   [`IdleExit::CpuDead`] from here on, until [`cpu_starting`](Self::cpu_starting);
    /// - `tick_cpu_dying` (`CPUHP_AP_TICK_DYING`): if the CPU keeps time, the duty passes to
    ///   the lowest other active CPU (the others are all spinning in stop-machine, so none can
    ///   race for it); then `tick_sched_timer_dying`: the sched timer is cancelled and the
    ///   CPU's `tick_sched` is reset, keeping only the idle statistics (`idle_sleeptime`,
    ///   `iowait_sleeptime`, `idle_calls`, `idle_sleeps`), so INIDLE, STOPPED, IDLE_ACTIVE and
    ///   NO_HZ mode are all clear when it comes back;
    /// - `smpcfd_dying_cpu` (`CPUHP_AP_SMPCFD_DYING`, later): `flush_smp_call_function_queue`,
    ///   so a nohz kick still queued for the CPU runs its handler now and no kick bit and no
    ///   busy csd survive into the CPU's next life.
    ///
    /// Refused, changing nothing, for a CPU that is still active.
    #[doc(alias = "tick_cpu_dying")]
    #[doc(alias = "smpcfd_dying_cpu")]
    #[doc(alias = "flush_smp_call_function_queue")]
    #[doc(alias = "tick_sched_timer_dying")]
    #[doc(alias = "__cpu_disable")]
    pub fn cpu_dying<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Result<(), HotplugError> {
        if self.cpu_active(cpu) {
            return Err(HotplugError::StillActive { cpu: cpu.index() });
        }
        // __cpu_disable: offline before the dying callbacks run.
        self.cpus.set_online(cpu, false);
        self.ticks.tick_cpu_dying(&self.cpus, cpu, plat);
        crate::sched_core::hotplug::smpcfd_dying_cpu(&self.cpus, &self.fair, cpu, plat);
        Ok(())
    }

    /// `sched_balance_softirq()` on `cpu`: the ILB work a kick handed over, if any and if the
    /// CPU is still idle, covers this CPU too; otherwise the CPU refreshes its own blocked
    /// load and balances its own domains.
    #[inline(always)]
    pub fn sched_balance_softirq<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.fair.sched_balance_softirq(&self.cpus, cpu, plat)
    }

    /// The NOHZ-visible part of `sched_balance_newidle()` on `cpu`, about to go idle: the
    /// misfit status is cleared if the machine has asymmetric CPU capacity
    /// (the `sched_asym_cpucapacity` key; on a symmetric machine
    /// `update_misfit_status(NULL, rq)` returns at once and `misfit_task_load` is left as it
    /// was); a CPU with a queued wakeup or an inactive one stops there. Where the platform's
    /// [`newidle_domain`](crate::platform::Balance::newidle_domain) allows a walk, the CPU
    /// reads the start of the walk's cost window
    /// ([`sched_clock_cpu`](crate::platform::Balance::sched_clock_cpu)), refreshes its own
    /// blocked averages, then the platform's domain walk tries to pull a task, given that
    /// start so the refresh counts toward its cost (a CPU without a domain goes on without
    /// either); `rq.next_balance` is pulled in to
    /// `jiffies + HZ` or the domains' earlier deadline, and if nothing was pulled
    /// `nohz_newidle_balance` may ask for a blocked-load refresh. Returns whether a task was
    /// pulled.
    #[inline(always)]
    #[doc(alias = "update_misfit_status")]
    pub fn sched_balance_newidle<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        self.fair.sched_balance_newidle(&self.cpus, cpu, plat)
    }

    /// `cpu_rq(cpu)`.
    #[inline(always)]
    #[doc(alias = "cpu_rq")]
    pub fn rq(&self, cpu: CpuId<N>) -> &Rq {
        self.fair.rq(cpu)
    }

    /// `tick_dep_set(bit)`: a machine-wide tick dependency (`tick_dep_mask`).
    #[inline(always)]
    pub fn tick_dep_set(&self, bits: u32) {
        self.ticks.tick_dep_set(bits)
    }

    /// `tick_dep_clear(bit)`.
    #[inline(always)]
    pub fn tick_dep_clear(&self, bits: u32) {
        self.ticks.tick_dep_clear(bits)
    }

    /// `cpu`'s `struct tick_sched`.
    #[inline(always)]
    pub fn tick_sched(&self, cpu: CpuId<N>) -> &TickSched {
        self.ticks.tick_sched(cpu)
    }

    /// `irqtime_enabled()`: `static_branch_likely(&sched_clock_irqtime)` under `Patched`; the
    /// plain flag in the `nohz` line under `Legacy`.
    #[inline(always)]
    pub fn irqtime_enabled(&self) -> bool {
        self.irqtime.irqtime_enabled(&self.fair)
    }

    /// `enable_sched_clock_irqtime()`: at sched_clock registration (boot). Idempotent, and
    /// callable from any context, IRQs off and under spinlocks included. Call it before the
    /// CPUs take interrupts: a CPU inside a handler as the key turns on charges everything
    /// since its last accounting (its whole uptime, the first time) to hardirq time at that
    /// handler's exit, as the kernel's accounting would (see
    /// [`IrqTime`](crate::IrqTime)'s record and `src/irqtime.rs`).
    #[inline(always)]
    pub fn enable_sched_clock_irqtime(&self) {
        self.irqtime
            .enable_sched_clock_irqtime(&self.cpus, &self.fair)
    }

    /// `disable_sched_clock_irqtime()`, only from a context that may sleep, and only if still
    /// enabled (so repeating it costs nothing and never warns).
    #[inline(always)]
    pub fn disable_sched_clock_irqtime(&self, _may_sleep: &impl MaySleep) {
        self.irqtime
            .disable_sched_clock_irqtime(&self.cpus, &self.fair, _may_sleep)
    }

    /// `nohz_full=` at boot (`tick_nohz_full_setup`, with `housekeeping_setup`'s split): the
    /// CPUs with these indices become NO_HZ_FULL (their tick may stop while they run one task)
    /// and leave the housekeeping set (they are never chosen as the idle load balancer).
    ///
    /// Call it on the boot CPU right after [`init`](Self::init), before the other CPUs start;
    /// more calls add more CPUs. All or nothing: refused, changing nothing, before init, for an
    /// index the machine does not have, for the CPU that keeps time (the boot CPU: it must stay
    /// a housekeeping CPU, as the kernel keeps it), or if no housekeeping CPU would be left.
    ///
    /// A NO_HZ_FULL CPU's platform answers
    /// [`vtime_accounting`](crate::platform::TickHardware::vtime_accounting) true, as the
    /// kernel's `context_tracking` does there.
    #[doc(alias = "housekeeping_setup")]
    #[doc(alias = "nohz_full")]
    pub fn tick_nohz_full_setup(
        &self,
        cpus: impl IntoIterator<Item = usize>,
    ) -> Result<(), NohzFullError> {
        let nr = self.nr_cpu_ids();
        if nr.get() == 0 {
            return Err(NohzFullError::NotBooted);
        }
        let full = CpuMask::<W>::new();
        for index in cpus {
            full.set(nr.cpu(index).map_err(NohzFullError::NoSuchCpu)?);
        }
        if let Some(keeper) = self.ticks.tick_do_timer_cpu(nr)
            && full.test(keeper)
        {
            return Err(NohzFullError::Timekeeper {
                cpu: keeper.index(),
            });
        }
        let hk = self.fair.housekeeping_mask();
        if !hk.iter(nr).any(|cpu| !full.test(cpu)) {
            return Err(NohzFullError::NoHousekeeping);
        }
        for cpu in full.iter(nr) {
            self.ticks.nohz_full_mask().set(cpu);
            hk.clear(cpu);
        }
        Ok(())
    }

    /// `cpu`'s irq time record (`per_cpu(cpu_irqtime, cpu)`).
    #[doc(alias = "cpu_irqtime")]
    #[inline(always)]
    pub fn irqtime(&self, cpu: CpuId<N>) -> &IrqTime {
        self.irqtime.irqtime(cpu)
    }
}

impl<P: Policy, const N: usize, const W: usize> Default for Machine<P, N, W> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}
