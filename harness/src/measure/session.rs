//! A measuring session: how a bench times its variants, quiet or against the antagonist,
//! with every run judged by the descheduling gate.
//!
//! A [`Session`] belongs to the measuring thread. Each comparison starts with one untimed
//! warm-up run of every variant (the antagonist's job runs through its warm-up too), then the
//! kept runs, interleaved ([`interleave`], [`interleave_many`]). A run is [`Session::quiet`]
//! (the measuring thread alone) or [`Session::contended`] (the antagonist churning before and
//! during it); either returns `None` when the gate discards it, and the session counts who was
//! descheduled in the current comparison ([`Session::lost`]).

use super::antagonist::{Antagonist, Churn};
use super::pacing::{Pacing, Work, timed};
use super::{Interleaved, InterleavedMany, ThreadClock, ThreadUsage, interleave, interleave_many};
use std::cell::Cell;
use std::sync::Arc;

/// The measuring thread's view: the antagonist, if the host gives it a core of its own, the
/// kept runs per variant, the calibrated work of [`Pacing::Worked`], and who the gate caught
/// in the current comparison.
pub struct Session<'a> {
    ant: Option<&'a Antagonist>,
    /// Kept runs per variant.
    runs: usize,
    /// The work between [`Pacing::Worked`] calls.
    work: Cell<Work>,
    /// Runs discarded because the measuring thread was descheduled.
    lost_main: Cell<usize>,
    /// Runs discarded because the antagonist was.
    lost_ant: Cell<usize>,
}

impl<'a> Session<'a> {
    /// A session keeping `runs` runs per variant, with `ant` for the contended runs (`None`:
    /// only quiet runs are possible) and `work` between [`Pacing::Worked`] calls.
    pub fn new(ant: Option<&'a Antagonist>, runs: usize, work: Work) -> Self {
        Session {
            ant,
            runs,
            work: Cell::new(work),
            lost_main: Cell::new(0),
            lost_ant: Cell::new(0),
        }
    }

    /// Whether contended runs are possible.
    pub fn has_antagonist(&self) -> bool {
        self.ant.is_some()
    }

    /// The work between [`Pacing::Worked`] calls, as last calibrated.
    pub fn work(&self) -> Work {
        self.work.get()
    }

    /// Calibrates the work between [`Pacing::Worked`] calls again ([`Work::calibrate`]) and
    /// returns it. Call it between comparisons, when the antagonist is parked.
    pub fn recalibrate(&self) -> Work {
        let work = Work::calibrate();
        self.work.set(work);
        work
    }

    /// [`timed`] with this session's work.
    pub fn timed<R>(&self, batch: u64, pacing: Pacing, f: impl FnMut() -> R) -> f64 {
        timed(batch, pacing, self.work.get(), f)
    }

    /// One untimed warm-up run of each variant, then the kept runs of each, interleaved
    /// (`run(false)` is A, `run(true)` B).
    pub fn interleave(&self, mut run: impl FnMut(bool) -> Option<f64>) -> Interleaved<f64> {
        self.lost_main.set(0);
        self.lost_ant.set(0);
        run(false);
        run(true);
        self.lost_main.set(0);
        self.lost_ant.set(0);
        interleave(self.runs, run)
    }

    /// [`Session::interleave`] of two quiet variants: `a` and `b` each time one run on this
    /// thread alone.
    pub fn interleave_quiet(
        &self,
        mut a: impl FnMut() -> f64,
        mut b: impl FnMut() -> f64,
    ) -> Interleaved<f64> {
        self.interleave(|is_b| self.quiet(|| if is_b { b() } else { a() }))
    }

    /// [`Session::interleave`] for `variants` variants, in rounds.
    pub fn interleave_many(
        &self,
        variants: usize,
        mut run: impl FnMut(usize) -> Option<f64>,
    ) -> InterleavedMany<f64> {
        for v in 0..variants {
            run(v);
        }
        self.lost_main.set(0);
        self.lost_ant.set(0);
        interleave_many(variants, self.runs, run)
    }

    /// [`Session::interleave_many`] of contended variants: variant `v` is `timed(v)` while the
    /// antagonist runs `jobs[v]`.
    pub fn interleave_contended(
        &self,
        jobs: &[Arc<dyn Churn>],
        mut timed: impl FnMut(usize) -> f64,
    ) -> InterleavedMany<f64> {
        self.interleave_many(jobs.len(), |v| self.contended(&jobs[v], || timed(v)))
    }

    /// Times `timed` on this thread alone; `None` if the gate discards the run.
    pub fn quiet(&self, timed: impl FnOnce() -> f64) -> Option<f64> {
        let clock = ThreadClock::start();
        let ns = timed();
        self.gate(clock.finish(), None).then_some(ns)
    }

    /// Times `timed` on this thread while the antagonist runs `job` (started first, stopped
    /// after); `None` if the gate discards the run. Panics without an antagonist.
    pub fn contended(&self, job: &Arc<dyn Churn>, timed: impl FnOnce() -> f64) -> Option<f64> {
        let ant = self
            .ant
            .expect("contended targets run only with an antagonist");
        ant.start(job);
        let clock = ThreadClock::start();
        let ns = timed();
        let mine = clock.finish();
        let theirs = ant.stop();
        self.gate(mine, Some(theirs)).then_some(ns)
    }

    /// Runs the gate discarded in the current comparison: (measuring thread, antagonist).
    pub fn lost(&self) -> (usize, usize) {
        (self.lost_main.get(), self.lost_ant.get())
    }

    /// Whether a run counts: neither thread lost more than 3 % of its time to other processes.
    fn gate(&self, mine: ThreadUsage, theirs: Option<ThreadUsage>) -> bool {
        let main_ok = !mine.descheduled();
        let ant_ok = theirs.is_none_or(|u| !u.descheduled());
        if !main_ok {
            self.lost_main.set(self.lost_main.get() + 1);
        }
        if !ant_ok {
            self.lost_ant.set(self.lost_ant.get() + 1);
        }
        main_ok && ant_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work() -> Work {
        Work {
            steps: 1,
            step_ns: 1.0,
        }
    }

    #[test]
    fn interleave_warms_each_variant_up_once_before_the_kept_runs() {
        let s = Session::new(None, 2, work());
        let mut order = Vec::new();
        let r = s.interleave(|b| {
            order.push(b);
            Some(order.len() as f64)
        });
        // The warm-up (A, then B) is not kept; two rounds of one A and one B follow.
        assert_eq!(order[..2], [false, true]);
        assert_eq!(order.len(), 6);
        assert!(order[2..].chunks(2).all(|r| r[0] != r[1]), "{order:?}");
        let at = |b: bool| -> Vec<f64> {
            (3..=6)
                .filter(|&i| order[i - 1] == b)
                .map(|i| i as f64)
                .collect()
        };
        assert_eq!((r.a, r.b), (at(false), at(true)));
        let mut order = Vec::new();
        let r = s.interleave_many(3, |v| {
            order.push(v);
            Some(v as f64)
        });
        assert_eq!(order[..3], [0, 1, 2], "one warm-up run each, in order");
        assert_eq!(order.len(), 9);
        assert_eq!(r.kept, [vec![0.0; 2], vec![1.0; 2], vec![2.0; 2]]);
        assert_eq!(s.lost(), (0, 0));
    }

    #[test]
    #[should_panic(expected = "only with an antagonist")]
    fn contended_needs_an_antagonist() {
        let s = Session::new(None, 1, work());
        assert!(!s.has_antagonist());
        let job = crate::measure::churn(|| ());
        let _ = s.contended(&job, || 1.0);
    }
}
