//! `update_blocked_load_status`: the clear of `rq.has_blocked_load` once the decay found
//! nothing left. A set that the target CPU makes while the ILB is decaying it (it ran a task
//! and went idle again) must survive the clear, and a later STATS pass must decay it again.

use nohz::IlbPass;
use nohz::{NohzFlags, Policy};
use nohz_testing::World;
use nohz_testing::for_each_policy;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

fn a_set_made_while_the_ilb_decays_survives_the_clear<P: Policy>() {
    let w = Arc::new(World::<P>::new(4));
    w.enter(1);
    w.advance(1);
    let decays = Arc::new(AtomicUsize::new(0));
    {
        let (weak, decays) = (Arc::downgrade(&w), decays.clone());
        w.p.on_update_blocked_averages(move |_, cpu| {
            let Some(w) = weak.upgrade() else {
                return false;
            };
            // The first decay of CPU 1 finds its old load gone; meanwhile CPU 1 runs a task
            // that blocks, and re-enters idle with its tick still stopped: a new set.
            if cpu == w.cpu(1) && decays.fetch_add(1, Relaxed) == 0 {
                w.busy(1, 1);
                w.enter(1);
            }
            false
        });
    }
    w.p.take_events();
    assert_eq!(
        w.m.nohz_idle_balance_pass(w.cpu(0), NohzFlags::STATS, &*w.p),
        IlbPass::Completed
    );
    assert_eq!(w.decayed(), [1]);
    assert!(
        w.m.rq(w.cpu(1)).has_blocked_load(),
        "the set CPU 1 made during the decay was erased by the clear"
    );
    assert!(w.m.nohz().has_blocked_load());

    // The next pass, a jiffy on, decays CPU 1 again, and now finds nothing left.
    w.advance(1);
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(0), NohzFlags::STATS, &*w.p);
    assert_eq!(
        w.decayed(),
        [1],
        "a later STATS pass must decay CPU 1 again"
    );
    assert!(!w.m.rq(w.cpu(1)).has_blocked_load());
    assert_eq!(decays.load(Relaxed), 2);
}

for_each_policy!(a_set_made_while_the_ilb_decays_survives_the_clear);
