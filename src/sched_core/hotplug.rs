//! CPU hotplug, the NOHZ and tick parts: `sched_cpu_deactivate`, `sched_cpu_activate`, and the
//! dying CPU's `tick_cpu_dying` / `tick_sched_timer_dying` / cross-call flush (spec §5.3,
//! §5.6, §7).
//!
//! # Design
//!
//! The crate owns `cpu_active_mask`, so it owns the order the kernel's correctness rests on:
//!
//! 1. the dying CPU leaves the idle mask (`nohz_balance_exit_idle`);
//! 2. it goes inactive (`set_cpu_active(cpu, false)`): from here its own idle loop, which runs
//!    whenever the hotplug thread sleeps, cannot register it again (`nohz_balance_enter_idle` returns at
//!    once for an inactive CPU);
//! 3. the platform waits for a grace period (`synchronize_rcu`): every kicker that could still
//!    have seen the CPU in the mask has finished, so none can send it a kick afterwards;
//! 4. the domains are rebuilt without it (the kernel's `cpuset_cpu_inactive`).
//!
//! With the platform marking the CPU inactive *after* the wait (the order this crate used to
//! document), the dying CPU's idle loop could register it during the grace period; once
//! inactive, nothing takes it out again (its balance trigger returns early), so a dead CPU sat
//! in the mask, passed `idle_cpu()` and could be chosen as the idle load balancer.
//!
//! All of it is `Relaxed`: steps 1 and 2 are stores of the dying CPU that its own idle loop
//! reads (the same CPU, ordered by the context switch between the hotplug thread and the idle
//! task), and step 3's ordering towards other CPUs is the grace period's, which the platform
//! provides (see [`CpuState::synchronize_rcu`](crate::platform::CpuState::synchronize_rcu)).
//! The loom model `hotplug` (loom-tests) races the deactivation against the CPU's own idle
//! entry and a kicker.

use crate::cpu::CpuId;
use crate::fair::Machine;
use crate::platform::{Platform, TickPlatform};
use crate::policy::Policy;
use core::fmt;

/// Why a hotplug step was refused; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotplugError {
    /// [`Machine::sched_cpu_deactivate`] of a CPU that is not active.
    NotActive {
        /// The CPU.
        cpu: usize,
    },
    /// [`Machine::sched_cpu_activate`] of a CPU that is already active.
    AlreadyActive {
        /// The CPU.
        cpu: usize,
    },
    /// [`Machine::cpu_dying`] of a CPU that was not deactivated first.
    StillActive {
        /// The CPU.
        cpu: usize,
    },
    /// [`Machine::sched_cpu_deactivate`] of the last active CPU.
    LastActiveCpu {
        /// The CPU.
        cpu: usize,
    },
    /// The CPU keeps time for the NO_HZ_FULL CPUs and must stay up
    /// (`tick_nohz_cpu_hotpluggable` said no; the kernel's `-EBUSY`).
    NohzFullTimekeeper {
        /// The CPU.
        cpu: usize,
    },
}

impl fmt::Display for HotplugError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HotplugError::NotActive { cpu } => {
                write!(f, "CPU {cpu} is not active: nothing to deactivate")
            }
            HotplugError::AlreadyActive { cpu } => write!(f, "CPU {cpu} is already active"),
            HotplugError::StillActive { cpu } => {
                write!(f, "CPU {cpu} is still active: deactivate it before it dies")
            }
            HotplugError::LastActiveCpu { cpu } => {
                write!(f, "CPU {cpu} is the last active CPU")
            }
            HotplugError::NohzFullTimekeeper { cpu } => write!(
                f,
                "CPU {cpu} keeps time for the NO_HZ_FULL CPUs and cannot go offline"
            ),
        }
    }
}

impl core::error::Error for HotplugError {}

impl<P: Policy, const N: usize, const W: usize> Machine<P, N, W> {
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
            .active
            .iter(self.nr_cpu_ids())
            .all(|other| other == cpu)
        {
            return Err(HotplugError::LastActiveCpu { cpu: index });
        }
        // 1. Out of the mask: nohz_balance_exit_idle(rq).
        self.nohz_balance_exit_idle(cpu, plat);
        // 2. set_cpu_active(cpu, false): from here the CPU's own idle entry refuses it, so
        //    the wait below cannot end with it registered again.
        self.active.clear(cpu);
        // 3. No kicker that could still see it in the mask is running after this.
        plat.synchronize_rcu();
        // 4. cpuset_cpu_inactive: the domains no longer span it. The grace period above
        //    also covers the rebuild's (no CPU still uses the copy it writes).
        self.publish_topology(self.nr_cpu_ids(), plat);
        Ok(())
    }

    /// `sched_cpu_activate`'s NOHZ part, on `cpu`: the CPU is active again
    /// (`set_cpu_active(cpu, true)`) and the domains are rebuilt with it
    /// (`cpuset_cpu_active`). Call it for a CPU coming (back) up, once its tick is set up
    /// ([`tick_nohz_activate`](Self::tick_nohz_activate): a CPU that died lost its NO_HZ
    /// mode with the rest of its tick state), and as the rollback of a
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate) that a later step refused. Refused, changing
    /// nothing, for a CPU that is already active.
    pub fn sched_cpu_activate<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Result<(), HotplugError> {
        if self.cpu_active(cpu) {
            return Err(HotplugError::AlreadyActive { cpu: cpu.index() });
        }
        self.active.set(cpu);
        plat.synchronize_rcu();
        self.publish_topology(self.nr_cpu_ids(), plat);
        Ok(())
    }

    /// The dying CPU's last NOHZ and tick steps, on `cpu` itself with interrupts off (the
    /// kernel's `CPUHP_AP_*_DYING` callbacks, in stop-machine, in their teardown order), after
    /// [`sched_cpu_deactivate`](Self::sched_cpu_deactivate):
    ///
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
    pub fn cpu_dying<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Result<(), HotplugError> {
        if self.cpu_active(cpu) {
            return Err(HotplugError::StillActive { cpu: cpu.index() });
        }
        self.tick_cpu_dying(cpu, plat);
        if self.rq(cpu).csd_busy() {
            self.nohz_csd_ipi(cpu, plat);
        }
        Ok(())
    }
}
