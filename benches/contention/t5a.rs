//! T5a's timing: a busy CPU 0's not-due `nohz_balancer_kick` on a quiet machine over an empty
//! function called the same way, tight (the primary) and paced, `Scalable` and (for
//! comparison) `Patched`. CI gates T5a on the instruction count instead (`ci/guards.sh`).
//!
//! `Scalable`'s row has a `floor` line: the spec's whole not-due test alone (the clock and the
//! one deadline word loaded and compared, out of line like the kick), in the same
//! interleaving. It shows what any kick that makes that test costs over the empty function
//! under the same pacing.
//!
//! The not-due set-up and the kick's wrappers are this module's: T5b measures the same call.

use crate::BATCH_READS;
use crate::common::Rig;
use crate::report::{Check, Target};
use nohz::Policy;
use nohz_stress::measure::Session;
use std::hint::black_box;

/// One row of T5a's timing for `P`: the kick, the empty function and, where the row has a
/// floor, the one-word test alone, in one interleaving.
pub fn row<P: Policy>(s: &Session<'_>, t: &Target, check: &Check) {
    check.expect_policy::<P>();
    // The floor is the one-deadline-word test: a policy without the deadline has no floor.
    let with_floor = check.floor.is_some();
    assert_eq!(
        with_floor,
        P::KICK_DEADLINE,
        "T5a's floor is the deadline test"
    );
    let rig = Rig::<P>::new();
    not_due_with_cpu1_registered(&rig);
    let kick = black_box(kick_cpu0::<P> as fn(&Rig<P>) -> bool);
    let empty = black_box(empty_fn::<P> as fn(&Rig<P>) -> bool);
    let one_word = black_box(deadline_only::<P> as fn(&Rig<P>) -> bool);
    let fns = [kick, empty, one_word];
    for pacing in t.pacings() {
        let r = s.interleave_many(2 + usize::from(with_floor), |v| {
            s.quiet(|| s.timed(BATCH_READS, pacing, || fns[v](&rig)))
        });
        let floor = with_floor.then(|| r.pair(2, 1));
        check.print_as(
            &r.pair(0, 1),
            floor.as_ref(),
            pacing,
            pacing != t.primary,
            Some(s.lost()),
        );
    }
    assert!(kick(&rig), "still on the not-due path after the runs");
}

/// `nohz_balancer_kick` on CPU 0, out of line; whether it decided `NoFlags`.
#[inline(never)]
pub fn kick_cpu0<P: Policy>(rig: &Rig<P>) -> bool {
    matches!(
        rig.m.nohz_balancer_kick(rig.cpus[0], &*rig.plat),
        nohz::KickDecision::NoFlags
    )
}

/// T5a's floor: only the not-due test the spec names for `Scalable` (the clock and the one
/// precomputed deadline word), out of line and called the same way as the kick.
#[inline(never)]
fn deadline_only<P: Policy>(rig: &Rig<P>) -> bool {
    let now = nohz::platform::Clock::jiffies(&*rig.plat);
    rig.m
        .nohz()
        .kick_deadline()
        .is_some_and(|d| now.is_before(d))
}

/// The empty function the kick is compared with: same signature, does nothing.
#[inline(never)]
pub fn empty_fn<P: Policy>(_rig: &Rig<P>) -> bool {
    true
}

/// CPU 0 busy; CPU 1 idle and registered; an ILB pass by CPU 1 made `nohz.next_balance` 100
/// ticks ahead, cleared `needs_update` and set `next_blocked` 32 ticks ahead; the clock stands
/// still. CPU 0's kick is then on its not-due path, and CPU 1's re-entries keep it there.
pub fn not_due_with_cpu1_registered<P: Policy>(rig: &Rig<P>) {
    let (m, p) = (&*rig.m, &*rig.plat);
    let [c0, c1] = rig.cpus;
    m.rq(c0).set_curr_is_idle(false);
    m.rq(c0).set_nr_running(1);
    m.nohz_balance_enter_idle(c1, p);
    m.rq(c1).set_next_balance(p.clock().get().add(100));
    m.nohz_idle_balance_pass(c1, nohz::NohzFlags::STATS | nohz::NohzFlags::NEXT, p);
    m.nohz_balance_enter_idle(c1, p);
    assert!(m.nohz_idle_test(c1) && !m.nohz().needs_update());
    assert!(kick_cpu0(rig), "CPU 0's kick is on its not-due path");
}
