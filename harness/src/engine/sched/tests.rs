//! Placement on small hand-built machines: each mechanism's choices as the kernel makes them.
//!
//! A machine here is the engine's state with nothing running: CPUs are made busy or idle
//! and signals set by hand, then a placement function is asked where a task goes.

use super::Domain;
use super::find_idlest_group::group_classify;
use super::find_idlest_group::{GroupStats, GroupType, adjust_numa_imbalance, go_to_idlest};
use super::select_task_rq_fair::Current;
use super::topology::Level;
use crate::engine::topo::Shape;
use crate::engine::work::{TaskKind, Workload};
use crate::engine::{Config, Engine};
use nohz::Patched;

type E = Engine<Patched, 1000>;

const KIND: TaskKind = TaskKind {
    run_ns: 1_000,
    sleep_ns: 1_000,
    runs: 0,
    bound: false,
};

/// Runs `f` on a fresh engine for `shape` (on a thread with room for the machine's
/// construction in a debug build).
fn on(shape: Shape, f: impl FnOnce(&E) + Send + 'static) {
    let run = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let cfg = Config {
                check_every: 0,
                ..Config::new(shape, Workload::default(), 1)
            };
            f(&E::new(&cfg).unwrap());
        })
        .unwrap()
        .join();
    if let Err(panic) = run {
        std::panic::resume_unwind(panic);
    }
}

fn shape(cpus: usize, smt: usize, llc: usize, socket: usize) -> Shape {
    Shape {
        cpus,
        smt,
        llc,
        socket,
        cpusets: 1,
        nohz_full: 0,
    }
}

impl E {
    /// A task made on `cpu` (sleeping there, on no run queue).
    fn task(&self, cpu: usize) -> usize {
        self.new_task(KIND, cpu, None, None)
    }

    /// `c` runs a task of its own (returned).
    fn busy(&self, c: usize) -> usize {
        let t = self.task(c);
        self.cpus[c].curr.set(Some(t));
        self.cpus[c].idle_current.set(false);
        self.update_load_avg(c);
        t
    }

    fn scan(&self, c: usize, nr: usize) {
        self.llc_shared(c).nr_idle_scan.set(Some(nr));
    }

    fn prev(&self, t: usize, c: usize) {
        self.tasks.borrow_mut()[t].prev = c;
    }
}

// ---- select_idle_sibling ------------------------------------------------------------------

#[test]
fn the_target_then_prev_then_recent_used_cpu_then_the_scan() {
    on(Shape::flat(8), |e| {
        e.scan(0, 8);
        let t = e.task(0);
        // All idle: the target, though prev is idle too.
        assert_eq!(e.select_idle_sibling(t, 2, 5), 5);
        // The target busy: prev, idle and sharing its cache.
        e.busy(5);
        assert_eq!(e.select_idle_sibling(t, 2, 5), 2);
        // Both busy: the CPU the task used before (0, where it was made), which becomes prev.
        e.busy(2);
        assert_eq!(e.select_idle_sibling(t, 2, 5), 0);
        assert_eq!(e.tasks.borrow()[t].place.recent_used_cpu, 2);
        // That one busy too: the scan, from the CPU after the target.
        e.busy(0);
        assert_eq!(e.select_idle_sibling(t, 2, 5), 6);
        // Nothing idle: the target.
        for c in [1, 3, 4, 6, 7] {
            e.busy(c);
        }
        assert_eq!(e.select_idle_sibling(t, 2, 5), 5);
    });
}

#[test]
fn prev_in_another_cache_is_not_taken() {
    on(shape(8, 1, 4, 8), |e| {
        e.scan(0, 4);
        let t = e.task(0);
        for c in 0..4 {
            e.busy(c);
        }
        // 5 is idle, but not in the target's cache; the target's cache has no idle CPU.
        assert_eq!(e.select_idle_sibling(t, 5, 1), 1);
        // The same with the waker on the other side: prev 1 busy, target 5 idle.
        assert_eq!(e.select_idle_sibling(t, 1, 6), 6);
    });
}

#[test]
fn the_scan_looks_at_no_more_than_nr_idle_scan_cpus_wrapping() {
    on(Shape::flat(8), |e| {
        let t = e.task(0);
        for c in (0..8).filter(|&c| c != 4) {
            e.busy(c);
        }
        // From the target 0: 1, 2, 3, then 4 (the fourth looked at).
        for (nr, want) in [(0, 0), (3, 0), (4, 4), (8, 4)] {
            e.scan(0, nr);
            assert_eq!(e.select_idle_sibling(t, 0, 0), want, "nr_idle_scan {nr}");
        }
        // From the target 6: 7, then round to 0..3, then 4 (the sixth).
        e.prev(t, 6);
        e.tasks.borrow_mut()[t].place.recent_used_cpu = 6;
        e.scan(0, 5);
        assert_eq!(e.select_idle_sibling(t, 6, 6), 6);
        e.scan(0, 6);
        assert_eq!(e.select_idle_sibling(t, 6, 6), 4);
    });
}

#[test]
fn the_scan_skips_cpus_the_task_may_not_run_on_and_leaving_ones() {
    on(Shape::flat(8), |e| {
        e.scan(0, 8);
        let t = e.task(3);
        for c in [3, 4, 6, 7, 0, 1] {
            e.busy(c);
        }
        // Idle: 2 and 5. 5 comes first from 3, unless it is leaving or not allowed.
        assert_eq!(e.select_idle_sibling(t, 3, 3), 5);
        e.hotplug_busy.set(true);
        e.cpus[5].leaving.set(true);
        assert_eq!(e.select_idle_sibling(t, 3, 3), 2);
        e.cpus[5].leaving.set(false);
        e.tasks.borrow_mut()[t].allowed = 0..4;
        assert_eq!(e.select_idle_sibling(t, 3, 3), 2);
    });
}

#[test]
fn with_smt_an_idle_core_is_preferred_and_prev_sibling_without_one() {
    // Cores {0,1} {2,3} {4,5} {6,7} in one cache.
    on(shape(8, 2, 8, 8), |e| {
        e.scan(0, 8);
        let t = e.task(0);
        for c in [0, 2, 5] {
            e.busy(c);
        }
        // A CPU switching to idle records an idle core when its sibling is idle too.
        e.update_idle_core(3);
        assert!(!e.llc_shared(0).has_idle_cores.get());
        e.update_idle_core(6);
        assert!(e.llc_shared(0).has_idle_cores.get());
        // With the hint, the first whole idle core from the target: 6, past the idle
        // threads 1, 3 and 4 of busy cores.
        assert_eq!(e.select_idle_sibling(t, 0, 0), 6);
        // Without it, prev's idle sibling first.
        e.llc_shared(0).has_idle_cores.set(false);
        assert_eq!(e.select_idle_sibling(t, 0, 0), 1);
        // The hint with no whole idle core: the first idle thread seen, and the hint goes.
        e.busy(7);
        e.llc_shared(0).has_idle_cores.set(true);
        e.prev(t, 2);
        assert_eq!(e.select_idle_sibling(t, 2, 2), 3);
        assert!(!e.llc_shared(0).has_idle_cores.get());
    });
}

#[test]
fn an_idle_core_needs_every_other_thread_idle() {
    // SMT4: cores {0..4} {4..8}.
    on(shape(8, 4, 8, 8), |e| {
        e.busy(1);
        e.update_idle_core(0);
        assert!(!e.llc_shared(0).has_idle_cores.get());
        // CPU 5 idling while its siblings 4, 6, 7 are idle: a whole idle core.
        e.update_idle_core(5);
        assert!(e.llc_shared(0).has_idle_cores.get());
    });
}

// ---- wake_affine ---------------------------------------------------------------------------

#[test]
fn wake_affine_by_idleness() {
    on(shape(8, 1, 4, 8), |e| {
        // An idle waker's CPU sharing prev's cache takes the task unless prev is idle too.
        assert_eq!(e.wake_affine_idle(1, 2, false), Some(2));
        e.busy(2);
        assert_eq!(e.wake_affine_idle(1, 2, false), Some(1));
        // Not across caches: idle prev keeps it, busy prev leaves it to the weights.
        assert_eq!(e.wake_affine_idle(1, 6, false), Some(6));
        e.busy(6);
        assert_eq!(e.wake_affine_idle(1, 6, false), None);
        // A sync waker alone on its CPU hands the task over.
        e.busy(5);
        assert_eq!(e.wake_affine_idle(5, 6, true), Some(5));
        assert_eq!(e.wake_affine_idle(5, 6, false), None);
    });
}

#[test]
fn wake_affine_by_weight_with_the_bias() {
    on(shape(8, 1, 4, 8), |e| {
        let t = e.task(6);
        let w = e.busy(1);
        e.busy(6);
        // The task's load is 1024 (new). The waker's CPU with the task against prev
        // without it, prev's side counted at 108 % (pct 117): 100 (0 + 1024) < 108 (L - 1024)
        // from L = 1973.
        e.set_signals(1, 0, 0);
        e.set_signals(6, 0, 1972);
        assert_eq!(
            e.wake_affine_weight(117, t, Current::Task(w), 1, 6, false),
            None
        );
        e.set_signals(6, 0, 1973);
        assert_eq!(
            e.wake_affine_weight(117, t, Current::Task(w), 1, 6, false),
            Some(1)
        );
        // At the SMT level's 110 the margin is 105 %: 1024 + 975.2.
        e.set_signals(6, 0, 1999);
        assert_eq!(
            e.wake_affine_weight(110, t, Current::Task(w), 1, 6, false),
            None
        );
        e.set_signals(6, 0, 2000);
        assert_eq!(
            e.wake_affine_weight(110, t, Current::Task(w), 1, 6, false),
            Some(1)
        );
        // Sync: the waker's own load leaves its CPU's side (here all of it), and prev gets 1.
        e.set_signals(1, 0, 1024);
        e.set_signals(6, 0, 1972);
        assert_eq!(
            e.wake_affine_weight(117, t, Current::Task(w), 1, 6, false),
            None
        );
        assert_eq!(
            e.wake_affine_weight(117, t, Current::Task(w), 1, 6, true),
            None
        );
        e.set_signals(6, 0, 1973);
        assert_eq!(
            e.wake_affine_weight(117, t, Current::Task(w), 1, 6, true),
            Some(1)
        );
        // A waker heavier than its CPU's load: the waker's CPU at once.
        e.set_signals(1, 0, 100);
        assert_eq!(
            e.wake_affine_weight(117, t, Current::Task(w), 1, 6, true),
            Some(1)
        );
        // The outcome of wake_affine is this or prev.
        e.set_signals(6, 0, 0);
        assert_eq!(e.wake_affine(117, t, Current::Task(w), 1, 6, false), 6);
    });
}

#[test]
fn wake_wide_needs_both_to_flip_more_than_the_cache_and_one_far_more() {
    on(Shape::flat(8), |e| {
        let t = e.task(0);
        let w = e.busy(1);
        let set = |who: usize, flips: u32| e.tasks.borrow_mut()[who].place.wakee.flips = flips;
        for (waker, wakee, wide) in [
            (8, 8, false),
            (63, 8, false),
            (64, 8, true),
            (8, 64, true),
            (1000, 7, false),
            (0, 0, false),
        ] {
            set(w, waker);
            set(t, wakee);
            assert_eq!(e.wake_wide(Current::Task(w), t, 1), wide, "{waker} {wakee}");
        }
    });
}

#[test]
fn record_wakee_counts_changes_of_wakee_and_halves_once_a_second() {
    on(Shape::flat(8), |e| {
        let (a, b) = (e.task(0), e.task(0));
        let waker = Current::Idle(3);
        for t in [a, a, b, a, a] {
            e.record_wakee(waker, t);
        }
        assert_eq!(e.wakee(waker).flips, 3);
        // A second and a jiffy later: halved once, then the new wakee counted.
        e.time.update(1_002_000_000);
        e.record_wakee(waker, b);
        assert_eq!(e.wakee(waker).flips, 2);
        e.record_wakee(waker, a);
        assert_eq!(e.wakee(waker).flips, 3);
    });
}

#[test]
fn a_timer_wakeup_searches_from_prev_and_an_idle_waker_in_the_cache_pulls() {
    on(shape(8, 1, 4, 8), |e| {
        e.scan(0, 4);
        e.scan(4, 4);
        let t = e.task(2);
        for c in [1, 2] {
            e.busy(c);
        }
        // The timer fires where the task slept: no wake_affine, the scan from 2 finds 3.
        assert_eq!(e.select_task_rq(t, 2, false), 3);
        // An idle waker's CPU in the same cache (0) takes it (prev 2 busy).
        assert_eq!(e.select_task_rq(t, 0, false), 0);
        // A bound task goes where it is bound, idle or not.
        e.tasks.borrow_mut()[t].allowed = 2..3;
        assert_eq!(e.select_task_rq(t, 0, false), 2);
        // Unless that CPU is leaving: the fallback, the cpuset's first CPU.
        e.hotplug_busy.set(true);
        e.cpus[2].leaving.set(true);
        assert_eq!(e.select_task_rq(t, 0, false), 0);
    });
}

#[test]
fn wake_affine_weighs_with_the_margin_of_the_lowest_domain_spanning_both() {
    // Cores {0,1} {2,3} in one cache of 4: the waker 0 and prev 3 share the MC domain (pct
    // 117, a 108 % bias), not the SMT one (110, 105 %).
    on(shape(8, 2, 4, 8), |e| {
        let t = e.task(3);
        for c in 0..4 {
            e.busy(c);
        }
        e.set_signals(0, 0, 0);
        // 100 x (0 + 1024) against 108 x (1984 - 1024) = 103,680: the waker's CPU; at 105 %
        // (100,800) it would have been prev.
        e.set_signals(3, 0, 1984);
        assert_eq!(e.select_task_rq(t, 0, false), 0);
        e.set_signals(3, 0, 1970);
        assert_eq!(e.select_task_rq(t, 0, false), 3);
    });
}

// ---- find_idlest_group ---------------------------------------------------------------------

#[test]
fn a_fork_stays_local_unless_the_idlest_group_has_strictly_more_idle_cpus() {
    // Two caches of 4 in one socket: MC(4) under PKG(8).
    on(shape(8, 1, 4, 8), |e| {
        let t = e.task(0);
        // All idle: stays on the parent's CPU.
        assert_eq!(e.select_task_rq_fork(t, 0), 0);
        // Parent's CPU busy: the other cache has 4 idle CPUs to the local 3: there, on the
        // CPU that went idle last.
        e.busy(0);
        e.placement[6].idle_stamp.set(Some(50));
        e.placement[5].idle_stamp.set(Some(40));
        assert_eq!(e.select_task_rq_fork(t, 0), 6);
        // 3 idle each side: stays in the cache, on its first idle CPU (equal utilization).
        e.busy(4);
        assert_eq!(e.select_task_rq_fork(t, 0), 1);
        // Its idle CPUs' utilization breaks the tie in favour of the least used.
        e.set_signals(1, 300, 0);
        e.set_signals(2, 100, 0);
        e.set_signals(3, 200, 0);
        assert_eq!(e.select_task_rq_fork(t, 0), 2);
    });
}

#[test]
fn the_idlest_cpu_is_the_last_gone_idle_else_the_least_loaded() {
    on(shape(8, 1, 4, 8), |e| {
        let t = e.task(0);
        let allowed = e.tasks.borrow()[t].allowed.clone();
        e.placement[5].idle_stamp.set(Some(10));
        e.placement[7].idle_stamp.set(Some(30));
        e.placement[6].idle_stamp.set(None);
        assert_eq!(e.sched_balance_find_dst_group_cpu(4..8, &allowed, 0), 7);
        // A stamp spent by a wakeup never wins; with none left, the least loaded busy CPU
        // (the first of equals), idle CPUs aside.
        e.placement[5].idle_stamp.set(None);
        e.placement[7].idle_stamp.set(None);
        e.placement[4].idle_stamp.set(None);
        e.busy(4);
        e.set_signals(4, 0, 3000);
        assert_eq!(e.sched_balance_find_dst_group_cpu(4..8, &allowed, 0), 4);
        for (c, load) in [(5, 1000), (6, 2000), (7, 1000)] {
            e.busy(c);
            e.set_signals(c, 0, load);
        }
        assert_eq!(e.sched_balance_find_dst_group_cpu(4..8, &allowed, 0), 5);
    });
}

#[test]
fn across_numa_a_fork_stays_while_the_node_holds_no_more_than_imb_numa_nr() {
    // Two nodes of 8, caches of 4: MC(4), PKG(8), NUMA(16), imb_numa_nr 2 (two caches).
    on(shape(16, 1, 4, 8), |e| {
        assert_eq!(e.cpus[0].domains.borrow()[2].imb_numa_nr, 2);
        let t = e.task(0);
        // One task on the node: 7 idle against 8, the node would run 2: stays (in the
        // node's other cache, which has more idle CPUs).
        e.busy(0);
        assert!((4..8).contains(&e.select_task_rq_fork(t, 0)));
        // Two: the node would run 3: goes to the node with more idle CPUs.
        e.busy(1);
        assert!(e.select_task_rq_fork(t, 0) >= 8);
    });
    assert_eq!(adjust_numa_imbalance(3, 4, 2), 3);
    assert_eq!(adjust_numa_imbalance(2, 4, 2), 2);
    assert_eq!(adjust_numa_imbalance(2, 2, 2), 0);
    assert_eq!(adjust_numa_imbalance(5, 2, 2), 5);
    // An allowed imbalance of 4 tasks: a difference of 3 idle CPUs is one, of 2 is not
    // while the node would run no more than 4; the CPUs the task may use in the local
    // group cap it.
    let mut numa = Domain::new(Level::Numa, 0..32);
    numa.imb_numa_nr = 4;
    let spare = |nr: usize, idle: usize| GroupStats {
        idle_cpus: idle,
        nr_running: nr,
        group_type: GroupType::HasSpare,
        ..stats(0, 0, 0)
    };
    assert!(go_to_idlest(&numa, &spare(3, 13), &spare(0, 16), 16));
    assert!(!go_to_idlest(&numa, &spare(2, 14), &spare(0, 16), 16));
    assert!(go_to_idlest(&numa, &spare(2, 14), &spare(0, 16), 1));
    assert!(!go_to_idlest(&numa, &spare(2, 16), &spare(0, 16), 1));
}

fn stats(nr: usize, util: u64, runnable: u64) -> GroupStats {
    let mut s = GroupStats {
        load: runnable,
        util,
        runnable,
        nr_running: nr,
        idle_cpus: 0,
        capacity: 4096,
        weight: 4,
        group_type: GroupType::HasSpare,
        avg_load: runnable * 1024 / 4096,
        signals: true,
    };
    s.group_type = group_classify(117, &s);
    s
}

#[test]
fn group_classify_by_tasks_utilization_and_runnable() {
    // Fewer tasks than CPUs: spare, whatever the signals.
    assert_eq!(stats(3, 4000, 9000).group_type, GroupType::HasSpare);
    // As many: spare while utilization and runnable leave the 117 % margin.
    assert_eq!(stats(4, 3500, 4096).group_type, GroupType::HasSpare);
    assert_eq!(stats(4, 3501, 4096).group_type, GroupType::FullyBusy);
    assert_eq!(stats(4, 0, 4793).group_type, GroupType::FullyBusy);
    // More: overloaded once either signal is over the margin, spare otherwise.
    assert_eq!(stats(5, 3000, 4200).group_type, GroupType::HasSpare);
    assert_eq!(stats(5, 3000, 4793).group_type, GroupType::Overloaded);
    assert_eq!(stats(5, 3502, 0).group_type, GroupType::Overloaded);
}

#[test]
fn busy_groups_move_only_past_both_margins_and_numa_keeps_local() {
    let pkg = Domain::new(Level::Pkg, 0..8);
    let numa = Domain::new(Level::Numa, 0..16);
    let busy = |avg: u64| GroupStats {
        group_type: GroupType::FullyBusy,
        avg_load: avg,
        ..stats(4, 4000, 4096)
    };
    // Local 1024: the absolute margin is 174 (pct 117), the relative one 117 %.
    assert!(!go_to_idlest(&pkg, &busy(1024), &busy(900), 4));
    assert!(go_to_idlest(&pkg, &busy(1024), &busy(875), 4));
    assert!(!go_to_idlest(&pkg, &busy(1024), &busy(876), 4));
    // Across NUMA the idlest must stay lighter with the margin added to it.
    assert!(!go_to_idlest(&numa, &busy(1024), &busy(850), 4));
    assert!(go_to_idlest(&numa, &busy(1024), &busy(849), 4));
    // A lower type wins outright; a higher one never.
    assert!(go_to_idlest(&pkg, &busy(100), &stats(3, 0, 0), 4));
    assert!(!go_to_idlest(&pkg, &stats(3, 0, 0), &busy(100), 4));
}

// ---- the signals, the scan depth, the domains ---------------------------------------------

#[test]
fn a_task_load_moves_with_it_and_a_new_task_starts_heavy() {
    on(Shape::flat(8), |e| {
        let t = e.task(0);
        e.pelt_enqueue(0, t);
        assert_eq!(e.cpu_load(0), 1024);
        // Woken on another CPU: its load leaves 0 for 1.
        e.pelt_block(t);
        e.pelt_enqueue(1, t);
        assert_eq!((e.cpu_load(0), e.cpu_load(1)), (0, 1024));
        e.pelt_dead(t);
        assert_eq!(e.cpu_load(1), 0);
        // A new task's utilization: half the spare capacity of an unused CPU, else its
        // share of the CPU's utilization by load, at most half the spare.
        let n = e.task(2);
        e.post_init_entity_util_avg(2, n);
        e.pelt_enqueue(2, n);
        assert_eq!(e.cpu_util(2), 512);
        let m = e.task(3);
        e.set_signals(3, 600, 4096);
        e.post_init_entity_util_avg(3, m);
        e.pelt_enqueue(3, m);
        assert_eq!(e.cpu_util(3), 600 + 600 * 1024 / 4097);
        let k = e.task(4);
        e.set_signals(4, 600, 1024);
        e.post_init_entity_util_avg(4, k);
        e.pelt_enqueue(4, k);
        assert_eq!(e.cpu_util(4), 600 + 212);
    });
}

#[test]
fn a_running_cpu_gains_utilization_and_an_idle_one_loses_it() {
    on(Shape::flat(4), |e| {
        e.busy(0);
        e.set_signals(1, 1024, 1024);
        e.now.set(32 << 20);
        // 32 periods: the busy CPU half way up, the idle one half way down.
        assert!((511..=512).contains(&e.cpu_util(0)), "{}", e.cpu_util(0));
        assert!((511..=512).contains(&e.cpu_util(1)), "{}", e.cpu_util(1));
        assert!((511..=512).contains(&e.cpu_load(0)), "{}", e.cpu_load(0));
    });
}

#[test]
fn the_cache_balance_sets_the_scan_depth_from_its_utilization() {
    on(shape(16, 1, 8, 16), |e| {
        for c in 0..8 {
            e.set_signals(c, 768, 0);
        }
        // Another span than the cache's: nothing.
        e.update_idle_cpu_scan(0, &(0..16), 117);
        assert_eq!(e.llc_shared(0).nr_idle_scan.get(), None);
        // The cache at 75 %: (1024 - 788) * 8 / 1024 = 1.
        e.update_idle_cpu_scan(3, &(0..8), 117);
        assert_eq!(e.llc_shared(0).nr_idle_scan.get(), Some(1));
        assert_eq!(e.llc_shared(8).nr_idle_scan.get(), None);
        // The other cache, idle: all 8.
        e.update_idle_cpu_scan(9, &(8..16), 117);
        assert_eq!(e.llc_shared(8).nr_idle_scan.get(), Some(8));
    });
}

#[test]
fn imb_numa_nr_and_imbalance_pct_as_sd_init_and_build_sched_domains_set_them() {
    let numa = |s: Shape| {
        s.domains(0)
            .into_iter()
            .find(|d| d.level == Level::Numa)
            .map(|d| d.imb_numa_nr)
    };
    // One cache per socket (seed 000's 480 CPUs): an eighth of the socket.
    assert_eq!(numa(shape(480, 2, 120, 120)), Some(15));
    // Two caches per node: 2.
    assert_eq!(numa(shape(16, 1, 4, 8)), Some(2));
    // A cpuset within one socket has no NUMA level.
    let frontier = Shape {
        cpusets: 2,
        ..shape(768, 2, 32, 384)
    };
    assert_eq!(numa(frontier), None);
    let d = shape(16, 2, 4, 8).domains(0);
    let pcts: Vec<u64> = d.iter().map(|d| d.imbalance_pct()).collect();
    assert_eq!(pcts, [110, 117, 117, 117]);
}
