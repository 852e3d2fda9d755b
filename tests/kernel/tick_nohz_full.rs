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
);
