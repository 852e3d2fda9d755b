//! T6 (`is_empty` on an empty 4096-bit mask against the naive early-exit loop, and in ns) and
//! T7 (`first` on it, in ns; stderr also has it against the naive loop).
//!
//! The naive loop's speed depends on where it lands in the binary (see
//! [`NAIVE_IS_EMPTY_COPIES`]), so T6 measures several copies of it in the same interleaving
//! and divides by the fastest: the strict baseline, and one that does not move with the layout
//! of a build. stderr has every copy's median and address (here one or two of the four copies
//! run at half the speed of the others, depending on the build).

use crate::common::{
    Masks, NAIVE_COPIES, NAIVE_IS_EMPTY_COPIES, mask_first, mask_is_empty, naive_first,
};
use crate::report::Target;
use crate::{BATCH_SCANS, Round};
use nohz_stress::measure::median;

/// Measures and prints T6's ratio (tight, then paced) and its ns line, then T7's.
pub fn run(round: &Round<'_>, t: &Target) {
    let [t6, t6_ns, t7] = t.checks();
    let s = round.session;
    let m = Masks::new();
    let r6 = t6.report(s, t.pacings(), |pacing| {
        let r = s.interleave_many(1 + NAIVE_COPIES, |v| {
            // A literal index into the constant table each: direct calls, as to `is_empty`.
            const _: () = assert!(NAIVE_COPIES == 4, "one match arm per naive copy");
            let (words, nr) = (&*m.words, m.nr.get());
            s.quiet(|| match v {
                0 => s.timed(BATCH_SCANS, pacing, || mask_is_empty(&m.mask, m.nr)),
                1 => s.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[0](words, nr)),
                2 => s.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[1](words, nr)),
                3 => s.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[2](words, nr)),
                _ => s.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[3](words, nr)),
            })
        });
        let medians: Vec<f64> = (1..=NAIVE_COPIES)
            .map(|v| median(&r.kept[v]).unwrap_or(f64::INFINITY))
            .collect();
        let fastest = (0..NAIVE_COPIES)
            .min_by(|&a, &b| medians[a].total_cmp(&medians[b]))
            .unwrap_or(0);
        let copies: Vec<String> = NAIVE_IS_EMPTY_COPIES
            .iter()
            .zip(&medians)
            .map(|(f, m)| format!("{m:.2} ns at {:#x}", *f as usize))
            .collect();
        eprintln!(
            "{} {} {} (naive copies): {}; the fastest, copy {fastest}, is the baseline",
            t6.target,
            t6.name,
            pacing.name(),
            copies.join(", ")
        );
        r.pair(0, 1 + fastest)
    });
    t6_ns.print(&r6, t.primary);
    t7.report(s, t.pacings(), |pacing| {
        s.interleave_quiet(
            || s.timed(BATCH_SCANS, pacing, || mask_first(&m.mask, m.nr)),
            || s.timed(BATCH_SCANS, pacing, || naive_first(&m.words, m.nr.get())),
        )
    });
}
