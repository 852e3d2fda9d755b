//! Planted bugs: two orders the crate used to have (or that its protocol forbids), played
//! through the crate's own internals, so the harness's soak can show that its invariant
//! checks catch them. Nothing in the crate calls these, and no platform should.
//!
//! The third planted bug the soak uses, the ILB pass's fence removed, needs the pass itself
//! to change; it is `nohz::sync::probe::weaken_globally`, present only in probe builds
//! (`--cfg nohz_probe`).

use crate::cpu::CpuId;
use crate::fair::ExitFrom;
use crate::fair::rq::Rq;
use crate::machine::Machine;
use crate::platform::Platform;
use crate::policy::Policy;
use crate::sched_core::HotplugError;

/// `sched_cpu_deactivate` in the order the crate documented before the hotplug fix, when the
/// platform cleared the active bit: leave the idle mask, wait for the grace period, *then* go
/// inactive, then rebuild. The dying CPU's idle loop, which runs during the wait, registers it
/// again, and nothing takes it out: a deactivated CPU stays in the idle mask. Refuses what
/// [`Machine::sched_cpu_deactivate`] refuses.
pub fn sched_cpu_deactivate_old_order<
    P: Policy,
    Pl: Platform<N>,
    const N: usize,
    const W: usize,
>(
    m: &Machine<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) -> Result<(), HotplugError> {
    let index = cpu.index();
    if !m.cpu_active(cpu) {
        return Err(HotplugError::NotActive { cpu: index });
    }
    if !m.tick_nohz_cpu_hotpluggable(cpu) {
        return Err(HotplugError::NohzFullTimekeeper { cpu: index });
    }
    if m.active_mask()
        .iter(m.nr_cpu_ids())
        .all(|other| other == cpu)
    {
        return Err(HotplugError::LastActiveCpu { cpu: index });
    }
    m.fair
        .nohz_balance_exit_idle(&m.cpus, cpu, ExitFrom::HotplugThread, plat);
    plat.synchronize_rcu();
    m.cpus.set_active(cpu, false);
    m.fair.publish_topology(&m.cpus, m.cpus.nr_cpu_ids(), plat);
    Ok(())
}

/// The nohz kick's cross-call handler without `csd_unlock`: the kick bits are consumed
/// (`nohz_csd_func`) but the csd stays busy, so the next kicker that owns it finds it busy
/// and sends nothing. Returns whether a csd was queued (as
/// [`Machine::flush_smp_call_function_queue`]).
pub fn nohz_csd_ipi_without_release<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    m: &Machine<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) -> bool {
    let queued = m.rq(cpu).csd_busy();
    if queued {
        crate::sched_core::nohz_csd_func(&m.cpus, &m.fair, cpu, plat);
    }
    queued
}

/// The `rq.has_blocked_load` clear as the crate made it before it became conditional: after
/// the platform's decay, outside the rq lock, whatever the owner set since the decay began.
///
/// It exists only so that a loom model (`loom-tests`, `blocked_load`) can play that order and
/// show the set it erases; nothing in the crate calls it, and no platform should.
pub fn clear_has_blocked_load_unconditionally(rq: &Rq) {
    rq.clear_has_blocked_load_unconditionally();
}
