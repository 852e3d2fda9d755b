//! CPU hotplug, the engine's side: a CPU taken offline and brought back, one at a time, as
//! a kernel's hotplug thread and the scheduler's hotplug callbacks would.
//!
//! C source: kernel/cpu.c (the hotplug thread, `cpuhp_thread_fun`), kernel/sched/core.c
//! (`sched_cpu_deactivate`'s `balance_push` and grace period, `select_fallback_rq`,
//! `sched_cpu_dying`, `sched_cpu_activate`).
//!
//! The crate's callbacks (`sched_cpu_deactivate`, `cpu_dying`, `cpu_starting`,
//! `sched_cpu_activate`) are called in a kernel's order; around them the engine preempts what
//! runs on the CPU, pushes its tasks away, idles it through the grace period on its idle
//! coroutine, moves its timers while it is down, and checks after each step that the crate
//! left it as it should (out of the idle mask once deactivated, no nohz kick sent to it, a
//! freshly booted CPU's state when back).

use super::work::gap;
use super::{Ctx, Engine, Ev, Halt, Irq, Plant, Runner, cost};
use nohz::{IdleExit, Policy, TsFlags};
use std::rc::Rc;

/// How long the grace period a dying CPU waits for in `sched_cpu_deactivate` lasts.
const GRACE_NS: u64 = 50_000;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Where work of `c`'s goes while `c` is leaving or offline: the first CPU of its cpuset,
    /// which never goes offline.
    pub(super) fn fallback(&self, c: usize) -> usize {
        self.shape.cpuset(c).start
    }

    /// The next CPU to take offline, and when: any but the first of a cpuset.
    pub(super) fn arm_hotplug(&self) {
        if self.hotplug_every == 0 {
            return;
        }
        let n = self.shape.cpus as u64;
        let c = loop {
            let c = self.draw(|r| r.u64(1..n)) as usize;
            if self.fallback(c) != c {
                break c;
            }
        };
        let at = self.now() + self.draw(|r| gap(r, self.hotplug_every));
        self.push(at, c, Ev::Hotplug);
    }

    /// `c`'s queued tasks go to other CPUs (`balance_push`): an idle CPU of its cache (as
    /// `select_idle_sibling` finds one from `c`), else the first CPU of its cpuset; a task
    /// bound to `c` loses its binding (the kernel's `select_fallback_rq`).
    fn push_tasks_away(&self, c: usize) {
        let before = self.nr(c);
        let tasks: Vec<usize> = self.cpus[c].queue.borrow_mut().drain(..).collect();
        self.publish(c, before);
        for t in tasks {
            {
                let mut tasks = self.tasks.borrow_mut();
                if tasks[t].allowed.len() == 1 {
                    tasks[t].allowed = self.shape.cpuset(c);
                }
            }
            let to = match self.select_idle_sibling(t, c, c) {
                to if self.cpus[to].leaving.get() => self.fallback(to),
                to => to,
            };
            self.enqueue(to, t);
        }
    }

    /// The hotplug thread's takedown of `c`, on `c`'s coroutine (its grace period idles the
    /// CPU): `sched_cpu_deactivate`, the tasks pushed away, `cpu_dying`.
    pub(super) fn takedown(&self, c: usize, ctx: &Ctx<'_, P, HZ>) -> Halt {
        let s = &self.cpus[c];
        let cpu = self.id(c);
        self.push_tasks_away(c);
        // The hotplug thread runs on the CPU.
        s.idle_current.set(false);
        self.publish(c, 0);
        let refused = if self.plant == Plant::HotplugOrder {
            nohz_testing::sched_cpu_deactivate_old_order(&self.m, cpu, ctx).is_err()
        } else {
            self.m.sched_cpu_deactivate(cpu, ctx).is_err()
        };
        if refused {
            return Halt::Refused;
        }
        s.down.set(true);
        self.count(|n| n.checks += 1);
        if cost::unrecorded(|| self.m.nohz_idle_test(cpu)) {
            self.record_violation(format!(
                "at {} ns: CPU {c} is in the idle mask after its deactivation",
                self.now()
            ));
        }
        self.push_tasks_away(c);
        if let Err(err) = self.m.cpu_dying(cpu, ctx) {
            self.record_violation(format!("at {} ns: cpu_dying({c}): {err}", self.now()));
        }
        s.idle_current.set(true);
        self.publish(c, 0);
        Halt::Down
    }

    /// The grace period `sched_cpu_deactivate` waits for, on the dying CPU `c`: its idle
    /// task runs (the crate's `do_idle`) until the grace period ends.
    pub(super) fn grace_idle(&self, c: usize, ctx: &Ctx<'_, P, HZ>) {
        let s = &self.cpus[c];
        let cpu = self.id(c);
        s.idle_current.set(true);
        self.publish(c, 0);
        s.grace.set(true);
        s.in_idle.set(true);
        self.note_idle_change(c);
        self.push(self.now() + GRACE_NS, c, Ev::GraceEnd);
        while s.grace.get() {
            s.need_resched.set(false);
            if self.m.do_idle(cpu, ctx) == IdleExit::CpuDead {
                self.record_violation(format!(
                    "at {} ns: CPU {c} left do_idle as dead in its grace period",
                    self.now()
                ));
                break;
            }
        }
        s.in_idle.set(false);
        self.note_idle_change(c);
        s.need_resched.set(false);
        s.idle_current.set(false);
        self.publish(c, 0);
    }

    /// `c` comes back online: `cpu_starting`, `sched_cpu_activate`, then checks that it is in
    /// a freshly booted CPU's state.
    pub(super) fn bring_up(&self, c: usize) {
        let s = &self.cpus[c];
        let cpu = self.id(c);
        let ctx = self.ctx();
        s.offline.set(false);
        // `cpu_dying` reset its tick: no tickless period is open.
        s.tick_stop_j.set(None);
        s.stopped_ticks.set(0);
        self.idle_account_left(c);
        self.m.cpu_starting(cpu, &ctx);
        if let Err(err) = self.m.sched_cpu_activate(cpu, &ctx) {
            self.record_violation(format!(
                "at {} ns: sched_cpu_activate({c}): {err}",
                self.now()
            ));
        }
        let fresh = cost::unrecorded(|| {
            let rq = self.m.rq(cpu);
            let ts = self.m.tick_sched(cpu);
            !self.m.nohz_idle_test(cpu)
                && rq.nohz_flags().load().is_empty()
                && !rq.csd_busy()
                && !rq.nohz_tick_stopped()
                && !self.m.nohz_idle(cpu)
                && ts.flags() == TsFlags::NOHZ | TsFlags::HIGHRES
                && ts.timer_expires_base() == 0
                && ts.next_tick() == 0
                && ts.tick_dep_mask() == 0
        });
        self.count(|n| {
            n.checks += 1;
            n.hotplug_cycles += 1;
        });
        if !fresh {
            self.record_violation(format!(
                "at {} ns: CPU {c} is back online not in a freshly booted CPU's state",
                self.now()
            ));
        }
        s.down.set(false);
        s.leaving.set(false);
        self.hotplug_busy.set(false);
        self.arm_hotplug();
    }

    /// An event for offline `c`: its timers move to its cpuset's first CPU; a kick IPI in
    /// flight is dropped (`cpu_dying` flushed its csd); the rest has nothing to do.
    pub(super) fn offline_event(&self, c: usize, ev: Ev) {
        let s = &self.cpus[c];
        match ev {
            Ev::Timer(id) => {
                s.timers.borrow_mut().retain(|&(_, t)| t != id);
                if self.timers.borrow().contains_key(&id) {
                    let to = self.fallback(c);
                    self.cpus[to].timers.borrow_mut().insert((self.now(), id));
                    self.push(self.now(), to, Ev::Timer(id));
                }
            }
            Ev::Kick => s.kicks_in_flight.set(s.kicks_in_flight.get() - 1),
            _ => {}
        }
    }

    /// The takedown ran (`Halt::Down`): `c` is parked offline, to come back after half the
    /// hotplug period.
    pub(super) fn park_offline(&self, c: usize) {
        let s = &self.cpus[c];
        s.offline.set(true);
        self.push(self.now() + self.hotplug_every / 2, c, Ev::Up);
    }

    /// The crate refused `c`'s takedown (`Halt::Refused`): it stays, and the next is armed.
    pub(super) fn takedown_refused(&self, c: usize) {
        self.cpus[c].leaving.set(false);
        self.hotplug_busy.set(false);
        self.count(|n| n.hotplug_refused += 1);
        self.arm_hotplug();
    }
}

impl<P: Policy, const HZ: u32> Runner<P, HZ> {
    /// The hotplug thread of `c` wakes: from idle, the idle loop ends first; a running task
    /// is preempted (back to the head of its queue, to be pushed away).
    pub(super) fn hotplug(&mut self, c: usize) -> Result<(), String> {
        let e = Rc::clone(&self.e);
        let s = &e.cpus[c];
        if e.hotplug_busy.replace(true) {
            return Ok(());
        }
        s.leaving.set(true);
        e.current.set(Some(c));
        if s.in_idle.get() {
            s.hotplug_pending.set(true);
            s.need_resched.set(true);
            return self.resume(c, Irq::Resched);
        }
        if let Some(t) = e.take_curr(c) {
            e.tasks.borrow_mut()[t].runnable_since = Some(e.now());
            s.queue.borrow_mut().push_front(t);
        }
        self.resume(c, Irq::Takedown)
    }
}
