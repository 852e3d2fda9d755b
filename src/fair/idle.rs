//! Idle registration: `nohz_balance_enter_idle`, `nohz_balance_exit_idle` and the LLC busy
//! count (`set_cpu_sd_state_idle/busy`). Spec §5.6.
//!
//! C source: `kernel/sched/fair.c` (`nohz_balance_enter_idle`, `nohz_balance_exit_idle`, `set_cpu_sd_state_idle`, `set_cpu_sd_state_busy`).
//!
//! Both paths run on the CPU they act for: enter from the idle loop once the tick is stopped,
//! exit from that CPU's first busy tick (or hotplug). The mask bit is set with a relaxed RMW
//! followed by the O1/O2 fence, so an ILB pass that cleared `has_blocked_load` /
//! `needs_update` either sees the bit or has its clear overwritten by this CPU's store of 1.
//! The clear on exit has no barrier: a stale bit only sends the kick to a CPU that then fails
//! `idle_cpu()` (O5).

use super::Fair;
use crate::cpu::CpuId;
use crate::cpus::Cpus;
use crate::fair::hooks::{IdleCpus, NohzLine, Policy};
use crate::platform::Platform;
use crate::sync::{NOHZ_ENTER_IDLE_FENCE, Ordering::Relaxed};

impl<P: Policy, const N: usize, const W: usize> Fair<P, N, W> {
    /// `nohz_balance_enter_idle(cpu)`: registers `cpu`, idle with its tick stopped, in
    /// `nohz.idle_cpus_mask` so the idle balancer works for it.
    ///
    /// In order: an inactive CPU does nothing at all; otherwise the rq's `has_blocked_load` is
    /// set; a CPU already registered takes the idempotent path (only `nohz.has_blocked_load =
    /// 1`); a CPU without a scheduling domain (isolated) returns without registering; else the
    /// CPU sets `nohz_tick_stopped`, its mask bit (and under `Legacy` bumps `nohz.nr_cpus`),
    /// fences (O1/O2), leaves its LLC's busy count and sets `nohz.needs_update`; both
    /// registering and idempotent paths end by storing `nohz.has_blocked_load = 1`.
    ///
    /// Beyond the kernel, through the policy's hooks (`hooks`): the `nohz` line's may take a
    /// registered CPU's repeat entry whole and read the flags before it stores them
    /// (`Scalable`'s writes nothing shared on a repeat entry); the idle set is the policy's
    /// (`Sharded`'s shards).
    pub fn nohz_balance_enter_idle<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        let rq = self.rq(cpu);
        let line = &*self.nohz.scalars;
        let (mask, at) = (&self.nohz.idle_cpus_mask, self.idle_at(cpu));
        // A CPU being torn down must not register.
        if !cpus.cpu_active(cpu) {
            return;
        }
        if rq.nohz_tick_stopped() && line.hook.reenter_idle(line, rq) {
            return;
        }
        // A hint (spec §5.6), set without a lock: each set counts one higher, so an updater's
        // clear, which covers only the sets up to its reading taken before the decay, leaves
        // this one alone (`Rq::clear_has_blocked_load`, the crate's stand-in for the kernel's
        // clear under the rq lock).
        rq.set_has_blocked_load();
        let mut raised = false;
        'out: {
            // Already registered: only nohz.has_blocked_load below.
            if rq.nohz_tick_stopped() {
                break 'out;
            }
            // An isolated CPU never registers, and leaves nohz.has_blocked_load alone.
            if !rq.has_sched_domain() {
                return;
            }
            rq.set_nohz_tick_stopped(true);
            let placed = mask.set_cpu(&line.idle_set, at, cpu);
            // Before seed 000: the counter beside the mask.
            if P::NR_CPUS_COUNTER {
                line.nr_cpus.fetch_add(1, Relaxed);
            }
            // O1/O2: order the mask bit before the flag stores below, against the ILB's clear
            // of those flags before its mask scan (NOHZ_ILB_FENCE). It follows the mask's
            // RMW (Legacy: the counter's), as the kernel's smp_mb__after_atomic() does.
            NOHZ_ENTER_IDLE_FENCE.fence_after_rmw();
            mask.after_fence(&line.idle_set, at, placed);
            self.set_cpu_sd_state_idle(cpus, cpu);
            raised = line.hook.raise(&line.needs_update);
        }
        // Both paths: a newly idle CPU has blocked load to decay.
        raised |= line.hook.raise(&line.has_blocked_load);
        line.hook.raised(raised);
    }

    /// `nohz_balance_exit_idle(rq)`: `cpu` is busy again; it leaves the idle mask and counts
    /// as busy in its LLC. Does nothing unless it was registered. `from` says which of the
    /// kernel's two callers runs it (see [`ExitFrom`]).
    pub fn nohz_balance_exit_idle<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        from: ExitFrom,
        plat: &Pl,
    ) {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        let rq = self.rq(cpu);
        match from {
            ExitFrom::Tick => {
                if !rq.nohz_tick_stopped() {
                    return;
                }
                rq.set_nohz_tick_stopped(false);
            }
            // The C makes the same load and store here. But the hotplug thread runs with
            // interrupts on, and this CPU's tick, landing between the two, would take the CPU
            // out too: under Legacy, nohz.nr_cpus one below the mask for good (the C has the
            // same window). One swap, which no interrupt splits: a tick before it finds the
            // CPU registered and takes it out itself, a tick after it finds it gone. The tick
            // runs whole, so its own path keeps the plain load and store.
            ExitFrom::HotplugThread => {
                if !rq.take_nohz_tick_stopped() {
                    return;
                }
            }
        }
        // No barrier: consumers re-check idle_cpu() (O5).
        self.nohz.idle_cpus_mask.clear_cpu(self.idle_at(cpu), cpu);
        // Before seed 000: the counter beside the mask.
        if P::NR_CPUS_COUNTER {
            self.nohz.scalars.nr_cpus.fetch_sub(1, Relaxed);
        }
        self.set_cpu_sd_state_busy(cpus, cpu);
    }

    /// `set_cpu_sd_state_idle(cpu)`: `cpu` stops counting as busy in its LLC (once), in the
    /// current domain generation.
    pub(crate) fn set_cpu_sd_state_idle(&self, cpus: &Cpus<N, W>, cpu: CpuId<N>) {
        let Some((busy, sd)) = self.llc_of(cpus.nr_cpu_ids(), cpu) else {
            return;
        };
        if sd.nohz_idle() {
            return;
        }
        sd.set_nohz_idle(true);
        busy.fetch_sub(1, Relaxed);
    }

    /// `set_cpu_sd_state_busy(cpu)`: `cpu` counts as busy in its LLC again (once), in the
    /// current domain generation.
    pub(crate) fn set_cpu_sd_state_busy(&self, cpus: &Cpus<N, W>, cpu: CpuId<N>) {
        let Some((busy, sd)) = self.llc_of(cpus.nr_cpu_ids(), cpu) else {
            return;
        };
        if !sd.nohz_idle() {
            return;
        }
        sd.set_nohz_idle(false);
        busy.fetch_add(1, Relaxed);
    }
}

/// Which of the kernel's two callers runs [`Fair::nohz_balance_exit_idle`] on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitFrom {
    /// Its first busy tick (`nohz_balancer_kick`), interrupts off: nothing else runs on the
    /// CPU in the middle.
    Tick,
    /// Its hotplug thread (`sched_cpu_deactivate`), interrupts on: the tick may run in the
    /// middle and exit too.
    HotplugThread,
}
