//! Variants measured over many placements of their lines: each variant's objects (a rig, a
//! line handed back and forth) exist [`PLACEMENTS`] times, each at its own address, and a
//! variant's successive runs take them in turn, the antagonist's job on the same object.
//!
//! Why: what a contended line costs on this host depends on the line's address. Sixteen lines
//! handed back and forth between the same two pinned threads, interleaved in one process, had
//! round trips from about 120 to about 240 ns, each steady to a few ns over the whole run
//! (`benches/README.md`, "Where a line lies"). A variant measured on one object therefore
//! measures one draw of its lines' costs, and a process measures other draws: `Legacy`'s T1
//! pair cost about 340 ns in some bench processes and 540-620 in others, with the round trip
//! of the bench's one ping-pong line telling neither apart. Over [`PLACEMENTS`] objects a
//! variant's median is that of its lines' costs over the host's addresses, the same in every
//! process, and so is the round trip's.

use nohz_stress::measure::{Churn, InterleavedMany, Pacing, Session};
use std::sync::Arc;

/// Objects per variant, each at its own address: as many as a variant's kept runs, so that
/// each run measures another draw.
pub const PLACEMENTS: usize = crate::RUNS;

/// [`PLACEMENTS`] objects made by `make`, each allocated apart (on the heap, all alive at
/// once, so no address is reused).
pub fn placements<T>(make: impl FnMut() -> T) -> Vec<Arc<T>> {
    let mut make = make;
    (0..PLACEMENTS).map(|_| Arc::new(make())).collect()
}

/// [`Session::interleave_contended`] over placements: `jobs[v][k]` is the antagonist's job for
/// variant `v` on its object `k`, and `timed(v, k)` times variant `v` on that object. Each run
/// of a variant (warm-up and discarded runs included) takes its next object, round robin.
pub fn interleave(
    s: &Session<'_>,
    jobs: &[Vec<Arc<dyn Churn>>],
    mut timed: impl FnMut(usize, usize) -> f64,
) -> InterleavedMany<f64> {
    let mut next = vec![0usize; jobs.len()];
    s.interleave_many(jobs.len(), |v| {
        let k = next[v] % jobs[v].len();
        next[v] += 1;
        s.contended(&jobs[v][k], || timed(v, k))
    })
}

/// Prints the indented `means <target> <name>-<pacing> <variant>=<ns> ... runs=<n>` line:
/// each variant's mean over its kept runs of `r`, in ns, `names` naming the variants in order.
/// Informational, no bound; what `ci/engine-validate.sh` sets beside the cost model.
///
/// A mean, where the targets take medians: over placements, a variant's cost is a sum over
/// the lines it moves, each line's cost drawn from where it lies, and the model predicts that
/// sum from one transfer cost. The mean of a sum is the sum of the means, so the mean round
/// trip's half is the transfer cost that predicts the mean pair. Medians carry no such
/// relation: over placements `Legacy`'s pair falls in two bands (about 370 and about 530 ns
/// here), and its median lands in one band or the other with how a process's placements split.
pub fn print_means(
    target: &str,
    name: &str,
    pacing: Pacing,
    names: &[&str],
    r: &InterleavedMany<f64>,
) {
    let mut line = format!("   means {target} {name}-{}", pacing.name());
    for (v, name) in names.iter().enumerate() {
        let kept = &r.kept[v];
        if kept.is_empty() {
            line += &format!(" {name}=n/a");
        } else {
            line += &format!(
                " {name}={:.1}",
                kept.iter().sum::<f64>() / kept.len() as f64
            );
        }
    }
    let runs = r.kept.iter().map(Vec::len).min().unwrap_or(0);
    println!("{line} runs={runs}");
}
