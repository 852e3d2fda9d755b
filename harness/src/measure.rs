//! Measurement machinery, shared by the harness's compare mode and the benches
//! (`benches/contention/`): one copy of how a variant is timed, interleaved and judged.
//!
//! - **Interleaving** ([`interleave`], [`interleave_many`]): the variants run in rounds, one
//!   run of each per round, so slow drifts of a shared machine hit all alike; each round draws
//!   its order afresh, so that no variant sits at the same point of every round where the
//!   host's own rhythms could lock onto it; results are compared as ratios of medians
//!   ([`median`]).
//! - **The descheduling gate** ([`ThreadClock`], [`ThreadUsage`]): each measured thread reads
//!   its own CPU time around a run and notes how long it waited on purpose (parked idle).
//!   Involuntary descheduling is what is left: `wall - cpu - waited`. A run in which any pinned
//!   thread lost more than 3 % of its runnable time to another process is discarded, because a
//!   silently descheduled thread makes "contended" numbers up (spec/performance.md). With more
//!   logical CPUs than cores the threads deschedule each other by design, so the harness turns
//!   the gate off and its report says so.
//! - **Pacing** ([`Pacing`], [`pace`], [`repeat`], [`timed`]): tight, `lfence`-paced, or each
//!   call between about 300 ns of private work ([`Work`], calibrated by [`Work::calibrate`]).
//! - **The antagonist** ([`Antagonist`], [`Churn`], [`churn`]): a thread pinned to another core
//!   that runs a job before and during each contended run, parked between runs.
//! - **A session** ([`Session`]): the measuring thread's side of it all, which warms each
//!   comparison up, times quiet or contended runs and counts who the gate caught.

mod antagonist;
mod pacing;
mod session;

pub use antagonist::{Antagonist, Churn, PRE_ROLL, churn};
pub use pacing::{CALIBRATION_WINDOW, Pacing, RUN_FOR, WORK_NS, Work, pace, repeat, timed, work};
pub use session::Session;

use std::time::{Duration, Instant};

/// The share of its runnable time a thread must have been on a CPU for its run to count.
pub const MIN_ON_CPU: f64 = 0.97;

/// One thread's clocks over a run.
#[derive(Debug)]
pub struct ThreadClock {
    wall: Instant,
    cpu: cpu_time::ThreadTime,
    waited: Duration,
}

impl ThreadClock {
    /// Starts the clocks of the calling thread.
    pub fn start() -> Self {
        ThreadClock {
            wall: Instant::now(),
            cpu: cpu_time::ThreadTime::now(),
            waited: Duration::ZERO,
        }
    }

    /// Adds time the thread spent waiting on purpose (parked with nothing to do).
    pub fn add_wait(&mut self, d: Duration) {
        self.waited += d;
    }

    /// Stops the clocks.
    pub fn finish(self) -> ThreadUsage {
        ThreadUsage {
            wall: self.wall.elapsed(),
            cpu: self.cpu.elapsed(),
            waited: self.waited,
        }
    }
}

/// What one thread's clocks said about a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadUsage {
    /// Wall-clock time of the run.
    pub wall: Duration,
    /// CPU time the thread got.
    pub cpu: Duration,
    /// Time it waited on purpose.
    pub waited: Duration,
}

impl ThreadUsage {
    /// CPU time over runnable time (wall minus voluntary waits), at most 1.
    pub fn on_cpu(&self) -> f64 {
        let runnable = self.wall.saturating_sub(self.waited).as_secs_f64();
        if runnable <= 0.0 {
            return 1.0;
        }
        (self.cpu.as_secs_f64() / runnable).min(1.0)
    }

    /// Whether the thread lost more than 3 % of its runnable time to other processes.
    pub fn descheduled(&self) -> bool {
        self.on_cpu() < MIN_ON_CPU
    }
}

/// The median of `xs` (the mean of the middle two for an even count), or `None` if empty;
/// non-finite values are ignored.
///
/// ```
/// use nohz_stress::measure::median;
/// assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
/// assert_eq!(median(&[4.0, 1.0]), Some(2.5));
/// assert_eq!(median(&[]), None);
/// ```
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// The seed of the order in which [`interleave_many`] visits its variants each round.
const ORDER_SEED: u64 = 0x6e6f_687a;

/// The runs of two variants measured interleaved.
#[derive(Debug)]
pub struct Interleaved<T> {
    /// Kept runs of variant A, in order.
    pub a: Vec<T>,
    /// Kept runs of variant B, in order.
    pub b: Vec<T>,
    /// Runs discarded by the gate, A then B.
    pub discarded: (usize, usize),
}

/// Runs `run(false)` (A) and `run(true)` (B) in rounds, one of each per round in an order
/// drawn afresh each round (see [`interleave_many`]), until each has `runs` kept results or
/// `3 * runs` attempts. `run` returns `None` for a run the gate discards.
pub fn interleave<T>(runs: usize, mut run: impl FnMut(bool) -> Option<T>) -> Interleaved<T> {
    let mut many = interleave_many(2, runs, |v| run(v == 1));
    let b = many.kept.pop().unwrap_or_default();
    let a = many.kept.pop().unwrap_or_default();
    Interleaved {
        a,
        b,
        discarded: (many.discarded[0], many.discarded[1]),
    }
}

/// The runs of several variants measured interleaved.
#[derive(Debug)]
pub struct InterleavedMany<T> {
    /// Kept runs of each variant, in order.
    pub kept: Vec<Vec<T>>,
    /// Runs of each variant discarded by the gate.
    pub discarded: Vec<usize>,
}

impl<T: Clone> InterleavedMany<T> {
    /// Variants `a` and `b` as a pair, as [`interleave`] returns them.
    pub fn pair(&self, a: usize, b: usize) -> Interleaved<T> {
        Interleaved {
            a: self.kept[a].clone(),
            b: self.kept[b].clone(),
            discarded: (self.discarded[a], self.discarded[b]),
        }
    }
}

/// Rounds of one run of each variant (`run(0)`, `run(1)`, ...) until each has `runs` kept
/// results or `3 * runs` attempts, so every variant sees the same conditions.
///
/// Each round visits the variants in an order drawn afresh (a fixed seed: the same sequence
/// every time). In a fixed order a variant runs at the same point of every round, and the
/// host's own rhythms can lock onto it: on this machine's host, variant slots about 10 ms
/// apart in a round of 12 ran a contended pair at 30-37 ns for most of the 41 rounds while
/// their neighbours, the same code, ran at 47-55 ns, so one variant's median measured a
/// phase of the host rather than its code.
pub fn interleave_many<T>(
    variants: usize,
    runs: usize,
    mut run: impl FnMut(usize) -> Option<T>,
) -> InterleavedMany<T> {
    let mut out = InterleavedMany {
        kept: (0..variants).map(|_| Vec::new()).collect(),
        discarded: vec![0; variants],
    };
    let max_attempts = runs.saturating_mul(3).max(1);
    let mut tries = vec![0; variants];
    let wants = |out: &InterleavedMany<T>, tries: &[usize], v: usize| {
        out.kept[v].len() < runs && tries[v] < max_attempts
    };
    let mut rng = fastrand::Rng::with_seed(ORDER_SEED);
    let mut order: Vec<usize> = (0..variants).collect();
    while (0..variants).any(|v| wants(&out, &tries, v)) {
        rng.shuffle(&mut order);
        for &v in &order {
            if wants(&out, &tries, v) {
                tries[v] += 1;
                match run(v) {
                    Some(r) => out.kept[v].push(r),
                    None => out.discarded[v] += 1,
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaves_many_in_rounds_and_retries_discarded_runs() {
        let mut order = Vec::new();
        let r = interleave_many(3, 2, |v| {
            order.push(v);
            // Variant 1 loses its first run.
            (!(v == 1 && order.iter().filter(|&&x| x == 1).count() == 1)).then_some(order.len())
        });
        // Two full rounds, each variant once in each, then variant 1's retry alone.
        assert_eq!(order.len(), 7);
        for round in order[..6].chunks(3) {
            let mut seen = round.to_vec();
            seen.sort_unstable();
            assert_eq!(
                seen,
                [0, 1, 2],
                "each round runs each variant once: {order:?}"
            );
        }
        assert_eq!(order[6], 1);
        // Each variant keeps the results of its own runs, in order.
        for v in 0..3 {
            let mine: Vec<usize> = (1..=7).filter(|&i| order[i - 1] == v).collect();
            let kept: Vec<usize> = if v == 1 { mine[1..].to_vec() } else { mine };
            assert_eq!(r.kept[v], kept, "variant {v}");
        }
        assert_eq!(r.discarded, [0, 1, 0]);
        let p = r.pair(1, 0);
        assert_eq!(
            (p.a, p.b, p.discarded),
            (r.kept[1].clone(), r.kept[0].clone(), (1, 0))
        );
    }

    #[test]
    fn each_round_draws_its_order_afresh() {
        let mut order = Vec::new();
        interleave_many(4, 30, |v| {
            order.push(v);
            Some(())
        });
        let rounds: Vec<&[usize]> = order.chunks(4).collect();
        assert_eq!(rounds.len(), 30);
        for round in &rounds {
            let mut seen = round.to_vec();
            seen.sort_unstable();
            assert_eq!(seen, [0, 1, 2, 3]);
        }
        // No variant keeps one place: each runs first in some round and last in another.
        for v in 0..4 {
            assert!(
                rounds.iter().any(|r| r[0] == v),
                "{v} never first: {order:?}"
            );
            assert!(
                rounds.iter().any(|r| r[3] == v),
                "{v} never last: {order:?}"
            );
        }
        // Two variants alternate in both orders too.
        let mut pairs = Vec::new();
        interleave(20, |b| {
            pairs.push(b);
            Some(())
        });
        let firsts: Vec<bool> = pairs.chunks(2).map(|r| r[0]).collect();
        assert!(pairs.chunks(2).all(|r| r[0] != r[1]), "{pairs:?}");
        assert!(
            firsts.contains(&true) && firsts.contains(&false),
            "{pairs:?}"
        );
    }

    #[test]
    fn interleave_many_gives_up_after_three_attempts_per_run() {
        let mut calls = [0; 2];
        let r = interleave_many(2, 2, |v| {
            calls[v] += 1;
            (v == 0).then_some(())
        });
        assert_eq!(calls, [2, 6]);
        assert_eq!((r.kept[0].len(), r.kept[1].len()), (2, 0));
        assert_eq!(r.discarded, [0, 6]);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
    }

    #[test]
    fn interleaves_and_retries_discarded_runs() {
        let mut order = Vec::new();
        let r = interleave(2, |b| {
            order.push(b);
            // Discard the first A run.
            (b || order.iter().filter(|&&x| !x).count() != 1).then_some(order.len())
        });
        assert_eq!(order.len(), 5);
        assert_eq!(order.iter().filter(|&&b| b).count(), 2);
        assert!(!order[4], "A's retry comes last: {order:?}");
        let at = |b: bool| -> Vec<usize> { (1..=5).filter(|&i| order[i - 1] == b).collect() };
        assert_eq!(r.a, at(false)[1..]);
        assert_eq!(r.b, at(true));
        assert_eq!(r.discarded, (1, 0));
    }

    #[test]
    fn gives_up_after_three_times_the_runs() {
        let r = interleave(2, |_| None::<u32>);
        assert!(r.a.is_empty() && r.b.is_empty());
        assert_eq!(r.discarded, (6, 6));
    }

    #[test]
    fn usage_gate() {
        let u = ThreadUsage {
            wall: Duration::from_millis(100),
            cpu: Duration::from_millis(45),
            waited: Duration::from_millis(50),
        };
        assert!(u.descheduled());
        let ok = ThreadUsage {
            cpu: Duration::from_millis(50),
            ..u
        };
        assert!(!ok.descheduled());
    }
}
