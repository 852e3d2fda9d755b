//! The traits an embedding kernel implements.
//!
//! C source: what the embedding kernel provides: `jiffies`, `smp_call_function_single_async`, `raise_softirq_irqoff`, `synchronize_rcu`, the scheduling domains, the balancing actions, the timer hardware, cpuidle.
//!
//! # Design
//!
//! The crate decides; the kernel acts. The crate owns the NOHZ bookkeeping (masks, flags,
//! counters, deadlines) and decides whether to kick an idle CPU, which one and with which
//! flags; the kernel owns hardware and the rest of the scheduler, and answers a few narrow
//! questions and performs a few actions through these traits:
//!
//! | trait | kernel side it stands for | called from (context) |
//! |---|---|---|
//! | [`Clock`] | `jiffies`, `HZ` | every path (any context) |
//! | [`CpuState`] | `need_resched()`, `smp_processor_id()`, `synchronize_rcu()` | `need_resched` / `this_cpu`: the tick, idle, softirq and newidle paths (IRQs off); `synchronize_rcu`: hotplug and domain rebuilds only (process context, may sleep) |
//! | [`Ipi`] | `smp_call_function_single_async(cpu, &rq->nohz_csd)` | `kick_ilb`, from the busy CPU's scheduler tick (IRQs off) |
//! | [`Softirq`] | `raise_softirq_irqoff(SCHED_SOFTIRQ)` (a notification: the crate keeps the pending bit) | the balance trigger (tick) and the csd handler (IPI): IRQs off |
//! | [`Topology`] | `rq->sd`, `sd_llc`, `sd_asym_packing`, `sd_asym_cpucapacity`, capacities | domain builds (init, rebuild, hotplug: process context); the asymmetry questions also on the kick's due path (IRQs off) |
//! | [`Balance`] | `sched_balance_update_blocked_averages()`, `sched_balance_domains()`, the newidle walk | the softirq's ILB pass and the idle path (softirq or IRQs-off context; take the target's rq lock inside) |
//! | [`TickHardware`] | the sched timer, the timer wheel, timekeeping, softirq and task tick dependencies | tick-sched's paths: the idle loop and interrupt entry/exit, IRQs off |
//! | [`IdleHooks`] | `cpu_idle_poll`, the cpuidle governor and states, `arch_cpu_idle_dead` | `do_idle` only, on the idling CPU |
//! | [`MaySleep`] | a context that may sleep | the irqtime key's disabling |
//!
//! **The calling contract.** The crate holds no lock of its own, so no platform method is
//! ever called with a crate lock held, and every method may be called from any CPU at the same
//! time as others. Each method runs in the context of the entry point that called it: the
//! scheduler tick, the nohz IPI, `SCHED_SOFTIRQ` and the idle loop run with interrupts off and
//! must not sleep, so none of their callbacks may; only `synchronize_rcu` (from
//! `sched_cpu_deactivate`, `sched_cpu_activate` and `rebuild_sched_domains`, which a kernel
//! calls from process context) may block. A method that the kernel answers from state it
//! changes under a lock (the rq lock for blocked load, the domain mutex for the topology) takes
//! that lock itself, inside the call.
//!
//! **What a kernel must write.** Fourteen methods have no default, because only the kernel
//! knows the answer: [`Clock::jiffies`]; [`CpuState::need_resched`], [`CpuState::this_cpu`],
//! [`CpuState::synchronize_rcu`]; [`Ipi::send_nohz_ipi`];
//! [`Balance::balance_domains`], [`Balance::newidle_balance`]; [`TickHardware::ktime_get`],
//! [`TickHardware::jiffies_update`], [`TickHardware::update_jiffies`],
//! [`TickHardware::program_tick`], [`TickHardware::cancel_tick`],
//! [`TickHardware::tick_expiry`]; [`IdleHooks::cpuidle_enter`]. Every other method has a
//! default that stands for a kernel without the facility it asks about (no cpusets or
//! isolation, no load tracking, no timer wheel, no other softirq, a clocksource that never
//! wraps, no cpuidle driver, no polling idle, one last-level cache shared by every CPU), and
//! its docs say what to answer otherwise.
//! `impl Softirq<N> for MyKernel {}` (and `Topology`'s likewise) is a complete implementation: the crate keeps the
//! `SCHED_SOFTIRQ` bit and [`Machine::irq_exit`](crate::Machine::irq_exit) runs it.
//!
//! [`Platform`] is all of them together, implemented automatically.
//!
//! The idle predicate `idle_cpu()` is deliberately *not* a platform call: it is computed from
//! runqueue fields the kernel keeps current (spec §2.5), so the crate and its models see the
//! same racy reads the kernel makes.
//!
//! Every method takes `&self` and may be called from any CPU concurrently; CPU arguments are
//! [`CpuId`]s already checked against `nr_cpu_ids`. The workspace crate `nohz-testing` ships a
//! recording host implementation for tests, loom models, the harness and the benches.

use crate::cpu::CpuId;
use crate::jiffies::{Jiffies, msecs_to_jiffies};
use core::num::NonZeroU32;

/// Time as the scheduler sees it: the jiffies counter and its rate.
///
/// **Who owns jiffies.** The kernel does: one counter (a [`JiffiesCell`](crate::JiffiesCell)
/// is a ready one), advanced only by the kernel's `tick_do_update_jiffies64`, which the crate
/// calls as [`TickHardware::update_jiffies`] (from the timekeeper's tick and from a CPU
/// waking from a long tickless idle). Three methods see it and must agree:
/// [`Clock::jiffies`] reads the counter, [`TickHardware::update_jiffies`] advances it (and
/// records when: the time of the last jiffy it accounted, on the jiffies grid), and
/// [`TickHardware::jiffies_update`] returns the counter with that time, read consistently
/// (under the lock or seqcount the update takes). Nothing else may move the counter.
pub trait Clock {
    /// Ticks per second (`HZ`), a build constant of the kernel. Must not be 0 (checked at
    /// compile time where it is used).
    const HZ: u32 = 1000;

    /// The current jiffies (`READ_ONCE(jiffies)`), from any CPU in any context (a racy read
    /// of the counter [`TickHardware::update_jiffies`] advances; must not sleep or lock).
    fn jiffies(&self) -> Jiffies;

    /// `msecs_to_jiffies(ms)` at this clock's `HZ`, rounding up.
    #[inline]
    fn msecs_to_jiffies(&self, ms: u32) -> usize {
        let hz = const {
            match NonZeroU32::new(Self::HZ) {
                Some(hz) => hz,
                None => panic!("Clock::HZ must not be zero"),
            }
        };
        msecs_to_jiffies(ms, hz)
    }
}

/// Per-CPU scheduler state that lives outside the crate.
pub trait CpuState<const N: usize> {
    /// `need_resched()` as seen on `cpu`: a task is waiting to run there. Asked about `cpu`
    /// on `cpu` itself (the idle loop, the tick-stop checks, `tick_irq_exit`; interrupts off),
    /// so a per-CPU flag read without a lock is enough; must not sleep. The idle loop runs
    /// until it answers `true`: whatever wakes the CPU (a task pulled to it, a wakeup) must
    /// set it before the interrupt that ends the idle state.
    fn need_resched(&self, cpu: CpuId<N>) -> bool;

    /// `smp_processor_id()`: the CPU the caller runs on. Paths the kernel runs only on their
    /// own CPU (the tick, the csd handler, the softirq, idle entry and exit) count a
    /// [`Warning::WrongCpu`](crate::Warning) when it differs from the CPU they were asked to act
    /// for. Required, so that turning the check off is a choice: answer `None` only where the
    /// caller cannot tell (a test rig driving every CPU from one thread), which skips it.
    ///
    /// Called from every entry point that runs on its own CPU (interrupts off); must not sleep.
    #[doc(alias = "smp_processor_id")]
    fn this_cpu(&self) -> Option<CpuId<N>>;

    /// `synchronize_rcu()`: returns once every CPU has left any NOHZ path it was in when the
    /// call started, and what those paths wrote is visible to the caller.
    ///
    /// Called by [`Machine::sched_cpu_deactivate`](crate::Machine::sched_cpu_deactivate) in process
    /// context (it may sleep), after the dying CPU left the idle mask and went inactive, so that
    /// no kicker that could still see the CPU in the mask is running when it returns. Every
    /// crate path that picks or kicks an idle CPU (the scheduler tick, `kick_ilb`, the csd
    /// handler, the ILB pass) runs with interrupts off, which is an RCU read-side section in
    /// the kernel.
    ///
    /// A kernel without RCU provides the same guarantee some other way: for example, wait until
    /// every other online CPU has taken an interrupt or passed through a context switch or
    /// idle (each is a point outside every such path), or send every online CPU an IPI and
    /// wait for each to acknowledge it. On a kernel with a single CPU it may return at once.
    /// Returning early breaks the guarantee above: a kicker may still IPI the dying CPU after
    /// deactivation returned.
    fn synchronize_rcu(&self);
}

/// Cross-CPU calls.
pub trait Ipi<const N: usize> {
    /// Sends the nohz kick to `target` (`smp_call_function_single_async(target,
    /// &rq->nohz_csd)`), fire-and-forget. `from` is the kicking CPU, which calls this from its
    /// scheduler tick with interrupts off: must not sleep or wait for the target. The
    /// target's interrupt handler must call [`Machine::kick_interrupt`](crate::Machine::kick_interrupt)
    /// (or, inside the kernel's own irq entry and exit,
    /// [`Machine::flush_smp_call_function_queue`](crate::Machine::flush_smp_call_function_queue)).
    ///
    /// **Ordering.** The interrupt must not overtake the caller's earlier stores (the kick
    /// bits and the csd's busy flag): the handler reads them. An xAPIC ICR write (uncached
    /// MMIO) is ordered after them; an x2APIC `wrmsr` is not, and needs a full fence first
    /// (as the kernel's `weak_wrmsr_fence`).
    ///
    /// **Eliding it.** A target that is polling in its idle loop
    /// ([`IdleHooks::poll_idle`]) may be woken instead by setting its `need_resched` (the
    /// kernel's `set_nr_if_polling`), provided the poll loop clears its polling state with a
    /// full fence before it returns: [`Machine::do_idle`](crate::Machine::do_idle) then runs
    /// the queued csd on its way out.
    #[doc(alias = "smp_call_function_single_async")]
    fn send_nohz_ipi(&self, from: CpuId<N>, target: CpuId<N>);
}

/// Softirqs.
///
/// The crate keeps each CPU's `SCHED_SOFTIRQ` pending bit itself
/// (its bit of `local_softirq_pending()`):
/// [`Machine::irq_exit`](crate::Machine::irq_exit) runs the softirq when it is set, and the idle
/// path's pending-softirq check (`can_stop_idle_tick`) adds it to
/// [`TickHardware::local_softirq_pending`]'s bits, as the kernel's `local_softirq_pending()`
/// includes it: a CPU that reaches idle with it pending keeps its tick and counts
/// [`Warning::IdleSoftirqPending`](crate::Warning). A kernel with its own softirq machinery (ksoftirqd,
/// `raise_softirq_irqoff`) overrides this method to raise its softirq too, and calls
/// [`Machine::sched_balance_softirq`](crate::Machine::sched_balance_softirq) from its handler,
/// which clears the crate's bit first (so a later `irq_exit` does not run it again).
pub trait Softirq<const N: usize> {
    /// `SCHED_SOFTIRQ` was raised on `cpu`, the calling CPU (`raise_softirq_irqoff`), with
    /// interrupts off, from the scheduler tick or the nohz csd handler. The crate has already
    /// set its pending bit; by default nothing else happens, and `irq_exit` runs the softirq.
    #[doc(alias = "raise_softirq_irqoff")]
    #[inline]
    fn raise_sched_softirq(&self, _cpu: CpuId<N>) {}
}

/// `SCHED_CAPACITY_SCALE`: the capacity of the biggest CPU at its highest frequency.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;

/// Scheduling-domain facts. The crate reads them when it builds or rebuilds its per-LLC state
/// (at init and on hotplug); of them, only the asymmetry questions
/// ([`has_asym_packing`](Self::has_asym_packing), [`asym_prefers`](Self::asym_prefers),
/// [`has_asym_cpucapacity`](Self::has_asym_cpucapacity)) are asked on the balancer kick's slow
/// path too (the busy tick, interrupts off); each method says which.
pub trait Topology<const N: usize> {
    /// Whether `cpu` has a base scheduling domain (`rq->sd != NULL`): it takes part in load
    /// balancing. `false` for isolated CPUs (`isolcpus=domain`) and for a partition of one CPU;
    /// such CPUs never register as idle and are never kicked. Read when the domains are built
    /// (init, hotplug, rebuilds; process context). The default, `true` for every CPU, is one
    /// balancing domain over the whole machine, which is what a kernel without cpusets or
    /// isolation has.
    #[inline]
    fn has_sched_domain(&self, _cpu: CpuId<N>) -> bool {
        true
    }

    /// The lowest-numbered CPU of `cpu`'s last-level-cache domain (`sd_llc_id`, the first CPU
    /// of the `sd_llc` span), or `None` if it has no LLC domain. Every CPU of one LLC names the
    /// same CPU, which names itself. Read when the domains are built (init, hotplug, rebuilds;
    /// process context), never on a hot path. The default, CPU 0 for every CPU, is a machine
    /// whose CPUs all share one cache, as a small SMP system's do.
    ///
    /// Answering with the hardware's cache topology is enough: when it builds the domains the
    /// crate applies the kernel's rules on top. A CPU without a base domain
    /// ([`has_sched_domain`](Self::has_sched_domain) `false`) is in no LLC domain and does not
    /// count in its LLC's span, and an LLC domain that spans a single CPU is degenerate and
    /// dropped, as `sd_degenerate` drops it: that CPU has no `sd_llc` and its idle entry and
    /// exit never touch a shared busy count.
    #[doc(alias = "sd_llc")]
    #[doc(alias = "sd_llc_id")]
    #[doc(alias = "sd_degenerate")]
    #[inline]
    fn llc_leader(&self, _cpu: CpuId<N>) -> Option<CpuId<N>> {
        // A CPU id exists only on a machine with at least one CPU: CPU 0 is one of its CPUs.
        Some(CpuId::from_scan(0))
    }

    /// `arch_scale_cpu_capacity(cpu)`: the CPU's capacity with nothing taken away. Read only
    /// when the domains are built (init, hotplug, rebuilds; process context), for every CPU:
    /// the crate keeps the answer with that domain generation, and the busy tick's
    /// `check_cpu_capacity` reads the kept value, so a kernel whose capacities change at run
    /// time (as arm64's do when cpufreq learns them) rebuilds the domains after the change,
    /// as the kernel does. The default, [`SCHED_CAPACITY_SCALE`], is a machine of identical
    /// CPUs.
    #[doc(alias = "arch_scale_cpu_capacity")]
    fn arch_capacity(&self, _cpu: CpuId<N>) -> u64 {
        SCHED_CAPACITY_SCALE
    }

    /// `rq->sd->imbalance_pct` of `cpu`'s base domain (117 unless the kernel tuned it). Read
    /// only when the domains are built (process context), for every CPU, and kept with that
    /// domain generation as the kernel keeps it in the domain: the busy tick's
    /// `check_cpu_capacity` reads the kept value and never calls this.
    fn imbalance_pct(&self, _cpu: CpuId<N>) -> u32 {
        117
    }

    /// Whether `cpu` has an `SD_ASYM_PACKING` domain (`sd_asym_packing`), read on the busy
    /// tick's kick slow path (interrupts off). The default, `false`, is a machine without
    /// SMT or core priorities (ITMT).
    #[doc(alias = "sd_asym_packing")]
    fn has_asym_packing(&self, _cpu: CpuId<N>) -> bool {
        false
    }

    /// `sched_asym(sd_asym_packing(src), dst, src)`: `dst` is in `src`'s asym-packing domain,
    /// may use asym priority there, and has a higher priority than `src`. Asked on the busy
    /// tick's kick slow path (interrupts off), only when
    /// [`has_asym_packing`](Self::has_asym_packing) is true.
    #[doc(alias = "sched_asym")]
    fn asym_prefers(&self, _dst: CpuId<N>, _src: CpuId<N>) -> bool {
        false
    }

    /// Whether `cpu` has an `SD_ASYM_CPUCAPACITY` domain (`sd_asym_cpucapacity`). Read on the
    /// balancer kick's slow path, and when the domains are built (init, rebuild), where the
    /// crate derives the system-wide `sched_asym_cpucapacity` key from it: on while any CPU
    /// with a base domain answers true. The default, `false`, is a machine of identical CPUs.
    #[doc(alias = "sd_asym_cpucapacity")]
    fn has_asym_cpucapacity(&self, _cpu: CpuId<N>) -> bool {
        false
    }
}

/// `enum cpu_idle_type`: why a balance pass runs.
#[doc(alias = "cpu_idle_type")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CpuIdleType {
    /// `__CPU_NOT_IDLE`: the CPU is busy.
    NotIdle = 0,
    /// `CPU_IDLE`: the CPU is idle (the value `rq->idle_balance == 1` stands for).
    Idle = 1,
    /// `CPU_NEWLY_IDLE`: the CPU is about to go idle.
    NewlyIdle = 2,
}

/// What the kernel's newidle domain walk (`sched_balance_newidle`) reports back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewidleOutcome {
    /// A task was pulled to this CPU, or the CPU will not go idle for one of the two other
    /// reasons the kernel folds into the same result after the walk, with the rq lock taken
    /// back:
    /// - a fair task was queued on this rq while the walk ran with the lock dropped (the
    ///   `this_rq->cfs.h_nr_queued` recheck: the kernel pretends it pulled one);
    /// - a task of a higher class was queued meanwhile (`nr_running != cfs.h_nr_queued`: the
    ///   kernel returns `pulled_task = -1`, and its caller picks again).
    ///
    /// Report `true` for all three: each keeps the CPU out of idle, so no newidle blocked-load
    /// refresh (`nohz_newidle_balance`) is requested.
    pub pulled_task: bool,
    /// The earliest balance deadline of the domains walked, if any was seen; the crate pulls
    /// `rq.next_balance` in to it (or to `jiffies + HZ`, whichever is earlier).
    pub next_balance: Option<Jiffies>,
}

impl NewidleOutcome {
    /// The outcome of a walk that saw no balance deadline: pulled a task (or will not go idle,
    /// see [`pulled_task`](Self::pulled_task)) or not.
    #[inline]
    pub const fn pulled(pulled_task: bool) -> Self {
        NewidleOutcome {
            pulled_task,
            next_balance: None,
        }
    }
}

/// What `sched_balance_newidle` reads of a CPU's base domain before it decides to walk the
/// domains: the walk runs only when the root domain is overloaded and the CPU expects to be
/// idle for at least as long as a walk of that domain has cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewidleDomain {
    /// `get_rd_overloaded(rq->rd)`: some CPU of the root domain has more than one runnable
    /// task, so there may be something to pull.
    pub rd_overloaded: bool,
    /// `sd->max_newidle_lb_cost` of the base domain: the most a newidle walk of it has
    /// cost lately, in nanoseconds. The crate compares it with
    /// [`Rq::avg_idle`](crate::Rq::avg_idle).
    pub max_newidle_lb_cost: u64,
    /// The base domain's next balance (`sd->last_balance` plus its interval, what
    /// `update_next_balance` computes), if the kernel keeps one: when the walk is skipped the
    /// crate pulls `rq.next_balance` in to it (or to `jiffies + HZ`, whichever is earlier).
    pub next_balance: Option<Jiffies>,
}

impl NewidleDomain {
    /// A kernel that keeps neither the root domain's overload flag nor walk costs: every
    /// newidle pass walks.
    pub const ALWAYS_WALK: Self = Self {
        rd_overloaded: true,
        max_newidle_lb_cost: 0,
        next_balance: None,
    };
}

/// The balancing actions the crate asks for; the kernel does the work and reports back.
pub trait Balance<const N: usize> {
    /// `sched_balance_update_blocked_averages(cpu)`, run by `by`: decays `cpu`'s blocked load
    /// and returns whether any remains. Asked by the ILB pass for each idle CPU it refreshes
    /// (`by` the ILB), by the softirq for its own CPU, and by newidle before its domain walk
    /// (`by == cpu`, interrupts off).
    ///
    /// **What the platform does.** Under `cpu`'s rq lock, during this call: update the rq
    /// clock, decay the RT, DL, IRQ and pressure averages and the CFS ones (notifying cpufreq
    /// if anything decayed), and answer `true` if anything non-zero is left. The owning CPU
    /// must enqueue and dequeue load under that same lock, as the kernel does: that is what
    /// the argument below rests on. Whether the lock is still held when this returns does not
    /// matter.
    ///
    /// **What it must not do.** Touch `rq.has_blocked_load` or `last_blocked_load_update_tick`:
    /// the crate stamps the tick before the call and, on `false`, does
    /// `update_blocked_load_status`'s clear itself after the call. Nor answer `false` while
    /// load it saw remains (that CPU would then be skipped until it next enters idle).
    ///
    /// **Why clearing after the lock is dropped is safe.** The crate reads the flag's set
    /// count before the call, and its clear covers only the sets up to that reading: a set
    /// `cpu` makes after it keeps the flag (every set counts one higher, and the count is
    /// never reset). The kernel clears under the lock so that an unlocked set for load the
    /// decay did not see is never erased. Here a set the clear covers is one the reading saw;
    /// its load was left on the rq under the lock before the set, and the decay's critical
    /// section ends after the reading, so it cannot have come before that: the decay saw the
    /// load. So it no longer matters whether the platform still holds the lock when the crate
    /// clears. The outcome is the kernel's, except that a set landing during the decay, whose
    /// load the decay saw and found gone, keeps the flag one pass longer (one extra decay,
    /// never a lost one). Details in `src/fair/rq.rs`.
    ///
    /// **Without load tracking.** A kernel that keeps no decaying averages (no PELT) has no
    /// blocked load: the default answers `false`, so each CPU's flag clears at its first
    /// decay pass and the ILB pass stops visiting it for blocked load.
    #[doc(alias = "sched_balance_update_blocked_averages")]
    #[inline]
    fn update_blocked_averages(&self, _by: CpuId<N>, _cpu: CpuId<N>) -> bool {
        false
    }

    /// `update_rq_clock(rq)` under `cpu`'s rq lock, run by `by` (the ILB pass, softirq
    /// context), before it balances for `cpu`. A kernel whose `balance_domains` reads the
    /// clock itself has nothing to do here (the default).
    #[inline]
    fn update_rq_clock(&self, _by: CpuId<N>, _cpu: CpuId<N>) {}

    /// `sched_balance_domains(cpu_rq(cpu), idle)`, run by `by` on `cpu`'s behalf: may pull
    /// tasks to `cpu`. Returns `cpu`'s rq's new `next_balance`.
    ///
    /// **Who runs it and what to lock.** `by` is the CPU running the call: `cpu` itself from
    /// its own softirq (`idle` is [`CpuIdleType::NotIdle`] or [`CpuIdleType::Idle`]), or the
    /// idle load balancer in its ILB pass balancing for an idle `cpu` (`by != cpu`,
    /// [`CpuIdleType::Idle`]). Softirq context: take the run-queue locks it moves tasks
    /// between (`cpu`'s and the busiest's) inside the call, and wake `cpu` (set its
    /// `need_resched`, send it a reschedule IPI when `by != cpu`) if a task was pulled to it.
    #[doc(alias = "sched_balance_domains")]
    fn balance_domains(&self, by: CpuId<N>, cpu: CpuId<N>, idle: CpuIdleType) -> Jiffies;

    /// What `sched_balance_newidle` on `cpu` reads of its base domain to decide whether to
    /// walk the domains ([`NewidleDomain`]). Asked on `cpu` (which has a domain, is active and
    /// has no wakeup pending) by
    /// [`Machine::sched_balance_newidle`](crate::Machine::sched_balance_newidle), interrupts
    /// off, under RCU in the kernel: read the domain without sleeping.
    ///
    /// The default, [`NewidleDomain::ALWAYS_WALK`], is a kernel that keeps neither the root
    /// domain's overload flag nor walk costs: every pass refreshes the CPU's blocked load and
    /// walks. Answering "overloaded" when nothing is, or a cost of 0, costs a refresh and a
    /// walk that pulls nothing; answering "not overloaded" while a CPU has tasks to spare
    /// leaves this CPU idle until the next periodic or ILB balance.
    #[doc(alias = "get_rd_overloaded")]
    #[doc(alias = "max_newidle_lb_cost")]
    #[inline]
    fn newidle_domain(&self, _cpu: CpuId<N>) -> NewidleDomain {
        NewidleDomain::ALWAYS_WALK
    }

    /// `sched_clock_cpu(cpu)`: the clock newidle's walk costs are measured on, in
    /// nanoseconds. Read on `cpu` by
    /// [`Machine::sched_balance_newidle`](crate::Machine::sched_balance_newidle), interrupts
    /// off, once a walk is decided and before the blocked-load refresh, and handed to
    /// [`newidle_balance`](Self::newidle_balance) as `t0`: the start of the first domain's
    /// cost window (see there).
    ///
    /// The default, 0, is a kernel that measures no newidle cost (its
    /// [`newidle_domain`](Self::newidle_domain) answers a `max_newidle_lb_cost` of 0, or none
    /// at all): `t0` is then 0 and means nothing. A kernel that keeps
    /// `max_newidle_lb_cost` answers from the clock its walk reads after each domain.
    #[inline]
    fn sched_clock_cpu(&self, _cpu: CpuId<N>) -> u64 {
        0
    }

    /// The domain walk of `sched_balance_newidle` on `cpu`: tries to pull a task and reports
    /// the outcome. The crate asks for it only when [`newidle_domain`](Self::newidle_domain)
    /// allows a walk, and only after it refreshed `cpu`'s blocked averages
    /// ([`update_blocked_averages`](Self::update_blocked_averages) with `by == cpu`, the
    /// kernel's `__sched_balance_update_blocked_averages(this_rq)`); it does the NOHZ-visible
    /// rest itself (misfit reset, `next_balance`, `nohz_newidle_balance`). Without a walk
    /// nothing is pulled.
    ///
    /// **The cost window.** `t0` is [`sched_clock_cpu`](Self::sched_clock_cpu) read *before*
    /// that refresh, as the kernel takes `t0 = sched_clock_cpu(this_cpu)` before
    /// `sched_balance_update_blocked_averages`: the first domain's cost (`t1 - t0`, with `t1`
    /// read after balancing it) includes the refresh, and so do `curr_cost` and what
    /// `update_newidle_cost` folds into that domain's `max_newidle_lb_cost` (the value
    /// [`newidle_domain`](Self::newidle_domain) answers next time). A walk that measured from
    /// its own start would leave the refresh out, report cheaper walks than the kernel's, and
    /// so walk more often. Each later domain's window starts where the previous one ended, and
    /// `update_newidle_cost` raises a domain's maximum to a larger cost or else decays it by
    /// 253/256 at most once a second, as in the kernel. A kernel without cost tracking ignores
    /// `t0`.
    ///
    /// Called on `cpu` by [`Machine::sched_balance_newidle`](crate::Machine::sched_balance_newidle),
    /// from the scheduler as the CPU is about to run its idle task (interrupts off, `cpu`'s rq
    /// lock not held by the crate: take the locks the pull needs inside).
    #[doc(alias = "sched_balance_newidle")]
    #[doc(alias = "update_newidle_cost")]
    fn newidle_balance(&self, cpu: CpuId<N>, t0: u64) -> NewidleOutcome;
}

/// Everything the NOHZ code needs from the kernel, in one bound.
pub trait Platform<const N: usize>:
    Clock + CpuState<N> + Ipi<N> + Softirq<N> + Topology<N> + Balance<N>
{
}

impl<T, const N: usize> Platform<N> for T where
    T: Clock + CpuState<N> + Ipi<N> + Softirq<N> + Topology<N> + Balance<N>
{
}

/// `KTIME_MAX`: "never" on the tick side's nanosecond clock.
pub const KTIME_MAX: u64 = i64::MAX as u64;

/// `NSEC_PER_SEC`.
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// `TICK_NSEC` for a clock of `hz` ticks per second: the tick period in nanoseconds, rounded to
/// the nearest nanosecond.
#[doc(alias = "TICK_NSEC")]
pub const fn tick_nsec(hz: u32) -> u64 {
    let hz = if hz == 0 { 1 } else { hz as u64 };
    (NSEC_PER_SEC + hz / 2) / hz
}

/// Softirq numbers (`enum { HI_SOFTIRQ, ... }`), as bits of
/// [`TickHardware::local_softirq_pending`].
pub mod softirq {
    /// `TIMER_SOFTIRQ`.
    pub const TIMER: u32 = 1 << 1;
    /// `IRQ_POLL_SOFTIRQ`.
    pub const IRQ_POLL: u32 = 1 << 5;
    /// `SCHED_SOFTIRQ`.
    pub const SCHED: u32 = 1 << 7;
    /// `HRTIMER_SOFTIRQ`.
    pub const HRTIMER: u32 = 1 << 8;
    /// `RCU_SOFTIRQ`.
    pub const RCU: u32 = 1 << 9;
    /// `SOFTIRQ_HOTPLUG_SAFE_MASK`: softirqs a CPU going down may leave pending and still stop
    /// its tick.
    #[doc(alias = "SOFTIRQ_HOTPLUG_SAFE_MASK")]
    pub const HOTPLUG_SAFE_MASK: u32 = TIMER | IRQ_POLL | HRTIMER | RCU;
}

/// The timer hardware and timekeeping facts tick-sched needs (spec §7). Times are `u64`
/// nanoseconds of the monotonic clock; [`KTIME_MAX`] is "never".
///
/// Of its methods, six are required (the clock, jiffies' update, and the sched timer); the
/// rest have defaults that describe a kernel without the facility (no timer wheel, no RCU
/// callbacks needing the tick, a clocksource that never wraps, no vtime, no softirq but the
/// crate's), each saying so.
pub trait TickHardware<const N: usize> {
    /// `ktime_get()`: now, in nanoseconds of a monotonic clock shared by all CPUs (a
    /// synchronized TSC, say), from any CPU with interrupts off; must not sleep. It also
    /// times irq accounting ([`Machine::irq_enter`](crate::Machine::irq_enter)).
    fn ktime_get(&self) -> u64;

    /// `get_jiffies_update()`: jiffies and the time of its last update, read consistently
    /// (see "Who owns jiffies" at [`Clock`]), from any CPU with interrupts off.
    #[doc(alias = "get_jiffies_update")]
    fn jiffies_update(&self) -> (Jiffies, u64);

    /// `tick_do_update_jiffies64(now)`: catch jiffies up to `now`: if at least one tick
    /// period passed since the last update, advance the counter by the whole periods passed
    /// and move the update time on by as many periods (see "Who owns jiffies" at [`Clock`]).
    /// Called with interrupts off by the timekeeper's tick and by any CPU whose stopped tick
    /// an interrupt ends; two CPUs may call it at once, so it serialises itself (a spin lock
    /// or the kernel's `jiffies_lock`), and a call finding nothing to do returns at once.
    #[doc(alias = "tick_do_update_jiffies64")]
    fn update_jiffies(&self, now: u64);

    /// Something needs `cpu`'s tick in the next period: RCU, the architecture, irq_work, or a
    /// pending timer softirq. Asked on `cpu` when its tick may stop (idle or NO_HZ_FULL,
    /// interrupts off). The default, `false`, is a kernel with none of them.
    #[inline]
    fn cpu_needs_tick(&self, _cpu: CpuId<N>) -> bool {
        false
    }

    /// `get_next_timer_interrupt(basej, basem)`: the next timer expiry on `cpu` (the timer
    /// wheel, and hrtimers in low-resolution mode), or [`KTIME_MAX`]. Never before `basem`: a
    /// timer already expired is due at `basem`, as the timer wheel reports it. An earlier
    /// answer is counted as a [`Warning::NextTimerInPast`](crate::Warning) and taken as `basem`.
    ///
    /// Asked on `cpu` when its tick may stop (interrupts off). The default, [`KTIME_MAX`], is a
    /// kernel without a timer wheel: nothing but the tick itself ever wakes the CPU, so an idle
    /// CPU's tick stops until an interrupt arrives (a kick, a wakeup IPI).
    #[doc(alias = "get_next_timer_interrupt")]
    #[inline]
    fn next_timer_interrupt(&self, _cpu: CpuId<N>, _basej: Jiffies, _basem: u64) -> u64 {
        KTIME_MAX
    }

    /// `timer_base_try_to_set_idle()` for a tick not yet stopped: `Some(next expiry)` if the
    /// timer base went idle, `None` if it refused (a timer is due), which keeps the tick.
    /// Asked on `cpu` as the idle tick stops (interrupts off). The default is a timer base that
    /// always goes idle, with [`next_timer_interrupt`](Self::next_timer_interrupt)'s answer.
    #[inline]
    fn timer_base_try_to_set_idle(&self, cpu: CpuId<N>, basej: Jiffies, basem: u64) -> Option<u64> {
        Some(self.next_timer_interrupt(cpu, basej, basem))
    }

    /// `timer_clear_idle()`: the timer base is busy again (the tick restarts or the idle
    /// period ends, on `cpu`, interrupts off). Nothing to do without a timer base (the default).
    #[inline]
    fn timer_clear_idle(&self, _cpu: CpuId<N>) {}

    /// `timekeeping_max_deferment()`: how long timekeeping may go without a tick, in
    /// nanoseconds (the clocksource's `max_idle_ns`: how long before the counter wraps or the
    /// conversion overflows). The default, [`KTIME_MAX`], is a clocksource that never wraps (a
    /// 64-bit TSC read as nanoseconds).
    #[inline]
    fn timekeeping_max_deferment(&self) -> u64 {
        KTIME_MAX
    }

    /// Programs `cpu`'s sched timer (the one-shot tick) to fire at `expires` (absolute
    /// [`ktime_get`](Self::ktime_get) time; already past means at once). Called on `cpu` with
    /// interrupts off: by the timer interrupt to re-arm the periodic tick (one period on, on
    /// the old phase), when the idle or NO_HZ_FULL tick stops (the next event) and when it
    /// restarts. A later call replaces the earlier expiry. The timer's interrupt must call
    /// [`Machine::timer_interrupt`](crate::Machine::timer_interrupt).
    #[doc(alias = "tick_program_event")]
    #[doc(alias = "hrtimer_start")]
    fn program_tick(&self, cpu: CpuId<N>, expires: u64);

    /// Cancels `cpu`'s sched timer (a stopped tick with nothing to wake for), on `cpu` with
    /// interrupts off. No timer interrupt until the next [`program_tick`](Self::program_tick).
    #[doc(alias = "hrtimer_cancel")]
    fn cancel_tick(&self, cpu: CpuId<N>);

    /// `hrtimer_get_expires(&ts->sched_timer)`: when `cpu`'s sched timer is set to fire: the
    /// last expiry programmed, kept after a cancel (as the hrtimer keeps it), and before the
    /// first [`program_tick`](Self::program_tick) the periodic tick's next expiry. Read on
    /// `cpu` (interrupts off) to re-arm the periodic tick one period on and when the tick
    /// stops (to restart it on the same phase later). The crate does not keep it itself, so
    /// that a timer moved behind its back shows ([`Warning::TickNotProgrammed`](crate::Warning)):
    /// answer from the timer hardware or subsystem, not from a copy of the last call.
    #[doc(alias = "hrtimer_get_expires")]
    fn tick_expiry(&self, cpu: CpuId<N>) -> u64;

    /// `local_softirq_pending()` on `cpu`, as [`softirq`] bits, besides `SCHED_SOFTIRQ`, whose
    /// bit the crate keeps itself ([`Softirq`]) and adds to this answer: a CPU with either
    /// pending keeps its idle tick. Asked on `cpu` as its idle tick may stop (interrupts off).
    /// The default, 0, is a kernel with no other softirq.
    #[inline]
    fn local_softirq_pending(&self, _cpu: CpuId<N>) -> u32 {
        0
    }

    /// `local_bh_blocked()` on `cpu` (PREEMPT_RT): a task holding the bottom-half lock is
    /// blocked, so pending softirqs wait for that lock, not for the tick, and
    /// `can_stop_idle_tick` lets the tick stop without a warning. Asked on `cpu` as its idle
    /// tick may stop (interrupts off). Always false without PREEMPT_RT (the default).
    fn local_bh_blocked(&self, _cpu: CpuId<N>) -> bool {
        false
    }

    /// The tick dependencies of the task running on `cpu` and its signal group
    /// (`current->tick_dep_mask | current->signal->tick_dep_mask`), as [`TICK_DEP_SCHED`](crate::TICK_DEP_SCHED)-style
    /// bits. Asked on a NO_HZ_FULL `cpu` as its busy tick may stop (interrupts off). The
    /// default, 0, is a kernel without per-task dependencies (POSIX CPU timers, perf).
    fn task_tick_dependencies(&self, _cpu: CpuId<N>) -> u32 {
        0
    }

    /// `vtime_accounting_enabled_this_cpu()`: idle time is accounted by vtime, not ticks.
    /// Asked on `cpu` as its idle period ends (interrupts off); default `false`.
    #[doc(alias = "vtime_accounting_enabled_this_cpu")]
    fn vtime_accounting(&self, _cpu: CpuId<N>) -> bool {
        false
    }

    /// `account_idle_ticks(ticks)` on `cpu`, as its tickless idle period ends (interrupts
    /// off): the ticks the stopped tick skipped, for the kernel's cputime. Default: nothing.
    fn account_idle_ticks(&self, _cpu: CpuId<N>, _ticks: usize) {}

    /// `nr_iowait_cpu(cpu) > 0`: idle time counts as iowait. Asked on `cpu` as idle-time
    /// accounting stops (interrupts off); default `false`.
    fn in_iowait(&self, _cpu: CpuId<N>) -> bool {
        false
    }

    /// The first stop of `cpu`'s tick: `calc_load_nohz_start()`, `quiet_vmstat()`. On `cpu`,
    /// interrupts off; default: nothing.
    fn tick_stopped(&self, _cpu: CpuId<N>) {}

    /// `cpu`'s tick restarts: `calc_load_nohz_stop()`, `touch_softlockup_watchdog_sched()`.
    /// On `cpu`, interrupts off; default: nothing.
    fn tick_restarted(&self, _cpu: CpuId<N>) {}
}

/// Everything the tick-side paths need.
pub trait TickPlatform<const N: usize>: Platform<N> + TickHardware<N> {}
impl<T, const N: usize> TickPlatform<N> for T where T: Platform<N> + TickHardware<N> {}

/// The idle loop's hooks into the architecture and cpuidle (`do_idle`, `cpuidle_idle_call`).
pub trait IdleHooks<const N: usize> {
    /// The CPU must poll instead of sleeping (`cpu_idle_force_poll`, or the tick broadcast
    /// expired). Asked on `cpu` by each pass of [`Machine::do_idle`](crate::Machine::do_idle)
    /// (interrupts off); default `false`.
    fn idle_poll(&self, _cpu: CpuId<N>) -> bool {
        false
    }

    /// `cpu_idle_poll()`: spin with interrupts on until `need_resched` or an interrupt; runs
    /// only when [`idle_poll`](Self::idle_poll) says so. The default spins once and returns:
    /// [`Machine::do_idle`](crate::Machine::do_idle)'s loop checks `need_resched` and calls it
    /// again. A kick sent while the CPU polls may have its IPI elided by the platform (as the
    /// kernel's `set_nr_if_polling` does): `do_idle` runs the queued csd on its way out.
    #[doc(alias = "cpu_idle_poll")]
    #[inline]
    fn poll_idle(&self, _cpu: CpuId<N>) {
        core::hint::spin_loop();
    }

    /// The cpuidle governor's choice: `None` when there is no cpuidle driver (default idle),
    /// `Some(stop_tick)` otherwise (`cpuidle_select`). Asked on `cpu` by each pass of
    /// [`Machine::do_idle`](crate::Machine::do_idle) (interrupts off, inside the idle
    /// section); default `None`.
    ///
    /// **The sleep length.** A governor that weighs idle states by how long the CPU may sleep
    /// (menu, teo) asks `sleep`
    /// ([`SleepLengthQuery::tick_nohz_get_sleep_length`]), as the kernel's governors call
    /// `tick_nohz_get_sleep_length(&delta_next)` from here: the time to the next timer if the
    /// tick stops, and to the next tick if it is kept. Asking computes the next event and
    /// caches it, as the kernel does: answering `Some(true)` then stops the tick at exactly
    /// that event without computing it again, and `Some(false)` drops it (the kernel's
    /// `tick_nohz_idle_retain_tick`). A governor that does not ask (or `None`) leaves the stop
    /// path to compute the next event itself.
    fn cpuidle_select(&self, _cpu: CpuId<N>, _sleep: &SleepLengthQuery<'_>) -> Option<bool> {
        None
    }

    /// Enters the chosen idle state and returns after the next interrupt, whose handler (run
    /// through [`Machine::timer_interrupt`](crate::Machine::timer_interrupt),
    /// [`Machine::kick_interrupt`](crate::Machine::kick_interrupt) or the kernel's own between
    /// [`Machine::irq_enter`](crate::Machine::irq_enter) and
    /// [`Machine::irq_exit`](crate::Machine::irq_exit)) has run. Called on `cpu` with interrupts
    /// off; enable them atomically with the wait (`sti; hlt` on x86) so that an interrupt
    /// arriving between the caller's `need_resched` check and the wait ends it, and return
    /// with them off again.
    #[doc(alias = "arch_cpu_idle")]
    fn cpuidle_enter(&self, cpu: CpuId<N>);

    /// `cpuhp_report_idle_dead()` / `arch_cpu_idle_dead()`: `cpu` went offline in the idle
    /// loop; [`Machine::do_idle`](crate::Machine::do_idle) returns
    /// [`IdleExit::CpuDead`](crate::IdleExit) right after. The default does nothing, for a
    /// kernel that parks the CPU on that return value.
    #[doc(alias = "cpuhp_report_idle_dead")]
    #[inline]
    fn report_idle_dead(&self, _cpu: CpuId<N>) {}
}

/// What `tick_nohz_get_sleep_length(&delta_next)` tells a cpuidle governor, in nanoseconds
/// from the CPU's idle entry (its `idle_entrytime`, which stands for now, as in the kernel).
#[doc(alias = "tick_nohz_get_sleep_length")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SleepLength {
    /// The function's value: how long the CPU may sleep if its tick stops, until the next
    /// event [`TickHardware::next_timer_interrupt`] (or the tick a need for it brings in)
    /// sets, bounded by timekeeping's deferment on the timekeeper. Equal to
    /// [`delta_next`](Self::delta_next) when the tick cannot stop (a softirq pending, the
    /// timekeeper of NO_HZ_FULL CPUs, a timer due within the tick).
    pub sleep_length: u64,
    /// `*delta_next`: how long until the CPU's next tick (the sched timer's expiry,
    /// [`TickHardware::tick_expiry`]; [`KTIME_MAX`] for a stopped tick with nothing to wake
    /// for), which is what the CPU sleeps if its tick is kept.
    pub delta_next: u64,
}

/// A cpuidle governor's handle on `tick_nohz_get_sleep_length()`, given to
/// [`IdleHooks::cpuidle_select`]: the answer is computed only if the governor asks, since
/// asking has the kernel's side effect (the next event is computed and cached for the stop
/// path), and a governor that does not need it (a short expected idle, a tick already
/// stopped) does not ask in the kernel either.
pub struct SleepLengthQuery<'a> {
    get: &'a dyn Fn() -> SleepLength,
}

impl<'a> SleepLengthQuery<'a> {
    /// A handle that answers with `get` (the crate builds one for each
    /// [`cpuidle_select`](IdleHooks::cpuidle_select); a rig calling a governor directly builds
    /// its own).
    #[inline]
    pub const fn new(get: &'a dyn Fn() -> SleepLength) -> Self {
        SleepLengthQuery { get }
    }

    /// `tick_nohz_get_sleep_length(&delta_next)` on the idling CPU: see
    /// [`Machine::tick_nohz_get_sleep_length`](crate::Machine::tick_nohz_get_sleep_length),
    /// which this runs. Each call computes it again.
    #[inline]
    pub fn tick_nohz_get_sleep_length(&self) -> SleepLength {
        (self.get)()
    }
}

impl core::fmt::Debug for SleepLengthQuery<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SleepLengthQuery")
    }
}

/// Everything the idle loop driver needs.
pub trait IdlePlatform<const N: usize>: TickPlatform<N> + IdleHooks<N> {}
impl<T, const N: usize> IdlePlatform<N> for T where T: TickPlatform<N> + IdleHooks<N> {}

/// A context that may sleep (process context, IRQs and preemption on): what the kernel's
/// `static_branch_disable()` requires.
///
/// Implement it only for a type of your own that exists only in such contexts (a work item's
/// or a late initcall's context handle). The crate asks for one where the kernel must not be in
/// atomic context, as seed 003 made `disable_sched_clock_irqtime()` require.
pub trait MaySleep {}
