//! CPU hotplug, the NOHZ and tick parts: `sched_cpu_deactivate`, `sched_cpu_activate`, and the
//! dying CPU's `tick_cpu_dying` / `tick_sched_timer_dying` / cross-call flush (spec §5.3,
//! §5.6, §7).
//!
//! C source: `kernel/sched/core.c` (`sched_cpu_deactivate`, `sched_cpu_activate`), `kernel/smp.c` (`smpcfd_dying_cpu`).
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
use crate::cpus::Cpus;
use crate::fair::{ExitFrom, Fair};
use crate::platform::Platform;
use crate::policy::Policy;
use core::fmt;

/// Why a hotplug step was refused; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotplugError {
    /// [`Machine::sched_cpu_deactivate`](crate::Machine::sched_cpu_deactivate) of a CPU that is not active.
    NotActive {
        /// The CPU.
        cpu: usize,
    },
    /// [`Machine::sched_cpu_activate`](crate::Machine::sched_cpu_activate) of a CPU that is already active.
    AlreadyActive {
        /// The CPU.
        cpu: usize,
    },
    /// [`Machine::cpu_dying`](crate::Machine::cpu_dying) of a CPU that was not deactivated first.
    StillActive {
        /// The CPU.
        cpu: usize,
    },
    /// [`Machine::sched_cpu_deactivate`](crate::Machine::sched_cpu_deactivate) of the last active CPU.
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

/// Steps 1 to 4 of `sched_cpu_deactivate`'s NOHZ part on `cpu` (its checks made by the
/// caller, [`Machine::sched_cpu_deactivate`](crate::Machine::sched_cpu_deactivate)).
pub(crate) fn deactivate<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) {
    // 1. Out of the mask: nohz_balance_exit_idle(rq), from the hotplug thread.
    fair.nohz_balance_exit_idle(cpus, cpu, ExitFrom::HotplugThread, plat);
    // 2. set_cpu_active(cpu, false): from here the CPU's own idle entry refuses it, so the
    //    wait below cannot end with it registered again.
    cpus.set_active(cpu, false);
    // 3. No kicker that could still see it in the mask is running after this.
    plat.synchronize_rcu();
    // 4. cpuset_cpu_inactive: the domains no longer span it. The grace period above also
    //    covers the rebuild's (no CPU still uses the copy it writes).
    fair.publish_topology(cpus, cpus.nr_cpu_ids(), plat);
}

/// `sched_cpu_activate`'s NOHZ part on `cpu`: active again (`set_cpu_active(cpu, true)`),
/// then the domains rebuilt with it (`cpuset_cpu_active`) after a grace period.
pub(crate) fn activate<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) {
    cpus.set_active(cpu, true);
    plat.synchronize_rcu();
    fair.publish_topology(cpus, cpus.nr_cpu_ids(), plat);
}

/// `smpcfd_dying_cpu`'s `flush_smp_call_function_queue` on the dying `cpu`: a nohz kick still
/// queued for it runs its handler now.
pub(crate) fn smpcfd_dying_cpu<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) {
    super::flush_smp_call_function_queue(cpus, fair, cpu, plat);
}
