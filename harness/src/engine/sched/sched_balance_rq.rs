//! Load balancing within one domain: pull tasks from the busiest CPU of a span.
//!
//! C source: kernel/sched/fair.c (`sched_balance_rq`, named `load_balance` before Linux 6.10;
//! `sched_balance_find_src_rq` for the busiest CPU, `can_migrate_task` for which tasks move).
//!
//! Simplified: load is the number of tasks (no weights, no utilization, no groups): the
//! busiest CPU has at least two tasks more than the puller, ties go to the lowest-numbered,
//! and half the difference moves from the tail of its queue (the tasks that waited least),
//! only tasks whose affinity allows the puller.

use crate::engine::Engine;
use nohz::Policy;
use std::ops::Range;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Queued tasks of `c` that may run on `dst`.
    fn movable(&self, c: usize, dst: usize) -> usize {
        let tasks = self.tasks.borrow();
        self.cpus[c]
            .queue
            .borrow()
            .iter()
            .filter(|&&t| tasks[t].allowed.contains(&dst))
            .count()
    }

    /// `sched_balance_rq` of `dst` over `span`: finds the busiest CPU (most tasks, with a task
    /// `dst` may take; the lowest-numbered on a tie) and moves half the difference, at most
    /// `cap` tasks, from its queue's tail. Returns how many moved.
    pub(in crate::engine) fn sched_balance_rq(
        &self,
        dst: usize,
        span: Range<usize>,
        cap: usize,
    ) -> usize {
        if self.cpus[dst].leaving.get() {
            return 0;
        }
        let mine = self.nr(dst);
        let mut busiest: Option<(usize, usize)> = None;
        for c in span {
            if c == dst {
                continue;
            }
            let nr = self.nr(c);
            if nr >= mine + 2 && busiest.is_none_or(|(_, b)| nr > b) && self.movable(c, dst) > 0 {
                busiest = Some((c, nr));
            }
        }
        let Some((src, nr)) = busiest else { return 0 };
        let want = ((nr - mine) / 2).clamp(1, cap);
        let mut moved = Vec::new();
        {
            let tasks = self.tasks.borrow();
            let mut q = self.cpus[src].queue.borrow_mut();
            let mut k = q.len();
            while k > 0 && moved.len() < want {
                k -= 1;
                if tasks[q[k]].allowed.contains(&dst) {
                    moved.push(q.remove(k).expect("index in range"));
                }
            }
        }
        self.publish(src, nr);
        for &t in &moved {
            self.enqueue(dst, t);
        }
        if crate::engine::trace::on(self.now()) {
            let by = self.current.get().unwrap_or(dst);
            let kind = match (cap, by == dst) {
                (1, _) => "newidle",
                (_, true) => "periodic",
                _ => "ilb",
            };
            crate::engine::trace::line(
                self.now(),
                format_args!("pull {kind} src={src} -> dst={dst} tasks={moved:?} by_cpu={by}"),
            );
        }
        moved.len()
    }
}
