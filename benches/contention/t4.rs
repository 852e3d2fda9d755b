//! T4: the irqtime read on CPU 0 while the antagonist runs pairs on CPU 1 of the same machine
//! (writing the `nohz` lines), over the same read while the antagonist runs the same pairs on a
//! private machine (so nothing the reader touches is written; the same work on core 1 keeps
//! everything else equal). `Patched` reads its static key; the negative control, `Legacy`,
//! its flag inside the written `nohz` scalar line.
//!
//! Paced is the primary pacing here: the kernel reads the key once per interrupt, not in a
//! loop, so the per-read cost is what the seed changed. A [`PingPong`] round trip runs in the
//! same interleaving (the `transfer` line): what the negative control shows is what moving a
//! line between the two CPUs costs there.

use crate::common::Rig;
use crate::report::{Check, Target};
use crate::transfer::{self, PingPong};
use crate::{BATCH_PAIRS, BATCH_READS, pairs_on_cpu1};
use nohz::Policy;
use nohz_stress::measure::Session;
use std::sync::Arc;

/// One row of T4 for `P`, paced then tight, each with its `transfer` line.
pub fn row<P: Policy>(s: &Session<'_>, t: &Target, check: &Check) {
    check.expect_policy::<P>();
    let shared = Arc::new(Rig::<P>::new());
    let private = Arc::new(Rig::<P>::new());
    let line = Arc::new(PingPong::default());
    let jobs = [pairs_on_cpu1(&shared), pairs_on_cpu1(&private), line.job()];
    for pacing in t.pacings() {
        let r = s.interleave_contended(&jobs, |v| match v {
            0 | 1 => s.timed(BATCH_READS, pacing, || shared.irqtime_read()),
            _ => s.timed(BATCH_PAIRS, pacing, || line.round_trip()),
        });
        check.print_as(
            &r.pair(0, 1),
            None,
            pacing,
            pacing != t.primary,
            Some(s.lost()),
        );
        transfer::print(check.target, check.a, pacing, &r.kept[2]);
    }
}
