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
//! | any other interrupt: first and last thing | [`Machine::irq_enter`], [`Machine::irq_exit`] |
//! | the run queue's counts change | [`Machine::update_nr_running`] |
//! | the scheduler, about to run the idle task | [`Machine::sched_balance_newidle`] |
//! | the idle task's loop | [`Machine::do_idle`] |
//! | taking a CPU down / bringing it back | [`Machine::sched_cpu_deactivate`], [`Machine::cpu_dying`], then [`Machine::cpu_starting`], [`Machine::sched_cpu_activate`] |
//!
//! Everything else on [`Machine`] is the lower level these are made of, public for kernels
//! that already have their own interrupt and softirq plumbing and for tests.

use crate::cpu::CpuId;
use crate::fair::KickDecision;
use crate::fair::rq::NohzFlags;
use crate::irqtime::IrqContext;
use crate::machine::Machine;
use crate::platform::{TickPlatform, tick_nsec};
use crate::policy::Policy;
use crate::tick_sched::TICK_DEP_SCHED;
use crate::tick_sched::forward;

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
        self.tick_nohz_activate(cpu, true);
        let (_, last_update) = plat.jiffies_update();
        let first = forward(last_update, plat.ktime_get(), tick_nsec(Pl::HZ));
        plat.program_tick(cpu, first);
    }

    /// The scheduler changed `cpu`'s run-queue counts (`add_nr_running` / `sub_nr_running`:
    /// a task queued, dequeued, or moved by a balance): publishes `rq->nr_running` and the
    /// fair class's `h_nr_runnable` (the kick looks at both), then
    /// [`sched_update_tick_dependency`](Self::sched_update_tick_dependency). Call it under
    /// the lock that guards the kernel's own run queue, on any CPU.
    #[doc(alias = "add_nr_running")]
    #[doc(alias = "sub_nr_running")]
    #[inline]
    pub fn update_nr_running<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        nr_running: u32,
        h_nr_runnable: u32,
        plat: &Pl,
    ) {
        let rq = self.rq(cpu);
        rq.set_nr_running(nr_running);
        rq.set_h_nr_runnable(h_nr_runnable);
        self.sched_update_tick_dependency(cpu, plat);
    }

    /// `sched_update_tick_dependency(rq)`: a NO_HZ_FULL `cpu` needs its tick while more than
    /// one task is runnable there (`sched_can_stop_tick` for a machine of fair tasks: one task
    /// runs to completion without a tick, two need it to share the CPU), so the
    /// [`TICK_DEP_SCHED`](crate::TICK_DEP_SCHED) bit of its `tick_sched` follows
    /// [`Rq::nr_running`](crate::Rq::nr_running). Nothing for a housekeeping CPU.
    ///
    /// On `cpu` itself the tick stops or restarts at once
    /// ([`tick_nohz_full_update_tick`](Self::tick_nohz_full_update_tick)). From another CPU
    /// only the bit changes: the interrupt that tells `cpu` about its new task (a reschedule
    /// IPI, through [`irq_enter`](Self::irq_enter) and [`irq_exit`](Self::irq_exit)) makes it
    /// look again on its way out, as the kernel's `tick_nohz_full_kick_cpu` does.
    #[inline]
    pub fn sched_update_tick_dependency<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        if !self.tick_nohz_full_cpu(cpu) {
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
        if plat.this_cpu().is_none_or(|me| me == cpu) {
            self.tick_nohz_full_update_tick(cpu, plat);
        }
    }

    /// `irqtime_account_irq` at the clock's time, reading the clock only while irq time is
    /// accounted (the kernel reads `sched_clock` inside the key's branch): an interrupt path
    /// with irqtime off costs no clock read.
    #[inline(always)]
    fn account_irq_time<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, ended: IrqContext, plat: &Pl) {
        if self.irqtime_enabled() {
            self.irqtime_account_irq(cpu, ended, plat.ktime_get());
        }
    }

    /// `irq_enter()` on `cpu`: the first thing every interrupt handler does, with interrupts
    /// off. The time since the last accounting call goes to the interrupted task
    /// (`irqtime_account_irq` with [`IrqContext::Task`], at
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
        self.tick_nohz_irq_enter(cpu, plat);
    }

    /// `irq_exit()` on `cpu`: the last thing every interrupt handler does, with interrupts
    /// off. The handler's time is accounted as hardirq time; then, if `SCHED_SOFTIRQ` was
    /// raised ([`sched_softirq_pending`](Self::sched_softirq_pending)), the softirq runs
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
        if self.sched_softirq_pending(cpu) {
            self.sched_balance_softirq(cpu, plat);
            let softirq = IrqContext::Softirq {
                in_ksoftirqd: false,
            };
            self.account_irq_time(cpu, softirq, plat);
        }
        if (self.rq(cpu).idle_cpu() && !plat.need_resched(cpu)) || self.tick_nohz_full_cpu(cpu) {
            self.tick_nohz_irq_exit(cpu, plat);
        }
    }

    /// The whole interrupt of `cpu`'s sched timer (programmed through
    /// [`TickHardware::program_tick`](crate::platform::TickHardware::program_tick)), with
    /// interrupts off: [`irq_enter`](Self::irq_enter), `tick_nohz_handler`
    /// ([`tick_sched_timer`](Self::tick_sched_timer): the jiffies update on the timekeeper,
    /// `sched_tick`'s NOHZ tail with the balance trigger and the kick, the periodic tick
    /// re-armed), [`irq_exit`](Self::irq_exit). Acknowledge the interrupt controller (EOI)
    /// before or after, as the hardware wants. Returns the kick decision, if the tick got that
    /// far.
    ///
    /// Call it only once the sched timer has expired (`ktime_get() >= tick_expiry(cpu)`): a
    /// clock-event device that fires early (a LAPIC count runs on another clock than the TSC)
    /// is the platform's to re-arm for the remainder, as the kernel's hrtimer layer does.
    /// Called early, the periodic tick is re-armed one period after the expiry it has not
    /// reached, and that tick is lost.
    #[doc(alias = "tick_nohz_handler")]
    #[doc(alias = "hrtimer_interrupt")]
    pub fn timer_interrupt<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<KickDecision<N>> {
        self.irq_enter(cpu, plat);
        let decision = self.tick_sched_timer(cpu, plat);
        self.irq_exit(cpu, plat);
        decision
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
