//! `nohz_balance_exit_idle` and `set_cpu_sd_state_busy`.

use nohz::Policy;
use nohz_testing::World;
use nohz_testing::for_each_policy;

fn unregistered_cpu_is_a_no_op<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.m.nohz_balance_exit_idle(w.cpu(2), &*w.p);
    assert_eq!(w.mask(), [1]);
    assert_eq!(w.busy_count(0), 3);
    assert_eq!(w.m.nohz().nr_cpus(), if P::NR_CPUS_COUNTER { 1 } else { 0 });
}

fn registered_cpu_leaves_mask_and_counts_busy<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.enter(2);
    w.m.nohz_balance_exit_idle(w.cpu(1), &*w.p);
    let rq = w.m.rq(w.cpu(1));
    assert!(!rq.nohz_tick_stopped() && !w.m.nohz_idle(w.cpu(1)));
    assert_eq!(w.mask(), [2]);
    assert_eq!(w.busy_count(0), 3);
    assert_eq!(w.m.nohz().nr_cpus(), if P::NR_CPUS_COUNTER { 1 } else { 0 });
    // Exit leaves the scalars alone: they are hints consumers re-check.
    assert!(w.m.nohz().has_blocked_load() && w.m.nohz().needs_update());
    w.m.nohz_balance_exit_idle(w.cpu(1), &*w.p);
    assert_eq!(w.busy_count(0), 3, "a second exit changes nothing");
}

fn cpu_without_llc_keeps_no_count<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_llc(w.cpu(3), None);
    w.rebuild();
    assert_eq!(w.busy_count(0), 3);
    assert_eq!(w.m.llc_nr_busy_cpus(w.cpu(3)), None);
    w.enter(3);
    assert_eq!(w.mask(), [3], "registers without an LLC");
    assert!(!w.m.nohz_idle(w.cpu(3)));
    w.m.nohz_balance_exit_idle(w.cpu(3), &*w.p);
    assert_eq!(w.busy_count(0), 3);
}

for_each_policy!(
    unregistered_cpu_is_a_no_op,
    registered_cpu_leaves_mask_and_counts_busy,
    cpu_without_llc_keeps_no_count,
);
