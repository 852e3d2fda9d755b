//! T1: a pair on CPU 0 while the antagonist runs pairs on CPU 1 of the same machine, each
//! policy against `Legacy`. The four policies are measured in one interleaving (patched,
//! scalable, paced, legacy, patched, ...): how much a second contended line costs depends on where
//! the host places the two vCPUs, which can change within seconds, so every row divides by the
//! same `Legacy` runs. `Paced` (issue 39's design) runs `Scalable`'s idle entry and exit, so
//! its row should read as `Scalable`'s: the issue asks for its T-rows to be at least as good.
//!
//! A fourth variant, T3's `mask-only` pair (the idle-mask bit set, the O1 fence, the bit
//! cleared, nothing else), is the floor of any design that keeps one shared idle mask: its
//! ratio to `Legacy` follows the `Scalable` row as an indented `floor` line, so a run shows
//! whether the `Scalable` bound was reachable under that run's conditions at all. A fifth, a
//! [`PingPong`] round trip, measures what moving one line between the two CPUs cost meanwhile
//! (the indented `transfer` line). Three more time the cost model's calibration patterns in the
//! same interleaving: [`RmwLines`] of one and of two lines (`transfer ... rmw-` lines) and
//! [`RmwOwn`], a locked RMW on a line of the core's own (`rmw-local` in the `means` line).

use crate::common::Rig;
use crate::report::Target;
use crate::transfer::{self, PingPong, RmwLines, RmwOwn};
use crate::{BATCH_PAIRS, Round, pairs_on_cpu1, placed, t3, timed_pairs};
use nohz::{Paced, Patched, Scalable};
use nohz_stress::measure::Churn;
use std::sync::Arc;

/// Measures and prints T1's rows (`Patched`, then `Scalable` with its floor, then `Paced`),
/// tight and paced.
pub fn run(round: &Round<'_>, t: &Target) {
    let [patched_row, scalable_row, paced_row] = t.checks();
    patched_row.expect_policy::<Patched>();
    scalable_row.expect_policy::<Scalable>();
    paced_row.expect_policy::<Paced>();
    let (s, legacy) = (round.session, &round.legacy);
    let patched = placed::placements(Rig::<Patched>::new);
    let scalable = placed::placements(Rig::<Scalable>::new);
    let paced = placed::placements(Rig::<Paced>::new);
    let line = placed::placements(PingPong::default);
    let rmw1 = placed::placements(RmwLines::<1>::default);
    let rmw2 = placed::placements(RmwLines::<2>::default);
    let own = placed::placements(RmwOwn::default);
    let jobs: [Vec<Arc<dyn Churn>>; 9] = [
        patched.iter().map(pairs_on_cpu1).collect(),
        scalable.iter().map(pairs_on_cpu1).collect(),
        paced.iter().map(pairs_on_cpu1).collect(),
        legacy.iter().map(pairs_on_cpu1).collect(),
        scalable.iter().map(t3::mask_pairs_on_cpu1).collect(),
        line.iter().map(PingPong::job).collect(),
        rmw1.iter().map(RmwLines::job).collect(),
        rmw2.iter().map(RmwLines::job).collect(),
        own.iter().map(RmwOwn::job).collect(),
    ];
    for pacing in t.pacings() {
        let r = placed::interleave(s, &jobs, |v, k| match v {
            0 => timed_pairs(s, &patched[k], pacing),
            1 => timed_pairs(s, &scalable[k], pacing),
            2 => timed_pairs(s, &paced[k], pacing),
            3 => timed_pairs(s, &legacy[k], pacing),
            4 => s.timed(BATCH_PAIRS, pacing, || t3::mask_pair(&scalable[k], 0)),
            5 => s.timed(BATCH_PAIRS, pacing, || line[k].round_trip()),
            6 => s.timed(BATCH_PAIRS, pacing, || rmw1[k].round()),
            7 => s.timed(BATCH_PAIRS, pacing, || rmw2[k].round()),
            _ => s.timed(BATCH_PAIRS, pacing, || own[k].rmw()),
        });
        let lost = Some(s.lost());
        let floor = r.pair(4, 3);
        for (v, row) in [(0, patched_row), (1, scalable_row), (2, paced_row)] {
            let floor = row.floor.is_some().then_some(&floor);
            row.print_as(&r.pair(v, 3), floor, pacing, pacing != t.primary, lost);
        }
        transfer::print(patched_row.target, patched_row.name, pacing, &r.kept[5]);
        transfer::print_rmw(patched_row.target, 1, pacing, &r.kept[6]);
        transfer::print_rmw(patched_row.target, 2, pacing, &r.kept[7]);
        let names = [
            "patched",
            "scalable",
            "paced",
            "legacy",
            "mask-only",
            "round-trip",
            "rmw-1line",
            "rmw-2line",
            "rmw-local",
        ];
        placed::print_means(patched_row.target, patched_row.name, pacing, &names, &r);
    }
}
