//! Measurement machinery, shared by the harness's compare mode and the benches
//! (`benches/contention/`): one copy of how a variant is timed, interleaved and judged.
//!
//! - **Interleaving** ([`interleave`], [`interleave_many`]): the variants run A B A B ..., so
//!   slow drifts of a shared machine hit all alike; results are compared as ratios of medians
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
pub use pacing::{CALIBRATION_WINDOW, Pacing, RUN_FOR, WORK_NS, Work, pace, repeat, timed};
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

/// Runs `run(false)` (A) and `run(true)` (B) alternately until each has `runs` kept results or
/// `3 * runs` attempts. `run` returns `None` for a run the gate discards.
pub fn interleave<T>(runs: usize, mut run: impl FnMut(bool) -> Option<T>) -> Interleaved<T> {
    let mut out = Interleaved {
        a: Vec::new(),
        b: Vec::new(),
        discarded: (0, 0),
    };
    let max_attempts = runs.saturating_mul(3).max(1);
    let (mut tries_a, mut tries_b) = (0, 0);
    while (out.a.len() < runs && tries_a < max_attempts)
        || (out.b.len() < runs && tries_b < max_attempts)
    {
        if out.a.len() < runs && tries_a < max_attempts {
            tries_a += 1;
            match run(false) {
                Some(r) => out.a.push(r),
                None => out.discarded.0 += 1,
            }
        }
        if out.b.len() < runs && tries_b < max_attempts {
            tries_b += 1;
            match run(true) {
                Some(r) => out.b.push(r),
                None => out.discarded.1 += 1,
            }
        }
    }
    out
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

/// [`interleave`] for `variants` variants: rounds of `run(0)`, `run(1)`, ... until each has
/// `runs` kept results or `3 * runs` attempts, so every variant sees the same conditions.
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
    while (0..variants).any(|v| wants(&out, &tries, v)) {
        for v in 0..variants {
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
        assert_eq!(order, [0, 1, 2, 0, 1, 2, 1]);
        assert_eq!(r.kept, [vec![1, 4], vec![5, 7], vec![3, 6]]);
        assert_eq!(r.discarded, [0, 1, 0]);
        let p = r.pair(1, 0);
        assert_eq!((p.a, p.b, p.discarded), (vec![5, 7], vec![1, 4], (1, 0)));
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
        let mut n = 0;
        let r = interleave(2, |b| {
            order.push(b);
            n += 1;
            // Discard the first A run.
            (n != 1).then_some(n)
        });
        assert_eq!(order, [false, true, false, true, false]);
        assert_eq!(r.a, [3, 5]);
        assert_eq!(r.b, [2, 4]);
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
