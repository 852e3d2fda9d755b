//! The driver layer: the few entry points a kernel calls from its interrupt handlers, idle
//! loop and CPU bring-up, each running the crate's lower-level paths in the kernel's order.
//!
//! C source: `kernel/softirq.c` (`irq_enter`, `irq_exit`, `invoke_softirq`),
//! `kernel/time/tick-sched.c` (`tick_irq_enter`, `tick_irq_exit`, `tick_setup_sched_timer`),
//! `kernel/smp.c` (`generic_smp_call_function_single_interrupt`), `kernel/cpu.c`
//! (`set_cpu_online`, `notify_cpu_starting`).
//!
//! # Design
//!
//! The rooms mirror the kernel function by function, which leaves the embedder to know in
//! which order the kernel strings them together: irq time and tick-sched on interrupt entry
//! and exit, the softirq between them, the csd flush. Every rig this crate has (the host
//! test world, the harness, the unikernel under QEMU) had written that order itself; this
//! module writes it once. A kernel calls:
//!
//! | when | call |
//! |---|---|
//! | boot, on the boot CPU | [`Machine::init`] |
//! | each CPU (the boot CPU too), once its timer works, IRQs off | [`Machine::cpu_starting`] |
//! | the sched timer's interrupt | [`Machine::timer_interrupt`] |
//! | the nohz kick IPI | [`Machine::kick_interrupt`] |
//! | any other interrupt | [`Machine::interrupt`] around its handler (or [`Machine::irq_enter`] first and [`Machine::irq_exit`] last) |
//! | the run queue changes (a task queued, dequeued, moved; a switch to or from idle) | [`Machine::update_rq`] |
//! | the scheduler, about to run the idle task | [`Machine::sched_balance_newidle`] |
//! | the idle task's loop | [`Machine::do_idle`] |
//! | taking a CPU down / bringing it back | [`Machine::sched_cpu_deactivate`], [`Machine::cpu_dying`], then [`Machine::cpu_starting`], [`Machine::sched_cpu_activate`] |
//!
//! The lower-level paths these are made of (the tick-sched and fair.c functions one by one)
//! are internal: a kernel that calls the entry points cannot get their order wrong.

use crate::cpu::CpuId;
use crate::fair::KickDecision;
use crate::fair::rq::{NohzFlags, RqFacts};
use crate::irqtime::IrqContext;
use crate::machine::Machine;
use crate::platform::{KTIME_MAX, TickPlatform, tick_nsec};
use crate::policy::Policy;
use crate::tick_sched::TICK_DEP_SCHED;
use crate::tick_sched::forward;

/// What one sched timer interrupt did ([`Machine::timer_interrupt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "the kernel's own per-tick work runs only when the tick ran"]
pub enum TimerTick<const N: usize> {
    /// The timer had not expired (an early interrupt, re-armed for the same expiry) or was
    /// cancelled: no tick ran.
    NotDue,
    /// The tick ran, with the balance trigger's decision (`None` when the trigger did not get
    /// as far as deciding: no balance due, or the CPU is idle).
    Ran(Option<KickDecision<N>>),
}

impl<const N: usize> TimerTick<N> {
    /// Whether the tick ran.
    #[inline]
    pub fn ran(self) -> bool {
        matches!(self, TimerTick::Ran(_))
    }

    /// The balance trigger's decision, if the tick ran and got that far.
    #[inline]
    pub fn kick(self) -> Option<KickDecision<N>> {
        match self {
            TimerTick::Ran(kick) => kick,
            TimerTick::NotDue => None,
        }
    }
}

impl<P: Policy, const N: usize, const W: usize> Machine<P, N, W> {
    /// `set_cpu_online(cpu, true)` and the tick's switch to NO_HZ mode on `cpu`
    /// (`tick_setup_sched_timer`, `tick_nohz_activate` with the high-resolution tick), then
    /// the first periodic tick programmed one period after the last jiffies update, on the
    /// jiffies grid ([`TickHardware::program_tick`](crate::platform::TickHardware::program_tick)).
    ///
    /// Call it on `cpu` itself with interrupts off, once its timer hardware is set up: on the
    /// boot CPU after [`Machine::init`], on each secondary CPU as it starts, and on a CPU
    /// coming back after [`cpu_dying`](Self::cpu_dying) (which reset its tick state), before
    /// [`sched_cpu_activate`](Self::sched_cpu_activate). Until a CPU has been through it, its
    /// tick never stops: the idle CPU stays out of the idle mask and the machine works, only
    /// without NOHZ on that CPU.
    #[doc(alias = "notify_cpu_starting")]
    #[doc(alias = "tick_setup_sched_timer")]
    #[doc(alias = "set_cpu_online")]
    pub fn cpu_starting<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.cpus.set_online(cpu, true);
        self.ticks.tick_nohz_activate(cpu, true);
        let (_, last_update) = plat.jiffies_update();
        let first = forward(last_update, plat.ktime_get(), tick_nsec(Pl::HZ));
        plat.program_tick(cpu, first);
    }

    /// The scheduler changed `cpu`'s run queue: a task was queued, dequeued or moved
    /// (`add_nr_running` / `sub_nr_running`), or the CPU switched between a task and its
    /// idle task (`__schedule`). Publishes the facts the kick and `idle_cpu()` read, together,
    /// then the scheduler's tick dependency of a NO_HZ_FULL CPU
    /// (`sched_update_tick_dependency`: its tick is needed while more than one task is
    /// runnable).
    ///
    /// Call it under the lock that guards the kernel's own run queue, on any CPU, every time
    /// one of the three facts changes. If the facts go stale, the crate balances for the run
    /// queue it sees: a CPU that never says it runs a task looks idle to every kick and
    /// `idle_cpu()` test (no balance is ever due for it), and one that never says it went idle
    /// is never chosen as the idle load balancer.
    ///
    /// On `cpu` itself (the platform's [`this_cpu`](crate::platform::CpuState::this_cpu)) a
    /// NO_HZ_FULL tick stops or restarts at once; from another CPU only the dependency bit
    /// changes, and the interrupt that tells `cpu` about its new task (a reschedule IPI,
    /// through [`irq_enter`](Self::irq_enter) and [`irq_exit`](Self::irq_exit)) makes it look
    /// again on its way out, as the kernel's `tick_nohz_full_kick_cpu` does.
    #[doc(alias = "add_nr_running")]
    #[doc(alias = "sub_nr_running")]
    #[doc(alias = "sched_update_tick_dependency")]
    #[inline]
    pub fn update_rq<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, facts: RqFacts, plat: &Pl) {
        let rq = self.rq(cpu);
        rq.set_nr_running(facts.nr_running);
        rq.set_h_nr_runnable(facts.h_nr_runnable);
        rq.set_curr_is_idle(facts.curr_is_idle);
        self.sched_update_tick_dependency(cpu, plat);
    }

    crate::base::accessors::testing_pub! {
        /// `sched_update_tick_dependency(rq)`: a NO_HZ_FULL `cpu` needs its tick while more than
        /// one task is runnable there (`sched_can_stop_tick` for a machine of fair tasks: one task
        /// runs to completion without a tick, two need it to share the CPU), so the
        /// [`TICK_DEP_SCHED`](crate::TICK_DEP_SCHED) bit of its `tick_sched` follows
        /// [`Rq::nr_running`](crate::Rq::nr_running). Nothing for a housekeeping CPU.
        #[inline]
        fn sched_update_tick_dependency<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
            if !self.ticks.tick_nohz_full_cpu(cpu) {
                return;
            }
            let ts = self.tick_sched(cpu);
            let needs = self.rq(cpu).nr_running() > 1;
            if needs == (ts.tick_dep_mask() & TICK_DEP_SCHED != 0) {
                return;
            }
            if needs {
                ts.tick_dep_set_cpu(TICK_DEP_SCHED);
            } else {
                ts.tick_dep_clear_cpu(TICK_DEP_SCHED);
            }
            self.tick_dep_changed(cpu, plat);
        }
    }

    /// `tick_dep_set_cpu(cpu, bits)`: something on `cpu` needs its tick (a POSIX CPU timer,
    /// perf, RCU: the kernel's `TICK_DEP_BIT_*`, as [`TICK_DEP_SCHED`](crate::TICK_DEP_SCHED)-style
    /// bits), from any CPU with interrupts off. A NO_HZ_FULL `cpu` whose tick is stopped
    /// restarts it: at once on `cpu` itself (the platform's
    /// [`this_cpu`](crate::platform::CpuState::this_cpu)); from another CPU at `cpu`'s next
    /// interrupt exit, so send it an interrupt (the kernel's `tick_nohz_full_kick_cpu`).
    /// Nothing to do for a housekeeping CPU, whose tick runs whenever it runs a task.
    #[inline]
    pub fn tick_dep_set_cpu<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, bits: u32, plat: &Pl) {
        self.tick_sched(cpu).tick_dep_set_cpu(bits);
        if self.ticks.tick_nohz_full_cpu(cpu) {
            self.tick_dep_changed(cpu, plat);
        }
    }

    /// `tick_dep_clear_cpu(cpu, bits)`: the dependency is gone; a NO_HZ_FULL `cpu` may stop
    /// its tick again, on the same terms as [`tick_dep_set_cpu`](Self::tick_dep_set_cpu).
    #[inline]
    pub fn tick_dep_clear_cpu<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, bits: u32, plat: &Pl) {
        self.tick_sched(cpu).tick_dep_clear_cpu(bits);
        if self.ticks.tick_nohz_full_cpu(cpu) {
            self.tick_dep_changed(cpu, plat);
        }
    }

    /// A NO_HZ_FULL `cpu`'s dependencies changed: on `cpu` itself its tick is re-evaluated at
    /// once (`tick_nohz_full_update_tick`); elsewhere at its next interrupt exit.
    #[inline]
    fn tick_dep_changed<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        if plat.this_cpu().is_none_or(|me| me == cpu) {
            self.ticks.tick_nohz_full_update_tick(&self.cpus, cpu, plat);
        }
    }

    /// `irqtime_account_irq` at the clock's time, reading the clock only while irq time is
    /// accounted (the kernel reads `sched_clock` inside the key's branch): an interrupt path
    /// with irqtime off costs no clock read.
    #[inline(always)]
    fn account_irq_time<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, ended: IrqContext, plat: &Pl) {
        if self.irqtime_enabled() {
            self.irqtime
                .irqtime_account_irq(&self.fair, cpu, ended, plat.ktime_get());
        }
    }

    /// `irq_enter()` on `cpu`: the first thing every interrupt handler does, with interrupts
    /// off. The time since the last accounting call goes to the interrupted task
    /// (`irqtime_account_irq` with `IrqContext::Task`, at
    /// [`ktime_get`](crate::platform::TickHardware::ktime_get)), then `tick_irq_enter`: an
    /// idle or tickless CPU pauses idle-time accounting and, with its tick stopped, catches
    /// jiffies up before the handler reads them.
    ///
    /// Pair every call with [`irq_exit`](Self::irq_exit) on the same CPU; interrupts stay off
    /// in between (the crate does not support nesting).
    #[doc(alias = "irq_enter_rcu")]
    #[doc(alias = "tick_irq_enter")]
    #[inline]
    pub fn irq_enter<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.account_irq_time(cpu, IrqContext::Task, plat);
        self.ticks.tick_nohz_irq_enter(cpu, plat);
    }

    /// `irq_exit()` on `cpu`: the last thing every interrupt handler does, with interrupts
    /// off. The handler's time is accounted as hardirq time; then, if `SCHED_SOFTIRQ` was
    /// raised (its bit in `local_softirq_pending()`), the softirq runs
    /// (`invoke_softirq`: [`sched_balance_softirq`](Self::sched_balance_softirq), accounted as
    /// softirq time); last, `tick_irq_exit`: on a CPU idle without a reschedule pending, or a
    /// NO_HZ_FULL one, `tick_nohz_irq_exit` resumes idle-time accounting or lets a NO_HZ_FULL
    /// tick stop or restart.
    ///
    /// The softirq runs here with interrupts off (the kernel enables them around it); a kernel
    /// that defers softirqs to a thread leaves the crate's bit alone here by running
    /// [`sched_balance_softirq`](Self::sched_balance_softirq) itself before calling this.
    #[doc(alias = "irq_exit_rcu")]
    #[doc(alias = "invoke_softirq")]
    #[doc(alias = "tick_irq_exit")]
    #[inline]
    pub fn irq_exit<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.account_irq_time(cpu, IrqContext::Hardirq, plat);
        if self.rq(cpu).sched_softirq_pending() {
            self.sched_balance_softirq(cpu, plat);
            let softirq = IrqContext::Softirq {
                in_ksoftirqd: false,
            };
            self.account_irq_time(cpu, softirq, plat);
        }
        if (self.rq(cpu).idle_cpu() && !plat.need_resched(cpu))
            || self.ticks.tick_nohz_full_cpu(cpu)
        {
            self.ticks.tick_nohz_irq_exit(&self.cpus, cpu, plat);
        }
    }

    /// Any interrupt on `cpu` other than the sched timer and the nohz kick (a device, a
    /// reschedule IPI), with interrupts off: [`irq_enter`](Self::irq_enter), the kernel's
    /// `handler`, [`irq_exit`](Self::irq_exit). Returns what `handler` returns. The pair every
    /// interrupt entry writes around its handler, in one call that cannot leave it unbalanced;
    /// a kernel whose entry code has separate enter and exit hooks calls the two itself.
    #[inline]
    pub fn interrupt<Pl: TickPlatform<N>, R>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
        handler: impl FnOnce() -> R,
    ) -> R {
        self.irq_enter(cpu, plat);
        let out = handler();
        self.irq_exit(cpu, plat);
        out
    }

    /// The whole interrupt of `cpu`'s sched timer (programmed through
    /// [`TickHardware::program_tick`](crate::platform::TickHardware::program_tick)), with
    /// interrupts off: [`irq_enter`](Self::irq_enter), `tick_nohz_handler`
    /// (`tick_sched_timer`: the jiffies update on the timekeeper, `sched_tick`'s NOHZ tail with
    /// the balance trigger and the kick, the periodic tick re-armed),
    /// [`irq_exit`](Self::irq_exit). Acknowledge the interrupt controller (EOI) before or
    /// after, as the hardware wants.
    ///
    /// It checks that the timer really expired, as the kernel's hrtimer layer does before it
    /// runs a handler: an interrupt before [`tick_expiry`](crate::platform::TickHardware::tick_expiry)
    /// (a clock-event device that fires early: a LAPIC count runs on another clock than the
    /// monotonic one) re-arms the timer for the same expiry and runs no tick; so does an
    /// interrupt of a timer the crate cancelled (a stopped tick with nothing to wake for),
    /// which arrives only if the hardware raised it before the cancel took. Either way the
    /// interrupt's entry and exit run, as for any interrupt, and the result is
    /// [`TimerTick::NotDue`]: the kernel's own per-tick work (time slices, its statistics)
    /// waits for [`TimerTick::Ran`], as the kernel's `update_process_times` runs only inside
    /// the tick.
    #[doc(alias = "tick_nohz_handler")]
    #[doc(alias = "hrtimer_interrupt")]
    pub fn timer_interrupt<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> TimerTick<N> {
        self.irq_enter(cpu, plat);
        let ts = self.tick_sched(cpu);
        let cancelled = ts.tick_stopped() && ts.next_tick() == KTIME_MAX;
        let expiry = plat.tick_expiry(cpu);
        let tick = if cancelled {
            TimerTick::NotDue
        } else if plat.ktime_get() < expiry {
            plat.program_tick(cpu, expiry);
            TimerTick::NotDue
        } else {
            TimerTick::Ran(
                self.ticks
                    .tick_sched_timer(&self.cpus, &self.fair, cpu, plat),
            )
        };
        self.irq_exit(cpu, plat);
        tick
    }

    /// The whole interrupt of the nohz kick IPI (sent through
    /// [`Ipi::send_nohz_ipi`](crate::platform::Ipi::send_nohz_ipi)) on `cpu`, with interrupts
    /// off: [`irq_enter`](Self::irq_enter), the call-function-single handler
    /// ([`flush_smp_call_function_queue`](Self::flush_smp_call_function_queue): the queued
    /// csd, whose handler hands the kick to the softirq), [`irq_exit`](Self::irq_exit), which
    /// runs that softirq's ILB pass.
    ///
    /// Returns `None` for an IPI whose csd an earlier flush already ran (the idle loop's exit,
    /// or the dying CPU's), which the kernel's handler also finds empty; otherwise the kick
    /// flags the csd handed to the softirq: empty if the CPU was no longer idle (the request
    /// is dropped), else the flags of the ILB pass that `irq_exit` ran.
    #[doc(alias = "generic_smp_call_function_single_interrupt")]
    #[doc(alias = "sysvec_call_function_single")]
    pub fn kick_interrupt<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<NohzFlags> {
        self.irq_enter(cpu, plat);
        let handed = self
            .flush_smp_call_function_queue(cpu, plat)
            .then(|| self.rq(cpu).nohz_idle_balance());
        self.irq_exit(cpu, plat);
        handed
    }
}
