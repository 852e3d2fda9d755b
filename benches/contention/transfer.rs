//! The `transfer` lines of T1, T3 and T4: one more variant in a target's interleaving hands a
//! line back and forth between the two threads and reports the median round trip in ns. T1
//! also times the cost model's calibration patterns, [`RmwLines`] and [`RmwOwn`], from which
//! `ci/engine-validate.sh` fits the model's host parameters.
//!
//! What a contended line costs depends on where the host has put the two vCPUs, which it
//! changes every few seconds (round trips of about 70, 100 and 400 ns on the 2-core host), and
//! on where the line lies (120-240 ns for lines of one process: [`crate::placed`]). In T1 and
//! T3 the round trip is measured over the same number of placements as the variants beside
//! it. Informational: no bound.

use crate::report::record_info;
use nohz::CachePadded;
use nohz_stress::measure::{Churn, Pacing, median};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A line the two threads hand back and forth. The measuring thread writes an odd value and
/// waits for the antagonist's answer, the next even value. On a page of its own: a
/// variant's [`placements`](crate::placed) then lie on different pages, so they sample where
/// the host's lines lie, not one page's few.
#[derive(Default)]
#[repr(align(4096))]
pub struct PingPong(CachePadded<AtomicU64>);

impl PingPong {
    /// One round trip: the line goes to the antagonist, which must see the odd value, and
    /// comes back with its answer. Between round trips the value is even.
    #[inline(always)]
    pub fn round_trip(&self) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v + 1, Ordering::Relaxed);
        while self.0.load(Ordering::Relaxed) != v + 2 {}
    }

    /// The antagonist's side, as a job.
    pub fn job(self: &Arc<Self>) -> Arc<dyn Churn> {
        Arc::clone(self) as Arc<dyn Churn>
    }
}

impl Churn for PingPong {
    /// Answers each odd value with the next even one (no `pause` in either spin: the cost of
    /// the transfer itself is what is measured).
    fn churn_until(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let v = self.0.load(Ordering::Relaxed);
            if v % 2 == 1 {
                self.0.store(v + 1, Ordering::Relaxed);
            }
        }
    }
}

/// Prints the indented `transfer <target> <label>-round-trip-<pacing>` line: the median round
/// trip of `kept`, the [`PingPong`] runs of one interleaving, in ns.
pub fn print(target: &str, label: &str, pacing: Pacing, kept: &[f64]) {
    let head = format!("transfer {target} {label}-round-trip-{}", pacing.name());
    let value = median(kept);
    let shown = value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}"));
    println!("   {head} ns={shown} runs={}", kept.len());
    record_info(head, value);
}

/// `L` lines that both threads increment in turn with locked RMWs (`fetch_add`), each thread
/// all `L` per round. One line: a core can run several RMWs in a row before the other's
/// request takes the line away. Two or more: the lines tend to alternate between the cores on
/// every access. What the host charges for each is what the cost model must predict for the
/// same pattern. On a page of its own, as [`PingPong`] is.
#[repr(align(4096))]
pub struct RmwLines<const L: usize>([CachePadded<AtomicU64>; L]);

impl<const L: usize> Default for RmwLines<L> {
    fn default() -> Self {
        RmwLines(std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))))
    }
}

impl<const L: usize> RmwLines<L> {
    /// One round: an RMW on each line, in order.
    #[inline(always)]
    pub fn round(&self) {
        for line in &self.0 {
            line.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The antagonist's side, as a job.
    pub fn job(self: &Arc<Self>) -> Arc<dyn Churn> {
        Arc::clone(self) as Arc<dyn Churn>
    }
}

impl<const L: usize> Churn for RmwLines<L> {
    /// Rounds until stopped, with no pause between them.
    fn churn_until(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            self.round();
        }
    }
}

/// Two lines on one page, each thread incrementing its own with locked RMWs
/// (`fetch_add`), nothing shared: what a locked RMW on a line the core already has costs
/// here while the other core does the same, the cost model's `t_rmw` (`rmw-local` in T1's
/// `means` line; `ci/engine-validate.sh` passes it to the model).
#[derive(Default)]
#[repr(align(4096))]
pub struct RmwOwn([CachePadded<AtomicU64>; 2]);

impl RmwOwn {
    /// One locked RMW on the measuring thread's line.
    #[inline(always)]
    pub fn rmw(&self) {
        self.0[0].fetch_add(1, Ordering::SeqCst);
    }

    /// The antagonist's side, as a job.
    pub fn job(self: &Arc<Self>) -> Arc<dyn Churn> {
        Arc::clone(self) as Arc<dyn Churn>
    }
}

impl Churn for RmwOwn {
    /// Locked RMWs on the antagonist's own line until stopped.
    fn churn_until(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            self.0[1].fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Prints the indented `transfer <target> rmw-<L>line-<pacing>` line: the median round of
/// `kept`, the [`RmwLines`] runs of one interleaving, in ns.
pub fn print_rmw(target: &str, lines: usize, pacing: Pacing, kept: &[f64]) {
    let head = format!("transfer {target} rmw-{lines}line-{}", pacing.name());
    let value = median(kept);
    let shown = value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}"));
    println!("   {head} ns={shown} runs={}", kept.len());
    record_info(head, value);
}
