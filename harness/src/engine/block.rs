//! Tasks of synchronizing loads: a task that blocks on an engine object (a barrier, a
//! buffer's empty or full state) instead of a timer, and is woken by another task's action.
//!
//! A task of such a load (its `script`, the load's source) runs stretches of work; when a
//! stretch ends (its `Done` event, [`Engine::complete`]) the load decides, with the task still
//! current on its CPU (so that the wakeups it makes see their waker running), what comes next
//! ([`Step`]):
//!
//! - run on for more CPU time without leaving the CPU (the next stretch of its work, or a
//!   spin: a task spinning at a barrier is running, its CPU busy and not idle; sharing a CPU it
//!   keeps it until the tick rotates it or its spin ends);
//! - block: it leaves the CPU and waits, owned by the load's object, for another task to wake
//!   it ([`Engine::wake_up`]);
//! - exit.
//!
//! A spin is ended early by the event it waits for ([`Engine::cut_short`]): a running spinner's
//! stretch ends now, a queued one's ends as soon as it runs again. A woken task's next stretch
//! is whatever the waker set ([`Engine::set_left`]), often nothing: it then runs for no time and
//! asks its load again, as a woken writer retries its write.
//!
//! The wakeup and fork entry points ([`Engine::wake_up`], [`Engine::fork`]) take the waker's or
//! parent's CPU and the `sync` flag the kernel's placement reads; their bodies here are the
//! engine's simple placement (`select_idle_sibling` from the CPU the task last ran on, or
//! from the parent's).

use super::Engine;
use super::work::TaskKind;
use nohz::Policy;

/// What a task of a synchronizing load does when its stretch of work ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Runs on for this many more nanoseconds, on the same CPU (its slice goes on).
    Run(u64),
    /// Leaves the CPU until another task wakes it.
    Block,
    /// Exits.
    Exit,
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// The running task of `c` ended its stretch: if it belongs to a synchronizing load, the
    /// load decides what follows and this returns true; false for any other task.
    pub(super) fn script_done(&self, c: usize) -> bool {
        let Some(t) = self.cpus[c].curr.get() else {
            return false;
        };
        let Some(src) = self.tasks.borrow()[t].script else {
            return false;
        };
        match self.load_step(c, t, src) {
            Step::Run(ns) => self.extend_run(c, t, ns),
            Step::Block => {
                self.leave_cpu(c);
                // Its load stays behind, blocked, decaying (PELT).
                self.pelt_block(t);
                self.count(|n| n.runs_completed += 1);
            }
            Step::Exit => {
                self.leave_cpu(c);
                self.pelt_dead(t);
                self.free.borrow_mut().push(t);
                self.count(|n| {
                    n.runs_completed += 1;
                    n.tasks_completed += 1;
                });
            }
        }
        true
    }

    /// `c`'s running task leaves the CPU (blocks or exits); the CPU's run queue is published.
    fn leave_cpu(&self, c: usize) {
        let before = self.nr(c);
        self.take_curr(c);
        self.publish(c, before);
    }

    /// `c`'s running task `t` runs `ns` more from now: its run's end moves, its slice (from
    /// `run_start`) goes on. `left` is kept as the time from `run_start` not taken by the
    /// crate's code, which is what [`Engine::take_curr`] subtracts from.
    fn extend_run(&self, c: usize, t: usize, ns: u64) {
        let s = &self.cpus[c];
        let now = self.now();
        let done = (now - s.run_start.get()).saturating_sub(s.stolen.get());
        self.tasks.borrow_mut()[t].left = done + ns;
        s.done_at.set(now + ns);
        self.rearm_done(c);
    }

    /// The event task `t` spins for came: a running spinner's stretch ends now, a queued
    /// one's as soon as it runs; a task that is neither (asleep, or not spinning) is left alone.
    pub(super) fn cut_short(&self, t: usize) {
        let c = self.tasks.borrow()[t].prev;
        let s = &self.cpus[c];
        if s.curr.get() == Some(t) {
            if s.done_at.get() > self.now() {
                s.done_at.set(self.now());
                self.rearm_done(c);
            }
        } else if s.queue.borrow().contains(&t) {
            self.tasks.borrow_mut()[t].left = 0;
        }
    }

    /// Task `t`'s next stretch, when it next runs: `ns` of CPU time.
    pub(super) fn set_left(&self, t: usize, ns: u64) {
        self.tasks.borrow_mut()[t].left = ns;
    }

    /// A new task of synchronizing load `src`, made on `cpu` (not yet queued), whose first
    /// stretch is `left`.
    pub(super) fn spawn(&self, src: usize, cpu: usize, left: u64) -> usize {
        let kind = TaskKind {
            run_ns: 1,
            sleep_ns: 0,
            runs: 0,
            bound: false,
        };
        let t = self.new_task(kind, cpu, None, None);
        let mut tasks = self.tasks.borrow_mut();
        tasks[t].script = Some(src);
        tasks[t].left = left;
        t
    }
}
