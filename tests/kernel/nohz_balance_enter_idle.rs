//! `nohz_balance_enter_idle`: every early return, the registration, the idempotent path.

use nohz::{Legacy, Patched, Policy, Warning};
use nohz_testing::World;
use nohz_testing::for_each_policy;

fn registers_and_leaves_the_llc_busy_count<P: Policy>() {
    let w = World::<P>::new(4);
    assert_eq!(w.busy_count(0), 4);
    w.enter(2);
    let rq = w.m.rq(w.cpu(2));
    assert_eq!(w.mask(), [2]);
    assert!(rq.nohz_tick_stopped() && rq.has_blocked_load() && w.m.nohz_idle(w.cpu(2)));
    assert!(w.m.nohz().needs_update() && w.m.nohz().has_blocked_load());
    assert_eq!(w.busy_count(0), 3);
    assert_eq!(w.warnings(), 0);
}

fn inactive_cpu_does_nothing_at_all<P: Policy>() {
    let w = World::<P>::new(4);
    w.deactivate(1);
    w.enter(1);
    let rq = w.m.rq(w.cpu(1));
    assert!(!rq.has_blocked_load() && !rq.nohz_tick_stopped());
    assert!(w.mask().is_empty());
    assert!(!w.m.nohz().has_blocked_load() && !w.m.nohz().needs_update());
    assert_eq!(w.busy_count(0), 3, "the three active CPUs, all busy");
}

fn isolated_cpu_sets_only_its_own_blocked_load<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_sched_domain(w.cpu(3), false);
    w.rebuild();
    w.enter(3);
    let rq = w.m.rq(w.cpu(3));
    assert!(rq.has_blocked_load(), "set before the null-domain return");
    assert!(!rq.nohz_tick_stopped() && w.mask().is_empty());
    assert!(
        !w.m.nohz().has_blocked_load(),
        "nohz.has_blocked_load is untouched on the null-domain return"
    );
    assert_eq!(w.m.nohz().nr_cpus(), 0);
}

fn idempotent_path_only_refreshes_blocked_load<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    // An ILB pass cleared the flags since.
    w.m.nohz_idle_balance_pass(
        w.cpu(1),
        nohz::NohzFlags::STATS | nohz::NohzFlags::NEXT,
        &*w.p,
    );
    w.advance(1);
    let rq = w.m.rq(w.cpu(1));
    assert!(!w.m.nohz().needs_update());
    let counter = w.m.nohz().nr_cpus();
    w.m.nohz_balance_enter_idle(w.cpu(1), &*w.p);
    assert!(rq.has_blocked_load() && w.m.nohz().has_blocked_load());
    assert!(
        !w.m.nohz().needs_update(),
        "needs_update is for the transition only"
    );
    assert_eq!(w.busy_count(0), 3, "not counted idle twice");
    assert_eq!(w.m.nohz().nr_cpus(), counter, "not counted tickless twice");
    assert_eq!(w.mask(), [1]);
}

fn acting_for_another_cpu_warns_then_proceeds<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_this_cpu(Some(w.cpu(0)));
    w.enter(2);
    assert_eq!(w.m.warnings().on_cpu(w.cpu(2)), 1);
    assert_eq!(w.m.warnings().of_kind(Warning::WrongCpu), 1);
    assert_eq!(w.mask(), [2], "the kernel warns and carries on");
    w.p.set_this_cpu(Some(w.cpu(3)));
    w.enter(3);
    assert_eq!(w.warnings(), 1, "on its own CPU: no warning");
}

for_each_policy!(
    registers_and_leaves_the_llc_busy_count,
    inactive_cpu_does_nothing_at_all,
    isolated_cpu_sets_only_its_own_blocked_load,
    idempotent_path_only_refreshes_blocked_load,
    acting_for_another_cpu_warns_then_proceeds,
);

#[test]
fn only_legacy_counts_nr_cpus() {
    let legacy = World::<Legacy>::new(4);
    let patched = World::<Patched>::new(4);
    for i in [1, 2, 3] {
        legacy.enter(i);
        patched.enter(i);
    }
    assert_eq!(legacy.m.nohz().nr_cpus(), 3);
    assert_eq!(patched.m.nohz().nr_cpus(), 0);
    assert_eq!(legacy.mask(), patched.mask());
}

/// The sharded idle set's accessors: a registered CPU's bit is in its shard's word, which is
/// flagged; a shard index past the last reads as empty and unflagged.
#[test]
fn a_sharded_cpus_bit_lands_in_its_shard_word() {
    use nohz_testing::ShardedStrict;
    let w = World::<ShardedStrict>::new(4);
    w.enter(3);
    let at = w.m.shard_slot(w.cpu(3)).expect("CPU 3 has a shard");
    assert_eq!(w.m.shard_word(at.shard), 1 << at.slot);
    assert!(w.m.shard_flagged(at.shard));
    let past = w.m.nr_shards();
    assert_eq!(w.m.shard_word(past), 0);
    assert!(!w.m.shard_flagged(past));
    assert!(w.m.nohz_idle_test(w.cpu(3)));
}

/// The largest sharded machine the summary can name: 128 shards (two summary words), one CPU
/// each. Every CPU registers into its own shard, each shard is flagged (the second summary
/// word's bits included), and a kick from the one busy CPU finds an idle one.
#[test]
fn a_machine_of_128_shards_flags_every_one() {
    type Widest = nohz::Sharded<128, nohz::sharded::Contiguous<1>>;
    assert_eq!(nohz::sharded::MAX_SHARDS, 128);
    let w = World::<Widest, 128, 2>::new(128);
    assert_eq!(w.m.nr_shards(), 128);
    for i in 1..128 {
        w.enter(i);
    }
    assert!((1..128).all(|s| w.m.shard_flagged(s) && w.m.shard_word(s) == 1));
    assert!(!w.m.shard_flagged(0) && w.m.shard_word(0) == 0);
    assert_eq!(w.m.nohz_idle_cpus().count(), 127);
    let ilb = w.m.find_new_ilb(w.cpu(0)).expect("an idle CPU");
    assert!(w.m.nohz_idle_test(ilb));
    // Only shards 1 and 65 hold a CPU, one bit in each summary word, the same bit: the kick's
    // emptiness test (the summary, Hint) still sees them, and so does find_new_ilb.
    let w = World::<Widest, 128, 2>::new(128);
    w.enter(1);
    w.enter(65);
    assert!(w.m.nohz_anyone_tickless(w.cpu(0)));
    assert_eq!(w.m.find_new_ilb(w.cpu(0)), Some(w.cpu(1)));
}

/// With every shard the policy provides in use (`Sharded<4>`, one CPU per shard, all four
/// registered), the index one past the last still reads as an empty, unflagged shard with no
/// members: the accessors bound it by the shards in use, not by the storage behind them.
#[test]
fn with_every_shard_in_use_the_index_past_the_last_reads_empty() {
    type FourShards = nohz::Sharded<4, nohz::sharded::Contiguous<1>>;
    let w = World::<FourShards>::new(4);
    assert_eq!(w.m.nr_shards(), 4);
    for i in 0..4 {
        w.enter(i);
    }
    assert!((0..4).all(|s| w.m.shard_flagged(s) && w.m.shard_word(s) == 1));
    assert_eq!(w.m.shard_word(4), 0);
    assert!(!w.m.shard_flagged(4));
    assert_eq!(w.m.shard_members(4).count(), 0);
}
