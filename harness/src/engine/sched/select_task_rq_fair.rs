//! Wakeup placement: where a woken task runs, and the engine's wakeup entry point.
//!
//! C source: kernel/sched/core.c (`try_to_wake_up`: `select_task_rq`, `is_cpu_allowed`,
//! `select_fallback_rq`, `ttwu_do_activate`), kernel/sched/fair.c (`select_task_rq_fair` for
//! `WF_TTWU`, `record_wakee`, `wake_wide`).
//!
//! Every wakeup has a waker: whatever runs on the waking CPU (`current`: a task, or the CPU's
//! idle task when an interrupt wakes from idle). A sleeping task's timer fires on the CPU it
//! slept on, so there the waker's CPU is also where the task slept; a load's task that
//! wakes another (a message written, a barrier passed) wakes it from its own CPU, with `sync`
//! for an AF_UNIX socket's wakeup.
//!
//! `select_task_rq_fair`: the waker records the wakee (`wakee_flips` counts changes of
//! wakee, halved once a second); unless both flip more than the cache has CPUs and one a
//! cache's worth of times more than the other (`wake_wide`), and if the task may run on the
//! waker's CPU, the lowest of the waker's domains that spans where the task slept chooses
//! between the two (`wake_affine`, in `wake_affine.rs`) when they differ. `SD_BALANCE_WAKE`
//! is off on every level (`sd_init`), so the slow path never runs for a wakeup: the choice
//! (else where the task slept) is the target `select_idle_sibling` starts from. A task bound
//! to one CPU goes there without any of this (`select_task_rq` calls the class only for a
//! task with more than one CPU allowed). A CPU on its way offline is not allowed: a choice
//! that lands on one goes to the fallback (the engine's: the cpuset's first CPU). No EAS, no
//! `WF_CURRENT_CPU`, no exiting waker.

use crate::engine::Engine;
use nohz::{Jiffies, Policy};

/// A task's (or an idle task's) record of whom it wakes: `wakee_flips`,
/// `wakee_flip_decay_ts`, `last_wakee`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::engine) struct Wakee {
    /// Changes of wakee, halved once per second (`HZ` jiffies).
    pub(super) flips: u32,
    /// When the flips were last halved, in jiffies (set at the first wakeup).
    decay_ts: Option<usize>,
    /// The task it woke last.
    last: Option<usize>,
}

/// What runs on a CPU when it wakes a task (`current`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Current {
    /// A task.
    Task(usize),
    /// The CPU's idle task (an interrupt woke from idle).
    Idle(usize),
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Wakes task `t` from `waker_cpu` (`try_to_wake_up`): places it
    /// ([`select_task_rq`](Self::select_task_rq)) and queues it there. `sync`: the waker
    /// is about to sleep (`WF_SYNC`, an AF_UNIX socket's wakeup).
    ///
    /// Called for every wakeup: a sleeping task's timer (from the CPU the timer fires on),
    /// and the loads' tasks waking one another (from the waker's CPU).
    pub(in crate::engine) fn wake_up(&self, t: usize, waker_cpu: usize, sync: bool) {
        let to = self.select_task_rq(t, waker_cpu, sync);
        // `ttwu_do_activate`: the CPU's idle period ends, into its `avg_idle`.
        self.newidle_woken(to);
        self.enqueue(to, t);
        if crate::engine::trace::on(self.now()) {
            let prev = self.tasks.borrow()[t].prev;
            crate::engine::trace::line(
                self.now(),
                format_args!(
                    "wake {t} waker={waker_cpu} prev={prev} -> {to} nr={} idle_in_cpuset={}",
                    self.nr(to),
                    self.idle_in_cpuset(to)
                ),
            );
        }
    }

    /// `select_task_rq` for a wakeup of `t` by `this` (the waker's CPU).
    pub(in crate::engine) fn select_task_rq(&self, t: usize, this: usize, sync: bool) -> usize {
        let (prev, allowed) = {
            let task = &self.tasks.borrow()[t];
            (task.prev, task.allowed.clone())
        };
        let cpu = if allowed.len() == 1 {
            allowed.start
        } else {
            self.select_task_rq_fair(t, prev, this, sync)
        };
        if self.cpus[cpu].leaving.get() {
            self.fallback(cpu)
        } else {
            cpu
        }
    }

    /// What runs on `c` now (`current`).
    pub(super) fn current_on(&self, c: usize) -> Current {
        self.cpus[c]
            .curr
            .get()
            .map_or(Current::Idle(c), Current::Task)
    }

    /// The wakee record of `who`.
    pub(super) fn wakee(&self, who: Current) -> Wakee {
        match who {
            Current::Task(t) => self.tasks.borrow()[t].place.wakee,
            Current::Idle(c) => self.placement[c].idle_wakee.get(),
        }
    }

    fn set_wakee(&self, who: Current, w: Wakee) {
        match who {
            Current::Task(t) => self.tasks.borrow_mut()[t].place.wakee = w,
            Current::Idle(c) => self.placement[c].idle_wakee.set(w),
        }
    }

    /// `select_task_rq_fair(p, prev_cpu, WF_TTWU)` run on `this`.
    fn select_task_rq_fair(&self, t: usize, prev: usize, this: usize, sync: bool) -> usize {
        let current = self.current_on(this);
        self.record_wakee(current, t);
        let allowed = self.tasks.borrow()[t].allowed.clone();
        let want_affine = !self.wake_wide(current, t, this) && self.may_run(&allowed, this);
        let mut new_cpu = prev;
        if want_affine {
            let affine = self.cpus[this]
                .domains
                .borrow()
                .iter()
                .find(|d| d.span.contains(&prev))
                .map(|d| d.imbalance_pct());
            if let Some(pct) = affine
                && this != prev
            {
                new_cpu = self.wake_affine(pct, t, current, this, prev, sync);
            }
        }
        self.select_idle_sibling(t, prev, new_cpu)
    }

    /// `record_wakee(p)` by `current`: halves its flips if a second has passed since it last
    /// did, then counts one if `p` is not the task it woke last.
    pub(super) fn record_wakee(&self, current: Current, t: usize) {
        let now = self.time.jiffies();
        let mut w = self.wakee(current);
        match w.decay_ts {
            None => w.decay_ts = Some(now.get()),
            Some(ts) if now.is_after(Jiffies::new(ts).add(HZ as usize)) => {
                w.flips >>= 1;
                w.decay_ts = Some(now.get());
            }
            Some(_) => {}
        }
        if w.last != Some(t) {
            w.last = Some(t);
            w.flips = w.flips.saturating_add(1);
        }
        self.set_wakee(current, w);
    }

    /// `wake_wide(p)` on `this`: the waker and the wakee each switch partners at least as
    /// often as `this`'s cache has CPUs (`sd_llc_size`), the busier one that many times more
    /// than the other: the wakeup spreads instead of pulling to the waker.
    pub(super) fn wake_wide(&self, current: Current, t: usize, this: usize) -> bool {
        let a = self.wakee(current).flips;
        let b = self.tasks.borrow()[t].place.wakee.flips;
        let (master, slave) = (a.max(b), a.min(b));
        let factor = self.shape.llc_of(this).len() as u32;
        !(slave < factor || master < slave.saturating_mul(factor))
    }
}
