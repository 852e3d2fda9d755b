//! kernel/sched/core.c's pieces the NOHZ code needs: the NOHZ tail of the scheduler tick
//! (`sched_tick`), the nohz kick's cross-call handler (`nohz_csd_func`, behind the csd entry
//! point), and CPU hotplug's scheduler part ([`hotplug`]).
//!
//! C source: `kernel/sched/core.c` (`sched_tick`, `nohz_csd_func`), `kernel/smp.c` (the csd handler).
//!
//! # Design
//!
//! Ownership of a CPU's csd follows its `nohz_flags` (spec §5.3, §5.4): the kicker whose
//! `fetch_or` turns the kick bits from all-clear to any-set owns the csd and sends the IPI
//! (`kick_ilb`, fair.c); the handler here frees the csd first, then consumes every bit with
//! one `fetch_andnot` (O3, AcqRel, pairs with `kick_ilb`'s `fetch_or`), so the next kicker to
//! set a bit owns a free csd.

pub mod hotplug;

pub use hotplug::HotplugError;

use crate::cpu::CpuId;
use crate::cpus::Cpus;
use crate::fair::rq::NohzFlags;
use crate::fair::{Fair, KickDecision};
use crate::platform::Platform;
use crate::policy::Policy;
use crate::warn::{WarnSink, Warning};

/// The NOHZ tail of `sched_tick()` on `cpu`: snapshots `rq.idle_balance = idle_cpu()` and
/// runs [`sched_balance_trigger`](crate::Machine::sched_balance_trigger). Call it from the timer interrupt of every
/// CPU whose tick runs (and when a stopped tick's timer fires on an idle CPU). Returns the
/// kick decision, if the trigger got that far.
pub fn sched_tick<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) -> Option<KickDecision<N>> {
    cpus.check_on_cpu(cpu, plat.this_cpu());
    let rq = fair.rq(cpu);
    rq.set_idle_balance(rq.idle_cpu());
    fair.sched_balance_trigger(cpus, cpu, plat)
}

/// The entry point for the nohz kick IPI on `cpu` (what the kernel's cross-call handler
/// does for `rq->nohz_csd`): frees the csd first, so a new owner can send again as soon as
/// the bits are consumed, then runs `nohz_csd_func`.
pub fn nohz_csd_ipi<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) {
    cpus.check_on_cpu(cpu, plat.this_cpu());
    // Relaxed: the release that matters is the fetch_andnot below, which comes after.
    fair.rq(cpu).csd_unlock();
    nohz_csd_func(cpus, fair, cpu, plat);
}

/// `flush_smp_call_function_queue()`'s nohz part on `cpu`, on `cpu` itself with interrupts
/// off: runs the csd if a kick queued it (through [`nohz_csd_ipi`]) and says whether one ran.
/// The call-function IPI's handler does this, and so do the two places the kernel flushes
/// without an IPI: the idle loop's exit (a kick to a polling CPU whose IPI the platform
/// elided) and the dying CPU (`smpcfd_dying_cpu`). An IPI arriving after a flush ran its
/// csd finds nothing queued, as the kernel's does.
pub fn flush_smp_call_function_queue<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) -> bool {
    // Relaxed: the kick's IPI (or the need_resched that replaced it) is ordered after the
    // kicker's csd_lock by the platform (Ipi::send_nohz_ipi), and nohz_csd_func's
    // fetch_andnot is the acquire that matters (O3).
    let queued = fair.rq(cpu).csd_busy();
    if queued {
        nohz_csd_ipi(cpus, fair, cpu, plat);
    }
    queued
}

/// `nohz_csd_func(rq)`, in IPI context on the kicked CPU: consumes every pending bit; if the
/// CPU is still idle, hands them to the softirq and raises it; otherwise the request is
/// dropped (a later busy tick elsewhere kicks again). Returns the bits consumed.
pub(crate) fn nohz_csd_func<P: Policy, Pl: Platform<N>, const N: usize, const W: usize>(
    cpus: &Cpus<N, W>,
    fair: &Fair<P, N, W>,
    cpu: CpuId<N>,
    plat: &Pl,
) -> NohzFlags {
    let rq = fair.rq(cpu);
    // O3: AcqRel fetch_andnot (NOHZ_CSD_FETCH_ANDNOT), pairs with kick_ilb's fetch_or.
    let flags = rq.nohz_flags().take_for_csd();
    cpus.warn_at(cpu).warn_on(
        !flags.intersects(NohzFlags::KICK_MASK),
        Warning::CsdWithoutKick,
    );
    let idle = rq.idle_cpu();
    rq.set_idle_balance(idle);
    if idle {
        rq.set_nohz_idle_balance(flags);
        rq.raise_sched_softirq(cpu, plat);
    }
    flags
}
