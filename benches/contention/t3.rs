//! T3: `Scalable`'s whole pair (with the `has_blocked_load` / `needs_update` upkeep) under
//! churn, over the `mask-only` pair (the same pair without the flag upkeep: the mask bit set,
//! the O1 fence, the bit cleared) and over `Legacy`'s pair, the three and a
//! [`PingPong`](crate::transfer::PingPong) round trip in one interleaving; each pair's
//! antagonist runs the same kind of pair on CPU 1. A `floor` line gives the `mask-only` pair
//! over `Legacy`'s against the bound, and a `transfer` line the round trip, as T1's do.
//!
//! The `mask-only` pair is this module's: T1 measures it too, as its floor.

use crate::common::Rig;
use crate::report::Target;
use crate::transfer::{self, PingPong};
use crate::{BATCH_PAIRS, Round, pairs_on_cpu1, placed, timed_pairs};
use nohz::Scalable;
use nohz_stress::measure::{Churn, churn};
use std::hint::black_box;
use std::sync::Arc;

/// Measures and prints T3's rows (over `mask-only`, then over `Legacy` with its floor), tight
/// and paced.
pub fn run(round: &Round<'_>, t: &Target) {
    let [over_mask, over_legacy] = t.checks();
    let (s, legacy) = (round.session, &round.legacy);
    let rig = placed::placements(Rig::<Scalable>::new);
    let line = placed::placements(PingPong::default);
    let jobs: [Vec<Arc<dyn Churn>>; 4] = [
        rig.iter().map(pairs_on_cpu1).collect(),
        rig.iter().map(mask_pairs_on_cpu1).collect(),
        legacy.iter().map(pairs_on_cpu1).collect(),
        line.iter().map(PingPong::job).collect(),
    ];
    for pacing in t.pacings() {
        let r = placed::interleave(s, &jobs, |v, k| match v {
            0 => timed_pairs(s, &rig[k], pacing),
            1 => s.timed(BATCH_PAIRS, pacing, || mask_pair(&rig[k], 0)),
            2 => timed_pairs(s, &legacy[k], pacing),
            _ => s.timed(BATCH_PAIRS, pacing, || line[k].round_trip()),
        });
        let also = pacing != t.primary;
        over_mask.print_as(&r.pair(0, 1), None, pacing, also, Some(s.lost()));
        // As in T1: whether any design with one shared idle mask could meet the bound here.
        let floor = r.pair(1, 2);
        let floor = over_legacy.floor.is_some().then_some(&floor);
        over_legacy.print_as(&r.pair(0, 2), floor, pacing, also, None);
        transfer::print(over_legacy.target, over_legacy.name, pacing, &r.kept[3]);
        let names = ["scalable", "mask-only", "legacy", "round-trip"];
        placed::print_means(over_legacy.target, over_legacy.name, pacing, &names, &r);
    }
}

/// The `mask-only` pair on CPU `i` of `rig`: the idle-mask bit set, the O1 fence as the crate
/// places it (after the RMW), the bit cleared.
#[inline(always)]
pub fn mask_pair(rig: &Rig<Scalable>, i: usize) {
    let mask = black_box(&*rig.m).nohz().idle_cpus_mask();
    mask.set(rig.cpus[i]);
    nohz::sync::NOHZ_ENTER_IDLE_FENCE.fence_after_rmw();
    mask.clear(rig.cpus[i]);
}

/// Antagonist work for the `mask-only` baseline: [`mask_pair`]s on CPU 1.
pub fn mask_pairs_on_cpu1(rig: &Arc<Rig<Scalable>>) -> Arc<dyn Churn> {
    let rig = Arc::clone(rig);
    churn(move || mask_pair(&rig, 1))
}
