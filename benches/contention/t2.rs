//! T2: the uncontended pair, `Patched` against `Legacy` and against two bare locked RMWs (a
//! `lock or` and a `lock and` on a private word, as the mask bit's set and clear are).

use crate::common::{Rig, rmw_word, two_rmws};
use crate::report::Target;
use crate::{BATCH_PAIRS, Round, timed_pairs};
use nohz::{Legacy, Patched};

/// Measures and prints T2's two rows, each tight, then paced.
pub fn run(round: &Round<'_>, t: &Target) {
    let [over_legacy, over_rmws] = t.checks();
    let s = round.session;
    let patched = Rig::<Patched>::new();
    let legacy = Rig::<Legacy>::new();
    let word = rmw_word();
    over_legacy.report(s, t.pacings(), |pacing| {
        s.interleave_quiet(
            || timed_pairs(s, &patched, pacing),
            || timed_pairs(s, &legacy, pacing),
        )
    });
    over_rmws.report(s, t.pacings(), |pacing| {
        s.interleave_quiet(
            || timed_pairs(s, &patched, pacing),
            || s.timed(BATCH_PAIRS, pacing, || two_rmws(&word)),
        )
    });
}
