//! T5b: a busy CPU 0's `nohz_balancer_kick` on its not-due path, paced as the spec says (about
//! 300 ns of private work, an `lfence`, the call; here also an `lfence` after it, so the next
//! work cannot hide the call's misses), while the antagonist keeps CPU 1 re-entering idle
//! with its tick stopped (the idempotent `nohz_balance_enter_idle` of every idle pass after
//! seed 001), over an empty function in the same conditions. `Scalable` re-enters without
//! storing and tests "not due" with one load; `Patched` (printed for comparison, same bound)
//! stores `has_blocked_load` on every re-entry, so the kick's reads of the `nohz` line keep
//! missing.

use crate::BATCH_WORKED;
use crate::common::Rig;
use crate::report::{Check, Target};
use crate::t5a::{empty_fn, kick_cpu0, not_due_with_cpu1_registered};
use nohz::Policy;
use nohz_stress::measure::{Churn, Session, Work, churn};
use std::hint::black_box;
use std::sync::Arc;

/// One row of T5b for `P`, the work between calls calibrated again first.
pub fn row<P: Policy>(s: &Session<'_>, t: &Target, check: &Check) {
    check.expect_policy::<P>();
    let Work { steps, step_ns } = s.recalibrate();
    eprintln!(
        "{} {}: work between calls recalibrated: {steps} steps of {step_ns:.2} ns",
        check.target,
        P::NAME
    );
    let rig = Arc::new(Rig::<P>::new());
    not_due_with_cpu1_registered(&rig);
    let job = re_enter_on_cpu1(&rig);
    let kick = black_box(kick_cpu0::<P> as fn(&Rig<P>) -> bool);
    let empty = black_box(empty_fn::<P> as fn(&Rig<P>) -> bool);
    check.report(s, t.pacings(), |pacing| {
        s.interleave(|is_b| {
            let f = if is_b { empty } else { kick };
            s.contended(&job, || s.timed(BATCH_WORKED, pacing, || f(&rig)))
        })
    });
    assert!(kick(&rig), "still on the not-due path after the runs");
}

/// Antagonist work for T5b: CPU 1 re-entering idle with its tick stopped, back to back.
fn re_enter_on_cpu1<P: Policy>(rig: &Arc<Rig<P>>) -> Arc<dyn Churn> {
    let rig = Arc::clone(rig);
    churn(move || black_box(&*rig.m).nohz_balance_enter_idle(rig.cpus[1], &*rig.plat))
}
