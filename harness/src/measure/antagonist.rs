//! The antagonist: a second thread, pinned to another core, that runs a job (a [`Churn`])
//! before and during each timed run of a contended measurement.
//!
//! [`Antagonist::scoped`] runs a body with the antagonist served by a scoped thread, and ends
//! that thread when the body returns or panics (a panicking measuring thread, a failed layout
//! check say, would otherwise leave the scope waiting on the parked antagonist forever).
//! Between runs it is parked on a condition variable, so it costs nothing while uncontended
//! variants are timed. For each run the measuring thread hands it a job ([`Antagonist::start`]),
//! waits until the antagonist has started its clocks and then a further [`PRE_ROLL`], times its
//! own run, and stops the job ([`Antagonist::stop`]), which returns the antagonist's clocks over
//! the job: the descheduling gate judges both threads (see [`Session`](super::Session)).
//!
//! The stop flag and the started epoch sit on lines of their own: the measuring thread writes
//! each once a run, and the antagonist reads the stop flag in its loop.

use super::pacing::repeat;
use super::{ThreadClock, ThreadUsage};
use nohz::CachePadded;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long the antagonist runs its job before the measuring thread starts its clocks, once it
/// has said it started.
pub const PRE_ROLL: Duration = Duration::from_micros(100);

/// Work the antagonist runs until told to stop.
pub trait Churn: Send + Sync {
    /// Runs until `stop` is set; reads it often (every few microseconds at most).
    fn churn_until(&self, stop: &AtomicBool);
}

/// A job that calls `f` back to back, in batches of 64 between reads of the stop flag.
pub fn churn(f: impl Fn() + Send + Sync + 'static) -> Arc<dyn Churn> {
    Arc::new(Repeat(f))
}

/// See [`churn`].
struct Repeat<F>(F);

impl<F: Fn() + Send + Sync> Churn for Repeat<F> {
    fn churn_until(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            repeat::<false, ()>(64, &self.0);
        }
    }
}

/// The antagonist's mailbox, guarded by [`Antagonist::slot`].
#[derive(Default)]
struct Slot {
    /// Bumped for each job.
    epoch: u64,
    /// The job of the current epoch, until the antagonist takes it.
    job: Option<Arc<dyn Churn>>,
    /// The antagonist's clocks over its last job.
    done: Option<ThreadUsage>,
    /// Whether the antagonist pinned itself (set once, at start).
    pinned: Option<bool>,
    /// Ends the antagonist.
    quit: bool,
}

/// The thread that churns on another core while the measuring thread times a run; see
/// [`Antagonist::scoped`].
pub struct Antagonist {
    slot: Mutex<Slot>,
    cv: Condvar,
    /// Set by the measuring thread at the end of its timed run; read by the antagonist in its
    /// loop (its own line: written once a run).
    stop: CachePadded<AtomicBool>,
    /// The epoch whose job the antagonist is running (its clocks already started).
    started: CachePadded<AtomicU64>,
}

impl Antagonist {
    /// Runs `body` on this thread with an antagonist served by a thread pinned to `core`, and
    /// returns what `body` returns; the antagonist's thread ends when `body` returns or
    /// panics.
    pub fn scoped<R>(core: core_affinity::CoreId, body: impl FnOnce(&Antagonist) -> R) -> R {
        /// Ends the antagonist's thread on the way out of `body`, unwinding included.
        struct QuitOnDrop<'a>(&'a Antagonist);
        impl Drop for QuitOnDrop<'_> {
            fn drop(&mut self) {
                self.0.quit();
            }
        }
        let ant = Antagonist::new();
        std::thread::scope(|s| {
            s.spawn(|| ant.serve(core));
            let _quit = QuitOnDrop(&ant);
            body(&ant)
        })
    }

    /// An antagonist with no job, not yet served by a thread.
    fn new() -> Self {
        Antagonist {
            slot: Mutex::new(Slot::default()),
            cv: Condvar::new(),
            stop: CachePadded::new(AtomicBool::new(false)),
            started: CachePadded::new(AtomicU64::new(0)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits on the condition variable until `ready` holds.
    fn wait_until(&self, mut ready: impl FnMut(&mut Slot) -> bool) -> MutexGuard<'_, Slot> {
        let mut s = self.lock();
        while !ready(&mut s) {
            s = self.cv.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        s
    }

    /// The antagonist thread's body: pins itself to `core`, then runs each job it is given,
    /// its clocks around each, until [`Antagonist::quit`].
    fn serve(&self, core: core_affinity::CoreId) {
        let pinned = core_affinity::set_for_current(core);
        self.lock().pinned = Some(pinned);
        self.cv.notify_all();
        let mut seen = 0;
        loop {
            let job = {
                let mut s = self.wait_until(|s| s.quit || s.epoch != seen);
                if s.quit {
                    return;
                }
                seen = s.epoch;
                s.job.take().expect("a job with each epoch")
            };
            let clock = ThreadClock::start();
            self.started.store(seen, Ordering::Release);
            job.churn_until(&self.stop);
            let usage = clock.finish();
            drop(job);
            self.lock().done = Some(usage);
            self.cv.notify_all();
        }
    }

    /// Whether the antagonist pinned itself (waits for it to have tried).
    pub fn pinned(&self) -> bool {
        self.wait_until(|s| s.pinned.is_some()).pinned == Some(true)
    }

    /// Hands `job` to the antagonist and returns once it has run it for [`PRE_ROLL`], its
    /// clocks started. Follow with [`Antagonist::stop`].
    pub fn start(&self, job: &Arc<dyn Churn>) {
        self.stop.store(false, Ordering::Relaxed);
        let epoch = {
            let mut s = self.lock();
            s.epoch += 1;
            s.job = Some(Arc::clone(job));
            s.done = None;
            s.epoch
        };
        self.cv.notify_all();
        while self.started.load(Ordering::Acquire) != epoch {
            spin_loop();
        }
        let t0 = Instant::now();
        while t0.elapsed() < PRE_ROLL {
            spin_loop();
        }
    }

    /// Stops the job [`Antagonist::start`] handed over; returns the antagonist's clocks over it.
    pub fn stop(&self) -> ThreadUsage {
        self.stop.store(true, Ordering::Relaxed);
        self.wait_until(|s| s.done.is_some())
            .done
            .take()
            .expect("checked")
    }

    /// Ends the antagonist thread, stopping its job if one runs.
    fn quit(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.lock().quit = true;
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_core() -> Option<core_affinity::CoreId> {
        core_affinity::get_core_ids()
            .unwrap_or_default()
            .last()
            .copied()
    }

    #[test]
    fn runs_each_job_between_start_and_stop() {
        let Some(core) = a_core() else {
            return; // no CPU to pin to: nothing to test here
        };
        let calls = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&calls);
        let job = churn(move || {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        Antagonist::scoped(core, |ant| {
            let _ = ant.pinned();
            for _ in 0..3 {
                let before = calls.load(Ordering::Relaxed);
                ant.start(&job);
                // The job is running: it counts in batches of 64 while this thread waits.
                while calls.load(Ordering::Relaxed) < before + 64 {
                    spin_loop();
                }
                let usage = ant.stop();
                assert!(usage.wall >= PRE_ROLL, "{usage:?}");
                let after = calls.load(Ordering::Relaxed);
                assert!(after.is_multiple_of(64), "stopped between batches");
                std::thread::sleep(Duration::from_millis(1));
                assert_eq!(calls.load(Ordering::Relaxed), after, "stopped");
            }
        });
    }

    #[test]
    fn a_panicking_body_ends_the_antagonist_even_mid_job() {
        let Some(core) = a_core() else {
            return;
        };
        let job = churn(|| ());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Antagonist::scoped(core, |ant| {
                ant.start(&job);
                panic!("the measuring thread failed");
            })
        }));
        assert!(r.is_err(), "the panic comes through, instead of a hang");
    }
}
