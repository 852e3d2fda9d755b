//! The idle loop's order (`do_idle`), as a driver generic over the platform.
//!
//! C source: `kernel/sched/idle.c` (`do_idle`, `cpuidle_idle_call`).
//!
//! # Design
//!
//! `do_idle` is where the NOHZ pieces meet: the NEWILB blocked-load pass first
//! (`nohz_run_idle_balance`), then the tick-idle section, a loop that stops or retains the tick
//! around each idle state, and the exit. The architecture and cpuidle parts (polling, the
//! governor's choice, the idle instruction, reporting a dead CPU) are
//! [`IdleHooks`](crate::platform::IdleHooks); interrupts arrive inside
//! [`IdleHooks::cpuidle_enter`](crate::platform::IdleHooks::cpuidle_enter), where the
//! platform runs them through the crate's entry points (`tick_nohz_irq_enter`, the csd or timer
//! handler, `tick_nohz_irq_exit`, the softirq).

use crate::cpu::CpuId;
use crate::cpus::Cpus;
use crate::fair::Fair;
use crate::platform::{IdlePlatform, SleepLengthQuery};
use crate::policy::Policy;
use crate::tick_sched::Ticks;

/// Why [`Machine::do_idle`](crate::Machine::do_idle) returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleExit {
    /// `need_resched()`: go and schedule.
    Resched,
    /// The CPU went offline inside the loop: it was reported dead (`cpuhp_report_idle_dead`)
    /// without stopping the tick or leaving the idle section; the caller does not schedule.
    CpuDead,
}

/// `do_idle()` on `cpu`: `nohz_run_idle_balance`, `tick_nohz_idle_enter`, then until a
/// reschedule is needed: report a CPU that went offline, poll (restarting a stopped tick) or go
/// through `cpuidle_idle_call`; finally `tick_nohz_idle_exit` and
/// `flush_smp_call_function_queue` (a kick whose IPI was elided while the CPU polled), with
/// the softirq its csd raised.
pub(crate) fn do_idle<P: Policy, Pl: IdlePlatform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    ticks: &Ticks<N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) -> IdleExit {
    fair.nohz_run_idle_balance(cpus, cpu, plat);
    ticks.tick_nohz_idle_enter(cpus, cpu, plat);
    while !plat.need_resched(cpu) {
        if !cpus.cpu_online(cpu) {
            plat.report_idle_dead(cpu);
            return IdleExit::CpuDead;
        }
        if plat.idle_poll(cpu) {
            ticks.tick_nohz_idle_restart_tick(cpu, plat);
            plat.poll_idle(cpu);
        } else {
            cpuidle_idle_call(cpus, fair, ticks, cpu, plat);
        }
    }
    ticks.tick_nohz_idle_exit(cpus, cpu, plat);
    // A kick sent while this CPU polled may have had its IPI elided (the kernel's
    // set_nr_if_polling): run it before scheduling, and the softirq it raised after it
    // (do_softirq_post_smp_call_flush), as no irq exit follows to run it. With nothing queued
    // the kernel's flush returns at once and runs no softirq, whatever is pending.
    if crate::sched_core::flush_smp_call_function_queue(cpus, fair, cpu, plat)
        && fair.rq(cpu).sched_softirq_pending()
    {
        fair.sched_balance_softirq(cpus, cpu, plat);
    }
    IdleExit::Resched
}

/// `cpuidle_idle_call()`: stop or retain the tick as cpuidle decides, then idle. Without a
/// cpuidle driver the tick always goes through the stop path; with one, an already-stopped
/// tick (say a NO_HZ_FULL CPU's) goes through it too, whatever the governor said. The
/// governor gets `tick_nohz_get_sleep_length` to ask, if it wants the sleep length.
fn cpuidle_idle_call<P: Policy, Pl: IdlePlatform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    ticks: &Ticks<N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) {
    if plat.need_resched(cpu) {
        return;
    }
    // The governor may ask tick_nohz_get_sleep_length (which caches the next event).
    let sleep_length = || ticks.tick_nohz_get_sleep_length(cpus, fair, cpu, plat);
    match plat.cpuidle_select(cpu, &SleepLengthQuery::new(&sleep_length)) {
        None => ticks.tick_nohz_idle_stop_tick(cpus, fair, cpu, plat),
        Some(stop_tick) if stop_tick || ticks.tick_nohz_tick_stopped(cpu) => {
            ticks.tick_nohz_idle_stop_tick(cpus, fair, cpu, plat)
        }
        Some(_) => ticks.tick_nohz_idle_retain_tick(cpu),
    }
    plat.cpuidle_enter(cpu);
}
