//! The kernel paths, one module per kernel function (fair.c NOHZ, tick-sched, the idle loop,
//! irqtime), each branch exercised for every policy where they differ. Every test drives the
//! real `Machine` with the recording `HostPlatform` (the shared rig, `nohz_testing::World`:
//! its jiffies clock starts 20 ticks before the wrap), and runs its generic body once per
//! policy with `nohz_testing::for_each_policy!`. One test binary keeps link time down.

mod can_stop_idle_tick;
mod do_idle;
mod hotplug;
mod irq_enter_exit;
mod irqtime;
mod kick_ilb;
mod nohz_balance_enter_idle;
mod nohz_balance_exit_idle;
mod nohz_balancer_kick;
mod nohz_csd_func;
mod nohz_idle_balance;
mod nohz_newidle_balance;
mod nohz_run_idle_balance;
mod platform_defaults;
mod sched_init;
mod sched_tick;
mod seed_000;
mod seed_001;
mod tick_nohz_full;
mod tick_nohz_idle_enter_exit;
mod tick_nohz_idle_stop_tick;
mod tick_nohz_irq_enter_exit;
mod tick_nohz_next_event;
mod tick_nohz_stop_tick;
mod tick_sched_timer;
mod update_blocked_load_status;
