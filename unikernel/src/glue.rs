//! Every call into `nohz`: its driver layer (`src/embed`: `cpu_starting`, `timer_interrupt`,
//! `kick_interrupt`, `irq_enter`/`irq_exit`, which string irqtime, tick-sched and the sched
//! softirq together in the kernel's order) and the rest a kernel calls (boot, newidle,
//! `do_idle`, the NO_HZ_FULL tick dependency, hotplug), plus the reads the scenario's checks
//! make. (The trait impls are in [`crate::platform`].)

use crate::hw::{self, idt};
use crate::kernel::{CPUS, Kernel, NR, cpus};
use core::sync::atomic::Ordering::Relaxed;
use nohz::{CpuId, IdleExit, NohzFlags, Policy, TICK_DEP_SCHED, TsFlags, Warning};

fn cpu<P: Policy>(k: &Kernel<P>, i: usize) -> CpuId<NR> {
    k.0.cpu(i)
        .unwrap_or_else(|_| hw::fatal("CPU index out of range"))
}

/// Boot, on CPU 0: `nr_cpu_ids`, the NO_HZ_FULL CPUs out of housekeeping, irqtime.
pub fn boot<P: Policy>(k: &Kernel<P>, n: usize, full: &[usize]) {
    k.0.init(n, 0, k)
        .unwrap_or_else(|_| hw::fatal("Machine::init"));
    for &i in full {
        k.0.nohz_full().set(cpu(k, i));
        k.0.housekeeping().clear(cpu(k, i));
    }
    k.0.enable_sched_clock_irqtime();
}

/// CPU `i` starts (boot, or back from hotplug), on itself: online, NO_HZ, the first tick.
pub fn cpu_starting<P: Policy>(k: &Kernel<P>, i: usize) {
    k.0.cpu_starting(cpu(k, i), k);
}

/// One interrupt, through the crate's driver layer.
pub fn interrupt<P: Policy>(k: &Kernel<P>, vector: u8) {
    let (i, m) = (hw::cpu_index(), k.0);
    crate::kernel::irq_enter(i);
    if !CPUS[i].online.load(Relaxed) {
        return; // A parked CPU takes wakeups only.
    }
    let c = cpu(k, i);
    match vector {
        idt::TIMER_VECTOR if crate::kernel::tick_due(i) => {
            m.timer_interrupt(c, k);
            crate::kernel::on_tick(k, i);
        }
        idt::KICK_VECTOR => {
            let ran = m.kick_interrupt(c, k);
            CPUS[i].kicks_handled.fetch_add(1, Relaxed);
            CPUS[i]
                .kicks_flushed_before
                .fetch_add(u64::from(!ran), Relaxed);
        }
        _ => {
            m.irq_enter(c, k);
            m.irq_exit(c, k);
        }
    }
}

/// Nothing to run: the crate's idle loop, with the rq published as idle first.
pub fn idle<P: Policy>(k: &Kernel<P>, i: usize) {
    let (c, s) = (cpu(k, i), &CPUS[i]);
    set_curr_is_idle(k, i, true);
    sync_rq(k, i, s.rq.lock().len(), true);
    k.0.rq(c).set_avg_idle(1_000_000);
    s.blocked_load.store(4, Relaxed);
    s.calls_at_entry
        .store(k.0.tick_sched(c).idle_calls(), Relaxed);
    if k.0.do_idle(c, k) == IdleExit::Resched {
        s.need_resched.store(false, Relaxed);
    }
    s.stop_attempt_ran.store(false, Relaxed);
}

/// `sched_balance_newidle`: whether a task was pulled.
pub fn newidle<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.sched_balance_newidle(cpu(k, i), k)
}

/// Publishes CPU `i`'s queue length (plus the running task) to the crate's `Rq`.
pub fn sync_rq<P: Policy>(k: &Kernel<P>, i: usize, queued: usize, idle: bool) {
    let (rq, n) = (k.0.rq(cpu(k, i)), (queued + usize::from(!idle)) as u32);
    rq.set_nr_running(n);
    rq.set_h_nr_runnable(n);
}

/// Whether the idle task is current on CPU `i`.
pub fn curr_is_idle<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.rq(cpu(k, i)).curr_is_idle()
}

/// Sets whether the idle task is current on CPU `i`.
pub fn set_curr_is_idle<P: Policy>(k: &Kernel<P>, i: usize, idle: bool) {
    k.0.rq(cpu(k, i)).set_curr_is_idle(idle);
}

/// A NO_HZ_FULL CPU needs its tick while it has more than one runnable task (on CPU `i`).
pub fn update_full_dependency<P: Policy>(k: &Kernel<P>, i: usize) {
    let (c, ts) = (cpu(k, i), k.0.tick_sched(cpu(k, i)));
    let crowded = k.0.rq(c).nr_running() > 1;
    if CPUS[i].nohz_full.load(Relaxed) && crowded != (ts.tick_dep_mask() & TICK_DEP_SCHED != 0) {
        match crowded {
            true => ts.tick_dep_set_cpu(TICK_DEP_SCHED),
            false => ts.tick_dep_clear_cpu(TICK_DEP_SCHED),
        }
        k.0.tick_nohz_full_update_tick(c, k);
    }
}

/// Whether CPU `i`'s tick is stopped.
pub fn tick_stopped<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.tick_nohz_tick_stopped(cpu(k, i))
}

/// CPU `i` goes down, on itself: deactivate (process context, interrupts on), out of the
/// mask, then `cpu_dying` (interrupts off), offline. Whether every step held.
pub fn cpu_down<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    let c = cpu(k, i);
    set_curr_is_idle(k, i, false);
    sync_rq(k, i, 0, false);
    let ok = hw::with_interrupts(|| k.0.sched_cpu_deactivate(c, k)).is_ok();
    CPUS[i].down.store(true, Relaxed);
    let out = !k.0.nohz().idle_cpus_mask().test(c);
    let died = k.0.cpu_dying(c, k).is_ok();
    CPUS[i].online.store(false, Relaxed);
    set_curr_is_idle(k, i, true);
    sync_rq(k, i, 0, true);
    ok && out && died
}

/// CPU `i` comes back: online, NO_HZ mode and a periodic tick, then activate. Whether it came
/// back in a freshly booted CPU's state.
pub fn cpu_up<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    let (c, m) = (cpu(k, i), k.0);
    CPUS[i].online.store(true, Relaxed);
    m.cpu_starting(c, k);
    let ok = hw::with_interrupts(|| m.sched_cpu_activate(c, k)).is_ok();
    CPUS[i].down.store(false, Relaxed);
    let (rq, ts) = (m.rq(c), m.tick_sched(c));
    ok && !m.nohz().idle_cpus_mask().test(c)
        && rq.nohz_flags().load().is_empty()
        && !rq.csd_busy()
        && ts.flags() == TsFlags::NOHZ | TsFlags::HIGHRES
}

/// CPU `i` is idle, tickless, past its stop attempt; and whether it is in the idle mask.
pub fn idle_tickless<P: Policy>(k: &Kernel<P>, i: usize) -> (bool, bool) {
    let (c, m) = (cpu(k, i), k.0);
    let flags = m.tick_sched(c).flags();
    let tickless = flags.contains(TsFlags::STOPPED | TsFlags::INIDLE)
        && CPUS[i].stop_attempt_ran.load(Relaxed)
        && m.rq(c).idle_cpu();
    (tickless, m.nohz().idle_cpus_mask().test(c))
}

/// The end-of-run counters: (CPUs with kick bits or a busy csd left, all warnings,
/// `CsdWithoutKick` warnings, irq time accounted in ns).
pub fn final_counts<P: Policy>(k: &Kernel<P>) -> (u64, u64, u64, u64) {
    let m = k.0;
    let left = cpus()
        .map(|i| m.rq(cpu(k, i)))
        .filter(|rq| rq.nohz_flags().load().intersects(NohzFlags::KICK_MASK) || rq.csd_busy())
        .count() as u64;
    let w = m.warnings();
    let irq = cpus().map(|i| m.irqtime(cpu(k, i)).hardirq()).sum();
    (
        left,
        w.total(m.nr_cpu_ids()),
        w.of_kind(Warning::CsdWithoutKick),
        irq,
    )
}
