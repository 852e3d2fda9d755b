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
use crate::fair::rq::NohzFlags;
use crate::fair::rq::Rq;
use crate::fair::{Fair, IlbPass, KickDecision, KickOutcome, Nohz, TopologyError};
use crate::idle::IdleExit;
use crate::irqtime::{IrqContext, IrqTime, IrqTimes};
use crate::platform::{IdlePlatform, MaySleep, Platform, TickPlatform};
use crate::policy::Policy;
use crate::sched_core::HotplugError;
use crate::tick_sched::{TickSched, Ticks};
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
    ticks: Ticks<N, W>,
    irqtime: IrqTimes<N>,
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

    /// `set_cpu_online(cpu, online)`, for arch code that marks a CPU itself:
    /// [`cpu_dying`](Self::cpu_dying) and [`cpu_starting`](Self::cpu_starting) already do it
    /// in the kernel's places. An idle CPU found offline leaves its idle loop as dead
    /// ([`IdleExit::CpuDead`]); one that stops its idle tick while offline counts a
    /// [`Warning::OfflineCpuIdle`](crate::Warning::OfflineCpuIdle).
    #[inline]
    pub fn set_cpu_online(&self, cpu: CpuId<N>, online: bool) {
        self.cpus.set_online(cpu, online);
    }

    /// `cpu_online_mask`.
    #[doc(alias = "cpu_online_mask")]
    #[inline]
    pub fn online_mask(&self) -> &CpuMask<W> {
        self.cpus.online_mask()
    }

    /// Whether `cpu`'s `SCHED_SOFTIRQ` is raised and has not run yet (its bit of
    /// `local_softirq_pending()`, which the crate keeps: see [`platform::Softirq`](crate::platform::Softirq)).
    /// [`irq_exit`](Self::irq_exit) runs it.
    #[inline]
    pub fn sched_softirq_pending(&self, cpu: CpuId<N>) -> bool {
        self.fair.rq(cpu).sched_softirq_pending()
    }

    /// `flush_smp_call_function_queue()`'s nohz part on `cpu`, on `cpu` with interrupts off:
    /// runs the nohz csd if a kick queued it, and says whether one ran.
    ///
    /// See [`sched_core::flush_smp_call_function_queue`](crate::sched_core::flush_smp_call_function_queue).
    #[inline]
    pub fn flush_smp_call_function_queue<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        crate::sched_core::flush_smp_call_function_queue(&self.cpus, &self.fair, cpu, plat)
    }

    /// `cpu_active_mask`.
    #[doc(alias = "cpu_active_mask")]
    #[inline]
    pub fn active_mask(&self) -> &CpuMask<W> {
        self.cpus.active_mask()
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

    /// `sched_cpu_deactivate`'s NOHZ part, on `cpu` (the CPU going down, from its hotplug
    /// thread: process context, may sleep): checks that the CPU may go
    /// ([`tick_nohz_cpu_hotpluggable`](Self::tick_nohz_cpu_hotpluggable), not the last active
    /// CPU), then in the kernel's order leaves the idle mask (`nohz_balance_exit_idle`), clears
    /// the CPU's active bit (`set_cpu_active(cpu, false)`), waits for a grace period
    /// (`synchronize_rcu`) and rebuilds the domains without the CPU (`cpuset_cpu_inactive`).
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
        if !self.tick_nohz_cpu_hotpluggable(cpu) {
            return Err(HotplugError::NohzFullTimekeeper { cpu: index });
        }
        if self
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
    /// ([`tick_nohz_activate`](Self::tick_nohz_activate): a CPU that died lost its NO_HZ
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

    /// `nohz_balance_enter_idle(cpu)`: registers `cpu`, idle with its tick stopped, in
    /// `nohz.idle_cpus_mask` so the idle balancer works for it.
    ///
    /// See [`Fair::nohz_balance_enter_idle`](crate::fair::Fair::nohz_balance_enter_idle).
    #[inline(always)]
    pub fn nohz_balance_enter_idle<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.fair.nohz_balance_enter_idle(&self.cpus, cpu, plat)
    }

    /// `nohz_balance_exit_idle(rq)`: `cpu` is busy again; it leaves the idle mask and counts
    /// as busy in its LLC. Does nothing unless it was registered.
    ///
    /// See [`Fair::nohz_balance_exit_idle`](crate::fair::Fair::nohz_balance_exit_idle).
    #[inline(always)]
    pub fn nohz_balance_exit_idle<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.fair.nohz_balance_exit_idle(&self.cpus, cpu, plat)
    }

    /// `sched_balance_trigger(rq)`: nothing for a CPU without a domain or an inactive one;
    /// otherwise raise `SCHED_SOFTIRQ` if this rq's own balance is due, then
    /// `nohz_balancer_kick`.
    ///
    /// See [`Fair::sched_balance_trigger`](crate::fair::Fair::sched_balance_trigger).
    #[inline(always)]
    pub fn sched_balance_trigger<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<KickDecision<N>> {
        self.fair.sched_balance_trigger(&self.cpus, cpu, plat)
    }

    /// `nohz_balancer_kick(rq)`: on a busy CPU's tick, decide whether an idle CPU should
    /// balance on behalf of the tickless idle CPUs, and with which flags (spec §5.2).
    ///
    /// See [`Fair::nohz_balancer_kick`](crate::fair::Fair::nohz_balancer_kick).
    #[inline(always)]
    pub fn nohz_balancer_kick<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> KickDecision<N> {
        self.fair.nohz_balancer_kick(&self.cpus, cpu, plat)
    }

    /// `kick_ilb(flags)`: pick an idle CPU and hand it `flags`; send the IPI if this call
    /// turned its kick bits on. With BALANCE, `nohz.next_balance` moves to the next jiffy
    /// first, so balancing is kicked at most once per jiffy even when no CPU is found.
    ///
    /// See [`Fair::kick_ilb`](crate::fair::Fair::kick_ilb).
    #[inline(always)]
    pub fn kick_ilb<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        flags: NohzFlags,
        plat: &Pl,
    ) -> KickOutcome<N> {
        self.fair.kick_ilb(&self.cpus, cpu, flags, plat)
    }

    /// `find_new_ilb()`: the first CPU, ascending, that is in both the idle mask and the
    /// housekeeping mask, is not `cpu`, and is idle right now.
    ///
    /// See [`Fair::find_new_ilb`](crate::fair::Fair::find_new_ilb).
    #[inline(always)]
    pub fn find_new_ilb(&self, cpu: CpuId<N>) -> Option<CpuId<N>> {
        self.fair.find_new_ilb(&self.cpus, cpu)
    }

    /// `sched_balance_softirq()` on `cpu`: the ILB work a kick handed over, if any and if the
    /// CPU is still idle, covers this CPU too; otherwise the CPU refreshes its own blocked
    /// load and balances its own domains.
    ///
    /// See [`Fair::sched_balance_softirq`](crate::fair::Fair::sched_balance_softirq).
    #[inline(always)]
    pub fn sched_balance_softirq<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.fair.sched_balance_softirq(&self.cpus, cpu, plat)
    }

    /// `_nohz_idle_balance(this_rq, flags)`: on behalf of every idle CPU in the mask, starting
    /// after `cpu` and wrapping round to it: refresh blocked load (STATS), run periodic
    /// balancing where due (BALANCE), and recompute `nohz.next_balance` (NEXT, or whenever a
    /// visited rq's deadline is earlier than 60 s from now).
    ///
    /// See [`Fair::nohz_idle_balance_pass`](crate::fair::Fair::nohz_idle_balance_pass).
    #[doc(alias = "_nohz_idle_balance")]
    #[inline(always)]
    pub fn nohz_idle_balance_pass<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        flags: NohzFlags,
        plat: &Pl,
    ) -> IlbPass {
        self.fair
            .nohz_idle_balance_pass(&self.cpus, cpu, flags, plat)
    }

    /// The NOHZ-visible part of `sched_balance_newidle()` on `cpu`, about to go idle: the
    /// misfit status is cleared if the machine has asymmetric CPU capacity
    /// ([`sched_asym_cpucap_active`](Self::sched_asym_cpucap_active); on a symmetric machine
    /// `update_misfit_status(NULL, rq)` returns at once and `misfit_task_load` is left as it
    /// was); a CPU with a queued wakeup or an inactive one stops there. Where the platform's
    /// [`newidle_domain`](crate::platform::Balance::newidle_domain) allows a walk, the CPU
    /// refreshes its own blocked averages, then the platform's domain walk tries to pull a
    /// task (a CPU without a domain goes on without either); `rq.next_balance` is pulled in to
    /// `jiffies + HZ` or the domains' earlier deadline, and if nothing was pulled
    /// `nohz_newidle_balance` may ask for a blocked-load refresh. Returns whether a task was
    /// pulled.
    ///
    /// See [`Fair::sched_balance_newidle`](crate::fair::Fair::sched_balance_newidle).
    #[inline(always)]
    #[doc(alias = "update_misfit_status")]
    pub fn sched_balance_newidle<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        self.fair.sched_balance_newidle(&self.cpus, cpu, plat)
    }

    /// `nohz_run_idle_balance(cpu)`, first thing in the idle loop: consume NEWILB; if it was
    /// the only bit (no kick pending, whose softirq would do the same) and nothing needs to
    /// run, do a STATS pass here, even though this CPU may not be in the mask yet. Returns the
    /// pass's outcome if one ran.
    ///
    /// See [`Fair::nohz_run_idle_balance`](crate::fair::Fair::nohz_run_idle_balance).
    #[inline(always)]
    pub fn nohz_run_idle_balance<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<IlbPass> {
        self.fair.nohz_run_idle_balance(&self.cpus, cpu, plat)
    }

    /// `cpu_rq(cpu)`.
    ///
    /// See [`Fair::rq`](crate::fair::Fair::rq).
    #[inline(always)]
    #[doc(alias = "cpu_rq")]
    pub fn rq(&self, cpu: CpuId<N>) -> &Rq {
        self.fair.rq(cpu)
    }

    /// The `nohz` global.
    ///
    /// See [`Fair::nohz`](crate::fair::Fair::nohz).
    #[inline(always)]
    pub fn nohz(&self) -> &Nohz<P, W> {
        self.fair.nohz()
    }

    /// `cpu` is registered as idle (in `nohz.idle_cpus_mask`, or under `Sharded` in its
    /// shard's word): `cpumask_test_cpu(cpu, nohz.idle_cpus_mask)` for every policy.
    #[doc(alias = "cpumask_test_cpu")]
    #[inline]
    pub fn nohz_idle_test(&self, cpu: CpuId<N>) -> bool {
        self.fair.nohz_idle_test(cpu)
    }

    /// The registered CPUs (`for_each_cpu(cpu, nohz.idle_cpus_mask)` for every policy):
    /// ascending for a flat policy, shards and slots ascending under `Sharded`. Not a
    /// snapshot.
    pub fn nohz_idle_cpus(&self) -> impl Iterator<Item = CpuId<N>> + '_ {
        self.fair.nohz_idle_cpus(self.nr_cpu_ids())
    }

    /// `housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)`.
    ///
    /// See [`Fair::housekeeping`](crate::fair::Fair::housekeeping).
    #[inline(always)]
    #[doc(alias = "housekeeping_cpumask")]
    pub fn housekeeping(&self) -> &CpuMask<W> {
        self.fair.housekeeping()
    }

    /// `sd_llc_shared->nr_busy_cpus` of `cpu`'s LLC, or `None` if it has no LLC domain.
    ///
    /// See [`Fair::llc_nr_busy_cpus`](crate::fair::Fair::llc_nr_busy_cpus).
    #[inline(always)]
    pub fn llc_nr_busy_cpus(&self, cpu: CpuId<N>) -> Option<i32> {
        self.fair.llc_nr_busy_cpus(self.cpus.nr_cpu_ids(), cpu)
    }

    /// `sd_llc_id` of `cpu`, if it has an LLC domain.
    ///
    /// See [`Fair::llc_leader`](crate::fair::Fair::llc_leader).
    #[inline(always)]
    pub fn llc_leader(&self, cpu: CpuId<N>) -> Option<usize> {
        self.fair.llc_leader(cpu)
    }

    /// `sd_llc->nohz_idle` of `cpu`.
    ///
    /// See [`Fair::nohz_idle`](crate::fair::Fair::nohz_idle).
    #[inline(always)]
    pub fn nohz_idle(&self, cpu: CpuId<N>) -> bool {
        self.fair.nohz_idle(cpu)
    }

    /// `sched_asym_cpucap_active()`: the `sched_asym_cpucapacity` key.
    ///
    /// See [`Fair::sched_asym_cpucap_active`](crate::fair::Fair::sched_asym_cpucap_active).
    #[inline(always)]
    #[doc(alias = "sched_asym_cpucapacity")]
    pub fn sched_asym_cpucap_active(&self) -> bool {
        self.fair.sched_asym_cpucap_active()
    }

    /// The CPU that owns the jiffies update (`tick_do_timer_cpu`), if any.
    ///
    /// See [`Ticks::tick_do_timer_cpu`](crate::tick_sched::Ticks::tick_do_timer_cpu).
    #[inline(always)]
    pub fn tick_do_timer_cpu(&self) -> Option<CpuId<N>> {
        self.ticks.tick_do_timer_cpu(self.cpus.nr_cpu_ids())
    }

    /// Makes `cpu` the timekeeper (boot: the boot CPU), or nobody.
    ///
    /// See [`Ticks::set_tick_do_timer_cpu`](crate::tick_sched::Ticks::set_tick_do_timer_cpu).
    #[inline(always)]
    pub fn set_tick_do_timer_cpu(&self, cpu: Option<CpuId<N>>) {
        self.ticks.set_tick_do_timer_cpu(cpu)
    }

    /// `tick_dep_set(bit)`: a machine-wide tick dependency (`tick_dep_mask`).
    ///
    /// See [`Ticks::tick_dep_set`](crate::tick_sched::Ticks::tick_dep_set).
    #[inline(always)]
    pub fn tick_dep_set(&self, bits: u32) {
        self.ticks.tick_dep_set(bits)
    }

    /// `tick_dep_clear(bit)`.
    ///
    /// See [`Ticks::tick_dep_clear`](crate::tick_sched::Ticks::tick_dep_clear).
    #[inline(always)]
    pub fn tick_dep_clear(&self, bits: u32) {
        self.ticks.tick_dep_clear(bits)
    }

    /// `tick_nohz_cpu_hotpluggable(cpu)`: `cpu` may go offline. Not the timekeeper while
    /// NO_HZ_FULL CPUs exist: it keeps time (and the housekeeping work) on their behalf.
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) checks it before changing anything.
    ///
    /// See [`Ticks::tick_nohz_cpu_hotpluggable`](crate::tick_sched::Ticks::tick_nohz_cpu_hotpluggable).
    #[inline(always)]
    pub fn tick_nohz_cpu_hotpluggable(&self, cpu: CpuId<N>) -> bool {
        self.ticks.tick_nohz_cpu_hotpluggable(&self.cpus, cpu)
    }

    /// `tick_nohz_full_mask`: the NO_HZ_FULL CPUs (`nohz_full=`). Set them at boot, and take
    /// them out of [`housekeeping`](Self::housekeeping) too.
    ///
    /// See [`Ticks::nohz_full`](crate::tick_sched::Ticks::nohz_full).
    #[doc(alias = "tick_nohz_full_mask")]
    #[inline(always)]
    pub fn nohz_full(&self) -> &crate::CpuMask<W> {
        self.ticks.nohz_full()
    }

    /// `tick_nohz_full_cpu(cpu)`.
    ///
    /// See [`Ticks::tick_nohz_full_cpu`](crate::tick_sched::Ticks::tick_nohz_full_cpu).
    #[inline(always)]
    pub fn tick_nohz_full_cpu(&self, cpu: CpuId<N>) -> bool {
        self.ticks.tick_nohz_full_cpu(cpu)
    }

    /// `cpu`'s `struct tick_sched`.
    ///
    /// See [`Ticks::tick_sched`](crate::tick_sched::Ticks::tick_sched).
    #[inline(always)]
    pub fn tick_sched(&self, cpu: CpuId<N>) -> &TickSched {
        self.ticks.tick_sched(cpu)
    }

    /// `tick_nohz_activate` / the switch to NO_HZ mode on `cpu` (`TS_FLAG_NOHZ`, plus
    /// `TS_FLAG_HIGHRES` for the high-resolution tick). Until then the tick never stops.
    ///
    /// See [`Ticks::tick_nohz_activate`](crate::tick_sched::Ticks::tick_nohz_activate).
    #[inline(always)]
    pub fn tick_nohz_activate(&self, cpu: CpuId<N>, highres: bool) {
        self.ticks.tick_nohz_activate(cpu, highres)
    }

    /// `tick_nohz_tick_stopped()` on `cpu`.
    ///
    /// See [`Ticks::tick_nohz_tick_stopped`](crate::tick_sched::Ticks::tick_nohz_tick_stopped).
    #[inline(always)]
    pub fn tick_nohz_tick_stopped(&self, cpu: CpuId<N>) -> bool {
        self.ticks.tick_nohz_tick_stopped(cpu)
    }

    /// `tick_nohz_idle_enter()` on `cpu`: entering the idle loop's tick-idle section. Warns if
    /// a next-event computation is still cached; sets INIDLE and starts idle-time accounting.
    ///
    /// See [`Ticks::tick_nohz_idle_enter`](crate::tick_sched::Ticks::tick_nohz_idle_enter).
    #[inline(always)]
    pub fn tick_nohz_idle_enter<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_idle_enter(&self.cpus, cpu, plat)
    }

    /// `tick_nohz_irq_enter()` on `cpu`, from interrupt entry while idle or on NO_HZ_FULL:
    /// pauses idle-time accounting and, with the tick stopped, catches jiffies up.
    ///
    /// See [`Ticks::tick_nohz_irq_enter`](crate::tick_sched::Ticks::tick_nohz_irq_enter).
    #[inline(always)]
    pub fn tick_nohz_irq_enter<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_irq_enter(cpu, plat)
    }

    /// `tick_nohz_irq_exit()` on `cpu`: in the idle section, resume idle-time accounting;
    /// otherwise give a NO_HZ_FULL CPU the chance to stop (or restart) its tick.
    ///
    /// See [`Ticks::tick_nohz_irq_exit`](crate::tick_sched::Ticks::tick_nohz_irq_exit).
    #[inline(always)]
    pub fn tick_nohz_irq_exit<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_irq_exit(&self.cpus, cpu, plat)
    }

    /// `tick_nohz_next_event()`: when `cpu` next needs a tick, or 0 to keep ticking (only
    /// while the tick is not already stopped; once STOPPED this never returns 0). Caches the
    /// result (`timer_expires`, `timer_expires_base`). A next timer before the base time (the
    /// last jiffies update) is a [`Warning::NextTimerInPast`](crate::Warning::NextTimerInPast) and counts as due at the base.
    ///
    /// See [`Ticks::tick_nohz_next_event`](crate::tick_sched::Ticks::tick_nohz_next_event).
    #[inline(always)]
    pub fn tick_nohz_next_event<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> u64 {
        self.ticks.tick_nohz_next_event(&self.cpus, cpu, plat)
    }

    /// `tick_nohz_stop_tick()`: the only place `TS_FLAG_STOPPED` is set. Consumes the cached
    /// next event; if the timer base refuses to go idle the tick keeps running. Otherwise hands
    /// off the timekeeping duty, and (unless already stopped at the same expiry) records the
    /// first stop and programs or cancels the one-shot timer.
    ///
    /// See [`Ticks::tick_nohz_stop_tick`](crate::tick_sched::Ticks::tick_nohz_stop_tick).
    #[inline(always)]
    pub fn tick_nohz_stop_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_stop_tick(&self.cpus, cpu, plat)
    }

    /// `can_stop_idle_tick()`: may `cpu` stop its tick in the idle loop? Not without NO_HZ
    /// mode, with a reschedule or a softirq pending, nor while it must keep timekeeping going
    /// for NO_HZ_FULL CPUs. Warns for an offline CPU (and goes on) and when NO_HZ_FULL runs
    /// with no timekeeper.
    ///
    /// See [`Ticks::can_stop_idle_tick`](crate::tick_sched::Ticks::can_stop_idle_tick).
    #[inline(always)]
    #[doc(alias = "report_idle_softirq")]
    pub fn can_stop_idle_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        self.ticks
            .can_stop_idle_tick(&self.cpus, &self.fair, cpu, plat)
    }

    /// `tick_nohz_idle_stop_tick()` on `cpu`, from the idle loop with IRQs off: try to stop
    /// the tick and, **as patched by seed 001**, register the CPU for idle balancing whenever
    /// the tick ends up stopped (`Legacy`: only on the pass that stopped it).
    ///
    /// See [`Ticks::tick_nohz_idle_stop_tick`](crate::tick_sched::Ticks::tick_nohz_idle_stop_tick).
    #[inline(always)]
    pub fn tick_nohz_idle_stop_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks
            .tick_nohz_idle_stop_tick(&self.cpus, &self.fair, cpu, plat)
    }

    /// `tick_nohz_idle_retain_tick()`: the governor keeps the tick; drop the cached event.
    ///
    /// See [`Ticks::tick_nohz_idle_retain_tick`](crate::tick_sched::Ticks::tick_nohz_idle_retain_tick).
    #[inline(always)]
    pub fn tick_nohz_idle_retain_tick(&self, cpu: CpuId<N>) {
        self.ticks.tick_nohz_idle_retain_tick(cpu)
    }

    /// `tick_nohz_get_sleep_length()`'s caching part, for a cpuidle governor: computes and
    /// caches the next event so that [`tick_nohz_idle_stop_tick`](Self::tick_nohz_idle_stop_tick)
    /// reuses it. Returns 0 when the tick cannot or should not stop.
    ///
    /// See [`Ticks::tick_nohz_get_sleep_length`](crate::tick_sched::Ticks::tick_nohz_get_sleep_length).
    #[inline(always)]
    pub fn tick_nohz_get_sleep_length<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> u64 {
        self.ticks
            .tick_nohz_get_sleep_length(&self.cpus, &self.fair, cpu, plat)
    }

    /// `tick_nohz_idle_restart_tick()` (the polling idle path): restart a stopped tick and
    /// account the idle ticks. Never registers the CPU for idle balancing.
    ///
    /// See [`Ticks::tick_nohz_idle_restart_tick`](crate::tick_sched::Ticks::tick_nohz_idle_restart_tick).
    #[inline(always)]
    pub fn tick_nohz_idle_restart_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_idle_restart_tick(cpu, plat)
    }

    /// `tick_nohz_idle_exit()` on `cpu`, leaving the idle loop (IRQs off): warns unless in the
    /// idle section or if a next event is still cached; stops idle accounting; a stopped tick
    /// is restarted (on NO_HZ_FULL it may stay stopped) and the idle ticks accounted. Does
    /// not leave the idle mask: the first busy tick does that.
    ///
    /// See [`Ticks::tick_nohz_idle_exit`](crate::tick_sched::Ticks::tick_nohz_idle_exit).
    #[inline(always)]
    pub fn tick_nohz_idle_exit<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_idle_exit(&self.cpus, cpu, plat)
    }

    /// `tick_nohz_restart_sched_tick()`: catch jiffies up, wake the timer base, clear
    /// `TS_FLAG_STOPPED` and re-arm the periodic tick on its old phase.
    ///
    /// See [`Ticks::tick_nohz_restart_sched_tick`](crate::tick_sched::Ticks::tick_nohz_restart_sched_tick).
    #[inline(always)]
    pub fn tick_nohz_restart_sched_tick<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        now: u64,
        plat: &Pl,
    ) {
        self.ticks.tick_nohz_restart_sched_tick(cpu, now, plat)
    }

    /// `can_stop_full_tick()`: a NO_HZ_FULL CPU may run tickless unless it is offline or
    /// something depends on its tick (machine-wide, this CPU, the running task or its group).
    ///
    /// See [`Ticks::can_stop_full_tick`](crate::tick_sched::Ticks::can_stop_full_tick).
    #[inline(always)]
    pub fn can_stop_full_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        self.ticks.can_stop_full_tick(&self.cpus, cpu, plat)
    }

    /// `tick_nohz_full_stop_tick()`: stop the tick of a NO_HZ_FULL CPU while it runs a task.
    /// Never registers the CPU for idle balancing: it is busy.
    ///
    /// See [`Ticks::tick_nohz_full_stop_tick`](crate::tick_sched::Ticks::tick_nohz_full_stop_tick).
    #[inline(always)]
    pub fn tick_nohz_full_stop_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_full_stop_tick(&self.cpus, cpu, plat)
    }

    /// `__tick_nohz_full_update_tick(ts, now)`: stop the tick if nothing needs it, else
    /// restart it if stopped.
    ///
    /// See [`Ticks::tick_nohz_full_update_tick_at`](crate::tick_sched::Ticks::tick_nohz_full_update_tick_at).
    #[doc(alias = "__tick_nohz_full_update_tick")]
    #[inline(always)]
    pub fn tick_nohz_full_update_tick_at<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        now: u64,
        plat: &Pl,
    ) {
        self.ticks
            .tick_nohz_full_update_tick_at(&self.cpus, cpu, now, plat)
    }

    /// `tick_nohz_full_update_tick()`: on a NO_HZ_FULL CPU in NO_HZ mode, re-evaluate the
    /// tick (from irq exit and dependency changes).
    ///
    /// See [`Ticks::tick_nohz_full_update_tick`](crate::tick_sched::Ticks::tick_nohz_full_update_tick).
    #[inline(always)]
    pub fn tick_nohz_full_update_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_full_update_tick(&self.cpus, cpu, plat)
    }

    /// The sched timer firing on `cpu` (`tick_nohz_handler` / `tick_sched_timer`): takes the
    /// timekeeping duty if nobody has it, updates jiffies if it is the timekeeper, and, with the
    /// tick stopped on the idle task, bumps `idle_jiffies`; then runs the scheduler tick. A
    /// periodic tick is re-armed one period on; a stopped one is not.
    ///
    /// See [`Ticks::tick_sched_timer`](crate::tick_sched::Ticks::tick_sched_timer).
    #[doc(alias = "tick_nohz_handler")]
    #[doc(alias = "tick_sched_do_timer")]
    #[inline(always)]
    #[doc(alias = "tick_sched_handle")]
    pub fn tick_sched_timer<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<crate::fair::KickDecision<N>> {
        self.ticks
            .tick_sched_timer(&self.cpus, &self.fair, cpu, plat)
    }

    /// `irqtime_enabled()`: `static_branch_likely(&sched_clock_irqtime)` under `Patched`; the
    /// plain flag in the `nohz` line under `Legacy`.
    ///
    /// See [`IrqTimes::irqtime_enabled`](crate::irqtime::IrqTimes::irqtime_enabled).
    #[inline(always)]
    pub fn irqtime_enabled(&self) -> bool {
        self.irqtime.irqtime_enabled(&self.fair)
    }

    /// The `sched_clock_irqtime` key itself (`Patched`).
    ///
    /// See [`IrqTimes::sched_clock_irqtime`](crate::irqtime::IrqTimes::sched_clock_irqtime).
    #[inline(always)]
    pub fn sched_clock_irqtime(&self) -> &crate::StaticKey {
        self.irqtime.sched_clock_irqtime()
    }

    /// `enable_sched_clock_irqtime()`: at sched_clock registration (boot). Idempotent, and
    /// callable from any context, IRQs off and under spinlocks included.
    ///
    /// See [`IrqTimes::enable_sched_clock_irqtime`](crate::irqtime::IrqTimes::enable_sched_clock_irqtime).
    #[inline(always)]
    pub fn enable_sched_clock_irqtime(&self) {
        self.irqtime
            .enable_sched_clock_irqtime(&self.cpus, &self.fair)
    }

    /// `disable_sched_clock_irqtime()`, only from a context that may sleep, and only if still
    /// enabled (so repeating it costs nothing and never warns).
    ///
    /// See [`IrqTimes::disable_sched_clock_irqtime`](crate::irqtime::IrqTimes::disable_sched_clock_irqtime).
    #[inline(always)]
    pub fn disable_sched_clock_irqtime(&self, _may_sleep: &impl MaySleep) {
        self.irqtime
            .disable_sched_clock_irqtime(&self.cpus, &self.fair, _may_sleep)
    }

    /// `sched_clock_init_late()`'s irqtime part (a late initcall, so it may sleep): a clock
    /// found unstable before this point will never run the unstable-clock work, so irqtime is
    /// disabled here.
    ///
    /// See [`IrqTimes::sched_clock_init_late`](crate::irqtime::IrqTimes::sched_clock_init_late).
    #[inline(always)]
    pub fn sched_clock_init_late(&self, clock_stable_early: bool, ctx: &impl MaySleep) {
        self.irqtime
            .sched_clock_init_late(&self.cpus, &self.fair, clock_stable_early, ctx)
    }

    /// `__sched_clock_work()`'s irqtime part: the work item queued when a stable sched_clock
    /// is declared unstable (process context) disables irqtime.
    ///
    /// See [`IrqTimes::sched_clock_work`](crate::irqtime::IrqTimes::sched_clock_work).
    #[doc(alias = "__sched_clock_work")]
    #[inline(always)]
    pub fn sched_clock_work(&self, ctx: &impl MaySleep) {
        self.irqtime.sched_clock_work(&self.cpus, &self.fair, ctx)
    }

    /// `cpu`'s irq time record (`per_cpu(cpu_irqtime, cpu)`).
    ///
    /// See [`IrqTimes::irqtime`](crate::irqtime::IrqTimes::irqtime).
    #[doc(alias = "cpu_irqtime")]
    #[inline(always)]
    pub fn irqtime(&self, cpu: CpuId<N>) -> &IrqTime {
        self.irqtime.irqtime(cpu)
    }

    /// `irqtime_account_irq(curr, offset)` on `cpu` at `now` (`sched_clock_cpu`): charges the
    /// time since the last call to the context that just `ended`, if it was a hardirq or
    /// softirq (not one run by ksoftirqd). Nothing at all while irqtime is disabled.
    ///
    /// See [`IrqTimes::irqtime_account_irq`](crate::irqtime::IrqTimes::irqtime_account_irq).
    #[inline(always)]
    pub fn irqtime_account_irq(&self, cpu: CpuId<N>, ended: IrqContext, now: u64) {
        self.irqtime
            .irqtime_account_irq(&self.fair, cpu, ended, now)
    }

    /// The NOHZ tail of `sched_tick()` on `cpu`: snapshots `rq.idle_balance = idle_cpu()` and
    /// runs [`sched_balance_trigger`](Self::sched_balance_trigger). Call it from the timer interrupt of every
    /// CPU whose tick runs (and when a stopped tick's timer fires on an idle CPU). Returns the
    /// kick decision, if the trigger got that far.
    ///
    /// See [`sched_core::sched_tick`](crate::sched_core::sched_tick).
    #[inline(always)]
    pub fn sched_tick<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> Option<KickDecision<N>> {
        crate::sched_core::sched_tick(&self.cpus, &self.fair, cpu, plat)
    }

    /// The entry point for the nohz kick IPI on `cpu` (what the kernel's cross-call handler
    /// does for `rq->nohz_csd`): frees the csd first, so a new owner can send again as soon as
    /// the bits are consumed, then runs `nohz_csd_func`.
    ///
    /// See [`sched_core::nohz_csd_ipi`](crate::sched_core::nohz_csd_ipi).
    #[inline(always)]
    pub fn nohz_csd_ipi<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        crate::sched_core::nohz_csd_ipi(&self.cpus, &self.fair, cpu, plat)
    }
}

impl<P: Policy, const N: usize, const W: usize> Default for Machine<P, N, W> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}
