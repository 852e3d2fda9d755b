//! The NO_HZ_FULL path: `can_stop_full_tick`, `tick_nohz_full_stop_tick`,
//! `__tick_nohz_full_update_tick`.

use nohz::Policy;
use nohz::TICK_DEP_SCHED;
use nohz_testing::for_each_policy;
use nohz_testing::{START_NS, World};

const TICK: u64 = 1_000_000;

fn busy_full_cpu<P: Policy>() -> World<P> {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    w.busy(3, 1);
    w.p.set_next_timer(w.cpu(3), START_NS + 40 * TICK);
    w
}

fn dependencies_keep_the_tick<P: Policy>() {
    let w = busy_full_cpu::<P>();
    let c = w.cpu(3);
    assert!(w.m.can_stop_full_tick(c, &*w.p));
    w.ts(3).tick_dep_set_cpu(TICK_DEP_SCHED);
    assert!(!w.m.can_stop_full_tick(c, &*w.p), "this CPU's mask");
    w.ts(3).tick_dep_clear_cpu(TICK_DEP_SCHED);
    w.m.tick_dep_set(1);
    assert!(!w.m.can_stop_full_tick(c, &*w.p), "the global mask");
    w.m.tick_dep_clear(1);
    w.p.set_task_tick_dependencies(c, 1 << 3);
    assert!(
        !w.m.can_stop_full_tick(c, &*w.p),
        "the task's or its group's mask"
    );
    w.p.set_task_tick_dependencies(c, 0);
    w.m.set_cpu_online(c, false);
    assert!(!w.m.can_stop_full_tick(c, &*w.p));
}

fn the_full_stop_never_registers_the_busy_cpu<P: Policy>() {
    let w = busy_full_cpu::<P>();
    w.m.tick_nohz_full_stop_tick(w.cpu(3), &*w.p);
    assert!(w.ts(3).tick_stopped());
    assert!(w.mask().is_empty());
    assert_eq!(w.ts(3).idle_calls(), 0, "not an idle pass");
}

fn a_near_timer_retains_on_the_full_path_too<P: Policy>() {
    let w = busy_full_cpu::<P>();
    w.p.set_next_timer(w.cpu(3), START_NS + TICK / 2);
    w.m.tick_nohz_full_stop_tick(w.cpu(3), &*w.p);
    assert!(!w.ts(3).tick_stopped());
    assert_eq!(w.ts(3).timer_expires_base(), 0);
}

fn update_restarts_a_stopped_tick_once_something_depends_on_it<P: Policy>() {
    let w = busy_full_cpu::<P>();
    let c = w.cpu(3);
    w.m.tick_nohz_full_update_tick(c, &*w.p);
    assert!(w.ts(3).tick_stopped());
    w.ts(3).tick_dep_set_cpu(TICK_DEP_SCHED);
    w.m.tick_nohz_full_update_tick(c, &*w.p);
    assert!(!w.ts(3).tick_stopped());
}

fn housekeeping_cpus_ignore_the_full_update<P: Policy>() {
    let w = busy_full_cpu::<P>();
    w.busy(1, 1);
    w.p.set_next_timer(w.cpu(1), START_NS + 40 * TICK);
    w.m.tick_nohz_full_update_tick(w.cpu(1), &*w.p);
    assert!(!w.ts(1).tick_stopped());
}

/// `tick_dep_clear`: once the last machine-wide dependency goes, a busy NO_HZ_FULL CPU's
/// tick may stop again (through `__tick_nohz_full_update_tick`).
fn clearing_a_global_dependency_lets_the_tick_stop_again<P: Policy>() {
    let w = busy_full_cpu::<P>();
    let c = w.cpu(3);
    w.m.tick_dep_set(TICK_DEP_SCHED);
    w.m.tick_nohz_full_update_tick_at(c, START_NS, &*w.p);
    assert!(
        !w.m.tick_nohz_tick_stopped(c),
        "a machine-wide dependency keeps it"
    );
    w.m.tick_dep_clear(TICK_DEP_SCHED);
    w.m.tick_nohz_full_update_tick_at(c, START_NS, &*w.p);
    assert!(w.m.tick_nohz_tick_stopped(c), "cleared: it stops");
}

/// `tick_dep_clear_cpu`: the same for this CPU's own dependency.
fn clearing_a_cpu_dependency_lets_the_tick_stop_again<P: Policy>() {
    let w = busy_full_cpu::<P>();
    let c = w.cpu(3);
    w.ts(3).tick_dep_set_cpu(TICK_DEP_SCHED);
    w.m.tick_nohz_full_update_tick(c, &*w.p);
    assert!(!w.m.tick_nohz_tick_stopped(c));
    w.ts(3).tick_dep_clear_cpu(TICK_DEP_SCHED);
    assert_eq!(w.ts(3).tick_dep_mask(), 0);
    w.m.tick_nohz_full_update_tick(c, &*w.p);
    assert!(w.m.tick_nohz_tick_stopped(c));
}

/// `Machine::tick_dep_set_cpu` / `tick_dep_clear_cpu`, the embedding's entry points: on the
/// CPU itself its stopped tick restarts at once and stops again when the dependency goes; from
/// another CPU only the bit changes, and the CPU's next interrupt exit looks again.
fn the_machines_tick_dependency_acts_on_its_cpu_and_waits_elsewhere<P: Policy>() {
    let w = busy_full_cpu::<P>();
    let c = w.cpu(3);
    w.m.tick_nohz_full_update_tick(c, &*w.p);
    assert!(w.ts(3).tick_stopped());
    // On CPU 3 itself.
    w.p.set_this_cpu(Some(c));
    w.m.tick_dep_set_cpu(c, TICK_DEP_SCHED, &*w.p);
    assert_eq!(w.ts(3).tick_dep_mask(), TICK_DEP_SCHED);
    assert!(!w.ts(3).tick_stopped(), "restarted at once");
    w.m.tick_dep_clear_cpu(c, TICK_DEP_SCHED, &*w.p);
    assert_eq!(w.ts(3).tick_dep_mask(), 0);
    assert!(w.ts(3).tick_stopped(), "stopped again at once");
    // From CPU 0: the bit only, until CPU 3's next interrupt exit.
    w.p.set_this_cpu(Some(w.cpu(0)));
    w.m.tick_dep_set_cpu(c, TICK_DEP_SCHED, &*w.p);
    assert_eq!(w.ts(3).tick_dep_mask(), TICK_DEP_SCHED);
    assert!(w.ts(3).tick_stopped(), "not from another CPU");
    w.p.set_this_cpu(Some(c));
    w.m.interrupt(c, &*w.p, || {});
    assert!(
        !w.ts(3).tick_stopped(),
        "CPU 3's interrupt exit restarted it"
    );
    // A housekeeping CPU's bit changes; its tick is never stopped for a busy CPU anyway.
    w.p.set_this_cpu(Some(w.cpu(1)));
    w.m.tick_dep_set_cpu(w.cpu(1), TICK_DEP_SCHED, &*w.p);
    assert_eq!(w.ts(1).tick_dep_mask(), TICK_DEP_SCHED);
    w.m.tick_dep_clear_cpu(w.cpu(1), TICK_DEP_SCHED, &*w.p);
    assert_eq!(w.ts(1).tick_dep_mask(), 0);
}

/// `tick_nohz_full_setup` (`nohz_full=` at boot): checked and all or nothing. Refused before
/// init, for an index the machine lacks, for the CPU that keeps time and when no housekeeping
/// CPU would be left, each time changing nothing; accepted, its CPUs become NO_HZ_FULL and
/// leave housekeeping, and a later call adds more.
fn nohz_full_setup_is_checked_and_all_or_nothing<P: Policy>() {
    use nohz::{CpuError, NohzFullError};
    let fresh = World::<P>::unbooted(4, nohz::Jiffies::new(nohz_testing::START_JIFFIES));
    assert_eq!(
        fresh.m.tick_nohz_full_setup([2]),
        Err(NohzFullError::NotBooted)
    );
    let w = World::<P>::new(4);
    let full = |w: &World<P>| -> Vec<usize> {
        (0..4)
            .filter(|&i| w.m.tick_nohz_full_cpu(w.cpu(i)))
            .collect()
    };
    let housekeeping = |w: &World<P>| -> Vec<usize> {
        (0..4)
            .filter(|&i| w.m.housekeeping().test(w.cpu(i)))
            .collect()
    };
    assert!(matches!(
        w.m.tick_nohz_full_setup([2, 9]),
        Err(NohzFullError::NoSuchCpu(CpuError::OutOfRange { .. }))
    ));
    assert_eq!(
        w.m.tick_nohz_full_setup([3, 0]),
        Err(NohzFullError::Timekeeper { cpu: 0 })
    );
    assert_eq!(full(&w), [0usize; 0], "nothing changed");
    assert_eq!(housekeeping(&w), [0, 1, 2, 3]);
    assert_eq!(w.m.tick_nohz_full_setup([2, 3]), Ok(()));
    assert_eq!(full(&w), [2, 3]);
    assert_eq!(housekeeping(&w), [0, 1]);
    assert_eq!(w.m.tick_nohz_full_setup([1]), Ok(()), "a second call adds");
    assert_eq!(full(&w), [1, 2, 3]);
    // With the duty free (CPU 0's tick stopped and handed it off), only the last
    // housekeeping CPU is left to refuse.
    w.m.set_tick_do_timer_cpu(None);
    assert_eq!(
        w.m.tick_nohz_full_setup([0]),
        Err(NohzFullError::NoHousekeeping)
    );
    assert_eq!(housekeeping(&w), [0]);
    assert_eq!(w.warnings(), 0);
}

/// The same dependency bit from two sources (the machine and this CPU) still keeps the
/// tick: dependencies add up, whichever mask holds them.
fn one_dependency_from_two_sources_keeps_the_tick<P: Policy>() {
    let w = busy_full_cpu::<P>();
    let c = w.cpu(3);
    w.m.tick_dep_set(TICK_DEP_SCHED);
    w.ts(3).tick_dep_set_cpu(TICK_DEP_SCHED);
    assert!(!w.m.can_stop_full_tick(c, &*w.p), "machine and CPU");
    w.m.tick_dep_clear(TICK_DEP_SCHED);
    w.p.set_task_tick_dependencies(c, TICK_DEP_SCHED);
    assert!(!w.m.can_stop_full_tick(c, &*w.p), "CPU and task");
}

for_each_policy!(
    dependencies_keep_the_tick,
    the_full_stop_never_registers_the_busy_cpu,
    a_near_timer_retains_on_the_full_path_too,
    update_restarts_a_stopped_tick_once_something_depends_on_it,
    housekeeping_cpus_ignore_the_full_update,
    clearing_a_global_dependency_lets_the_tick_stop_again,
    clearing_a_cpu_dependency_lets_the_tick_stop_again,
    one_dependency_from_two_sources_keeps_the_tick,
    the_machines_tick_dependency_acts_on_its_cpu_and_waits_elsewhere,
    nohz_full_setup_is_checked_and_all_or_nothing,
);
