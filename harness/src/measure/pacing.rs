//! Pacing: how a timed run calls the operation it measures, and the work between paced calls.
//!
//! Tight loops let out-of-order execution overlap the cache misses of consecutive calls, so a
//! tight median is a throughput. A serialising fence before each call ([`pace`], `lfence` on
//! x86-64) makes each call start on its own and shows the per-event cost; spec/performance.md
//! asks for both. [`Pacing::Worked`] goes further: each call sits between about [`WORK_NS`] of
//! private work and two fences, as a tick's kick sits between other work, so the call's whole
//! latency (a cache miss included) counts and nothing overlaps it.
//!
//! The work is a chain of dependent multiply-adds on a register, calibrated by
//! [`Work::calibrate`] on the fastest of back-to-back timings: the hosts here run a vCPU at
//! about half speed in some phases, and a median taken in such a phase made the gap 150 ns at
//! full speed (seen on a 16-core machine), which overstates the call's share. With the fastest
//! timing the gap is [`WORK_NS`] of full-speed work, and in a slow phase the work and the call
//! slow together.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Length of one timed run (spec/performance.md: short runs of about 2 ms).
pub const RUN_FOR: Duration = Duration::from_millis(2);

/// The work between two [`Pacing::Worked`] calls (spec/performance.md: about 300 ns).
pub const WORK_NS: f64 = 300.0;

/// How long [`Work::calibrate`] times the work.
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(20);

/// How a timed run calls the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// Back-to-back calls.
    Tight,
    /// An `lfence` before each call.
    Paced,
    /// About [`WORK_NS`] of private work, an `lfence`, the call, an `lfence`.
    Worked,
}

impl Pacing {
    /// `tight`, `paced` or `worked`, as reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Tight => "tight",
            Pacing::Paced => "paced",
            Pacing::Worked => "worked",
        }
    }
}

/// A serialising fence before a paced call: `lfence` waits for every earlier instruction to
/// finish, so the call that follows starts on its own (a compiler fence on other targets).
#[inline(always)]
pub fn pace() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lfence` only waits for earlier instructions to complete; it touches no memory
    // and SSE2, its target feature, is part of the x86-64 baseline.
    unsafe {
        core::arch::x86_64::_mm_lfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// Calls `f` `n` times, its result through `black_box`; with `PACED`, [`pace`] before each
/// call. The choice is a type parameter, so each loop is compiled on its own.
#[inline(always)]
pub fn repeat<const PACED: bool, R>(n: u64, mut f: impl FnMut() -> R) {
    for _ in 0..n {
        if PACED {
            pace();
        }
        black_box(f());
    }
}

/// The private work between [`Pacing::Worked`] calls, as calibrated on this machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    /// Multiply-add steps that take about [`WORK_NS`] at the core's full speed.
    pub steps: u64,
    /// What one step took in the fastest timing, in ns.
    pub step_ns: f64,
}

impl Work {
    /// Times 10 000 steps back to back over [`CALIBRATION_WINDOW`] and keeps the fastest
    /// timing (see the module docs for why not the median). Run it on the measuring thread
    /// while nothing else runs on the machine's other measured core.
    pub fn calibrate() -> Self {
        const PROBE: u64 = 10_000;
        let start = Instant::now();
        let mut ns = f64::INFINITY;
        while start.elapsed() < CALIBRATION_WINDOW {
            let t0 = Instant::now();
            black_box(work(black_box(1), PROBE));
            ns = ns.min(t0.elapsed().as_nanos() as f64 / PROBE as f64);
        }
        let steps = ((WORK_NS / ns).round() as u64).max(1);
        Work { steps, step_ns: ns }
    }
}

/// Runs `f` in batches of `batch` calls, paced as `pacing` says (with [`Pacing::Worked`],
/// `work` between calls), until [`RUN_FOR`] has passed; returns ns per call (with
/// [`Pacing::Worked`], per call and its work). The clock is read once a batch: size `batch`
/// so that a batch lasts a few microseconds at least, and reading the clock costs under 1 % of
/// a run.
pub fn timed<R>(batch: u64, pacing: Pacing, work: Work, mut f: impl FnMut() -> R) -> f64 {
    let t0 = Instant::now();
    let mut calls = 0u64;
    loop {
        match pacing {
            Pacing::Tight => repeat::<false, R>(batch, &mut f),
            Pacing::Paced => repeat::<true, R>(batch, &mut f),
            Pacing::Worked => repeat_worked(batch, work.steps, &mut f),
        }
        calls += batch;
        let spent = t0.elapsed();
        if spent >= RUN_FOR {
            return spent.as_nanos() as f64 / calls as f64;
        }
    }
}

/// Calls `f` `n` times, each call between [`work`] of `steps` steps and an `lfence`, and
/// followed by another `lfence`: the call starts after the work has finished and must finish
/// before the next work starts, so its whole latency (a cache miss included) counts and
/// nothing overlaps it.
#[inline(always)]
fn repeat_worked<R>(n: u64, steps: u64, mut f: impl FnMut() -> R) {
    let mut x = black_box(1u64);
    for _ in 0..n {
        x = work(x, steps);
        pace();
        black_box(f());
        pace();
    }
    black_box(x);
}

/// Private work: a chain of `steps` dependent multiply-adds on a register (no memory), the
/// work of [`Pacing::Worked`]; a bench sizes other stand-ins with [`Work::step_ns`].
#[inline(always)]
pub fn work(mut x: u64, steps: u64) -> u64 {
    for _ in 0..steps {
        x = black_box(x)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_gives_at_least_one_step() {
        let w = Work::calibrate();
        assert!(
            w.steps >= 1 && w.step_ns > 0.0 && w.step_ns.is_finite(),
            "{w:?}"
        );
    }

    #[test]
    fn a_timed_run_lasts_run_for_and_calls_in_whole_batches() {
        let work = Work {
            steps: 1,
            step_ns: 1.0,
        };
        for pacing in [Pacing::Tight, Pacing::Paced, Pacing::Worked] {
            let mut calls = 0u64;
            let t0 = Instant::now();
            let ns = timed(8, pacing, work, || calls += 1);
            assert!(t0.elapsed() >= RUN_FOR, "{}", pacing.name());
            assert!(
                calls > 0 && calls.is_multiple_of(8),
                "{}: {calls}",
                pacing.name()
            );
            let per_call = t0.elapsed().as_nanos() as f64 / calls as f64;
            assert!(
                ns > 0.0 && ns <= per_call,
                "{}: {ns} > {per_call}",
                pacing.name()
            );
        }
    }
}
